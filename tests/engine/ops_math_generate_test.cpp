// Tests for engine/ops/math_generate.cpp: Range, Size, ConstantOfShape and EyeLike against
// hand-computed values, with shapes known at compile time from constant inputs, empty results,
// dtypes and errors.
#include <gtest/gtest.h>

#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

// ---- Range ----

TEST(MathRange, FloatAndIntegerSequences) {
  expect_near(run1("Range", {f32({}, {3}), f32({}, {9}), f32({}, {3})}), DType::kF32, {2}, {3, 6});
  expect_tensor(run1("Range", {i32({}, {10}), i32({}, {4}), i32({}, {-3})}), DType::kI32, {2},
                {10, 7});
  expect_near(run1("Range", {f64({}, {0}), f64({}, {1}), f64({}, {0.3})}), DType::kF64, {4},
              {0, 0.3, 0.6, 0.9}, 1e-12);
  expect_tensor(run1("Range", {i64({}, {-5}), i64({}, {5}), i64({}, {4})}), DType::kI64, {3},
                {-5, -1, 3});
}

TEST(MathRange, EmptyWhenTheStepPointsAway) {
  expect_tensor(run1("Range", {i64({}, {5}), i64({}, {0}), i64({}, {1})}), DType::kI64, {0}, {});
  expect_tensor(run1("Range", {i32({}, {1}), i32({}, {1}), i32({}, {1})}), DType::kI32, {0}, {});
}

TEST(MathRange, Errors) {
  EXPECT_NE(fail("Range", {i32({}, {0}), i32({}, {5}), i32({}, {0})}).find("delta"),
            std::string::npos);
  fail("Range", {f32({}, {0}), f32({}, {INFINITY}), f32({}, {1})});
  expect_infer_error(
      infer("Range", {tt(DType::kI32, {}), tt(DType::kI64, {}), tt(DType::kI32, {})}),
      "element type");
  expect_infer_error(
      infer("Range", {tt(DType::kI32, {2}), tt(DType::kI32, {}), tt(DType::kI32, {})}), "scalar");
  expect_infer_error(infer("Range", {tt(DType::kU8, {}), tt(DType::kU8, {}), tt(DType::kU8, {})}),
                     "allowed");
}

TEST(MathRange, LengthIsKnownFromConstants) {
  const Tensor s = i64({}, {1}), l = i64({}, {10}), d = i64({}, {2});
  const TensorType sc = tt(DType::kI64, {});
  auto t = infer("Range", {sc, sc, sc}, {}, 1, {&s, &l, &d});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "i64[5]");
  t = infer("Range", {sc, sc, sc}, {}, 1, {&s, nullptr, &d});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "i64[?]");
}

// ---- Size ----

TEST(MathSize, CountsElements) {
  expect_tensor(run1("Size", {f32({3, 4, 5}, std::vector<float>(60, 1.f))}), DType::kI64, {}, {60});
  expect_tensor(run1("Size", {bools({0, 3}, {})}), DType::kI64, {}, {0});
  expect_tensor(run1("Size", {i8({}, {1})}), DType::kI64, {}, {1});
  auto t = infer("Size", {TensorType::unranked(DType::kF16)});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "i64[]");
}

// ---- ConstantOfShape ----

TEST(MathConstantOfShape, FillsWithTheValue) {
  expect_tensor(run1("ConstantOfShape", {i64({3}, {2, 1, 2})}, {{"value", f32({1}, {1})}}),
                DType::kF32, {2, 1, 2}, {1, 1, 1, 1});
  expect_tensor(run1("ConstantOfShape", {i64({2}, {2, 3})}, {{"value", i32({1}, {-7})}}),
                DType::kI32, {2, 3}, {-7, -7, -7, -7, -7, -7});
  expect_tensor(run1("ConstantOfShape", {i64({2}, {1, 2})}), DType::kF32, {1, 2}, {0, 0});
  expect_tensor(run1("ConstantOfShape", {i64({1}, {0})}, {{"value", i32({1}, {5})}}), DType::kI32,
                {0}, {});
  expect_tensor(run1("ConstantOfShape", {i64({0}, {})}, {{"value", bools({1}, {true})}}),
                DType::kBool, {}, {1});
  const Tensor big = run1("ConstantOfShape", {i64({1}, {2})}, {{"value", i64({1}, {INT64_MAX})}});
  ASSERT_EQ(big.dtype(), DType::kI64);
  EXPECT_EQ(big.data<int64_t>()[1], INT64_MAX);
}

TEST(MathConstantOfShape, ShapeFromAConstantInput) {
  const Tensor shape = i64({2}, {4, 5});
  auto t =
      infer("ConstantOfShape", {tt(DType::kI64, {2})}, {{"value", f64({1}, {2})}}, 1, {&shape});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f64[4, 5]");
  t = infer("ConstantOfShape", {tt(DType::kI64, {3})});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "f32[?, ?, ?]");
  t = infer("ConstantOfShape", {tt(DType::kI64, {-1})});
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE((*t)[0].rank_known);
}

TEST(MathConstantOfShape, Errors) {
  EXPECT_NE(fail("ConstantOfShape", {i64({2}, {2, -1})}).find("negative"), std::string::npos);
  fail("ConstantOfShape", {i64({1}, {2})}, {{"value", f32({2}, {1, 2})}});
  expect_infer_error(infer("ConstantOfShape", {tt(DType::kI32, {2})}), "1-D i64");
  expect_infer_error(infer("ConstantOfShape", {tt(DType::kI64, {2, 2})}), "1-D i64");
}

// ---- EyeLike ----

TEST(MathEyeLike, DiagonalsAndTypes) {
  expect_tensor(
      run1("EyeLike", {i32({4, 5}, std::vector<int32_t>(20, 3))}, {{"k", 1}, {"dtype", "f32"}}),
      DType::kF32, {4, 5}, {0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1});
  expect_tensor(run1("EyeLike", {i32({3, 4}, std::vector<int32_t>(12, 0))}, {{"dtype", "f64"}}),
                DType::kF64, {3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  expect_tensor(run1("EyeLike", {i64({3, 2}, {0, 0, 0, 0, 0, 0})}, {{"k", -1}}), DType::kI64,
                {3, 2}, {0, 0, 1, 0, 0, 1});
  expect_tensor(run1("EyeLike", {f32({2, 2}, {5, 5, 5, 5})}, {{"k", 7}}), DType::kF32, {2, 2},
                {0, 0, 0, 0});
  expect_tensor(run1("EyeLike", {f32({2, 2}, {5, 5, 5, 5})}, {{"dtype", "bool"}}), DType::kBool,
                {2, 2}, {1, 0, 0, 1});
  expect_tensor(run1("EyeLike", {f32({0, 3}, {})}), DType::kF32, {0, 3}, {});
}

TEST(MathEyeLike, InferenceAndErrors) {
  auto t = infer("EyeLike", {TensorType(DType::kI32, {Dim::named("N"), Dim::known(3)})},
                 {{"dtype", "f16"}});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f16[N, 3]");
  expect_infer_error(infer("EyeLike", {tt(DType::kF32, {2, 2, 2})}), "2-D");
  expect_infer_error(infer("EyeLike", {tt(DType::kF32, {2, 2})}, {{"dtype", "float"}}),
                     "unknown element type");
  expect_infer_error(infer("EyeLike", {tt(DType::kF32, {2, 2})}, {{"dtype", int64_t{1}}}),
                     "must be string");
}

}  // namespace
}  // namespace tessera::mathtest
