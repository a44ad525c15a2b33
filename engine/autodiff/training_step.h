// The training step as one graph: forward (in training mode) + loss + reverse-mode gradients +
// optimizer updates. The prepare stage builds it when a TrainingSpec is given, so split, optimise,
// compile, load and execute treat a training step like any other graph.
//
// Interface of the step graph (names are stable, so the trainer feeds and reads by name):
//   inputs:  the forward graph's data inputs; "labels" (unless the loss is a graph output);
//            "lr" (f32 scalar); "step" (f32 scalar, the 1-based update number, Adam's t);
//            "rng_offset" (i64 scalar, Dropout's per-step stream); "rng_rows" (i64 [2]: the first
//            row of this batch in the global batch and its rows, so ranks and micro-batches draw
//            the single process's Dropout masks; (0, batch) in one process);
//            every state slot (state_slots(): each trained weight under its own name, and the
//            optimizer's buffers "<weight>/momentum", "<weight>/adam_m", "<weight>/adam_v", and
//            BatchNormalization running statistics under their param names).
//   outputs: "loss" (f32 scalar), the forward graph's outputs, then the new value of every state
//            slot in state_slots() order.
//   With TrainingSpec::accumulate > 1 also the inputs "<weight>/grad_acc" (see there).
//
//   TrainingSpec spec;  spec.optimizer.kind = OptimizerKind::kSgd;  spec.optimizer.momentum = 0.9;
//   TRY(std::vector<StateSlot> slots, state_slots(forward, spec));        // initial values
//   TRY(ir::Graph step, build_training_step(typed_forward, spec, registry));
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::autodiff {

enum class LossKind { kSoftmaxCrossEntropy, kMeanSquaredError, kBinaryCrossEntropyWithLogits, kGraphOutput };
enum class OptimizerKind { kSgd, kAdam, kAdamW };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  double momentum = 0.0;      // SGD
  bool nesterov = false;      // SGD
  double weight_decay = 0.0;  // all
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // Adam, AdamW
};

struct TrainingSpec {
  LossKind loss = LossKind::kSoftmaxCrossEntropy;
  // The forward output the loss is computed from (or, for kGraphOutput, the loss itself);
  // empty: the first output.
  std::string output;
  OptimizerSpec optimizer;
  std::vector<std::string> frozen;  // params not to train
  // Gradient accumulation: one optimizer step over `accumulate` micro-batches (TrainConfig::
  // accumulate). Above 1, each weight's gradient is first added to the input "<weight>/grad_acc"
  // (the sum of the step's earlier micro-batches' gradients; zeros for the first). With
  // accumulate_only the step ends there, without updates: its outputs are "loss", the forward
  // outputs, the new running statistics and the new "<weight>/grad_acc" sums (trainable order).
  // Otherwise the updates read the sums with grad_scale 1/accumulate: the mean over micro-batches.
  int accumulate = 1;
  bool accumulate_only = false;
};

struct StateSlot {
  std::string name;     // graph input name of the step graph
  Tensor initial;       // value before the first step (the weight, or zeros for buffers)
  bool is_weight = false;
};

// Parses "softmax-cross-entropy" | "mse" | "bce-with-logits" | "output" and
// "sgd" | "momentum" | "adam" | "adamw" (momentum = SGD with momentum 0.9 unless set).
Expected<LossKind> parse_loss(const std::string& name);
Expected<OptimizerKind> parse_optimizer(const std::string& name);
const char* loss_name(LossKind k);
const char* optimizer_name(OptimizerKind k);

// Trained weights: the float params of `forward` that are not frozen, not BatchNormalization
// running statistics (those are updated by the op itself in training mode) and not used only as
// an op's hyperparameter (ONNX's non-differentiable float inputs: Dropout's ratio, Clip's bounds,
// Pad's constant_value, Resize's roi and scales, recurrent initial states, a loss's class weights).
std::vector<std::string> trainable_params(const ir::Graph& forward, const TrainingSpec& spec);
// Every state slot in order, with initial values taken from `forward`'s params.
Expected<std::vector<StateSlot>> state_slots(const ir::Graph& forward, const TrainingSpec& spec);

// Adds to `shapes` (the forward graph's data inputs, by name) the shapes of the step graph's own
// inputs, for compiling a step without data (`tessera passes --train`, the studio's pass stepper):
// "labels" (one class index per example of the first data input's batch; none for kGraphOutput),
// "lr", "step", "rng_offset", "rng_rows", every state slot and, when accumulating, every "<weight>/grad_acc".
Status add_step_input_shapes(const ir::Graph& forward, const TrainingSpec& spec,
                             std::map<std::string, Shape>& shapes);

// `forward` must be typed (ops::infer_types, shapes bound). Errors: no output to train from, a
// loss output that is not a scalar, labels whose type does not fit the loss, a forward op on the
// gradient path without a gradient rule (named).
Expected<ir::Graph> build_training_step(const ir::Graph& forward, const TrainingSpec& spec,
                                        const ops::OpRegistry& registry);

// The forward graph with every trainable weight (and BatchNormalization statistic) turned into a
// graph input of the same name, for evaluation with the current state.
ir::Graph evaluation_graph(const ir::Graph& forward, const TrainingSpec& spec);

}  // namespace tessera::autodiff
