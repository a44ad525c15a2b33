// Ops that select or scan along one axis: ArgMax ArgMin (opset 13), CumSum (opset 14), TopK
// (opset 11), Hardmax (opset 13: one axis, not the flattened 2-D form of earlier opsets).
//
// NaN counts as larger than every number for ArgMax, TopK(largest=1) and Hardmax, and as smaller
// than every number for ArgMin and TopK(largest=0), so a NaN is always selected first, as NumPy's
// argmax/argmin do. Ties go to the lower index (ArgMax/ArgMin with select_last_index=1: the
// higher one). The selecting ops fail on an empty axis.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/math_internal.h"

namespace tessera::ops {
namespace {

// Is a strictly better than b for a "largest" (or "smallest") selection, NaN being the extreme?
template <class T>
bool better(T a, T b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return false;
    if (std::isnan(a)) return true;
  }
  return largest ? a > b : a < b;
}

// Index of the best element of p[0], p[stride], ..., p[(len-1)*stride]; len >= 1.
template <class T>
int64_t arg_best(const T* p, int64_t len, int64_t stride, bool largest, bool last) {
  int64_t best = 0;
  for (int64_t j = 1; j < len; ++j) {
    const T v = p[j * stride], b = p[best * stride];
    if (better(v, b, largest) || (last && !better(b, v, largest))) best = j;
  }
  return best;
}

// The type with axis `axis` removed (or kept as 1).
Expected<TensorType> drop_axis_type(const InferContext& ctx, DType dtype, bool keepdims) {
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return TensorType::unranked(dtype);
  if (x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  const Dim& d = x.dims[static_cast<size_t>(axis)];
  if (d.is_known() && d.size == 0 && ctx.def.name != "Hardmax")
    return node_error(ctx.node, "cannot select along axis " + std::to_string(axis) + " of size 0");
  TensorType out(dtype, {});
  for (int i = 0; i < x.rank(); ++i) {
    if (i != axis)
      out.dims.push_back(x.dims[static_cast<size_t>(i)]);
    else if (keepdims)
      out.dims.push_back(Dim::known(1));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// ArgMax, ArgMin

Status arg_kernel(KernelContext& ctx, bool largest) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const AttrReader attrs = ctx.attrs();
  const Tensor x = widen(ctx.in(0)).contiguous();
  if (x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  TRY(int axis, normalize_axis(attrs.i("axis"), x.rank(), ctx.node));
  const bool keepdims = attrs.i("keepdims") != 0, last = attrs.i("select_last_index") != 0;
  const AxisSplit s = split_at(x.shape(), axis);
  if (s.len == 0)
    return node_error(ctx.node, "cannot select along axis " + std::to_string(axis) + " of size 0");
  Shape out_shape;
  for (int i = 0; i < x.rank(); ++i) {
    if (i != axis)
      out_shape.push_back(x.dim(i));
    else if (keepdims)
      out_shape.push_back(1);
  }
  TRY(Tensor y, Tensor::create(DType::kI64, out_shape));
  int64_t* py = y.data<int64_t>();
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i)
        py[o * s.inner + i] = arg_best(px + o * s.len * s.inner + i, s.len, s.inner, largest, last);
    return Status::ok();
  }));
  ctx.outputs = {y};
  return Status::ok();
}

void add_arg(OpRegistry& reg, const char* name, bool largest) {
  OpDef def(name, "reduce",
            std::string("Index of the ") + (largest ? "largest" : "smallest") +
                " element along axis (i64). Ties go to the first index, or the last with "
                "select_last_index=1; NaN is selected before any number.");
  def.input("data", "numeric tensor of rank >= 1").output("reduced", "i64 indices");
  def.attr("axis", AttrKind::kInt, Attribute(0), "axis in [-rank, rank-1]");
  def.attr("keepdims", AttrKind::kInt, Attribute(1), "keep the axis as size 1");
  def.attr("select_last_index", AttrKind::kInt, Attribute(0), "1: the last of equal extremes");
  def.allowed_types = kNumericTypes;
  def.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    RETURN_IF_ERROR(check_allowed_type(ctx));
    TRY(TensorType out, drop_axis_type(ctx, DType::kI64, ctx.attrs().i("keepdims") != 0));
    return one_type(out);
  };
  def.reference = [largest](KernelContext& ctx) { return arg_kernel(ctx, largest); };
  def.flops = flops_input_numel;
  def.no_gradient_reason = "the output is an integer index";
  reg.add(std::move(def));
}

// ---------------------------------------------------------------------------------------------
// Hardmax

Status hardmax_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const Tensor x = widen(ctx.in(0)).contiguous();
  if (x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  const AxisSplit s = split_at(x.shape(), axis);
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    if (s.len == 0) return Status::ok();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.len * s.inner + i;
        py[base + arg_best(px + base, s.len, s.inner, true, false) * s.inner] = T(1);
      }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, ctx.in(0).dtype())};
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// CumSum

Status cumsum_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(int64_t axis_value, scalar_int(ctx.in(1), ctx.node, "input 'axis'"));
  if (x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  TRY(int axis, normalize_axis(axis_value, x.rank(), ctx.node));
  const bool exclusive = ctx.attrs().i("exclusive") != 0, reverse = ctx.attrs().i("reverse") != 0;
  const AxisSplit s = split_at(x.shape(), axis);
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    // Floats accumulate in f64; integers in 64 bits, wrapping to the element type.
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        Acc acc{0};
        for (int64_t k = 0; k < s.len; ++k) {
          const int64_t j = reverse ? s.len - 1 - k : k;
          const int64_t at = (o * s.len + j) * s.inner + i;
          const Acc v = static_cast<Acc>(px[at]);
          if (!exclusive) acc += v;
          py[at] = static_cast<T>(acc);
          if (exclusive) acc += v;
        }
      }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, ctx.in(0).dtype())};
  return Status::ok();
}

// An integer scalar-like input i (i32/i64, rank 0 or [1]); `allow_i32` for CumSum's axis.
Status check_scalar_int_input(const InferContext& ctx, size_t i, bool allow_i32) {
  const TensorType& t = *ctx.inputs[i];
  const bool type_ok = t.dtype == DType::kI64 || (allow_i32 && t.dtype == DType::kI32);
  const bool shape_ok = !t.rank_known || t.rank() == 0 ||
                        (t.rank() == 1 && (!t.dims[0].is_known() || t.dims[0].size == 1));
  if (!type_ok || !shape_ok)
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be a one-value " +
                                    (allow_i32 ? "i32 or i64" : "i64") + " tensor, got " +
                                    t.to_string());
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_cumsum(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_scalar_int_input(ctx, 1, true));
  const TensorType& x = *ctx.inputs[0];
  if (x.rank_known && x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  if (const Tensor* axis = ctx.constant(1); axis && x.rank_known) {
    TRY(int64_t a, scalar_int(*axis, ctx.node, "input 'axis'"));
    RETURN_IF_ERROR(normalize_axis(a, x.rank(), ctx.node).status());
  }
  return one_type(x);
}

// ---------------------------------------------------------------------------------------------
// TopK

Status topk_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const AttrReader attrs = ctx.attrs();
  const Tensor x = widen(ctx.in(0)).contiguous();
  if (x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  TRY(int axis, normalize_axis(attrs.i("axis"), x.rank(), ctx.node));
  if (ctx.in(1).dtype() != DType::kI64) return node_error(ctx.node, "input 'K' must be i64");
  TRY(int64_t k, scalar_int(ctx.in(1), ctx.node, "input 'K'"));
  const AxisSplit s = split_at(x.shape(), axis);
  if (k < 0 || k > s.len)
    return node_error(ctx.node, "K = " + std::to_string(k) + " is outside [0, " +
                                    std::to_string(s.len) + "] (the size of axis " +
                                    std::to_string(axis) + ")");
  const bool largest = attrs.i("largest") != 0;
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  TRY(Tensor values, Tensor::create(x.dtype(), out_shape));
  TRY(Tensor indices, Tensor::create(DType::kI64, out_shape));
  int64_t* pi = indices.data<int64_t>();
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = values.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(s.len));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* slice = px + o * s.len * s.inner + i;
        std::iota(order.begin(), order.end(), int64_t{0});
        // Best first; equal values keep the lower index first (sorted=0 gives the same order).
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          const T va = slice[a * s.inner], vb = slice[b * s.inner];
          if (better(va, vb, largest)) return true;
          if (better(vb, va, largest)) return false;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * s.inner + i;
          pv[at] = slice[order[static_cast<size_t>(j)] * s.inner];
          pi[at] = order[static_cast<size_t>(j)];
        }
      }
    return Status::ok();
  }));
  ctx.outputs = {narrow(values, ctx.in(0).dtype()), indices};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_topk(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_scalar_int_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known)
    return std::vector<TensorType>{TensorType::unranked(x.dtype),
                                   TensorType::unranked(DType::kI64)};
  if (x.rank() == 0) return node_error(ctx.node, "input must have rank >= 1");
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  TensorType values = x;
  Dim& d = values.dims[static_cast<size_t>(axis)];
  if (const Tensor* kt = ctx.constant(1)) {
    TRY(int64_t k, scalar_int(*kt, ctx.node, "input 'K'"));
    if (k < 0 || (d.is_known() && k > d.size))
      return node_error(ctx.node, "K = " + std::to_string(k) + " is outside [0, " + d.to_string() +
                                      "] (the size of axis " + std::to_string(axis) + ")");
    d = Dim::known(k);
  } else {
    d = Dim::unknown();
  }
  TensorType indices = values;
  indices.dtype = DType::kI64;
  return std::vector<TensorType>{values, indices};
}

void register_topk_and_scans(OpRegistry& reg) {
  OpDef topk("TopK", "reduce",
             "The K largest (or smallest) elements along an axis and their i64 indices, best "
             "first; equal values come in index order. sorted=0 gives the same order (ONNX leaves "
             "it unspecified). K must not exceed the axis size.");
  topk.input("X", "numeric tensor of rank >= 1")
      .input("K", "i64 tensor holding one value (shape [1] or scalar)");
  topk.output("Values", "X's element type; the axis has size K")
      .output("Indices", "i64 positions along the axis");
  topk.attr("axis", AttrKind::kInt, Attribute(-1), "axis in [-rank, rank-1]");
  topk.attr("largest", AttrKind::kInt, Attribute(1), "1: the largest elements; 0: the smallest");
  topk.attr("sorted", AttrKind::kInt, Attribute(1), "1: best first (always done)");
  topk.allowed_types = kNumericTypes;
  topk.infer = infer_topk;
  topk.reference = topk_kernel;
  topk.flops = flops_input_numel;
  reg.add(std::move(topk));

  OpDef cumsum("CumSum", "math",
               "Cumulative sum along an axis given as an input. exclusive=1 leaves out the "
               "element itself (the first sum is 0); reverse=1 sums from the end. Integers wrap.");
  cumsum.input("x", "numeric tensor of rank >= 1")
      .input("axis", "i32 or i64 holding one value, in [-rank, rank-1]");
  cumsum.output("y", "same type and shape as x");
  cumsum.attr("exclusive", AttrKind::kInt, Attribute(0), "1: exclude the element itself");
  cumsum.attr("reverse", AttrKind::kInt, Attribute(0), "1: sum in reverse order");
  cumsum.allowed_types = kNumericTypes;
  cumsum.infer = infer_cumsum;
  cumsum.reference = cumsum_kernel;
  reg.add(std::move(cumsum));

  OpDef hardmax("Hardmax", "activation",
                "1 at the first largest element along axis, 0 elsewhere (opset 13 form: one "
                "axis; NaN counts as the largest).");
  hardmax.input("input", "float tensor of rank >= 1").output("output", "same type and shape");
  hardmax.attr("axis", AttrKind::kInt, Attribute(-1), "axis in [-rank, rank-1]");
  hardmax.allowed_types = kFloatTypes;
  hardmax.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    RETURN_IF_ERROR(check_allowed_type(ctx));
    RETURN_IF_ERROR(drop_axis_type(ctx, ctx.inputs[0]->dtype, true).status());
    return one_type(*ctx.inputs[0]);
  };
  hardmax.reference = hardmax_kernel;
  hardmax.no_gradient_reason = "piecewise constant: the gradient is zero almost everywhere";
  reg.add(std::move(hardmax));
}

}  // namespace

void register_math_index_ops(OpRegistry& registry) {
  add_arg(registry, "ArgMax", true);
  add_arg(registry, "ArgMin", false);
  register_topk_and_scans(registry);
}

}  // namespace tessera::ops
