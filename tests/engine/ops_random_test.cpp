// Tests for engine/ops/random.cpp: seeded draws repeat exactly, unseeded ones differ, and the
// samples follow their distributions (moments over many draws, with bounds far outside chance).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

double mean(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.get(i);
  return s / static_cast<double>(t.numel());
}

double stddev(const Tensor& t) {
  const double m = mean(t);
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += (t.get(i) - m) * (t.get(i) - m);
  return std::sqrt(s / static_cast<double>(t.numel()));
}

TEST(Random, SeededUniformRepeatsAndStaysInRange) {
  const ir::Attributes a = {{"shape", std::vector<int64_t>{100, 100}}, {"low", -2.0}, {"high", 3.0}, {"seed", 7.0}};
  const Tensor x = run("RandomUniform", {}, a)[0];
  ASSERT_EQ(x.dtype(), DType::kF32);
  ASSERT_EQ(x.shape(), (Shape{100, 100}));
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_TRUE(x.get(i) >= -2 && x.get(i) < 3) << i;
  EXPECT_NEAR(mean(x), 0.5, 0.05);                     // sd of the mean: 5 / sqrt(12 * 1e4) = 0.014
  EXPECT_NEAR(stddev(x), 5 / std::sqrt(12.0), 0.05);
  EXPECT_TRUE(run("RandomUniform", {}, a)[0].equals(x)) << "a seed gives the same values on every run";
  ir::Attributes other = a;
  other.insert_or_assign("seed", ir::Attribute(8.0));
  EXPECT_FALSE(run("RandomUniform", {}, other)[0].equals(x));
  ir::Attributes unseeded = a;
  unseeded.erase("seed");
  EXPECT_FALSE(run("RandomUniform", {}, unseeded)[0].equals(run("RandomUniform", {}, unseeded)[0]));
}

TEST(Random, NormalLikeTakesShapeAndType) {
  const Tensor like(DType::kF64, {200, 100});
  const Tensor x = run("RandomNormalLike", {like}, {{"mean", 0.5}, {"scale", 2.0}, {"seed", 1.0}})[0];
  ASSERT_EQ(x.dtype(), DType::kF64);
  ASSERT_EQ(x.shape(), (Shape{200, 100}));
  EXPECT_NEAR(mean(x), 0.5, 0.07);  // sd of the mean: 2 / sqrt(2e4) = 0.014
  EXPECT_NEAR(stddev(x), 2.0, 0.07);
  const Tensor h = run("RandomUniformLike", {like}, {{"dtype", "f16"}, {"seed", 1.0}})[0];
  EXPECT_EQ(h.dtype(), DType::kF16);
  auto bad = runtime::run_single_op(registry(), "RandomNormalLike", {like}, {{"dtype", "i32"}}, 1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("dtype i32 is not one"), std::string::npos) << bad.error().message;
}

TEST(Random, BernoulliAndMultinomial) {
  Tensor p(DType::kF32, {3, 4000});
  for (int64_t i = 0; i < 4000; ++i) p.set(4000 + i, 1), p.set(8000 + i, 0.3);
  const Tensor b = run("Bernoulli", {p}, {{"seed", 3.0}})[0];
  int64_t ones[3] = {0, 0, 0};
  for (int64_t i = 0; i < b.numel(); ++i) ones[i / 4000] += b.get(i) != 0;
  EXPECT_EQ(ones[0], 0);
  EXPECT_EQ(ones[1], 4000);
  EXPECT_NEAR(static_cast<double>(ones[2]) / 4000, 0.3, 0.04);  // sd: sqrt(0.21 / 4000) = 0.007
  auto bad = runtime::run_single_op(registry(), "Bernoulli", {f32({2}, {0.5f, 1.5f})}, {}, 1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("probability 1.5"), std::string::npos) << bad.error().message;

  // Row 0 all mass on class 1; row 1 probabilities 1/4, 3/4.
  const Tensor logits = f32({2, 2}, {-1e9f, 0, std::log(0.25f), std::log(0.75f)});
  const Tensor m = run("Multinomial", {logits}, {{"sample_size", int64_t{4000}}, {"dtype", "i64"}, {"seed", 5.0}})[0];
  ASSERT_EQ(m.dtype(), DType::kI64);
  ASSERT_EQ(m.shape(), (Shape{2, 4000}));
  int64_t class1 = 0;
  for (int64_t s = 0; s < 4000; ++s) {
    ASSERT_EQ(m.get(s), 1);
    class1 += m.get(4000 + s) == 1;
  }
  EXPECT_NEAR(static_cast<double>(class1) / 4000, 0.75, 0.04);
}

}  // namespace
}  // namespace tessera
