// The Tessera IR: a Graph owns its Nodes and Values, addressed by dense integer ids.
//
// Grammar of the data (the text form in ir/text.h follows it one to one):
//   Graph     := name, inputs: [ValueId], params: [ValueId -> Tensor], captures: [ValueId],
//                nodes: [Node], outputs: [ValueId]
//   Node      := id, op, name, inputs: [ValueId | kNoValue], outputs: [ValueId],
//                attributes: {name -> Attribute}, provenance
//   Value     := id, name, TensorType, kind (input | param | capture | node output), producer
//   Attribute := int | float | string | Tensor | Graph | ints | floats | strings
//
// Invariants (checked by ir::verify): every value has exactly one definition (a graph input, a
// param, a capture of an enclosing graph's value by name, or one output of one node); node inputs
// refer to live values of this graph; the node graph is acyclic. Ids are never reused: removing
// a node leaves a tombstone so ids stay stable across passes (MLIR keeps ops in a list; we keep
// dense vectors so that planners can index side tables by id).
//
// Usage:
//   ir::Graph g("mlp");
//   ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::named("N"), Dim::known(784)}));
//   ValueId w = g.add_param("w", Tensor(DType::kF32, {784, 10}));
//   NodeId mm = g.add_node("MatMul", {x, w}, 1, "fc");
//   g.set_outputs({g.node(mm).outputs[0]});
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/type.h"

namespace tessera::ir {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an absent optional input
inline constexpr NodeId kNoNode = -1;

class Graph;

// Owns a nested graph (If branches, Loop body); copying deep-copies it.
class GraphBox {
 public:
  explicit GraphBox(Graph g);
  GraphBox(const GraphBox& o);
  GraphBox& operator=(const GraphBox& o);
  GraphBox(GraphBox&&) noexcept = default;
  GraphBox& operator=(GraphBox&&) noexcept = default;
  ~GraphBox();
  const Graph& get() const { return *g_; }
  Graph& get() { return *g_; }

 private:
  std::unique_ptr<Graph> g_;
};

enum class AttrKind { kInt, kFloat, kString, kTensor, kGraph, kInts, kFloats, kStrings };
std::string_view attr_kind_name(AttrKind k);  // "int", "float", "string", "tensor", "graph", ...

class Attribute {
 public:
  using Storage = std::variant<int64_t, double, std::string, Tensor, GraphBox, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;
  Attribute(int64_t v) : v_(v) {}  // NOLINT: implicit conversions keep call sites short
  Attribute(int v) : v_(int64_t{v}) {}  // NOLINT
  Attribute(double v) : v_(v) {}  // NOLINT
  Attribute(std::string v) : v_(std::move(v)) {}  // NOLINT
  Attribute(const char* v) : v_(std::string(v)) {}  // NOLINT
  Attribute(Tensor v) : v_(std::move(v)) {}  // NOLINT
  Attribute(Graph g);  // NOLINT
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<double> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<std::string> v) : v_(std::move(v)) {}  // NOLINT

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  int64_t i() const { return std::get<int64_t>(v_); }
  double f() const { return std::get<double>(v_); }
  const std::string& s() const { return std::get<std::string>(v_); }
  const Tensor& t() const { return std::get<Tensor>(v_); }
  const Graph& g() const { return std::get<GraphBox>(v_).get(); }
  Graph& g() { return std::get<GraphBox>(v_).get(); }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(v_); }
  const std::vector<double>& floats() const { return std::get<std::vector<double>>(v_); }
  const std::vector<std::string>& strings() const { return std::get<std::vector<std::string>>(v_); }

 private:
  Storage v_;
};

using Attributes = std::map<std::string, Attribute>;  // sorted: printing order is stable

// Whether two attributes hold the same value: tensors by dtype, shape and elements, floats with
// NaN equal to NaN, graphs by their printed text. same_attributes: the same keys, each the same.
bool same_attribute(const Attribute& a, const Attribute& b);
bool same_attributes(const Attributes& a, const Attributes& b);

// Where a node came from: the nodes it was derived from (fusion, autodiff, splitting keep these)
// and its origin outside the IR ("samples/lenet.json:/nodes/3", "onnx:conv1", "studio").
// A node attribute (int 1) that asks topological_order() to run the node as soon as it is ready.
inline constexpr const char* kScheduleEarlyAttr = "schedule_early";
// A node attribute (int 1) that asks topological_order() to run the node only when no other node
// is ready (the data-parallel AllReduceWait: the kernels that do not need the sum run first).
inline constexpr const char* kScheduleLateAttr = "schedule_late";

struct Provenance {
  std::vector<NodeId> from;
  std::string origin;
};

enum class ValueKind { kInput, kParam, kCapture, kNodeOutput };

struct Value {
  ValueId id = kNoValue;
  std::string name;  // may be empty; in a graph, change it with Graph::set_value_name (find_value's index)
  TensorType type;
  ValueKind kind = ValueKind::kNodeOutput;
  NodeId producer = kNoNode;  // for kNodeOutput
  int producer_output = -1;   // index in the producer's outputs
  bool alive = true;
};

struct Node {
  NodeId id = kNoNode;
  std::string op;
  std::string name;
  std::vector<ValueId> inputs;  // kNoValue where an optional input is absent
  std::vector<ValueId> outputs;
  Attributes attrs;
  Provenance provenance;
  bool alive = true;

  const Attribute* attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : &it->second;
  }
};

struct Use {
  NodeId node;
  int input_index;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // ---- building ----
  ValueId add_input(std::string name, TensorType type);
  // A named constant owned by the graph (weights); its type is the tensor's.
  ValueId add_param(std::string name, Tensor data);
  // A value of an enclosing graph, referred to by name (nested graphs only).
  ValueId add_capture(std::string name, TensorType type);
  // Adds a node with `num_outputs` fresh output values (types unknown until inference).
  NodeId add_node(std::string op, std::vector<ValueId> inputs, int num_outputs,
                  std::string name = {}, Attributes attrs = {});
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }
  // Appends a fresh output value to an existing node (autodiff adds saved-state outputs to Loop).
  ValueId add_node_output(NodeId id, std::string name = {});

  // Low-level construction with explicit ids (the text parser). Creates tombstones for gaps;
  // fails when the id is already defined.
  Status define_value(ValueId id, Value v);
  Status define_node(NodeId id, Node n);

  // ---- editing ----
  // Tombstones the node and its outputs. Uses of its outputs become dangling (verify reports them).
  void remove_node(NodeId id);
  // Rewrites every use of `from` (node inputs, graph outputs) to `to`.
  void replace_all_uses(ValueId from, ValueId to);
  void set_param_data(ValueId id, Tensor data);
  // Renames a value. Every rename goes through here: find_value answers from an index of names
  // that the graph keeps (ir::verify reports a value missing from it).
  void set_value_name(ValueId id, std::string name);
  // Turns a param into a graph input (appended to inputs), dropping its data: training feeds the
  // current weights each step. Same id, name and type.
  void make_input(ValueId param);
  // The inverse: a graph input becomes a param holding `data` (a recorded graph, whose weights
  // were stored as inputs, gets its weights back from a checkpoint). Same id, name; the type is
  // the data's. Nothing happens to a value that is not a graph input.
  void make_param(ValueId input, Tensor data);
  // Turns a capture into a graph input (appended to the inputs) or a param holding `data`: a
  // nested graph compiled on its own (stages/program.cpp) binds what it captured.
  void capture_to_input(ValueId capture);
  void capture_to_param(ValueId capture, Tensor data);

  // ---- access ----
  bool has_node(NodeId id) const { return id >= 0 && id < node_capacity() && nodes_[id].alive; }
  bool has_value(ValueId id) const { return id >= 0 && id < value_capacity() && values_[id].alive; }
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes_[static_cast<size_t>(id)]; }
  const Value& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  Value& value(ValueId id) { return values_[static_cast<size_t>(id)]; }
  int node_capacity() const { return static_cast<int>(nodes_.size()); }
  int value_capacity() const { return static_cast<int>(values_.size()); }
  std::vector<NodeId> node_ids() const;  // live nodes in id order
  int num_nodes() const;                 // live nodes

  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<ValueId>& params() const { return params_; }
  const std::vector<ValueId>& captures() const { return captures_; }
  const Tensor* param_data(ValueId id) const;
  // The first live value (lowest id) of that name: O(1) through the name index, but for "".
  std::optional<ValueId> find_value(const std::string& name) const;
  // Whether every live named value is in the name index under its name (ir::verify checks it).
  bool name_index_consistent() const;
  std::vector<Use> uses(ValueId id) const;

  // Live nodes ordered so that producers come before consumers; ties broken by the smaller id,
  // so the order is deterministic. Fails naming a node on a cycle.
  // Kahn's order, lowest node id first among ready nodes, except that nodes carrying the attribute
  // kScheduleEarlyAttr go first as soon as they are ready, and those carrying kScheduleLateAttr
  // only when nothing else is ready.
  Expected<std::vector<NodeId>> topological_order() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_, outputs_, params_, captures_;
  std::unordered_map<ValueId, Tensor> param_data_;
  // find_value's index: name -> ids that had that name when indexed, ascending. A renamed value
  // leaves its old entry (set_value_name removes it; a dead or stale id is skipped on lookup).
  std::unordered_map<std::string, std::vector<ValueId>> by_name_;
  void index_name(ValueId id);
};

}  // namespace tessera::ir
