// Pieces shared by the math family's files (math_ops.cpp, math_binary.cpp, math_unary.cpp,
// math_reduce.cpp, math_index.cpp, math_generate.cpp, math_einsum.cpp). Internal to engine/ops;
// register_math_ops (op_def.h) is the only public entry point of the family.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/ops/helpers.h"

namespace tessera::ops {

// Max Min Sum Mean Mod BitShift And Or Xor Not LessOrEqual GreaterOrEqual PRelu (math_binary.cpp).
void register_math_binary_ops(OpRegistry& registry);
// Activations, trigonometric and rounding functions, Sign, IsInf, IsNaN, CastLike (math_unary.cpp).
void register_math_unary_ops(OpRegistry& registry);
// ReduceL1 ReduceL2 ReduceProd ReduceMin ReduceLogSum ReduceLogSumExp ReduceSumSquare
// (math_reduce.cpp).
void register_math_reduce_ops(OpRegistry& registry);
// ArgMax ArgMin CumSum TopK Hardmax (math_index.cpp).
void register_math_index_ops(OpRegistry& registry);
// Range Size ConstantOfShape EyeLike (math_generate.cpp).
void register_math_generate_ops(OpRegistry& registry);
// Einsum (math_einsum.cpp).
void register_math_einsum_ops(OpRegistry& registry);


// Kernels may run on graphs whose types were never inferred, so they check dtypes themselves:
// `dt` must be in def.allowed_types (empty: any).
Status check_kernel_type(const KernelContext& ctx, DType dt);
// Input `index` has the dtype `want`.
Status check_kernel_dtype(const KernelContext& ctx, size_t index, DType want);
// The broadcast shape of the given tensors, or an error naming the node.
Expected<Shape> broadcast_tensors(const KernelContext& ctx, const std::vector<const Tensor*>& ts);
// The broadcast of every present input's type (unranked when one is); errors name the node.
Expected<TensorType> broadcast_types(const InferContext& ctx, size_t first, DType out_dtype);
// The values of a scalar-like (one element) i32/i64 tensor; `what` names it in errors.
Expected<int64_t> scalar_int(const Tensor& t, const ir::Node& node, const std::string& what);
// "f32" etc. as std::string.
inline std::string dt_name(DType dt) {
  return std::string(dtype_name(dt));
}
// One inferred output.
inline std::vector<TensorType> one_type(TensorType t) {
  return std::vector<TensorType>{std::move(t)};
}

// dispatch_numeric plus bool (as uint8_t holding 0 or 1).
// Converts x0 to `to` by Cast's rules (floats to integers truncate toward zero, NaN -> 0,
// saturating; integers wrap; anything to bool is x != 0) into ctx.outputs (elementwise.cpp;
// shared by Cast and CastLike).
Status convert_into_output(KernelContext& ctx, const Tensor& x0, DType to);

template <class F>
Status dispatch_all(DType dt, const ir::Node& node, F&& f) {
  if (dt == DType::kBool) return f(uint8_t{});
  return dispatch_numeric(dt, node, std::forward<F>(f));
}

// Float to integer: NaN -> 0, truncation toward zero, saturation at the type's range (C++ leaves
// out-of-range conversions undefined); integer to narrower integer wraps. The same rules as Cast.
template <class T, class S>
T saturate_cast(S v) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S>) {
    if (std::isnan(v)) return T{0};
    const long double x = std::trunc(static_cast<long double>(v));
    if (x <= static_cast<long double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (x >= static_cast<long double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(x);
  } else {
    return static_cast<T>(v);
  }
}

// Walks `out` in row-major order and calls f(o, offsets) for every element, where offsets[k] is
// the element's offset in input k (contiguous, shape *ins[k], broadcastable to `out`).
template <class F>
void for_each_broadcast(const Shape& out, const std::vector<const Shape*>& ins, F&& f) {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  if (n == 0) return;
  const size_t k_count = ins.size();
  std::vector<int64_t> p(k_count, 0);
  bool same = true;
  for (const Shape* s : ins) same = same && *s == out;
  if (same || out.empty()) {
    for (int64_t o = 0; o < n; ++o) {
      std::fill(p.begin(), p.end(), same ? o : 0);
      f(o, p);
    }
    return;
  }
  const size_t rank = out.size();
  std::vector<std::vector<int64_t>> st(k_count);
  for (size_t k = 0; k < k_count; ++k) st[k] = broadcast_strides(*ins[k], out);
  const int64_t inner = out[rank - 1];
  std::vector<int64_t> idx(rank, 0), base(k_count, 0);
  for (int64_t o = 0; o < n; o += inner) {
    p = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(o + j, p);
      for (size_t k = 0; k < k_count; ++k) p[k] += st[k][rank - 1];
    }
    for (size_t d = rank - 1; d-- > 0;) {  // odometer over all axes but the last
      for (size_t k = 0; k < k_count; ++k) base[k] += st[k][d];
      if (++idx[d] < out[d]) break;
      for (size_t k = 0; k < k_count; ++k) base[k] -= st[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Y = f(X) element-wise with Y of X's dtype. Float types only unless kInts (then every numeric
// type); f16/bf16 compute in f32.
template <bool kInts, class F>
Status map_unary(KernelContext& ctx, F f) {
  const Tensor x0 = ctx.in(0).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, x0.dtype()));
  const Tensor x = widen(x0);
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  auto body = [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(f(px[i]));
    return Status::ok();
  };
  if constexpr (kInts) {
    RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, body));
  } else {
    RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, body));
  }
  ctx.outputs = {narrow(y, x0.dtype())};
  return Status::ok();
}

// Every axis of `shape` split at `axis`: outer (product before), len (the axis), inner (after).
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis)
      s.outer *= shape[static_cast<size_t>(d)];
    else if (d == axis)
      s.len = shape[static_cast<size_t>(d)];
    else
      s.inner *= shape[static_cast<size_t>(d)];
  }
  return s;
}

// Floating-point operations counted as the element count of input 0 (reductions, scans).
double flops_input_numel(const InferContext& ctx, const std::vector<TensorType>& outputs);

}  // namespace tessera::ops
