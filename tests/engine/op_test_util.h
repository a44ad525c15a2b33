// Shared helpers for the op tests: the registry, tensor literals, running one op, and comparing
// values with a tolerance.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera {

inline const ops::OpRegistry& registry() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

inline Tensor f32(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }

// Runs one op with the reference kernel; a failure is reported and empty tensors returned.
inline std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& in, ir::Attributes attrs = {},
                               int nout = 1) {
  auto r = runtime::run_single_op(registry(), op, in, std::move(attrs), nout);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
  return r ? *r : std::vector<Tensor>(static_cast<size_t>(nout));
}

inline void expect_values(const Tensor& t, const Shape& shape, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(t.shape(), shape) << t.summary();
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(t.get(i), want[i], tol) << "element " << i;
}

// 0, 1, 2, ... in the given dtype.
inline Tensor iota(DType dt, Shape s) {
  Tensor t(dt, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i));
  return t;
}

// Exact comparison of dtype, shape and values.
inline void expect_tensor(const Tensor& t, DType dt, const Shape& shape, const std::vector<double>& values) {
  EXPECT_EQ(t.dtype(), dt);
  EXPECT_EQ(t.shape(), shape) << shape_to_string(t.shape());
  EXPECT_EQ(t.to_doubles(), values) << t.summary(32);
}

}  // namespace tessera
