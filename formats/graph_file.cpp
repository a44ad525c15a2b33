// Graph file dispatch by extension.
#include "formats/graph_file.h"

#include "engine/ir/text.h"
#include "formats/file_io.h"
#include "engine/ops/op_def.h"
#include "formats/json_graph.h"
#include "formats/onnx_export.h"
#include "formats/onnx_import.h"
#include "formats/tsr.h"

namespace tessera::formats {
namespace {

std::string extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return path.substr(dot);
}

Error unsupported(const std::string& path) {
  return make_error("unsupported graph file extension '" + extension(path) +
                        "' (supported: .tsr for the native format, .json for the JSON graph format, .tir for the IR text form, .onnx for ONNX)",
                    path);
}

}  // namespace

Expected<ir::Graph> load_graph_file(const std::string& path) {
  const std::string ext = extension(path);
  if (ext == ".json") return load_json_graph(path);
  if (ext == ".tir") {
    TRY(std::string text, read_file(path));
    return ir::parse_graph(text, path);
  }
  if (ext == ".onnx") {
    const ops::OpRegistry registry = ops::make_default_registry();
    return import_onnx_file(path, registry);
  }
  if (ext == ".tsr") {
    TRY(GraphDocument doc, read_tsr(path));
    return std::move(doc.graph);
  }
  return unsupported(path);
}

Status save_graph_file(const ir::Graph& graph, const std::string& path) {
  const std::string ext = extension(path);
  if (ext == ".json") return save_json_graph(graph, path);
  if (ext == ".tir") return write_file_atomic(path, ir::print_graph(graph));
  if (ext == ".onnx") {
    const ops::OpRegistry registry = ops::make_default_registry();
    return export_onnx_file(graph, path, registry);  // opset 17
  }
  if (ext == ".tsr") return write_tsr(GraphDocument{graph, {}, {}}, path);
  return unsupported(path);
}

}  // namespace tessera::formats
