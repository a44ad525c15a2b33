// Tests for engine/ops/elementwise.cpp: every element-wise op against hand-computed values,
// broadcasting, empty and scalar tensors, dtypes, inference (symbolic dims) and error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class ElementwiseTest : public ::testing::Test {
 protected:
  ops::OpRegistry reg_ = ops::make_default_registry();

  // Runs `op` and returns its single output (an f32 scalar after a failed expectation).
  Tensor run(const std::string& op, const std::vector<Tensor>& in, ir::Attributes attrs = {}) {
    auto r = runtime::run_single_op(reg_, op, in, std::move(attrs));
    EXPECT_TRUE(r.has_value()) << op << ": " << r.error().to_string();
    if (!r) return Tensor();
    EXPECT_EQ(r->size(), 1u);
    return (*r)[0];
  }
  // Runs `op` expecting failure; returns the error.
  Error fail(const std::string& op, const std::vector<Tensor>& in, ir::Attributes attrs = {}) {
    auto r = runtime::run_single_op(reg_, op, in, std::move(attrs));
    EXPECT_FALSE(r.has_value()) << op << " unexpectedly succeeded: " << (*r)[0].summary();
    return r ? Error{} : r.error();
  }
  Expected<std::vector<TensorType>> infer(const std::string& op, const std::vector<TensorType>& in,
                                          ir::Attributes attrs = {}) {
    std::vector<const TensorType*> ptrs;
    for (const TensorType& t : in) ptrs.push_back(&t);
    return runtime::infer_single_op(reg_, op, ptrs, std::move(attrs));
  }
};

Tensor f32(Shape shape, std::vector<float> v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
Tensor f64(Shape shape, std::vector<double> v) {
  return Tensor::from_vector<double>(std::move(shape), v);
}
Tensor i32(Shape shape, std::vector<int32_t> v) {
  return Tensor::from_vector<int32_t>(std::move(shape), v);
}
Tensor i64(Shape shape, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(shape), v);
}

// Checks dtype, shape and values (NaN matches NaN; tol is absolute plus relative).
void expect_tensor(const Tensor& t, DType dt, const Shape& shape, const std::vector<double>& want,
                   double tol = 0) {
  ASSERT_EQ(t.dtype(), dt) << t.summary();
  ASSERT_EQ(t.shape(), shape) << t.summary();
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double got = t.get(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " of " << t.summary();
    } else if (std::isinf(w)) {
      EXPECT_EQ(got, w) << "element " << i << " of " << t.summary();
    } else {
      EXPECT_NEAR(got, w, tol * (1 + std::fabs(w))) << "element " << i << " of " << t.summary();
    }
  }
}

TensorType tt(DType dt, std::vector<Dim> dims) {
  return TensorType(dt, std::move(dims));
}

// ---- arithmetic and broadcasting ----

TEST_F(ElementwiseTest, AddSameShape) {
  expect_tensor(run("Add", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {10, 20, 30, 40})}), DType::kF32,
                {2, 2}, {11, 22, 33, 44});
}

TEST_F(ElementwiseTest, AddBroadcastsRowVector) {
  // [2,3] + [3]
  expect_tensor(run("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}), DType::kF32,
                {2, 3}, {11, 22, 33, 14, 25, 36});
}

TEST_F(ElementwiseTest, SubBroadcastsColumnAgainstRow) {
  // [2,1] - [1,3] -> [2,3]: out[i][j] = a[i] - b[j]
  expect_tensor(run("Sub", {f32({2, 1}, {10, 20}), f32({1, 3}, {1, 2, 3})}), DType::kF32, {2, 3},
                {9, 8, 7, 19, 18, 17});
}

TEST_F(ElementwiseTest, MulScalarTimesTensorBothOrders) {
  expect_tensor(run("Mul", {Tensor::scalar<float>(3), f32({3}, {1, -2, 0.5f})}), DType::kF32, {3},
                {3, -6, 1.5});
  expect_tensor(run("Mul", {f32({3}, {1, -2, 0.5f}), Tensor::scalar<float>(3)}), DType::kF32, {3},
                {3, -6, 1.5});
}

TEST_F(ElementwiseTest, ScalarOpScalarIsScalar) {
  expect_tensor(run("Add", {Tensor::scalar<float>(1.5f), Tensor::scalar<float>(2)}), DType::kF32,
                {}, {3.5});
}

TEST_F(ElementwiseTest, BroadcastRank3AgainstMiddleAxis) {
  // a[i,j,k] = 100 i + 10 j + k over [2,3,4]; b[j,0] = 1000 j over [3,1].
  std::vector<float> a, want_f;
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        a.push_back(static_cast<float>(100 * i + 10 * j + k));
        want.push_back(100 * i + 10 * j + k + 1000 * j);
      }
  expect_tensor(run("Add", {f32({2, 3, 4}, a), f32({3, 1}, {0, 1000, 2000})}), DType::kF32,
                {2, 3, 4}, want);
}

TEST_F(ElementwiseTest, EmptyTensorsBroadcast) {
  expect_tensor(run("Add", {Tensor(DType::kF32, {0, 3}), f32({3}, {1, 2, 3})}), DType::kF32, {0, 3},
                {});
  expect_tensor(run("Exp", {Tensor(DType::kF32, {0, 3})}), DType::kF32, {0, 3}, {});
  expect_tensor(run("Less", {Tensor(DType::kF32, {0, 3}), Tensor::scalar<float>(0)}), DType::kBool,
                {0, 3}, {});
}

TEST_F(ElementwiseTest, F64Arithmetic) {
  expect_tensor(run("Sub", {f64({2}, {1e300, 0.1}), f64({2}, {1e299, 0.3})}), DType::kF64, {2},
                {9e299, 0.1 - 0.3}, 1e-15);
  expect_tensor(run("Div", {f64({2}, {1, -1}), f64({2}, {3, 0})}), DType::kF64, {2},
                {1.0 / 3, -kInf}, 1e-15);
}

TEST_F(ElementwiseTest, IntegerArithmeticIsExactAndWraps) {
  // 2^53 + 1 is not representable as a double: the kernel must not go through doubles.
  const int64_t big = (int64_t{1} << 53) + 1;
  Tensor r = run("Add", {i64({2}, {big, 7}), i64({2}, {2, -9})});
  ASSERT_EQ(r.dtype(), DType::kI64);
  EXPECT_EQ(r.data<int64_t>()[0], big + 2);
  EXPECT_EQ(r.data<int64_t>()[1], -2);
  Tensor w = run("Mul", {i32({1}, {std::numeric_limits<int32_t>::max()}), i32({1}, {2})});
  EXPECT_EQ(w.data<int32_t>()[0], -2);  // wraps modulo 2^32
  Tensor u = run("Sub", {Tensor::from_vector<uint8_t>({2}, {1, 200}),
                         Tensor::from_vector<uint8_t>({2}, {2, 100})});
  ASSERT_EQ(u.dtype(), DType::kU8);
  EXPECT_EQ(u.data<uint8_t>()[0], 255);
  EXPECT_EQ(u.data<uint8_t>()[1], 100);
}

TEST_F(ElementwiseTest, IntegerDivisionTruncatesTowardZero) {
  expect_tensor(run("Div", {i32({4}, {7, -7, 7, -7}), i32({4}, {2, 2, -2, -2})}), DType::kI32, {4},
                {3, -3, -3, 3});
  Tensor m = run("Div", {i32({1}, {std::numeric_limits<int32_t>::min()}), i32({1}, {-1})});
  EXPECT_EQ(m.data<int32_t>()[0], std::numeric_limits<int32_t>::min());  // wraps, no trap
  expect_tensor(run("Div", {Tensor::from_vector<int8_t>({2}, {-9, 9}), Tensor::scalar<int8_t>(4)}),
                DType::kI8, {2}, {-2, 2});
}

TEST_F(ElementwiseTest, IntegerDivisionByZeroIsAnError) {
  Error e = fail("Div", {i32({3}, {1, 2, 3}), i32({3}, {1, 0, 1})});
  EXPECT_NE(e.message.find("division by zero"), std::string::npos) << e.to_string();
  EXPECT_NE(e.message.find("Div"), std::string::npos) << e.to_string();
  EXPECT_GE(e.node, 0);
  // A broadcast zero scalar too.
  fail("Div", {i64({2}, {1, 2}), Tensor::scalar<int64_t>(0)});
}

TEST_F(ElementwiseTest, FloatDivisionByZeroFollowsIeee) {
  expect_tensor(run("Div", {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})}), DType::kF32, {3},
                {kInf, -kInf, kNaN});
}

TEST_F(ElementwiseTest, HalfTypesComputeInF32AndKeepDtype) {
  Tensor a = Tensor::from_doubles(DType::kF16, {2}, {1.5, -2});
  Tensor b = Tensor::from_doubles(DType::kF16, {2}, {2.25, 0.5});
  expect_tensor(run("Add", {a, b}), DType::kF16, {2}, {3.75, -1.5});
  Tensor c = Tensor::from_doubles(DType::kBF16, {2}, {4, -1});
  expect_tensor(run("Sqrt", {c}), DType::kBF16, {2}, {2, kNaN});
  expect_tensor(run("Greater", {b, a}), DType::kBool, {2}, {1, 1});
}

TEST_F(ElementwiseTest, MismatchedDtypesFail) {
  Error e = fail("Add", {f32({1}, {1}), i32({1}, {1})});
  EXPECT_NE(e.message.find("element type"), std::string::npos) << e.to_string();
  fail("Less", {f32({1}, {1}), f64({1}, {1})});
}

TEST_F(ElementwiseTest, NonContiguousInputs) {
  // The transpose of [[0,1,2],[3,4,5]] as a strided view: [[0,3],[1,4],[2,5]].
  Tensor base = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor t = base.view({3, 2}, {1, 3}, 0);
  ASSERT_FALSE(t.is_contiguous());
  expect_tensor(run("Neg", {t}), DType::kF32, {3, 2}, {0, -3, -1, -4, -2, -5});
  expect_tensor(run("Add", {t, f32({2}, {10, 20})}), DType::kF32, {3, 2}, {10, 23, 11, 24, 12, 25});
}

// ---- Pow ----

TEST_F(ElementwiseTest, PowFloat) {
  expect_tensor(run("Pow", {f32({4}, {2, 4, -2, 0}), f32({4}, {3, 0.5f, 2, 0})}), DType::kF32, {4},
                {8, 2, 4, 1}, 1e-6);
}

TEST_F(ElementwiseTest, PowExponentOfAnotherDtype) {
  // f32 base, i64 exponent broadcast: the result keeps the base's dtype.
  expect_tensor(run("Pow", {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {2, 3})}), DType::kF32, {2, 2},
                {1, 8, 9, 64}, 1e-6);
  // f64 base, f32 exponent.
  expect_tensor(run("Pow", {f64({1}, {9}), Tensor::scalar<float>(0.5f)}), DType::kF64, {1}, {3},
                1e-12);
}

TEST_F(ElementwiseTest, PowInteger) {
  expect_tensor(run("Pow", {i32({4}, {2, 3, -2, 5}), i64({4}, {10, 3, 3, 0})}), DType::kI32, {4},
                {1024, 27, -8, 1});
  // 3^39 = 4052555153018976267 does not fit a double exactly.
  Tensor big = run("Pow", {i64({1}, {3}), i64({1}, {39})});
  EXPECT_EQ(big.data<int64_t>()[0], int64_t{4052555153018976267});
  // Negative exponents truncate toward zero.
  expect_tensor(run("Pow", {i32({3}, {2, 1, -1}), i32({3}, {-1, -5, -3})}), DType::kI32, {3},
                {0, 1, -1});
}

TEST_F(ElementwiseTest, PowRejectsBoolExponent) {
  fail("Pow", {f32({1}, {2}), Tensor::from_bools({1}, {true})});
}

// ---- unary math and activations ----

struct UnaryCase {
  const char* op;
  std::vector<float> x;
  std::vector<double> y;
};

TEST_F(ElementwiseTest, UnaryOpsF32) {
  const std::vector<UnaryCase> cases = {
      {"Neg", {1, -2.5f, 0}, {-1, 2.5, 0}},
      {"Abs", {-3, 2, -0.5f}, {3, 2, 0.5}},
      {"Exp", {0, 1, -1}, {1, 2.718281828459045, 0.36787944117144233}},
      {"Log", {1, 2, 0, -1}, {0, 0.6931471805599453, -kInf, kNaN}},
      {"Sqrt", {4, 2, 0}, {2, 1.4142135623730951, 0}},
      {"Reciprocal", {2, -4, 0}, {0.5, -0.25, kInf}},
      {"Relu", {-1, 0, 2.5f}, {0, 0, 2.5}},
      {"Sigmoid",
       {0, 2, -2, -100},
       {0.5, 0.8807970779778823, 0.11920292202211755, 3.7200759760208e-44}},
      {"Tanh", {0, 1, -1}, {0, 0.7615941559557649, -0.7615941559557649}},
      {"Erf", {0, 1, -0.5f}, {0, 0.8427007929497149, -0.5204998778130465}},
      {"LeakyRelu", {-2, 0, 3}, {-0.02, 0, 3}},
  };
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(c.op);
    const Shape shape{static_cast<int64_t>(c.x.size())};
    expect_tensor(run(c.op, {f32(shape, c.x)}), DType::kF32, shape, c.y, 1e-6);
  }
}

TEST_F(ElementwiseTest, UnaryOpsF64AndScalar) {
  expect_tensor(run("Exp", {f64({1}, {2})}), DType::kF64, {1}, {7.38905609893065}, 1e-14);
  expect_tensor(run("Tanh", {Tensor::scalar<double>(0.5)}), DType::kF64, {}, {0.46211715726000974},
                1e-15);
  expect_tensor(run("Sigmoid", {Tensor::scalar<float>(0)}), DType::kF32, {}, {0.5});
}

TEST_F(ElementwiseTest, UnaryIntegers) {
  expect_tensor(run("Neg", {i32({3}, {5, -7, 0})}), DType::kI32, {3}, {-5, 7, 0});
  expect_tensor(run("Abs", {Tensor::from_vector<int8_t>({3}, {-5, 7, -128})}), DType::kI8, {3},
                {5, 7, -128});  // |-128| wraps in i8
  expect_tensor(run("Abs", {Tensor::from_vector<uint8_t>({2}, {0, 255})}), DType::kU8, {2},
                {0, 255});
  expect_tensor(run("Relu", {i64({3}, {-4, 0, 9})}), DType::kI64, {3}, {0, 0, 9});
}

TEST_F(ElementwiseTest, FloatOnlyOpsRejectIntegers) {
  Error e = fail("Exp", {i32({1}, {1})});
  EXPECT_NE(e.message.find("i32"), std::string::npos) << e.to_string();
  fail("Neg", {Tensor::from_vector<uint8_t>({1}, {1})});
}

TEST_F(ElementwiseTest, LeakyReluAlpha) {
  expect_tensor(run("LeakyRelu", {f32({3}, {-2, -0.5f, 4})}, {{"alpha", 0.5}}), DType::kF32, {3},
                {-1, -0.25, 4});
}

TEST_F(ElementwiseTest, GeluExactAndTanh) {
  const Tensor x = f32({4}, {1, -1, 2, 0});
  expect_tensor(run("Gelu", {x}), DType::kF32, {4},
                {0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0}, 1e-6);
  expect_tensor(run("Gelu", {x}, {{"approximate", "none"}}), DType::kF32, {4},
                {0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0}, 1e-6);
  expect_tensor(run("Gelu", {x}, {{"approximate", "tanh"}}), DType::kF32, {4},
                {0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0}, 1e-6);
  expect_tensor(run("Gelu", {f64({1}, {0.5})}, {{"approximate", "tanh"}}), DType::kF64, {1},
                {0.34571400982514394}, 1e-14);
}

TEST_F(ElementwiseTest, GeluRejectsUnknownMode) {
  Error e = fail("Gelu", {f32({1}, {1})}, {{"approximate", "fast"}});
  EXPECT_NE(e.message.find("approximate"), std::string::npos) << e.to_string();
}

// ---- Clip ----

TEST_F(ElementwiseTest, ClipMinAndMax) {
  expect_tensor(run("Clip", {f32({5}, {-5, -1, 0, 1, 5}), Tensor::scalar<float>(-1.5f),
                             Tensor::scalar<float>(2)}),
                DType::kF32, {5}, {-1.5, -1, 0, 1, 2});
}

TEST_F(ElementwiseTest, ClipWithAbsentMin) {
  const Tensor x = f32({4}, {-1e30f, -1, 3, static_cast<float>(kNaN)});
  const Tensor hi = Tensor::scalar<float>(2);
  auto r = runtime::run_single_op_with_absent(reg_, "Clip", {&x, nullptr, &hi});
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  expect_tensor((*r)[0], DType::kF32, {4}, {-1e30, -1, 2, kNaN}, 1e-6);
}

TEST_F(ElementwiseTest, ClipWithOnlyMinAndWithNoBounds) {
  const Tensor x = f32({3}, {-static_cast<float>(kInf), 0, 7});
  expect_tensor(run("Clip", {x, Tensor::scalar<float>(1)}), DType::kF32, {3}, {1, 1, 7});
  expect_tensor(run("Clip", {x}), DType::kF32, {3}, {-kInf, 0, 7});
}

TEST_F(ElementwiseTest, ClipIntegersAndInvertedBounds) {
  expect_tensor(run("Clip", {i32({4}, {-9, 0, 4, 9}), Tensor::scalar<int32_t>(-2),
                             Tensor::scalar<int32_t>(5)}),
                DType::kI32, {4}, {-2, 0, 4, 5});
  // min > max: everything becomes max.
  expect_tensor(
      run("Clip", {f32({3}, {-1, 0, 9}), Tensor::scalar<float>(3), Tensor::scalar<float>(1)}),
      DType::kF32, {3}, {1, 1, 1});
}

TEST_F(ElementwiseTest, ClipRejectsNonScalarOrMismatchedBounds) {
  fail("Clip", {f32({2}, {1, 2}), f32({2}, {0, 0})});
  fail("Clip", {f32({2}, {1, 2}), Tensor::scalar<double>(0)});
}

// ---- comparisons and Where ----

TEST_F(ElementwiseTest, ComparisonsBroadcastToBool) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  const Tensor b = f32({2}, {2, 3});
  expect_tensor(run("Equal", {a, b}), DType::kBool, {2, 2}, {0, 0, 0, 0});
  expect_tensor(run("Equal", {a, f32({2, 1}, {2, 3})}), DType::kBool, {2, 2}, {0, 1, 1, 0});
  expect_tensor(run("Less", {a, b}), DType::kBool, {2, 2}, {1, 1, 0, 0});
  expect_tensor(run("Greater", {a, Tensor::scalar<float>(2)}), DType::kBool, {2, 2}, {0, 0, 1, 1});
}

TEST_F(ElementwiseTest, ComparisonsWithNaNAreFalse) {
  const Tensor n = f32({1}, {static_cast<float>(kNaN)});
  expect_tensor(run("Equal", {n, n}), DType::kBool, {1}, {0});
  expect_tensor(run("Less", {n, f32({1}, {0})}), DType::kBool, {1}, {0});
  expect_tensor(run("Greater", {n, f32({1}, {0})}), DType::kBool, {1}, {0});
}

TEST_F(ElementwiseTest, ComparisonsIntegerAndBool) {
  const int64_t big = (int64_t{1} << 53) + 1;  // differs from 2^53 only beyond double precision
  expect_tensor(run("Equal", {i64({2}, {big, 3}), i64({2}, {big - 1, 3})}), DType::kBool, {2},
                {0, 1});
  expect_tensor(run("Less", {i32({3}, {-1, 5, 2}), i32({3}, {0, 5, 1})}), DType::kBool, {3},
                {1, 0, 0});
  expect_tensor(
      run("Equal", {Tensor::from_bools({3}, {true, false, true}), Tensor::from_bools({1}, {true})}),
      DType::kBool, {3}, {1, 0, 1});
  fail("Less", {Tensor::from_bools({1}, {true}), Tensor::from_bools({1}, {false})});
}

TEST_F(ElementwiseTest, WhereBroadcastsAllThree) {
  // condition [2,1], X [3], Y scalar -> [2,3]
  const Tensor c = Tensor::from_bools({2, 1}, {true, false});
  expect_tensor(run("Where", {c, f32({3}, {1, 2, 3}), Tensor::scalar<float>(-1)}), DType::kF32,
                {2, 3}, {1, 2, 3, -1, -1, -1});
  // condition [3], X [2,1], Y [2,3]
  const Tensor c2 = Tensor::from_bools({3}, {true, false, true});
  expect_tensor(run("Where", {c2, f32({2, 1}, {7, 8}), f32({2, 3}, {0, 1, 2, 3, 4, 5})}),
                DType::kF32, {2, 3}, {7, 1, 7, 8, 4, 8});
}

TEST_F(ElementwiseTest, WhereOtherDtypes) {
  const Tensor c = Tensor::from_bools({2}, {false, true});
  const int64_t big = (int64_t{1} << 60) + 3;
  Tensor r = run("Where", {c, i64({2}, {1, big}), i64({2}, {-big, 2})});
  ASSERT_EQ(r.dtype(), DType::kI64);
  EXPECT_EQ(r.data<int64_t>()[0], -big);
  EXPECT_EQ(r.data<int64_t>()[1], big);
  expect_tensor(run("Where", {c, Tensor::from_doubles(DType::kF16, {2}, {0.5, 1.5}),
                              Tensor::from_doubles(DType::kF16, {2}, {-3, -4})}),
                DType::kF16, {2}, {-3, 1.5});
  expect_tensor(
      run("Where", {c, Tensor::from_bools({1}, {true}), Tensor::from_bools({1}, {false})}),
      DType::kBool, {2}, {0, 1});
  expect_tensor(run("Where", {c, f64({2}, {1, 2}), f64({2}, {3, 4})}), DType::kF64, {2}, {3, 2});
}

TEST_F(ElementwiseTest, WhereRejectsNonBoolConditionAndMixedValues) {
  fail("Where", {f32({1}, {1}), f32({1}, {1}), f32({1}, {2})});
  fail("Where", {Tensor::from_bools({1}, {true}), f32({1}, {1}), f64({1}, {2})});
}

// ---- Cast ----

TEST_F(ElementwiseTest, CastFloatToIntTruncates) {
  expect_tensor(run("Cast", {f32({6}, {1.7f, -1.7f, 2.5f, -0.5f, 3, static_cast<float>(kNaN)})},
                    {{"to", "i32"}}),
                DType::kI32, {6}, {1, -1, 2, 0, 3, 0});
  expect_tensor(run("Cast", {f64({2}, {1e20, -1e20})}, {{"to", "i32"}}), DType::kI32, {2},
                {2147483647.0, -2147483648.0});  // saturates
}

TEST_F(ElementwiseTest, CastToBool) {
  expect_tensor(run("Cast", {f32({4}, {0, -0.5f, 2, static_cast<float>(kNaN)})}, {{"to", "bool"}}),
                DType::kBool, {4}, {0, 1, 1, 1});
  expect_tensor(run("Cast", {i64({3}, {0, 256, -1})}, {{"to", "bool"}}), DType::kBool, {3},
                {0, 1, 1});
}

TEST_F(ElementwiseTest, CastBetweenOtherTypes) {
  expect_tensor(run("Cast", {Tensor::from_bools({2}, {true, false})}, {{"to", "f32"}}), DType::kF32,
                {2}, {1, 0});
  expect_tensor(run("Cast", {i32({3}, {300, -1, 65})}, {{"to", "u8"}}), DType::kU8, {3},
                {44, 255, 65});
  expect_tensor(run("Cast", {i64({2}, {3, -2})}, {{"to", "f16"}}), DType::kF16, {2}, {3, -2});
  expect_tensor(run("Cast", {Tensor::from_doubles(DType::kBF16, {1}, {1.5})}, {{"to", "f64"}}),
                DType::kF64, {1}, {1.5});
  expect_tensor(run("Cast", {f32({2}, {1.25f, 2})}, {{"to", "f32"}}), DType::kF32, {2}, {1.25, 2});
  const int64_t big = (int64_t{1} << 53) + 1;
  Tensor r = run("Cast", {i64({1}, {big})}, {{"to", "i64"}});
  EXPECT_EQ(r.data<int64_t>()[0], big);
}

TEST_F(ElementwiseTest, CastRejectsUnknownTypeName) {
  Error e = fail("Cast", {f32({1}, {1})}, {{"to", "float128"}});
  EXPECT_NE(e.message.find("float128"), std::string::npos) << e.to_string();
  fail("Cast", {f32({1}, {1})});  // `to` is required
}

// ---- inference ----

TEST_F(ElementwiseTest, InferSymbolicBroadcast) {
  auto r = infer(
      "Add", {tt(DType::kF32, {Dim::named("N"), Dim::known(3)}), tt(DType::kF32, {Dim::known(3)})});
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ((*r)[0].to_string(), "f32[N, 3]");
  auto s = infer(
      "Mul", {tt(DType::kF64, {Dim::named("N"), Dim::known(1)}), tt(DType::kF64, {Dim::known(4)})});
  ASSERT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_EQ((*s)[0].to_string(), "f64[N, 4]");
  auto b = infer("Less", {tt(DType::kI32, {Dim::named("B"), Dim::known(2)}), tt(DType::kI32, {})});
  ASSERT_TRUE(b.has_value()) << b.error().to_string();
  EXPECT_EQ((*b)[0].to_string(), "bool[B, 2]");
}

TEST_F(ElementwiseTest, InferIncompatibleShapesNamesTheNode) {
  auto r = infer(
      "Add", {tt(DType::kF32, {Dim::known(2), Dim::known(3)}), tt(DType::kF32, {Dim::known(4)})});
  ASSERT_FALSE(r.has_value());
  EXPECT_GE(r.error().node, 0);
  EXPECT_NE(r.error().message.find("Add"), std::string::npos) << r.error().to_string();
  EXPECT_NE(r.error().message.find("broadcast"), std::string::npos) << r.error().to_string();
  // The kernel path reports it too.
  Error e = fail("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({4}, {1, 2, 3, 4})});
  EXPECT_NE(e.message.find("Add"), std::string::npos) << e.to_string();
}

TEST_F(ElementwiseTest, InferOutputTypes) {
  const TensorType x = tt(DType::kF16, {Dim::named("N"), Dim::known(8)});
  auto pow = infer("Pow", {x, tt(DType::kI64, {})});
  ASSERT_TRUE(pow.has_value()) << pow.error().to_string();
  EXPECT_EQ((*pow)[0].to_string(), "f16[N, 8]");
  auto cast = infer("Cast", {x}, {{"to", "i64"}});
  ASSERT_TRUE(cast.has_value()) << cast.error().to_string();
  EXPECT_EQ((*cast)[0].to_string(), "i64[N, 8]");
  auto where = infer("Where", {tt(DType::kBool, {Dim::named("N"), Dim::known(1)}),
                               tt(DType::kI32, {Dim::known(8)}), tt(DType::kI32, {})});
  ASSERT_TRUE(where.has_value()) << where.error().to_string();
  EXPECT_EQ((*where)[0].to_string(), "i32[N, 8]");
  auto gelu = infer("Gelu", {x}, {{"approximate", "tanh"}});
  ASSERT_TRUE(gelu.has_value()) << gelu.error().to_string();
  EXPECT_EQ((*gelu)[0].to_string(), "f16[N, 8]");
  auto clip = infer("Clip", {x, tt(DType::kF16, {}), tt(DType::kF16, {Dim::known(1)})});
  ASSERT_TRUE(clip.has_value()) << clip.error().to_string();
  EXPECT_EQ((*clip)[0].to_string(), "f16[N, 8]");
}

TEST_F(ElementwiseTest, InferRejectsBadTypes) {
  const TensorType x = tt(DType::kF32, {Dim::known(2)});
  EXPECT_FALSE(infer("Add", {x, tt(DType::kI64, {Dim::known(2)})}).has_value());
  EXPECT_FALSE(infer("Sigmoid", {tt(DType::kI32, {Dim::known(2)})}).has_value());
  EXPECT_FALSE(infer("Where", {x, x, x}).has_value());
  EXPECT_FALSE(infer("Clip", {x, tt(DType::kF32, {Dim::known(2)})}).has_value());
  EXPECT_FALSE(infer("Cast", {x}, {{"to", "f8"}}).has_value());
  EXPECT_FALSE(infer("Gelu", {x}, {{"approximate", "erf"}}).has_value());
}

// ---- schema coverage ----

TEST_F(ElementwiseTest, EveryOpHasSchemaInferenceAndKernel) {
  const std::vector<std::string> ops = {
      "Add",  "Sub",  "Mul",        "Div",  "Pow",     "Neg",   "Abs", "Exp",
      "Log",  "Sqrt", "Reciprocal", "Relu", "Sigmoid", "Tanh",  "Erf", "LeakyRelu",
      "Gelu", "Clip", "Equal",      "Less", "Greater", "Where", "Cast"};
  const std::vector<std::string> categories = {"math", "activation", "logic", "cast"};
  for (const std::string& name : ops) {
    SCOPED_TRACE(name);
    const ops::OpDef* def = reg_.find(name);
    ASSERT_NE(def, nullptr);
    EXPECT_FALSE(def->doc.empty());
    EXPECT_NE(std::find(categories.begin(), categories.end(), def->category), categories.end());
    EXPECT_FALSE(def->inputs.empty());
    EXPECT_EQ(def->outputs.size(), 1u);
    EXPECT_TRUE(static_cast<bool>(def->infer));
    EXPECT_TRUE(static_cast<bool>(def->reference));
  }
  EXPECT_EQ(reg_.find("Clip")->inputs[1].name, "min");
  EXPECT_TRUE(reg_.find("Clip")->inputs[2].optional);
  ASSERT_NE(reg_.find("LeakyRelu")->find_attr("alpha"), nullptr);
  EXPECT_DOUBLE_EQ(reg_.find("LeakyRelu")->find_attr("alpha")->default_value->f(), 0.01);
  EXPECT_EQ(reg_.find("Gelu")->find_attr("approximate")->default_value->s(), "none");
  EXPECT_TRUE(reg_.find("Cast")->find_attr("to")->required);
}

}  // namespace
}  // namespace tessera
