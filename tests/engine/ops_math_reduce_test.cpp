// Tests for engine/ops/math_reduce.cpp: ReduceL1 ReduceL2 ReduceProd ReduceMin ReduceLogSum
// ReduceLogSumExp ReduceSumSquare against hand-computed values: axes (negative, several, none),
// keepdims, noop_with_empty_axes, empty axes, NaN, integer types, inference and errors.
#include <gtest/gtest.h>

#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

// ONNX's example input: [[[1,2],[3,4]], [[5,6],[7,8]], [[9,10],[11,12]]], shape [3, 2, 2].
Tensor example(DType dt = DType::kF32) {
  return of(dt, {3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
}

ir::Attributes axes(std::vector<int64_t> a, int64_t keepdims = 1) {
  return {{"axes", std::move(a)}, {"keepdims", keepdims}};
}

TEST(MathReduce, L1AndL2) {
  expect_near(run1("ReduceL1", {example()}, axes({2}, 0)), DType::kF32, {3, 2},
              {3, 7, 11, 15, 19, 23});
  expect_near(run1("ReduceL1", {f32({2}, {-3, 4})}), DType::kF32, {1}, {7});
  expect_near(run1("ReduceL2", {example()}, axes({-1})), DType::kF32, {3, 2, 1},
              {2.23606798, 5, 7.81024968, 10.6301458, 13.453624, 16.2788206});
  expect_near(run1("ReduceL2", {example()}), DType::kF32, {1, 1, 1}, {25.4950976});  // sqrt(650)
}

TEST(MathReduce, ProdMinSumSquare) {
  expect_near(run1("ReduceProd", {example()}, axes({1})), DType::kF32, {3, 1, 2},
              {3, 8, 35, 48, 99, 120});
  expect_near(run1("ReduceMin", {example()}, axes({1}, 0)), DType::kF32, {3, 2},
              {1, 2, 5, 6, 9, 10});
  expect_near(run1("ReduceMin", {example()}), DType::kF32, {1, 1, 1}, {1});
  expect_near(run1("ReduceSumSquare", {example()}, axes({-2}, 0)), DType::kF32, {3, 2},
              {10, 20, 74, 100, 202, 244});
}

TEST(MathReduce, LogSumAndLogSumExp) {
  expect_near(run1("ReduceLogSum", {example()}, axes({0, 1}, 0)), DType::kF32, {2},
              {3.58351894, 3.73766962});
  expect_near(run1("ReduceLogSum", {example()}, axes({1, 0}, 0)), DType::kF32, {2},
              {3.58351894, 3.73766962});
  expect_near(run1("ReduceLogSumExp", {example(DType::kF64)}, axes({1})), DType::kF64, {3, 1, 2},
              {3.12692801, 4.12692801, 7.12692801, 8.12692801, 11.12692801, 12.12692801}, 1e-8);
  // No overflow: exp(1000) is inf in any float type.
  expect_near(run1("ReduceLogSumExp", {f32({2}, {1000, 1000})}, axes({0}, 0)), DType::kF32, {},
              {1000.69314718});
  expect_near(run1("ReduceLogSumExp", {f64({3}, {-kInf, -kInf, kInf})}), DType::kF64, {1}, {kInf});
}

TEST(MathReduce, EmptyAxisGivesTheIdentity) {
  const Tensor e = f32({0, 2}, {});
  expect_near(run1("ReduceL1", {e}, axes({0})), DType::kF32, {1, 2}, {0, 0});
  expect_near(run1("ReduceL2", {e}, axes({0}, 0)), DType::kF32, {2}, {0, 0});
  expect_near(run1("ReduceSumSquare", {e}, axes({0}, 0)), DType::kF32, {2}, {0, 0});
  expect_near(run1("ReduceProd", {e}, axes({0}, 0)), DType::kF32, {2}, {1, 1});
  expect_near(run1("ReduceMin", {e}, axes({0}, 0)), DType::kF32, {2}, {kInf, kInf});
  expect_near(run1("ReduceLogSum", {e}, axes({0}, 0)), DType::kF32, {2}, {-kInf, -kInf});
  expect_near(run1("ReduceLogSumExp", {e}, axes({0}, 0)), DType::kF32, {2}, {-kInf, -kInf});
  expect_tensor(run1("ReduceMin", {i32({0}, {})}), DType::kI32, {1}, {2147483647});
  // Reducing the other axis of an empty tensor gives an empty result.
  expect_near(run1("ReduceProd", {e}, axes({1}, 0)), DType::kF32, {0}, {});
}

TEST(MathReduce, NaNPropagates) {
  const Tensor x = f32({2, 2}, {1, NAN, 3, 4});
  expect_near(run1("ReduceMin", {x}, axes({1}, 0)), DType::kF32, {2}, {kNaN, 3});
  expect_near(run1("ReduceL1", {x}, axes({1}, 0)), DType::kF32, {2}, {kNaN, 7});
  expect_near(run1("ReduceLogSumExp", {x}, axes({1}, 0)), DType::kF32, {2}, {kNaN, 4.31326169});
}

TEST(MathReduce, Integers) {
  expect_tensor(run1("ReduceL1", {i32({2}, {-3, 4})}), DType::kI32, {1}, {7});
  expect_tensor(run1("ReduceL2", {i32({2}, {3, 4})}), DType::kI32, {1}, {5});
  expect_tensor(run1("ReduceL2", {i64({2}, {1, 1})}), DType::kI64, {1}, {1});  // sqrt 2 truncates
  expect_tensor(run1("ReduceProd", {i64({3}, {-2, 3, 7})}, axes({0}, 0)), DType::kI64, {}, {-42});
  expect_tensor(run1("ReduceSumSquare", {u8({2}, {16, 16})}), DType::kU8, {1}, {0});  // 512 wraps
  expect_tensor(run1("ReduceMin", {i8({2, 2}, {-128, 5, 7, 127})}, axes({0}, 0)), DType::kI8, {2},
                {-128, 5});
  expect_tensor(run1("ReduceLogSum", {i32({2}, {3, 4})}), DType::kI32, {1}, {1});  // log 7 = 1.95
}

TEST(MathReduce, HalfTypesComputeInF32) {
  expect_near(run1("ReduceL2", {of(DType::kF16, {2}, {3, 4})}), DType::kF16, {1}, {5});
  expect_near(run1("ReduceProd", {of(DType::kBF16, {3}, {2, 0.5, -3})}), DType::kBF16, {1}, {-3});
}

TEST(MathReduce, NoopWithEmptyAxes) {
  const Tensor x = example();
  expect_near(run1("ReduceL1", {x}, {{"noop_with_empty_axes", 1}}), DType::kF32, {3, 2, 2},
              {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  expect_near(run1("ReduceMin", {x}, {{"axes", std::vector<int64_t>{}}, {"keepdims", 0}}),
              DType::kF32, {}, {1});
}

TEST(MathReduce, Inference) {
  TensorType x(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(4)});
  auto t = infer("ReduceSumSquare", {x}, axes({1}, 0));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 4]");
  t = infer("ReduceLogSumExp", {x}, axes({-1, 0}));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "f32[1, 3, 1]");
  t = infer("ReduceProd", {TensorType::unranked(DType::kI64)});
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE((*t)[0].rank_known);
}

TEST(MathReduce, Errors) {
  const TensorType x = tt(DType::kF32, {3, 2, 2});
  expect_infer_error(infer("ReduceL1", {x}, axes({3})), "out of range");
  expect_infer_error(infer("ReduceL2", {x}, axes({-4})), "out of range");
  expect_infer_error(infer("ReduceMin", {x}, axes({0, -3})), "repeated");
  expect_infer_error(infer("ReduceProd", {tt(DType::kBool, {2})}), "allowed");
  expect_infer_error(infer("ReduceLogSum", {x}, {{"axes", 1}}), "must be ints");
  fail("ReduceSumSquare", {example()}, axes({5}));
}

TEST(MathReduce, FlopsCountInputElements) {
  const ops::OpDef* def = registry().find("ReduceL2");
  ASSERT_NE(def, nullptr);
  ASSERT_TRUE(def->flops);
  ir::Node n;
  n.op = "ReduceL2";
  const TensorType in = tt(DType::kF32, {3, 4});
  ops::InferContext ctx{n, *def, {&in}, {nullptr}};
  EXPECT_EQ(def->flops(ctx, {tt(DType::kF32, {1, 1})}), 12);
}

}  // namespace
}  // namespace tessera::mathtest
