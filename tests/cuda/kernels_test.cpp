// The CUDA device through the six stages (engine/cuda/): each kernel against the reference
// kernels on random inputs (odd sizes, broadcasting, empty and large tensors, NaN), every node of
// those graphs placed on the GPU, no device memory allocated per run, and a CNN end to end.
// TF32 is off here (full f32: the CPU's tolerance); one test runs with it on.
// Exits 77 (ctest: skipped) when no CUDA device is usable, printing why; with
// TESSERA_CUDA_TEST_ON_CPU=1 it runs the same graphs on the CPU instead (ctest
// cuda.kernels_graphs_on_cpu, the tests without NaN inputs: the CPU's compiled kernels still turn
// NaN into numbers, issue 42, where the reference and these GPU kernels keep it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>

#include "engine/ops/infer.h"
#include "engine/runtime/interpreter.h"
#include "engine/stages/session.h"

namespace tessera {
namespace {

// TESSERA_CUDA_TEST_ON_CPU=1 without a GPU: the same graphs on the CPU device, checking the tests
// themselves (every graph valid, the reference agreeing with the CPU kernels) where no GPU is.
bool g_on_cpu = false;

const ops::OpRegistry& registry() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.f) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor ints(Shape shape, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(shape), std::move(v)); }

// One graph: inputs (fed), params (weights), nodes; outputs the last node's outputs.
struct Builder {
  ir::Graph g{"cuda-test"};
  runtime::Feeds feeds;
  ir::ValueId input(const std::string& name, const Tensor& t) {
    feeds[name] = t;
    return g.add_input(name, ir::TensorType::of(t.dtype(), t.shape()));
  }
  ir::ValueId param(const std::string& name, const Tensor& t) { return g.add_param(name, t); }
  ir::ValueId node(const std::string& op, std::vector<ir::ValueId> in, ir::Attributes attrs = {}) {
    return nodes(op, std::move(in), std::move(attrs), 1)[0];
  }
  std::vector<ir::ValueId> nodes(const std::string& op, std::vector<ir::ValueId> in, ir::Attributes attrs, int outputs) {
    ir::NodeId n = g.add_node(op, std::move(in), outputs, op + std::to_string(g.num_nodes()), std::move(attrs));
    return g.node(n).outputs;
  }
};

struct Result {
  std::vector<Tensor> got, want;
  int steps_off_gpu = 0;
  std::string off;
};

// Runs `b` on cuda:0 (3 times: no device allocation after the first) and on the reference kernels.
Result run_both(Builder& b, std::vector<ir::ValueId> outputs, bool tf32 = false, const std::string& pipeline = "") {
  b.g.set_outputs(std::move(outputs));
  Result r;
  auto want = runtime::run_reference(b.g, registry(), b.feeds);
  EXPECT_TRUE(want.has_value()) << want.error().to_string();
  if (!want) return r;
  r.want = *want;
  stages::SessionOptions o;
  o.device = g_on_cpu ? "cpu" : "cuda:0";
  o.tf32 = tf32;
  o.pipeline = pipeline;
  stages::Session s(b.g, registry(), o);
  auto got = s.run(b.feeds);
  EXPECT_TRUE(got.has_value()) << got.error().to_string();
  if (!got) return r;
  r.got = *got;
  if (g_on_cpu) return r;
  const backend::Device* gpu = s.devices().find("cuda:0");
  const size_t allocations = gpu->allocations();
  // Run 2 captures the CUDA graphs, runs 3 and 4 replay them: the same results.
  for (int i = 0; i < 3; ++i) {
    auto again = s.run(b.feeds);
    EXPECT_TRUE(again.has_value()) << again.error().to_string();
    if (!again) break;
    for (size_t k = 0; k < again->size() && k < r.got.size(); ++k)
      EXPECT_TRUE((*again)[k].equals(r.got[k]) || (*again)[k].numel() == 0) << "run " << i + 2 << " output " << k << " differs";
  }
  EXPECT_EQ(gpu->allocations(), allocations) << "device memory allocated per run";
  for (const stages::CaptureSegment& seg : s.last_program()->segments())
    EXPECT_TRUE(seg.failed.empty() && seg.graph) << "steps " << seg.begin << ".." << seg.end << " not captured: " << seg.failed;
  const stages::ExecutionPlan& plan = s.last_program()->plan();
  for (const stages::Step& st : plan.steps)
    if (st.kind != stages::Step::Kind::kCopy && plan.devices[static_cast<size_t>(st.device)] != "cuda:0") {
      ++r.steps_off_gpu;
      r.off += plan.graph.node(st.node).op + " (" + st.why_reference + ") ";
    }
  return r;
}

void expect_close(const Tensor& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::isfinite(want.get(i))) scale = std::max(scale, std::fabs(want.get(i)));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get(i), g = got.get(i);
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << "element " << i << ": NaN expected, got " << g;
    } else if (std::isinf(w)) {
      ASSERT_EQ(g, w) << "element " << i;
    } else {
      ASSERT_NEAR(g, w, atol + rtol * scale) << "element " << i;
    }
  }
}

void check_all_on_gpu(Builder& b, std::vector<ir::ValueId> outs, double rtol = 1e-4) {
  Result r = run_both(b, std::move(outs));
  ASSERT_EQ(r.got.size(), r.want.size());
  EXPECT_EQ(r.steps_off_gpu, 0) << "off the GPU: " << r.off;
  for (size_t i = 0; i < r.got.size(); ++i) expect_close(r.got[i], r.want[i], rtol);
}

TEST(Cuda, UnaryOpsMatchTheReferenceOnOddSizesAndNaN) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf", "Softplus", "HardSwish", "Floor", "Sin"})
    for (int64_t n : {0, 1, 7, 1000, (1 << 20) + 3}) {
      SCOPED_TRACE(std::string(op) + " n=" + std::to_string(n));
      Tensor x = random_tensor({n}, 3, 4.f);
      if (n > 2) x.data<float>()[1] = NAN;
      Builder b;
      check_all_on_gpu(b, {b.node(op, {b.input("x", x)})});
    }
}

TEST(Cuda, BinaryOpsBroadcastLikeTheReference) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5}, {5}}, {{3, 1, 5}, {4, 1}}, {{2, 3, 4}, {}}, {{1}, {6, 7}}, {{0, 3}, {3}}, {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"})
    for (const auto& [sa, sb] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + shape_to_string(sa) + " " + shape_to_string(sb));
      Builder b;
      Tensor a = random_tensor(sa, 1), c = random_tensor(sb, 2);
      if (std::string(op) == "Pow")
        for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = std::fabs(a.data<float>()[i]) + 0.1f;
      if (a.numel() > 1) a.data<float>()[0] = NAN;  // Max(NaN, x) and Min(NaN, x) are NaN
      check_all_on_gpu(b, {b.node(op, {b.input("a", a), b.input("b", c)})});
    }
}

TEST(Cuda, MatMulAndGemmMatchTheReference) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5, 7}, {7, 4}}, {{2, 3, 5, 7}, {2, 3, 7, 4}}, {{6, 9, 33}, {33, 17}}, {{5, 7}, {3, 7, 4}}, {{7}, {7, 4}}, {{1, 1}, {1, 1}}};
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE(shape_to_string(sa) + " x " + shape_to_string(sb));
    Builder b;
    check_all_on_gpu(b, {b.node("MatMul", {b.input("a", random_tensor(sa, 1)), b.param("w", random_tensor(sb, 2))})});
  }
  for (int trans_b : {0, 1}) {
    Builder b;
    ir::ValueId a = b.input("a", random_tensor({8, 12}, 3));
    ir::ValueId w = b.param("w", random_tensor(trans_b ? Shape{5, 12} : Shape{12, 5}, 4));
    ir::ValueId c = b.param("c", random_tensor({5}, 5));
    check_all_on_gpu(b, {b.node("Gemm", {a, w, c}, {{"transB", int64_t{trans_b}}, {"alpha", 0.5}})});
  }
}

TEST(Cuda, FusedMatMulWithBiasAndGeluRunsOnTheGpu) {
  // MatMul + Add(bias) + Gelu: the optimiser fuses them into FusedMatMul (cuBLAS + epilogue).
  Builder b;
  ir::ValueId x = b.input("x", random_tensor({4, 16, 32}, 1));
  ir::ValueId mm = b.node("MatMul", {x, b.param("w", random_tensor({32, 24}, 2, 0.2f))});
  ir::ValueId add = b.node("Add", {mm, b.param("bias", random_tensor({24}, 3))});
  check_all_on_gpu(b, {b.node("Gelu", {add})});
}

TEST(Cuda, ConvolutionsAndPoolingMatchTheReference) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> pads, strides;
    int64_t group;
  };
  for (const Case& c : {Case{{1, 3, 17, 13}, {5, 3, 3, 3}, {1, 1, 1, 1}, {2, 2}, 1},
                        Case{{2, 8, 9, 9}, {8, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, 8},
                        Case{{1, 4, 10, 10}, {6, 2, 1, 1}, {0, 0, 0, 0}, {1, 1}, 2},
                        Case{{3, 2, 50}, {4, 2, 5}, {2, 2}, {1}, 1}}) {
    SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w));
    Builder b;
    ir::ValueId x = b.input("x", random_tensor(c.x, 1));
    ir::ValueId conv = b.node("Conv", {x, b.param("w", random_tensor(c.w, 2, 0.3f)), b.param("b", random_tensor({c.w[0]}, 3))},
                              {{"pads", c.pads}, {"strides", c.strides}, {"group", c.group}});
    check_all_on_gpu(b, {b.node("Relu", {conv})});
  }
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    Builder b;
    Tensor x = random_tensor({2, 3, 11, 8}, 4);
    x.data<float>()[5] = NAN;
    check_all_on_gpu(b, {b.node(op, {b.input("x", x)}, {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                        {"strides", std::vector<int64_t>{2, 2}},
                                                        {"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  }
  Builder b;
  check_all_on_gpu(b, {b.node("GlobalAveragePool", {b.input("x", random_tensor({2, 5, 7, 3}, 5))})});
}

TEST(Cuda, RowOpsMatchTheReference) {
  for (int64_t axis : {-1, 1, 0}) {
    SCOPED_TRACE("softmax axis " + std::to_string(axis));
    Builder b;
    Tensor x = random_tensor({3, 5, 1000}, 1, 3.f);
    x.data<float>()[7] = NAN;  // its row is NaN, the others are not touched
    check_all_on_gpu(b, {b.node("Softmax", {b.input("x", x)}, {{"axis", axis}}),
                         b.node("LogSoftmax", {b.input("y", random_tensor({4, 1, 9}, 2))}, {{"axis", axis}})});
  }
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({2, 7, 768}, 3));
    check_all_on_gpu(b, {b.node("LayerNormalization", {x, b.param("s", random_tensor({768}, 4)), b.param("bias", random_tensor({768}, 5))},
                                {{"axis", int64_t{-1}}, {"epsilon", 1e-5}})});
  }
  for (const auto& axes : {std::vector<int64_t>{2, 3}, std::vector<int64_t>{1}, std::vector<int64_t>{-1}}) {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({2, 3, 5, 6}, 6));
    check_all_on_gpu(b, {b.node("ReduceMean", {x}, {{"axes", axes}, {"keepdims", int64_t{1}}}),
                         b.node("ReduceSum", {x, b.param("axes", ints({static_cast<int64_t>(axes.size())}, axes))},
                                {{"keepdims", int64_t{0}}})});
  }
  Builder b;
  ir::ValueId x = b.input("x", random_tensor({2, 4, 3, 3}, 7));
  Tensor var = random_tensor({4}, 11);
  for (int64_t i = 0; i < 4; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
  check_all_on_gpu(b, {b.node("BatchNormalization", {x, b.param("g", random_tensor({4}, 8)), b.param("be", random_tensor({4}, 9)),
                                                     b.param("m", random_tensor({4}, 10)), b.param("v", var)})},
                   1e-4);
}

TEST(Cuda, DataMovementMatchesTheReference) {
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({2, 3, 4, 5}, 1));
    check_all_on_gpu(b, {b.node("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})});
  }
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({6, 10}, 2));
    check_all_on_gpu(b, {b.node("Slice", {x, b.param("st", ints({2}, {1, -2})), b.param("en", ints({2}, {5, -100})),
                                          b.param("ax", ints({2}, {0, 1})), b.param("sp", ints({2}, {2, -3}))})});
  }
  {
    Builder b;
    ir::ValueId a = b.input("a", random_tensor({2, 3, 4}, 3)), c = b.input("c", random_tensor({2, 5, 4}, 4));
    check_all_on_gpu(b, {b.node("Concat", {a, c}, {{"axis", int64_t{1}}})});
  }
  {
    Builder b;
    ir::ValueId table = b.param("table", random_tensor({50, 16}, 5));
    ir::ValueId idx = b.param("idx", ints({2, 3}, {0, 49, -1, 7, 7, 3}));
    ir::ValueId g = b.node("Gather", {table, idx}, {{"axis", int64_t{0}}});
    check_all_on_gpu(b, {b.node("Add", {g, b.input("x", random_tensor({2, 3, 16}, 6))})});
  }
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({3, 1, 4}, 7));
    check_all_on_gpu(b, {b.node("Expand", {x, b.param("shape", ints({3}, {3, 5, 4}))})});
  }
  {
    Builder b;
    Tensor f = random_tensor({40}, 9, 1e10f);
    f.data<float>()[0] = NAN;
    f.data<float>()[1] = -2.7f;
    f.data<float>()[2] = 3e38f;
    ir::ValueId x = b.input("f", f);
    ir::ValueId i = b.input("i", ints({5}, {-1, 0, 300, int64_t{1} << 40, -129}));
    check_all_on_gpu(b, {b.node("Cast", {x}, {{"to", std::string("i32")}}), b.node("Cast", {x}, {{"to", std::string("bool")}}),
                         b.node("Cast", {i}, {{"to", std::string("u8")}}), b.node("Cast", {i}, {{"to", std::string("f32")}}),
                         b.node("Cast", {i}, {{"to", std::string("i32")}})});
  }
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({2, 3, 5}, 10));
    check_all_on_gpu(b, {b.node("Pad", {x, b.param("pads", ints({6}, {0, 1, -1, 0, 2, 3})), b.param("v", Tensor::from_vector<float>({}, {0.5f}))})});
  }
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({2, 3, 4}, 8));
    ir::ValueId r = b.node("Reshape", {x, b.param("shape", ints({2}, {6, 4}))});
    check_all_on_gpu(b, {b.node("Relu", {r})});
  }
}

TEST(Cuda, ASmallCnnRunsWhollyOnTheGpuWithTf32Close) {
  Builder b;
  ir::ValueId x = b.input("x", random_tensor({8, 3, 32, 32}, 1));
  ir::ValueId c1 = b.node("Conv", {x, b.param("w1", random_tensor({16, 3, 3, 3}, 2, 0.3f)), b.param("b1", random_tensor({16}, 3))},
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Tensor var = random_tensor({16}, 4);
  for (int64_t i = 0; i < 16; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
  ir::ValueId bn = b.node("BatchNormalization", {c1, b.param("g", random_tensor({16}, 5)), b.param("be", random_tensor({16}, 6)),
                                                 b.param("m", random_tensor({16}, 7)), b.param("v", var)});
  ir::ValueId r1 = b.node("Relu", {bn});
  ir::ValueId p1 = b.node("MaxPool", {r1}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  ir::ValueId gp = b.node("GlobalAveragePool", {p1});
  ir::ValueId fl = b.node("Flatten", {gp});
  ir::ValueId fc = b.node("Gemm", {fl, b.param("w2", random_tensor({10, 16}, 8, 0.3f)), b.param("b2", random_tensor({10}, 9))},
                          {{"transB", int64_t{1}}});
  ir::ValueId out = b.node("Softmax", {fc});
  for (bool tf32 : {false, true}) {
    SCOPED_TRACE(tf32 ? "TF32" : "f32");
    Result r = run_both(b, {out}, tf32);
    ASSERT_EQ(r.got.size(), 1u);
    EXPECT_EQ(r.steps_off_gpu, 0) << r.off;
    expect_close(r.got[0], r.want[0], tf32 ? 1e-2 : 1e-4);
  }
}

TEST(Cuda, NodesWithoutACudaKernelFallBackToTheCpuWithTheirCopies) {
  // Cumsum has no CUDA kernel: it runs on the CPU between two GPU nodes, through copies.
  Builder b;
  ir::ValueId x = b.input("x", random_tensor({4, 9}, 1));
  ir::ValueId r = b.node("Relu", {x});
  ir::ValueId c = b.node("CumSum", {r, b.param("axis", ints({}, {1}))});
  ir::ValueId y = b.node("Exp", {c});
  Result res = run_both(b, {y});
  ASSERT_EQ(res.got.size(), 1u);
  if (!g_on_cpu) {
    EXPECT_EQ(res.steps_off_gpu, 1) << res.off;
  }
  expect_close(res.got[0], res.want[0]);
}

TEST(Cuda, TrainingOpsMatchTheReference) {
  {
    Builder b;
    Tensor y = random_tensor({5, 7}, 2);
    y.data<float>()[3] = NAN;
    check_all_on_gpu(b, {b.node("ReluGrad", {b.input("dy", random_tensor({5, 7}, 1)), b.input("y", y)})});
  }
  {
    Builder b;
    check_all_on_gpu(b, {b.node("Sum", {b.input("a", random_tensor({1, 4}, 1)), b.input("b", random_tensor({3, 4}, 2)),
                                        b.input("c", random_tensor({4}, 3))})});
  }
  for (bool skip : {false, true}) {
    SCOPED_TRACE(skip ? "non-finite loss: the step is skipped" : "a step");
    Builder b;
    ir::ValueId p = b.input("p", random_tensor({6, 5}, 1)), g = b.input("g", random_tensor({6, 5}, 2));
    ir::ValueId lr = b.input("lr", Tensor::from_vector<float>({}, {0.1f}));
    ir::ValueId buf = b.input("buf", random_tensor({6, 5}, 3));
    ir::ValueId loss = b.input("loss", Tensor::from_vector<float>({}, {skip ? NAN : 1.5f}));
    auto sgd = b.nodes("SGDUpdate", {p, g, lr, buf, loss}, {{"momentum", 0.9}, {"nesterov", int64_t{1}}, {"weight_decay", 0.01}}, 2);
    ir::ValueId step = b.input("step", Tensor::from_vector<int64_t>({}, {3}));
    Tensor v = random_tensor({6, 5}, 5, 0.1f);
    for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = std::fabs(v.data<float>()[i]);  // a second moment
    auto adam = b.nodes("AdamUpdate", {p, g, lr, step, b.input("m", random_tensor({6, 5}, 4)), b.input("v", v), loss},
                        {{"decoupled", int64_t{1}}, {"weight_decay", 0.01}}, 3);
    check_all_on_gpu(b, {sgd[0], sgd[1], adam[0], adam[1]});
  }
  for (const char* reduction : {"mean", "sum", "none"}) {
    SCOPED_TRACE(reduction);
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({8, 10}, 1, 3.f));
    ir::ValueId labels = b.input("labels", ints({8}, {0, 9, 3, 3, 5, 1, 7, 2}));
    auto loss = b.nodes("SoftmaxCrossEntropyLoss", {x, labels}, {{"reduction", std::string(reduction)}}, 2);
    ir::ValueId dloss = b.input("dloss", std::string(reduction) == "none" ? random_tensor({8}, 2) : Tensor::from_vector<float>({}, {0.7f}));
    ir::ValueId dx = b.node("SoftmaxCrossEntropyLossGrad", {dloss, x, labels}, {{"reduction", std::string(reduction)}});
    check_all_on_gpu(b, {loss[0], loss[1], dx});
  }
  {
    Builder b;
    const std::vector<int64_t> pads{1, 1, 1, 1}, strides{2, 2};
    ir::ValueId dy = b.input("dy", random_tensor({2, 6, 5, 4}, 1));
    ir::ValueId dx = b.node("ConvGradInput", {dy, b.param("w", random_tensor({6, 2, 3, 3}, 2)), b.param("xs", ints({4}, {2, 4, 9, 8}))},
                            {{"pads", pads}, {"strides", strides}, {"group", int64_t{2}}});
    auto dw = b.nodes("ConvGradWeight", {dy, b.input("x", random_tensor({2, 4, 9, 8}, 3)), b.param("ws", ints({4}, {6, 2, 3, 3}))},
                      {{"pads", pads}, {"strides", strides}, {"group", int64_t{2}}}, 2);
    check_all_on_gpu(b, {dx, dw[0], dw[1]});
  }
  for (const char* approximate : {"none", "tanh"}) {
    Builder b;
    check_all_on_gpu(b, {b.node("GeluGrad", {b.input("dy", random_tensor({7, 33}, 1)), b.input("x", random_tensor({7, 33}, 2, 2.f))},
                                {{"approximate", std::string(approximate)}})});
  }
  for (int64_t axis : {-1, 1}) {
    Builder b;
    ir::ValueId y = b.node("Softmax", {b.input("x", random_tensor({3, 5, 300}, 1))}, {{"axis", axis}});
    check_all_on_gpu(b, {b.node("SoftmaxGrad", {b.input("dy", random_tensor({3, 5, 300}, 2)), y}, {{"axis", axis}})});
  }
  {
    Builder b;
    auto g = b.nodes("LayerNormalizationGrad", {b.input("dy", random_tensor({6, 9, 128}, 1)), b.input("x", random_tensor({6, 9, 128}, 2, 3.f)),
                                                b.input("scale", random_tensor({128}, 3))},
                     {{"axis", int64_t{-1}}, {"epsilon", 1e-5}}, 3);
    check_all_on_gpu(b, {g[0], g[1], g[2]});
  }
  for (const Shape& shape : {Shape{8, 4, 5, 3}, Shape{16, 6}}) {
    SCOPED_TRACE("batch norm, training mode, " + shape_to_string(shape));
    Builder b;
    const int64_t c = shape[1];
    Tensor var = random_tensor({c}, 5);
    for (int64_t i = 0; i < c; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
    ir::ValueId x = b.input("x", random_tensor(shape, 1, 2.f)), scale = b.input("scale", random_tensor({c}, 2));
    auto bn = b.nodes("BatchNormalization", {x, scale, b.input("bias", random_tensor({c}, 3)), b.input("mean", random_tensor({c}, 4)),
                                             b.input("var", var)},
                      {{"training_mode", int64_t{1}}, {"momentum", 0.8}}, 3);
    auto grad = b.nodes("BatchNormalizationGrad", {b.input("dy", random_tensor(shape, 6)), x, scale}, {}, 3);
    check_all_on_gpu(b, {bn[0], bn[1], bn[2], grad[0], grad[1], grad[2]});
  }
  {
    Builder b;
    ir::ValueId x = b.input("x", random_tensor({2, 3, 8, 6}, 1));
    ir::ValueId mg = b.node("MaxPoolGrad", {b.input("dy", random_tensor({2, 3, 4, 3}, 2)), x},
                            {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ir::ValueId ag = b.node("AveragePoolGrad", {b.input("dy2", random_tensor({2, 3, 4, 3}, 3)), b.param("xs", ints({4}, {2, 3, 8, 6}))},
                            {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                             {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    check_all_on_gpu(b, {mg, ag});
  }
}

TEST(Cuda, TooLargeAnAllocationIsAClearError) {
  if (g_on_cpu) GTEST_SKIP() << "needs a GPU";
  backend::DeviceSet set = backend::DeviceSet::discover(false);
  backend::Device* gpu = set.find("cuda:0");
  ASSERT_NE(gpu, nullptr);
  auto m = gpu->allocate(size_t{1} << 52);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("cuda:0"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find(std::to_string(size_t{1} << 52)), std::string::npos) << m.error().message;
  auto ok = gpu->allocate(1 << 20);  // the device still works after the failure
  EXPECT_TRUE(ok.has_value());
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  const tessera::backend::DeviceSet set = tessera::backend::DeviceSet::discover(false);
  const char* on_cpu = std::getenv("TESSERA_CUDA_TEST_ON_CPU");
  if (!set.find("cuda:0") && on_cpu && std::string(on_cpu) == "1") {
    tessera::g_on_cpu = true;
    std::printf("no CUDA device (%s) - the tests' graphs on the CPU\n", set.cuda_unavailable().c_str());
  } else if (!set.find("cuda:0")) {
    std::printf("no CUDA device (%s) - skipping GPU work\n", set.cuda_unavailable().c_str());
    return 77;
  } else {
    std::printf("cuda:0: %s\n", set.find("cuda:0")->description().c_str());
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
