// Tests for engine/ops/math_index.cpp: ArgMax ArgMin CumSum TopK Hardmax against hand-computed
// values: axes (negative, default), keepdims, select_last_index, ties, NaN, empty tensors,
// integer types, inference with constant inputs and errors.
#include <gtest/gtest.h>

#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

// ---- ArgMax, ArgMin ----

TEST(MathArg, AxesAndKeepdims) {
  const Tensor x = f32({2, 2}, {2, 1, 3, 10});
  expect_tensor(run1("ArgMax", {x}), DType::kI64, {1, 2}, {1, 1});
  expect_tensor(run1("ArgMax", {x}, {{"axis", 1}}), DType::kI64, {2, 1}, {0, 1});
  expect_tensor(run1("ArgMax", {x}, {{"axis", -1}, {"keepdims", 0}}), DType::kI64, {2}, {0, 1});
  expect_tensor(run1("ArgMin", {x}, {{"axis", 1}, {"keepdims", 0}}), DType::kI64, {2}, {1, 0});
  expect_tensor(run1("ArgMin", {x}, {{"axis", -2}}), DType::kI64, {1, 2}, {0, 0});
}

TEST(MathArg, TiesPickTheFirstOrTheLast) {
  const Tensor x = i32({2, 3}, {2, 2, 1, 5, 5, 5});
  expect_tensor(run1("ArgMax", {x}, {{"axis", 1}, {"keepdims", 0}}), DType::kI64, {2}, {0, 0});
  expect_tensor(run1("ArgMax", {x}, {{"axis", 1}, {"keepdims", 0}, {"select_last_index", 1}}),
                DType::kI64, {2}, {1, 2});
  expect_tensor(run1("ArgMin", {x}, {{"axis", 1}, {"keepdims", 0}, {"select_last_index", 1}}),
                DType::kI64, {2}, {2, 2});
}

TEST(MathArg, NaNIsSelectedFirst) {
  const Tensor x = f64({4}, {1, kNaN, 3, kNaN});
  expect_tensor(run1("ArgMax", {x}), DType::kI64, {1}, {1});
  expect_tensor(run1("ArgMin", {x}), DType::kI64, {1}, {1});
  expect_tensor(run1("ArgMax", {x}, {{"select_last_index", 1}}), DType::kI64, {1}, {3});
}

TEST(MathArg, MiddleAxisOfRank3) {
  // [2,3,2]: along axis 1
  const Tensor x = f32({2, 3, 2}, {1, 9, 5, 2, 3, 7, 0, 0, -1, 4, 8, -2});
  expect_tensor(run1("ArgMax", {x}, {{"axis", 1}, {"keepdims", 0}}), DType::kI64, {2, 2},
                {1, 0, 2, 1});
  expect_tensor(run1("ArgMin", {x}, {{"axis", 1}}), DType::kI64, {2, 1, 2}, {0, 1, 1, 2});
}

TEST(MathArg, InferenceAndErrors) {
  TensorType x(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(4)});
  auto t = infer("ArgMax", {x}, {{"axis", 1}, {"keepdims", 0}});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "i64[N, 4]");
  expect_infer_error(infer("ArgMin", {x}, {{"axis", 3}}), "out of range");
  expect_infer_error(infer("ArgMax", {tt(DType::kBool, {2})}), "allowed");
  expect_infer_error(infer("ArgMax", {tt(DType::kF32, {})}), "rank >= 1");
  expect_infer_error(infer("ArgMax", {tt(DType::kF32, {0, 2})}), "size 0");
  fail("ArgMin", {f32({2, 0}, {})}, {{"axis", 1}});
}

// ---- CumSum ----

TEST(MathCumSum, OneDimensionalModes) {
  const Tensor x = f64({5}, {1, 2, 3, 4, 5}), axis = i32({}, {0});
  expect_tensor(run1("CumSum", {x, axis}), DType::kF64, {5}, {1, 3, 6, 10, 15});
  expect_tensor(run1("CumSum", {x, axis}, {{"exclusive", 1}}), DType::kF64, {5}, {0, 1, 3, 6, 10});
  expect_tensor(run1("CumSum", {x, axis}, {{"reverse", 1}}), DType::kF64, {5}, {15, 14, 12, 9, 5});
  expect_tensor(run1("CumSum", {x, axis}, {{"reverse", 1}, {"exclusive", 1}}), DType::kF64, {5},
                {14, 12, 9, 5, 0});
}

TEST(MathCumSum, TwoDimensionalAxes) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run1("CumSum", {x, i32({}, {0})}), DType::kF32, {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_tensor(run1("CumSum", {x, i64({1}, {1})}), DType::kF32, {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_tensor(run1("CumSum", {x, i64({}, {-1})}, {{"reverse", 1}}), DType::kF32, {2, 3},
                {6, 5, 3, 15, 11, 6});
}

TEST(MathCumSum, IntegersWrapAndEmptyWorks) {
  expect_tensor(run1("CumSum", {i8({3}, {100, 100, -100}), i32({}, {0})}), DType::kI8, {3},
                {100, -56, 100});
  expect_tensor(run1("CumSum", {f32({0, 2}, {}), i32({}, {0})}), DType::kF32, {0, 2}, {});
}

TEST(MathCumSum, Errors) {
  EXPECT_NE(fail("CumSum", {f32({2}, {1, 2}), i32({}, {1})}).find("out of range"),
            std::string::npos);
  fail("CumSum", {f32({2}, {1, 2}), i64({2}, {0, 0})});
  expect_infer_error(infer("CumSum", {tt(DType::kF32, {2}), tt(DType::kF32, {})}), "one-value");
  expect_infer_error(infer("CumSum", {tt(DType::kF32, {2}), tt(DType::kI64, {2})}), "one-value");
  expect_infer_error(infer("CumSum", {tt(DType::kBool, {2}), tt(DType::kI64, {})}), "allowed");
  const Tensor axis = i64({}, {-2});
  expect_infer_error(
      infer("CumSum", {tt(DType::kF32, {2}), tt(DType::kI64, {})}, {}, 1, {nullptr, &axis}),
      "out of range");
}

// ---- TopK ----

TEST(MathTopK, LargestAndSmallest) {
  const Tensor x = f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8});
  auto out = run("TopK", {x, i64({1}, {3})}, {{"axis", 1}}, 2);
  expect_tensor(out[0], DType::kF32, {3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9});
  expect_tensor(out[1], DType::kI64, {3, 3}, {3, 2, 1, 3, 2, 1, 0, 1, 2});
  out = run("TopK", {x, i64({1}, {3})}, {{"largest", 0}}, 2);
  expect_tensor(out[0], DType::kF32, {3, 3}, {0, 1, 2, 4, 5, 6, 8, 9, 10});
  expect_tensor(out[1], DType::kI64, {3, 3}, {0, 1, 2, 0, 1, 2, 3, 2, 1});
}

TEST(MathTopK, AxisZeroTiesAndNaN) {
  const Tensor x = i32({3, 2}, {1, 5, 3, 5, 3, 4});
  auto out = run("TopK", {x, i64({1}, {2})}, {{"axis", 0}}, 2);
  expect_tensor(out[0], DType::kI32, {2, 2}, {3, 5, 3, 5});
  expect_tensor(out[1], DType::kI64, {2, 2}, {1, 0, 2, 1});  // equal values: lower index first
  out = run("TopK", {f32({4}, {1, NAN, 3, 2}), i64({1}, {2})}, {}, 2);
  expect_near(out[0], DType::kF32, {2}, {kNaN, 3});
  expect_tensor(out[1], DType::kI64, {2}, {1, 2});
}

TEST(MathTopK, KZeroAndTheWholeAxis) {
  const Tensor x = f32({2, 2}, {1, 2, 4, 3});
  auto out = run("TopK", {x, i64({1}, {0})}, {}, 2);
  expect_tensor(out[0], DType::kF32, {2, 0}, {});
  out = run("TopK", {x, i64({1}, {2})}, {{"sorted", 0}}, 2);
  expect_tensor(out[0], DType::kF32, {2, 2}, {2, 1, 4, 3});
  expect_tensor(out[1], DType::kI64, {2, 2}, {1, 0, 0, 1});
}

TEST(MathTopK, InferenceUsesAConstantK) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(4)});
  const Tensor k = i64({1}, {2});
  auto t = infer("TopK", {x, tt(DType::kI64, {1})}, {}, 2, {nullptr, &k});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 2]");
  EXPECT_EQ((*t)[1].to_string(), "i64[N, 2]");
  t = infer("TopK", {x, tt(DType::kI64, {1})}, {}, 2);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "f32[N, ?]");
  const Tensor big = i64({1}, {5});
  expect_infer_error(infer("TopK", {x, tt(DType::kI64, {1})}, {}, 2, {nullptr, &big}), "outside");
  expect_infer_error(infer("TopK", {x, tt(DType::kI32, {1})}, {}, 2), "one-value i64");
  expect_infer_error(infer("TopK", {x, tt(DType::kI64, {1})}, {{"axis", 2}}, 2), "out of range");
}

TEST(MathTopK, KernelErrors) {
  EXPECT_NE(fail("TopK", {f32({3}, {1, 2, 3}), i64({1}, {4})}, {}, 2).find("outside"),
            std::string::npos);
  fail("TopK", {f32({3}, {1, 2, 3}), i64({1}, {-1})}, {}, 2);
}

// ---- Hardmax ----

TEST(MathHardmax, OneHotOfTheFirstMaximum) {
  const Tensor x = f32({4, 4}, {3, 0, 1, 2, 2, 5, 1, 0, 0, 1, 3, 2, 0, 1, 2, 3});
  expect_tensor(run1("Hardmax", {x}), DType::kF32, {4, 4},
                {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  expect_tensor(run1("Hardmax", {f32({1, 4}, {1, 1, 1, 0})}), DType::kF32, {1, 4}, {1, 0, 0, 0});
  expect_tensor(run1("Hardmax", {f64({2, 2}, {1, 4, 3, 2})}, {{"axis", 0}}), DType::kF64, {2, 2},
                {0, 1, 1, 0});
  expect_tensor(run1("Hardmax", {f32({0, 3}, {})}), DType::kF32, {0, 3}, {});
  expect_infer_error(infer("Hardmax", {tt(DType::kF32, {2, 2})}, {{"axis", 2}}), "out of range");
  expect_infer_error(infer("Hardmax", {tt(DType::kI32, {2, 2})}), "allowed");
}

}  // namespace
}  // namespace tessera::mathtest
