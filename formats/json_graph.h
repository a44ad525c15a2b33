// The JSON graph format: a graph a person can read, diff and edit, with large weights in a side
// .npz. The full specification, with an example, is in formats/README.md.
//
// Usage:
//   TRY(ir::Graph g, formats::load_json_graph("samples/lenet.json"));   // + samples/lenet.npz
//   RETURN_IF_ERROR(ops::infer_types(g, registry));   // unknown ops, attribute kinds, cycles
//   RETURN_IF_ERROR(formats::save_json_graph(g, "out/lenet.json"));     // + out/lenet.npz
//
// Errors have Error.where = "<file>:<JSON pointer>" of the offending field ("lenet.json:/nodes/3/
// inputs/1"), or "<file>:<line>:<column>" for JSON syntax errors, and Error.node = the node's id
// where the error is about a node. Loaded nodes get Provenance.origin = "<file>:/nodes/<index>".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ir/type.h"
#include "formats/document.h"

namespace tessera::formats {

// Reads PATH and, when a param refers to it, the side .npz named by "weights_file" (relative to
// PATH's directory).
Expected<ir::Graph> load_json_graph(const std::string& path);
// The same from text; `where` names the source in errors and origins, `base_dir` is where
// "weights_file" is looked up ("" = the working directory).
Expected<ir::Graph> parse_json_graph(const std::string& text, const std::string& where,
                                     const std::string& base_dir);

// The graph with its "metadata" and "layout" (formats/document.h); content_hash is computed.
Expected<GraphDocument> load_json_document(const std::string& path);
Expected<GraphDocument> parse_json_document(const std::string& text, const std::string& where,
                                            const std::string& base_dir);

struct JsonSaveOptions {
  // Params with more elements than this go to the side .npz; a negative limit keeps every param
  // inline. bf16 params are always inline (NumPy has no bf16).
  int64_t inline_limit = 64;
  // Deflate the side .npz members.
  bool compress_weights = false;
};

// Writes PATH (2-space indent, arrays of numbers on one line, floats printed so that they read
// back bit for bit) and, when any param is over the inline limit, the side file PATH with ".json"
// replaced by ".npz" (or ".npz" appended). Both writes are atomic. Node output types are not
// written: they are inferred again after loading.
Status save_json_graph(const ir::Graph& graph, const std::string& path,
                       const JsonSaveOptions& options = {});
// The same plus "metadata" (the fields that are set; content_hash is not written: it is
// recomputed on load) and "layout" (when not empty), after "outputs".
Status save_json_document(const GraphDocument& doc, const std::string& path,
                          const JsonSaveOptions& options = {});

// Parses the IR's type spelling, with or without spaces: "f32[N, 1, 28, 28]", "i64[?]", "f32[*]",
// "f32[]". Dimensions are sizes, identifiers (symbols) or '?'.
Expected<ir::TensorType> parse_tensor_type(std::string_view text);

}  // namespace tessera::formats
