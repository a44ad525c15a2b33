// Gradient rules of the indexing family: Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, Compress, TopK (scatter-adds into zeros), Slice and Pad (pads, crops and
// per-axis scatters) and Resize (one small interpolation matrix per resized axis).
#include <algorithm>
#include <limits>
#include <optional>

#include "engine/autodiff/grad_tensor_internal.h"
#include "engine/ops/helpers.h"
#include "engine/runtime/interpreter.h"

namespace tessera::autodiff {
namespace {

using namespace tensor_grad;  // NOLINT: the shared helpers of this family

int normalized_axis(int64_t axis, int rank) {
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

ValueId as_i64(GradientContext& g, ValueId v) {
  if (g.dtype(v) == DType::kI64) return v;
  return g.emit("Cast", {v}, {{"to", std::string(dtype_name(DType::kI64))}});
}

// ---- gathers: scatter-add dY into zeros (indices may repeat) ----

// d data of Gather(data, indices, axis) for dY: data has type `data_type`; `like` is data itself
// (for zeros of a symbolic shape) or kNoValue. Axis 0 is one ScatterND; another axis first moves
// the index dims of dY to the front and moves the result back.
Expected<ValueId> gather_grad_value(GradientContext& g, ValueId dy, ValueId indices,
                                    const ir::TensorType& data_type, ValueId like, int axis) {
  ValueId idx = as_i64(g, indices);
  int q = g.rank(idx);
  if (q == 0) {  // a scalar index drops the axis: give it back as size 1
    idx = g.emit("Reshape", {idx, g.ints({1})});
    dy = g.emit("Unsqueeze", {dy, g.ints({axis})});
    q = 1;
  }
  ValueId tuples = g.emit("Unsqueeze", {idx, g.ints({q})});  // [I..., 1]
  const ir::Attributes add = {{"reduction", std::string("add")}};
  if (axis == 0) {
    ValueId zeros = like != ir::kNoValue ? g.zeros_like(like)
                                         : zeros_of(g, data_type.static_shape(), data_type.dtype);
    return g.emit("ScatterND", {zeros, tuples, dy}, add);
  }
  if (!data_type.is_static())
    return g.fail("gathering along axis " + std::to_string(axis) + " needs a static shape");
  const Shape ds = data_type.static_shape();
  const int r = static_cast<int>(ds.size());
  std::vector<int64_t> perm, back;
  for (int i = axis; i < axis + q; ++i) perm.push_back(i);
  for (int i = 0; i < axis; ++i) perm.push_back(i);
  for (int i = axis + q; i < r - 1 + q; ++i) perm.push_back(i);
  Shape zs{ds[static_cast<size_t>(axis)]};
  for (int d = 0; d < r; ++d)
    if (d != axis) zs.push_back(ds[static_cast<size_t>(d)]);
  for (int d = 0; d < r; ++d) back.push_back(d < axis ? d + 1 : d == axis ? 0 : d);
  ValueId moved = g.emit("Transpose", {dy}, {{"perm", perm}});
  ValueId res = g.emit("ScatterND", {zeros_of(g, zs, data_type.dtype), tuples, moved}, add);
  return g.emit("Transpose", {res}, {{"perm", back}});
}

Status gather_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  const int axis = normalized_axis(g.attrs().i("axis"), g.rank(g.input(0)));
  TRY(ValueId d,
      gather_grad_value(g, g.grad_output(0), g.input(1), g.type(g.input(0)), g.input(0), axis));
  g.set_grad(0, d);
  return Status::ok();
}

Status gather_elements_grad(GradientContext& g) {
  if (g.wants(0))
    g.set_grad(0,
               g.emit("ScatterElements", {g.zeros_like(g.input(0)), g.input(1), g.grad_output(0)},
                      {{"axis", g.attrs().i("axis")}, {"reduction", std::string("add")}}));
  return Status::ok();
}

// With batch_dims b > 0 the batch coordinates are prepended to every index tuple, so one
// ScatterND over the whole of data (it has no batch_dims) adds dY back.
Status gather_nd_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  const int64_t b = g.attrs().i("batch_dims");
  ValueId idx = g.input(1);
  if (b > 0) {
    TRY(Shape is, static_shape(g, idx, "GatherND with batch_dims"));
    const auto q = static_cast<int64_t>(is.size());
    Shape tuple_shape(is.begin(), is.end() - 1);
    tuple_shape.push_back(1);
    std::vector<ValueId> parts;
    for (int64_t j = 0; j < b; ++j) {
      Shape cs(static_cast<size_t>(q), 1);
      cs[static_cast<size_t>(j)] = is[static_cast<size_t>(j)];
      std::vector<int64_t> iota(static_cast<size_t>(is[static_cast<size_t>(j)]));
      for (size_t k = 0; k < iota.size(); ++k) iota[k] = static_cast<int64_t>(k);
      ValueId c = g.constant_tensor(Tensor::from_vector<int64_t>(cs, iota));
      parts.push_back(g.emit("Expand", {c, g.ints(tuple_shape)}));
    }
    parts.push_back(idx);
    idx = g.emit("Concat", parts, {{"axis", int64_t{-1}}});
  }
  g.set_grad(0, g.emit("ScatterND", {g.zeros_like(g.input(0)), idx, g.grad_output(0)},
                       {{"reduction", std::string("add")}}));
  return Status::ok();
}

// Compress keeps the slices whose condition is true: a Gather at those positions.
Status compress_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  ValueId kept;
  if (const Tensor* c = g.constant(g.input(1))) {
    std::vector<int64_t> at;
    for (int64_t i = 0; i < c->numel(); ++i)
      if (c->get(i) != 0) at.push_back(i);
    kept = g.ints(at);
  } else {
    kept = g.emit("Reshape", {g.emit("NonZero", {g.input(1)}), g.ints({-1})});
  }
  const ir::TensorType& xt = g.type(g.input(0));
  if (g.node().attr("axis")) {
    const int axis = normalized_axis(g.attrs().i("axis"), xt.rank());
    TRY(ValueId d, gather_grad_value(g, g.grad_output(0), kept, xt, g.input(0), axis));
    g.set_grad(0, d);
    return Status::ok();
  }
  TRY(Shape xs, static_shape(g, g.input(0), "Compress without an axis"));
  const ir::TensorType flat = ir::TensorType::of(xt.dtype, {xt.static_numel()});
  TRY(ValueId d, gather_grad_value(g, g.grad_output(0), kept, flat, ir::kNoValue, 0));
  g.set_grad(0, g.emit("Reshape", {d, g.ints(xs)}));
  return Status::ok();
}

// The best K values go back to where they came from (the Indices output).
Status topk_grad(GradientContext& g) {
  if (g.wants(0))
    g.set_grad(0, g.emit("ScatterElements",
                         {g.zeros_like(g.input(0)), g.output(1), g.grad_output_or_zeros(0)},
                         {{"axis", g.attrs().i("axis")}}));
  return Status::ok();
}

// ---- scatters: replaced positions get no data gradient; updates read dY back ----

Status scatter_grad(GradientContext& g, const char* scatter, const char* gather, bool has_axis) {
  const std::string& red = g.attrs().s("reduction");
  if (red != "none" && red != "add")
    return g.fail("reduction '" + red + "' has no gradient rule (only none and add)");
  ir::Attributes axis;
  if (has_axis) axis.emplace("axis", g.attrs().i("axis"));
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) {
    // none: positions overwritten by updates do not depend on data (indices are distinct, as
    // ONNX requires); add: data passes through unchanged.
    g.set_grad(
        0, red == "add" ? dy : g.emit(scatter, {dy, g.input(1), g.zeros_like(g.input(2))}, axis));
  }
  if (g.wants(2)) g.set_grad(2, g.emit(gather, {dy, g.input(1)}, axis));
  return Status::ok();
}

Status scatter_elements_grad(GradientContext& g) {
  return scatter_grad(g, "ScatterElements", "GatherElements", true);
}
Status scatter_nd_grad(GradientContext& g) {
  return scatter_grad(g, "ScatterND", "GatherND", false);
}

// ---- Slice ----

// First index and element count of one sliced axis of size dim (the kernel's ONNX clamping).
std::pair<int64_t, int64_t> slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return {0, 0};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? 1 + (end - start - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  const int64_t back =
      step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
  return {start, start > end ? 1 + (start - end - 1) / back : 0};
}

// dX: axes with step 1 are padded back with zeros (one Pad for all of them). A step s > 1
// interleaves s - 1 zeros after each slot of dY (Unsqueeze a new axis after it, Pad that axis to
// s, Reshape: slot j lands at j * s), and the same final Pad moves it to the start and to the
// axis's size (cropping the zeros past the end): element-wise kernels instead of a scatter (Swin-T's
// patch merging: 18 reference ScatterElements a training step). Negative steps scatter dY's slots
// to start + j * step.
Status slice_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  TRY(Shape xs, static_shape(g, g.input(0), "Slice"));
  TRY(std::vector<int64_t> starts, const_ints(g, g.input(1), "Slice's starts"));
  TRY(std::vector<int64_t> ends, const_ints(g, g.input(2), "Slice's ends"));
  std::vector<int64_t> axes, steps(starts.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (g.has_input(3)) {
    TRY(axes, const_ints(g, g.input(3), "Slice's axes"));
  }
  if (g.has_input(4)) {
    TRY(steps, const_ints(g, g.input(4), "Slice's steps"));
  }
  const int r = static_cast<int>(xs.size());
  ValueId cur = g.grad_output(0);
  TRY(Shape shape, static_shape(g, cur, "Slice's output gradient"));
  std::vector<int64_t> pads(2 * static_cast<size_t>(r), 0);
  bool padded = false;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int a = normalized_axis(axes[i], r);
    const int64_t dim = xs[static_cast<size_t>(a)];
    const auto [start, len] = slice_range(dim, starts[i], ends[i], steps[i]);
    if (len == 0) {
      g.set_grad(0, g.zeros_like(g.input(0)));
      return Status::ok();
    }
    if (steps[i] == 1) {
      pads[static_cast<size_t>(a)] = start;
      pads[static_cast<size_t>(r + a)] = dim - start - len;
      padded |= start != 0 || dim - start - len != 0;
      continue;
    }
    if (steps[i] > 1) {
      const int64_t step = steps[i];
      std::vector<int64_t> spread(2 * static_cast<size_t>(r + 1), 0);
      spread[static_cast<size_t>(r + 1 + a + 1)] = step - 1;
      cur = g.emit("Unsqueeze", {cur, g.ints({a + 1})});
      cur = g.emit("Pad", {cur, g.ints(spread)});
      shape[static_cast<size_t>(a)] = len * step;
      cur = g.emit("Reshape", {cur, g.ints(shape)});
      pads[static_cast<size_t>(a)] = start;
      pads[static_cast<size_t>(r + a)] = dim - start - len * step;  // negative: crops the zeros past the end
      padded = true;  // `shape` stays cur's shape: len * step on this axis until the final Pad
      continue;
    }
    std::vector<int64_t> at;
    for (int64_t j = 0; j < len; ++j) at.push_back(start + j * steps[i]);
    cur = scatter_axis(g, cur, shape, a, at, dim, "none");
    shape[static_cast<size_t>(a)] = dim;
  }
  if (padded) cur = g.emit("Pad", {cur, g.ints(pads)});
  g.set_grad(0, cur);
  return Status::ok();
}

// ---- Pad ----

// Input coordinate of output coordinate o on an axis (the kernel's rule for the non-constant
// modes): edge clamps, reflect mirrors without the edge, wrap takes it modulo n.
int64_t pad_source(int64_t o, int64_t begin, int64_t n, const std::string& mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "wrap") return ((i % n) + n) % n;
  if (n == 1) return 0;  // reflect
  const int64_t period = 2 * (n - 1);
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

// constant: dX = dY padded by the negated pads (crops what was padded, zero-fills what was
// cropped), and d constant_value = sum(dY) - sum(dX). Other modes: per padded axis, a scatter-add
// of dY's slots to their source positions.
Status pad_grad(GradientContext& g) {
  const std::string& mode = g.attrs().s("mode");
  ValueId dy = g.grad_output(0);
  if (mode == "constant") {
    ValueId neg;
    if (const Tensor* p = g.constant(g.input(1))) {
      std::vector<int64_t> v;
      for (int64_t x : ops::to_int64s(*p)) v.push_back(-x);
      neg = g.ints(v);
    } else {
      neg = g.emit("Neg", {g.input(1)});
    }
    std::vector<ValueId> ins{dy, neg};
    if (g.has_input(3)) ins.insert(ins.end(), {ir::kNoValue, g.input(3)});
    ValueId dx = g.emit("Pad", ins);
    if (g.wants(0)) g.set_grad(0, dx);
    if (g.wants(2)) {
      const ir::Attributes all = {{"keepdims", int64_t{0}}};
      ValueId outside =
          g.emit("Sub", {g.emit("ReduceSum", {dy}, all), g.emit("ReduceSum", {dx}, all)});
      g.set_grad(2, g.emit("Reshape", {outside, g.shape_of(g.input(2))}));
    }
    return Status::ok();
  }
  if (!g.wants(0)) return Status::ok();
  TRY(Shape xs, static_shape(g, g.input(0), "Pad in mode " + mode));
  TRY(std::vector<int64_t> pads, const_ints(g, g.input(1), "Pad's pads"));
  const int r = static_cast<int>(xs.size());
  std::vector<int64_t> axes;
  if (g.has_input(3)) {
    TRY(axes, const_ints(g, g.input(3), "Pad's axes"));
  } else {
    for (int a = 0; a < r; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size()) return g.fail("pads and axes do not match");
  TRY(Shape shape, static_shape(g, dy, "Pad's output gradient"));
  ValueId cur = dy;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int a = normalized_axis(axes[k], r);
    const int64_t begin = pads[k], end = pads[axes.size() + k], n = xs[static_cast<size_t>(a)];
    if (begin == 0 && end == 0) continue;
    std::vector<int64_t> at;
    for (int64_t o = 0; o < n + begin + end; ++o) at.push_back(pad_source(o, begin, n, mode));
    cur = scatter_axis(g, cur, shape, a, at, n, "add");
    shape[static_cast<size_t>(a)] = n;
  }
  g.set_grad(0, cur);
  return Status::ok();
}

// ---- Resize ----

// The interpolation matrix M [out, in] of one axis (y = M x along it), found by resizing each unit
// vector e_i of length `in` with the node's attributes and that axis's scale or size: the
// kernel's taps depend only on (attributes, in, scale, roi) of the axis, so this is exact.
Expected<Tensor> resize_matrix(GradientContext& g, int axis, int64_t in, int64_t out) {
  ir::Attributes attrs = g.node().attrs;
  attrs.insert_or_assign("extrapolation_value",
                         ir::Attribute(0.0));  // outside the roi: a constant, no gradient
  const int r = g.rank(g.input(0));
  const Tensor* scales = g.has_input(2) ? g.constant(g.input(2)) : nullptr;
  if (scales && scales->numel() == 0) scales = nullptr;
  std::optional<Tensor> roi, scale, size;
  if (g.attrs().s("coordinate_transformation_mode") == "tf_crop_and_resize" && g.has_input(1)) {
    const Tensor* t = g.constant(g.input(1));
    if (!t) return g.fail("the roi must be known when the graph is built");
    if (t->numel() > 0)
      roi = Tensor::from_doubles(t->dtype(), {2}, {t->get(axis), t->get(r + axis)});
  }
  if (scales) {
    scale = Tensor::from_doubles(scales->dtype(), {1}, {scales->get(axis)});
  } else {
    size = Tensor::from_vector<int64_t>({1}, {out});
  }
  Tensor m(DType::kF64, {out, in});
  for (int64_t i = 0; i < in; ++i) {
    Tensor e(DType::kF64, {in});
    e.set(i, 1.0);
    std::vector<const Tensor*> ins{&e, roi ? &*roi : nullptr, scale ? &*scale : nullptr,
                                   size ? &*size : nullptr};
    auto y = runtime::run_single_op_with_absent(g.registry(), "Resize", ins, attrs);
    if (!y) return g.fail("cannot derive the interpolation weights: " + y.error().message);
    if ((*y)[0].numel() != out) return g.fail("interpolation weights of an unexpected size");
    for (int64_t o = 0; o < out; ++o) m.set(o * in + i, (*y)[0].get(o));
  }
  return m;
}

// Resize is separable: per resized axis, dX = dY contracted with M over the output axis (the axis
// moved last, a MatMul with M [out, in], moved back). Every mode (nearest, linear, cubic) and
// coordinate transformation is covered; scales and roi must be constants.
Status resize_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  TRY(Shape xs, static_shape(g, g.input(0), "Resize"));
  ValueId cur = g.grad_output(0);
  TRY(Shape ys, static_shape(g, cur, "Resize's output gradient"));
  const int r = static_cast<int>(xs.size());
  for (int d = 0; d < r; ++d) {
    const int64_t in = xs[static_cast<size_t>(d)], out = ys[static_cast<size_t>(d)];
    TRY(Tensor m, resize_matrix(g, d, in, out));
    bool identity = in == out;
    for (int64_t k = 0; identity && k < m.numel(); ++k)
      identity = m.get(k) == (k / in == k % in ? 1.0 : 0.0);
    if (identity) continue;
    std::vector<int64_t> swap;
    for (int k = 0; k < r; ++k) swap.push_back(k == d ? r - 1 : k == r - 1 ? d : k);
    ValueId moved = d == r - 1 ? cur : g.emit("Transpose", {cur}, {{"perm", swap}});
    ValueId prod = g.emit("MatMul", {moved, g.constant_tensor(m.cast(g.dtype(cur)))});
    cur = d == r - 1 ? prod : g.emit("Transpose", {prod}, {{"perm", swap}});
  }
  g.set_grad(0, cur);
  return Status::ok();
}

}  // namespace

void register_index_gradients(ops::OpRegistry& registry) {
  set_gradient(registry, "Gather", gather_grad);
  set_gradient(registry, "GatherElements", gather_elements_grad);
  set_gradient(registry, "GatherND", gather_nd_grad);
  set_gradient(registry, "ScatterElements", scatter_elements_grad);
  set_gradient(registry, "ScatterND", scatter_nd_grad);
  set_gradient(registry, "Compress", compress_grad);
  set_gradient(registry, "TopK", topk_grad);
  set_gradient(registry, "Slice", slice_grad);
  set_gradient(registry, "Pad", pad_grad);
  set_gradient(registry, "Resize", resize_grad);
}

}  // namespace tessera::autodiff
