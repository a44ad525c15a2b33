// The int8 kernels (engine/cpu/int8_kernels.cpp) against the reference kernels of the
// quantization ops (the qdq-fuse pass: tests/stages/qdq_fuse_test.cpp).
#include <cmath>
#include <limits>

#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;


// Every input but the data input a constant; the result must come from `impl` and equal the
// reference exactly.
void check_exact(const std::string& op, const std::vector<const Tensor*>& in, const ir::Attributes& attrs,
                 const std::string& impl) {
  std::vector<bool> constant(in.size(), true);
  constant[0] = false;
  const KernelResult got = run_cpu({op, in, attrs, constant, {}, "", 1});
  ASSERT_EQ(got.impl, impl);
  const std::vector<Tensor> want = reference(op, in, attrs);
  ASSERT_EQ(got.outputs.size(), 1u);
  EXPECT_TRUE(got.outputs[0].equals(want[0])) << got.outputs[0].summary(16) << "\nwant " << want[0].summary(16);
}

TEST(CpuInt8, QuantizeAndDequantizeMatchTheReference) {
  const Tensor x = random_f32({3, 1000}, 1, -4, 4);
  const Tensor s = scalar_f32(0.03f), zu = scalar_q(DType::kU8, 128), zi = scalar_q(DType::kI8, -5);
  check_exact("QuantizeLinear", {&x, &s, &zu}, {}, "cpu.vec:quantize");
  check_exact("QuantizeLinear", {&x, &s, &zi}, {}, "cpu.vec:quantize");
  const Tensor q = random_q(DType::kU8, {3, 1000}, 2), qi = random_q(DType::kI8, {3, 1000}, 3);
  check_exact("DequantizeLinear", {&q, &s, &zu}, {}, "cpu.vec:dequantize");
  check_exact("DequantizeLinear", {&qi, &s, &zi}, {}, "cpu.vec:dequantize");
}

TEST(CpuInt8, QLinearConvMatchesTheReference) {
  struct C {
    DType x_type;
    double x_zp, y_zp;
    bool per_channel, bias;
    ir::Attributes attrs;
    Shape x, w;
  };
  const std::vector<C> cases = {
      {DType::kU8, 0, 0, false, false, {}, {1, 3, 8, 8}, {4, 3, 3, 3}},
      {DType::kU8, 17, 128, true, true, {{"pads", Ints{1, 1, 1, 1}}}, {2, 8, 9, 7}, {16, 8, 3, 3}},
      {DType::kI8, -3, 5, true, true, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 0}}}, {1, 4, 10, 10}, {8, 4, 3, 3}},
      {DType::kU8, 9, 3, false, true, {{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}}, {1, 8, 6, 6}, {8, 2, 3, 3}},
      {DType::kU8, 0, 0, true, true, {}, {1, 32, 5, 5}, {64, 32, 1, 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const C& c = cases[i];
    const int64_t m = c.w[0];
    const Tensor x = random_q(c.x_type, c.x, 10 + static_cast<uint32_t>(i)), w = random_q(DType::kI8, c.w, 20 + static_cast<uint32_t>(i));
    const Tensor xs = scalar_f32(0.02f), xz = scalar_q(c.x_type, c.x_zp), ys = scalar_f32(c.per_channel ? 3.1f : 2.3f);
    const Tensor yz = scalar_q(DType::kU8, c.y_zp);
    Tensor ws = c.per_channel ? random_f32({m}, 30, 0.001f, 0.01f) : scalar_f32(0.004f);
    const Tensor wz = c.per_channel ? Tensor(DType::kI8, {m}) : scalar_q(DType::kI8, 0);
    Tensor b(DType::kI32, {m});
    for (int64_t k = 0; k < m; ++k) b.data<int32_t>()[k] = static_cast<int32_t>(k * 397 % 4000) - 2000;
    std::vector<const Tensor*> in = {&x, &xs, &xz, &w, &ws, &wz, &ys, &yz};
    if (c.bias) in.push_back(&b);
    check_exact("QLinearConv", in, c.attrs, "onednn:qlinear_conv");
  }
}

TEST(CpuInt8, QLinearMatMulMatchesTheReference) {
  const Tensor a = random_q(DType::kU8, {2, 5, 64}, 1), b = random_q(DType::kI8, {64, 24}, 2);
  const Tensor as = scalar_f32(0.05f), az = scalar_q(DType::kU8, 120), bs = random_f32({24}, 3, 0.002f, 0.02f);
  const Tensor bz(DType::kI8, {24});
  const Tensor ys = scalar_f32(0.7f), yz = scalar_q(DType::kI8, -10);
  Tensor bias(DType::kI32, {24});
  for (int64_t k = 0; k < 24; ++k) bias.data<int32_t>()[k] = static_cast<int32_t>(k * 1000) - 12000;
  check_exact("QLinearMatMul", {&a, &as, &az, &b, &bs, &bz, &ys, &yz}, {}, "onednn:qlinear_matmul");
  check_exact("QLinearMatMul", {&a, &as, &az, &b, &bs, &bz, &ys, &yz, &bias}, {}, "onednn:qlinear_matmul");
}

TEST(CpuInt8, WeightZeroPointsAndRuntimeScalesDecline) {
  const Tensor x = random_q(DType::kU8, {1, 2, 4, 4}, 1), w = random_q(DType::kI8, {2, 2, 3, 3}, 2);
  const Tensor s = scalar_f32(0.1f), zu = scalar_q(DType::kU8, 0), wz = scalar_q(DType::kI8, 3);
  std::vector<const Tensor*> in = {&x, &s, &zu, &w, &s, &wz, &s, &zu};
  EXPECT_EQ(run_cpu({"QLinearConv", in, {}, std::vector<bool>(8, true), {}, "", 1}).impl, "");
  std::vector<bool> runtime_scale(8, true);
  runtime_scale[0] = false;
  runtime_scale[1] = false;
  const Tensor wz0 = scalar_q(DType::kI8, 0);
  in[5] = &wz0;
  EXPECT_EQ(run_cpu({"QLinearConv", in, {}, runtime_scale, {}, "", 1}).impl, "");
}

// ONNX Runtime's dynamic quantizer: DynamicQuantizeLinear's three outputs bit-exact (a range
// straddling 0, all positive, all zeros, odd lengths for the vector tail); NaN or infinity is the
// reference kernel's error.
TEST(CpuInt8, DynamicQuantizeLinearMatchesTheReference) {
  Tensor zeros(DType::kF32, {7});
  const std::vector<Tensor> xs = {random_f32({3, 1001}, 1, -4, 3), random_f32({37}, 2, 0.5f, 9), zeros,
                                  random_f32({128, 256}, 3, -0.2f, 0.1f)};
  for (size_t i = 0; i < xs.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const KernelResult got = run_cpu({"DynamicQuantizeLinear", {&xs[i]}, {}, {false}, {}, "", 3});
    ASSERT_EQ(got.impl, "cpu.vec:dynamic_quantize");
    const std::vector<Tensor> want = reference("DynamicQuantizeLinear", {&xs[i]}, {}, 3);
    ASSERT_EQ(got.outputs.size(), 3u);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_TRUE(got.outputs[k].equals(want[k])) << k << ": " << got.outputs[k].summary(8) << "\nwant " << want[k].summary(8);
  }
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    Tensor x = random_f32({40}, 4, -1, 1);
    x.data<float>()[33] = bad;
    Case c{"DynamicQuantizeLinear", {&x}, {}, {false}, {}, "", 3};
    c.expect_run_error = true;
    const KernelResult got = run_cpu(c);
    EXPECT_NE(got.error.find("input element 33"), std::string::npos) << got.error;
  }
}

// MatMulInteger and ConvInteger with the data zero point known only at run time (an input, as
// DynamicQuantizeLinear gives it), constant, or absent; s8 weights of zero point 0; i32 exact.
TEST(CpuInt8, IntegerOpsWithRunTimeZeroPointsMatchTheReference) {
  const Tensor a = random_q(DType::kU8, {2, 5, 64}, 1), b = random_q(DType::kI8, {64, 24}, 2);
  const Tensor az = scalar_q(DType::kU8, 131), bz = scalar_q(DType::kI8, 0);
  for (bool runtime_zp : {true, false}) {
    SCOPED_TRACE(runtime_zp ? "run-time zero point" : "constant zero point");
    const std::vector<const Tensor*> in = {&a, &b, &az, &bz};
    const KernelResult got = run_cpu({"MatMulInteger", in, {}, {false, true, !runtime_zp, true}, {}, "", 1});
    ASSERT_EQ(got.impl, "onednn:matmul_integer");
    EXPECT_TRUE(got.outputs[0].equals(reference("MatMulInteger", in, {})[0]));
  }
  const KernelResult no_zp = run_cpu({"MatMulInteger", {&a, &b}, {}, {false, true}, {}, "", 1});
  ASSERT_EQ(no_zp.impl, "onednn:matmul_integer");
  EXPECT_TRUE(no_zp.outputs[0].equals(reference("MatMulInteger", {&a, &b}, {})[0]));
  struct C {
    ir::Attributes attrs;
    Shape x, w;
  };
  const std::vector<C> cases = {
      {{}, {1, 3, 8, 8}, {4, 3, 3, 3}},
      {{{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, {2, 8, 9, 7}, {16, 8, 3, 3}},
      {{{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}}, {1, 8, 6, 6}, {8, 2, 3, 3}},
      {{}, {1, 32, 5, 5}, {64, 32, 1, 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("conv case " + std::to_string(i));
    const Tensor x = random_q(DType::kU8, cases[i].x, 40 + static_cast<uint32_t>(i));
    const Tensor w = random_q(DType::kI8, cases[i].w, 50 + static_cast<uint32_t>(i));
    const Tensor xz = scalar_q(DType::kU8, 77 + static_cast<double>(i));
    const std::vector<const Tensor*> in = {&x, &w, &xz, &bz};
    const KernelResult got = run_cpu({"ConvInteger", in, cases[i].attrs, {false, true, false, true}, {}, "", 1});
    ASSERT_EQ(got.impl, "onednn:conv_integer");
    EXPECT_TRUE(got.outputs[0].equals(reference("ConvInteger", in, cases[i].attrs)[0]));
  }
  // A weight zero point other than 0 (oneDNN has none): the reference kernel.
  const Tensor bz3 = scalar_q(DType::kI8, 3);
  EXPECT_EQ(run_cpu({"MatMulInteger", {&a, &b, &az, &bz3}, {}, {false, true, false, true}, {}, "", 1}).impl, "");
}

}  // namespace
}  // namespace tessera::cpu_test
