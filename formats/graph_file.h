// Loading and saving a graph by file extension: ".json" (the JSON graph format) and ".tir" (the
// IR text form). The native .tsr and ONNX join this dispatcher in later issues.
//
//   TRY(ir::Graph g, formats::load_graph_file("samples/lenet.json"));
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace tessera::formats {

Expected<ir::Graph> load_graph_file(const std::string& path);
Status save_graph_file(const ir::Graph& graph, const std::string& path);

}  // namespace tessera::formats
