// GradientContext: what one op's gradient rule sees and how it emits its part of the backward graph.
//
// Reverse-mode autodiff (autodiff.h) visits the forward nodes in reverse order and calls, for each
// node on a path from the wanted inputs to the differentiated outputs, its OpDef::gradient rule.
// The rule reads the forward node (a copy: emitting nodes may move the graph's storage), the
// gradients flowing into its outputs, and sets the gradient of each input it is asked for.
//
// Example (Mul):
//   def.gradient = [](GradientContext& g) {
//     ValueId dy = g.grad_output(0);
//     if (g.wants(0)) g.set_grad(0, g.unbroadcast(g.emit("Mul", {dy, g.input(1)}), g.input(0)));
//     if (g.wants(1)) g.set_grad(1, g.unbroadcast(g.emit("Mul", {dy, g.input(0)}), g.input(1)));
//     return Status::ok();
//   };
//
// Every node a rule emits is typed at once (so rules may ask type()), named "<forward name>/grad",
// and carries provenance {from: [forward node], origin: "autodiff"}. An emission that fails type
// inference is a rule bug: the first failure is kept and returned after the rule, naming the node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"

namespace tessera::autodiff {
class Emitter;
}

namespace tessera::ops {

using ir::ValueId;

struct GradientContext {
 public:
  GradientContext(autodiff::Emitter& emitter, ir::Node node, const OpDef& def, std::vector<ValueId> grad_outputs,
                  std::vector<bool> wanted, std::map<std::string, ValueId> captures,
                  std::map<std::string, bool> wanted_captures);

  // ---- the forward node ----
  const ir::Node& node() const { return node_; }
  const OpDef& def() const { return def_; }
  AttrReader attrs() const { return AttrReader(node_, def_); }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  ValueId input(size_t i) const { return i < node_.inputs.size() ? node_.inputs[i] : ir::kNoValue; }
  ValueId output(size_t i) const { return node_.outputs[i]; }
  bool has_input(size_t i) const { return input(i) != ir::kNoValue; }
  // By value: emitting grows the graph's value storage, so a reference would dangle.
  ir::TensorType type(ValueId v) const;
  DType dtype(ValueId v) const { return type(v).dtype; }
  int rank(ValueId v) const { return type(v).rank(); }
  // Compile-time value of v (a param or Constant output), or nullptr.
  const Tensor* constant(ValueId v) const;

  // ---- gradients ----
  // Gradient flowing into output i; kNoValue when none does (the output does not reach the loss).
  ValueId grad_output(size_t i) const { return i < grad_outputs_.size() ? grad_outputs_[i] : ir::kNoValue; }
  // The same, or zeros of the output's type when none flows.
  ValueId grad_output_or_zeros(size_t i);
  // Whether input i needs a gradient (on a path to the loss, floating point).
  bool wants(size_t i) const { return i < wanted_.size() && wanted_[i]; }
  // Sets d loss / d input i. The value must have the input's dtype and shape.
  void set_grad(size_t i, ValueId g);
  const std::vector<ValueId>& input_grads() const { return input_grads_; }

  // ---- nested graphs (If, Loop): outer values captured by name ----
  const std::map<std::string, ValueId>& captures() const { return captures_; }
  bool wants_capture(const std::string& name) const;
  void set_capture_grad(const std::string& name, ValueId g);
  const std::map<std::string, ValueId>& capture_grads() const { return capture_grads_; }

  // ---- emitting the backward graph ----
  ValueId emit(const std::string& op, std::vector<ValueId> inputs, ir::Attributes attrs = {});
  std::vector<ValueId> emit_n(const std::string& op, std::vector<ValueId> inputs, int num_outputs,
                              ir::Attributes attrs = {});
  ValueId scalar(double v, DType dt);                    // rank-0 constant
  ValueId ints(const std::vector<int64_t>& v);           // i64 1-D constant (axes, shapes)
  ValueId constant_tensor(Tensor t);
  ValueId zeros_like(ValueId v);
  ValueId ones_like(ValueId v);
  ValueId shape_of(ValueId v);                            // i64 1-D, folded when static
  // Sums `g` over the dimensions broadcasting added or stretched, down to the shape of `like`
  // (the reverse of NumPy broadcasting); `g` itself when the shapes already agree.
  ValueId unbroadcast(ValueId g, ValueId like);
  // Error naming the forward node.
  Error fail(const std::string& message) const;
  ir::Graph& graph();
  const OpRegistry& registry() const;

 private:
  autodiff::Emitter& emitter_;
  ir::Node node_;
  const OpDef& def_;
  std::vector<ValueId> grad_outputs_;
  std::vector<bool> wanted_;
  std::vector<ValueId> input_grads_;
  std::map<std::string, ValueId> captures_;
  std::map<std::string, bool> wanted_captures_;
  std::map<std::string, ValueId> capture_grads_;
};

}  // namespace tessera::ops

namespace tessera::autodiff {

// Attaching rules to a registry (each family in its own file; gradients.cpp calls them all).
void set_gradient(ops::OpRegistry& registry, const std::string& op, ops::GradientFn rule);
void set_no_gradient(ops::OpRegistry& registry, const std::string& op, std::string reason);

void register_elementwise_gradients(ops::OpRegistry& registry);  // grad_elementwise.cpp
void register_tensor_gradients(ops::OpRegistry& registry);       // grad_tensor.cpp
void register_nn_gradients(ops::OpRegistry& registry);           // grad_nn.cpp
void register_control_gradients(ops::OpRegistry& registry);      // grad_control.cpp (If, Loop, runtime, training ops)

}  // namespace tessera::autodiff
