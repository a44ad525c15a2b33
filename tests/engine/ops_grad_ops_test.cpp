// Tests of engine/ops/grad_ops.cpp (ConvGradInput, ConvGradWeight, MaxPoolGrad, AveragePoolGrad,
// the loss gradients, LRNGrad) against hand-computed values, in f32 and f64; and of the training
// forms in engine/ops/nn_norm.cpp that autodiff relies on (BatchNormalization training_mode=1,
// Dropout's counter-based mask and DropoutGrad).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using Ints = std::vector<int64_t>;

Tensor shape_of(Ints v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor iota1(Shape shape) {  // 1, 2, 3, ... in f32
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i + 1));
  return t;
}
Tensor as_f64(const Tensor& t) {
  Tensor r(DType::kF64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.set(i, t.get(i));
  return r;
}

// Runs the op in f32 and again with every f32 input widened to f64; both must give `want`.
void expect_both(const std::string& op, const std::vector<Tensor>& in, const ir::Attributes& attrs,
                 const Shape& shape, const std::vector<double>& want) {
  SCOPED_TRACE(op);
  expect_values(run(op, in, attrs)[0], shape, want);
  std::vector<Tensor> wide;
  for (const Tensor& t : in) wide.push_back(t.dtype() == DType::kF32 ? as_f64(t) : t);
  const Tensor got = run(op, wide, attrs)[0];
  EXPECT_EQ(got.dtype(), DType::kF64);
  expect_values(got, shape, want, 1e-7);  // inputs were rounded to f32
}

// ---- ConvGradInput, ConvGradWeight ----

TEST(ConvGradInput, ScattersThroughTheTaps) {
  // W picks x[i][j] + x[i+1][j+1]: dY lands at its own position and one step down-right.
  expect_both("ConvGradInput", {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {1, 0, 0, 1}), shape_of({1, 1, 3, 3})},
              {}, {1, 1, 3, 3}, {1, 2, 0, 3, 5, 2, 0, 3, 4});
}

TEST(ConvGradInput, StridesAndPadsCountWindowOverlaps) {
  // 3x3 ones, pads 1, stride 2 on a 3x3 input: each input position counts the windows covering it.
  expect_both("ConvGradInput",
              {f32({1, 1, 2, 2}, {1, 1, 1, 1}), f32({1, 1, 3, 3}, std::vector<float>(9, 1.f)), shape_of({1, 1, 3, 3})},
              {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, {1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1});
}

TEST(ConvGradInput, Groups) {
  expect_both("ConvGradInput", {f32({1, 2, 1, 1}, {1, 2}), f32({2, 1, 1, 1}, {3, 5}), shape_of({1, 2, 1, 1})},
              {{"group", int64_t{2}}}, {1, 2, 1, 1}, {3, 10});
}

TEST(ConvGradInput, RejectsAnInconsistentWindow) {
  // A 3x3 input with a 2x2 kernel gives a 2x2 output, not 3x3.
  EXPECT_FALSE(runtime::run_single_op(registry(), "ConvGradInput",
                                      {f32({1, 1, 3, 3}, std::vector<float>(9, 1.f)), f32({1, 1, 2, 2}, {1, 0, 0, 1}),
                                       shape_of({1, 1, 3, 3})}));
}

TEST(ConvGradWeight, CorrelatesDyWithTheInput) {
  // dW[a][b] = sum_ij dY[i][j] * X[i+a][j+b] with X = 1..9 (3x3) and dY = 1..4 (2x2).
  expect_both("ConvGradWeight", {f32({1, 1, 2, 2}, {1, 2, 3, 4}), iota1({1, 1, 3, 3}), shape_of({1, 1, 2, 2})}, {},
              {1, 1, 2, 2}, {37, 47, 67, 77});
}

TEST(ConvGradWeight, SumsOverTheBatchAndKeepsGroupsApart) {
  // 1x1 filters, two groups of one channel: dW[m] = sum_n dY[n, m] * X[n, m].
  expect_both("ConvGradWeight", {f32({2, 2, 1, 1}, {1, 2, 3, 4}), f32({2, 2, 1, 1}, {5, 6, 7, 8}), shape_of({2, 1, 1, 1})},
              {{"group", int64_t{2}}}, {2, 1, 1, 1}, {1 * 5 + 3 * 7, 2 * 6 + 4 * 8});
}

TEST(ConvGrad, InferenceUsesTheShapeInput) {
  const ir::TensorType dy = ir::TensorType::of(DType::kF32, {2, 4, 3, 3});
  const ir::TensorType w = ir::TensorType::of(DType::kF32, {4, 3, 3, 3});
  const ir::TensorType s = ir::TensorType::of(DType::kI64, {4});
  auto t = runtime::infer_single_op(registry(), "ConvGradInput", {&dy, &w, &s});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].rank(), 4);  // the shape is not a constant here: dims unknown
  EXPECT_FALSE((*t)[0].dims[2].is_known());
}

// ---- MaxPoolGrad, AveragePoolGrad ----

TEST(MaxPoolGrad, GoesToTheFirstMaximum) {
  // Left window max 5 (position 1); right window all 2: the first one (position 2) gets it.
  expect_both("MaxPoolGrad", {f32({1, 1, 1, 2}, {10, 20}), f32({1, 1, 2, 4}, {1, 5, 2, 2, 3, 4, 2, 2})},
              {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, {1, 1, 2, 4}, {0, 10, 20, 0, 0, 0, 0, 0});
}

TEST(MaxPoolGrad, OverlappingWindowsAccumulate) {
  expect_both("MaxPoolGrad", {f32({1, 1, 1, 2}, {1, 1}), f32({1, 1, 1, 3}, {1, 3, 2})}, {{"kernel_shape", Ints{1, 2}}},
              {1, 1, 1, 3}, {0, 2, 0});
}

TEST(AveragePoolGrad, SharesOutOverTheWindow) {
  expect_both("AveragePoolGrad", {f32({1, 1, 2, 2}, {4, 8, 12, 16}), shape_of({1, 1, 3, 3})},
              {{"kernel_shape", Ints{2, 2}}}, {1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4});
}

TEST(AveragePoolGrad, CountIncludePad) {
  // Windows over columns [-1, 0] and [0, 1]; the first holds one real column.
  const std::vector<Tensor> in = {f32({1, 1, 1, 2}, {2, 4}), shape_of({1, 1, 1, 2})};
  ir::Attributes a{{"kernel_shape", Ints{1, 2}}, {"pads", Ints{0, 1, 0, 0}}};
  expect_both("AveragePoolGrad", in, a, {1, 1, 1, 2}, {4, 2});
  a.insert_or_assign("count_include_pad", int64_t{1});
  expect_both("AveragePoolGrad", in, a, {1, 1, 1, 2}, {3, 2});
}

// ---- loss gradients ----

TEST(SoftmaxCrossEntropyLossGrad, Reductions) {
  // Rows: softmax (0.5, 0.5) and (0.25, 0.75), labels 0 and 1.
  const Tensor scores = f32({2, 2}, {0, 0, 0, static_cast<float>(std::log(3.0))});
  const Tensor labels = Tensor::from_vector<int64_t>({2}, {0, 1});
  expect_both("SoftmaxCrossEntropyLossGrad", {Tensor::scalar<float>(2), scores, labels}, {{"reduction", "sum"}},
              {2, 2}, {-1, 1, 0.5, -0.5});
  expect_both("SoftmaxCrossEntropyLossGrad", {Tensor::scalar<float>(2), scores, labels}, {}, {2, 2},
              {-0.5, 0.5, 0.25, -0.25});
  expect_both("SoftmaxCrossEntropyLossGrad", {f32({2}, {1, 3}), scores, labels}, {{"reduction", "none"}}, {2, 2},
              {-0.5, 0.5, 0.75, -0.75});
  // ignore_index: the second row contributes nothing, the mean is over one position.
  expect_both("SoftmaxCrossEntropyLossGrad", {Tensor::scalar<float>(2), scores, labels}, {{"ignore_index", int64_t{1}}},
              {2, 2}, {-1, 1, 0, 0});
}

TEST(SoftmaxCrossEntropyLossGrad, WeightsScaleAndNormaliseTheMean) {
  // Weights (2, 1): row 0 weighs 2, row 1 weighs 1, mean divides by 3.
  const Tensor scores = f32({2, 2}, {0, 0, 0, 0});
  expect_both("SoftmaxCrossEntropyLossGrad",
              {Tensor::scalar<float>(3), scores, Tensor::from_vector<int64_t>({2}, {0, 1}), f32({2}, {2, 1})}, {}, {2, 2},
              {-1, 1, 0.5, -0.5});
}

TEST(NegativeLogLikelihoodLossGrad, OnlyTheTargetClass) {
  const Tensor input = f32({2, 3}, {0, 0, 0, 0, 0, 0});
  const Tensor target = Tensor::from_vector<int64_t>({2}, {2, 0});
  const Tensor w = f32({3}, {1, 2, 3});
  expect_both("NegativeLogLikelihoodLossGrad", {Tensor::scalar<float>(1), input, target, w}, {}, {2, 3},
              {0, 0, -0.75, -0.25, 0, 0});
  expect_both("NegativeLogLikelihoodLossGrad", {f32({2}, {1, 2}), input, target, w}, {{"reduction", "none"}}, {2, 3},
              {0, 0, -3, -2, 0, 0});
}

TEST(LRNGrad, SizeOneIsTheDerivativeOfXOverOnePlusXSquared) {
  // size 1, alpha 1, beta 1, bias 1: y = x / (1 + x^2), dy/dx = (1 - x^2) / (1 + x^2)^2.
  expect_both("LRNGrad", {f32({1, 1, 3}, {1, 1, 2}), f32({1, 1, 3}, {0, 2, 3})},
              {{"size", int64_t{1}}, {"alpha", 1.0}, {"beta", 1.0}, {"bias", 1.0}}, {1, 1, 3},
              {1, (1 - 4) / 25.0, 2 * (1 - 9) / 100.0});
}

// ---- training forms of nn_norm.cpp ----

TEST(BatchNormalizationTraining, BatchStatisticsAndRunningUpdate) {
  // One channel, values 1 2 3 6: mean 3, population variance 3.5.
  const Tensor x = f32({2, 1, 1, 2}, {1, 2, 3, 6});
  const std::vector<Tensor> out =
      run("BatchNormalization", {x, f32({1}, {2}), f32({1}, {1}), f32({1}, {1}), f32({1}, {2})},
          {{"training_mode", int64_t{1}}, {"epsilon", 0.0}, {"momentum", 0.9}}, 3);
  const double s = 2 / std::sqrt(3.5);
  expect_values(out[0], {2, 1, 1, 2}, {-2 * s + 1, -s + 1, 1, 3 * s + 1});
  expect_values(out[1], {1}, {0.9 * 1 + 0.1 * 3});
  expect_values(out[2], {1}, {0.9 * 2 + 0.1 * 3.5});
}

uint64_t mix(uint64_t z) {  // splitmix64, as documented in Dropout's op doc
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

TEST(DropoutTraining, MaskFollowsTheDocumentedHash) {
  const Tensor x = f32({64}, std::vector<float>(64, 1.f));
  const Tensor train = Tensor::from_bools({}, {true});
  const Tensor offset = Tensor::from_vector<int64_t>({}, {9});
  const std::vector<Tensor> out = run("Dropout", {x, Tensor::scalar<float>(0.4f), train, offset}, {{"seed", 3}}, 2);
  const uint64_t key = mix(3 ^ mix(9));
  int kept = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const bool keep = static_cast<double>(mix(key + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53 >= 0.4;
    kept += keep;
    EXPECT_EQ(out[1].get(i) != 0, keep) << i;
    EXPECT_NEAR(out[0].get(i), keep ? 1 / 0.6 : 0.0, 1e-6) << i;
  }
  EXPECT_GT(kept, 20);
  EXPECT_LT(kept, 60);
  // Another offset gives another mask; the same offset the same one.
  const Tensor other = Tensor::from_vector<int64_t>({}, {10});
  EXPECT_FALSE(run("Dropout", {x, Tensor::scalar<float>(0.4f), train, other}, {{"seed", 3}}, 2)[1].equals(out[1]));
  EXPECT_TRUE(run("Dropout", {x, Tensor::scalar<float>(0.4f), train, offset}, {{"seed", 3}}, 2)[1].equals(out[1]));
}

TEST(DropoutTraining, RowSlicesDrawTheWholeBatchsMask) {
  // A batch of 6 rows of 10, and rows [2, 5) of it with rng_rows (2, 3): the slice's mask is
  // rows 2-4 of the whole batch's mask (data parallel ranks and accumulated micro-batches).
  const Tensor train = Tensor::from_bools({}, {true});
  const Tensor offset = Tensor::from_vector<int64_t>({}, {5});
  const Tensor ratio = Tensor::scalar<float>(0.5f);
  const ir::Attributes seed{{"seed", 7}};
  auto refused = [&](const std::vector<Tensor>& in) { return !runtime::run_single_op(registry(), "Dropout", in, seed, 2).has_value(); };
  const Tensor whole = run("Dropout", {f32({6, 10}, std::vector<float>(60, 1.f)), ratio, train, offset,
                                       Tensor::from_vector<int64_t>({2}, {0, 6})}, seed, 2)[1];
  // (0, batch) is the whole batch's own mask, as without rng_rows.
  EXPECT_TRUE(whole.equals(run("Dropout", {f32({6, 10}, std::vector<float>(60, 1.f)), ratio, train, offset}, seed, 2)[1]));
  const Tensor part = f32({3, 10}, std::vector<float>(30, 1.f));
  const Tensor rows = Tensor::from_vector<int64_t>({2}, {2, 3});
  const std::vector<Tensor> out = run("Dropout", {part, ratio, train, offset, rows}, seed, 2);
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(out[1].get(i), whole.get(20 + i)) << i;
  // The slice without rng_rows draws rows 0-2's mask instead: the test can tell them apart.
  const Tensor plain = run("Dropout", {part, ratio, train, offset}, seed, 2)[1];
  int differ = 0;
  for (int64_t i = 0; i < 30; ++i) differ += plain.get(i) != out[1].get(i);
  EXPECT_GT(differ, 5);
  // DropoutGrad regenerates the slice's mask.
  const Tensor dx = run("DropoutGrad", {part, ratio, train, offset, rows}, seed)[0];
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(dx.get(i) != 0, out[1].get(i) != 0) << i;
  // Bad rows are refused by inference and by the kernel.
  EXPECT_TRUE(refused({part, ratio, train, offset, Tensor::from_vector<int64_t>({3}, {0, 1, 2})}));
  EXPECT_TRUE(refused({part, ratio, train, offset, Tensor::from_vector<int64_t>({2}, {-1, 3})}));
  EXPECT_TRUE(refused({part, ratio, train, offset, Tensor::from_vector<int64_t>({2}, {0, 0})}));
  EXPECT_TRUE(refused({part, ratio, train, offset, Tensor::from_vector<double>({2}, {0, 3})}));
}

TEST(DropoutGrad, AppliesTheForwardMask) {
  Tensor dy(DType::kF64, {50});
  for (int64_t i = 0; i < 50; ++i) dy.set(i, static_cast<double>(i) - 20);
  const Tensor train = Tensor::from_bools({}, {true});
  const Tensor offset = Tensor::from_vector<int64_t>({}, {4});
  const std::vector<Tensor> fwd = run("Dropout", {dy, Tensor::scalar<double>(0.25), train, offset}, {{"seed", 11}}, 2);
  const Tensor dx = run("DropoutGrad", {dy, Tensor::scalar<double>(0.25), train, offset}, {{"seed", 11}})[0];
  for (int64_t i = 0; i < 50; ++i) EXPECT_DOUBLE_EQ(dx.get(i), fwd[1].get(i) != 0 ? dy.get(i) / 0.75 : 0.0) << i;
  // Without training_mode it is the identity.
  EXPECT_TRUE(run("DropoutGrad", {dy})[0].equals(dy));
}

}  // namespace
}  // namespace tessera
