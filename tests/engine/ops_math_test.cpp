// Tests for engine/ops/math_ops.cpp: the math family is registered completely (schema, docs,
// inference, kernel, gradient or a reason why not, FLOPs for reductions), accepts the element
// types the ONNX node tests use, and the helpers it shares with its files (math_internal.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "engine/ops/math_internal.h"
#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

const std::vector<std::string> kMathOps = {"Max",
                                           "Min",
                                           "Sum",
                                           "Mean",
                                           "Mod",
                                           "BitShift",
                                           "And",
                                           "Or",
                                           "Xor",
                                           "Not",
                                           "LessOrEqual",
                                           "GreaterOrEqual",
                                           "PRelu",
                                           "Selu",
                                           "Elu",
                                           "Celu",
                                           "HardSigmoid",
                                           "HardSwish",
                                           "Softplus",
                                           "Softsign",
                                           "Shrink",
                                           "ThresholdedRelu",
                                           "Mish",
                                           "Sin",
                                           "Cos",
                                           "Tan",
                                           "Asin",
                                           "Acos",
                                           "Atan",
                                           "Sinh",
                                           "Cosh",
                                           "Asinh",
                                           "Acosh",
                                           "Atanh",
                                           "Ceil",
                                           "Floor",
                                           "Round",
                                           "Sign",
                                           "IsInf",
                                           "IsNaN",
                                           "CastLike",
                                           "ReduceL1",
                                           "ReduceL2",
                                           "ReduceProd",
                                           "ReduceMin",
                                           "ReduceLogSum",
                                           "ReduceLogSumExp",
                                           "ReduceSumSquare",
                                           "ArgMax",
                                           "ArgMin",
                                           "CumSum",
                                           "TopK",
                                           "Hardmax",
                                           "Range",
                                           "Size",
                                           "ConstantOfShape",
                                           "EyeLike",
                                           "Einsum"};

// Ops whose outputs are not differentiable (bool, integer indices, piecewise constant, shapes).
const std::set<std::string> kNotDifferentiable = {
    "BitShift",        "And",    "Or",     "Xor",     "Not",   "LessOrEqual",
    "GreaterOrEqual",  "Ceil",   "Floor",  "Round",   "Sign",  "IsInf",
    "IsNaN",           "ArgMax", "ArgMin", "Hardmax", "Range", "Size",
    "ConstantOfShape", "EyeLike"};

TEST(MathFamily, EveryOpIsComplete) {
  for (const std::string& name : kMathOps) {
    const ops::OpDef* def = registry().find(name);
    ASSERT_NE(def, nullptr) << "missing op " << name;
    EXPECT_FALSE(def->doc.empty()) << name;
    EXPECT_TRUE(def->infer) << name;
    EXPECT_TRUE(def->reference) << name;
    EXPECT_FALSE(def->outputs.empty()) << name;
    for (const ops::AttrSpec& a : def->attrs) EXPECT_FALSE(a.doc.empty()) << name << "." << a.name;
    if (kNotDifferentiable.count(name))
      EXPECT_FALSE(def->no_gradient_reason.empty()) << name << " needs a no_gradient_reason";
    else
      EXPECT_TRUE(def->no_gradient_reason.empty()) << name << " is differentiable";
    if (name.rfind("Reduce", 0) == 0 || name == "ArgMax" || name == "ArgMin" || name == "TopK" ||
        name == "Einsum")
      EXPECT_TRUE(def->flops) << name << " needs a flops function";
  }
}

// The element types of the ONNX node tests (libonnx 1.12 test data) that Tessera can represent.
TEST(MathFamily, AcceptsTheTypesOfTheOnnxNodeTests) {
  struct Case {
    const char* op;
    std::vector<DType> types;
  };
  const std::vector<Case> cases = {
      {"Max",
       {DType::kF16, DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}},
      {"Min",
       {DType::kF16, DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}},
      {"Mod",
       {DType::kF16, DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}},
      {"Sum", {DType::kF32}},
      {"Mean", {DType::kF32}},
      {"BitShift", {DType::kU8}},
      {"And", {DType::kBool}},
      {"Not", {DType::kBool}},
      {"PRelu", {DType::kF32}},
      {"CastLike", {DType::kF16, DType::kF32, DType::kF64}},
      {"CumSum", {DType::kF64}},
      {"EyeLike", {DType::kI32}},
      {"ConstantOfShape", {DType::kI64}},
      {"Range", {DType::kF32, DType::kI32}},
      {"Einsum", {DType::kF64}},
      {"ReduceLogSumExp", {DType::kF64}},
      {"ArgMax", {DType::kF32}},
      {"TopK", {DType::kF32}}};
  for (const Case& c : cases) {
    const ops::OpDef* def = registry().find(c.op);
    ASSERT_NE(def, nullptr) << c.op;
    for (DType dt : c.types)
      EXPECT_TRUE(def->allowed_types.empty() ||
                  std::find(def->allowed_types.begin(), def->allowed_types.end(), dt) !=
                      def->allowed_types.end())
          << c.op << " rejects " << dtype_name(dt);
  }
}

TEST(MathHelpers, ForEachBroadcastGivesInputOffsets) {
  // out [2,3] from a [2,1] and b [3]
  const Shape out = {2, 3}, a = {2, 1}, b = {3};
  std::vector<std::vector<int64_t>> seen;
  ops::for_each_broadcast(out, {&a, &b}, [&](int64_t o, const std::vector<int64_t>& i) {
    seen.push_back({o, i[0], i[1]});
  });
  const std::vector<std::vector<int64_t>> want = {{0, 0, 0}, {1, 0, 1}, {2, 0, 2},
                                                  {3, 1, 0}, {4, 1, 1}, {5, 1, 2}};
  EXPECT_EQ(seen, want);
  int calls = 0;
  const Shape empty = {0, 3};
  ops::for_each_broadcast(empty, {&b}, [&](int64_t, const std::vector<int64_t>&) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(MathHelpers, ScalarIntAndSplit) {
  ir::Node n;
  n.op = "X";
  auto v = ops::scalar_int(i32({1}, {-3}), n, "k");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, -3);
  v = ops::scalar_int(i64({}, {INT64_MAX}), n, "k");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, INT64_MAX);
  EXPECT_FALSE(ops::scalar_int(i64({2}, {1, 2}), n, "k").has_value());
  EXPECT_FALSE(ops::scalar_int(f32({}, {1}), n, "k").has_value());
  const ops::AxisSplit s = ops::split_at({2, 3, 4, 5}, 2);
  EXPECT_EQ(s.outer, 6);
  EXPECT_EQ(s.len, 4);
  EXPECT_EQ(s.inner, 5);
}

TEST(MathHelpers, SaturateCastMatchesCast) {
  EXPECT_EQ((ops::saturate_cast<int8_t>(300.0)), 127);
  EXPECT_EQ((ops::saturate_cast<int8_t>(-300.0)), -128);
  EXPECT_EQ((ops::saturate_cast<int32_t>(-2.9f)), -2);
  EXPECT_EQ((ops::saturate_cast<uint8_t>(std::nan(""))), 0);
  EXPECT_EQ((ops::saturate_cast<uint8_t>(int32_t{257})), 1);  // integers wrap
}

}  // namespace
}  // namespace tessera::mathtest
