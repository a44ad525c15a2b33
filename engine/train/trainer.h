// The training loop: the training step (autodiff/training_step.h) compiled through the six stages
// by a Session, fed batch by batch from a DataLoader, with learning-rate schedules, evaluation on
// a test split after each epoch, checkpoints and bit-for-bit resume.
//
// Usage:
//   TrainConfig cfg;  cfg.epochs = 2;  cfg.lr = 0.01;  cfg.spec.optimizer.momentum = 0.9;
//   Trainer t(std::move(forward), registry, cfg);
//   if (!resume.empty()) RETURN_IF_ERROR(t.resume(resume));
//   TRY(TrainResult r, t.fit(train_loader, &test_loader, callbacks));
//
// Determinism: for one seed, batch size and thread count the weights after every step are the same
// bytes on every run: data order and augmentation come from the loader's seed, Dropout's stream
// from the step number, and every kernel's reduction order is fixed for a thread count. A run
// resumed from a checkpoint of step k continues exactly as the uninterrupted run from step k.
//
// Faults: a loss that becomes NaN or infinite stops training with the step and the first node
// (in execution order) whose output was not finite; with TrainConfig::check_numerics, so does a
// non-finite weight or optimizer state after an update (a gradient that overflowed while the loss
// stayed finite); a checkpoint from another graph or optimizer is refused with what differs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/autodiff/training_step.h"
#include "engine/data/loader.h"
#include "engine/dist/communicator.h"
#include "engine/ir/graph.h"
#include "engine/observe/sinks.h"
#include "engine/runtime/interpreter.h"
#include "engine/train/checkpoint.h"

namespace tessera::train {

struct TrainConfig {
  autodiff::TrainingSpec spec;
  int64_t epochs = 1;
  double lr = 0.01;
  std::string schedule = "constant";  // schedule.h: constant | step:SIZE:GAMMA | cosine[:MIN], [,warmup:N]
  int threads = 1;
  int inter_op_threads = 1;           // steps run at once (SessionOptions.inter_op_threads)
  std::string device = "cpu";         // SessionOptions.device: cpu, cuda, cuda:N or auto
  bool tf32 = true;                   // SessionOptions.tf32
  bool bf16 = false;                  // SessionOptions.bf16 (CPU; the weights stay f32)
  bool adapt_threads = false;         // fewer threads while other processes hold cores (SessionOptions)
  uint64_t seed = 0;                  // recorded in checkpoints; the loaders must use the same
  int64_t batch_size = 0;             // recorded in checkpoints (the loader's)
  std::string checkpoint_dir;         // empty: no checkpoints
  int64_t checkpoint_every = 0;       // steps between checkpoints (0: at epoch ends only)
  int64_t max_steps = 0;              // stop after this many steps in total (0: no limit); schedules end there
  // Spans of the stages and of every kernel of sampled steps: all of the first `trace_warm_steps`
  // steps, then one step in `trace_every` (a profiler's schedule: a span per kernel per step would
  // cost more than the work of small networks). 0 traces every step.
  observe::TraceSink* trace = nullptr;
  int64_t trace_warm_steps = 20, trace_every = 50;
  // Data parallel (engine/dist/communicator.h): with a communicator of more than one rank, each
  // batch is the global batch and this rank trains on its rows [r*n/W, (r+1)*n/W) (the loader
  // builds only those with LoaderOptions::shard/shards = rank/W; otherwise the trainer slices);
  // every rank starts from rank 0's weights, the split stage all-reduces the gradients by bucket,
  // the loss and accuracy reported are the global batch's, and rank 0 alone writes checkpoints.
  dist::Communicator* comm = nullptr;
  dist::DataParallel data_parallel;  // bucket sizes (world_size is taken from comm)
  // Gradient accumulation: spec.accumulate > 1 splits each batch (this rank's rows) into that many
  // micro-batches, rows [k*n/K, (k+1)*n/K) like the ranks' shards; all but the last run a step
  // without updates that sums their gradients (TrainingSpec::accumulate_only), the last adds its
  // own and updates with their mean. Bit for bit, K micro-batches of B on one rank train as K
  // ranks of B each (2 ranks: the same sums in the same order); the loss reported is the mean of
  // the micro-batches' losses, BatchNormalization's running statistics move once per micro-batch.

  observe::MetricsSink* metrics = nullptr;  // loss, accuracy, lr by step; test metrics, examples/s and the share waiting for data by epoch
  // After every step, check the new weights and optimizer state too (a NaN or infinite gradient
  // with a finite loss): the first non-finite one stops training, naming the step, the weight and
  // the first node of the step (forward, backward or update, in execution order) whose output was
  // not finite, found by running the step again on the reference kernels. Costs a copy of the
  // state each step. The loss is checked every step whatever this says.
  bool check_numerics = false;
};

struct StepInfo {
  int64_t epoch = 0, step = 0;          // step: updates done so far (1 after the first)
  int64_t batch = 0, batches = 0;       // batch index in the epoch (1-based), batches per epoch
  double loss = 0, accuracy = 0, lr = 0;
  double images_per_s = 0;              // over the epoch so far
  double eta_s = 0;                     // estimate for the rest of the run
};

struct EpochInfo {
  int64_t epoch = 0;
  double train_loss = 0, train_accuracy = 0;   // means over the epoch's batches
  double test_loss = -1, test_accuracy = -1;   // -1 without a test loader
  double seconds = 0, images_per_s = 0;
  double data_wait_s = 0;                      // of `seconds`, waiting for the loader's next batch
};

struct TrainResult {
  std::vector<EpochInfo> epochs;
  int64_t steps = 0;
  double train_loss = 0, test_accuracy = -1, images_per_s = 0;
  std::string last_checkpoint;
  bool stopped = false;  // by max_steps or the stop flag
  bool interrupted = false;  // by the stop flag (data parallel: of any rank)
  double data_wait_s = 0;      // waiting for batches, over the epochs run
  size_t arena_bytes = 0;      // the compiled step's arena (activations kept for the backward pass, gradients)
  size_t state_bytes = 0;      // weights and optimizer state (updated in place)
  double eval_s = 0;           // evaluating the test set, over the epochs run
  int64_t eval_examples = 0;   // test examples this process evaluated, over the epochs run (its shard)
};

struct TrainCallbacks {
  std::function<void(const StepInfo&)> on_step;
  std::function<void(const EpochInfo&)> on_epoch;
  std::function<void(const std::string& path)> on_checkpoint;
  // Set from another thread to stop after the current step (data parallel: set on any rank, every
  // rank stops after the same step).
  const std::atomic<bool>* stop = nullptr;
};

// The examples of an epoch's last, partial global batch when they are too few to give each of
// `parts` slices (ranks x micro-batches) one, else 0: such a tail is left out (drop_last).
int64_t unsplittable_tail(int64_t examples, int64_t batch, int64_t parts);

class Trainer {
 public:
  Trainer(ir::Graph forward, const ops::OpRegistry& registry, TrainConfig config);
  ~Trainer();

  // Loads weights, optimizer state and position from a checkpoint. Refuses one written for
  // another graph, optimizer, seed or batch size, naming what differs. Data parallel: a collective;
  // rank 0 reads the file and the other ranks receive its state (their `path` is not opened).
  Status resume(const std::string& path);
  // The checkpoint folder (config.checkpoint_dir) created with its parents and checked writable:
  // fit() calls it before the first step, so a bad folder fails then, not when the first
  // checkpoint is due. Data parallel: rank 0's (the other ranks write none).
  Status check_checkpoint_dir() const;
  Expected<TrainResult> fit(data::DataLoader& train, data::DataLoader* test, const TrainCallbacks& callbacks = {});
  // Test loss and accuracy of the current weights. Data parallel with a loader of one shard per
  // rank (PyTorch's DistributedSampler): each rank evaluates its rows, the sums are combined, and
  // every rank gets the whole test set's figures (a collective: every rank must call it).
  Expected<std::pair<double, double>> evaluate(data::DataLoader& test);

  // The forward graph with the trained weights as its params (for saving or running).
  ir::Graph trained_graph() const;
  const std::vector<autodiff::StateSlot>& state() const { return state_; }
  int64_t global_step() const { return global_step_; }
  // The graph's identity for checkpoints: hash of its structure without the trained weights.
  std::string graph_signature() const;
  Checkpoint make_checkpoint() const;

 private:
  Status init();
  // resume(): the checkpoint into state_ and the position (under data parallel, rank 0's).
  Status read_resumed_state(const std::string& path);
  // Data parallel: state_ (weights and optimizer state) from rank 0 to every rank.
  Status broadcast_state();
  int world() const { return config_.comm ? config_.comm->size() : 1; }
  // Rows [part*n/parts, (part+1)*n/parts) of every batched field (views, no copy): this rank's
  // rows of a global batch, or a micro-batch. `what` names the parts in the error.
  // Returns the slice's first row in the batch.
  static Expected<int64_t> slice_rows(data::Batch& batch, int64_t part, int64_t parts, const char* what);
  // One optimizer step over `batch`: its micro-batches through the accumulating step, the last
  // through the updating one. Gives the new state (in state_ order, committed by the caller once
  // the loss is finite), the loss (mean of the micro-batches', f32 like the ranks' sum) and the
  // hits and examples of this rank. `first_row`: where the batch's rows start in the global batch
  // (Dropout's "rng_rows": ranks and micro-batches draw the single process's masks).
  Status run_step(const data::Batch& batch, int64_t first_row, runtime::Feeds& feeds, double& loss, int64_t& hits,
                  int64_t& examples, std::vector<Tensor>& new_state);
  Status save_checkpoint(const std::string& name, TrainResult& result, const TrainCallbacks& cb);
  void add_batch(const data::Batch& batch, bool with_labels, runtime::Feeds& feeds) const;
  Error diagnose_non_finite(const runtime::Feeds& feeds, int64_t step, double loss);
  // check_numerics: `feeds` as the step read them (the state before its update), `slot` the first
  // state slot whose new value is not finite.
  Error diagnose_non_finite_state(const runtime::Feeds& feeds, int64_t step, const std::string& slot);

  ir::Graph forward_;
  const ops::OpRegistry& registry_;
  TrainConfig config_;
  std::vector<autodiff::StateSlot> state_;
  int64_t global_step_ = 0, epoch_ = 0, batch_in_epoch_ = 0;
  bool stop_agreed_ = false;  // data parallel: some rank's TrainCallbacks::stop was set at the last step
  int64_t evaluated_ = 0;  // test examples this process evaluated (its shard), over every evaluate()
  struct Sessions;
  std::unique_ptr<Sessions> sessions_;
  class SampledTrace;
  std::unique_ptr<SampledTrace> sampled_trace_;
  Status init_status_ = Status::ok();
};

}  // namespace tessera::train
