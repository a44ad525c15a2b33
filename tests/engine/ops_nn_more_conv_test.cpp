// Tests of engine/ops/nn_more_conv.cpp: ConvTranspose, GlobalMaxPool. Expected values from a
// direct NumPy scatter loop (each input element times the kernel, added at i * stride + t *
// dilation, then the pads cut off).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;
using Ints = std::vector<int64_t>;

std::string infer_str(const std::string& op, const std::vector<const TensorType*>& in,
                      ir::Attributes attrs = {}) {
  auto t = runtime::infer_single_op(registry(), op, in, std::move(attrs));
  return t ? (*t)[0].to_string() : "error: " + t.error().message;
}

TEST(ConvTranspose, OneDStridesPadsOutputPaddingDilation) {
  const Tensor x = f32({1, 1, 3}, {1, 2, 3});
  const Tensor w = f32({1, 1, 2}, {1, 2});
  expect_values(run("ConvTranspose", {x, w})[0], {1, 1, 4}, {1, 4, 7, 6});
  expect_values(run("ConvTranspose", {x, w}, {{"strides", Ints{2}}})[0], {1, 1, 6},
                {1, 2, 2, 4, 3, 6});
  expect_values(run("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"pads", Ints{1, 0}}})[0],
                {1, 1, 5}, {2, 2, 4, 3, 6});
  expect_values(
      run("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"output_padding", Ints{1}}})[0],
      {1, 1, 7}, {1, 2, 2, 4, 3, 6, 0});
  expect_values(run("ConvTranspose", {x, w}, {{"dilations", Ints{2}}})[0], {1, 1, 5},
                {1, 2, 5, 4, 6});
}

TEST(ConvTranspose, OutputShapeAndAutoPad) {
  const Tensor x = f32({1, 1, 3}, {1, 2, 3});
  const Tensor w = f32({1, 1, 2}, {1, 2});
  // output_shape 5 with stride 2: full 6, total pad 1 -> begin 1 (NOTSET puts the odd one first).
  expect_values(run("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"output_shape", Ints{5}}})[0],
                {1, 1, 5}, {2, 2, 4, 3, 6});
  // SAME_UPPER: output = 3 * 2 = 6 = full, no padding.
  expect_values(run("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"auto_pad", "SAME_UPPER"}})[0],
                {1, 1, 6}, {1, 2, 2, 4, 3, 6});
  // output_shape past the full output adds zeros at the end.
  expect_values(run("ConvTranspose", {x, w}, {{"output_shape", Ints{5}}})[0], {1, 1, 5},
                {1, 4, 7, 6, 0});
}

TEST(ConvTranspose, TwoDOutputChannelsGroupsAndBias) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_values(run("ConvTranspose", {x, w})[0], {1, 2, 3, 3},
                {1, 4, 4, 6, 20, 16, 9, 24, 16, 5, 16, 12, 22, 60, 40, 21, 52, 32});
  const Tensor xg = f32({1, 2, 2}, {1, 2, 3, 4});
  const Tensor wg = f32({2, 1, 2}, {1, -1, 2, 0.5f});
  expect_values(run("ConvTranspose", {xg, wg, f32({2}, {10, 20})}, {{"group", 2}})[0], {1, 2, 3},
                {11, 11, 8, 26, 29.5, 22});
}

TEST(ConvTranspose, Inference) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(4), Dim::known(5), Dim::known(5)});
  const TensorType w(DType::kF32, {Dim::known(4), Dim::known(3), Dim::known(3), Dim::known(3)});
  EXPECT_EQ(
      infer_str("ConvTranspose", {&x, &w}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}),
      "f32[N, 3, 9, 9]");
  EXPECT_EQ(infer_str("ConvTranspose", {&x, &w}, {{"group", 2}}), "f32[N, 6, 7, 7]");
  EXPECT_EQ(infer_str("ConvTranspose", {&x, &w},
                      {{"output_shape", Ints{12, 11}}, {"strides", Ints{2, 2}}}),
            "f32[N, 3, 12, 11]");
  const TensorType bad_w(DType::kF32, {Dim::known(5), Dim::known(3), Dim::known(3), Dim::known(3)});
  EXPECT_NE(infer_str("ConvTranspose", {&x, &bad_w}).find("channels"), std::string::npos);
  const TensorType b(DType::kF32, {Dim::known(4)});
  EXPECT_NE(infer_str("ConvTranspose", {&x, &w, &b}).find("error"), std::string::npos);
  EXPECT_NE(infer_str("ConvTranspose", {&x, &w}, {{"strides", Ints{2}}}).find("error"),
            std::string::npos);
}

TEST(GlobalMaxPool, MaxPerPlaneAndInference) {
  const Tensor x = f32({1, 2, 2, 2}, {1, -5, 3, 2, -1, -2, -3, -4});
  expect_values(run("GlobalMaxPool", {x})[0], {1, 2, 1, 1}, {3, -1});
  const Tensor n = f32({1, 1, 3}, {1, NAN, 2});
  EXPECT_TRUE(std::isnan(run("GlobalMaxPool", {n})[0].get(0)));
  const TensorType t(DType::kF32, {Dim::named("N"), Dim::known(8), Dim::known(7)});
  EXPECT_EQ(infer_str("GlobalMaxPool", {&t}), "f32[N, 8, 1]");
}

}  // namespace
}  // namespace tessera
