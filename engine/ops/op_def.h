// OpDef: everything about one op in one place (schema, inference, reference kernel, gradient slot),
// and OpRegistry, the explicit table of them.
//
// Usage (one op, in the file of its family):
//   OpDef def("Relu", "activation", "max(x, 0), element-wise.");
//   def.input("X", "input").output("Y", "output");
//   def.allowed_types = kFloatTypes;
//   def.infer = infer_same_as_first;
//   def.reference = relu_kernel;
//   def.no_gradient_reason / def.gradient  (filled by the training issue)
//   registry.add(std::move(def));
//
// Semantics follow ONNX opset 17 (broadcasting, attributes, defaults) unless the op's doc says so.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"

namespace tessera::ops {

using ir::Attribute;
using ir::AttrKind;
using ir::TensorType;

struct PortSpec {
  std::string name;
  std::string doc;
  bool optional = false;
  bool variadic = false;  // only the last input/output; takes the rest (min 1 unless optional)
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<Attribute> default_value;  // absent and !required: the op handles absence
  bool required = false;
  std::string doc;
};

class OpDef;

// Attribute lookup that falls back to the schema default.
class AttrReader {
 public:
  AttrReader(const ir::Node& node, const OpDef& def) : node_(node), def_(def) {}
  bool has(const std::string& name) const;  // set on the node or has a default
  int64_t i(const std::string& name) const;
  double f(const std::string& name) const;
  const std::string& s(const std::string& name) const;
  const std::vector<int64_t>& ints(const std::string& name) const;
  const std::vector<double>& floats(const std::string& name) const;
  const Tensor& t(const std::string& name) const;
  const ir::Graph& g(const std::string& name) const;
  // The attribute itself (node value or default), nullptr when neither exists.
  const Attribute* get(const std::string& name) const;

 private:
  const Attribute& must(const std::string& name) const;
  const ir::Node& node_;
  const OpDef& def_;
};

struct InferContext {
  const ir::Node& node;
  const OpDef& def;
  std::vector<const TensorType*> inputs;  // nullptr for an absent optional input
  std::vector<const Tensor*> constants;   // the input's value when known at compile time
  AttrReader attrs() const { return AttrReader(node, def); }
  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor* constant(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
};

// Runs a nested graph (If branch, Loop body) with the given inputs; captures resolve in the
// enclosing scope of the executing kernel. Supplied by the executor.
using SubgraphRunner =
    std::function<Expected<std::vector<Tensor>>(const ir::Graph&, const std::vector<Tensor>&)>;

struct KernelContext {
  const ir::Node& node;
  const OpDef& def;
  std::vector<const Tensor*> inputs;  // nullptr for an absent optional input
  std::vector<Tensor> outputs;        // the kernel fills one per node output
  SubgraphRunner run_subgraph;        // set for ops with graph attributes
  AttrReader attrs() const { return AttrReader(node, def); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& in(size_t i) const { return *inputs[i]; }
};

using InferFn = std::function<Expected<std::vector<TensorType>>(const InferContext&)>;
using KernelFn = std::function<Status(KernelContext&)>;

// Emits the gradient subgraph of one node (engine/autodiff/gradient.h defines the context).
struct GradientContext;
using GradientFn = std::function<Status(GradientContext&)>;

class OpDef {
 public:
  OpDef(std::string name, std::string category, std::string doc)
      : name(std::move(name)), category(std::move(category)), doc(std::move(doc)) {}

  OpDef& input(std::string n, std::string d, bool optional = false, bool variadic = false) {
    inputs.push_back({std::move(n), std::move(d), optional, variadic});
    return *this;
  }
  OpDef& output(std::string n, std::string d, bool optional = false, bool variadic = false) {
    outputs.push_back({std::move(n), std::move(d), optional, variadic});
    return *this;
  }
  OpDef& attr(std::string n, AttrKind k, std::optional<Attribute> def, std::string d) {
    attrs.push_back({std::move(n), k, std::move(def), false, std::move(d)});
    return *this;
  }
  OpDef& required_attr(std::string n, AttrKind k, std::string d) {
    attrs.push_back({std::move(n), k, std::nullopt, true, std::move(d)});
    return *this;
  }
  const AttrSpec* find_attr(const std::string& n) const;
  // Arity bounds derived from the port specs (max is INT32_MAX when variadic).
  int min_inputs() const;
  int max_inputs() const;
  int min_outputs() const;
  int max_outputs() const;

  std::string name;
  std::string category;  // palette grouping: "math", "activation", "nn", "tensor", "reduce", ...
  std::string doc;
  std::vector<PortSpec> inputs, outputs;
  std::vector<AttrSpec> attrs;
  std::vector<DType> allowed_types;  // element types of the first input; empty: any
  // Inputs may be sequences and optionals (the sequence ops, Identity, If, Loop); otherwise
  // inference refuses any input that is not a tensor before the op's own function runs.
  bool takes_sequences = false;
  InferFn infer;
  KernelFn reference;
  GradientFn gradient;
  std::string no_gradient_reason;  // set instead of `gradient` when the op is not differentiable
  // Floating-point operations for one execution, from the inferred types (static shapes); unset:
  // one per output element for math-like categories, none for data movement (see ops/cost.h).
  std::function<double(const InferContext&, const std::vector<TensorType>& outputs)> flops;
  // Optional structural check beyond the schema (nested-graph signatures of If and Loop).
  std::function<Status(const ir::Node&, const OpDef&)> verify;
  // (output, input) pairs every kernel of the op may write over: element i of the output depends
  // only on element i of the inputs, read before it is written (optimizer updates). The compile
  // stage writes such an output into the input's buffer when the caller donates it.
  std::vector<std::pair<int, int>> in_place;
};

class OpRegistry {
 public:
  // Adds a definition; a second definition of the same name is a programmer error (asserts).
  void add(OpDef def);
  const OpDef* find(const std::string& name) const;
  OpDef* find_mutable(const std::string& name);  // for attaching gradient rules after registration
  std::vector<const OpDef*> all() const;  // sorted by name

 private:
  std::vector<std::unique_ptr<OpDef>> defs_;
};

// Registers every op Tessera knows (explicitly, no static initialisers). Each family has its own
// function, defined in the file of that family.
void register_all_ops(OpRegistry& registry);
void register_elementwise_ops(OpRegistry& registry);  // elementwise.cpp
void register_nn_ops(OpRegistry& registry);           // nn.cpp
void register_tensor_ops(OpRegistry& registry);       // tensor_ops.cpp
void register_reduce_ops(OpRegistry& registry);       // reduce.cpp
void register_control_ops(OpRegistry& registry);      // control.cpp
void register_math_ops(OpRegistry& registry);         // math_ops.cpp: more element-wise, logic, reductions
void register_index_ops(OpRegistry& registry);        // index_ops.cpp: more data movement and indexing
void register_loss_ops(OpRegistry& registry);         // loss_ops.cpp: losses and nn extras
void register_fused_ops(OpRegistry& registry);        // fused.cpp: fused forms made by the optimiser
void register_sequence_ops(OpRegistry& registry);     // sequence.cpp: sequences and optionals
void register_text_ops(OpRegistry& registry);         // text.cpp: StringNormalizer, TfIdfVectorizer
void register_random_ops(OpRegistry& registry);       // random.cpp: RandomUniform/Normal(Like), Bernoulli, Multinomial
void register_runtime_ops(OpRegistry& registry);      // runtime_ops.cpp: Copy (between devices), Reorder (layouts)
void register_grad_ops(OpRegistry& registry);         // grad_ops.cpp: backward kernels autodiff emits (ConvGrad*, pool, norm)
void register_train_ops(OpRegistry& registry);        // train_ops.cpp: SumToShape, optimizer updates
void register_recurrent_ops(OpRegistry& registry);    // nn_recurrent.cpp: RNN, LSTM, GRU and their backward ops
void register_quantize_ops(OpRegistry& registry);     // quantize.cpp: (De)QuantizeLinear, QLinear*, *Integer
void register_detection_ops(OpRegistry& registry);    // detection.cpp: NonMaxSuppression, RoiAlign, MaxUnpool, GridSample
void register_signal_ops(OpRegistry& registry);       // signal.cpp: windows, DFT, STFT, MelWeightMatrix
void register_linalg_ops(OpRegistry& registry);       // linalg.cpp: Det
// Attaches gradient rules (OpDef::gradient) or reasons (no_gradient_reason) to every op; defined in
// engine/autodiff/gradients.cpp. make_default_registry calls it after registering every op.
void register_gradients(OpRegistry& registry);
// A registry holding every op.
OpRegistry make_default_registry();

}  // namespace tessera::ops
