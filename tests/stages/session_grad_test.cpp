// The backward ops of autodiff through the six stages: a Conv-Relu-MaxPool loss differentiated with
// add_gradients, compiled by Session, picks the oneDNN backward kernels (ConvGradInput,
// ConvGradWeight, MaxPoolGrad) and matches the reference executor.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/autodiff/autodiff.h"
#include "engine/dist/communicator.h"
#include "engine/ops/infer.h"
#include "engine/stages/session.h"

namespace tessera::stages {
namespace {

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

TEST(SessionGrad, ConvPoolBackwardUsesFastKernels) {
  const ops::OpRegistry reg = ops::make_default_registry();
  ir::Graph g("train");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {4, 3, 12, 12}));
  const ir::ValueId w = g.add_input("w", ir::TensorType::of(DType::kF32, {8, 3, 5, 5}));
  using Ints = std::vector<int64_t>;
  const ir::ValueId y = g.node(g.add_node("Conv", {x, w}, 1, "conv", {{"pads", Ints{1, 1, 1, 1}}})).outputs[0];
  const ir::ValueId r = g.node(g.add_node("Relu", {y}, 1, "relu")).outputs[0];
  const ir::ValueId p =
      g.node(g.add_node("MaxPool", {r}, 1, "pool", {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})).outputs[0];
  const ir::ValueId sq = g.node(g.add_node("Mul", {p, p}, 1, "sq")).outputs[0];
  const ir::ValueId loss = g.node(g.add_node("ReduceSum", {sq}, 1, "loss", {{"keepdims", int64_t{0}}})).outputs[0];
  ASSERT_TRUE(ops::infer_types(g, reg).is_ok());
  auto grads = autodiff::add_gradients(g, reg, {loss}, {}, {x, w});
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  g.set_outputs({loss, (*grads)[0], (*grads)[1]});
  ASSERT_TRUE(ops::infer_types(g, reg).is_ok());

  const runtime::Feeds feeds{{"x", random_tensor({4, 3, 12, 12}, 1)}, {"w", random_tensor({8, 3, 5, 5}, 2)}};
  auto want = runtime::run_reference(g, reg, feeds);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  SessionOptions o;
  o.threads = 2;
  Session s(g, reg, o);
  auto prog = s.compile({{"x", {4, 3, 12, 12}}, {"w", {8, 3, 5, 5}}});
  ASSERT_TRUE(prog.has_value()) << prog.error().to_string();
  std::map<std::string, std::string> impl;  // op -> kernel
  for (const Step& step : (*prog)->plan().steps) impl[(*prog)->plan().graph.node(step.node).op] = step.impl;
  EXPECT_EQ(impl["ConvGradInput"], "onednn:conv_grad_input");
  EXPECT_EQ(impl["ConvGradWeight"], "onednn:conv_grad_weight");
  EXPECT_EQ(impl["MaxPoolGrad"], "cpu.vec:maxpool_grad");  // plain 2-D windows without pads
  auto got = s.run(feeds);
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    ASSERT_EQ((*got)[k].shape(), (*want)[k].shape());
    double scale = 0;
    for (int64_t i = 0; i < (*want)[k].numel(); ++i) scale = std::max(scale, std::fabs((*want)[k].get(i)));
    for (int64_t i = 0; i < (*want)[k].numel(); ++i)
      ASSERT_NEAR((*got)[k].get(i), (*want)[k].get(i), 1e-4 * scale) << "element " << i;
  }
}

// Donated inputs (SessionOptions::donate_inputs): the optimizer update writes the new weight over
// the fed one, after every other reader of the old weight; an update ordered before another reader
// keeps a buffer of its own.
TEST(SessionGrad, UpdatesWriteOverDonatedInputsAfterTheirReaders) {
  const ops::OpRegistry reg = ops::make_default_registry();
  for (bool update_first : {false, true}) {
    for (int workers : {1, 2}) {
      SCOPED_TRACE(std::string(update_first ? "update first" : "reader first") + ", workers " + std::to_string(workers));
      ir::Graph g("step");
      const ir::TensorType t = ir::TensorType::of(DType::kF32, {64, 700});
      const ir::ValueId w = g.add_input("w", t), grad = g.add_input("g", t), buf = g.add_input("buf", t);
      const ir::ValueId lr = g.add_input("lr", ir::TensorType::of(DType::kF32, {}));
      auto update = [&] { return g.add_node("SGDUpdate", {w, grad, lr, buf}, 2, "update", {{"momentum", 0.9}}); };
      auto reader = [&] { return g.add_node("Mul", {w, w}, 1, "square"); };
      ir::NodeId u, r;
      if (update_first) u = update(), r = reader();
      else r = reader(), u = update();
      g.set_outputs({g.node(r).outputs[0], g.node(u).outputs[0], g.node(u).outputs[1]});
      ASSERT_TRUE(ops::infer_types(g, reg).is_ok());
      const Tensor w0 = random_tensor({64, 700}, 3), g0 = random_tensor({64, 700}, 4), b0 = random_tensor({64, 700}, 5);
      const runtime::Feeds ref_feeds{{"w", w0}, {"g", g0}, {"buf", b0}, {"lr", Tensor::scalar<float>(0.1f)}};
      auto want = runtime::run_reference(g, reg, ref_feeds);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();

      SessionOptions o;
      o.threads = 2;
      o.inter_op_threads = workers;
      o.donate_inputs = true;
      Session s(g, reg, o);
      Tensor w1 = w0.clone(), b1 = b0.clone();
      auto got = s.run({{"w", w1}, {"g", g0}, {"buf", b1}, {"lr", Tensor::scalar<float>(0.1f)}});
      ASSERT_TRUE(got.has_value()) << got.error().to_string();
      auto prog = s.compile({{"w", {64, 700}}, {"g", {64, 700}}, {"buf", {64, 700}}, {"lr", {}}});
      ASSERT_TRUE(prog.has_value());
      // The momentum buffer has no other reader: always in place. The weight only when the
      // square is computed first.
      EXPECT_EQ((*prog)->plan().donations.size(), update_first ? 1u : 2u);
      EXPECT_EQ((*got)[2].storage_id(), b1.storage_id());
      EXPECT_EQ((*got)[1].storage_id() == w1.storage_id(), !update_first);
      for (size_t k = 0; k < 3; ++k)  // the fast update may contract to fused multiply-adds
        for (int64_t i = 0; i < (*want)[k].numel(); ++i)
          ASSERT_NEAR((*got)[k].get(i), (*want)[k].get(i), 1e-5 * (1 + std::fabs((*want)[k].get(i)))) << "output " << k << " element " << i;
    }
  }
}

// A second rank that computed the same gradients: the sum over the two ranks is twice the data.
class TwinRanks final : public dist::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "twin"; }
  Status allreduce_sum(float* data, int64_t count) override {
    for (int64_t i = 0; i < count; ++i) data[i] *= 2.f;
    return Status::ok();
  }
  Status broadcast(void*, int64_t, int) override { return Status::ok(); }
  Status barrier() override { return Status::ok(); }
  double comm_seconds() const override { return 0; }
};

// Gradient buckets as views (compile stage, PyTorch DDP's gradient_as_bucket_view): the gradients
// of a bucket are placed one after another in one buffer, each at the next 64-byte boundary, the
// collectives sum them there and the sums stay there for the updates. A gradient something else
// reads (here a graph output) keeps its own buffer and its bucket is packed. Two ranks with the same
// gradients: the sums are twice the gradients and the updates take half (grad_scale 1/2), so the
// weights equal those of the step without data parallelism bit for bit, weight decay included.
TEST(SessionGrad, GradientBucketsAreViewsIntoOneBuffer) {
  const ops::OpRegistry reg = ops::make_default_registry();
  const std::vector<int64_t> sizes = {7, 300, 16, 1000, 33};  // floats; most are not whole 64-byte lines
  for (bool overlap : {true, false}) {
    for (bool output_a_gradient : {false, true}) {
      for (int workers : {1, 2}) {
        SCOPED_TRACE(std::string(overlap ? "overlap" : "blocking") + (output_a_gradient ? ", a gradient is an output" : "") +
                     ", workers " + std::to_string(workers));
        ir::Graph g("step");
        const ir::ValueId lr = g.add_input("lr", ir::TensorType::of(DType::kF32, {}));
        runtime::Feeds feeds{{"lr", Tensor::scalar<float>(0.1f)}};
        std::vector<ir::ValueId> outs;
        for (size_t i = 0; i < sizes.size(); ++i) {
          const ir::TensorType t = ir::TensorType::of(DType::kF32, {sizes[i]});
          const std::string k = std::to_string(i);
          const ir::ValueId w = g.add_input("w" + k, t), x = g.add_input("x" + k, t), buf = g.add_input("buf" + k, t);
          const ir::ValueId grad = g.node(g.add_node("Mul", {x, w}, 1, "grad" + k)).outputs[0];
          const ir::NodeId u = g.add_node("SGDUpdate", {w, grad, lr, buf}, 2, "update" + k, {{"momentum", 0.9}, {"weight_decay", 0.01}});
          outs.push_back(g.node(u).outputs[0]);
          outs.push_back(g.node(u).outputs[1]);
          if (output_a_gradient && i == 3) outs.push_back(grad);
          feeds["w" + k] = random_tensor({sizes[i]}, static_cast<uint32_t>(10 + i));
          feeds["x" + k] = random_tensor({sizes[i]}, static_cast<uint32_t>(20 + i));
          feeds["buf" + k] = random_tensor({sizes[i]}, static_cast<uint32_t>(30 + i));
        }
        g.set_outputs(outs);
        ASSERT_TRUE(ops::infer_types(g, reg).is_ok());
        SessionOptions o;
        o.inter_op_threads = workers;
        Session plain(g, reg, o);
        auto want = plain.run(feeds);
        ASSERT_TRUE(want.has_value()) << want.error().to_string();

        dist::DataParallel dp;
        dp.world_size = 2;
        dp.overlap = overlap;
        dp.first_bucket_bytes = 200;  // the first bucket closes on reaching 200 bytes (two gradients), the other holds three
        dp.bucket_bytes = 8192;
        o.data_parallel = &dp;
        Session split(g, reg, o);
        auto alone = split.run(feeds);  // split for 2 ranks, run without a communicator: refused
        ASSERT_FALSE(alone.has_value());
        EXPECT_NE(alone.error().message.find("split for 2 ranks, this run has 1"), std::string::npos) << alone.error().to_string();
        TwinRanks twin;
        dist::set_current(&twin);
        auto got = split.run(feeds);
        dist::set_current(nullptr);
        ASSERT_TRUE(got.has_value()) << got.error().to_string();
        ASSERT_EQ(got->size(), want->size());
        for (size_t k = 0; k < want->size(); ++k)
          for (int64_t i = 0; i < (*want)[k].numel(); ++i)
            ASSERT_EQ((*got)[k].data<float>()[i], (*want)[k].data<float>()[i]) << "output " << k << " element " << i;

        const ExecutionPlan& plan = split.last_program()->plan();
        int buckets = 0, views = 0;
        for (const Step& st : plan.steps) {
          const ir::Node& n = plan.graph.node(st.node);
          if (n.op != (overlap ? "AllReduceStart" : "AllReduce")) continue;
          ++buckets;
          bool has_output_gradient = false;
          for (ir::ValueId v : n.inputs)
            has_output_gradient |= std::count(plan.graph.outputs().begin(), plan.graph.outputs().end(), v) > 0;
          EXPECT_EQ(st.bucket_view, !has_output_gradient) << n.name;
          if (!st.bucket_view) continue;
          ++views;
          size_t at = plan.slots[static_cast<size_t>(n.inputs[0])].offset;
          for (ir::ValueId v : n.inputs) {
            EXPECT_EQ(plan.slots[static_cast<size_t>(v)].offset, at) << n.name << " input %" << v;
            at += (plan.slots[static_cast<size_t>(v)].bytes + 63) / 64 * 64;
          }
          // The sums (the outputs of the blocking AllReduce, or of the wait after the start's token)
          // share the gradients' places.
          const ir::Node* reducer = &n;
          for (const Step& other : plan.steps)
            if (overlap && plan.graph.node(other.node).op == "AllReduceWait" && plan.graph.node(other.node).inputs[0] == n.outputs[0])
              reducer = &plan.graph.node(other.node);
          ASSERT_EQ(reducer->op, overlap ? "AllReduceWait" : "AllReduce");
          ASSERT_EQ(reducer->outputs.size(), n.inputs.size());
          for (size_t i = 0; i < n.inputs.size(); ++i)
            EXPECT_EQ(plan.slots[static_cast<size_t>(reducer->outputs[i])].offset, plan.slots[static_cast<size_t>(n.inputs[i])].offset)
                << reducer->name << " output " << i;
        }
        EXPECT_EQ(buckets, 2);
        EXPECT_EQ(views, output_a_gradient ? 1 : 2);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::stages
