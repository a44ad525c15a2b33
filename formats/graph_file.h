// Loading and saving a graph by file extension: ".tsr" (the native format), ".json" (the JSON
// graph format), ".tir" (the IR text form) and ".onnx". Only the graph: formats/document.h keeps
// the metadata and layout that .tsr and .json carry as well.
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
