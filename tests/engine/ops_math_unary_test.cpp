// Tests for engine/ops/math_unary.cpp: activations, trigonometric and rounding functions, Sign,
// IsInf, IsNaN and CastLike against NumPy-computed values (pasted in), with attributes, dtypes,
// NaN/inf and error paths.
#include <gtest/gtest.h>

#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

const Tensor kX = f32({5}, {-1.5f, -0.5f, 0.f, 0.5f, 2.f});

TEST(MathActivation, DefaultsMatchNumPy) {
  expect_near(run1("Selu", {kX}), DType::kF32, {5},
              {-1.36581435, -0.691758188, 0, 0.525350494, 2.10140197});
  expect_near(run1("Elu", {kX}), DType::kF32, {5}, {-0.77686984, -0.39346934, 0, 0.5, 2});
  expect_near(run1("HardSigmoid", {kX}), DType::kF32, {5}, {0.2, 0.4, 0.5, 0.6, 0.9});
  expect_near(run1("HardSwish", {kX}), DType::kF32, {5},
              {-0.375, -0.208333333, 0, 0.291666667, 1.66666667});
  expect_near(run1("Softplus", {kX}), DType::kF32, {5},
              {0.201413278, 0.474076984, 0.693147181, 0.974076984, 2.12692801});
  expect_near(run1("Softsign", {kX}), DType::kF32, {5},
              {-0.6, -0.333333333, 0, 0.333333333, 0.666666667});
  expect_near(run1("Mish", {kX}), DType::kF32, {5},
              {-0.298099742, -0.220743775, 0, 0.375245211, 1.94395896});
  expect_near(run1("ThresholdedRelu", {kX}), DType::kF32, {5}, {0, 0, 0, 0, 2});
  expect_near(run1("Shrink", {kX}), DType::kF32, {5}, {-1.5, 0, 0, 0, 2});  // lambd 0.5, bias 0
  expect_near(run1("Celu", {kX}), DType::kF32, {5},
              {-0.77686984, -0.39346934, 0, 0.5, 2});  // alpha 1 = Elu
}

TEST(MathActivation, Attributes) {
  expect_near(run1("Selu", {f32({3}, {-1, 0, 1})}, {{"alpha", 2.0}, {"gamma", 3.0}}), DType::kF32,
              {3}, {-3.79272335, 0, 3});  // ONNX's test_selu_example
  expect_near(run1("Elu", {f32({3}, {-1, 0, 1})}, {{"alpha", 2.0}}), DType::kF32, {3},
              {-1.26424112, 0, 1});
  expect_near(run1("Celu", {kX}, {{"alpha", 2.0}}), DType::kF32, {5},
              {-1.05526689, -0.442398434, 0, 0.5, 2});
  expect_near(run1("HardSigmoid", {f32({3}, {-1, 0, 1})}, {{"alpha", 0.5}, {"beta", 0.6}}),
              DType::kF32, {3}, {0.1, 0.6, 1});
  expect_near(run1("ThresholdedRelu", {f32({4}, {-1, 1.5f, 2, 3})}, {{"alpha", 1.5}}), DType::kF32,
              {4}, {0, 0, 2, 3});
  // test_shrink_soft: lambd 1.5, bias 1.5
  expect_near(run1("Shrink", {f32({5}, {-2, -1, 0, 1, 2})}, {{"lambd", 1.5}, {"bias", 1.5}}),
              DType::kF32, {5}, {-0.5, 0, 0, 0, 0.5});
}

TEST(MathActivation, ShrinkOnIntegers) {
  expect_tensor(run1("Shrink", {i32({5}, {-3, -1, 0, 1, 3})}, {{"lambd", 1.0}, {"bias", 1.0}}),
                DType::kI32, {5}, {-2, 0, 0, 0, 2});
  expect_tensor(run1("Shrink", {u8({3}, {0, 1, 200})}, {{"lambd", 0.5}, {"bias", 0.5}}), DType::kU8,
                {3}, {0, 0, 199});
}

TEST(MathActivation, ExtremesStayFinite) {
  expect_near(run1("Softplus", {f64({3}, {1000, -1000, kNaN})}), DType::kF64, {3}, {1000, 0, kNaN});
  expect_near(run1("Mish", {f64({2}, {1000, -1000})}), DType::kF64, {2}, {1000, 0});
  expect_near(run1("Elu", {f32({2}, {-INFINITY, INFINITY})}), DType::kF32, {2}, {-1, kInf});
  expect_near(run1("Softsign", {f32({2}, {-INFINITY, INFINITY})}), DType::kF32, {2}, {kNaN, kNaN});
}

TEST(MathActivation, HalfAndDoubleTypes) {
  expect_near(run1("HardSwish", {of(DType::kF16, {2}, {-4, 1})}), DType::kF16, {2}, {0, 0.66666},
              1e-3);
  expect_near(run1("Selu", {of(DType::kBF16, {1}, {1})}), DType::kBF16, {1}, {1.0507}, 1e-2);
  expect_near(run1("Softplus", {f64({1}, {0})}), DType::kF64, {1}, {0.6931471805599453}, 1e-15);
}

TEST(MathActivation, WrongTypes) {
  expect_infer_error(infer("Selu", {tt(DType::kI32, {2})}), "allowed");
  expect_infer_error(infer("Softplus", {tt(DType::kBool, {2})}), "allowed");
  expect_infer_error(infer("Shrink", {tt(DType::kBool, {2})}), "allowed");
  expect_infer_error(infer("Elu", {tt(DType::kF32, {2})}, {{"alpha", int64_t{1}}}),
                     "must be float");
}

TEST(MathFunction, TrigonometricAndHyperbolic) {
  expect_near(run1("Sin", {kX}), DType::kF32, {5},
              {-0.997494987, -0.479425539, 0, 0.479425539, 0.909297427});
  expect_near(run1("Cos", {kX}), DType::kF32, {5},
              {0.0707372017, 0.877582562, 1, 0.877582562, -0.416146837});
  expect_near(run1("Tan", {kX}), DType::kF32, {5},
              {-14.1014199, -0.54630249, 0, 0.54630249, -2.18503986}, 1e-5);
  expect_near(run1("Atan", {kX}), DType::kF32, {5},
              {-0.982793723, -0.463647609, 0, 0.463647609, 1.10714872});
  expect_near(run1("Sinh", {kX}), DType::kF32, {5},
              {-2.12927946, -0.521095305, 0, 0.521095305, 3.62686041});
  expect_near(run1("Cosh", {kX}), DType::kF32, {5},
              {2.35240962, 1.12762597, 1, 1.12762597, 3.76219569});
  expect_near(run1("Asinh", {kX}), DType::kF32, {5},
              {-1.19476322, -0.481211825, 0, 0.481211825, 1.44363548});
  const Tensor y = f64({4}, {-0.5, 0, 0.5, 0.9});
  expect_near(run1("Asin", {y}), DType::kF64, {4}, {-0.523598776, 0, 0.523598776, 1.11976951});
  expect_near(run1("Acos", {y}), DType::kF64, {4},
              {2.0943951, 1.57079633, 1.04719755, 0.451026812});
  expect_near(run1("Atanh", {y}), DType::kF64, {4}, {-0.549306144, 0, 0.549306144, 1.47221949});
  expect_near(run1("Acosh", {f64({4}, {1, 1.5, 2, 10})}), DType::kF64, {4},
              {0, 0.96242365, 1.3169579, 2.99322285});
}

TEST(MathFunction, OutsideTheDomain) {
  expect_near(run1("Asin", {f32({2}, {2, -2})}), DType::kF32, {2}, {kNaN, kNaN});
  expect_near(run1("Acosh", {f32({1}, {0.5})}), DType::kF32, {1}, {kNaN});
  expect_near(run1("Atanh", {f32({3}, {1, -1, 2})}), DType::kF32, {3}, {kInf, -kInf, kNaN});
  expect_near(run1("Sin", {f32({1}, {INFINITY})}), DType::kF32, {1}, {kNaN});
}

TEST(MathFunction, Rounding) {
  const Tensor x = f32({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.4f, 0.6f, -0.6f, 2.51f});
  expect_near(run1("Round", {x}), DType::kF32, {10}, {0, 2, 2, -0, -2, -2, 0, 1, -1, 3});
  expect_near(run1("Ceil", {x}), DType::kF32, {10}, {1, 2, 3, -0, -1, -2, 1, 1, -0, 3});
  expect_near(run1("Floor", {x}), DType::kF32, {10}, {0, 1, 2, -1, -2, -3, 0, 0, -1, 2});
  const Tensor special = f64({4}, {kNaN, kInf, -kInf, 4503599627370497.0});  // 2^52 + 1 is integral
  expect_near(run1("Round", {special}), DType::kF64, {4}, {kNaN, kInf, -kInf, 4503599627370497.0});
  expect_near(run1("Ceil", {special}), DType::kF64, {4}, {kNaN, kInf, -kInf, 4503599627370497.0});
  expect_infer_error(infer("Round", {tt(DType::kI32, {2})}), "allowed");
}

TEST(MathFunction, Sign) {
  expect_near(run1("Sign", {f32({5}, {-2.5f, -0.f, 0.f, 3.f, NAN})}), DType::kF32, {5},
              {-1, 0, 0, 1, kNaN});
  expect_tensor(run1("Sign", {i64({3}, {INT64_MIN, 0, 7})}), DType::kI64, {3}, {-1, 0, 1});
  expect_tensor(run1("Sign", {u8({2}, {0, 200})}), DType::kU8, {2}, {0, 1});
  expect_infer_error(infer("Sign", {tt(DType::kBool, {2})}), "allowed");
}

TEST(MathPredicate, IsInfAndIsNaN) {
  const Tensor x = f32({6}, {-1.2f, NAN, INFINITY, 2.8f, -INFINITY, INFINITY});
  expect_tensor(run1("IsInf", {x}), DType::kBool, {6}, {0, 0, 1, 0, 1, 1});
  expect_tensor(run1("IsInf", {x}, {{"detect_negative", 0}}), DType::kBool, {6},
                {0, 0, 1, 0, 0, 1});
  expect_tensor(run1("IsInf", {x}, {{"detect_positive", 0}}), DType::kBool, {6},
                {0, 0, 0, 0, 1, 0});
  expect_tensor(run1("IsNaN", {x}), DType::kBool, {6}, {0, 1, 0, 0, 0, 0});
  expect_tensor(run1("IsNaN", {of(DType::kF16, {2}, {kNaN, 1})}), DType::kBool, {2}, {1, 0});
  auto t = infer("IsNaN", {tt(DType::kF64, {-1, 2})});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "bool[?, 2]");
  expect_infer_error(infer("IsInf", {tt(DType::kI32, {2})}), "allowed");
}

TEST(MathCastLike, TakesTheTargetsElementType) {
  const Tensor x = f32({4}, {-2.7f, 0.5f, 300.f, NAN});
  expect_tensor(run1("CastLike", {x, i32({0}, {})}), DType::kI32, {4}, {-2, 0, 300, 0});
  expect_tensor(run1("CastLike", {x, u8({1}, {0})}), DType::kU8, {4}, {0, 0, 255, 0});  // saturates
  expect_tensor(run1("CastLike", {x, bools({}, {false})}), DType::kBool, {4}, {1, 1, 1, 1});
  expect_near(run1("CastLike", {x, f64({1}, {0})}), DType::kF64, {4}, {-2.7, 0.5, 300, kNaN}, 1e-6);
  expect_near(run1("CastLike", {f64({2}, {1.0009765625, 65520}), of(DType::kF16, {1}, {0})}),
              DType::kF16, {2}, {1.0009765625, kInf});
  expect_tensor(run1("CastLike", {i64({2}, {257, -1}), u8({1}, {0})}), DType::kU8, {2},
                {1, 255});  // wraps
  expect_tensor(run1("CastLike", {bools({2}, {true, false}), f32({1}, {0})}), DType::kF32, {2},
                {1, 0});
  auto t = infer("CastLike", {tt(DType::kF32, {-1, 3}), tt(DType::kI8, {})});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "i8[?, 3]");
}

}  // namespace
}  // namespace tessera::mathtest
