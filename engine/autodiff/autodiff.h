// Reverse-mode automatic differentiation as a graph transformation (MindSpore's approach: the
// program itself is differentiated, control flow included).
//
// add_gradients extends a typed graph with the nodes that compute the vector-Jacobian product
//   d(sum_k <seed_k, y_k>) / d x_j
// for every wanted x_j, by visiting the forward nodes on a path from the xs to the ys in reverse
// order and calling each op's gradient rule (gradient.h). Gradients reaching one value from several
// consumers are accumulated with one Sum node. A value that does not reach any y gets zeros.
//
// Usage (a training step):
//   TRY(std::vector<ValueId> grads, autodiff::add_gradients(g, registry, {loss}, {}, params));
//
// Errors: an op on the path without a gradient rule (naming the node and the op's stated reason),
// an x that is not a floating-point value, a rule whose gradient has the wrong type.
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::autodiff {

// `graph` must be typed (ops::infer_types). `seeds[k]` is the gradient of y_k (same type as y_k);
// kNoValue, or an empty `seeds`, means ones. Returns one gradient value per x, in order.
Expected<std::vector<ir::ValueId>> add_gradients(ir::Graph& graph, const ops::OpRegistry& registry,
                                                 const std::vector<ir::ValueId>& ys,
                                                 const std::vector<ir::ValueId>& seeds,
                                                 const std::vector<ir::ValueId>& xs);

// Emits nodes into a graph on behalf of one forward node (provenance, naming, typing); the state
// behind GradientContext's emitting methods.
class Emitter {
 public:
  Emitter(ir::Graph& graph, const ops::OpRegistry& registry) : graph_(graph), registry_(registry) {}
  void set_origin(ir::NodeId forward, std::string name) {
    forward_ = forward;
    name_ = std::move(name);
  }
  std::vector<ir::ValueId> emit(const std::string& op, std::vector<ir::ValueId> inputs, int num_outputs,
                                ir::Attributes attrs);
  ir::ValueId constant(Tensor t);
  // First emission failure since the last take_status().
  Status take_status();
  ir::Graph& graph() { return graph_; }
  const ops::OpRegistry& registry() const { return registry_; }

 private:
  ir::Graph& graph_;
  const ops::OpRegistry& registry_;
  ir::NodeId forward_ = ir::kNoNode;
  std::string name_;
  Status status_ = Status::ok();
};

}  // namespace tessera::autodiff
