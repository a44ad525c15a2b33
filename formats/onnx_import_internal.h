// Internal to the ONNX importer: tensor decoding (onnx_import_tensor.cpp), the per-node builder
// state, and the rules that rewrite old-opset or differently shaped ONNX nodes into the registry's
// opset-17 forms (onnx_import_rules.cpp). Only formats/onnx_import*.cpp include this.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::formats::onnx_internal {

// Default-domain opsets the importer accepts.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 17;

// ONNX TensorProto.DataType -> DType; nullopt for types Tessera lacks (string, uint16, complex...).
std::optional<DType> dtype_from_onnx(int32_t data_type);
// "FLOAT", "STRING", ... for messages ("data type 42" when unknown).
std::string onnx_dtype_name(int32_t data_type);

// Decodes a TensorProto (raw_data, typed fields or external data under base_dir). `what` names it
// in errors ("initializer 'w'"). Every size is checked against the bytes present and against
// kMaxTensorBytes before anything is allocated.
// `adopt`: the same message, which the caller owns and gives up: a raw_data tensor takes over its
// bytes (released from the message, no copy) instead of copying them.
Expected<Tensor> decode_tensor(const onnx::TensorProto& proto, const std::string& base_dir,
                               const std::string& what, onnx::TensorProto* adopt = nullptr);

class GraphBuilder;

// One ONNX node on its way into the IR. Rules edit `op`, `inputs` and `attrs` in place; they may
// add params or extra nodes through `builder`.
struct NodeImport {
  const onnx::NodeProto& proto;
  int64_t opset;
  std::string op;                    // the registry op to emit (starts as proto.op_type())
  std::string label;                 // "Slice (node 'n3')" for errors
  std::vector<ir::ValueId> inputs;   // kNoValue for "" inputs
  ir::Attributes attrs;              // converted by kind, before the rules run
  std::vector<std::string> outputs;  // ONNX output names ("" for absent)
  GraphBuilder& builder;
  std::string origin;                // provenance of every node made from it: "onnx:<name>"
  // A rule that emits the node itself (Softmax-1 expands into several nodes) sets this.
  bool emitted = false;
};

// Rewrites one node from its opset-`opset` ONNX form into the registry's form. Returns an error
// for forms Tessera cannot express (BatchNormalization-7 with spatial=0, Scan-8 with sequence_lens).
using NodeRule = std::function<Status(NodeImport&)>;
// Rules by ONNX op type.
const std::map<std::string, NodeRule>& node_rules();
// Runs on every default-domain node of an opset-1..6 model before its per-op rule: drops the
// attributes that no longer mean anything (`consumed_inputs`, `is_test`) and rewrites the legacy
// `broadcast`/`axis` binary-op broadcasting into opset-7 multidirectional broadcasting.
Status legacy_rule(NodeImport& ni);
// The registry name of an ONNX op that only changed name (Upsample -> Resize, Scatter -> ...).
std::string renamed_op(const std::string& onnx_op);

// Builds one ir::Graph (the model's or a nested one) from ONNX names.
class GraphBuilder {
 public:
  GraphBuilder(ir::Graph& graph, GraphBuilder* parent, const std::string& base_dir,
               const ops::OpRegistry& registry)
      : graph_(graph), parent_(parent), base_dir_(base_dir), registry_(registry) {}

  ir::Graph& graph() { return graph_; }
  const ops::OpRegistry& registry() const { return registry_; }
  const std::string& base_dir() const { return base_dir_; }

  // The value an ONNX name refers to here, capturing it from an enclosing graph when needed.
  Expected<ir::ValueId> resolve(const std::string& name);
  void bind(const std::string& name, ir::ValueId v) { names_[name] = v; }
  bool defines(const std::string& name) const { return names_.count(name) != 0; }

  // A param holding `t`, named after `hint` (made unique).
  ir::ValueId add_constant(const std::string& hint, Tensor t);
  // A node whose outputs are fresh unnamed values (for expansions); returns its outputs.
  std::vector<ir::ValueId> add_helper_node(const std::string& op, std::vector<ir::ValueId> inputs,
                                           int num_outputs, ir::Attributes attrs,
                                           const std::string& origin);
  // The type of `v` when known without inference (inputs, params, captures, Constant nodes,
  // value_info); nullopt otherwise.
  std::optional<ir::TensorType> known_type(ir::ValueId v) const;
  // known_type, else (in the model's top-level graph) inferred over the nodes built so far.
  std::optional<ir::TensorType> derived_type(ir::ValueId v) const;
  // Adds the node `ni` becomes: op, inputs (trailing absent ones dropped), attrs; names and binds
  // its outputs after the ONNX outputs (trailing absent ones dropped) and sets its provenance.
  ir::NodeId emit(const NodeImport& ni, const std::string& op, std::vector<ir::ValueId> inputs,
                  ir::Attributes attrs);
  // ONNX value_info types by name (intermediate values), filled by the importer.
  std::map<std::string, ir::TensorType>& value_info() { return value_info_; }

  // A name not used in this graph, starting from `hint`.
  std::string fresh_name(const std::string& hint);

 private:
  ir::Graph& graph_;
  GraphBuilder* parent_;
  std::string base_dir_;
  const ops::OpRegistry& registry_;
  std::map<std::string, ir::ValueId> names_;
  std::map<std::string, ir::TensorType> value_info_;
  std::set<ir::ValueId> untyped_captures_;  // captures whose placeholder type is a guess
  int fresh_counter_ = 0;
};

}  // namespace tessera::formats::onnx_internal
