// Internal to the ONNX exporter: the per-node rules that decide, with libonnx's schema registry,
// whether a node can be written at an opset and how its attributes are written
// (onnx_export_rules.cpp), and the model-wide state they share with the graph writer
// (onnx_export.cpp). Only formats/onnx_export*.cpp and the export test include this.
#pragma once

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::formats::onnx_export_internal {

// Default-domain opsets the exporter writes (libonnx 1.12 knows up to 17).
inline constexpr int kMinExportOpset = 13;
inline constexpr int kMaxExportOpset = 17;

// DType -> TensorProto.DataType (every DType has one).
int32_t onnx_dtype(DType dt);

// Writes `t` (any strides) as a TensorProto with raw_data in little-endian byte order.
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* out);
// A value's type: tensor_type, sequence_type or optional_type.
void type_to_proto(const ir::TensorType& t, onnx::TypeProto* out);

// Converts a non-graph attribute to the ONNX kind `want` (UNDEFINED: the attribute's own kind):
// ints widen to floats, a dtype name ("i64") becomes a TensorProto.DataType int where an INT is
// wanted. Returns the reason when it does not fit. `out`'s name is left to the caller.
Status attribute_to_proto(const ir::Attribute& attr, onnx::AttributeProto::AttributeType want,
                          onnx::AttributeProto* out);

// Same kind and same value (floats compared as floats); tensors and graphs never compare equal.
bool same_attribute_value(const onnx::AttributeProto& a, const onnx::AttributeProto& b);

// Names for every value of the model: ONNX wants one definition per name in a scope, and we
// keep names unique across the whole model (nested graphs included).
class ModelNames {
 public:
  // Every value name used anywhere in the model; invented names avoid them.
  void reserve(const std::string& name) { reserved_.insert(name); }
  // The ONNX name for a value defined here: its own name unless already defined, else
  // `name__2`, `name__3`...; unnamed values get `v_<id>`.
  std::string define(const std::string& name, ir::ValueId id);
  // A name for something the exporter adds (Identity outputs, rewrite temporaries).
  std::string fresh(const std::string& hint);

 private:
  std::string unique(const std::string& base, bool avoid_reserved);
  std::set<std::string> used_, reserved_;
};

// Where the node writer puts what it makes: the node list, the initializers, fresh names.
struct NodeSink {
  onnx::GraphProto* graph;
  ModelNames& names;
};

// Exports a nested graph attribute (If branch, Loop/Scan body) into `out`; supplied by the graph
// writer so that the rules need not know about scopes. Refusals inside are appended to `why_all`.
using ExportSubgraph = std::function<void(const ir::Graph&, onnx::GraphProto* out)>;

// One node on its way out: inputs and outputs already named ("" for absent).
struct NodeOut {
  const ir::Node& node;
  const ops::OpDef* def;              // null when the registry lacks the op
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> reasons;   // why it cannot be written ("needs opset 17")
};

// The schema of `op` at `opset`, or null with the reason in `why` ("not an ONNX op",
// "needs opset 17", "deprecated since opset 10").
const onnx::OpSchema* find_schema(const std::string& op, int opset, std::string& why);

// Writes the node (and, for rewrites, its helper nodes and initializers) into `sink` at `opset`,
// or appends to `out.reasons` why it cannot. `schema` is find_schema's answer.
void write_node(NodeOut& out, const onnx::OpSchema& schema, int opset, NodeSink& sink,
                const ExportSubgraph& export_subgraph);

}  // namespace tessera::formats::onnx_export_internal
