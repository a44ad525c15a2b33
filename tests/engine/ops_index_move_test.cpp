// Tests of engine/ops/index_move.cpp: Pad, Tile, DepthToSpace, SpaceToDepth. Expected values from
// NumPy (np.pad, np.tile, the reshape/transpose definitions of the ONNX spec).
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

std::string infer_str(const std::string& op, const std::vector<const TensorType*>& in,
                      ir::Attributes attrs = {}, const std::vector<const Tensor*>& constants = {}) {
  auto t = runtime::infer_single_op(registry(), op, in, std::move(attrs), 1, constants);
  return t ? (*t)[0].to_string() : "error: " + t.error().message;
}

// ---- Pad ----

TEST(Pad, ConstantWithValueAndCrop) {
  const Tensor x = iota(DType::kF32, {2, 2});
  expect_tensor(run("Pad", {x, i64({4}, {0, 1, 1, 0}), Tensor::scalar<float>(9)})[0], DType::kF32,
                {3, 3}, {9, 0, 1, 9, 2, 3, 9, 9, 9});
  // Negative pads crop; without a constant the fill is 0.
  expect_tensor(run("Pad", {iota(DType::kI32, {2, 3}), i64({4}, {0, -1, 1, 0})})[0], DType::kI32,
                {3, 2}, {1, 2, 4, 5, 0, 0});
}

TEST(Pad, ReflectEdgeWrap) {
  const Tensor x = iota(DType::kF32, {2, 3});
  const Tensor pads = i64({4}, {1, 2, 0, 1});  // axis 0: 1 before; axis 1: 2 before, 1 after
  expect_tensor(run("Pad", {x, pads}, {{"mode", "reflect"}})[0], DType::kF32, {3, 6},
                {5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4});
  expect_tensor(run("Pad", {x, pads}, {{"mode", "edge"}})[0], DType::kF32, {3, 6},
                {0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5});
  const Tensor v = f32({3}, {1, 2, 3});
  expect_values(run("Pad", {v, i64({2}, {2, 2})}, {{"mode", "wrap"}})[0], {7},
                {2, 3, 1, 2, 3, 1, 2});
  // Reflection past the whole axis keeps bouncing: np.pad([1, 2, 3], 3, 'reflect').
  expect_values(run("Pad", {v, i64({2}, {3, 3})}, {{"mode", "reflect"}})[0], {9},
                {2, 3, 2, 1, 2, 3, 2, 1, 2});
  // A single element reflects onto itself.
  expect_values(run("Pad", {f32({1}, {7}), i64({2}, {1, 2})}, {{"mode", "reflect"}})[0], {4},
                {7, 7, 7, 7});
}

TEST(Pad, AxesInputAndErrors) {
  const Tensor x = iota(DType::kF32, {2, 2});
  expect_tensor(run("Pad", {x, i64({2}, {1, 1}), Tensor::scalar<float>(-1), i64({1}, {-1})})[0],
                DType::kF32, {2, 4}, {-1, 0, 1, -1, -1, 2, 3, -1});
  auto odd = runtime::run_single_op(registry(), "Pad", {x, i64({3}, {1, 1, 1})});
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.error().message.find("'pads' has 3 values"), std::string::npos);
  auto mode =
      runtime::run_single_op(registry(), "Pad", {x, i64({4}, {0, 0, 0, 0})}, {{"mode", "mirror"}});
  EXPECT_FALSE(mode.has_value());
  auto crop = runtime::run_single_op(registry(), "Pad", {x, i64({4}, {-2, 0, -1, 0})});
  EXPECT_FALSE(crop.has_value());
}

TEST(Pad, Inference) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(3)});
  const TensorType p(DType::kI64, {Dim::known(4)});
  EXPECT_EQ(infer_str("Pad", {&x, &p}), "f32[?, ?]");
  const Tensor pads = i64({4}, {0, 1, 0, 2});
  EXPECT_EQ(infer_str("Pad", {&x, &p}, {}, {nullptr, &pads}), "f32[N, 6]");
  const TensorType p32(DType::kI32, {Dim::known(4)});
  EXPECT_NE(infer_str("Pad", {&x, &p32}).find("error"), std::string::npos);
}

// ---- Tile ----

TEST(Tile, RepeatsAndInference) {
  expect_tensor(run("Tile", {iota(DType::kF32, {2, 2}), i64({2}, {2, 1})})[0], DType::kF32, {4, 2},
                {0, 1, 2, 3, 0, 1, 2, 3});
  expect_tensor(run("Tile", {iota(DType::kI64, {1, 2}), i64({2}, {2, 2})})[0], DType::kI64, {2, 4},
                {0, 1, 0, 1, 0, 1, 0, 1});
  expect_tensor(run("Tile", {iota(DType::kF32, {2}), i64({1}, {0})})[0], DType::kF32, {0}, {});
  EXPECT_FALSE(
      runtime::run_single_op(registry(), "Tile", {iota(DType::kF32, {2}), i64({2}, {1, 1})})
          .has_value());
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(3)});
  const TensorType r(DType::kI64, {Dim::known(2)});
  const Tensor reps = i64({2}, {1, 4});
  EXPECT_EQ(infer_str("Tile", {&x, &r}, {}, {nullptr, &reps}), "f32[N, 12]");
  EXPECT_EQ(infer_str("Tile", {&x, &r}), "f32[?, ?]");
}

// ---- DepthToSpace, SpaceToDepth ----

TEST(DepthToSpace, DcrAndCrd) {
  const Tensor x = iota(DType::kF32, {1, 8, 1, 2});
  expect_tensor(run("DepthToSpace", {x}, {{"blocksize", 2}})[0], DType::kF32, {1, 2, 2, 4},
                {0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15});
  expect_tensor(run("DepthToSpace", {x}, {{"blocksize", 2}, {"mode", "CRD"}})[0], DType::kF32,
                {1, 2, 2, 4}, {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15});
  const TensorType t(DType::kF32, {Dim::named("N"), Dim::known(12), Dim::known(3), Dim::known(5)});
  EXPECT_EQ(infer_str("DepthToSpace", {&t}, {{"blocksize", 2}}), "f32[N, 3, 6, 10]");
  EXPECT_NE(infer_str("DepthToSpace", {&t}, {{"blocksize", 4}}).find("error"), std::string::npos);
}

TEST(SpaceToDepth, BlocksAndRoundTrip) {
  const Tensor x = iota(DType::kF32, {1, 1, 4, 4});
  const Tensor y = run("SpaceToDepth", {x}, {{"blocksize", 2}})[0];
  expect_tensor(y, DType::kF32, {1, 4, 2, 2},
                {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15});
  expect_tensor(run("DepthToSpace", {y}, {{"blocksize", 2}})[0], DType::kF32, {1, 1, 4, 4},
                x.to_doubles());
  const TensorType t(DType::kF32, {Dim::known(1), Dim::known(3), Dim::known(4), Dim::known(5)});
  EXPECT_NE(infer_str("SpaceToDepth", {&t}, {{"blocksize", 2}}).find("error"), std::string::npos);
}

}  // namespace
}  // namespace tessera
