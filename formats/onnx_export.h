// ONNX export: writes a Tessera graph as an ONNX model (IR version 8, default-domain opset 13..17)
// that ONNX's checker accepts and ONNX Runtime runs.
//
// Usage:
//   ops::OpRegistry reg = ops::make_default_registry();
//   formats::OnnxExportOptions options;
//   options.opset = 13;
//   TRY(std::string bytes, formats::export_onnx_bytes(graph, reg, options));
//   RETURN_IF_ERROR(formats::export_onnx_file(graph, "model.onnx", reg));   // opset 17
//
// What the exporter does (formats/README.md, "ONNX export", has the full list):
//   - graph inputs with their types (known dims -> dim_value, symbols -> dim_param, unknown ->
//     neither), params as initializers (raw_data, little-endian), graph outputs with the types
//     ops::infer_types gives (on a copy; the caller's graph is not touched);
//   - value and node names are kept; unnamed values get `v_<id>`, and a name defined twice in
//     the model (ONNX needs one definition per name in a scope) gets `__2`, `__3`...;
//   - attributes by the kind libonnx's schema for the op at `opset` declares; dtype names
//     (Cast's `to = "i64"`) become TensorProto.DataType ints, the importer's rule reversed;
//   - If / Loop / Scan bodies become nested graphs; captures become references to the
//     enclosing graph's names;
//   - which ops exist at which opset comes from libonnx's schema registry: ops ONNX lacks
//     (fused, backward, optimizer ops), ops newer than `opset`, and attributes or inputs a
//     node uses that `opset` lacks are listed together in one error; Shape's start/end below
//     opset 15 become Shape + Slice;
//   - the model passes onnx::checker::check_model before it is returned.
// Nothing here throws.
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::formats {

struct OnnxExportOptions {
  int opset = 17;                        // default-domain opset, 13 to 17
  std::string producer_name = "tessera";
  std::string producer_version;          // ModelProto.producer_version (empty: not written)
};

// The model as serialized ModelProto bytes. `graph` may or may not have inferred types; its ops
// must be in `registry`. Errors: a refused opset; one error listing every node that cannot be
// expressed at the opset (message starting "not exportable to ONNX opset N: ", Error::node the
// first such top-level node); type inference failures; and, should the checker reject what we
// wrote, an error saying so (a Tessera bug) with the checker's message.
Expected<std::string> export_onnx_bytes(const ir::Graph& graph, const ops::OpRegistry& registry,
                                        const OnnxExportOptions& options = {});

// The same, written atomically to `path` (PATH.tmp, then rename). Errors carry the path in
// Error::where.
Status export_onnx_file(const ir::Graph& graph, const std::string& path, const ops::OpRegistry& registry,
                        const OnnxExportOptions& options = {});

}  // namespace tessera::formats
