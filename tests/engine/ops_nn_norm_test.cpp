// Tests of engine/ops/nn_norm.cpp: BatchNormalization, LayerNormalization, Dropout.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

// ---- BatchNormalization ----

TEST(BatchNormalization, Inference) {
  const Tensor x = f32({1, 2, 1, 2}, {1, 3, 2, 4});  // channel 0: 1, 3; channel 1: 2, 4
  const std::vector<Tensor> in = {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {2, 3}),
                                  f32({2}, {1, 4})};
  // channel 0: (x - 2) / 1 * 1 + 0; channel 1: (x - 3) / 2 * 2 + 1
  expect_values(run("BatchNormalization", in, {{"epsilon", 0.0}})[0], {1, 2, 1, 2}, {-1, 1, 0, 2});
  // Default epsilon 1e-5: channel 0 becomes (x - 2) / sqrt(1 + 1e-5).
  const Tensor y = run("BatchNormalization", in)[0];
  EXPECT_NEAR(y.get(1), 1 / std::sqrt(1 + 1e-5), 1e-7);
  EXPECT_NE(y.get(1), 1.0);
}

TEST(BatchNormalization, RankTwoAndHalf) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  const std::vector<Tensor> in = {x, f32({2}, {2, 1}), f32({2}, {1, 0}), f32({2}, {2, 3}),
                                  f32({2}, {4, 1})};
  // column 0: (x - 2) / 2 * 2 + 1; column 1: (x - 3) / 1
  expect_values(run("BatchNormalization", in, {{"epsilon", 0.0}})[0], {2, 2}, {0, -1, 2, 1});
  std::vector<Tensor> half = in;
  half[0] = x.cast(DType::kF16);
  const Tensor y = run("BatchNormalization", half, {{"epsilon", 0.0}})[0];
  EXPECT_EQ(y.dtype(), DType::kF16);
  expect_values(y, {2, 2}, {0, -1, 2, 1});
}

TEST(BatchNormalization, ErrorsAndInference) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(4), Dim::known(4)});
  const TensorType c = TensorType::of(DType::kF32, {3});
  const TensorType bad = TensorType::of(DType::kF32, {4});
  auto t = runtime::infer_single_op(registry(), "BatchNormalization", {&x, &c, &c, &c, &c});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 3, 4, 4]");
  t = runtime::infer_single_op(registry(), "BatchNormalization", {&x, &c, &c, &bad, &c});
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("input_mean"), std::string::npos) << t.error().message;
  // Running statistics outputs need training mode (tested in ops_grad_ops_test).
  EXPECT_FALSE(
      runtime::infer_single_op(registry(), "BatchNormalization", {&x, &c, &c, &c, &c}, {}, 3));
}

// ---- LayerNormalization ----

TEST(LayerNormalization, LastAxisWithStatistics) {
  const Tensor x = f32({2, 2}, {1, 3, 0, 4});  // rows: mean 2 var 1; mean 2 var 4
  const std::vector<Tensor> out =
      run("LayerNormalization", {x, f32({2}, {2, 1}), f32({2}, {0.5, 0})}, {{"epsilon", 0.0}}, 3);
  expect_values(out[0], {2, 2}, {-1.5, 1, -1.5, 1});
  EXPECT_EQ(out[1].dtype(), DType::kF32);
  expect_values(out[1], {2, 1}, {2, 2});
  expect_values(out[2], {2, 1}, {1, 0.5});
}

TEST(LayerNormalization, AxisOne) {
  const Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 0, 0, 0, 4});
  const Tensor scale = f32({2, 2}, {1, 1, 1, 1});
  const std::vector<Tensor> out =
      run("LayerNormalization", {x, scale}, {{"axis", 1}, {"epsilon", 0.0}}, 2);
  const double a = 1 / std::sqrt(1.25), b = 1 / std::sqrt(3.0);  // mean 2.5 var 1.25; mean 1 var 3
  expect_values(out[0], {2, 2, 2}, {-1.5 * a, -0.5 * a, 0.5 * a, 1.5 * a, -b, -b, -b, 3 * b});
  expect_values(out[1], {2, 1, 1}, {2.5, 1});
  // A scale that broadcasts over the normalised axes: [2] against [2, 2].
  const Tensor y =
      run("LayerNormalization", {x, f32({2}, {2, 0})}, {{"axis", -2}, {"epsilon", 0.0}})[0];
  expect_values(y, {2, 2, 2}, {-3 * a, 0, a, 0, -2 * b, 0, -2 * b, 0});
}

TEST(LayerNormalization, Inference) {
  const TensorType x(DType::kF16, {Dim::named("N"), Dim::named("T"), Dim::known(8)});
  const TensorType s = TensorType::of(DType::kF16, {8});
  auto t = runtime::infer_single_op(registry(), "LayerNormalization", {&x, &s, &s}, {}, 3);
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f16[N, T, 8]");
  EXPECT_EQ((*t)[1].to_string(), "f32[N, T, 1]");
  EXPECT_EQ((*t)[2].to_string(), "f32[N, T, 1]");
  const TensorType bad = TensorType::of(DType::kF16, {4});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "LayerNormalization", {&x, &bad}));
  EXPECT_FALSE(runtime::infer_single_op(registry(), "LayerNormalization", {&x, &s}, {{"axis", 3}}));
  EXPECT_FALSE(
      runtime::infer_single_op(registry(), "LayerNormalization", {&x, &s}, {{"stash_type", 7}}));
}

TEST(LayerNormalization, HalfInput) {
  const Tensor x = f32({1, 2}, {1, 3});
  const std::vector<Tensor> out =
      run("LayerNormalization", {x.cast(DType::kF16), f32({2}, {1, 1}).cast(DType::kF16)},
          {{"epsilon", 0.0}}, 2);
  EXPECT_EQ(out[0].dtype(), DType::kF16);
  expect_values(out[0], {1, 2}, {-1, 1});
  EXPECT_EQ(out[1].dtype(), DType::kF32);
  expect_values(out[1], {1, 1}, {2});
}

// ---- Dropout ----

TEST(Dropout, InferenceIsIdentity) {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  std::vector<Tensor> out = run("Dropout", {x}, {}, 2);
  expect_values(out[0], {2, 2}, {1, -2, 3, 4});
  ASSERT_EQ(out[1].dtype(), DType::kBool);
  expect_values(out[1], {2, 2}, {1, 1, 1, 1});
  // An explicit false training_mode and a ratio change nothing.
  out = run("Dropout", {x, Tensor::scalar<float>(0.9f), Tensor::from_bools({}, {false})}, {}, 2);
  expect_values(out[0], {2, 2}, {1, -2, 3, 4});
  expect_values(out[1], {2, 2}, {1, 1, 1, 1});
}

TEST(Dropout, TrainingIsSeededAndScaled) {
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 13) + 1;
  const Tensor x = f32({10, 100}, v);
  const std::vector<Tensor> in = {x, Tensor::scalar<float>(0.25f), Tensor::from_bools({}, {true})};
  const std::vector<Tensor> a = run("Dropout", in, {{"seed", 42}}, 2);
  const std::vector<Tensor> b = run("Dropout", in, {{"seed", 42}}, 2);
  const std::vector<Tensor> c = run("Dropout", in, {{"seed", 7}}, 2);
  ASSERT_EQ(a[1].dtype(), DType::kBool);
  EXPECT_TRUE(a[0].equals(b[0]));
  EXPECT_TRUE(a[1].equals(b[1]));
  EXPECT_FALSE(a[1].equals(c[1]));
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = a[1].get(i) != 0;
    kept += keep;
    EXPECT_NEAR(a[0].get(i), keep ? x.get(i) / 0.75 : 0.0, 1e-5) << i;
  }
  EXPECT_GT(kept, 680);  // about 750 of 1000
  EXPECT_LT(kept, 820);
  // Ratio 0 keeps everything even in training mode; ratio 1 is rejected.
  const std::vector<Tensor> z =
      run("Dropout", {x, Tensor::scalar<float>(0.f), Tensor::from_bools({}, {true})}, {}, 2);
  EXPECT_TRUE(z[0].equals(x));
  EXPECT_FALSE(runtime::run_single_op(
      registry(), "Dropout", {x, Tensor::scalar<float>(1.f), Tensor::from_bools({}, {true})}));
}

TEST(Dropout, InferenceTypes) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(4)});
  const TensorType r = TensorType::of(DType::kF32, {});
  const TensorType m = TensorType::of(DType::kF32, {});
  auto t = runtime::infer_single_op(registry(), "Dropout", {&x, &r}, {}, 2);
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 4]");
  EXPECT_EQ((*t)[1].to_string(), "bool[N, 4]");
  EXPECT_FALSE(
      runtime::infer_single_op(registry(), "Dropout", {&x, &r, &m}));  // training_mode not bool
  const TensorType vec = TensorType::of(DType::kF32, {3});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "Dropout", {&x, &vec}));  // ratio not a scalar
}

}  // namespace
}  // namespace tessera
