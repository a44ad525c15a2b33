// The int8 kernels (engine/cpu/int8_kernels.cpp) against the reference kernels of the
// quantization ops (the qdq-fuse pass: tests/stages/qdq_fuse_test.cpp).
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

}  // namespace
}  // namespace tessera::cpu_test
