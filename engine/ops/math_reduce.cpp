// Reductions beyond reduce.cpp's Sum/Mean/Max: ReduceL1 ReduceL2 ReduceProd ReduceMin
// ReduceLogSum ReduceLogSumExp ReduceSumSquare, in their opset-13..17 form (axes as an attribute).
//
// Axes are in [-rank, rank-1], without repeats. No axes reduces every axis, unless
// noop_with_empty_axes=1 (an opset-18 attribute, accepted here too), which makes the op the
// identity. keepdims=1 keeps reduced axes as size 1. Over an empty set (a reduced axis of size 0)
// each op gives its identity: 0 for L1, L2 and SumSquare, 1 for Prod, +inf (the largest integer)
// for Min, -inf for LogSum and LogSumExp (the lowest integer for integer types).
// Floats accumulate in f64; integer L1, SumSquare and Prod accumulate in 64 bits and wrap to the
// element type; integer L2, LogSum and LogSumExp compute in f64 and convert back (truncating).
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/math_internal.h"

namespace tessera::ops {
namespace {

enum class Kind { kL1, kL2, kProd, kMin, kLogSum, kLogSumExp, kSumSquare };

// Per input axis: reduced or not; `identity` when no axes and noop_with_empty_axes=1.
struct Reduction {
  std::vector<bool> mask;
  bool identity = false;
};

Expected<Reduction> resolve_axes(const ir::Node& node, const AttrReader& attrs, int rank) {
  Reduction r;
  const std::vector<int64_t> axes = attrs.has("axes") ? attrs.ints("axes") : std::vector<int64_t>{};
  r.mask.assign(static_cast<size_t>(rank), axes.empty());
  if (axes.empty()) {
    r.identity = attrs.i("noop_with_empty_axes") != 0;
    if (r.identity) std::fill(r.mask.begin(), r.mask.end(), false);
    return r;
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return node_error(
          node, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    const size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (r.mask[d]) return node_error(node, "axis " + std::to_string(a) + " is repeated in axes");
    r.mask[d] = true;
  }
  return r;
}

Expected<std::vector<TensorType>> infer_reduce(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one_type(TensorType::unranked(x.dtype));
  const AttrReader attrs = ctx.attrs();
  TRY(Reduction r, resolve_axes(ctx.node, attrs, x.rank()));
  const bool keepdims = attrs.i("keepdims") != 0;
  TensorType out(x.dtype, {});
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (!r.mask[d])
      out.dims.push_back(x.dims[d]);
    else if (keepdims)
      out.dims.push_back(Dim::known(1));
  }
  return one_type(out);
}

// Walks every input element in row-major order with the offset of its output element; `ostride`
// holds the output strides per input axis (0 on reduced axes).
template <class F>
void for_each_reduced(const Shape& shape, const std::vector<int64_t>& ostride, F&& f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, o);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) {
        o += ostride[d];
        break;
      }
      o -= ostride[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

template <class T>
void reduce_min(const Tensor& x, const std::vector<int64_t>& ostride, Tensor& y) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  T init = std::numeric_limits<T>::max();
  if constexpr (std::is_floating_point_v<T>) init = std::numeric_limits<T>::infinity();
  std::fill(py, py + y.numel(), init);
  for_each_reduced(x.shape(), ostride, [&](int64_t i, int64_t o) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(py[o])) return;  // NaN wins, as in numpy
      if (std::isnan(px[i])) {
        py[o] = px[i];
        return;
      }
    }
    if (px[i] < py[o]) py[o] = px[i];
  });
}

// Integer L1, SumSquare, Prod: 64-bit wrapping accumulation.
template <class T>
void reduce_int_exact(Kind kind, const Tensor& x, const std::vector<int64_t>& ostride, Tensor& y) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  std::vector<uint64_t> acc(static_cast<size_t>(y.numel()), kind == Kind::kProd ? 1 : 0);
  for_each_reduced(x.shape(), ostride, [&](int64_t i, int64_t o) {
    const uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(px[i]));
    if (kind == Kind::kProd)
      acc[o] *= v;
    else if (kind == Kind::kSumSquare)
      acc[o] += v * v;
    else
      acc[o] += px[i] < T(0) ? uint64_t{0} - v : v;
  });
  for (int64_t o = 0; o < y.numel(); ++o) py[o] = static_cast<T>(acc[o]);
}

// Everything else: f64 accumulation.
template <class T>
void reduce_f64(Kind kind, const Tensor& x, const std::vector<int64_t>& ostride, Tensor& y) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const size_t out_n = static_cast<size_t>(y.numel());
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> acc(out_n, kind == Kind::kProd ? 1.0 : 0.0);
  std::vector<double> peak;  // LogSumExp: the maximum, subtracted before exp
  if (kind == Kind::kLogSumExp) {
    peak.assign(out_n, -kInf);
    for_each_reduced(x.shape(), ostride, [&](int64_t i, int64_t o) {
      const double v = static_cast<double>(px[i]);
      if (v > peak[o] || std::isnan(v)) peak[o] = std::isnan(peak[o]) ? peak[o] : v;
    });
  }
  for_each_reduced(x.shape(), ostride, [&](int64_t i, int64_t o) {
    const double v = static_cast<double>(px[i]);
    switch (kind) {
      case Kind::kL1:
        acc[o] += std::fabs(v);
        break;
      case Kind::kL2:
      case Kind::kSumSquare:
        acc[o] += v * v;
        break;
      case Kind::kProd:
        acc[o] *= v;
        break;
      case Kind::kLogSum:
        acc[o] += v;
        break;
      case Kind::kLogSumExp:
        if (std::isfinite(peak[o])) acc[o] += std::exp(v - peak[o]);
        break;
      case Kind::kMin:
        break;  // handled by reduce_min
    }
  });
  for (size_t o = 0; o < out_n; ++o) {
    double r = acc[o];
    if (kind == Kind::kL2) r = std::sqrt(r);
    if (kind == Kind::kLogSum) r = std::log(r);
    // A non-finite peak (-inf: empty or all -inf; +inf; NaN) is the result itself.
    if (kind == Kind::kLogSumExp) r = std::isfinite(peak[o]) ? peak[o] + std::log(r) : peak[o];
    if constexpr (std::is_floating_point_v<T>)
      py[o] = static_cast<T>(r);
    else
      py[o] = saturate_cast<T>(r);
  }
}

Status reduce_kernel(KernelContext& ctx, Kind kind) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const AttrReader attrs = ctx.attrs();
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(Reduction r, resolve_axes(ctx.node, attrs, x.rank()));
  if (r.identity) {
    ctx.outputs = {ctx.in(0).clone()};
    return Status::ok();
  }
  const bool keepdims = attrs.i("keepdims") != 0;
  Shape kept, out_shape;
  for (int d = 0; d < x.rank(); ++d) {
    const bool red = r.mask[static_cast<size_t>(d)];
    kept.push_back(red ? 1 : x.dim(d));
    if (!red || keepdims) out_shape.push_back(red ? 1 : x.dim(d));
  }
  TRY(Tensor y, Tensor::create(x.dtype(), kept));
  const std::vector<int64_t> kept_strides = contiguous_strides(kept);
  std::vector<int64_t> ostride(kept.size());
  for (size_t d = 0; d < kept.size(); ++d) ostride[d] = r.mask[d] ? 0 : kept_strides[d];
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (kind == Kind::kMin)
      reduce_min<T>(x, ostride, y);
    else if (std::is_integral_v<T> &&
             (kind == Kind::kL1 || kind == Kind::kSumSquare || kind == Kind::kProd))
      reduce_int_exact<T>(kind, x, ostride, y);
    else
      reduce_f64<T>(kind, x, ostride, y);
    return Status::ok();
  }));
  TRY(Tensor shaped, y.reshape(out_shape));
  ctx.outputs = {narrow(shaped, dt)};
  return Status::ok();
}

void add_reduce(OpRegistry& reg, const char* name, Kind kind, const std::string& what) {
  OpDef def(name, "reduce",
            what +
                " over the given axes (all axes when none are given, unless "
                "noop_with_empty_axes=1); keepdims=1 keeps them as size 1.");
  def.input("data", "any rank");
  def.output("reduced", "data with the reduced axes removed, or kept as 1");
  def.attr("axes", AttrKind::kInts, std::nullopt,
           "axes in [-rank, rank-1], no repeats; absent or empty: all");
  def.attr("keepdims", AttrKind::kInt, Attribute(1), "keep reduced axes as size 1");
  def.attr("noop_with_empty_axes", AttrKind::kInt, Attribute(0),
           "with no axes: 0 reduces all axes, 1 returns the input unchanged (opset 18)");
  def.allowed_types = kNumericTypes;
  def.infer = infer_reduce;
  def.reference = [kind](KernelContext& ctx) { return reduce_kernel(ctx, kind); };
  def.flops = flops_input_numel;
  reg.add(std::move(def));
}

}  // namespace

void register_math_reduce_ops(OpRegistry& registry) {
  add_reduce(registry, "ReduceL1", Kind::kL1, "Sum of absolute values");
  add_reduce(registry, "ReduceL2", Kind::kL2, "Square root of the sum of squares");
  add_reduce(registry, "ReduceProd", Kind::kProd, "Product (integers wrap)");
  add_reduce(registry, "ReduceMin", Kind::kMin, "Minimum (NaN propagates)");
  add_reduce(registry, "ReduceLogSum", Kind::kLogSum, "Natural log of the sum");
  add_reduce(registry, "ReduceLogSumExp", Kind::kLogSumExp,
             "log(sum(exp(x))), computed as max + log(sum(exp(x - max))) to avoid overflow,");
  add_reduce(registry, "ReduceSumSquare", Kind::kSumSquare, "Sum of squares (integers wrap)");
}

}  // namespace tessera::ops
