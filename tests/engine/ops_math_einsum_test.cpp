// Tests for engine/ops/math_einsum.cpp: Einsum's equation forms (explicit and implicit output,
// diagonals, traces, sums, outer products, "..." with broadcasting, spaces) against
// hand-computed values, inference and equation errors.
#include <gtest/gtest.h>

#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

ir::Attributes eq(const char* e) {
  return {{"equation", e}};
}

const Tensor kA = f32({2, 3}, {0, 1, 2, 3, 4, 5});
const Tensor kB = f32({3, 2}, {0, 1, 2, 3, 4, 5});

TEST(MathEinsum, MatrixProductExplicitAndImplicit) {
  expect_tensor(run1("Einsum", {kA, kB}, eq("ij,jk->ik")), DType::kF32, {2, 2}, {10, 13, 28, 40});
  expect_tensor(run1("Einsum", {kA, kB}, eq("ij,jk")), DType::kF32, {2, 2}, {10, 13, 28, 40});
  expect_tensor(run1("Einsum", {kA, kB}, eq(" i j , j k -> k i ")), DType::kF32, {2, 2},
                {10, 28, 13, 40});
}

TEST(MathEinsum, TransposeSumAndTotal) {
  expect_tensor(run1("Einsum", {kA}, eq("ij->ji")), DType::kF32, {3, 2}, {0, 3, 1, 4, 2, 5});
  expect_tensor(run1("Einsum", {kA}, eq("ba")), DType::kF32, {3, 2},
                {0, 3, 1, 4, 2, 5});  // implicit: "ab"
  expect_tensor(run1("Einsum", {kA}, eq("Ba")), DType::kF32, {2, 3},
                {0, 1, 2, 3, 4, 5});  // 'B' < 'a'
  expect_tensor(run1("Einsum", {kA}, eq("ij->i")), DType::kF32, {2}, {3, 12});
  expect_tensor(run1("Einsum", {kA}, eq("ij->j")), DType::kF32, {3}, {3, 5, 7});
  expect_tensor(run1("Einsum", {kA}, eq("ij->")), DType::kF32, {}, {15});
}

TEST(MathEinsum, InnerOuterAndThreeInputs) {
  const Tensor u = f64({3}, {1, 2, 3}), v = f64({3}, {4, 5, 6});
  expect_tensor(run1("Einsum", {u, v}, eq("i,i")), DType::kF64, {}, {32});
  expect_tensor(run1("Einsum", {u, f64({2}, {1, -1})}, eq("i,j->ij")), DType::kF64, {3, 2},
                {1, -1, 2, -2, 3, -3});
  expect_tensor(run1("Einsum", {u, v, f64({3}, {1, 0, 2})}, eq("i,i,i->")), DType::kF64, {}, {40});
}

TEST(MathEinsum, DiagonalAndTrace) {
  const Tensor m = f32({2, 2}, {1, 2, 3, 4});
  expect_tensor(run1("Einsum", {m}, eq("ii->i")), DType::kF32, {2}, {1, 4});
  expect_tensor(run1("Einsum", {m}, eq("ii")), DType::kF32, {}, {5});
  // ONNX's test_einsum_batch_diagonal form, on [2, 2, 2].
  const Tensor b = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_tensor(run1("Einsum", {b}, eq("...ii ->...i")), DType::kF32, {2, 2}, {1, 4, 5, 8});
}

TEST(MathEinsum, BatchedAndBroadcastEllipsis) {
  const Tensor a = f32({2, 1, 2}, {1, 2, 3, 4}), b = f32({2, 2, 1}, {1, 1, 2, -1});
  expect_tensor(run1("Einsum", {a, b}, eq("bij, bjk -> bik")), DType::kF32, {2, 1, 1}, {3, 2});
  // Row-wise dot products: [2,3] with [3] broadcast over "...".
  expect_tensor(run1("Einsum", {kA, f32({3}, {1, 1, 1})}, eq("...i,...i->...")), DType::kF32, {2},
                {3, 12});
  // "..." of size 1 broadcasts against 2.
  expect_tensor(
      run1("Einsum", {f32({1, 2}, {1, 2}), f32({2, 2}, {1, 0, 0, 1})}, eq("...j,...j->...")),
      DType::kF32, {2}, {1, 2});
  expect_tensor(run1("Einsum", {kA}, eq("...->...")), DType::kF32, {2, 3}, {0, 1, 2, 3, 4, 5});
}

TEST(MathEinsum, IntegersAndEmpty) {
  expect_tensor(run1("Einsum", {i32({2, 2}, {1, 2, 3, 4}), i32({2}, {10, 100})}, eq("ij,j->i")),
                DType::kI32, {2}, {210, 430});
  expect_tensor(run1("Einsum", {f32({2, 0}, {}), f32({0, 3}, {})}, eq("ij,jk->ik")), DType::kF32,
                {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(MathEinsum, Inference) {
  const TensorType a(DType::kF32, {Dim::named("N"), Dim::known(3)});
  auto t = infer("Einsum", {a, tt(DType::kF32, {3, 5})}, eq("ij,jk->ik"));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 5]");
  t = infer("Einsum",
            {TensorType(DType::kF32, {Dim::named("B"), Dim::known(1), Dim::known(4)}),
             tt(DType::kF32, {7, 4})},
            eq("...i,...i->..."));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f32[B, 7]");
  t = infer("Einsum", {TensorType::unranked(DType::kF64)}, eq("ij->ji"));
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE((*t)[0].rank_known);
}

TEST(MathEinsum, EquationErrors) {
  const TensorType m = tt(DType::kF32, {2, 3});
  expect_infer_error(infer("Einsum", {m, m}, eq("ij")), "names 1 inputs");
  expect_infer_error(infer("Einsum", {m}, eq("ijk->i")), "rank 2");
  expect_infer_error(infer("Einsum", {m, tt(DType::kF32, {4, 2})}, eq("ij,jk->ik")), "disagree");
  expect_infer_error(infer("Einsum", {m}, eq("i-j")), "unexpected");
  expect_infer_error(infer("Einsum", {m}, eq("ij->k")), "names one no input has");
  expect_infer_error(infer("Einsum", {m}, eq("ij->ii")), "repeats");
  expect_infer_error(infer("Einsum", {m}, eq("......")), "unexpected");
  expect_infer_error(infer("Einsum", {m, tt(DType::kF64, {3})}, eq("ij,j->i")), "element type");
  expect_infer_error(infer("Einsum", {tt(DType::kBool, {2})}, eq("i")), "allowed");
  expect_infer_error(infer("Einsum", {m}), "equation");
  fail("Einsum", {kA, kA}, eq("ij,jk->ik"));
}

TEST(MathEinsum, FlopsCoverTheLabelSpace) {
  const ops::OpDef* def = registry().find("Einsum");
  ASSERT_NE(def, nullptr);
  ir::Node n;
  n.op = "Einsum";
  n.attrs = eq("ij,jk->ik");
  const TensorType a = tt(DType::kF32, {2, 3}), b = tt(DType::kF32, {3, 4});
  ops::InferContext ctx{n, *def, {&a, &b}, {nullptr, nullptr}};
  EXPECT_EQ(def->flops(ctx, {tt(DType::kF32, {2, 4})}), 2.0 * 2 * 3 * 4);
}

}  // namespace
}  // namespace tessera::mathtest
