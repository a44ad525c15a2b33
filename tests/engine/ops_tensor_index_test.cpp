// Tests of engine/ops/tensor_index_ops.cpp: Concat, Split, Slice and Gather against hand-computed
// values, ONNX clamping rules and symbolic inference.
#include <gtest/gtest.h>

#include <limits>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
constexpr int64_t kBegin = std::numeric_limits<int64_t>::min();

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64s(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}


TensorType tt(DType dt, std::vector<Dim> dims) { return TensorType(dt, std::move(dims)); }
Dim sym(const char* s) { return Dim::named(s); }
Dim k(int64_t v) { return Dim::known(v); }

class TensorIndexOpsTest : public ::testing::Test {
 protected:
  std::vector<Tensor> run(const std::string& op, const std::vector<const Tensor*>& inputs,
                          ir::Attributes attrs = {}, int num_outputs = 1) {
    auto r = runtime::run_single_op_with_absent(reg_, op, inputs, std::move(attrs), num_outputs);
    EXPECT_TRUE(r.has_value()) << r.error().to_string();
    return r ? *r : std::vector<Tensor>(static_cast<size_t>(num_outputs));
  }
  std::string run_error(const std::string& op, const std::vector<const Tensor*>& inputs,
                        ir::Attributes attrs = {}, int num_outputs = 1) {
    auto r = runtime::run_single_op_with_absent(reg_, op, inputs, std::move(attrs), num_outputs);
    EXPECT_FALSE(r.has_value());
    if (r) return {};
    EXPECT_GE(r.error().node, 0);
    EXPECT_NE(r.error().message.find(op), std::string::npos) << r.error().message;
    return r.error().message;
  }
  std::vector<std::string> infer(const std::string& op, const std::vector<const TensorType*>& inputs,
                                 ir::Attributes attrs = {}, int num_outputs = 1,
                                 const std::vector<const Tensor*>& constants = {}) {
    auto r = runtime::infer_single_op(reg_, op, inputs, std::move(attrs), num_outputs, constants);
    if (!r) return {"error: " + r.error().message};
    std::vector<std::string> out;
    for (const TensorType& t : *r) out.push_back(t.to_string());
    return out;
  }
  using Strings = std::vector<std::string>;

  ops::OpRegistry reg_ = ops::make_default_registry();
};

// ---- Concat ----

TEST_F(TensorIndexOpsTest, ConcatAxes) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
  expect_tensor(run("Concat", {&a, &b}, {{"axis", 0}})[0], DType::kF32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_tensor(run("Concat", {&a, &b}, {{"axis", 1}})[0], DType::kF32, {2, 4}, {1, 2, 5, 6, 3, 4, 7, 8});
  expect_tensor(run("Concat", {&a, &b}, {{"axis", -1}})[0], DType::kF32, {2, 4}, {1, 2, 5, 6, 3, 4, 7, 8});
  expect_tensor(run("Concat", {&a}, {{"axis", 0}})[0], DType::kF32, {2, 2}, {1, 2, 3, 4});
}

TEST_F(TensorIndexOpsTest, ConcatWithEmptyTensor) {
  const Tensor a = f32({2, 1}, {1, 2}), e(DType::kF32, {2, 0}), b = f32({2, 2}, {3, 4, 5, 6});
  expect_tensor(run("Concat", {&a, &e, &b}, {{"axis", 1}})[0], DType::kF32, {2, 3}, {1, 3, 4, 2, 5, 6});
  const Tensor e0(DType::kI32, {0, 3}), e1(DType::kI32, {0, 3});
  EXPECT_EQ(run("Concat", {&e0, &e1}, {{"axis", 0}})[0].shape(), (Shape{0, 3}));
}

TEST_F(TensorIndexOpsTest, ConcatErrors) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), c = f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor s = Tensor::scalar<float>(1.f), i = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  run_error("Concat", {&a, &c}, {{"axis", 0}});
  run_error("Concat", {&s, &s}, {{"axis", 0}});
  run_error("Concat", {&a, &i}, {{"axis", 0}});
  run_error("Concat", {&a, &a}, {{"axis", 2}});
}

TEST_F(TensorIndexOpsTest, ConcatInference) {
  const TensorType a = tt(DType::kF32, {sym("N"), k(3)}), b = tt(DType::kF32, {sym("N"), k(5)});
  const TensorType m = tt(DType::kF32, {sym("M"), k(3)}), z = TensorType::of(DType::kF32, {0, 3});
  EXPECT_EQ(infer("Concat", {&a, &b}, {{"axis", 1}}), Strings{"f32[N, 8]"});
  EXPECT_EQ(infer("Concat", {&a, &m}, {{"axis", 0}}), Strings{"f32[?, 3]"});
  EXPECT_EQ(infer("Concat", {&a, &z}, {{"axis", 0}}), Strings{"f32[N, 3]"});
  const TensorType n4 = tt(DType::kF32, {k(4), k(3)});
  EXPECT_EQ(infer("Concat", {&a, &n4}, {{"axis", 1}}), Strings{"f32[4, 6]"});
}

// ---- Split ----

TEST_F(TensorIndexOpsTest, SplitEqual) {
  const Tensor x = iota(DType::kF32, {6});
  auto outs = run("Split", {&x}, {}, 3);
  ASSERT_EQ(outs.size(), 3u);
  expect_tensor(outs[0], DType::kF32, {2}, {0, 1});
  expect_tensor(outs[1], DType::kF32, {2}, {2, 3});
  expect_tensor(outs[2], DType::kF32, {2}, {4, 5});
  run_error("Split", {&x}, {}, 4);  // 6 is not divisible by 4
}

TEST_F(TensorIndexOpsTest, SplitUnequalSizes) {
  const Tensor x = iota(DType::kI64, {6}), sizes = i64s({1, 2, 3});
  auto outs = run("Split", {&x, &sizes}, {}, 3);
  ASSERT_EQ(outs.size(), 3u);
  expect_tensor(outs[0], DType::kI64, {1}, {0});
  expect_tensor(outs[1], DType::kI64, {2}, {1, 2});
  expect_tensor(outs[2], DType::kI64, {3}, {3, 4, 5});
  // Along the last axis of a matrix, with an empty piece.
  const Tensor m = iota(DType::kF32, {2, 4}), sizes2 = i64s({1, 0, 3});
  auto cols = run("Split", {&m, &sizes2}, {{"axis", -1}}, 3);
  ASSERT_EQ(cols.size(), 3u);
  expect_tensor(cols[0], DType::kF32, {2, 1}, {0, 4});
  expect_tensor(cols[1], DType::kF32, {2, 0}, {});
  expect_tensor(cols[2], DType::kF32, {2, 3}, {1, 2, 3, 5, 6, 7});
  const Tensor bad_sum = i64s({1, 2, 2}), bad_len = i64s({3, 3});
  run_error("Split", {&x, &bad_sum}, {}, 3);
  run_error("Split", {&x, &bad_len}, {}, 3);
}

TEST_F(TensorIndexOpsTest, SplitInference) {
  const TensorType x = tt(DType::kF32, {sym("N"), k(6)});
  EXPECT_EQ(infer("Split", {&x}, {{"axis", 1}}, 2), (Strings{"f32[N, 3]", "f32[N, 3]"}));
  EXPECT_EQ(infer("Split", {&x}, {}, 2), (Strings{"f32[?, 6]", "f32[?, 6]"}));
  const Tensor sizes = i64s({2, 4});
  const TensorType len2 = TensorType::of(DType::kI64, {2});
  EXPECT_EQ(infer("Split", {&x, &len2}, {{"axis", -1}}, 2, {nullptr, &sizes}),
            (Strings{"f32[N, 2]", "f32[N, 4]"}));
  EXPECT_EQ(infer("Split", {&x, &len2}, {{"axis", 1}}, 2), (Strings{"f32[N, ?]", "f32[N, ?]"}));
}

// ---- Slice ----

TEST_F(TensorIndexOpsTest, SliceBasicAndNegativeIndices) {
  const Tensor x = iota(DType::kF32, {10});
  const Tensor s2 = i64s({2}), e7 = i64s({7}), sm3 = i64s({-3}), em1 = i64s({-1});
  expect_tensor(run("Slice", {&x, &s2, &e7})[0], DType::kF32, {5}, {2, 3, 4, 5, 6});
  expect_tensor(run("Slice", {&x, &sm3, &em1})[0], DType::kF32, {2}, {7, 8});
}

TEST_F(TensorIndexOpsTest, SliceNegativeSteps) {
  const Tensor x = iota(DType::kI32, {10});
  const Tensor st = i64s({-1}), en = i64s({kBegin}), step = i64s({-1}), ax = i64s({0});
  expect_tensor(run("Slice", {&x, &st, &en, &ax, &step})[0], DType::kI32, {10},
                {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  const Tensor s8 = i64s({8}), e1 = i64s({1}), m3 = i64s({-3});
  expect_tensor(run("Slice", {&x, &s8, &e1, nullptr, &m3})[0], DType::kI32, {3}, {8, 5, 2});
  // start past the end clamps to dim-1, end -100 clamps to "before 0".
  const Tensor s50 = i64s({50}), em100 = i64s({-100}), m4 = i64s({-4});
  expect_tensor(run("Slice", {&x, &s50, &em100, nullptr, &m4})[0], DType::kI32, {3}, {9, 5, 1});
}

TEST_F(TensorIndexOpsTest, SliceClampsOutOfRange) {
  const Tensor x = iota(DType::kF32, {5});
  const Tensor sm100 = i64s({-100}), e100 = i64s({100}), s20 = i64s({20}), e30 = i64s({30});
  expect_tensor(run("Slice", {&x, &sm100, &e100})[0], DType::kF32, {5}, {0, 1, 2, 3, 4});
  expect_tensor(run("Slice", {&x, &s20, &e30})[0], DType::kF32, {0}, {});
  const Tensor s0 = i64s({0}), end = i64s({kEnd});
  expect_tensor(run("Slice", {&x, &s0, &end})[0], DType::kF32, {5}, {0, 1, 2, 3, 4});
}

TEST_F(TensorIndexOpsTest, SliceAxesStepsAndI32Indices) {
  const Tensor x = iota(DType::kF32, {3, 4});
  const Tensor s1 = i64s({1}), end = i64s({kEnd}), ax1 = i64s({1}), st2 = i64s({2});
  expect_tensor(run("Slice", {&x, &s1, &end, &ax1, &st2})[0], DType::kF32, {3, 2}, {1, 3, 5, 7, 9, 11});
  const Tensor axm2 = i64s({-2});
  expect_tensor(run("Slice", {&x, &s1, &end, &axm2})[0], DType::kF32, {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  const Tensor st = Tensor::from_vector<int32_t>({2}, {0, 1}), en = Tensor::from_vector<int32_t>({2}, {2, 3});
  expect_tensor(run("Slice", {&x, &st, &en})[0], DType::kF32, {2, 2}, {1, 2, 5, 6});
  const Tensor e = Tensor(DType::kF32, {0, 4}), s0 = i64s({0}), e2 = i64s({2});
  EXPECT_EQ(run("Slice", {&e, &s0, &e2, &ax1})[0].shape(), (Shape{0, 2}));
}

TEST_F(TensorIndexOpsTest, SliceErrors) {
  const Tensor x = iota(DType::kF32, {3, 4});
  const Tensor s = i64s({0, 0}), e = i64s({1, 1}), dup = i64s({1, -1}), zero = i64s({1, 0});
  run_error("Slice", {&x, &s, &e, &dup});
  run_error("Slice", {&x, &s, &e, nullptr, &zero});
  const Tensor s1 = i64s({0}), ax5 = i64s({5});
  run_error("Slice", {&x, &s1, &e});  // starts and ends differ in length
  run_error("Slice", {&x, &s1, &s1, &ax5});
}

TEST_F(TensorIndexOpsTest, SliceInference) {
  const TensorType x = tt(DType::kF32, {sym("N"), k(10)});
  const TensorType len1 = TensorType::of(DType::kI64, {1});
  const Tensor s0 = i64s({0}), end = i64s({kEnd}), ax0 = i64s({0}), s2 = i64s({2}), e5 = i64s({5});
  const Tensor ax1 = i64s({1}), m1 = i64s({-1});
  EXPECT_EQ(infer("Slice", {&x, &len1, &len1, &len1}, {}, 1, {nullptr, &s0, &end, &ax0}), Strings{"f32[N, 10]"});
  EXPECT_EQ(infer("Slice", {&x, &len1, &len1, &len1}, {}, 1, {nullptr, &s2, &e5, &ax1}), Strings{"f32[N, 3]"});
  EXPECT_EQ(infer("Slice", {&x, &len1, &len1, &len1}, {}, 1, {nullptr, &s2, &e5, &ax0}), Strings{"f32[?, 10]"});
  EXPECT_EQ(infer("Slice", {&x, &len1, &len1, &len1, &len1}, {}, 1, {nullptr, &end, &s0, &ax1, &m1}),
            Strings{"f32[N, 9]"});
  // Values unknown: the sliced axes lose their size, the others keep theirs.
  EXPECT_EQ(infer("Slice", {&x, &len1, &len1, &len1}, {}, 1, {nullptr, nullptr, nullptr, &ax1}),
            Strings{"f32[N, ?]"});
  EXPECT_EQ(infer("Slice", {&x, &len1, &len1}), Strings{"f32[?, 10]"});
}

// ---- Gather ----

TEST_F(TensorIndexOpsTest, GatherRows) {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6}), idx = i64s({2, 0, -1});
  expect_tensor(run("Gather", {&x, &idx})[0], DType::kF32, {3, 2}, {5, 6, 1, 2, 5, 6});
  const Tensor one = Tensor::scalar<int64_t>(1);
  expect_tensor(run("Gather", {&x, &one})[0], DType::kF32, {2}, {3, 4});
  const Tensor none = Tensor(DType::kI64, {0});
  EXPECT_EQ(run("Gather", {&x, &none})[0].shape(), (Shape{0, 2}));
}

TEST_F(TensorIndexOpsTest, GatherAxisOneWithMatrixIndices) {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = Tensor::from_vector<int32_t>({1, 2}, {1, 0});
  expect_tensor(run("Gather", {&x, &idx}, {{"axis", 1}})[0], DType::kF32, {3, 1, 2}, {2, 1, 4, 3, 6, 5});
  expect_tensor(run("Gather", {&x, &idx}, {{"axis", -1}})[0], DType::kF32, {3, 1, 2}, {2, 1, 4, 3, 6, 5});
}

TEST_F(TensorIndexOpsTest, GatherOutOfRangeIsAnError) {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6}), idx = i64s({0, 3}), neg = i64s({-4});
  EXPECT_NE(run_error("Gather", {&x, &idx}).find("index 3 is out of range"), std::string::npos);
  run_error("Gather", {&x, &neg});
  const Tensor f = f32({1}, {0});
  run_error("Gather", {&x, &f});  // float indices
}

TEST_F(TensorIndexOpsTest, GatherInference) {
  const TensorType x = tt(DType::kF32, {sym("N"), k(5)}), idx = tt(DType::kI64, {sym("K")});
  EXPECT_EQ(infer("Gather", {&x, &idx}, {{"axis", 1}}), Strings{"f32[N, K]"});
  const TensorType scalar = TensorType::of(DType::kI32, {});
  EXPECT_EQ(infer("Gather", {&x, &scalar}), Strings{"f32[5]"});
}

TEST_F(TensorIndexOpsTest, EveryOpHasSchemaInferenceAndKernel) {
  for (const char* name : {"Concat", "Split", "Slice", "Gather"}) {
    const ops::OpDef* def = reg_.find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->category, "tensor") << name;
    EXPECT_TRUE(def->infer) << name;
    EXPECT_TRUE(def->reference) << name;
  }
}

}  // namespace
}  // namespace tessera
