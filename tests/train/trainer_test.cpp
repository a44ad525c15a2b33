// The training loop end to end on a small classifier over synthetic, linearly separable data:
// learning, determinism, bit-for-bit resume, checkpoint faults (corruption, full disk, another
// graph), a loss that becomes NaN, and schedules.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <atomic>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "engine/autodiff/training_step.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/train/checkpoint.h"
#include "engine/train/schedule.h"
#include "engine/train/trainer.h"

namespace tessera::train {
namespace {

const ops::OpRegistry& reg() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

Tensor randn(Shape s, uint64_t seed, double scale) {
  Tensor t(DType::kF32, std::move(s));
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(d(g));
  return t;
}

// x [N, 8] -> Gemm(16) -> Relu (-> Dropout) -> Gemm(3): logits [N, 3].
ir::Graph mlp(int hidden = 16, bool dropout = false) {
  ir::Graph g("tiny_mlp");
  ir::ValueId x = g.add_input("x", ir::TensorType(DType::kF32, {ir::Dim::named("N"), ir::Dim::known(8)}));
  ir::ValueId w1 = g.add_param("fc1.w", randn({8, hidden}, 1, 0.4));
  ir::ValueId b1 = g.add_param("fc1.b", Tensor(DType::kF32, {hidden}));
  ir::ValueId w2 = g.add_param("fc2.w", randn({hidden, 3}, 2, 0.4));
  ir::ValueId b2 = g.add_param("fc2.b", Tensor(DType::kF32, {3}));
  ir::ValueId h = g.node(g.add_node("Gemm", {x, w1, b1}, 1, "fc1")).outputs[0];
  ir::ValueId r = g.node(g.add_node("Relu", {h}, 1, "relu")).outputs[0];
  if (dropout) {
    const ir::ValueId ratio = g.add_param("drop.ratio", Tensor::scalar<float>(0.3f));  // as tf2onnx stores it
    const ir::NodeId d = g.add_node("Dropout", {r, ratio}, 1, "drop");
    g.node(d).attrs.insert_or_assign("seed", ir::Attribute(int64_t{3}));
    r = g.node(d).outputs[0];
  }
  ir::ValueId y = g.node(g.add_node("Gemm", {r, w2, b2}, 1, "fc2")).outputs[0];
  g.set_value_name(y, "logits");
  g.set_outputs({y});
  return g;
}

// 3 classes: the label is the argmax of three fixed projections of x.
std::pair<Tensor, Tensor> separable(int64_t n, uint64_t seed) {
  Tensor x = randn({n, 8}, seed, 1.0);
  Tensor labels(DType::kI64, {n});
  Tensor proj = randn({8, 3}, 99, 1.0);
  for (int64_t i = 0; i < n; ++i) {
    int best = 0;
    double bv = -1e30;
    for (int c = 0; c < 3; ++c) {
      double v = 0;
      for (int k = 0; k < 8; ++k) v += x.data<float>()[i * 8 + k] * proj.data<float>()[k * 3 + c];
      if (v > bv) bv = v, best = c;
    }
    labels.data<int64_t>()[i] = best;
  }
  return {x, labels};
}

std::shared_ptr<const data::Source> dataset(int64_t n, uint64_t seed) {
  auto [x, labels] = separable(n, seed);
  auto src = data::TensorSource::create({{"x", x}, {"labels", labels}}, "synthetic");
  EXPECT_TRUE(src.has_value());
  return *src;
}

data::LoaderOptions loader_options(uint64_t seed) {
  data::LoaderOptions o;
  o.batch_size = 32;
  o.shuffle = true;
  o.seed = seed;
  o.workers = 1;
  return o;
}

TrainConfig config(int64_t epochs) {
  TrainConfig c;
  c.epochs = epochs;
  c.lr = 0.05;
  c.spec.optimizer.momentum = 0.9;
  c.seed = 7;
  c.batch_size = 32;
  c.threads = 2;
  return c;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/tessera-train-XXXXXX";
  return mkdtemp(tmpl);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(Trainer, LearnsASeparableProblem) {
  auto train_src = dataset(1024, 5);
  auto test_src = dataset(512, 6);
  data::DataLoader train(train_src, {}, loader_options(7));
  data::LoaderOptions to = loader_options(7);
  to.shuffle = false;
  data::DataLoader test(test_src, {}, to);
  Trainer t(mlp(), reg(), config(4));
  int steps_seen = 0;
  TrainCallbacks cb;
  cb.on_step = [&](const StepInfo& s) {
    ++steps_seen;
    EXPECT_EQ(s.batches, 32);
    EXPECT_TRUE(std::isfinite(s.loss));
  };
  auto r = t.fit(train, &test, cb);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(steps_seen, 128);
  EXPECT_EQ(r->steps, 128);
  ASSERT_EQ(r->epochs.size(), 4u);
  EXPECT_LT(r->epochs.back().train_loss, 0.5 * r->epochs.front().train_loss);
  EXPECT_GT(r->test_accuracy, 0.9);  // chance is 1/3
  // The trained graph carries the new weights.
  ir::Graph trained = t.trained_graph();
  const Tensor* w = trained.param_data(*trained.find_value("fc1.w"));
  EXPECT_FALSE(same_bytes(*w, randn({8, 16}, 1, 0.4)));
}

// Regression and multi-label targets: labels are f32 [N, 3].
std::shared_ptr<const data::Source> float_targets(int64_t n, bool binary) {
  Tensor x = randn({n, 8}, 11, 1.0), y(DType::kF32, {n, 3}), proj = randn({8, 3}, 12, 0.5);
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) {
      double v = 0;
      for (int k = 0; k < 8; ++k) v += x.data<float>()[i * 8 + k] * proj.data<float>()[k * 3 + c];
      y.data<float>()[i * 3 + c] = binary ? (v > 0 ? 1.f : 0.f) : static_cast<float>(v);
    }
  auto src = data::TensorSource::create({{"x", x}, {"labels", y}}, binary ? "multilabel" : "regression");
  EXPECT_TRUE(src.has_value());
  return *src;
}

TEST(Trainer, EveryLossAndOptimizerLearns) {
  struct Run {
    autodiff::LossKind loss;
    autodiff::OptimizerKind opt;
    double lr;
  };
  for (const Run& r : {Run{autodiff::LossKind::kMeanSquaredError, autodiff::OptimizerKind::kSgd, 0.02},
                       Run{autodiff::LossKind::kBinaryCrossEntropyWithLogits, autodiff::OptimizerKind::kAdam, 0.01},
                       Run{autodiff::LossKind::kSoftmaxCrossEntropy, autodiff::OptimizerKind::kAdamW, 0.01}}) {
    SCOPED_TRACE(std::string(autodiff::loss_name(r.loss)) + " " + autodiff::optimizer_name(r.opt));
    auto src = r.loss == autodiff::LossKind::kSoftmaxCrossEntropy ? dataset(512, 5)
                                                                   : float_targets(512, r.loss != autodiff::LossKind::kMeanSquaredError);
    data::DataLoader loader(src, {}, loader_options(7));
    TrainConfig c = config(5);
    c.lr = r.lr;
    c.spec.loss = r.loss;
    c.spec.optimizer.kind = r.opt;
    c.spec.optimizer.momentum = r.opt == autodiff::OptimizerKind::kSgd ? 0.9 : 0.0;
    c.spec.optimizer.weight_decay = r.opt == autodiff::OptimizerKind::kAdamW ? 0.01 : 0.0;
    Trainer t(mlp(), reg(), c);
    auto res = t.fit(loader, nullptr);
    ASSERT_TRUE(res.has_value()) << res.error().to_string();
    ASSERT_EQ(res->epochs.size(), 5u);
    EXPECT_LT(res->epochs.back().train_loss, 0.6 * res->epochs.front().train_loss)
        << res->epochs.front().train_loss << " -> " << res->epochs.back().train_loss;
  }
}

TEST(Trainer, DeterministicAndResumesBitForBit) {
  auto src = dataset(320, 5);  // 10 batches per epoch
  const std::string dir = temp_dir();
  // Uninterrupted: 2 epochs = 20 steps.
  data::DataLoader a_loader(src, {}, loader_options(7));
  Trainer a(mlp(), reg(), config(2));
  ASSERT_TRUE(a.fit(a_loader, nullptr).has_value());
  // Same again: identical bytes.
  data::DataLoader b_loader(src, {}, loader_options(7));
  TrainConfig bc = config(2);
  bc.checkpoint_dir = dir;
  bc.checkpoint_every = 7;  // mid-epoch: step 7 of epoch 0, and 14 = step 4 of epoch 1
  Trainer b(mlp(), reg(), bc);
  auto rb = b.fit(b_loader, nullptr);
  ASSERT_TRUE(rb.has_value()) << rb.error().to_string();
  for (size_t i = 0; i < a.state().size(); ++i) EXPECT_TRUE(same_bytes(a.state()[i].initial, b.state()[i].initial)) << a.state()[i].name;
  // Resume from step 14 (mid-epoch 1) and from step 7 (mid-epoch 0): the same final bytes.
  for (const char* ckpt : {"step-00000014.tsc", "step-00000007.tsc"}) {
    data::DataLoader c_loader(src, {}, loader_options(7));
    Trainer c(mlp(), reg(), config(2));
    Status st = c.resume(dir + "/" + ckpt);
    ASSERT_TRUE(st.is_ok()) << st.error().to_string();
    auto rc = c.fit(c_loader, nullptr);
    ASSERT_TRUE(rc.has_value()) << rc.error().to_string();
    EXPECT_EQ(rc->steps, 20);
    for (size_t i = 0; i < a.state().size(); ++i)
      EXPECT_TRUE(same_bytes(a.state()[i].initial, c.state()[i].initial)) << ckpt << ": " << a.state()[i].name;
  }
  // A different seed gives different weights.
  data::DataLoader d_loader(src, {}, loader_options(8));
  TrainConfig dc = config(2);
  dc.seed = 8;
  Trainer d(mlp(), reg(), dc);
  ASSERT_TRUE(d.fit(d_loader, nullptr).has_value());
  EXPECT_FALSE(same_bytes(a.state()[0].initial, d.state()[0].initial));
}

// Gradient accumulation: a batch of 64 whose two halves are the same 32 examples, in 2
// micro-batches, is bit for bit a step on those 32 (g + g = 2g and the mean's 1/2 are exact),
// with SGD momentum and with AdamW's weight decay; and the accumulating step really sums: other
// halves give other weights. A batch smaller than its micro-batches is refused.
TEST(Trainer, GradientAccumulationSumsTheMicroBatches) {
  auto [ux, ul] = separable(256, 5);  // 8 batches of 32
  Tensor dx(DType::kF32, {512, 8}), dl(DType::kI64, {512}), ox = randn({512, 8}, 21, 1.0);
  for (int64_t b = 0; b < 8; ++b)
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t r = 0; r < 32; ++r) {
        const int64_t from = b * 32 + r, to = b * 64 + half * 32 + r;
        std::memcpy(dx.data<float>() + to * 8, ux.data<float>() + from * 8, 8 * sizeof(float));
        dl.data<int64_t>()[to] = ul.data<int64_t>()[from];
      }
  auto doubled = data::TensorSource::create({{"x", dx}, {"labels", dl}}, "doubled");
  auto other = data::TensorSource::create({{"x", ox}, {"labels", dl}}, "other halves");
  auto single = data::TensorSource::create({{"x", ux}, {"labels", ul}}, "single");
  ASSERT_TRUE(doubled.has_value() && other.has_value() && single.has_value());
  for (autodiff::OptimizerKind opt : {autodiff::OptimizerKind::kSgd, autodiff::OptimizerKind::kAdamW}) {
    SCOPED_TRACE(autodiff::optimizer_name(opt));
    auto fit = [&](std::shared_ptr<const data::Source> src, int64_t batch, int accumulate, Trainer*& out,
                   std::vector<double>& losses) {
      data::LoaderOptions o = loader_options(7);
      o.shuffle = false;
      o.batch_size = batch;
      data::DataLoader loader(src, {}, o);
      TrainConfig c = config(2);
      c.spec.optimizer.kind = opt;
      c.spec.optimizer.momentum = opt == autodiff::OptimizerKind::kSgd ? 0.9 : 0.0;
      c.spec.optimizer.weight_decay = opt == autodiff::OptimizerKind::kAdamW ? 0.01 : 0.0;
      c.lr = 0.01;
      c.spec.accumulate = accumulate;
      out = new Trainer(mlp(), reg(), c);
      TrainCallbacks cb;
      cb.on_step = [&](const StepInfo& s) { losses.push_back(s.loss); };
      auto r = out->fit(loader, nullptr, cb);
      ASSERT_TRUE(r.has_value()) << r.error().to_string();
      EXPECT_EQ(r->steps, 16);
    };
    Trainer *a = nullptr, *b = nullptr, *c = nullptr;
    std::vector<double> la, lb, lc;
    fit(*single, 32, 1, a, la);
    fit(*doubled, 64, 2, b, lb);
    fit(*other, 64, 2, c, lc);
    std::unique_ptr<Trainer> own_a(a), own_b(b), own_c(c);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(la, lb);
    for (size_t i = 0; i < a->state().size(); ++i)
      EXPECT_TRUE(same_bytes(a->state()[i].initial, b->state()[i].initial)) << a->state()[i].name;
    EXPECT_FALSE(same_bytes(a->state()[0].initial, c->state()[0].initial));
  }
  // 33 examples in batches of 32 with 2 micro-batches: the last batch of 1 cannot be split.
  auto small = dataset(33, 5);
  data::LoaderOptions o = loader_options(7);
  data::DataLoader loader(small, {}, o);
  TrainConfig cfg = config(1);
  cfg.spec.accumulate = 2;
  Trainer t(mlp(), reg(), cfg);
  auto r = t.fit(loader, nullptr);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("cannot be split into 2 micro-batches"), std::string::npos) << r.error().message;
}

// Dropout under accumulation (and so under data parallel, which slices rows the same way):
// micro-batch k draws rows [k n/K, (k+1) n/K) of the whole batch's mask (the step's "rng_rows"),
// so 2 micro-batches of 32 follow one batch of 64 to rounding. Were each micro-batch to draw the
// mask of rows 0-31, the weights would differ by the gradient of other masks (~1e-2 here).
TEST(Trainer, AccumulatedMicroBatchesDrawTheWholeBatchsDropoutMasks) {
  auto src = dataset(256, 5);
  auto fit = [&](int accumulate, double& loss) -> std::unique_ptr<Trainer> {
    data::LoaderOptions o = loader_options(7);
    o.batch_size = 64;
    data::DataLoader loader(src, {}, o);
    TrainConfig c = config(1);
    c.batch_size = 64;
    c.spec.accumulate = accumulate;
    auto t = std::make_unique<Trainer>(mlp(32, true), reg(), c);
    auto r = t->fit(loader, nullptr);
    EXPECT_TRUE(r.has_value()) << r.error().to_string();
    loss = r ? r->train_loss : 0;
    return t;
  };
  double la = 0, lb = 0;
  std::unique_ptr<Trainer> a = fit(1, la), b = fit(2, lb);
  EXPECT_NEAR(la, lb, 1e-5);
  double worst = 0;
  for (size_t i = 0; i < a->state().size(); ++i) {
    const Tensor& wa = a->state()[i].initial;
    const Tensor& wb = b->state()[i].initial;
    for (int64_t j = 0; j < wa.numel(); ++j) worst = std::max(worst, std::fabs(wa.get(j) - wb.get(j)));
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(la, 0);
}

// A float param used only as an op's hyperparameter (ONNX's non-differentiable inputs: Dropout's
// ratio, Clip's bounds) is not a trained weight: Dropout's ratio was trained, went negative at
// step 27 of a Fashion-MNIST run and stopped it. A param also used elsewhere stays trained.
TEST(Trainer, HyperparameterParamsAreNotTrained) {
  ir::Graph g = mlp(16, true);
  const ir::ValueId lo = g.add_param("clip.lo", Tensor::scalar<float>(-2.f));
  const ir::ValueId hi = g.add_param("clip.hi", Tensor::scalar<float>(2.f));
  const ir::ValueId logits = g.outputs()[0];
  const ir::ValueId clipped = g.node(g.add_node("Clip", {logits, lo, hi}, 1, "clip")).outputs[0];
  const ir::ValueId shifted = g.node(g.add_node("Add", {clipped, hi}, 1, "shift")).outputs[0];  // hi is also an operand
  g.set_outputs({shifted});
  Trainer t(g, reg(), config(2));
  std::set<std::string> names;
  for (const autodiff::StateSlot& s : t.state()) names.insert(s.name);
  EXPECT_FALSE(names.count("drop.ratio"));
  EXPECT_FALSE(names.count("clip.lo"));
  EXPECT_TRUE(names.count("clip.hi"));
  EXPECT_TRUE(names.count("fc1.w"));
  data::DataLoader loader(dataset(256, 5), {}, loader_options(7));
  auto r = t.fit(loader, nullptr);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  const ir::Graph trained = t.trained_graph();
  EXPECT_EQ(trained.param_data(*trained.find_value("drop.ratio"))->get(0), 0.3f);
  EXPECT_EQ(trained.param_data(*trained.find_value("clip.lo"))->get(0), -2.f);
}

// A constant Dropout ratio of 0 in training mode (torchvision's Swin-T exports 24) differentiates
// as the identity: no DropoutGrad regenerating an all-true mask; a ratio of 0.3 keeps its one.
TEST(Trainer, DropoutOfRatioZeroHasNoGradientKernel) {
  for (float ratio : {0.f, 0.3f}) {
    ir::Graph g = mlp(16, true);
    g.set_param_data(*g.find_value("drop.ratio"), Tensor::scalar<float>(ratio));
    ASSERT_TRUE(ops::infer_types(g, reg()).is_ok());
    auto step = autodiff::build_training_step(g, autodiff::TrainingSpec{}, reg());
    ASSERT_TRUE(step.has_value()) << step.error().to_string();
    int grads = 0;
    for (ir::NodeId id : step->node_ids()) grads += step->node(id).op == "DropoutGrad";
    EXPECT_EQ(grads, ratio == 0 ? 0 : 1) << ratio;
  }
}

TEST(Trainer, RefusesACheckpointOfAnotherGraphOrRun) {
  const std::string dir = temp_dir();
  Trainer a(mlp(16), reg(), config(1));
  ASSERT_TRUE(write_checkpoint(dir + "/a.tsc", a.make_checkpoint()).is_ok());
  Trainer other(mlp(12), reg(), config(1));
  Status st = other.resume(dir + "/a.tsc");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().to_string().find("different structure"), std::string::npos) << st.error().to_string();
  TrainConfig adam = config(1);
  adam.spec.optimizer.kind = autodiff::OptimizerKind::kAdam;
  Trainer b(mlp(16), reg(), adam);
  st = b.resume(dir + "/a.tsc");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().to_string().find("optimizer is sgd in the checkpoint and adam"), std::string::npos)
      << st.error().to_string();
  // Another batch: the advice is the --batch that gives the checkpoint's global batch.
  TrainConfig accumulating = config(1);
  accumulating.batch_size = 64;
  accumulating.spec.accumulate = 2;
  Trainer c(mlp(16), reg(), accumulating);
  st = c.resume(dir + "/a.tsc");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().to_string().find("batch_size is 32 in the checkpoint and 64 in this run (resuming bit for bit needs the "
                                        "same; pass --batch 16: the global batch 32 is --batch times --accumulate (2)"),
            std::string::npos)
      << st.error().to_string();
}

// A checkpoint's stored position was trusted: a step of 1e23 (clamped to 2^63-1) stopped the run
// at once with success. It must be a count, and agree with the epoch, the batch and the data.
TEST(Trainer, RefusesAPositionThatIsNotACountOrDoesNotFit) {
  const std::string dir = temp_dir();
  Trainer a(mlp(), reg(), config(1));
  Checkpoint good = a.make_checkpoint();
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"global_step", "100000000000000000000000"}, {"global_step", "-3"}, {"epoch", "1e3"}, {"batch_in_epoch", ""}}) {
    Checkpoint c = good;
    c.meta[key] = value;
    ASSERT_TRUE(write_checkpoint(dir + "/bad.tsc", c).is_ok());
    Trainer b(mlp(), reg(), config(1));
    Status st = b.resume(dir + "/bad.tsc");
    ASSERT_FALSE(st.is_ok()) << key << "=" << value;
    EXPECT_NE(st.error().to_string().find("not a step count"), std::string::npos) << st.error().to_string();
  }
  // Counts that do not agree: step 5 at the start of epoch 0 (10 batches per epoch).
  Checkpoint c = good;
  c.meta["global_step"] = "5";
  c.meta["epoch"] = "0";
  c.meta["batch_in_epoch"] = "0";
  ASSERT_TRUE(write_checkpoint(dir + "/odd.tsc", c).is_ok());
  auto src = dataset(320, 5);
  data::DataLoader loader(src, {}, loader_options(7));
  Trainer b(mlp(), reg(), config(1));
  ASSERT_TRUE(b.resume(dir + "/odd.tsc").is_ok());
  auto r = b.fit(loader, nullptr);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().to_string().find("does not fit 10 batches per epoch"), std::string::npos) << r.error().to_string();
}

TEST(Checkpoint, RoundTripsAndCatchesCorruption) {
  const std::string dir = temp_dir(), path = dir + "/c.tsc";
  Checkpoint c;
  c.meta["global_step"] = "12";
  c.tensors.emplace_back("w", randn({3, 4}, 3, 1.0));
  c.tensors.emplace_back("steps", Tensor::from_vector<int64_t>({2}, {5, 6}));
  ASSERT_TRUE(write_checkpoint(path, c).is_ok());
  auto back = read_checkpoint(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->get("global_step"), "12");
  ASSERT_EQ(back->tensors.size(), 2u);
  EXPECT_TRUE(same_bytes(back->tensors[0].second, c.tensors[0].second));
  EXPECT_TRUE(same_bytes(back->tensors[1].second, c.tensors[1].second));

  // Flip one byte of a weight: the checksum names the file.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string bad = bytes;
  bad[bad.size() - 20] ^= 0x40;
  std::ofstream(dir + "/bad.tsc", std::ios::binary) << bad;
  auto r = read_checkpoint(dir + "/bad.tsc");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().to_string().find("checksum mismatch"), std::string::npos) << r.error().to_string();
  EXPECT_NE(r.error().to_string().find("bad.tsc"), std::string::npos);
  // Truncated.
  std::ofstream(dir + "/short.tsc", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  r = read_checkpoint(dir + "/short.tsc");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().to_string().find("truncated"), std::string::npos) << r.error().to_string();
  // Not a checkpoint at all.
  std::ofstream(dir + "/text.tsc") << "hello";
  EXPECT_FALSE(read_checkpoint(dir + "/text.tsc").has_value());
}

// A checkpoint holding one tensor twice is refused: which one is the weight would be a guess.
TEST(Checkpoint, ATensorStoredTwiceIsRefused) {
  const std::string dir = temp_dir(), path = dir + "/twice.tsc";
  Checkpoint c;
  c.tensors.emplace_back("w", randn({3, 4}, 3, 1.0));
  c.tensors.emplace_back("w", randn({3, 4}, 4, 1.0));
  ASSERT_TRUE(write_checkpoint(path, c).is_ok());
  auto back = read_checkpoint(path);
  ASSERT_FALSE(back.has_value());
  EXPECT_NE(back.error().to_string().find("tensor 'w' is stored twice"), std::string::npos) << back.error().to_string();
  EXPECT_NE(back.error().to_string().find("twice.tsc"), std::string::npos) << back.error().to_string();
}

TEST(Checkpoint, FullDiskKeepsThePreviousCheckpoint) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "/dev/full is not available";
  const std::string dir = temp_dir(), path = dir + "/c.tsc";
  Checkpoint c;
  c.tensors.emplace_back("w", randn({64, 64}, 3, 1.0));
  ASSERT_TRUE(write_checkpoint(path, c).is_ok());
  // The temporary file is a link to /dev/full: every write fails with ENOSPC, as on a full disk.
  ASSERT_EQ(symlink("/dev/full", (path + ".tmp").c_str()), 0);
  Checkpoint c2;
  c2.tensors.emplace_back("w", randn({64, 64}, 4, 1.0));
  Status st = write_checkpoint(path, c2);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().to_string().find("No space left"), std::string::npos) << st.error().to_string();
  EXPECT_NE(st.error().to_string().find("previous checkpoint"), std::string::npos);
  auto back = read_checkpoint(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_TRUE(same_bytes(back->tensors[0].second, c.tensors[0].second));
  struct stat sb;
  EXPECT_NE(lstat((path + ".tmp").c_str(), &sb), 0) << "the temporary file is removed";
}

TEST(Trainer, NaNLossNamesTheStepAndTheFirstNode) {
  auto src = dataset(256, 5);
  data::DataLoader loader(src, {}, loader_options(7));
  TrainConfig c = config(1);
  c.lr = 1e30;  // the first update overflows the weights; the second forward is not finite
  Trainer t(mlp(), reg(), c);
  auto r = t.fit(loader, nullptr);
  ASSERT_FALSE(r.has_value());
  const std::string msg = r.error().to_string();
  EXPECT_NE(msg.find("step 2: the loss is"), std::string::npos) << msg;
  // fc1's output is huge but finite in f32; fc2 multiplies two huge values and overflows.
  EXPECT_NE(msg.find("output of Gemm 'fc2'"), std::string::npos) << msg;
}

// The step writes the new weights and momentum over the old ones (donated inputs): the state's
// buffers stay the same allocations from step to step, the caller's graph keeps its weights, and
// a step whose loss is not finite leaves the weights as they were (the update is skipped).
TEST(Trainer, UpdatesTheStateInPlace) {
  auto src = dataset(256, 5);
  data::DataLoader loader(src, {}, loader_options(7));
  const ir::Graph forward = mlp();
  const Tensor before = forward.param_data(*forward.find_value("fc1.w"))->clone();
  TrainConfig c = config(1);
  c.spec.optimizer.momentum = 0.9;
  Trainer t(forward, reg(), c);
  std::vector<const void*> storage;
  TrainCallbacks cb;
  cb.on_step = [&](const StepInfo&) {
    std::vector<const void*> now;
    for (const autodiff::StateSlot& s : t.state()) now.push_back(s.initial.storage_id());
    if (storage.empty()) storage = now;
    EXPECT_EQ(now, storage) << "a state buffer was reallocated";
  };
  auto r = t.fit(loader, nullptr, cb);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(storage.size(), 8u);  // 4 weights, 4 momentum buffers
  EXPECT_TRUE(same_bytes(*forward.param_data(*forward.find_value("fc1.w")), before)) << "the caller's graph was written";
  EXPECT_FALSE(same_bytes(t.state()[0].initial, before));

  // A diverging step: its update is skipped, so the weights after the failure are the previous step's.
  data::DataLoader loader2(src, {}, loader_options(7));
  TrainConfig d = config(1);
  d.lr = 1e30;
  Trainer diverging(forward, reg(), d);
  std::vector<Tensor> last;
  TrainCallbacks cb2;
  cb2.on_step = [&](const StepInfo&) {
    last.clear();
    for (const autodiff::StateSlot& s : diverging.state()) last.push_back(s.initial.clone());
  };
  ASSERT_FALSE(diverging.fit(loader2, nullptr, cb2).has_value());
  ASSERT_EQ(last.size(), diverging.state().size());
  for (size_t i = 0; i < last.size(); ++i) EXPECT_TRUE(same_bytes(diverging.state()[i].initial, last[i])) << diverging.state()[i].name;
}

// After the first step (compilation, the arena, the kernels' primitives) a training step copies
// no activation, gradient or weight: they live in the arena and the state is updated in place. What
// a step still allocates is tensor storage of a few bytes: the learning rate and step scalars fed
// to it, the loss and scores it returns, the loader's batch (1.7 KB a step here, measured). With a
// hidden layer of 1,024 any copy of a weight (8 KB) or an activation (128 KB) would show.
TEST(Trainer, StepsAfterTheFirstCopyNothing) {
  auto src = dataset(2048, 5);
  data::DataLoader loader(src, {}, loader_options(7));
  TrainConfig c = config(1);
  c.spec.optimizer.momentum = 0.9;
  Trainer t(mlp(1024), reg(), c);
  std::vector<TensorAllocations> at;
  TrainCallbacks cb;
  cb.on_step = [&](const StepInfo&) { at.push_back(tensor_allocations()); };
  auto r = t.fit(loader, nullptr, cb);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_GE(at.size(), 10u);
  const auto steps = static_cast<int64_t>(at.size() - 3);
  const int64_t per_step = (at.back().count - at[2].count) / steps;
  const int64_t bytes_per_step = (at.back().bytes - at[2].bytes) / steps;
  EXPECT_LE(bytes_per_step, 4096) << per_step << " tensors a step";
  EXPECT_LE(per_step, 12) << bytes_per_step << " bytes a step";
}

// The metrics a run records: per step loss, accuracy and lr; per epoch the pace and the share of
// it spent waiting for batches (a fraction in [0, 1]).
TEST(Trainer, RecordsStepAndEpochMetrics) {
  struct Capture : observe::MetricsSink {
    std::map<std::string, std::vector<double>> values;
    void on_metric(const std::string& name, int64_t, int64_t, double value) override { values[name].push_back(value); }
  } capture;
  auto src = dataset(256, 5);
  data::DataLoader loader(src, {}, loader_options(7));
  TrainConfig c = config(2);
  c.metrics = &capture;
  Trainer t(mlp(), reg(), c);
  auto r = t.fit(loader, nullptr);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(capture.values["train/loss"].size(), static_cast<size_t>(r->steps));
  ASSERT_EQ(capture.values["train/data_wait"].size(), 2u);
  ASSERT_EQ(capture.values["train/examples_per_s"].size(), 2u);
  for (double w : capture.values["train/data_wait"]) EXPECT_TRUE(w >= 0 && w <= 1) << w;
  for (double v : capture.values["train/examples_per_s"]) EXPECT_GT(v, 0);
}

TEST(Trainer, GraphWithoutALossIsRefused) {
  auto src = dataset(64, 5);
  data::DataLoader loader(src, {}, loader_options(7));
  TrainConfig c = config(1);
  c.spec.loss = autodiff::LossKind::kGraphOutput;  // logits [N, 3] are not a loss
  Trainer t(mlp(), reg(), c);
  auto r = t.fit(loader, nullptr);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().to_string().find("must hold one value"), std::string::npos) << r.error().to_string();
}

// on_span comes from the executor's worker threads (sinks.h): the counts are atomic (plain ints lost
// an increment now and then when two kernels ended at once: a flaky count).
struct CountKernels : observe::TraceSink {
  std::atomic<int64_t> kernels{0}, stages{0};
  void on_span(const observe::Span& s) override {
    kernels += s.kind == observe::Span::Kind::kKernel;
    stages += s.kind == observe::Span::Kind::kStage;
  }
};

TEST(Trainer, TracesSampledSteps) {
  auto src = dataset(320, 5);  // 10 steps
  CountKernels all, sampled;
  for (CountKernels* sink : {&all, &sampled}) {
    data::DataLoader loader(src, {}, loader_options(7));
    TrainConfig c = config(1);
    c.trace = sink;
    c.trace_warm_steps = 2;
    c.trace_every = sink == &all ? 0 : 5;  // steps 0, 1 (warm-up) and 5
    Trainer t(mlp(), reg(), c);
    ASSERT_TRUE(t.fit(loader, nullptr).has_value());
  }
  ASSERT_GT(all.kernels.load(), 0);
  EXPECT_EQ(all.kernels.load() % 10, 0);
  EXPECT_EQ(sampled.kernels.load(), all.kernels.load() / 10 * 3);
  EXPECT_GT(sampled.stages.load(), 0);  // compilation is always traced
}

TEST(Schedule, MatchesTorchFormulas) {
  Schedule s = Schedule::step(0.1, 10, 0.5);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 0.1);
  EXPECT_DOUBLE_EQ(s.at(10), 0.05);
  EXPECT_DOUBLE_EQ(s.at(25), 0.025);
  Schedule c = Schedule::cosine(0.1, 100);
  EXPECT_DOUBLE_EQ(c.at(0), 0.1);
  EXPECT_NEAR(c.at(50), 0.05, 1e-12);
  EXPECT_NEAR(c.at(100), 0.0, 1e-12);
  Schedule w = Schedule::constant(0.2).with_warmup(4);
  EXPECT_DOUBLE_EQ(w.at(0), 0.05);
  EXPECT_DOUBLE_EQ(w.at(3), 0.2);
  EXPECT_DOUBLE_EQ(w.at(4), 0.2);
  auto p = Schedule::parse("step:10:0.5,warmup:2", 0.1, 100);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->at(0), 0.05);
  EXPECT_DOUBLE_EQ(p->at(12), 0.05);
  auto bad = Schedule::parse("step:ten:0.5", 0.1, 100);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("step size 'ten'"), std::string::npos);
  EXPECT_FALSE(Schedule::parse("linear", 0.1, 100).has_value());
}

}  // namespace
}  // namespace tessera::train
