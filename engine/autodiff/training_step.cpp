// The training step graph (see training_step.h).
#include "engine/autodiff/training_step.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/autodiff/autodiff.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/passes/rewrite.h"

namespace tessera::autodiff {
namespace {

// BatchNormalization running statistics (inputs 3 and 4) among the params.
std::set<ir::ValueId> running_stats(const ir::Graph& g) {
  std::set<ir::ValueId> out;
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    if (n.op != "BatchNormalization") continue;
    for (size_t i = 3; i < 5 && i < n.inputs.size(); ++i)
      if (n.inputs[i] != ir::kNoValue && g.value(n.inputs[i]).kind == ir::ValueKind::kParam) out.insert(n.inputs[i]);
  }
  return out;
}

// Float operands that set how an op computes rather than what it learns: ONNX's non-differentiable
// inputs (PyTorch keeps them out of the module's parameters). A float param that reaches the graph
// only through these is not a trained weight: a Dropout ratio, Clip bounds or a loss's class
// weights stored as initializers (tf2onnx, Keras, hand-written graphs) stay as they are.
bool hyperparameter_input(const std::string& op, size_t i) {
  if (op == "Dropout") return i == 1;
  if (op == "Clip") return i == 1 || i == 2;
  if (op == "Pad") return i == 2;
  if (op == "Resize") return i == 1 || i == 2;
  if (op == "RNN" || op == "GRU") return i == 5;
  if (op == "LSTM") return i == 5 || i == 6;
  if (op == "NegativeLogLikelihoodLoss" || op == "SoftmaxCrossEntropyLoss") return i == 2;
  return false;
}

// Params every use of which is a hyperparameter input (see above).
std::set<ir::ValueId> hyperparameters(const ir::Graph& g) {
  std::map<ir::ValueId, bool> only_hyper;  // param -> no other use seen
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::ValueId v = n.inputs[i];
      if (v == ir::kNoValue || g.value(v).kind != ir::ValueKind::kParam) continue;
      auto [it, fresh] = only_hyper.emplace(v, true);
      it->second = it->second && hyperparameter_input(n.op, i);
    }
  }
  for (ir::ValueId v : g.outputs()) only_hyper[v] = false;
  std::set<ir::ValueId> out;
  for (const auto& [v, hyper] : only_hyper)
    if (hyper) out.insert(v);
  return out;
}

ir::ValueId add_param(ir::Graph& g, const std::string& name, Tensor t) {
  return g.add_param(passes::unique_value_name(g, name), std::move(t));
}

ir::ValueId emit1(ir::Graph& g, const ops::OpRegistry& reg, const std::string& op, std::vector<ir::ValueId> in,
                  const std::string& name, ir::Attributes attrs = {}) {
  ir::NodeId id = g.add_node(op, std::move(in), 1, name, std::move(attrs));
  g.node(id).provenance.origin = "training";
  (void)reg;
  return g.node(id).outputs[0];
}

Expected<ir::ValueId> build_loss(ir::Graph& g, const ops::OpRegistry& reg, const TrainingSpec& spec, ir::ValueId out) {
  const ir::TensorType& t = g.value(out).type;
  switch (spec.loss) {
    case LossKind::kGraphOutput:
      if (t.static_numel() != 1)
        return make_error("the loss output '" + g.value(out).name + "' must hold one value, it is " + t.to_string());
      if (t.rank() == 0) return out;
      return emit1(g, reg, "Reshape", {out, add_param(g, "loss/shape", Tensor::from_vector<int64_t>({0}, {}))}, "loss");
    case LossKind::kSoftmaxCrossEntropy: {
      if (t.rank() < 2) return make_error("softmax cross-entropy needs scores [N, C, ...]; output '" + g.value(out).name + "' is " + t.to_string());
      std::vector<ir::Dim> dims = t.dims;
      dims.erase(dims.begin() + 1);
      ir::ValueId labels = g.add_input("labels", ir::TensorType(DType::kI64, dims));
      return emit1(g, reg, "SoftmaxCrossEntropyLoss", {out, labels}, "loss", {{"reduction", std::string("mean")}});
    }
    case LossKind::kMeanSquaredError:
    case LossKind::kBinaryCrossEntropyWithLogits: {
      ir::ValueId labels = g.add_input("labels", t);
      ir::ValueId per;
      if (spec.loss == LossKind::kMeanSquaredError) {
        ir::ValueId d = emit1(g, reg, "Sub", {out, labels}, "loss/diff");
        per = emit1(g, reg, "Mul", {d, d}, "loss/square");
      } else {
        // max(x, 0) - x*y + log(1 + exp(-|x|)), stable for any x.
        ir::ValueId relu = emit1(g, reg, "Relu", {out}, "loss/relu");
        ir::ValueId xy = emit1(g, reg, "Mul", {out, labels}, "loss/xy");
        ir::ValueId nabs = emit1(g, reg, "Neg", {emit1(g, reg, "Abs", {out}, "loss/abs")}, "loss/neg_abs");
        ir::ValueId sp = emit1(g, reg, "Softplus", {nabs}, "loss/softplus");
        per = emit1(g, reg, "Add", {emit1(g, reg, "Sub", {relu, xy}, "loss/sub"), sp}, "loss/terms");
      }
      return emit1(g, reg, "ReduceMean", {per}, "loss", {{"keepdims", int64_t{0}}});
    }
  }
  return make_error("unknown loss");
}

}  // namespace

Expected<LossKind> parse_loss(const std::string& name) {
  if (name == "softmax-cross-entropy" || name == "cross-entropy") return LossKind::kSoftmaxCrossEntropy;
  if (name == "mse") return LossKind::kMeanSquaredError;
  if (name == "bce-with-logits") return LossKind::kBinaryCrossEntropyWithLogits;
  if (name == "output") return LossKind::kGraphOutput;
  return make_error("unknown loss '" + name + "' (softmax-cross-entropy, mse, bce-with-logits, output)");
}

Expected<OptimizerKind> parse_optimizer(const std::string& name) {
  if (name == "sgd" || name == "momentum") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "adamw") return OptimizerKind::kAdamW;
  return make_error("unknown optimizer '" + name + "' (sgd, momentum, adam, adamw)");
}

const char* loss_name(LossKind k) {
  switch (k) {
    case LossKind::kSoftmaxCrossEntropy: return "softmax-cross-entropy";
    case LossKind::kMeanSquaredError: return "mse";
    case LossKind::kBinaryCrossEntropyWithLogits: return "bce-with-logits";
    case LossKind::kGraphOutput: return "output";
  }
  return "?";
}

const char* optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "?";
}

std::vector<std::string> trainable_params(const ir::Graph& forward, const TrainingSpec& spec) {
  std::set<ir::ValueId> stats = running_stats(forward), hyper = hyperparameters(forward);
  std::vector<std::string> out;
  for (ir::ValueId p : forward.params()) {
    const ir::Value& v = forward.value(p);
    if (!is_float(v.type.dtype) || stats.count(p) || hyper.count(p)) continue;
    if (std::find(spec.frozen.begin(), spec.frozen.end(), v.name) != spec.frozen.end()) continue;
    out.push_back(v.name);
  }
  return out;
}

Expected<std::vector<StateSlot>> state_slots(const ir::Graph& forward, const TrainingSpec& spec) {
  std::vector<StateSlot> slots;
  std::set<std::string> seen;
  for (const std::string& name : trainable_params(forward, spec)) {
    if (!seen.insert(name).second) return make_error("two params are named '" + name + "': trained weights need unique names");
    ir::ValueId p = *forward.find_value(name);
    Tensor w = forward.param_data(p)->clone();
    slots.push_back({name, w, true});
  }
  // Optimizer buffers follow the weights, in the same order.
  size_t weights = slots.size();
  for (size_t i = 0; i < weights; ++i) {
    const std::string name = slots[i].name;  // a copy: push_back below may move the slots
    Tensor zeros(slots[i].initial.dtype(), slots[i].initial.shape());
    if (spec.optimizer.kind == OptimizerKind::kSgd) {
      if (spec.optimizer.momentum != 0.0) slots.push_back({name + "/momentum", zeros, false});
    } else {
      slots.push_back({name + "/adam_m", zeros, false});
      slots.push_back({name + "/adam_v", zeros.clone(), false});
    }
  }
  for (ir::ValueId p : running_stats(forward)) slots.push_back({forward.value(p).name, forward.param_data(p)->clone(), false});
  return slots;
}

ir::Graph evaluation_graph(const ir::Graph& forward, const TrainingSpec& spec) {
  ir::Graph g = forward;
  for (const std::string& name : trainable_params(forward, spec)) g.make_input(*g.find_value(name));
  for (ir::ValueId p : running_stats(forward)) g.make_input(p);
  return g;
}

Expected<ir::Graph> build_training_step(const ir::Graph& forward, const TrainingSpec& spec,
                                        const ops::OpRegistry& registry) {
  ir::Graph g = forward;
  g.set_name(forward.name() + "/train");
  if (g.outputs().empty()) return make_error("the graph has no outputs to train from");
  ir::ValueId out = g.outputs()[0];
  if (!spec.output.empty()) {
    auto found = g.find_value(spec.output);
    if (!found) return make_error("the graph has no value named '" + spec.output + "' to compute the loss from");
    out = *found;
  }
  std::vector<ir::ValueId> forward_outputs = g.outputs();

  // Weights and running statistics become inputs fed each step.
  std::vector<std::string> weights = trainable_params(forward, spec);
  if (weights.empty()) return make_error("the graph has no floating-point params to train");
  std::set<ir::ValueId> stats = running_stats(g);
  std::vector<ir::ValueId> weight_ids;
  for (const std::string& name : weights) {
    ir::ValueId p = *g.find_value(name);
    g.make_input(p);
    weight_ids.push_back(p);
  }
  for (ir::ValueId p : stats) g.make_input(p);

  // Training mode: Dropout draws masks (stream "rng_offset"; "rng_rows" places the batch in the
  // global batch of data parallel and accumulation), BatchNormalization uses batch statistics and
  // outputs the updated running ones.
  ir::ValueId rng_offset = g.add_input("rng_offset", ir::TensorType::of(DType::kI64, {}));
  ir::ValueId rng_rows = g.add_input("rng_rows", ir::TensorType::of(DType::kI64, {2}));
  Tensor true_value(DType::kBool, {});
  true_value.set(0, 1.0);
  ir::ValueId yes = add_param(g, "training/true", true_value);
  std::map<ir::ValueId, ir::ValueId> stat_updates;  // running-stat input -> its new value
  for (ir::NodeId id : g.node_ids()) {
    ir::Node& n = g.node(id);
    const ops::OpDef* def = registry.find(n.op);
    if (n.op == "Dropout") {
      n.inputs.resize(std::max<size_t>(n.inputs.size(), 3), ir::kNoValue);
      if (n.inputs[1] == ir::kNoValue) n.inputs[1] = add_param(g, n.name + "/ratio", Tensor::scalar<float>(0.5f));
      g.node(id).inputs[2] = yes;
      if (def && def->inputs.size() >= 5) {
        g.node(id).inputs.resize(5, ir::kNoValue);
        g.node(id).inputs[3] = rng_offset;
        g.node(id).inputs[4] = rng_rows;
      }
      if (g.node(id).outputs.size() < 2) g.add_node_output(id);
    } else if (n.op == "BatchNormalization" && n.inputs.size() >= 5) {
      n.attrs.insert_or_assign("training_mode", ir::Attribute(int64_t{1}));
      while (g.node(id).outputs.size() < 3) g.add_node_output(id);
      const ir::Node& bn = g.node(id);
      if (stats.count(bn.inputs[3])) stat_updates[bn.inputs[3]] = bn.outputs[1];
      if (stats.count(bn.inputs[4])) stat_updates[bn.inputs[4]] = bn.outputs[2];
    }
  }
  RETURN_IF_ERROR(ops::infer_types(g, registry));

  TRY(ir::ValueId loss, build_loss(g, registry, spec, out));
  RETURN_IF_ERROR(ops::infer_types(g, registry));
  if (!is_float(g.value(loss).type.dtype)) return make_error("the loss must be floating point");
  TRY(std::vector<ir::ValueId> grads, add_gradients(g, registry, {loss}, {}, weight_ids));
  g.set_value_name(loss, "loss");
  auto stat_outputs = [&] {
    std::vector<ir::ValueId> outs;
    for (ir::ValueId p : stats) {
      auto it = stat_updates.find(p);
      outs.push_back(it != stat_updates.end() ? it->second : p);
    }
    return outs;
  };

  // Gradient accumulation: each gradient plus the sum of the earlier micro-batches'.
  if (spec.accumulate < 1) return make_error("accumulate must be at least 1, not " + std::to_string(spec.accumulate));
  if (spec.accumulate > 1) {
    for (size_t i = 0; i < weight_ids.size(); ++i) {
      const ir::Value& w = g.value(weight_ids[i]);
      const std::string name = w.name;
      const ir::ValueId acc = g.add_input(name + "/grad_acc", w.type);
      const ir::NodeId add = g.add_node("Add", {acc, grads[i]}, 1, name + "/grad_acc/add");
      g.node(add).provenance.origin = "training";
      grads[i] = g.node(add).outputs[0];
      g.set_value_name(grads[i], name + "/grad_acc_sum");
    }
    if (spec.accumulate_only) {
      std::vector<ir::ValueId> outs{loss};
      outs.insert(outs.end(), forward_outputs.begin(), forward_outputs.end());
      const std::vector<ir::ValueId> st = stat_outputs();
      outs.insert(outs.end(), st.begin(), st.end());
      outs.insert(outs.end(), grads.begin(), grads.end());
      g.set_outputs(outs);
      RETURN_IF_ERROR(ops::infer_types(g, registry));
      return g;
    }
  }

  // Optimizer updates.
  ir::ValueId lr = g.add_input("lr", ir::TensorType::of(DType::kF32, {}));
  ir::ValueId step = g.add_input("step", ir::TensorType::of(DType::kF32, {}));
  const OptimizerSpec& o = spec.optimizer;
  std::vector<ir::ValueId> new_weights, new_buffers;
  for (size_t i = 0; i < weight_ids.size(); ++i) {
    const ir::Value& w = g.value(weight_ids[i]);
    std::string name = w.name;
    ir::TensorType wt = w.type;
    ir::NodeId upd;
    if (o.kind == OptimizerKind::kSgd) {
      ir::ValueId buf = ir::kNoValue;
      if (o.momentum != 0.0) buf = g.add_input(name + "/momentum", wt);
      upd = g.add_node("SGDUpdate", {weight_ids[i], grads[i], lr, buf, loss}, 2, name + "/update",
                       {{"momentum", o.momentum}, {"nesterov", int64_t{o.nesterov ? 1 : 0}}, {"weight_decay", o.weight_decay}});
      new_weights.push_back(g.node(upd).outputs[0]);
      if (buf != ir::kNoValue) new_buffers.push_back(g.node(upd).outputs[1]);
    } else {
      ir::ValueId m = g.add_input(name + "/adam_m", wt);
      ir::ValueId v = g.add_input(name + "/adam_v", wt);
      upd = g.add_node("AdamUpdate", {weight_ids[i], grads[i], lr, step, m, v, loss}, 3, name + "/update",
                       {{"beta1", o.beta1}, {"beta2", o.beta2}, {"epsilon", o.epsilon}, {"weight_decay", o.weight_decay},
                        {"decoupled", int64_t{o.kind == OptimizerKind::kAdamW ? 1 : 0}}});
      new_weights.push_back(g.node(upd).outputs[0]);
      new_buffers.push_back(g.node(upd).outputs[1]);
      new_buffers.push_back(g.node(upd).outputs[2]);
    }
    g.node(upd).provenance.origin = "training";
    if (spec.accumulate > 1) g.node(upd).attrs.insert_or_assign("grad_scale", ir::Attribute(1.0 / spec.accumulate));
  }
  // Outputs: loss, forward outputs, new state in state_slots() order.
  std::vector<ir::ValueId> outs{loss};
  outs.insert(outs.end(), forward_outputs.begin(), forward_outputs.end());
  outs.insert(outs.end(), new_weights.begin(), new_weights.end());
  // Buffers: state_slots lists each weight's buffers weight by weight, which is the order above.
  outs.insert(outs.end(), new_buffers.begin(), new_buffers.end());
  const std::vector<ir::ValueId> st = stat_outputs();
  outs.insert(outs.end(), st.begin(), st.end());
  g.set_outputs(outs);
  RETURN_IF_ERROR(ops::infer_types(g, registry));
  return g;
}

Status add_step_input_shapes(const ir::Graph& forward, const TrainingSpec& spec,
                             std::map<std::string, Shape>& shapes) {
  int64_t batch = 1;
  if (!forward.inputs().empty()) {
    auto it = shapes.find(forward.value(forward.inputs()[0]).name);
    if (it != shapes.end() && !it->second.empty()) batch = it->second[0];
  }
  if (spec.loss != LossKind::kGraphOutput) shapes["labels"] = {batch};
  shapes["lr"] = {};
  shapes["step"] = {};
  shapes["rng_offset"] = {};
  shapes["rng_rows"] = {2};
  TRY(std::vector<StateSlot> slots, state_slots(forward, spec));
  for (const StateSlot& s : slots) {
    shapes[s.name] = s.initial.shape();
    if (spec.accumulate > 1 && s.is_weight) shapes[s.name + "/grad_acc"] = s.initial.shape();
  }
  return Status::ok();
}

}  // namespace tessera::autodiff
