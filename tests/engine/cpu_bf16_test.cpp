// bf16 matrix work (KernelInit::bf16, SessionOptions::bf16, --precision bf16): on a CPU with
// AVX-512 BF16 or AMX the Conv / MatMul / Gemm kernels run oneDNN's bf16 implementations (their
// detail says so), stay within bf16's rounding of the f32 reference and differ from the f32 kernels'
// output (the rounding happened). (Session.Bf16RunsOrIsRefused: the refusal on other CPUs.)
#include <algorithm>
#include <cmath>

#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

// max |got - want| / max |want|.
double scaled_error(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err = std::max(err, std::fabs(got.get(i) - want.get(i)));
    scale = std::max(scale, std::fabs(want.get(i)));
  }
  return err / scale;
}

bool cpu_has_bf16() { return cpu::bf16_unsupported().empty(); }

// The bf16 kernel against the f32 kernel and the reference: bf16 in oneDNN's choice, within 2e-2
// of the output's scale (8 bits of mantissa over sums of hundreds of products), not bit-equal to f32.
void check_bf16(Case c, const Tensor& want, const std::string& impl) {
  c.bf16 = false;
  const KernelResult f32 = run_cpu(c);
  c.bf16 = true;
  const KernelResult bf = run_cpu(c);
  ASSERT_EQ(bf.impl, impl);
  ASSERT_FALSE(bf.outputs.empty());
  EXPECT_NE(bf.detail.find("bf16"), std::string::npos) << bf.detail;
  EXPECT_EQ(f32.detail.find("bf16"), std::string::npos) << f32.detail;
  const double err = scaled_error(bf.outputs[0], want);
  EXPECT_LT(err, 2e-2);
  EXPECT_GT(scaled_error(bf.outputs[0], f32.outputs[0]), 1e-5) << "bf16 gave f32's result";
  EXPECT_LT(scaled_error(f32.outputs[0], want), 1e-5);
}

TEST(CpuBf16, ConvolutionsRunInBf16) {
  if (!cpu_has_bf16()) GTEST_SKIP() << cpu::bf16_unsupported();
  const Tensor x = random_f32({2, 32, 14, 14}, 1), w = random_f32({64, 32, 3, 3}, 2), b = random_f32({64}, 3);
  const ir::Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Tensor want = reference("Conv", {&x, &w, &b}, pads)[0];
  for (bool w_const : {true, false})
    for (const char* layout : {"", "nhwc"}) {
      SCOPED_TRACE(std::string(w_const ? "constant" : "run-time") + " weights, layout '" + layout + "'");
      check_bf16({"Conv", {&x, &w, &b}, pads, {false, w_const, true}, {layout}, layout}, want, "onednn:conv");
    }
  // Fused: bias, residual and Relu on top of the bf16 products (the post-ops stay f32).
  const Tensor z = random_f32(want.shape(), 4);
  const Tensor sum = reference("Add", {&want, &z})[0];
  ir::Attributes fused = pads;
  fused.insert_or_assign("activation", std::string("Relu"));
  check_bf16({"FusedConv", {&x, &w, &b, &z}, fused, {false, true, true, false}, {"nhwc", "", "", "nhwc"}, "nhwc"},
             reference("Relu", {&sum})[0], "onednn:fused_conv");
  // A first convolution: plain NCHW images of 3 channels into channels-last, converted to bf16 by
  // the kernel's own loop; a NaN pixel stays NaN through it.
  Tensor img = random_f32({2, 3, 20, 20}, 8);
  const Tensor w3 = random_f32({32, 3, 3, 3}, 9);
  check_bf16({"Conv", {&img, &w3}, pads, {false, true}, {""}, "nhwc"}, reference("Conv", {&img, &w3}, pads)[0],
             "onednn:conv");
  img.data<float>()[5 * 20 + 7] = std::nanf("");
  Case first{"Conv", {&img, &w3}, pads, {false, true}, {""}, "nhwc"};
  first.bf16 = true;
  const KernelResult nan_out = run_cpu(first);
  ASSERT_FALSE(nan_out.outputs.empty());
  EXPECT_TRUE(std::isnan(nan_out.outputs[0].data<float>()[5 * 20 + 7])) << "output 0 at the NaN pixel";
  EXPECT_FALSE(std::isnan(nan_out.outputs[0].data<float>()[15 * 20 + 15])) << "an output far from it";
}

// Depthwise convolutions (memory-bound) and those Winograd takes stay f32 under bf16: f32's kernel
// and f32's result.
TEST(CpuBf16, DepthwiseAndWinogradConvolutionsStayF32) {
  if (!cpu_has_bf16()) GTEST_SKIP() << cpu::bf16_unsupported();
  const ir::Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Tensor x = random_f32({2, 32, 14, 14}, 1), wd = random_f32({32, 1, 3, 3}, 5);
  ir::Attributes dw = pads;
  dw.insert_or_assign("group", int64_t{32});
  Case c{"Conv", {&x, &wd}, dw, {false, true}, {"nhwc"}, "nhwc"};
  c.bf16 = true;
  KernelResult got = run_cpu(c);
  ASSERT_EQ(got.impl, "onednn:conv");
  EXPECT_EQ(got.detail.find("bf16"), std::string::npos) << got.detail;
  EXPECT_LT(scaled_error(got.outputs[0], reference("Conv", {&x, &wd}, dw)[0]), 1e-5);
  // 3x3, 32 -> 32 channels over 4 images of 28x28: 196 tiles of 4x4, a Winograd candidate.
  const Tensor xw = random_f32({4, 32, 28, 28}, 6), ww = random_f32({32, 32, 3, 3}, 7);
  Case wc{"Conv", {&xw, &ww}, pads, {false, true}, {"nhwc"}, "nhwc"};
  wc.bf16 = true;
  got = run_cpu(wc);
  ASSERT_EQ(got.impl, "onednn:conv");
  EXPECT_EQ(got.detail.find("bf16"), std::string::npos) << got.detail;
  EXPECT_LT(scaled_error(got.outputs[0], reference("Conv", {&xw, &ww}, pads)[0]), 1e-5);
}

TEST(CpuBf16, MatMulAndGemmRunInBf16) {
  if (!cpu_has_bf16()) GTEST_SKIP() << cpu::bf16_unsupported();
  const Tensor a = random_f32({3, 37, 96}, 11), b = random_f32({96, 80}, 12);
  const Tensor want = reference("MatMul", {&a, &b})[0];
  for (bool b_const : {true, false}) {
    SCOPED_TRACE(b_const ? "constant B" : "run-time B");
    check_bf16({"MatMul", {&a, &b}, {}, {false, b_const}, {}, ""}, want, "onednn:matmul");
  }
  // Gemm with both transposes (strided operands converted to bf16) and a bias C.
  const Tensor at = random_f32({64, 40}, 13), bt = random_f32({72, 64}, 14), c = random_f32({72}, 15);
  const ir::Attributes attrs{{"transA", int64_t{1}}, {"transB", int64_t{1}}};
  const Tensor want_gemm = reference("Gemm", {&at, &bt, &c}, attrs)[0];
  for (bool b_const : {true, false}) {
    SCOPED_TRACE(b_const ? "constant B" : "run-time B");
    check_bf16({"Gemm", {&at, &bt, &c}, attrs, {false, b_const, true}, {}, ""}, want_gemm, "onednn:gemm");
  }
}

// Training: the backward convolutions read dY, X and W as bf16 and write f32 gradients.
TEST(CpuBf16, ConvolutionGradientsRunInBf16) {
  if (!cpu_has_bf16()) GTEST_SKIP() << cpu::bf16_unsupported();
  const ir::Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Tensor dy = random_f32({4, 32, 12, 12}, 31), x = random_f32({4, 16, 12, 12}, 32), w = random_f32({32, 16, 3, 3}, 33);
  const Tensor x_shape = Tensor::from_vector<int64_t>({4}, {4, 16, 12, 12});
  const Tensor w_shape = Tensor::from_vector<int64_t>({4}, {32, 16, 3, 3});
  for (const char* layout : {"", "nhwc"}) {
    SCOPED_TRACE(layout);
    check_bf16({"ConvGradInput", {&dy, &w, &x_shape}, pads, {false, false, true}, {layout}, ""},
               reference("ConvGradInput", {&dy, &w, &x_shape}, pads)[0], "onednn:conv_grad_input");
    check_bf16({"ConvGradWeight", {&dy, &x, &w_shape}, pads, {false, false, true}, {layout, layout}, ""},
               reference("ConvGradWeight", {&dy, &x, &w_shape}, pads)[0], "onednn:conv_grad_weight");
  }
}

}  // namespace
}  // namespace tessera::cpu_test
