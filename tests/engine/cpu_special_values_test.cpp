// NaN, infinities, denormals and huge values through every fast CPU kernel of the ops that have
// one, each implementation forced in turn, against the reference kernels: NaN where the reference
// has NaN, the same infinity, and the same finite values. ONNX (and its reference implementation,
// numpy, PyTorch) keep NaN through Relu, Clip, Max/Min, Exp, pooling, reductions and softmax; the
// fast kernels' libraries do not on their own (oneDNN's max(x, 0) makes NaN 0), so this test
// fails when one of them loses a NaN again. A convolution or GEMM whose fused activation is a
// oneDNN post-op that drops NaN (Relu, Clip, HardSigmoid) checks its inputs and takes an exact
// path when one holds NaN or inf (onednn_util.h Activation::exact); the one NaN it cannot see is
// one its own sums make from finite inputs (+inf and -inf from overflow).
#include "tests/engine/cpu_test_util.h"

#include <limits>

namespace tessera::cpu_test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Uniform values in [lo, hi] with every special value placed at seeded positions: NaN (several),
// +-inf, +-denormal, +-3e38 (when `huge`), +-0.
Tensor special_f32(Shape shape, uint32_t seed, bool huge = true, float lo = -3.f, float hi = 3.f) {
  Tensor t = random_f32(std::move(shape), seed, lo, hi);
  std::vector<float> specials = {kNaN, kInf, -kInf, 1e-40f, -1e-40f, 0.f, -0.f, kNaN};
  if (huge) specials.insert(specials.end(), {3e38f, -3e38f});
  std::mt19937 gen(seed * 7 + 1);
  std::uniform_int_distribution<int64_t> at(0, t.numel() - 1);
  for (float v : specials) t.data<float>()[at(gen)] = v;
  return t;
}

// Exact agreement on NaN and infinities (same sign), the finite values within tolerance.
void expect_same_specials(const Tensor& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.get(i), w = want.get(i);
    const bool ok = std::isnan(w) ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::isfinite(g) && std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
      ++bad;
    }
  }
}

// Runs `c` on every CPU implementation of its op that accepts it; returns how many did.
int check_every_impl(Case c, const std::vector<Tensor>& want, double rtol = 1e-4) {
  int ran = 0;
  for (const auto* e : kernels().candidates(c.op)) {
    c.impl = e->impl;
    KernelResult got = run_cpu(c);
    if (got.impl.empty()) continue;
    SCOPED_TRACE(c.op + " on " + got.impl + (c.out_layout.empty() ? "" : " in " + c.out_layout));
    ++ran;
    for (size_t i = 0; i < want.size() && i < got.outputs.size(); ++i)
      expect_same_specials(got.outputs[i], want[i], rtol);
  }
  return ran;
}

int check_unary(const std::string& op, const Tensor& x, ir::Attributes attrs = {},
                const std::string& layout = "") {
  SCOPED_TRACE(op);
  return check_every_impl({op, {&x}, attrs, {false}, {layout}, layout}, reference(op, {&x}, attrs));
}

TEST(CpuSpecialValues, UnaryActivationsKeepNaN) {
  const Tensor x = special_f32({2, 3, 4, 5}, 1);
  // The ops whose fast kernels NaN used to vanish in (the campaign's findings) must run fast.
  EXPECT_GE(check_unary("Relu", x), 1);
  EXPECT_GE(check_unary("Exp", x), 1);
  EXPECT_GE(check_unary("Log", x), 1);
  EXPECT_GE(check_unary("HardSigmoid", x, {{"alpha", 0.3}, {"beta", 0.4}}), 1);
  EXPECT_GE(check_unary("LeakyRelu", x, {{"alpha", 0.1}}), 1);
  EXPECT_GE(check_unary("LeakyRelu", x, {{"alpha", 0.0}}), 1);
  for (const char* op : {"Sigmoid", "Tanh", "Abs", "Neg", "Sqrt", "Softplus", "Erf"}) check_unary(op, x);
  check_unary("Elu", x, {{"alpha", 0.7}});
}

TEST(CpuSpecialValues, ClipKeepsNaN) {
  const Tensor x = special_f32({3, 40}, 2);
  for (auto [lo, hi] : {std::pair{-1.f, 1.f}, {0.f, 6.f}, {2.f, -1.f}, {-kInf, 0.5f}}) {
    SCOPED_TRACE("Clip " + std::to_string(lo) + " " + std::to_string(hi));
    const Tensor tlo = Tensor::scalar<float>(lo), thi = Tensor::scalar<float>(hi);
    const std::vector<Tensor> want = reference("Clip", {&x, &tlo, &thi});
    EXPECT_GE(check_every_impl({"Clip", {&x, &tlo, &thi}, {}, {false, true, true}, {}, ""}, want), 1);
    // Bounds known only when it runs.
    EXPECT_GE(check_every_impl({"Clip", {&x, &tlo, &thi}, {}, {false, false, false}, {}, ""}, want), 1);
  }
}

TEST(CpuSpecialValues, BlockedLayouts) {
  const Tensor x = special_f32({2, 16, 3, 5}, 3);
  for (const char* layout : {"nChw16c", "nChw8c"}) {
    EXPECT_GE(check_unary("Relu", x, {}, layout), 1);
    EXPECT_GE(check_unary("Exp", x, {}, layout), 1);
    const ir::Attributes pool{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{1, 1}}};
    EXPECT_GE(check_unary("MaxPool", x, pool, layout), 1);
  }
}

TEST(CpuSpecialValues, BinaryMaxMinKeepNaN) {
  const Tensor a = special_f32({4, 6, 5}, 4), b = special_f32({4, 6, 5}, 5), row = special_f32({5}, 6);
  for (const char* op : {"Max", "Min", "Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(op);
    EXPECT_GE(check_every_impl({op, {&a, &b}, {}, {false, false}, {}, ""}, reference(op, {&a, &b})), 1);
    EXPECT_GE(check_every_impl({op, {&a, &row}, {}, {false, false}, {}, ""}, reference(op, {&a, &row})), 1);
    EXPECT_GE(check_every_impl({op, {&row, &a}, {}, {false, false}, {}, ""}, reference(op, {&row, &a})), 1);
  }
}

TEST(CpuSpecialValues, PoolingKeepsNaNAnywhereInTheWindow) {
  const Tensor x = special_f32({2, 3, 8, 8}, 7);
  using Ints = std::vector<int64_t>;
  // 2x2 stride 2 (cpu.vec:maxpool2x2 and oneDNN), overlapping windows with pads, global.
  EXPECT_GE(check_unary("MaxPool", x, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}), 2);
  EXPECT_GE(check_unary("MaxPool", x, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}), 1);
  check_unary("AveragePool", special_f32({2, 3, 8, 8}, 8, /*huge=*/false), {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  check_unary("GlobalAveragePool", special_f32({2, 3, 8, 8}, 9, /*huge=*/false));
  // A NaN that is not the first value of its window still wins (the reference kernel once
  // kept the running maximum when a later NaN compared false).
  Tensor late = random_f32({1, 1, 2, 2}, 10);
  late.data<float>()[3] = kNaN;
  const std::vector<Tensor> want = reference("MaxPool", {&late}, {{"kernel_shape", Ints{2, 2}}});
  EXPECT_TRUE(std::isnan(want[0].get(0)));
  check_unary("MaxPool", late, {{"kernel_shape", Ints{2, 2}}});
}

TEST(CpuSpecialValues, ReductionsKeepNaN) {
  const Tensor x = special_f32({4, 7, 6}, 11);
  for (const char* op : {"ReduceMax", "ReduceMean"}) {
    SCOPED_TRACE(op);
    for (int64_t axis : {1, 2}) {
      const ir::Attributes attrs{{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}};
      EXPECT_GE(check_unary(op, x, attrs), 1);
    }
  }
  const Tensor axes = Tensor::from_vector<int64_t>({1}, {1});
  EXPECT_GE(check_every_impl({"ReduceSum", {&x, &axes}, {}, {false, true}, {}, ""}, reference("ReduceSum", {&x, &axes})), 1);
}

TEST(CpuSpecialValues, SoftmaxRowsWithInfinityOrNaNAreNaN) {
  // Rows: finite; one +inf; one NaN; -inf among finite values; all -inf.
  Tensor x = random_f32({5, 4}, 12, -3, 3);
  x.data<float>()[4] = kInf;
  x.data<float>()[9] = kNaN;
  x.data<float>()[12] = -kInf;
  for (int j = 16; j < 20; ++j) x.data<float>()[j] = -kInf;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    for (int64_t axis : {-1, 0}) {
      const ir::Attributes attrs{{"axis", axis}};
      const std::vector<Tensor> want = reference(op, {&x}, attrs);
      EXPECT_GE(check_every_impl({op, {&x}, attrs, {false}, {}, ""}, want), 1);
    }
  }
  // The campaign's row: softmax([inf, 1, 2, 3]) is NaN everywhere, as in ONNX Runtime.
  const Tensor row = Tensor::from_vector<float>({1, 4}, {kInf, 1, 2, 3});
  const std::vector<Tensor> want = reference("Softmax", {&row}, {{"axis", int64_t{-1}}});
  for (int j = 0; j < 4; ++j) EXPECT_TRUE(std::isnan(want[0].get(j)));
  EXPECT_GE(check_every_impl({"Softmax", {&row}, {{"axis", int64_t{-1}}}, {false}, {}, ""}, want), 1);
}

TEST(CpuSpecialValues, NormalisationsKeepNaN) {
  const Tensor x = special_f32({2, 4, 3, 3}, 13, /*huge=*/false);
  const Tensor scale = random_f32({4}, 14, 0.5f, 2.f), bias = random_f32({4}, 15), mean = random_f32({4}, 16),
               var = random_f32({4}, 17, 0.5f, 2.f);
  const std::vector<const Tensor*> bn = {&x, &scale, &bias, &mean, &var};
  check_every_impl({"BatchNormalization", bn, {}, {false, true, true, true, true}, {}, ""}, reference("BatchNormalization", bn));
  const Tensor ln_x = special_f32({6, 8}, 18, /*huge=*/false), g = random_f32({8}, 19), b = random_f32({8}, 20);
  const std::vector<const Tensor*> ln = {&ln_x, &g, &b};
  const ir::Attributes attrs{{"axis", int64_t{-1}}};
  check_every_impl({"LayerNormalization", ln, attrs, {false, true, true}, {}, ""}, reference("LayerNormalization", ln, attrs));
}

// Convolution and GEMM with NaN and infinities in the data (no huge finite values: whether a sum
// of them overflows depends on the order of the terms), each activation a oneDNN post-op.
TEST(CpuSpecialValues, FusedActivationsKeepNaN) {
  const Tensor x = special_f32({1, 16, 6, 6}, 21, /*huge=*/false), w = random_f32({16, 16, 3, 3}, 22),
               b = random_f32({16}, 23);
  const Tensor a = special_f32({8, 32}, 24, /*huge=*/false), wm = random_f32({32, 16}, 25), bm = random_f32({16}, 26);
  for (const char* act : {"Relu", "LeakyRelu", "Clip", "HardSigmoid", "Sigmoid", "Tanh", "HardSwish", "Gelu", "Swish"}) {
    SCOPED_TRACE(act);
    ir::Attributes attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"activation", act},
                         {"activation_alpha", 0.2}, {"activation_beta", 0.5}};
    const std::vector<const Tensor*> conv = {&x, &w, &b};
    EXPECT_GE(check_every_impl({"FusedConv", conv, attrs, {false, true, true}, {}, ""}, reference("FusedConv", conv, attrs)), 1);
    ir::Attributes mm{{"activation", act}, {"activation_alpha", 0.2}, {"activation_beta", 0.5}};
    const std::vector<const Tensor*> gemm = {&a, &wm, &bm};
    EXPECT_GE(check_every_impl({"FusedGemm", gemm, mm, {false, true, true}, {}, ""}, reference("FusedGemm", gemm, mm)), 1);
    EXPECT_GE(check_every_impl({"FusedMatMul", gemm, mm, {false, true, true}, {}, ""}, reference("FusedMatMul", gemm, mm)), 1);
  }
  // Conv + Relu in blocked layouts (ResNet's chains), and where oneDNN picks Winograd (3x3,
  // stride 1, 16-channel multiples, at least 48 tiles), whose only post-op is max(x, 0).
  ir::Attributes relu{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"activation", "Relu"}};
  const std::vector<const Tensor*> conv = {&x, &w, &b};
  EXPECT_GE(check_every_impl({"FusedConv", conv, relu, {false, true, true}, {"nChw16c"}, "nChw16c"},
                             reference("FusedConv", conv, relu)), 1);
  // NaN only: Winograd's transforms subtract, so an infinity in its tile makes NaN where the
  // direct sum makes inf (as any Winograd implementation does).
  Tensor big = random_f32({2, 16, 28, 28}, 36);
  for (int64_t i : {5, 700, 3000, 20000}) big.data<float>()[i] = kNaN;
  const std::vector<const Tensor*> wino = {&big, &w, &b};
  EXPECT_GE(check_every_impl({"FusedConv", wino, relu, {false, true, true}, {"nChw16c"}, "nChw16c"},
                             reference("FusedConv", wino, relu), 1e-3), 1);
}

// Winograd adds and subtracts a tile's inputs, so one infinity made NaN in outputs whose windows
// never saw it (the campaign's UNet): a run whose input holds NaN or inf takes a direct
// convolution instead.
TEST(CpuSpecialValues, WinogradDoesNotSpreadAnInfinity) {
  Tensor x = random_f32({2, 16, 28, 28}, 37);
  for (int64_t i : {100, 2000, 9000, 20000}) x.data<float>()[i] = -kInf;
  x.data<float>()[15000] = kInf;
  const Tensor w = random_f32({16, 16, 3, 3}, 38), b = random_f32({16}, 39);
  const ir::Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const std::vector<const Tensor*> conv = {&x, &w, &b};
  KernelResult got = run_cpu({"Conv", conv, pads, {false, true, true}, {"nChw16c"}, "nChw16c"});
  ASSERT_EQ(got.impl, "onednn:conv");
  EXPECT_NE(got.detail.find("wino"), std::string::npos) << got.detail;  // the case this is about
  expect_same_specials(got.outputs[0], reference("Conv", conv, pads)[0], 1e-3);
}

// A Clip bound of NaN made oneDNN throw appending the post-op, which killed the process: the
// fused kernels decline it (the reference kernel takes the node).
TEST(CpuSpecialValues, FusedClipWithANaNBoundDeclines) {
  const Tensor x = random_f32({1, 16, 5, 5}, 40), w = random_f32({16, 16, 3, 3}, 41);
  const Tensor a = random_f32({4, 16}, 42), bm = random_f32({16, 8}, 43);
  for (auto [lo, hi] : {std::pair{kNaN, 6.f}, {0.f, kNaN}}) {
    const ir::Attributes attrs{{"activation", "Clip"}, {"activation_alpha", static_cast<double>(lo)},
                               {"activation_beta", static_cast<double>(hi)}};
    EXPECT_EQ(run_cpu({"FusedConv", {&x, &w}, attrs, {false, true}, {}, "", 1, "onednn:fused_conv"}).impl, "");
    EXPECT_EQ(run_cpu({"FusedMatMul", {&a, &bm}, attrs, {false, true}, {}, "", 1, "onednn:fused_matmul"}).impl, "");
  }
}

// A weight or bias holding NaN (a constant: checked once, at load) and a residual Z holding one
// reach the output through Relu and Clip too.
TEST(CpuSpecialValues, NaNInWeightsAndResidualSurvivesTheActivation) {
  const Tensor x = random_f32({1, 16, 5, 5}, 28);
  Tensor w = random_f32({16, 16, 3, 3}, 29);
  w.data<float>()[5] = kNaN;  // output channel 0
  const Tensor b = random_f32({16}, 30);
  for (const char* act : {"Relu", "Clip"}) {
    SCOPED_TRACE(act);
    ir::Attributes attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"activation", act},
                         {"activation_alpha", 0.0}, {"activation_beta", 6.0}};
    const std::vector<const Tensor*> conv = {&x, &w, &b};
    const std::vector<Tensor> want = reference("FusedConv", conv, attrs);
    EXPECT_TRUE(std::isnan(want[0].get(0)));
    EXPECT_GE(check_every_impl({"FusedConv", conv, attrs, {false, true, true}, {}, ""}, want), 1);
    // Z with a NaN, every input finite otherwise.
    const Tensor wf = random_f32({16, 16, 3, 3}, 31);
    Tensor z = random_f32({1, 16, 5, 5}, 32);
    z.data<float>()[7] = kNaN;
    const std::vector<const Tensor*> with_z = {&x, &wf, &b, &z};
    const std::vector<Tensor> want_z = reference("FusedConv", with_z, attrs);
    EXPECT_TRUE(std::isnan(want_z[0].get(7)));
    EXPECT_GE(check_every_impl({"FusedConv", with_z, attrs, {false, true, true, false}, {}, ""}, want_z), 1);
    const Tensor a = random_f32({4, 16}, 33), bm = random_f32({16, 8}, 34);
    Tensor zm = random_f32({4, 8}, 35);
    zm.data<float>()[3] = kNaN;
    const std::vector<const Tensor*> mm = {&a, &bm, nullptr, &zm};
    const ir::Attributes mm_attrs{{"activation", act}, {"activation_alpha", 0.0}, {"activation_beta", 6.0}};
    EXPECT_GE(check_every_impl({"FusedMatMul", mm, mm_attrs, {false, true, false, false}, {}, ""},
                               reference("FusedMatMul", mm, mm_attrs)), 1);
  }
}

}  // namespace
}  // namespace tessera::cpu_test
