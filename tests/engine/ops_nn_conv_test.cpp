// Tests of engine/ops/nn_conv.cpp: Conv, MaxPool, AveragePool, GlobalAveragePool.
#include <gtest/gtest.h>

#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

// 1, 2, ..., n as an f32 tensor of the given shape.
Tensor iota(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return f32(std::move(shape), v);
}

std::string infer_one(const std::string& op, const std::vector<const TensorType*>& in,
                      ir::Attributes attrs = {}) {
  auto t = runtime::infer_single_op(registry(), op, in, std::move(attrs));
  return t ? (*t)[0].to_string() : "error: " + t.error().message;
}

using Ints = std::vector<int64_t>;

// ---- Conv ----

TEST(Conv, Basic2D) {
  const Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, 1});  // x[i][j] + x[i+1][j+1]
  expect_values(run("Conv", {iota({1, 1, 3, 3}), w})[0], {1, 1, 2, 2}, {6, 8, 12, 14});
}

TEST(Conv, PaddingAndStride) {
  const Tensor w = f32({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  const ir::Attributes attrs{{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}};
  expect_values(run("Conv", {iota({1, 1, 3, 3}), w}, attrs)[0], {1, 1, 2, 2}, {12, 16, 24, 28});
  // Asymmetric pads: one row on top only.
  const ir::Attributes top{{"pads", Ints{1, 0, 0, 0}}};
  const Tensor w2 = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_values(run("Conv", {iota({1, 1, 3, 3}), w2}, top)[0], {1, 1, 3, 2},
                {3, 5, 12, 16, 24, 28});
}

TEST(Conv, Dilation) {
  const Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_values(run("Conv", {iota({1, 1, 4, 4}), w}, {{"dilations", Ints{2, 2}}})[0], {1, 1, 2, 2},
                {24, 28, 40, 44});
}

TEST(Conv, GroupsAndBias) {
  const Tensor x = iota({1, 2, 2, 2});  // channel 0: 1..4, channel 1: 5..8
  const Tensor w = f32({2, 1, 1, 1}, {2, 3});
  const Tensor b = f32({2}, {1, -1});
  expect_values(run("Conv", {x, w, b}, {{"group", 2}})[0], {1, 2, 2, 2},
                {3, 5, 7, 9, 14, 17, 20, 23});
  // Without groups a filter sums over both channels.
  expect_values(run("Conv", {x, f32({1, 2, 1, 1}, {1, 10})})[0], {1, 1, 2, 2}, {51, 62, 73, 84});
}

TEST(Conv, AutoPadSame) {
  const Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_values(run("Conv", {iota({1, 1, 3, 3}), w}, {{"auto_pad", "SAME_UPPER"}})[0], {1, 1, 3, 3},
                {12, 16, 9, 24, 28, 15, 15, 17, 9});
  expect_values(run("Conv", {iota({1, 1, 3, 3}), w}, {{"auto_pad", "SAME_LOWER"}})[0], {1, 1, 3, 3},
                {1, 3, 5, 5, 12, 16, 11, 24, 28});
  expect_values(run("Conv", {iota({1, 1, 3, 3}), w}, {{"auto_pad", "VALID"}})[0], {1, 1, 2, 2},
                {12, 16, 24, 28});
}

TEST(Conv, OneD) {
  const Tensor w = f32({1, 1, 2}, {1, -1});
  expect_values(run("Conv", {iota({1, 1, 5}), w}, {{"strides", Ints{2}}})[0], {1, 1, 2}, {-1, -1});
}

// Batch 2, 4 channels in 2 groups, 4 filters, stride (2, 1), pads, dilation (1, 2), non-square:
// against a naive loop written independently here.
TEST(Conv, MatchesNaiveLoop) {
  const int64_t n_b = 2, c = 4, h = 5, wd = 6, m = 4, g = 2, kh = 2, kw = 3;
  const int64_t sh = 2, sw = 1, dh = 1, dw = 2, pt = 1, pl = 2, pb = 0, pr = 1;
  std::vector<float> xv(n_b * c * h * wd), wv(m * (c / g) * kh * kw), bv = {0.5f, -1.f, 2.f, 0.f};
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 7) % 11) - 5;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>((i * 5) % 7) - 3;
  const ir::Attributes attrs{{"group", g},
                             {"strides", Ints{sh, sw}},
                             {"dilations", Ints{dh, dw}},
                             {"pads", Ints{pt, pl, pb, pr}}};
  const Tensor y =
      run("Conv", {f32({n_b, c, h, wd}, xv), f32({m, c / g, kh, kw}, wv), f32({m}, bv)}, attrs)[0];
  const int64_t oh = (h + pt + pb - dh * (kh - 1) - 1) / sh + 1,
                ow = (wd + pl + pr - dw * (kw - 1) - 1) / sw + 1;
  ASSERT_EQ(y.shape(), (Shape{n_b, m, oh, ow}));
  for (int64_t n = 0; n < n_b; ++n)
    for (int64_t f = 0; f < m; ++f)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double want = bv[f];
          for (int64_t cc = 0; cc < c / g; ++cc)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                const int64_t r = i * sh - pt + a * dh, s = j * sw - pl + b * dw;
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                const int64_t ch = (f / (m / g)) * (c / g) + cc;
                want += xv[((n * c + ch) * h + r) * wd + s] *
                        wv[((f * (c / g) + cc) * kh + a) * kw + b];
              }
          EXPECT_NEAR(y.get(((n * m + f) * oh + i) * ow + j), want, 1e-4) << n << f << i << j;
        }
}

TEST(Conv, HalfPrecision) {
  const Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor y = run("Conv", {iota({1, 1, 3, 3}).cast(DType::kF16), w.cast(DType::kF16)})[0];
  EXPECT_EQ(y.dtype(), DType::kF16);
  expect_values(y, {1, 1, 2, 2}, {6, 8, 12, 14});
}

TEST(Conv, InferSymbolicBatch) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(1), Dim::known(28), Dim::known(28)});
  const TensorType w = TensorType::of(DType::kF32, {6, 1, 5, 5});
  const TensorType b = TensorType::of(DType::kF32, {6});
  EXPECT_EQ(infer_one("Conv", {&x, &w, &b}), "f32[N, 6, 24, 24]");
  EXPECT_EQ(infer_one("Conv", {&x, &w}, {{"auto_pad", "SAME_UPPER"}, {"strides", Ints{2, 2}}}),
            "f32[N, 6, 14, 14]");
  const TensorType xs(DType::kF32,
                      {Dim::named("N"), Dim::known(1), Dim::named("H"), Dim::known(28)});
  EXPECT_EQ(infer_one("Conv", {&xs, &w}), "f32[N, 6, ?, 24]");
  EXPECT_EQ(infer_one("Conv", {&x, &w}, {{"kernel_shape", Ints{5, 5}}, {"pads", Ints{2, 2, 2, 2}}}),
            "f32[N, 6, 28, 28]");
}

TEST(Conv, ShapeErrors) {
  const TensorType x = TensorType::of(DType::kF32, {1, 3, 8, 8});
  const TensorType w = TensorType::of(DType::kF32, {6, 1, 5, 5});
  EXPECT_NE(infer_one("Conv", {&x, &w}, {{"kernel_shape", Ints{3, 3}}}).find("error"),
            std::string::npos);
  const TensorType wbig = TensorType::of(DType::kF32, {6, 3, 9, 9});
  EXPECT_NE(infer_one("Conv", {&x, &wbig}).find("does not fit"), std::string::npos);
  const TensorType b = TensorType::of(DType::kF32, {5});
  const TensorType w3 = TensorType::of(DType::kF32, {6, 3, 5, 5});
  EXPECT_NE(infer_one("Conv", {&x, &w3, &b}).find("'B'"), std::string::npos);
  EXPECT_NE(infer_one("Conv", {&x, &w3}, {{"strides", Ints{1}}}).find("strides"),
            std::string::npos);
  EXPECT_NE(infer_one("Conv", {&x, &w3}, {{"auto_pad", "SAME"}}).find("auto_pad"),
            std::string::npos);
  EXPECT_EQ(infer_one("Conv", {&x, &w3}), "f32[1, 6, 4, 4]");
}

TEST(Conv, ChannelMismatchNamesNode) {
  ir::Graph g("t");
  const ir::ValueId x = g.add_input(
      "x", TensorType(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(8), Dim::known(8)}));
  const ir::ValueId w = g.add_param("w", Tensor(DType::kF32, {6, 1, 5, 5}));
  const ir::NodeId n = g.add_node("Conv", {x, w}, 1, "conv1");
  g.set_outputs({g.node(n).outputs[0]});
  Status st = ops::infer_types(g, registry());
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, n);
  EXPECT_NE(st.error().message.find("conv1"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("channels"), std::string::npos) << st.error().message;
}

// ---- MaxPool ----

TEST(MaxPool, StrideAndPads) {
  const ir::Attributes k2s2{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  expect_values(run("MaxPool", {iota({1, 1, 4, 4})}, k2s2)[0], {1, 1, 2, 2}, {6, 8, 14, 16});
  ir::Attributes padded = k2s2;
  padded.insert({"pads", Ints{1, 1, 1, 1}});
  expect_values(run("MaxPool", {iota({1, 1, 3, 3})}, padded)[0], {1, 1, 2, 2}, {1, 3, 7, 9});
  // Padding never wins, even over negative values.
  const Tensor neg = f32({1, 1, 1, 2}, {-5, -7});
  expect_values(
      run("MaxPool", {neg}, {{"kernel_shape", Ints{1, 2}}, {"pads", Ints{0, 1, 0, 1}}})[0],
      {1, 1, 1, 3}, {-5, -5, -7});
}

TEST(MaxPool, CeilModeAndDilation) {
  const Tensor x = f32({1, 1, 1, 5}, {1, 5, 2, 4, 3});
  const ir::Attributes base{{"kernel_shape", Ints{1, 2}}, {"strides", Ints{1, 2}}};
  expect_values(run("MaxPool", {x}, base)[0], {1, 1, 1, 2}, {5, 4});
  ir::Attributes ceil = base;
  ceil.insert({"ceil_mode", 1});
  expect_values(run("MaxPool", {x}, ceil)[0], {1, 1, 1, 3}, {5, 4, 3});
  // A window that would start in the trailing pad is dropped: 3 wide, pads 1 and 1 -> 2 windows.
  const TensorType t = TensorType::of(DType::kF32, {1, 1, 1, 3});
  EXPECT_EQ(infer_one("MaxPool", {&t},
                      {{"kernel_shape", Ints{1, 2}},
                       {"strides", Ints{1, 2}},
                       {"pads", Ints{0, 1, 0, 1}},
                       {"ceil_mode", 1}}),
            "f32[1, 1, 1, 2]");
  expect_values(run("MaxPool", {x}, {{"kernel_shape", Ints{1, 2}}, {"dilations", Ints{1, 2}}})[0],
                {1, 1, 1, 3}, {2, 5, 3});
  expect_values(
      run("MaxPool", {x},
          {{"kernel_shape", Ints{1, 2}}, {"strides", Ints{1, 2}}, {"auto_pad", "SAME_UPPER"}})[0],
      {1, 1, 1, 3}, {5, 4, 3});
}

TEST(MaxPool, Indices) {
  const Tensor x = f32({1, 2, 2, 2}, {1, 4, 3, 2, 5, 6, 8, 7});
  const ir::Attributes attrs{{"kernel_shape", Ints{2, 2}}};
  std::vector<Tensor> out = run("MaxPool", {x}, attrs, 2);
  expect_values(out[0], {1, 2, 1, 1}, {4, 8});
  ASSERT_EQ(out[1].dtype(), DType::kI64);
  expect_values(out[1], {1, 2, 1, 1}, {1, 6});
  ir::Attributes col = attrs;
  col.insert({"storage_order", 1});
  out = run("MaxPool", {x}, col, 2);
  expect_values(out[1], {1, 2, 1, 1}, {2, 5});
}

TEST(MaxPool, IntegerAndErrors) {
  const Tensor x = iota({1, 1, 2, 2}).cast(DType::kI8);
  const Tensor y = run("MaxPool", {x}, {{"kernel_shape", Ints{2, 2}}})[0];
  EXPECT_EQ(y.dtype(), DType::kI8);
  expect_values(y, {1, 1, 1, 1}, {4});
  const TensorType t = TensorType::of(DType::kF32, {1, 1, 4, 4});
  EXPECT_NE(infer_one("MaxPool", {&t}, {{"kernel_shape", Ints{2}}}).find("kernel_shape"),
            std::string::npos);
  EXPECT_NE(infer_one("MaxPool", {&t}, {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{2, 0, 0, 0}}})
                .find("pads"),
            std::string::npos);
  EXPECT_NE(infer_one("MaxPool", {&t}).find("kernel_shape"), std::string::npos);  // required
}

// ---- AveragePool ----

TEST(AveragePool, PadsWithAndWithoutCountIncludePad) {
  const ir::Attributes attrs{
      {"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_values(run("AveragePool", {iota({1, 1, 3, 3})}, attrs)[0], {1, 1, 2, 2}, {1, 2.5, 5.5, 7});
  ir::Attributes incl = attrs;
  incl.insert({"count_include_pad", 1});
  expect_values(run("AveragePool", {iota({1, 1, 3, 3})}, incl)[0], {1, 1, 2, 2},
                {0.25, 1.25, 2.75, 7});
}

TEST(AveragePool, CeilModeOverhangIsNotCounted) {
  const Tensor x = f32({1, 1, 1, 5}, {1, 5, 2, 4, 6});
  const ir::Attributes attrs{{"kernel_shape", Ints{1, 2}},
                             {"strides", Ints{1, 2}},
                             {"ceil_mode", 1},
                             {"count_include_pad", 1}};
  expect_values(run("AveragePool", {x}, attrs)[0], {1, 1, 1, 3}, {3, 3, 6});
  const TensorType t(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(32), Dim::known(32)});
  EXPECT_EQ(infer_one("AveragePool", {&t}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}),
            "f32[N, 3, 15, 15]");
  EXPECT_EQ(infer_one("AveragePool", {&t},
                      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", 1}}),
            "f32[N, 3, 16, 16]");
}

// ---- GlobalAveragePool ----

TEST(GlobalAveragePool, MeansPerChannel) {
  const Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 9});
  expect_values(run("GlobalAveragePool", {x})[0], {1, 2, 1, 1}, {2.5, 6.75});
  expect_values(run("GlobalAveragePool", {x.cast(DType::kF64)})[0], {1, 2, 1, 1}, {2.5, 6.75});
  const TensorType t(DType::kF32,
                     {Dim::named("N"), Dim::named("C"), Dim::named("H"), Dim::known(7)});
  EXPECT_EQ(infer_one("GlobalAveragePool", {&t}), "f32[N, C, 1, 1]");
  const TensorType v = TensorType::of(DType::kF32, {4});
  EXPECT_NE(infer_one("GlobalAveragePool", {&v}).find("error"), std::string::npos);
}

// Window arithmetic on values from a model is done in 128 bits (found by onnx_engine_fuzz: a
// stride of 2^63-1 overflowed int64, undefined behaviour; a ConvTranspose stride of 2^62 too).
TEST(Conv, HugeStridesAndPadsAreErrorsNotOverflow) {
  const TensorType x(DType::kF32, {Dim::known(1), Dim::known(1), Dim::known(8), Dim::known(8)});
  const TensorType w(DType::kF32, {Dim::known(1), Dim::known(1), Dim::known(3), Dim::known(3)});
  const int64_t big = INT64_MAX;
  EXPECT_EQ(infer_one("Conv", {&x, &w}, {{"strides", Ints{big, 1}}, {"auto_pad", std::string("SAME_UPPER")}}),
            "f32[1, 1, 1, 8]");
  EXPECT_NE(infer_one("Conv", {&x, &w}, {{"pads", Ints{int64_t{1} << 62, 0, int64_t{1} << 62, 0}}}).find("over the limit of 2^48"),
            std::string::npos);
  EXPECT_NE(infer_one("Conv", {&x, &w}, {{"dilations", Ints{big, 1}}}).find("does not fit the padded input"), std::string::npos);
  EXPECT_NE(infer_one("ConvTranspose", {&x, &w}, {{"strides", Ints{int64_t{1} << 62, 1}}}).find("over the limit of 2^48"),
            std::string::npos);
  EXPECT_NE(infer_one("ConvTranspose", {&x, &w}, {{"strides", Ints{big, big}}}).find("error"), std::string::npos);
}

// An output rank read from a shape input's length is bounded before anything is allocated (found
// by onnx_engine_fuzz: a Reshape whose shape input was declared i64[2^31] allocated 2^31 dims).
TEST(Limits, RankFromAShapeInputIsBounded) {
  const TensorType x(DType::kF32, {Dim::known(2), Dim::known(3)});
  const TensorType shape(DType::kI64, {Dim::known(int64_t{1} << 31)});
  for (const char* op : {"Reshape", "Expand", "Unsqueeze"})
    EXPECT_NE(infer_one(op, {&x, &shape}).find("over the limit of 64"), std::string::npos) << op;
  const TensorType fine(DType::kI64, {Dim::known(3)});
  EXPECT_EQ(infer_one("Reshape", {&x, &fine}), "f32[?, ?, ?]");
}

// An empty tensor's non-zero dims are bounded too: dims [2^62, 5, 0] once made Flatten's
// inference multiply 2^62 by 5 (found by onnx_engine_fuzz).
TEST(Limits, NonZeroDimsOfAnEmptyTensorAreBounded) {
  ir::Graph g("t");
  const ir::ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::known(int64_t{1} << 62), Dim::known(5), Dim::known(0)}));
  const ir::NodeId f = g.add_node("Flatten", {x}, 1, "f", {});
  g.set_outputs({g.node(f).outputs[0]});
  const Status st = ops::infer_types(g, registry());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("over 2^48"), std::string::npos) << st.error().message;
}

// A node whose sizes type fine but whose work is out of all proportion is refused by its FLOPs
// (ir::kMaxNodeFlops): a MaxPool window of 2^31 over 2^31 outputs, 2^62 comparisons, ran for ever.
TEST(Pool, WorkPastTheLimitIsRefusedWhenTyping) {
  const TensorType x(DType::kF32, {Dim::known(1), Dim::known(1), Dim::known(4)});
  const int64_t k = int64_t{1} << 31;
  auto t = runtime::infer_single_op(registry(), "MaxPool", {&x},
                                    {{"kernel_shape", Ints{k}}, {"pads", Ints{k - 1, k - 1}}});
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("FLOPs a run, over the limit of 2^50"), std::string::npos) << t.error().message;
  // The same window over a few outputs is fine.
  auto ok = runtime::infer_single_op(registry(), "MaxPool", {&x}, {{"kernel_shape", Ints{4}}, {"pads", Ints{3, 3}}});
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
}

}  // namespace
}  // namespace tessera
