// Reductions: ReduceSum (opset 13: axes as an optional input), ReduceMean and ReduceMax (opset 17:
// axes as an attribute).
//
// Axes are in [-rank, rank-1], without repeats. No axes reduces every axis, except that ReduceSum
// with noop_with_empty_axes=1 is then the identity. keepdims=1 keeps reduced axes as size 1.
// Over an empty set (a reduced axis of size 0): ReduceSum gives 0, ReduceMax the identity of max
// (-inf, or the lowest integer), ReduceMean NaN for floats and an error for integers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "engine/ops/helpers.h"

namespace tessera::ops {
namespace {

enum class ReduceKind { kSum, kMean, kMax };

// The axes of a node: nullopt when not known at compile time (a non-constant axes input).
std::optional<std::vector<int64_t>> axes_of(const AttrReader& attrs, bool axes_input,
                                            bool has_axes_input, const Tensor* axes_value) {
  if (!axes_input) return attrs.has("axes") ? attrs.ints("axes") : std::vector<int64_t>{};
  if (!has_axes_input) return std::vector<int64_t>{};
  if (!axes_value) return std::nullopt;
  return to_int64s(*axes_value);
}

// Which axes are reduced, or the identity (no axes with noop_with_empty_axes=1).
struct Reduction {
  std::vector<bool> mask;  // per axis of the input: reduced or not
  bool identity = false;
};

Expected<Reduction> resolve_axes(const ir::Node& node, const std::vector<int64_t>& axes, int rank,
                                 bool noop_if_empty) {
  Reduction r;
  r.mask.assign(static_cast<size_t>(rank), axes.empty());
  if (axes.empty()) {
    r.identity = noop_if_empty;
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

Status check_axes_type(const InferContext& ctx) {
  if (!ctx.has_input(1)) return Status::ok();
  const TensorType& t = *ctx.inputs[1];
  if (t.dtype != DType::kI64)
    return node_error(ctx.node, "input 'axes' must be i64, got " + t.to_string());
  if (t.rank_known && t.rank() != 1)
    return node_error(ctx.node, "input 'axes' must be 1-D, got " + t.to_string());
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_reduce(const InferContext& ctx, ReduceKind kind,
                                               bool axes_input) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  if (axes_input) RETURN_IF_ERROR(check_axes_type(ctx));
  const AttrReader attrs = ctx.attrs();
  const TensorType& x = *ctx.inputs[0];
  const bool keepdims = attrs.i("keepdims") != 0;
  const bool noop = axes_input && attrs.i("noop_with_empty_axes") != 0;
  if (!x.rank_known) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
  const auto axes = axes_of(attrs, axes_input, ctx.has_input(1), ctx.constant(1));
  if (!axes) {
    // Unknown axes: with keepdims each axis stays or becomes 1; without, even the rank is unknown.
    if (!keepdims) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
    TensorType out = x;
    for (Dim& d : out.dims)
      if (!(d.is_known() && d.size == 1)) d = Dim::unknown();
    return std::vector<TensorType>{out};
  }
  TRY(Reduction r, resolve_axes(ctx.node, *axes, x.rank(), noop));
  TensorType out(x.dtype, {});
  for (int d = 0; d < x.rank(); ++d) {
    const Dim& dim = x.dims[static_cast<size_t>(d)];
    if (!r.mask[static_cast<size_t>(d)]) {
      out.dims.push_back(dim);
      continue;
    }
    if (dim.is_known() && dim.size == 0 && kind == ReduceKind::kMean && !is_float(x.dtype))
      return node_error(ctx.node, "ReduceMean over an empty axis has no integer value");
    if (keepdims) out.dims.push_back(Dim::known(1));
  }
  return std::vector<TensorType>{out};
}

// Walks every input element in row-major order with the offset of its output element.
// `ostride` holds the output strides per input axis (0 for reduced axes).
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
Status reduce_typed(const ir::Node& node, ReduceKind kind, const Tensor& x, const Reduction& r,
                    const Shape& kept_shape, int64_t count, Tensor& y) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  const std::vector<int64_t> kept_strides = contiguous_strides(kept_shape);
  std::vector<int64_t> ostride(kept_shape.size());
  for (size_t d = 0; d < ostride.size(); ++d) ostride[d] = r.mask[d] ? 0 : kept_strides[d];
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int64_t out_n = y.numel();
  if (kind == ReduceKind::kMax) {
    T init = std::numeric_limits<T>::lowest();
    if constexpr (std::is_floating_point_v<T>) init = -std::numeric_limits<T>::infinity();
    std::fill(py, py + out_n, init);
    for_each_reduced(x.shape(), ostride, [&](int64_t i, int64_t o) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(py[o])) return;  // NaN wins, as in numpy
        if (std::isnan(px[i])) {
          py[o] = px[i];
          return;
        }
      }
      if (px[i] > py[o]) py[o] = px[i];
    });
    return Status::ok();
  }
  std::vector<Acc> acc(static_cast<size_t>(out_n), Acc{0});
  for_each_reduced(x.shape(), ostride,
                   [&](int64_t i, int64_t o) { acc[o] += static_cast<Acc>(px[i]); });
  if (kind == ReduceKind::kMean && count == 0 && !std::is_floating_point_v<T>)
    return node_error(node, "ReduceMean over an empty axis has no integer value");
  for (int64_t o = 0; o < out_n; ++o) {
    if (kind == ReduceKind::kSum)
      py[o] = static_cast<T>(acc[o]);
    else if constexpr (std::is_floating_point_v<T>)
      py[o] = static_cast<T>(acc[o] / static_cast<double>(count));
    else
      py[o] = static_cast<T>(acc[o] / count);  // integer mean truncates toward zero
  }
  return Status::ok();
}

Status reduce_kernel(KernelContext& ctx, ReduceKind kind, bool axes_input) {
  const AttrReader attrs = ctx.attrs();
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const bool keepdims = attrs.i("keepdims") != 0;
  const bool noop = axes_input && attrs.i("noop_with_empty_axes") != 0;
  const Tensor* axes_value = ctx.has_input(1) ? &ctx.in(1) : nullptr;
  const auto axes = axes_of(attrs, axes_input, ctx.has_input(1), axes_value);
  TRY(Reduction r, resolve_axes(ctx.node, *axes, x.rank(), noop));
  if (r.identity) {
    ctx.outputs = {ctx.in(0).clone()};
    return Status::ok();
  }
  Shape kept, out_shape;
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d) {
    const bool red = r.mask[static_cast<size_t>(d)];
    kept.push_back(red ? 1 : x.dim(d));
    if (red) count *= x.dim(d);
    if (!red || keepdims) out_shape.push_back(red ? 1 : x.dim(d));
  }
  TRY(Tensor y, Tensor::create(x.dtype(), kept));
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    return reduce_typed<decltype(tag)>(ctx.node, kind, x, r, kept, count, y);
  }));
  TRY(Tensor shaped, y.reshape(out_shape));
  ctx.outputs = {narrow(shaped, dt)};
  return Status::ok();
}

void register_reduce(OpRegistry& registry, const std::string& name, ReduceKind kind,
                     const std::string& what) {
  const bool axes_input = kind == ReduceKind::kSum;  // opset 13 ReduceSum; the others opset 17
  OpDef def(name, "reduce",
            what + " over the given axes (all axes when none are given" +
                (axes_input ? std::string(", unless noop_with_empty_axes=1") : std::string()) +
                "); keepdims=1 keeps them as size 1.");
  def.input("data", "any rank");
  if (axes_input)
    def.input("axes", "i64 1-D axes in [-rank, rank-1]; absent or empty: see noop_with_empty_axes",
              true);
  def.output("reduced", "data with the reduced axes removed, or kept as 1");
  if (!axes_input)
    def.attr("axes", AttrKind::kInts, std::nullopt, "axes in [-rank, rank-1]; absent: all");
  def.attr("keepdims", AttrKind::kInt, Attribute(1), "keep reduced axes as size 1");
  if (axes_input)
    def.attr("noop_with_empty_axes", AttrKind::kInt, Attribute(0),
             "with no axes: 0 reduces all axes, 1 returns the input unchanged");
  def.allowed_types = kNumericTypes;
  def.infer = [kind, axes_input](const InferContext& ctx) {
    return infer_reduce(ctx, kind, axes_input);
  };
  def.reference = [kind, axes_input](KernelContext& ctx) {
    return reduce_kernel(ctx, kind, axes_input);
  };
  registry.add(std::move(def));
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  register_reduce(registry, "ReduceSum", ReduceKind::kSum, "Sum");
  register_reduce(registry, "ReduceMean", ReduceKind::kMean, "Arithmetic mean (integers truncate)");
  register_reduce(registry, "ReduceMax", ReduceKind::kMax, "Maximum (NaN propagates)");
}

}  // namespace tessera::ops
