// Tests of engine/ops/loss_ops.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. Expected
// values computed with NumPy.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

// log of probabilities [N=2, C=3, d=2].
Tensor log_probs() {
  const std::vector<float> p = {0.2f, 0.5f,  0.3f, 0.1f,  0.5f, 0.4f,
                                0.6f, 0.25f, 0.1f, 0.25f, 0.3f, 0.5f};
  std::vector<float> l;
  for (float v : p) l.push_back(std::log(v));
  return f32({2, 3, 2}, l);
}
Tensor targets() {
  return Tensor::from_vector<int64_t>({2, 2}, {0, 2, 1, 1});
}
Tensor class_weights() {
  return f32({3}, {1.f, 2.f, 0.5f});
}

TEST(NegativeLogLikelihoodLoss, ReductionsWithWeights) {
  expect_values(run("NegativeLogLikelihoodLoss", {log_probs(), targets(), class_weights()},
                    {{"reduction", "none"}})[0],
                {2, 2}, {1.6094379, 0.4581454, 4.6051702, 2.7725887});
  expect_values(run("NegativeLogLikelihoodLoss", {log_probs(), targets(), class_weights()},
                    {{"reduction", "sum"}})[0],
                {}, {9.4453422});
  // Mean divides by the sum of the applied weights (1 + 0.5 + 2 + 2), not the count.
  expect_values(run("NegativeLogLikelihoodLoss", {log_probs(), targets(), class_weights()})[0], {},
                {1.7173349});
}

TEST(NegativeLogLikelihoodLoss, IgnoreIndex) {
  expect_values(run("NegativeLogLikelihoodLoss", {log_probs(), targets(), class_weights()},
                    {{"ignore_index", 1}})[0],
                {}, {1.3783889});
  // Without weights, ignored positions leave the divisor.
  expect_values(
      run("NegativeLogLikelihoodLoss", {log_probs(), targets()}, {{"ignore_index", 2}})[0], {},
      {1.7661058});
  // An ignored target may lie outside [0, C).
  const Tensor t = Tensor::from_vector<int64_t>({2}, {-1, 0});
  expect_values(run("NegativeLogLikelihoodLoss", {f32({2, 2}, {-1, -2, -3, -4}), t},
                    {{"ignore_index", -1}, {"reduction", "none"}})[0],
                {2}, {0, 3});
}

TEST(NegativeLogLikelihoodLoss, TwoDInputAndErrors) {
  const Tensor x = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  expect_values(run("NegativeLogLikelihoodLoss", {x, Tensor::from_vector<int64_t>({2}, {2, 1})})[0],
                {}, {4});
  auto bad = runtime::run_single_op(registry(), "NegativeLogLikelihoodLoss",
                                    {x, Tensor::from_vector<int64_t>({2}, {3, 0})});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("out of range"), std::string::npos) << bad.error().message;
  auto red = runtime::run_single_op(registry(), "NegativeLogLikelihoodLoss",
                                    {x, Tensor::from_vector<int64_t>({2}, {0, 0})},
                                    {{"reduction", "avg"}});
  ASSERT_FALSE(red.has_value());
}

TEST(NegativeLogLikelihoodLoss, Inference) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(5), Dim::known(7)});
  const TensorType t(DType::kI64, {Dim::named("N"), Dim::known(7)});
  auto none = runtime::infer_single_op(registry(), "NegativeLogLikelihoodLoss", {&x, &t},
                                       {{"reduction", "none"}});
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_EQ((*none)[0].to_string(), "f32[N, 7]");
  auto mean = runtime::infer_single_op(registry(), "NegativeLogLikelihoodLoss", {&x, &t});
  ASSERT_TRUE(mean.has_value());
  EXPECT_EQ((*mean)[0].to_string(), "f32[]");
  const TensorType bad_t(DType::kI64, {Dim::named("N"), Dim::known(6)});
  EXPECT_FALSE(
      runtime::infer_single_op(registry(), "NegativeLogLikelihoodLoss", {&x, &bad_t}).has_value());
  const TensorType float_t(DType::kF32, {Dim::named("N"), Dim::known(7)});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "NegativeLogLikelihoodLoss", {&x, &float_t})
                   .has_value());
  const TensorType w(DType::kF32, {Dim::known(4)});
  EXPECT_FALSE(
      runtime::infer_single_op(registry(), "NegativeLogLikelihoodLoss", {&x, &t, &w}).has_value());
}

TEST(SoftmaxCrossEntropyLoss, MeanNoneAndLogProb) {
  const Tensor s = f32({2, 3}, {1, 2, 3, 0.5f, -1, 2});
  const Tensor lab = Tensor::from_vector<int64_t>({2}, {2, 0});
  expect_values(run("SoftmaxCrossEntropyLoss", {s, lab})[0], {}, {1.0744586});
  auto both = run("SoftmaxCrossEntropyLoss", {s, lab}, {{"reduction", "none"}}, 2);
  expect_values(both[0], {2}, {0.4076060, 1.7413113});
  expect_values(both[1], {2, 3},
                {-2.4076060, -1.4076060, -0.4076060, -1.7413113, -3.2413113, -0.2413113});
}

TEST(SoftmaxCrossEntropyLoss, WeightsAndIgnoreIndex) {
  const Tensor s = f32({2, 3}, {1, 2, 3, 0.5f, -1, 2});
  const Tensor lab = Tensor::from_vector<int64_t>({2}, {2, 0});
  expect_values(run("SoftmaxCrossEntropyLoss", {s, lab, f32({3}, {0.2f, 1, 3})})[0], {},
                {0.4909625});
  expect_values(
      run("SoftmaxCrossEntropyLoss", {s, lab}, {{"ignore_index", 0}, {"reduction", "sum"}})[0], {},
      {0.4076060});
}

TEST(SoftmaxCrossEntropyLoss, SoftmaxOverAxisOneOfNd) {
  // [N=1, C=2, d=2]: the softmax runs over C for each d.
  const Tensor s = f32({1, 2, 2}, {0, 1, 0, 3});
  const Tensor lab = Tensor::from_vector<int64_t>({1, 2}, {1, 0});
  // d0: log(2); d1: -(1 - log(e + e^3)) = log(1 + e^2) = 2.1269280
  expect_values(run("SoftmaxCrossEntropyLoss", {s, lab}, {{"reduction", "none"}})[0], {1, 2},
                {0.6931472, 2.1269280});
  const TensorType st(DType::kF32, {Dim::named("N"), Dim::known(2), Dim::known(2)});
  const TensorType lt(DType::kI64, {Dim::named("N"), Dim::known(2)});
  auto t = runtime::infer_single_op(registry(), "SoftmaxCrossEntropyLoss", {&st, &lt}, {}, 2);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f32[]");
  EXPECT_EQ((*t)[1].to_string(), "f32[N, 2, 2]");
}

}  // namespace
}  // namespace tessera
