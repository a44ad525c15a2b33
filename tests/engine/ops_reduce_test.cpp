// Tests of engine/ops/reduce.cpp: ReduceSum, ReduceMean, ReduceMax.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;
using Ints = std::vector<int64_t>;

const ops::OpRegistry& registry() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

Tensor f32(Shape shape, std::vector<float> v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
Tensor axes(Ints a) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(a.size())}, a);
}

Tensor run(const std::string& op, const std::vector<Tensor>& in, ir::Attributes attrs = {}) {
  auto r = runtime::run_single_op(registry(), op, in, std::move(attrs));
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
  return r ? (*r)[0] : Tensor();
}

void expect_values(const Tensor& t, const Shape& shape, const std::vector<double>& want,
                   double tol = 1e-6) {
  ASSERT_EQ(t.shape(), shape) << t.summary();
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(t.get(i))) << "element " << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(t.get(i), want[i]) << "element " << i;
    else
      EXPECT_NEAR(t.get(i), want[i], tol) << "element " << i;
  }
}

const Tensor kX = f32({2, 3}, {1, 2, 3, 4, 5, 6});

// ---- ReduceSum (axes input) ----

TEST(ReduceSum, AxesAndKeepdims) {
  expect_values(run("ReduceSum", {kX, axes({1})}), {2, 1}, {6, 15});
  expect_values(run("ReduceSum", {kX, axes({-1})}, {{"keepdims", 0}}), {2}, {6, 15});
  expect_values(run("ReduceSum", {kX, axes({0})}), {1, 3}, {5, 7, 9});
  expect_values(run("ReduceSum", {kX, axes({-2})}, {{"keepdims", 0}}), {3}, {5, 7, 9});
  expect_values(run("ReduceSum", {kX, axes({1, 0})}), {1, 1}, {21});
}

TEST(ReduceSum, NoAxesReducesAllOrIsNoop) {
  expect_values(run("ReduceSum", {kX}), {1, 1}, {21});
  expect_values(run("ReduceSum", {kX}, {{"keepdims", 0}}), {}, {21});  // scalar
  expect_values(run("ReduceSum", {kX, axes({})}, {{"keepdims", 0}}), {}, {21});
  expect_values(run("ReduceSum", {kX, axes({})}, {{"noop_with_empty_axes", 1}}), {2, 3},
                {1, 2, 3, 4, 5, 6});
  expect_values(run("ReduceSum", {kX}, {{"noop_with_empty_axes", 1}}), {2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(ReduceSum, ThreeDOuterAndInnerAxes) {
  std::vector<float> v(8);
  for (size_t i = 0; i < 8; ++i) v[i] = static_cast<float>(i);
  const Tensor x = f32({2, 2, 2}, v);
  // j = 0: 0 + 1 + 4 + 5; j = 1: 2 + 3 + 6 + 7
  expect_values(run("ReduceSum", {x, axes({0, 2})}), {1, 2, 1}, {10, 18});
  expect_values(run("ReduceSum", {x, axes({0, -1})}, {{"keepdims", 0}}), {2}, {10, 18});
}

TEST(ReduceSum, TypesAndEmpty) {
  const Tensor xi = kX.cast(DType::kI32);
  const Tensor yi = run("ReduceSum", {xi, axes({1})});
  EXPECT_EQ(yi.dtype(), DType::kI32);
  expect_values(yi, {2, 1}, {6, 15});
  const Tensor yh = run("ReduceSum", {kX.cast(DType::kF16), axes({0})});
  EXPECT_EQ(yh.dtype(), DType::kF16);
  expect_values(yh, {1, 3}, {5, 7, 9});
  const Tensor empty(DType::kF32, {2, 0});
  expect_values(run("ReduceSum", {empty, axes({1})}), {2, 1}, {0, 0});
  expect_values(run("ReduceSum", {empty, axes({0})}), {1, 0}, {});
}

TEST(ReduceSum, NonContiguousInput) {
  const Tensor t = kX.view({3, 2}, {1, 3}, 0);  // the transpose: [[1, 4], [2, 5], [3, 6]]
  expect_values(run("ReduceSum", {t, axes({0})}, {{"keepdims", 0}}), {2}, {6, 15});
}

TEST(ReduceSum, Inference) {
  const TensorType x(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::known(4)});
  const TensorType a = TensorType::of(DType::kI64, {1});
  const Tensor one = axes({1});
  auto t = runtime::infer_single_op(registry(), "ReduceSum", {&x, &a}, {{"keepdims", 0}}, 1,
                                    {nullptr, &one});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 4]");
  // Axes known only at run time: each axis may become 1.
  t = runtime::infer_single_op(registry(), "ReduceSum", {&x, &a});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[?, ?, ?]");
  const TensorType a32 = TensorType::of(DType::kI32, {1});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "ReduceSum", {&x, &a32}));
  const Tensor far = axes({3});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "ReduceSum", {&x, &a}, {}, 1, {nullptr, &far}));
  EXPECT_FALSE(runtime::run_single_op(registry(), "ReduceSum", {kX, axes({2})}));
  EXPECT_FALSE(runtime::run_single_op(registry(), "ReduceSum", {kX, axes({1, -1})}));  // repeated
}

// ---- ReduceMean (axes attribute) ----

TEST(ReduceMean, AxesAndKeepdims) {
  expect_values(run("ReduceMean", {kX}, {{"axes", Ints{-2}}, {"keepdims", 0}}), {3},
                {2.5, 3.5, 4.5});
  expect_values(run("ReduceMean", {kX}, {{"axes", Ints{1}}}), {2, 1}, {2, 5});
  expect_values(run("ReduceMean", {kX}), {1, 1}, {3.5});
  expect_values(run("ReduceMean", {kX}, {{"keepdims", 0}}), {}, {3.5});
  expect_values(run("ReduceMean", {kX}, {{"axes", Ints{}}, {"keepdims", 0}}), {}, {3.5});
}

TEST(ReduceMean, IntegersTruncateAndEmpty) {
  const Tensor xi = Tensor::from_vector<int64_t>({2, 2}, {1, 2, -1, -2});
  const Tensor y = run("ReduceMean", {xi}, {{"axes", Ints{1}}, {"keepdims", 0}});
  EXPECT_EQ(y.dtype(), DType::kI64);
  expect_values(y, {2}, {1, -1});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_values(run("ReduceMean", {Tensor(DType::kF32, {2, 0})}, {{"axes", Ints{1}}}), {2, 1},
                {nan, nan});
  auto r = runtime::run_single_op(registry(), "ReduceMean", {Tensor(DType::kI32, {2, 0})},
                                  {{"axes", Ints{1}}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("empty"), std::string::npos) << r.error().message;
}

TEST(ReduceMean, Inference) {
  const TensorType x(DType::kF32,
                     {Dim::named("N"), Dim::known(3), Dim::named("H"), Dim::named("W")});
  auto t = runtime::infer_single_op(registry(), "ReduceMean", {&x}, {{"axes", Ints{2, -1}}});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 3, 1, 1]");
  t = runtime::infer_single_op(registry(), "ReduceMean", {&x},
                               {{"axes", Ints{0}}, {"keepdims", 0}});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[3, H, W]");
  EXPECT_FALSE(runtime::infer_single_op(registry(), "ReduceMean", {&x}, {{"axes", Ints{-5}}}));
}

// ---- ReduceMax ----

TEST(ReduceMax, Values) {
  expect_values(run("ReduceMax", {kX}, {{"axes", Ints{1}}}), {2, 1}, {3, 6});
  expect_values(run("ReduceMax", {kX}, {{"axes", Ints{-2}}, {"keepdims", 0}}), {3}, {4, 5, 6});
  expect_values(run("ReduceMax", {f32({3}, {-5, -2, -9})}, {{"keepdims", 0}}), {}, {-2});
  const Tensor xi = Tensor::from_vector<int8_t>({2, 2}, {-3, -7, 5, 1});
  const Tensor yi = run("ReduceMax", {xi}, {{"axes", Ints{1}}});
  EXPECT_EQ(yi.dtype(), DType::kI8);
  expect_values(yi, {2, 1}, {-3, 5});
}

TEST(ReduceMax, NanAndEmpty) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = f32({2, 2}, {1, std::nanf(""), std::nanf(""), 1});
  expect_values(run("ReduceMax", {x}, {{"axes", Ints{1}}, {"keepdims", 0}}), {2}, {nan, nan});
  expect_values(run("ReduceMax", {Tensor(DType::kF32, {2, 0})}, {{"axes", Ints{1}}}), {2, 1},
                {-inf, -inf});
  expect_values(
      run("ReduceMax", {Tensor(DType::kI32, {0, 2})}, {{"axes", Ints{0}}, {"keepdims", 0}}), {2},
      {static_cast<double>(std::numeric_limits<int32_t>::lowest()),
       static_cast<double>(std::numeric_limits<int32_t>::lowest())});
}

TEST(ReduceFamily, Schemas) {
  for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    const ops::OpDef* def = registry().find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->category, "reduce");
    EXPECT_FALSE(def->doc.empty());
    EXPECT_TRUE(def->infer);
    EXPECT_TRUE(def->reference);
    EXPECT_NE(def->find_attr("keepdims"), nullptr);
  }
  EXPECT_EQ(registry().find("ReduceSum")->inputs.size(), 2u);
  EXPECT_NE(registry().find("ReduceMean")->find_attr("axes"), nullptr);
}

}  // namespace
}  // namespace tessera
