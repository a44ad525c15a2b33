// Tests of engine/ops/nn_more_norm.cpp: InstanceNormalization, LRN, MeanVarianceNormalization.
// Expected values computed with NumPy from the formulas of the ONNX spec.
#include <gtest/gtest.h>

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

TEST(InstanceNormalization, PerChannelScaleAndBias) {
  const Tensor x = f32({1, 2, 4}, {1, 2, 3, 4, 2, 2, 2, 6});
  expect_values(run("InstanceNormalization", {x, f32({2}, {1, 2}), f32({2}, {0, 1})})[0], {1, 2, 4},
                {-1.3416354, -0.4472118, 0.4472118, 1.3416354, -0.1546986, -0.1546986, -0.1546986,
                 4.4640958});
  const TensorType t(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(5)});
  const TensorType c3(DType::kF32, {Dim::known(3)});
  const TensorType c4(DType::kF32, {Dim::known(4)});
  EXPECT_EQ(infer_str("InstanceNormalization", {&t, &c3, &c3}), "f32[N, 3, 5]");
  EXPECT_NE(infer_str("InstanceNormalization", {&t, &c4, &c3}).find("error"), std::string::npos);
}

TEST(LRN, OddAndEvenWindows) {
  const Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  expect_values(run("LRN", {x}, {{"size", 3}, {"alpha", 0.1}})[0], {1, 4, 1},
                {0.8908199, 1.5006570, 1.8064385, 2.5388025});
  // size 2: the window is [c, c + 1] (floor((size-1)/2) before, ceil after).
  expect_values(run("LRN", {x}, {{"size", 2}, {"alpha", 0.1}})[0], {1, 4, 1},
                {0.8458970, 1.3737795, 1.6329932, 2.5739826});
  const TensorType t(DType::kF32, {Dim::known(4)});
  EXPECT_NE(infer_str("LRN", {&t}, {{"size", 3}}).find("error"), std::string::npos);
}

TEST(MeanVarianceNormalization, DefaultAndCustomAxes) {
  const Tensor x = f32({2, 1, 2, 2}, {1, 2, 3, 6, 0, 4, 4, 8});
  expect_values(
      run("MeanVarianceNormalization", {x})[0], {2, 1, 2, 2},
      {-1.0206207, -0.6123724, -0.2041241, 1.0206207, -1.4288690, 0.2041241, 0.2041241, 1.8371173});
  expect_values(run("MeanVarianceNormalization", {x}, {{"axes", Ints{2, 3}}})[0], {2, 1, 2, 2},
                {-1.0690450, -0.5345225, 0, 1.6035675, -1.4142136, 0, 0, 1.4142136});
  const TensorType t(DType::kF32, {Dim::known(2), Dim::known(3)});
  EXPECT_NE(infer_str("MeanVarianceNormalization", {&t}).find("error"), std::string::npos);
  EXPECT_EQ(infer_str("MeanVarianceNormalization", {&t}, {{"axes", Ints{-1}}}), "f32[2, 3]");
}

}  // namespace
}  // namespace tessera
