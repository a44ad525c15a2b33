// Tests of engine/ops/quantize.cpp beyond ONNX's backend cases (conformance): per-axis
// parameters, rounding half to even before the zero point, saturation, per-row and per-column
// zero points and scales, and the errors of bad scales and zero points. Expected values by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

Tensor u8s(Shape s, std::vector<double> v) { return Tensor::from_doubles(DType::kU8, std::move(s), v); }
Tensor i8s(Shape s, std::vector<double> v) { return Tensor::from_doubles(DType::kI8, std::move(s), v); }

std::string error_of(const std::string& op, const std::vector<const Tensor*>& in, ir::Attributes attrs = {}, int nout = 1) {
  auto r = runtime::run_single_op_with_absent(registry(), op, in, std::move(attrs), nout);
  return r ? "no error" : r.error().to_string();
}

TEST(QuantizeLinear, RoundsHalfToEvenThenAddsTheZeroPointAndSaturates) {
  // 0.5 / 0.2 = 2.5 -> 2; 1.5 / 0.2 = 7.5 -> 8; -100 saturates at -128; 30 at 127.
  const Tensor x = f32({5}, {0.5f, 1.5f, -100.f, 30.f, -0.1f});
  const Tensor s = f32({}, {0.2f});
  const Tensor zp = i8s({}, {3});
  expect_tensor(run("QuantizeLinear", {x, s, zp})[0], DType::kI8, {5}, {5, 11, -128, 127, 3});
  // Without a zero point: u8, zero point 0, negatives saturate at 0.
  expect_tensor(run("QuantizeLinear", {x, s})[0], DType::kU8, {5}, {2, 8, 0, 150, 0});
}

TEST(QuantizeLinear, PerAxisScalesAndZeroPoints) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor s = f32({3}, {1, 0.5f, 2});
  const Tensor zp = u8s({3}, {0, 10, 100});
  expect_tensor(run("QuantizeLinear", {x, s, zp})[0], DType::kU8, {2, 3}, {1, 14, 102, 4, 20, 103});
  // axis 0: one scale per row.
  const Tensor s0 = f32({2}, {1, 2});
  expect_tensor(run("QuantizeLinear", {x, s0}, {{"axis", int64_t{0}}})[0], DType::kU8, {2, 3}, {1, 2, 3, 2, 2, 3});
  // Dequantize inverts it up to the rounding (3 / 2 = 1.5 became 2, which reads back as 4).
  const Tensor q = run("QuantizeLinear", {x, s, zp})[0];
  expect_values(run("DequantizeLinear", {q, s, zp})[0], {2, 3}, {1, 2, 4, 4, 5, 6});
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  // A = [[1, 2], [3, 4]] - [1, 2] per row = [[0, 1], [1, 2]]; B = [[5, 6], [7, 8]] - [5, 0] per
  // column = [[0, 6], [2, 8]]. Product: [[2, 8], [4, 22]].
  const Tensor a = u8s({2, 2}, {1, 2, 3, 4}), b = u8s({2, 2}, {5, 6, 7, 8});
  const Tensor azp = u8s({2}, {1, 2}), bzp = u8s({2}, {5, 0});
  expect_tensor(run("MatMulInteger", {a, b, azp, bzp})[0], DType::kI32, {2, 2}, {2, 8, 4, 22});
  expect_tensor(run("MatMulInteger", {a, b})[0], DType::kI32, {2, 2}, {19, 22, 43, 50});
}

TEST(QLinearMatMul, PerColumnScalesRequantize) {
  // (a - 0) x (b - 0) = [[19, 22], [43, 50]]; scales a 0.5, b [1, 2], y 4: [[2.375, 5.5], [5.375, 12.5]]
  // -> round half even [[2, 6], [5, 12]] + 1.
  const Tensor a = u8s({2, 2}, {1, 2, 3, 4}), b = u8s({2, 2}, {5, 6, 7, 8});
  const Tensor as = f32({}, {0.5f}), bs = f32({2}, {1, 2}), ys = f32({}, {4});
  const Tensor zero = u8s({}, {0}), yzp = u8s({}, {1});
  expect_tensor(run("QLinearMatMul", {a, as, zero, b, bs, zero, ys, yzp})[0], DType::kU8, {2, 2}, {3, 7, 6, 13});
}

TEST(Quantization, BadScalesAndZeroPointsAreErrorsNamingTheInput) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor zero_scale = f32({}, {0}), neg_scale = f32({3}, {1, -1, 1}), nan_scale = f32({}, {NAN});
  const Tensor f64_scale = Tensor::from_doubles(DType::kF64, {}, {1}), long_scale = f32({4}, {1, 1, 1, 1});
  const Tensor s = f32({}, {1}), f32_zp = f32({}, {0}), scale_2d = f32({1, 3}, {1, 1, 1});
  EXPECT_NE(error_of("QuantizeLinear", {&x, &zero_scale}).find("'y_scale'[0] is 0"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &neg_scale}).find("'y_scale'[1] is -1"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &nan_scale}).find("positive and finite"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &f64_scale}).find("input 'y_scale' must be f32"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &long_scale}).find("one value per slice of axis (3)"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &scale_2d}).find("must be a scalar or 1-D"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &s, &f32_zp}).find("'y_zero_point' must be u8 or i8"), std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {&x, &long_scale}, {{"axis", int64_t{5}}}).find("axis"), std::string::npos);
  const Tensor q = u8s({2, 2}, {1, 2, 3, 4}), qi8 = i8s({2, 2}, {1, 2, 3, 4});
  EXPECT_NE(error_of("DequantizeLinear", {&q, &s, &qi8}).find("'x_zero_point' must be u8"), std::string::npos);
  const Tensor i32 = Tensor::from_vector<int32_t>({2}, {1, 2}), i32zp = Tensor::from_vector<int32_t>({}, {3});
  EXPECT_NE(error_of("DequantizeLinear", {&i32, &s, &i32zp}).find("zero point of 0"), std::string::npos);
  const Tensor zp3 = u8s({3}, {1, 2, 3});
  EXPECT_NE(error_of("MatMulInteger", {&q, &q, &zp3}).find("one value per row of A"), std::string::npos);
  EXPECT_NE(error_of("MatMulInteger", {&x, &q}).find("input 'A' must be u8 or i8"), std::string::npos);
  // DynamicQuantizeLinear of a NaN has no range.
  const Tensor with_nan = f32({2}, {1, NAN});
  EXPECT_NE(error_of("DynamicQuantizeLinear", {&with_nan}, {}, 3).find("NaN or infinity"), std::string::npos);
}

TEST(DynamicQuantizeLinear, AllZerosTakesScaleOne) {
  const Tensor x = f32({3}, {0, 0, 0});
  auto out = runtime::run_single_op(registry(), "DynamicQuantizeLinear", {x}, {}, 3);
  ASSERT_TRUE(out) << out.error().to_string();
  expect_tensor((*out)[0], DType::kU8, {3}, {0, 0, 0});
  expect_tensor((*out)[1], DType::kF32, {}, {1});
  expect_tensor((*out)[2], DType::kU8, {}, {0});
}

}  // namespace
}  // namespace tessera
