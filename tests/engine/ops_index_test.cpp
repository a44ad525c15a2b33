// Tests of engine/ops/index_ops.cpp: GatherElements, ScatterElements, GatherND, ScatterND,
// Compress, OneHot. Expected values are worked out by hand (NumPy semantics).
#include <gtest/gtest.h>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(s), v);
}

std::string infer_one(const std::string& op, const std::vector<const TensorType*>& in,
                      ir::Attributes attrs = {}, const std::vector<const Tensor*>& constants = {}) {
  auto t = runtime::infer_single_op(registry(), op, in, std::move(attrs), 1, constants);
  return t ? (*t)[0].to_string() : "error: " + t.error().message;
}

std::string run_error(const std::string& op, const std::vector<Tensor>& in,
                      ir::Attributes attrs = {}) {
  auto r = runtime::run_single_op(registry(), op, in, std::move(attrs));
  return r ? "ok" : r.error().message;
}

// ---- GatherElements ----

TEST(GatherElements, AxesAndNegativeIndices) {
  const Tensor x = iota(DType::kF32, {3, 3});  // [[0 1 2] [3 4 5] [6 7 8]]
  expect_tensor(run("GatherElements", {x, i64({2, 3}, {1, 2, 0, 2, 0, -1})})[0], DType::kF32,
                {2, 3}, {3, 7, 2, 6, 1, 8});
  expect_tensor(run("GatherElements", {x, i64({3, 2}, {0, 0, 1, 0, -1, 2})}, {{"axis", -1}})[0],
                DType::kF32, {3, 2}, {0, 0, 4, 3, 8, 8});
}

TEST(GatherElements, ErrorsAndInference) {
  const Tensor x = iota(DType::kF32, {2, 2});
  EXPECT_NE(run_error("GatherElements", {x, i64({1, 2}, {0, 2})}).find("out of range"),
            std::string::npos);
  EXPECT_NE(run_error("GatherElements", {x, i64({2}, {0, 1})}), "ok");
  const TensorType d(DType::kI32, {Dim::named("N"), Dim::known(4)});
  const TensorType idx(DType::kI64, {Dim::named("N"), Dim::known(2)});
  EXPECT_EQ(infer_one("GatherElements", {&d, &idx}, {{"axis", 1}}), "i32[N, 2]");
  const TensorType f(DType::kF32, {Dim::known(2), Dim::known(2)});
  EXPECT_NE(infer_one("GatherElements", {&d, &f}).find("error"), std::string::npos);
  EXPECT_NE(infer_one("GatherElements", {&d, &idx}, {{"axis", 2}}).find("error"),
            std::string::npos);
}

// ---- ScatterElements ----

TEST(ScatterElements, ReplaceAddMul) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = i64({1, 2}, {2, -3});
  const Tensor upd = f32({1, 2}, {10, 20});
  expect_values(run("ScatterElements", {x, idx, upd}, {{"axis", 1}})[0], {2, 3},
                {20, 2, 10, 4, 5, 6});
  // Duplicate indices accumulate in order.
  const Tensor dup = i64({1, 2}, {1, 1});
  expect_values(run("ScatterElements", {x, dup, upd}, {{"axis", 1}, {"reduction", "add"}})[0],
                {2, 3}, {1, 32, 3, 4, 5, 6});
  expect_values(run("ScatterElements", {x, dup, upd}, {{"axis", 1}, {"reduction", "mul"}})[0],
                {2, 3}, {1, 400, 3, 4, 5, 6});
  // Axis 0: column j of row indices[i][j].
  expect_values(run("ScatterElements", {x, i64({1, 3}, {1, 0, 1}), f32({1, 3}, {7, 8, 9})})[0],
                {2, 3}, {1, 8, 3, 7, 5, 9});
  EXPECT_NE(run_error("ScatterElements", {x, idx, upd}, {{"reduction", "xor"}}), "ok");
  EXPECT_NE(run_error("ScatterElements", {x, idx, f32({2, 1}, {1, 2})}, {{"axis", 1}}), "ok");
}

TEST(ScatterElements, IntegerMax) {
  const Tensor x = Tensor::from_vector<int32_t>({3}, {5, 1, 7});
  const Tensor upd = Tensor::from_vector<int32_t>({3}, {3, 4, 9});
  expect_tensor(run("ScatterElements", {x, i64({3}, {0, 1, 2}), upd}, {{"reduction", "max"}})[0],
                DType::kI32, {3}, {5, 4, 9});
}

TEST(ScatterElements, HalfAddAndBoolReplace) {
  const Tensor x = f32({3}, {1, 2, 3}).cast(DType::kF16);
  const Tensor upd = f32({2}, {0.5f, 0.25f}).cast(DType::kF16);
  const Tensor y = run("ScatterElements", {x, i64({2}, {2, 2}), upd}, {{"reduction", "add"}})[0];
  expect_tensor(y, DType::kF16, {3}, {1, 2, 3.75});
  const Tensor b = Tensor::from_bools({3}, {false, false, true});
  expect_tensor(run("ScatterElements", {b, i64({1}, {0}), Tensor::from_bools({1}, {true})})[0],
                DType::kBool, {3}, {1, 0, 1});
  EXPECT_NE(run_error("ScatterElements", {b, i64({1}, {0}), Tensor::from_bools({1}, {true})},
                      {{"reduction", "add"}}),
            "ok");
}

// ---- GatherND ----

TEST(GatherND, TuplesAndSlices) {
  const Tensor x = iota(DType::kI32, {2, 2});
  expect_tensor(run("GatherND", {x, i64({2, 2}, {0, 0, 1, 1})})[0], DType::kI32, {2}, {0, 3});
  expect_tensor(run("GatherND", {x, i64({2, 1}, {1, 0})})[0], DType::kI32, {2, 2}, {2, 3, 0, 1});
  const Tensor y = iota(DType::kF32, {2, 2, 2});
  expect_tensor(run("GatherND", {y, i64({2, 1, 2}, {0, 1, -1, 0})})[0], DType::kF32, {2, 1, 2},
                {2, 3, 4, 5});
}

TEST(GatherND, BatchDims) {
  const Tensor y = iota(DType::kF32, {2, 2, 2});
  // batch 0 picks row 1 of y[0], batch 1 picks row 0 of y[1].
  expect_tensor(run("GatherND", {y, i64({2, 1}, {1, 0})}, {{"batch_dims", 1}})[0], DType::kF32,
                {2, 2}, {2, 3, 4, 5});
  const TensorType t(DType::kF32, {Dim::named("B"), Dim::known(3), Dim::known(4)});
  const TensorType idx(DType::kI64, {Dim::named("B"), Dim::known(5), Dim::known(1)});
  EXPECT_EQ(infer_one("GatherND", {&t, &idx}, {{"batch_dims", 1}}), "f32[B, 5, 4]");
  const TensorType too_long(DType::kI64, {Dim::known(5), Dim::known(4)});
  EXPECT_NE(infer_one("GatherND", {&t, &too_long}).find("error"), std::string::npos);
}

// ---- ScatterND ----

TEST(ScatterND, ElementsSlicesAndReductions) {
  const Tensor x = f32({4}, {1, 2, 3, 4});
  expect_values(run("ScatterND", {x, i64({2, 1}, {3, 1}), f32({2}, {9, 10})})[0], {4},
                {1, 10, 3, 9});
  const Tensor m = iota(DType::kF32, {2, 2});
  expect_values(run("ScatterND", {m, i64({1, 1}, {1}), f32({1, 2}, {7, 8})})[0], {2, 2},
                {0, 1, 7, 8});
  expect_values(
      run("ScatterND", {x, i64({2, 1}, {0, 0}), f32({2}, {5, 6})}, {{"reduction", "add"}})[0], {4},
      {12, 2, 3, 4});
  expect_values(
      run("ScatterND", {x, i64({2, 1}, {0, 0}), f32({2}, {5, 6})}, {{"reduction", "mul"}})[0], {4},
      {30, 2, 3, 4});
  EXPECT_NE(run_error("ScatterND", {x, i64({1, 1}, {4}), f32({1}, {1})}).find("out of range"),
            std::string::npos);
}

// ---- Compress ----

TEST(Compress, AxisFlattenAndShortCondition) {
  const Tensor x = iota(DType::kF32, {3, 2});
  const Tensor c = Tensor::from_bools({3}, {false, true, true});
  expect_tensor(run("Compress", {x, c}, {{"axis", 0}})[0], DType::kF32, {2, 2}, {2, 3, 4, 5});
  expect_tensor(run("Compress", {x, Tensor::from_bools({2}, {false, true})}, {{"axis", -1}})[0],
                DType::kF32, {3, 1}, {1, 3, 5});
  expect_tensor(run("Compress", {x, c})[0], DType::kF32, {2}, {1, 2});  // flattened
  EXPECT_NE(run_error("Compress", {x, Tensor::from_bools({4}, {1, 1, 1, 1})}, {{"axis", 0}}), "ok");
}

TEST(Compress, InferenceIsDataDependentUnlessConstant) {
  const TensorType x(DType::kF32, {Dim::known(3), Dim::known(2)});
  const TensorType c(DType::kBool, {Dim::known(3)});
  EXPECT_EQ(infer_one("Compress", {&x, &c}, {{"axis", 0}}), "f32[?, 2]");
  EXPECT_EQ(infer_one("Compress", {&x, &c}), "f32[?]");
  const Tensor cv = Tensor::from_bools({3}, {true, false, true});
  EXPECT_EQ(infer_one("Compress", {&x, &c}, {{"axis", 0}}, {nullptr, &cv}), "f32[2, 2]");
}

// ---- OneHot ----

TEST(OneHot, AxesNegativeAndOutOfRange) {
  const Tensor idx = i64({3}, {0, -1, 5});
  const Tensor depth = Tensor::scalar<int64_t>(3);
  const Tensor values = f32({2}, {-1, 4});
  expect_tensor(run("OneHot", {idx, depth, values})[0], DType::kF32, {3, 3},
                {4, -1, -1, -1, -1, 4, -1, -1, -1});
  expect_tensor(run("OneHot", {idx, depth, values}, {{"axis", 0}})[0], DType::kF32, {3, 3},
                {4, -1, -1, -1, -1, -1, -1, 4, -1});
  // Float indices and depth, integer values.
  expect_tensor(run("OneHot", {f32({2}, {1.f, 0.f}), f32({1}, {2.f}),
                               Tensor::from_vector<int32_t>({2}, {0, 1})})[0],
                DType::kI32, {2, 2}, {0, 1, 1, 0});
}

TEST(OneHot, Inference) {
  const TensorType idx(DType::kI64, {Dim::named("N"), Dim::known(4)});
  const TensorType depth(DType::kI64, {});
  const TensorType values(DType::kF32, {Dim::known(2)});
  EXPECT_EQ(infer_one("OneHot", {&idx, &depth, &values}), "f32[N, 4, ?]");
  const Tensor d = Tensor::scalar<int64_t>(10);
  EXPECT_EQ(infer_one("OneHot", {&idx, &depth, &values}, {{"axis", 1}}, {nullptr, &d}),
            "f32[N, 10, 4]");
  const TensorType three(DType::kF32, {Dim::known(3)});
  EXPECT_NE(infer_one("OneHot", {&idx, &depth, &three}).find("error"), std::string::npos);
}

}  // namespace
}  // namespace tessera
