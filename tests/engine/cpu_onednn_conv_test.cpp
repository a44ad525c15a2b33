// oneDNN Conv / FusedConv kernels against the reference Conv (and Add + activation for the fused
// form): odd shapes, strides, pads, auto_pad, groups, depthwise, dilations, blocked layouts.
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

struct ConvSpec {
  Shape x, w;
  ir::Attributes attrs;
  bool bias = true;
};

KernelResult check_conv(const ConvSpec& s, bool w_constant = true, std::string in_layout = "",
                        std::string out_layout = "") {
  const Tensor x = random_f32(s.x, 1), w = random_f32(s.w, 2), b = random_f32({s.w[0]}, 3);
  Case c{"Conv",      {&x, &w, s.bias ? &b : nullptr},
         s.attrs,     {false, w_constant, true},
         {in_layout}, out_layout};
  KernelResult got = run_cpu(c);
  EXPECT_EQ(got.impl, "onednn:conv");
  if (got.impl != "onednn:conv") return got;
  const std::vector<Tensor> want = reference("Conv", {&x, &w, s.bias ? &b : nullptr}, s.attrs);
  expect_close(got.outputs[0], want[0]);
  return got;
}

TEST(CpuConv, Basic3x3Pad1) {
  check_conv({{2, 3, 8, 8}, {8, 3, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}});
}

TEST(CpuConv, OddImageStride2NoBias) {
  check_conv({{1, 3, 7, 5},
              {5, 3, 3, 3},
              {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
              false});
}

TEST(CpuConv, AsymmetricPadsAndBatch3) {
  check_conv({{3, 4, 9, 6}, {6, 4, 2, 3}, {{"pads", std::vector<int64_t>{0, 1, 2, 0}}}});
}

TEST(CpuConv, Groups) {
  check_conv({{2, 6, 7, 7},
              {9, 2, 3, 3},
              {{"group", int64_t{3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}});
}

TEST(CpuConv, Depthwise) {
  check_conv({{1, 16, 10, 9},
              {16, 1, 3, 3},
              {{"group", int64_t{16}}, {"strides", std::vector<int64_t>{2, 1}}}});
}

TEST(CpuConv, Dilated) {
  check_conv({{1, 5, 11, 11}, {7, 5, 3, 3}, {{"dilations", std::vector<int64_t>{2, 2}}}});
}

TEST(CpuConv, SameUpperAndLower) {
  check_conv({{1, 3, 7, 6},
              {4, 3, 4, 3},
              {{"auto_pad", "SAME_UPPER"}, {"strides", std::vector<int64_t>{2, 2}}}});
  check_conv({{1, 3, 7, 6}, {4, 3, 4, 3}, {{"auto_pad", "SAME_LOWER"}}});
  check_conv({{1, 3, 7, 6}, {4, 3, 2, 2}, {{"auto_pad", "VALID"}}});
}

TEST(CpuConv, OneByOneAndConv1dAnd3d) {
  check_conv({{2, 32, 5, 5}, {16, 32, 1, 1}, {}});
  check_conv({{2, 4, 13}, {3, 4, 3}, {{"pads", std::vector<int64_t>{1, 2}}}});
  check_conv({{1, 2, 4, 5, 6}, {3, 2, 2, 2, 2}, {}});
}

// ConvTranspose (oneDNN deconvolution) against the reference: W is [C_in, C_out / group, k...].
void check_deconv(const ConvSpec& s, bool w_constant = true) {
  const Tensor x = random_f32(s.x, 4), w = random_f32(s.w, 5);
  const int64_t group = s.attrs.count("group") ? s.attrs.at("group").i() : 1;
  const Tensor b = random_f32({s.w[1] * group}, 6);
  const std::vector<const Tensor*> in = {&x, &w, s.bias ? &b : nullptr};
  KernelResult got = run_cpu({"ConvTranspose", in, s.attrs, {false, w_constant, true}, {}, ""});
  ASSERT_EQ(got.impl, "onednn:deconv");
  expect_close(got.outputs[0], reference("ConvTranspose", in, s.attrs)[0]);
}

TEST(CpuConvTranspose, StridesPadsGroupsDilationsRanks) {
  using I = std::vector<int64_t>;
  check_deconv({{1, 8, 5, 6}, {8, 4, 2, 2}, {{"strides", I{2, 2}}}});  // UNet's up-sampling
  check_deconv({{2, 3, 5, 4}, {3, 5, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}, {"output_padding", I{1, 0}}}},
               false);
  check_deconv({{1, 6, 4, 4}, {6, 2, 3, 3}, {{"group", int64_t{3}}, {"dilations", I{2, 1}}, {"pads", I{0, 1, 2, 0}}}, false});
  check_deconv({{2, 4, 9}, {4, 3, 4}, {{"strides", I{3}}}});
  check_deconv({{1, 2, 3, 4, 3}, {2, 3, 2, 2, 2}, {{"strides", I{2, 1, 2}}}});
  {  // channels-last in and out (the layout pass's choice between channels-last convolutions)
    const Tensor x = random_f32({1, 16, 5, 6}, 9), w = random_f32({16, 8, 2, 2}, 10);
    const ir::Attributes attrs{{"strides", I{2, 2}}};
    KernelResult got = run_cpu({"ConvTranspose", {&x, &w}, attrs, {false, true}, {"nhwc"}, "nhwc"});
    ASSERT_EQ(got.impl, "onednn:deconv");
    expect_close(got.outputs[0], reference("ConvTranspose", {&x, &w}, attrs)[0]);
  }
  // auto_pad and output_shape stay with the reference kernel.
  const Tensor x = random_f32({1, 2, 4, 4}, 7), w = random_f32({2, 2, 3, 3}, 8);
  EXPECT_EQ(run_cpu({"ConvTranspose", {&x, &w}, {{"auto_pad", "SAME_UPPER"}, {"strides", I{2, 2}}}, {false, true}, {}, ""}).impl,
            "");
}

// 3x3 stride-1 convolutions with channels in multiples of 16 and at least 48 output tiles of 4x4
// run oneDNN's Winograd F(4x4, 3x3) on AVX-512 (winograd_candidate): prepacked constant weights
// (forward_inference) and weights that change every run (forward_training), plain and
// channels-last, against the reference within the usual tolerance; below 48 tiles, direct.
TEST(CpuConv, WinogradWhereItPays) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const ir::Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  for (bool w_constant : {true, false})
    for (const char* layout : {"", "nhwc"}) {
      SCOPED_TRACE(std::string(w_constant ? "constant" : "changing") + " weights, layout '" + layout + "'");
      KernelResult r = check_conv({{3, 16, 15, 17}, {32, 16, 3, 3}, pad1}, w_constant, layout, layout);
      if (avx512) EXPECT_NE(r.detail.find("wino"), std::string::npos) << r.detail;
    }
  // 1 x 2 x 2 tiles: direct.
  KernelResult small = check_conv({{1, 16, 8, 8}, {16, 16, 3, 3}, pad1});
  EXPECT_EQ(small.detail.find("wino"), std::string::npos) << small.detail;
  // Stride 2 never takes it.
  KernelResult strided = check_conv({{8, 16, 31, 31}, {16, 16, 3, 3}, {{"strides", std::vector<int64_t>{2, 2}}}});
  EXPECT_EQ(strided.detail.find("wino"), std::string::npos) << strided.detail;
}

TEST(CpuConv, NonConstantWeights) {
  check_conv({{2, 3, 8, 8}, {8, 3, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
             /*w_constant=*/false);
}

TEST(CpuConv, BlockedOutputThenReorderBack) {
  // Conv writes nChw16c; the Reorder kernel brings it back to plain.
  const Tensor x = random_f32({2, 3, 9, 7}, 4), w = random_f32({32, 3, 3, 3}, 5),
               b = random_f32({32}, 6);
  const ir::Attributes attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Case conv{"Conv", {&x, &w, &b}, attrs, {false, true, true}, {""}, "nChw16c"};
  KernelResult blocked = run_cpu(conv);  // unpacked by hand in the harness
  ASSERT_EQ(blocked.impl, "onednn:conv");
  const std::vector<Tensor> want = reference("Conv", {&x, &w, &b}, attrs);
  expect_close(blocked.outputs[0], want[0]);
  // The same bytes through the Reorder kernel: in nChw16c, out plain.
  Case back{"Reorder", {&blocked.outputs[0]}, {{"to", ""}}, {false}, {"nChw16c"}, ""};
  KernelResult plain = run_cpu(back);
  ASSERT_EQ(plain.impl, "onednn:reorder");
  expect_close(plain.outputs[0], want[0]);
  // The hand unpacking and the Reorder kernel agree exactly.
  EXPECT_TRUE(plain.outputs[0].equals(blocked.outputs[0]));
}

TEST(CpuConv, BlockedInputAndOutput) {
  check_conv({{1, 16, 6, 6}, {8, 16, 3, 3}, {}}, true, "nChw16c", "nChw8c");
  check_conv({{2, 8, 5, 7}, {24, 8, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}}, true,
             "nChw8c", "nChw8c");
  check_conv({{2, 32, 5, 7}, {16, 32, 1, 1}, {}}, true, "nChw16c", "");
}

// ---- FusedConv --------------------------------------------------------------------------------

Tensor activate(const Tensor& y, const std::string& act, double alpha, double beta) {
  if (act.empty()) return y;
  if (act == "Clip") {
    const Tensor lo = Tensor::scalar<float>(static_cast<float>(alpha)),
                 hi = Tensor::scalar<float>(static_cast<float>(beta));
    return reference("Clip", {&y, &lo, &hi})[0];
  }
  ir::Attributes a;
  if (act == "LeakyRelu" || act == "Swish" || act == "HardSigmoid") a.insert_or_assign("alpha", alpha);
  if (act == "HardSigmoid") a.insert_or_assign("beta", beta);
  if (act == "HardSwish" && !ops_registry().find("HardSwish")) {  // x * clamp(x / 6 + 0.5, 0, 1)
    Tensor out = y.clone();
    for (int64_t i = 0; i < out.numel(); ++i) {
      const float v = y.data<float>()[i];
      out.data<float>()[i] = v * std::min(1.f, std::max(0.f, v / 6.f + 0.5f));
    }
    return out;
  }
  return reference(act, {&y}, a)[0];
}

void check_fused_conv(const std::string& act, bool residual, std::string z_layout = "",
                      std::string out_layout = "") {
  SCOPED_TRACE("activation " + act + (residual ? " with Z" : ""));
  const Tensor x = random_f32({2, 8, 7, 5}, 7), w = random_f32({16, 8, 3, 3}, 8),
               b = random_f32({16}, 9);
  const double alpha = act == "Clip" ? -0.5 : 0.2, beta = act == "Clip" ? 0.7 : act == "HardSigmoid" ? 0.4 : 0.0;
  const ir::Attributes conv_attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Tensor y = reference("Conv", {&x, &w, &b}, conv_attrs)[0];
  const Tensor z = random_f32(y.shape(), 10);
  ir::Attributes attrs = conv_attrs;
  attrs.insert_or_assign("activation", act);
  attrs.insert_or_assign("activation_alpha", alpha);
  attrs.insert_or_assign("activation_beta", beta);
  Case c{"FusedConv",
         {&x, &w, &b, residual ? &z : nullptr},
         attrs,
         {false, true, true, false},
         {"", "", "", z_layout},
         out_layout};
  KernelResult got = run_cpu(c);
  ASSERT_EQ(got.impl, "onednn:fused_conv");
  const Tensor sum = residual ? reference("Add", {&y, &z})[0] : y;
  expect_close(got.outputs[0], activate(sum, act, alpha, beta));
}

TEST(CpuFusedConv, EveryActivation) {
  for (const char* act :
       {"", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Gelu", "HardSwish", "HardSigmoid", "Swish"}) {
    check_fused_conv(act, false);
    check_fused_conv(act, true);
  }
}

TEST(CpuFusedConv, ResidualInBlockedLayouts) {
  check_fused_conv("Relu", true, "nChw16c", "nChw16c");
  check_fused_conv("Relu", true, "", "nChw8c");
  check_fused_conv("", true, "nChw8c", "");
}

// What oneDNN 2.6 indexes with 32-bit integers is never given to it: pads of 2^30 on a 1-D
// convolution made primitive creation divide by zero (SIGFPE), 2^31 made it spin for ever. The
// node goes to the reference kernel (here only the factories are asked).
TEST(CpuConv, SizesPastOneDnnsIndexingDecline) {
  const Tensor x = random_f32({1, 1, 4}, 40), w = random_f32({1, 1, 3}, 41);
  for (int64_t pad : {int64_t{1} << 25, int64_t{1} << 30}) {
    SCOPED_TRACE(pad);
    const ir::Attributes attrs{{"pads", std::vector<int64_t>{pad, 0}}};
    EXPECT_EQ(run_cpu({"Conv", {&x, &w}, attrs, {false, true}, {}, "", 1, "onednn:conv"}).impl, "");
  }
  // Modest pads still go to oneDNN.
  const ir::Attributes small{{"pads", std::vector<int64_t>{1, 1}}};
  KernelResult got = run_cpu({"Conv", {&x, &w}, small, {false, true}, {}, ""});
  ASSERT_EQ(got.impl, "onednn:conv");
  expect_close(got.outputs[0], reference("Conv", {&x, &w}, small)[0]);
}

TEST(CpuFusedConv, F64Declines) {
  const Tensor x = random_f32({1, 3, 5, 5}, 1).cast(DType::kF64),
               w = random_f32({4, 3, 3, 3}, 2).cast(DType::kF64);
  Case c{"FusedConv", {&x, &w}, {{"activation", "Relu"}}, {false, true}, {}, ""};
  EXPECT_EQ(run_cpu(c).impl, "");
}

TEST(CpuConv, NonF32Declines) {
  const Tensor x = random_f32({1, 3, 5, 5}, 1).cast(DType::kF64),
               w = random_f32({4, 3, 3, 3}, 2).cast(DType::kF64);
  Case c{"Conv", {&x, &w}, {}, {false, true}, {}, ""};
  EXPECT_EQ(run_cpu(c).impl, "");
}

}  // namespace
}  // namespace tessera::cpu_test
