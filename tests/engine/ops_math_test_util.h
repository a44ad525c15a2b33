// Helpers for the math-family op tests (tests/engine/ops_math*_test.cpp): typed tensor literals,
// running an op expecting success or failure, inference with constants, and NaN-aware compares.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera::mathtest {

using ir::Dim;
using ir::TensorType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

inline Tensor f64(Shape s, std::vector<double> v) {
  return Tensor::from_vector<double>(std::move(s), v);
}
inline Tensor i32(Shape s, std::vector<int32_t> v) {
  return Tensor::from_vector<int32_t>(std::move(s), v);
}
inline Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(s), v);
}
inline Tensor i8(Shape s, std::vector<int8_t> v) {
  return Tensor::from_vector<int8_t>(std::move(s), v);
}
inline Tensor u8(Shape s, std::vector<uint8_t> v) {
  return Tensor::from_vector<uint8_t>(std::move(s), v);
}
inline Tensor bools(Shape s, std::vector<bool> v) {
  return Tensor::from_bools(std::move(s), v);
}
inline Tensor of(DType dt, Shape s, std::vector<double> v) {
  return Tensor::from_doubles(dt, std::move(s), v);
}

// Runs `op` expecting success; returns output 0 (an f32 scalar after a failure).
inline Tensor run1(const std::string& op, const std::vector<Tensor>& in,
                   ir::Attributes attrs = {}) {
  return run(op, in, std::move(attrs), 1)[0];
}

// Runs `op` expecting failure; returns the error message.
inline std::string fail(const std::string& op, const std::vector<Tensor>& in,
                        ir::Attributes attrs = {}, int nout = 1) {
  auto r = runtime::run_single_op(registry(), op, in, std::move(attrs), nout);
  EXPECT_FALSE(r.has_value()) << op << " unexpectedly succeeded: " << (*r)[0].summary();
  return r ? std::string() : r.error().message;
}

// Type inference of one node; constants[i] (when given and non-null) is input i's value.
inline Expected<std::vector<TensorType>> infer(const std::string& op,
                                               const std::vector<TensorType>& in,
                                               ir::Attributes attrs = {}, int nout = 1,
                                               const std::vector<const Tensor*>& constants = {}) {
  std::vector<const TensorType*> ptrs;
  for (const TensorType& t : in) ptrs.push_back(&t);
  return runtime::infer_single_op(registry(), op, ptrs, std::move(attrs), nout, constants);
}

// Expects inference to fail with a message containing `part`.
inline void expect_infer_error(const Expected<std::vector<TensorType>>& r,
                               const std::string& part) {
  ASSERT_FALSE(r.has_value()) << "inferred " << (*r)[0].to_string();
  EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
}

// A type from sizes: -1 is an unknown dim.
inline TensorType tt(DType dt, const std::vector<int64_t>& dims) {
  TensorType t(dt, {});
  for (int64_t d : dims) t.dims.push_back(d < 0 ? Dim::unknown() : Dim::known(d));
  return t;
}

// Dtype, shape and values; NaN matches NaN, infinities must be equal, others within
// tol * (1 + |want|).
inline void expect_near(const Tensor& t, DType dt, const Shape& shape,
                        const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(t.dtype(), dt) << t.summary();
  ASSERT_EQ(t.shape(), shape) << t.summary();
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double got = t.get(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(w))
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " of " << t.summary(32);
    else if (std::isinf(w))
      EXPECT_EQ(got, w) << "element " << i << " of " << t.summary(32);
    else
      EXPECT_NEAR(got, w, tol * (1 + std::fabs(w))) << "element " << i << " of " << t.summary(32);
  }
}

}  // namespace tessera::mathtest
