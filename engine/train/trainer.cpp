// The training loop (see trainer.h).
#include "engine/train/trainer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <optional>
#include <cstdio>
#include <ctime>
#include <map>

#include "engine/core/file_kind.h"
#include "engine/ir/hash.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/runtime/interpreter.h"
#include "engine/stages/session.h"
#include "engine/train/schedule.h"

namespace tessera::train {

// Forwards what the stages and the sampled steps produce (see TrainConfig::trace).
class Trainer::SampledTrace : public observe::TraceSink {
 public:
  explicit SampledTrace(observe::TraceSink* inner) : inner_(inner) {}
  void on_span(const observe::Span& span) override {
    if (on_ || span.kind == observe::Span::Kind::kStage || span.kind == observe::Span::Kind::kPass) inner_->on_span(span);
  }
  void on_memory(const observe::MemoryEvent& event) override {
    if (on_) inner_->on_memory(event);
  }
  void set_on(bool on) { on_ = on; }

 private:
  observe::TraceSink* inner_;
  bool on_ = true;
};

struct Trainer::Sessions {
  std::unique_ptr<stages::Session> step, eval;
  // Gradient accumulation (TrainingSpec::accumulate > 1): the step without updates run on every
  // micro-batch but the last, its spec (the session keeps a pointer), and the zero sums the first
  // micro-batch starts from (inputs only: the step never writes over them).
  std::unique_ptr<stages::Session> accumulate;
  autodiff::TrainingSpec accumulate_spec;
  std::vector<std::pair<std::string, Tensor>> zero_sums;
};

namespace {


// Row-wise argmax of [N, C] scores (f32 or f64) against i64 labels: the number of hits.
int64_t count_correct(const Tensor& scores, const Tensor& labels) {
  if (scores.shape().size() != 2 || labels.numel() != scores.shape()[0]) return 0;
  Tensor s = scores.contiguous();
  const int64_t n = s.shape()[0], c = s.shape()[1];
  int64_t hits = 0;
  if (s.dtype() == DType::kF32 && labels.dtype() == DType::kI64 && labels.is_contiguous()) {
    // The training step's case, every step: typed reads (Tensor::get converts through double).
    const float* p = s.data<float>();
    const int64_t* y = labels.data<int64_t>();
    for (int64_t i = 0; i < n; ++i, p += c) {
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j)
        if (p[j] > p[best]) best = j;
      hits += best == y[i];
    }
    return hits;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    double bv = s.get(i * c);
    for (int64_t j = 1; j < c; ++j)
      if (s.get(i * c + j) > bv) bv = s.get(i * c + j), best = j;
    hits += best == static_cast<int64_t>(labels.get(i));
  }
  return hits;
}

// Summed softmax cross-entropy of [N, C] scores against labels (host side, for evaluation). A
// label outside [0, C) is an error naming it and its example (`first` is the batch's first example).
Expected<double> cross_entropy_sum(const Tensor& scores, const Tensor& labels, int64_t first) {
  Tensor s = scores.contiguous();
  const int64_t n = s.shape()[0], c = s.shape()[1];
  if (labels.numel() != n)
    return make_error("the test labels hold " + std::to_string(labels.numel()) + " values for a batch of " + std::to_string(n));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double label = labels.get(i);
    if (!(label >= 0 && label < static_cast<double>(c)))
      return make_error("test label " + std::to_string(static_cast<int64_t>(label)) + " of example " + std::to_string(first + i) +
                        " is out of range for the " + std::to_string(c) + " classes the network scores");
    double m = -INFINITY;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, s.get(i * c + j));
    double z = 0;
    for (int64_t j = 0; j < c; ++j) z += std::exp(s.get(i * c + j) - m);
    total += m + std::log(z) - s.get(i * c + static_cast<int64_t>(label));
  }
  return total;
}

bool all_finite(const Tensor& t) {
  if (!is_float(t.dtype())) return true;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get(i))) return false;
  return true;
}

// Runs `g` on the reference kernels with every node output kept and returns the error naming the
// first node (in execution order) whose float output is not finite, after `head`, with `advice`;
// a gradient node names the forward node it differentiates (provenance), else its origin.
// nullopt when every value is finite or the graph cannot run.
std::optional<Error> first_non_finite_node(ir::Graph g, const ops::OpRegistry& registry, const runtime::Feeds& feeds,
                                           const std::string& head, const std::string& advice) {
  auto order = g.topological_order();
  if (!order) return std::nullopt;
  std::vector<ir::ValueId> outs;
  for (ir::NodeId id : *order)
    for (ir::ValueId v : g.node(id).outputs) outs.push_back(v);
  g.set_outputs(outs);
  runtime::Feeds f;
  for (ir::ValueId in : g.inputs())
    if (auto it = feeds.find(g.value(in).name); it != feeds.end()) f[it->first] = it->second;
  auto values = runtime::run_reference(g, registry, f);
  if (!values) return std::nullopt;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = (*values)[i];
    if (!is_float(t.dtype()) || all_finite(t)) continue;
    const ir::Node& n = g.node(g.value(outs[i]).producer);
    std::string from;
    for (ir::NodeId src : n.provenance.from)
      if (from.empty() && src != n.id && g.has_node(src)) from = ir::describe_node(g.node(src));
    if (from.empty()) from = n.provenance.origin;
    return make_error(head + "; the first non-finite value is the output of " + ir::describe_node(n) +
                          (from.empty() ? "" : " (from " + from + ")") + ": " + advice,
                      {}, n.id);
  }
  return std::nullopt;
}

// The examples in a batch: the leading size of its batched fields (slice_rows splits those).
int64_t batch_rows(const data::Batch& batch) {
  for (const auto& [name, t] : batch)
    if (t.rank() > 0) return t.dim(0);
  return 1;
}

}  // namespace

Trainer::Trainer(ir::Graph forward, const ops::OpRegistry& registry, TrainConfig config)
    : forward_(std::move(forward)), registry_(registry), config_(std::move(config)) {
  init_status_ = init();
}

Trainer::~Trainer() {
  if (config_.comm) config_.comm->set_trace(nullptr);  // the sampled trace goes with the trainer
}

Status Trainer::init() {
  RETURN_IF_ERROR(ops::infer_types(forward_, registry_));
  TRY(state_, autodiff::state_slots(forward_, config_.spec));
  if (state_.empty()) return make_error("the graph has no floating-point params to train");
  // The step updates the state in place (SessionOptions::donate_inputs): the weights are the
  // trainer's own, never the caller's graph's.
  for (autodiff::StateSlot& s : state_) s.initial = s.initial.clone();
  sessions_ = std::make_unique<Sessions>();
  stages::SessionOptions so;
  so.threads = config_.threads;
  so.inter_op_threads = config_.inter_op_threads;
  so.adapt_threads = config_.adapt_threads;
  so.device = config_.device;
  so.tf32 = config_.tf32;
  so.bf16 = config_.bf16;
  if (config_.trace) {
    sampled_trace_ = std::make_unique<SampledTrace>(config_.trace);
    so.trace = sampled_trace_.get();
  }
  so.training = &config_.spec;
  so.donate_inputs = true;
  if (world() > 1) {
    config_.data_parallel.world_size = world();
    so.data_parallel = &config_.data_parallel;
    RETURN_IF_ERROR(broadcast_state());  // every rank starts from rank 0's weights
    config_.comm->set_trace(sampled_trace_.get());  // the buckets' sums beside the kernels (sampled steps)
  }
  sessions_->step = std::make_unique<stages::Session>(forward_, registry_, so);
  if (config_.spec.accumulate < 1)
    return make_error("gradient accumulation needs at least 1 micro-batch per step, not " + std::to_string(config_.spec.accumulate));
  if (config_.spec.accumulate > 1) {
    sessions_->accumulate_spec = config_.spec;
    sessions_->accumulate_spec.accumulate_only = true;
    stages::SessionOptions ao = so;
    ao.training = &sessions_->accumulate_spec;
    ao.data_parallel = nullptr;  // no updates: nothing to all-reduce before the step's last micro-batch
    sessions_->accumulate = std::make_unique<stages::Session>(forward_, registry_, ao);
    for (const autodiff::StateSlot& s : state_)
      if (s.is_weight) sessions_->zero_sums.emplace_back(s.name + "/grad_acc", Tensor(s.initial.dtype(), s.initial.shape()));
  }
  stages::SessionOptions eo;
  eo.threads = config_.threads;
  eo.inter_op_threads = config_.inter_op_threads;
  eo.adapt_threads = config_.adapt_threads;
  eo.device = config_.device;
  eo.tf32 = config_.tf32;
  eo.bf16 = config_.bf16;
  sessions_->eval = std::make_unique<stages::Session>(autodiff::evaluation_graph(forward_, config_.spec), registry_, eo);
  return Status::ok();
}

std::string Trainer::graph_signature() const {
  return hex64(ir::signature_hash(autodiff::evaluation_graph(forward_, config_.spec)));
}

ir::Graph Trainer::trained_graph() const {
  ir::Graph g = forward_;
  for (const autodiff::StateSlot& s : state_)
    if (auto v = g.find_value(s.name); v && g.value(*v).kind == ir::ValueKind::kParam) g.set_param_data(*v, s.initial.clone());
  return g;
}

Checkpoint Trainer::make_checkpoint() const {
  Checkpoint c;
  c.meta["format"] = "tessera-checkpoint";
  c.meta["engine_version"] = TESSERA_VERSION;
  c.meta["graph"] = forward_.name();
  c.meta["graph_signature"] = graph_signature();
  c.meta["optimizer"] = autodiff::optimizer_name(config_.spec.optimizer.kind);
  c.meta["momentum"] = std::to_string(config_.spec.optimizer.momentum);
  c.meta["loss"] = autodiff::loss_name(config_.spec.loss);
  c.meta["seed"] = std::to_string(config_.seed);
  c.meta["batch_size"] = std::to_string(config_.batch_size);
  c.meta["global_step"] = std::to_string(global_step_);
  c.meta["epoch"] = std::to_string(epoch_);
  c.meta["batch_in_epoch"] = std::to_string(batch_in_epoch_);
  c.meta["created_unix"] = std::to_string(static_cast<long long>(std::time(nullptr)));
  for (const autodiff::StateSlot& s : state_) c.tensors.emplace_back(s.name, s.initial);
  return c;
}

Status Trainer::resume(const std::string& path) {
  RETURN_IF_ERROR(init_status_);
  // Data parallel: rank 0 reads and checks the checkpoint (only its machine need have it: it
  // writes them) and sends the state and the position to the others.
  if (world() <= 1 || config_.comm->rank() == 0) RETURN_IF_ERROR(read_resumed_state(path));
  if (world() <= 1) return Status::ok();
  int64_t position[3] = {global_step_, epoch_, batch_in_epoch_};
  RETURN_IF_ERROR(config_.comm->broadcast(position, sizeof position, 0));
  global_step_ = position[0];
  epoch_ = position[1];
  batch_in_epoch_ = position[2];
  return broadcast_state();
}

Status Trainer::broadcast_state() {
  for (autodiff::StateSlot& s : state_)  // the same slots on every rank (the ranks agreed on the graph)
    RETURN_IF_ERROR(config_.comm->broadcast(s.initial.raw_data(), static_cast<int64_t>(s.initial.nbytes()), 0));
  return Status::ok();
}

Status Trainer::read_resumed_state(const std::string& path) {
  TRY(Checkpoint c, read_checkpoint(path));
  auto refuse = [&](const std::string& what) {
    return make_error("checkpoint does not fit this training run: " + what, path);
  };
  // Checkpoints written before the signature left provenance out carry the structural hash, which
  // also fits when the graph file is named as it was then.
  const std::string legacy = hex64(ir::structural_hash(autodiff::evaluation_graph(forward_, config_.spec)));
  if (c.get("graph_signature") != graph_signature() && c.get("graph_signature") != legacy)
    return refuse("it was written for graph '" + c.get("graph") + "' with signature " + c.get("graph_signature") +
                  ", this graph '" + forward_.name() + "' has signature " + graph_signature() + " (a different structure)");
  const std::pair<const char*, std::string> same[] = {
      {"optimizer", autodiff::optimizer_name(config_.spec.optimizer.kind)},
      {"seed", std::to_string(config_.seed)},
      {"batch_size", std::to_string(config_.batch_size)}};
  for (const auto& [key, mine] : same)
    if (c.get(key) != mine)
    {
      std::string advice = std::string("pass --") + key + " " + c.get(key);
      if (std::string(key) == "batch_size") {
        // The checkpoint holds the global batch: --batch times --accumulate times the ranks.
        const int64_t parts = std::max<int64_t>(1, config_.spec.accumulate) * world();
        const long long global = std::atoll(c.get(key).c_str());
        advice = global > 0 && global % parts == 0
                     ? "pass --batch " + std::to_string(global / parts) + ": the global batch " + c.get(key) + " is --batch times --accumulate (" +
                           std::to_string(config_.spec.accumulate) + ") times the number of ranks (" + std::to_string(world()) + ")"
                     : "the global batch " + c.get(key) + " is --batch times --accumulate times the number of ranks, and " +
                           std::to_string(parts) + " does not divide it: resume with other --accumulate or ranks";
      }
      return refuse(std::string(key) + " is " + c.get(key) + " in the checkpoint and " + mine +
                    " in this run (resuming bit for bit needs the same; " + advice + ")");
    }
  for (const autodiff::StateSlot& s : state_) {
    const Tensor* t = c.find(s.name);
    if (!t) return refuse("it has no tensor '" + s.name + "'");
    if (t->dtype() != s.initial.dtype() || t->shape() != s.initial.shape())
      return refuse("'" + s.name + "' is " + std::string(dtype_name(t->dtype())) + shape_to_string(t->shape()) + " there and " +
                    std::string(dtype_name(s.initial.dtype())) + shape_to_string(s.initial.shape()) + " in the graph");
  }
  for (const auto& entry : c.tensors) {
    const std::string& name = entry.first;  // not a structured binding: C++17 lambdas cannot capture one
    if (std::none_of(state_.begin(), state_.end(), [&](const autodiff::StateSlot& s) { return s.name == name; }))
      return refuse("it has a tensor '" + name + "' that this run does not train");
  }
  // The position: non-negative integers (a step of 1e23 once stopped the run at once, exit 0); fit()
  // checks that they agree with each other and the batches per epoch.
  int64_t position[3] = {0, 0, 0};
  const char* keys[3] = {"global_step", "epoch", "batch_in_epoch"};
  for (int i = 0; i < 3; ++i) {
    const std::string text = c.get(keys[i]);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || v < 0 || v > (int64_t{1} << 48))
      return refuse(std::string(keys[i]) + " is '" + text + "', not a step count");
    position[i] = v;
  }
  for (autodiff::StateSlot& s : state_) s.initial = c.find(s.name)->clone();
  global_step_ = position[0];
  epoch_ = position[1];
  batch_in_epoch_ = position[2];
  return Status::ok();
}

Expected<int64_t> Trainer::slice_rows(data::Batch& batch, int64_t part, int64_t parts, const char* what) {
  int64_t first = 0;
  for (auto& [name, t] : batch) {
    if (t.rank() == 0) continue;
    const int64_t rows = t.dim(0), lo = part * rows / parts, hi = (part + 1) * rows / parts;
    if (hi <= lo)
      return make_error("a batch of " + std::to_string(rows) + " examples cannot be split into " + std::to_string(parts) + " " +
                        what + " (each needs at least one example: use a larger batch size)");
    Shape shape = t.shape();
    shape[0] = hi - lo;
    const int64_t row = rows ? t.numel() / rows : 0;
    t = t.contiguous().view(shape, contiguous_strides(shape), lo * row);
    first = lo;
  }
  return first;
}

Status Trainer::run_step(const data::Batch& batch, int64_t first_row, runtime::Feeds& feeds, double& loss, int64_t& hits,
                         int64_t& examples, std::vector<Tensor>& new_state) {
  const bool classify = config_.spec.loss == autodiff::LossKind::kSoftmaxCrossEntropy;
  const size_t n_forward = forward_.outputs().size();
  size_t scores = 0;  // the forward output the loss is computed from
  if (!config_.spec.output.empty())
    for (size_t i = 0; i < n_forward; ++i)
      if (forward_.value(forward_.outputs()[i]).name == config_.spec.output) scores = i;
  const int64_t parts = config_.spec.accumulate;
  float loss_sum = 0;  // f32 like the ranks' sum: K micro-batches report what K ranks do
  hits = examples = 0;
  for (const auto& [name, zero] : sessions_->zero_sums) feeds[name] = zero;
  std::map<std::string, Tensor> stat_feeds;  // running statistics after the earlier micro-batches
  for (int64_t part = 0; part < parts; ++part) {
    data::Batch micro = batch;
    int64_t lo = 0;
    if (parts > 1) {
      TRY(lo, slice_rows(micro, part, parts, "micro-batches"));
    }
    add_batch(micro, config_.spec.loss != autodiff::LossKind::kGraphOutput, feeds);
    feeds["rng_rows"] = Tensor::from_vector<int64_t>({2}, {first_row + lo, batch_rows(micro)});
    const bool last = part + 1 == parts;
    // The state as the earlier micro-batches left it (their running statistics moved).
    for (const autodiff::StateSlot& s : state_) {
      auto it = stat_feeds.find(s.name);
      feeds[s.name] = it != stat_feeds.end() ? it->second : s.initial;
    }
    // The accumulating step reads no optimizer buffers (state that is not a forward param),
    // learning rate or step number.
    runtime::Feeds own;
    if (!last) {
      own = feeds;
      own.erase("lr");
      own.erase("step");
      for (const autodiff::StateSlot& s : state_)
        if (!forward_.find_value(s.name)) own.erase(s.name);
    }
    TRY(std::vector<Tensor> outs, last ? sessions_->step->run(feeds) : sessions_->accumulate->run(own));
    const Tensor& labels = micro["labels"];
    examples += labels.shape().empty() ? 1 : labels.shape()[0];
    if (classify) hits += count_correct(outs[1 + scores], labels);
    if (parts == 1) loss = outs[0].get(0);
    else loss_sum += static_cast<float>(outs[0].get(0));
    if (last) {
      new_state.assign(std::make_move_iterator(outs.begin() + static_cast<std::ptrdiff_t>(1 + n_forward)),
                       std::make_move_iterator(outs.end()));
      break;
    }
    // Outputs of the accumulating step: loss, forward outputs, running statistics (the last
    // state slots: the next micro-batch reads them), then the gradient sums in zero_sums' order.
    const size_t sums = sessions_->zero_sums.size(), stats = outs.size() - 1 - n_forward - sums;
    for (size_t i = 0; i < stats; ++i) stat_feeds[state_[state_.size() - stats + i].name] = std::move(outs[1 + n_forward + i]);
    for (size_t i = 0; i < sums; ++i) feeds[sessions_->zero_sums[i].first] = std::move(outs[1 + n_forward + stats + i]);
  }
  if (parts > 1) loss = loss_sum / static_cast<float>(parts);
  return Status::ok();
}

int64_t unsplittable_tail(int64_t examples, int64_t batch, int64_t parts) {
  const int64_t tail = batch > 0 ? examples % batch : 0;
  return tail > 0 && tail < parts ? tail : 0;
}

Status Trainer::check_checkpoint_dir() const {
  if (config_.checkpoint_dir.empty() || (config_.comm && config_.comm->rank() != 0)) return Status::ok();
  return require_writable_dir(config_.checkpoint_dir, true);
}

Status Trainer::save_checkpoint(const std::string& name, TrainResult& result, const TrainCallbacks& cb) {
  if (config_.checkpoint_dir.empty()) return Status::ok();
  if (config_.comm && config_.comm->rank() != 0) return Status::ok();  // rank 0 writes for all
  const std::string path = config_.checkpoint_dir + "/" + name;
  RETURN_IF_ERROR(write_checkpoint(path, make_checkpoint()));
  result.last_checkpoint = path;
  if (cb.on_checkpoint) cb.on_checkpoint(path);
  return Status::ok();
}

void Trainer::add_batch(const data::Batch& batch, bool with_labels, runtime::Feeds& feeds) const {
  // A batch field feeds the graph input of its name; "x" feeds a graph's only data input whatever
  // its name; "labels" feeds the loss.
  for (const auto& [name, t] : batch) {
    if (name == "labels" && with_labels) {
      feeds[name] = t;
      continue;
    }
    if (forward_.inputs().size() == 1 && name == "x") feeds[forward_.value(forward_.inputs()[0]).name] = t;
    else if (auto v = forward_.find_value(name); v && forward_.value(*v).kind == ir::ValueKind::kInput) feeds[name] = t;
  }
}

Error Trainer::diagnose_non_finite(const runtime::Feeds& feeds, int64_t step, double loss) {
  std::string head = "step " + std::to_string(step) + ": the loss is " + std::to_string(loss);
  for (const autodiff::StateSlot& slot : state_)  // the state first: a weight an earlier update broke
    if (auto it = feeds.find(slot.name); it != feeds.end() && !all_finite(it->second))
      return make_error(head + "; the " + (slot.is_weight ? "weight '" : "training state '") + slot.name +
                        "' already holds a non-finite value (an earlier update made it so: --check-numerics "
                        "stops at that update and names the node)");
  for (const auto& [name, t] : feeds)
    if (!all_finite(t)) return make_error(head + "; the input '" + name + "' already holds a non-finite value");
  // Re-run the forward graph on the reference kernels keeping every value, and name the first
  // node whose output is not finite.
  ir::Graph g = autodiff::evaluation_graph(forward_, config_.spec);
  if (ops::infer_types(g, registry_).is_ok())
    if (std::optional<Error> e = first_non_finite_node(g, registry_, feeds, head, "lower the learning rate, or check the data and the initial weights"))
      return *e;
  return make_error(head + "; every forward value is finite, so the loss itself overflowed (labels out of range?)");
}

Error Trainer::diagnose_non_finite_state(const runtime::Feeds& feeds, int64_t step, const std::string& slot) {
  const std::string head = "step " + std::to_string(step) + ": the loss is finite but the update made '" + slot +
                           "' non-finite (--check-numerics)";
  // The step again on the reference kernels keeping every value: the first node whose output is
  // not finite, in execution order (forward, then the gradients, then the updates).
  if (auto built = autodiff::build_training_step(forward_, config_.spec, registry_))
    if (std::optional<Error> e = first_non_finite_node(*built, registry_, feeds, head,
                                                       "lower the learning rate, clip the gradients, or check the data and the initial weights"))
      return *e;
  return make_error(head + "; running the step on the reference kernels kept every value finite");
}

Expected<std::pair<double, double>> Trainer::evaluate(data::DataLoader& test) {
  RETURN_IF_ERROR(init_status_);
  RETURN_IF_ERROR(test.start_epoch(0));
  runtime::Feeds feeds;
  for (const autodiff::StateSlot& s : state_)
    if (forward_.find_value(s.name)) feeds[s.name] = s.initial;  // weights and statistics, not buffers
  double loss_sum = 0;
  int64_t hits = 0, count = 0;
  data::Batch batch;
  while (true) {
    TRY(bool more, test.next(batch));
    if (!more) break;
    add_batch(batch, false, feeds);
    TRY(std::vector<Tensor> outs, sessions_->eval->run(feeds));
    auto lab = batch.find("labels");
    if (lab == batch.end() || outs.empty()) continue;
    if (config_.spec.loss == autodiff::LossKind::kSoftmaxCrossEntropy && outs[0].shape().size() == 2) {
      TRY(double batch_loss, cross_entropy_sum(outs[0], lab->second, count));
      hits += count_correct(outs[0], lab->second);
      loss_sum += batch_loss;
    }
    count += lab->second.shape().empty() ? 1 : lab->second.shape()[0];
  }
  evaluated_ += count;
  if (world() > 1 && test.options().shards == world()) {
    // Each rank evaluated its rows of every test batch: every rank adds the ranks' sums in rank
    // order (exact doubles, the same result everywhere).
    double mine[3] = {loss_sum, static_cast<double>(hits), static_cast<double>(count)}, all[3] = {0, 0, 0};
    for (int r = 0; r < world(); ++r) {
      double part[3] = {mine[0], mine[1], mine[2]};
      RETURN_IF_ERROR(config_.comm->broadcast(part, sizeof part, r));
      for (int i = 0; i < 3; ++i) all[i] += part[i];
    }
    loss_sum = all[0];
    hits = static_cast<int64_t>(all[1]);
    count = static_cast<int64_t>(all[2]);
  }
  if (count == 0) return make_error("the test split is empty");
  return std::make_pair(loss_sum / static_cast<double>(count), static_cast<double>(hits) / static_cast<double>(count));
}

Expected<TrainResult> Trainer::fit(data::DataLoader& train, data::DataLoader* test, const TrainCallbacks& cb) {
  RETURN_IF_ERROR(init_status_);
  const int64_t batches = train.batches_per_epoch();
  if (batches <= 0) return make_error("the training split gives no batches (empty, or smaller than one batch with drop_last)");
  // The schedule spans the steps this run will make (a cosine run cut by max_steps ends at its minimum).
  int64_t total_steps = batches * config_.epochs;
  if (config_.max_steps > 0) total_steps = std::min(total_steps, config_.max_steps);
  TRY(Schedule schedule, Schedule::parse(config_.schedule, config_.lr, total_steps));
  RETURN_IF_ERROR(check_checkpoint_dir());
  int64_t position = 0;  // where epoch_ and batch_in_epoch_ say the run is (resume() bounds both by 2^48)
  if (batch_in_epoch_ > batches || __builtin_mul_overflow(epoch_, batches, &position) ||
      __builtin_add_overflow(position, batch_in_epoch_, &position) || position != global_step_)
    return make_error("the resumed position (epoch " + std::to_string(epoch_) + ", batch " + std::to_string(batch_in_epoch_) +
                      ", step " + std::to_string(global_step_) + ") does not fit " + std::to_string(batches) +
                      " batches per epoch: the checkpoint comes from another dataset, or was edited");
  const bool classify = config_.spec.loss == autodiff::LossKind::kSoftmaxCrossEntropy;

  TrainResult result;
  stop_agreed_ = false;  // (a stop that ended an earlier fit() does not end this one)
  runtime::Feeds feeds;
  int64_t steps_this_run = 0;
  const int64_t run_start = observe::now_ns();
  for (int64_t epoch = epoch_; epoch < config_.epochs; ++epoch) {
    const int64_t skip = epoch == epoch_ ? std::min(batch_in_epoch_, batches) : 0;
    epoch_ = epoch;
    batch_in_epoch_ = skip;
    RETURN_IF_ERROR(train.start_epoch(epoch, skip));
    EpochInfo info;
    info.epoch = epoch;
    double loss_sum = 0;
    int64_t hits = 0, examples = 0, epoch_batches = 0;
    const int64_t epoch_start = observe::now_ns();
    data::Batch batch;
    while (true) {
      // Over several ranks the stop is agreed in the step's all-reduce (below): every rank stops
      // after the same step, else one would wait for the others in the next collective.
      const bool stop_asked = world() > 1 ? stop_agreed_ : cb.stop && cb.stop->load();
      if (stop_asked || (config_.max_steps > 0 && global_step_ >= config_.max_steps)) {
        result.stopped = true;
        result.interrupted = stop_asked;
        break;
      }
      const int64_t wait_start = observe::now_ns();
      TRY(bool more, train.next(batch));
      info.data_wait_s += static_cast<double>(observe::now_ns() - wait_start) * 1e-9;
      if (!more) break;
      // Where this rank's rows start in the global batch (the loader's shard, or our slice of it).
      int64_t first_row = train.shard_first_row(batch_in_epoch_);
      if (world() > 1 && train.options().shards != world()) {  // else the loader did
        TRY(first_row, slice_rows(batch, config_.comm->rank(), world(), "ranks"));
      }
      const double lr = schedule.at(global_step_);
      feeds["lr"] = Tensor::scalar<float>(static_cast<float>(lr));
      feeds["step"] = Tensor::scalar<float>(static_cast<float>(global_step_ + 1));
      feeds["rng_offset"] = Tensor::scalar<int64_t>(global_step_);
      if (sampled_trace_)
        sampled_trace_->set_on(config_.trace_every <= 0 || global_step_ < config_.trace_warm_steps ||
                               global_step_ % config_.trace_every == 0);
      double loss = 0;
      int64_t h = 0, n = 0;
      std::vector<Tensor> new_state;
      // check_numerics: the state as this step reads it (the step updates it in place).
      runtime::Feeds before;
      if (config_.check_numerics) {
        for (const autodiff::StateSlot& s : state_) before[s.name] = s.initial.clone();
      }
      if (Status st = run_step(batch, first_row, feeds, loss, h, n, new_state); !st.is_ok()) {
        if (config_.comm) config_.comm->quiesce();  // no all-reduce left writing into the step's buffers
        Error e = st.error();
        e.message = "training step " + std::to_string(global_step_ + 1) + " (epoch " + std::to_string(epoch + 1) +
                    ", batch " + std::to_string(batch_in_epoch_ + 1) + "): " + e.message;
        return e;
      }
      if (world() > 1) {  // the global batch's loss and hits, the same on every rank; a stop asked on any
        float v[4] = {static_cast<float>(loss), static_cast<float>(h), static_cast<float>(n),
                      cb.stop && cb.stop->load() ? 1.f : 0.f};
        RETURN_IF_ERROR(config_.comm->allreduce_sum(v, 4));
        loss = v[0] / static_cast<float>(world());
        h = static_cast<int64_t>(v[1]);
        n = static_cast<int64_t>(v[2]);
        stop_agreed_ = v[3] > 0;
      }
      if (!std::isfinite(loss)) return diagnose_non_finite(feeds, global_step_ + 1, loss);
      if (config_.check_numerics)
        for (size_t i = 0; i < state_.size() && i < new_state.size(); ++i)
          if (!all_finite(new_state[i])) {
            runtime::Feeds step_feeds = feeds;
            for (auto& [name, t] : before) step_feeds[name] = t;
            return diagnose_non_finite_state(step_feeds, global_step_ + 1, state_[i].name);
          }
      for (size_t i = 0; i < state_.size(); ++i) state_[i].initial = std::move(new_state[i]);
      ++global_step_;
      ++batch_in_epoch_;
      ++steps_this_run;
      ++epoch_batches;
      hits += h;
      examples += n;
      loss_sum += loss;
      if (config_.metrics) {
        config_.metrics->on_metric("train/loss", global_step_, epoch, loss);
        if (classify) config_.metrics->on_metric("train/accuracy", global_step_, epoch, static_cast<double>(h) / n);
        config_.metrics->on_metric("train/lr", global_step_, epoch, lr);
      }
      if (cb.on_step) {
        StepInfo si;
        si.epoch = epoch;
        si.step = global_step_;
        si.batch = batch_in_epoch_;
        si.batches = batches;
        si.loss = loss;
        si.accuracy = classify ? static_cast<double>(h) / n : 0;
        si.lr = lr;
        const double secs = static_cast<double>(observe::now_ns() - epoch_start) * 1e-9;
        si.images_per_s = secs > 0 ? static_cast<double>(examples) / secs : 0;
        const double per_step = static_cast<double>(observe::now_ns() - run_start) * 1e-9 / static_cast<double>(steps_this_run);
        int64_t left = total_steps - global_step_;
        if (config_.max_steps > 0) left = std::min(left, config_.max_steps - global_step_);
        si.eta_s = per_step * static_cast<double>(std::max<int64_t>(left, 0));
        cb.on_step(si);
      }
      if (config_.checkpoint_every > 0 && global_step_ % config_.checkpoint_every == 0) {
        char name[48];
        std::snprintf(name, sizeof name, "step-%08lld.tsc", static_cast<long long>(global_step_));
        RETURN_IF_ERROR(save_checkpoint(name, result, cb));
      }
    }
    info.seconds = static_cast<double>(observe::now_ns() - epoch_start) * 1e-9;
    info.train_loss = epoch_batches ? loss_sum / static_cast<double>(epoch_batches) : 0;
    info.train_accuracy = examples ? static_cast<double>(hits) / static_cast<double>(examples) : 0;
    info.images_per_s = info.seconds > 0 ? static_cast<double>(examples) / info.seconds : 0;
    if (config_.metrics && info.seconds > 0 && examples > 0) {  // the epoch's pace, and how much of it went to waiting for data
      config_.metrics->on_metric("train/examples_per_s", global_step_, epoch, info.images_per_s);
      config_.metrics->on_metric("train/data_wait", global_step_, epoch, info.data_wait_s / info.seconds);
    }
    if (result.stopped && batch_in_epoch_ < batches) {
      if (epoch_batches) result.epochs.push_back(info);
      break;
    }
    if (test) {
      const int64_t eval_start = observe::now_ns(), evaluated = evaluated_;
      TRY(auto eval, evaluate(*test));
      result.eval_s += static_cast<double>(observe::now_ns() - eval_start) * 1e-9;
      result.eval_examples += evaluated_ - evaluated;
      info.test_loss = eval.first;
      info.test_accuracy = eval.second;
      if (config_.metrics) {
        config_.metrics->on_metric("test/loss", global_step_, epoch, eval.first);
        if (classify) config_.metrics->on_metric("test/accuracy", global_step_, epoch, eval.second);
      }
    }
    result.epochs.push_back(info);
    if (cb.on_epoch) cb.on_epoch(info);
    epoch_ = epoch + 1;
    batch_in_epoch_ = 0;
    char name[48];
    std::snprintf(name, sizeof name, "epoch-%04lld.tsc", static_cast<long long>(epoch + 1));
    RETURN_IF_ERROR(save_checkpoint(name, result, cb));
    if (result.stopped) break;
  }
  result.steps = global_step_;
  for (const EpochInfo& e : result.epochs) result.data_wait_s += e.data_wait_s;
  for (const autodiff::StateSlot& st : state_) result.state_bytes += st.initial.nbytes();
  if (stages::Program* p = sessions_->step->last_program()) result.arena_bytes = p->plan().peak_bytes();
  if (sessions_->accumulate)  // two programs, each with its arena
    if (stages::Program* p = sessions_->accumulate->last_program()) result.arena_bytes += p->plan().peak_bytes();
  if (!result.epochs.empty()) {
    result.train_loss = result.epochs.back().train_loss;
    result.test_accuracy = result.epochs.back().test_accuracy;
    double secs = 0, imgs = 0;
    for (const EpochInfo& e : result.epochs) secs += e.seconds, imgs += e.images_per_s * e.seconds;
    result.images_per_s = secs > 0 ? imgs / secs : 0;
  }
  if (result.stopped) RETURN_IF_ERROR(save_checkpoint("last.tsc", result, cb));
  return result;
}

}  // namespace tessera::train
