// ONNX import: reads an ONNX model (binary protobuf, default-domain opsets 1..17) into a Tessera
// graph whose nodes use the op registry's opset-17 forms, and reads ONNX TensorProto files.
//
// Usage:
//   ops::OpRegistry reg = ops::make_default_registry();
//   TRY(ir::Graph g, formats::import_onnx_file("model.onnx", reg));
//   TRY(auto named, formats::read_onnx_tensor_file("test_data_set_0/input_0.pb"));
//   runtime::Feeds feeds{{named.first, named.second}};
//
// What the importer does (formats/README.md, "ONNX import", has the full list):
//   - graph inputs that are not initializers become ir inputs (dim_value -> known, dim_param ->
//     named, missing -> unknown); initializers (raw, typed or external data) become params;
//   - attributes are copied by kind; where our IR differs from ONNX (Cast's `to` is a dtype name)
//     and where an old opset differs from opset 17 (Slice-1, Squeeze-1, Split-2, ReduceSum-1,
//     Clip-6, Pad-2, Upsample, Softmax-1, ...) the node is rewritten to the opset-17 form, with
//     params for inputs that used to be attributes;
//   - If / Loop / Scan bodies become nested graphs; names they use from an enclosing graph become
//     captures;
//   - every node's provenance origin is "onnx:<node name>" (or "onnx:<op>#<index>" when unnamed);
//   - unsupported ops (unknown to the registry or from another domain) are all listed in one error.
// Nothing here throws; sizes read from the file are checked before anything is allocated.
#pragma once

#include <string>
#include <utility>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::formats {

struct OnnxImportOptions {
  // Run ops::infer_types on the imported graph (errors name the node); off leaves types unknown
  // except for inputs and params.
  bool infer_types = true;
};

// Reads an ONNX model file. External data files are resolved relative to the model's folder
// (absolute paths and paths leaving that folder are refused). Errors carry the file in
// Error::where and name the node, initializer or field in the message.
Expected<ir::Graph> import_onnx_file(const std::string& path, const ops::OpRegistry& registry,
                                     const OnnxImportOptions& options = {});

// The same from bytes in memory; `name_for_errors` plays the file's part in errors and
// `base_dir` is where external data files are looked up ("" is the working directory).
Expected<ir::Graph> import_onnx_bytes(const std::string& bytes, const std::string& name_for_errors,
                                      const std::string& base_dir, const ops::OpRegistry& registry,
                                      const OnnxImportOptions& options = {});

// Reads a serialized TensorProto file (an ONNX test's test_data_set_N/input_0.pb) into its name
// (may be empty) and a tensor. External data is resolved next to the file.
Expected<std::pair<std::string, Tensor>> read_onnx_tensor_file(const std::string& path);
// The same for a value of the type `declared`: a TensorProto for a tensor, a SequenceProto for a
// sequence, an OptionalProto for an optional (test cases of the sequence and optional ops).
Expected<std::pair<std::string, Tensor>> read_onnx_value_file(const std::string& path,
                                                              const ir::TensorType& declared);

}  // namespace tessera::formats
