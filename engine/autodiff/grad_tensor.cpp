// Gradient rules of the tensor and reduction families: shape changes (Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, DepthToSpace, SpaceToDepth), broadcasts (Expand, Tile, SumToShape),
// Concat/Split, Trilu, ReverseSequence and the Reduce* ops; Scan has a stated reason. Indexing,
// slicing, padding and resizing are in grad_index.cpp.
#include <algorithm>

#include "engine/autodiff/grad_tensor_internal.h"
#include "engine/ops/helpers.h"

namespace tessera::autodiff {

namespace tensor_grad {

Expected<std::vector<int64_t>> const_ints(GradientContext& g, ValueId v, const std::string& what) {
  const Tensor* t = g.constant(v);
  if (!t) return g.fail(what + " must be known when the graph is built");
  // Exactly (a double loses INT64_MAX, ONNX's "to the end" in Slice's ends: through a double it
  // became INT64_MIN, an empty slice, and a gradient of zeros).
  return ops::to_int64s(*t);
}

Expected<Shape> static_shape(GradientContext& g, ValueId v, const std::string& what) {
  const ir::TensorType& t = g.type(v);
  if (!t.is_static()) return g.fail(what + " needs a static shape, got " + t.to_string());
  return t.static_shape();
}

ValueId zeros_of(GradientContext& g, const Shape& shape, DType dt) {
  Tensor zero = Tensor::from_doubles(dt, {1}, {0.0});
  return g.emit("ConstantOfShape", {g.ints(shape)}, {{"value", zero}});
}

ValueId scatter_axis(GradientContext& g, ValueId grad, const Shape& shape, int axis,
                     const std::vector<int64_t>& idx, int64_t new_dim,
                     const std::string& reduction) {
  Shape ishape(shape.size(), 1);
  ishape[static_cast<size_t>(axis)] = static_cast<int64_t>(idx.size());
  ValueId iv = g.constant_tensor(Tensor::from_vector<int64_t>(ishape, idx));
  ValueId expanded = g.emit("Expand", {iv, g.ints(shape)});
  Shape zs = shape;
  zs[static_cast<size_t>(axis)] = new_dim;
  return g.emit("ScatterElements", {zeros_of(g, zs, g.dtype(grad)), expanded, grad},
                {{"axis", int64_t{axis}}, {"reduction", reduction}});
}

}  // namespace tensor_grad

namespace {

using namespace tensor_grad;  // NOLINT: the shared helpers of this family

// ---- shape changes ----

// Reshape, Flatten, Squeeze, Unsqueeze: the same elements in a new shape.
Status reshape_grad(GradientContext& g) {
  if (g.wants(0)) g.set_grad(0, g.emit("Reshape", {g.grad_output(0), g.shape_of(g.input(0))}));
  return Status::ok();
}

Status transpose_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  const ir::Attribute* p = g.node().attr("perm");
  if (!p) {  // the default reverses the dims, its own inverse
    g.set_grad(0, g.emit("Transpose", {g.grad_output(0)}));
    return Status::ok();
  }
  std::vector<int64_t> inv(p->ints().size());
  for (size_t i = 0; i < inv.size(); ++i)
    inv[static_cast<size_t>(p->ints()[i])] = static_cast<int64_t>(i);
  g.set_grad(0, g.emit("Transpose", {g.grad_output(0)}, {{"perm", inv}}));
  return Status::ok();
}

// DepthToSpace DCR and SpaceToDepth are inverses; CRD is undone by the reshape, transpose,
// reshape of its kernel run backwards.
Status depth_to_space_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  const int64_t b = g.attrs().i("blocksize");
  if (g.attrs().s("mode") != "CRD") {
    g.set_grad(0, g.emit("SpaceToDepth", {g.grad_output(0)}, {{"blocksize", b}}));
    return Status::ok();
  }
  TRY(Shape x, static_shape(g, g.input(0), "DepthToSpace CRD"));
  const int64_t n = x[0], c = x[1], h = x[2], w = x[3];
  ValueId t = g.emit("Reshape", {g.grad_output(0), g.ints({n, c / (b * b), h, b, w, b})});
  ValueId v = g.emit("Transpose", {t}, {{"perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4}}});
  g.set_grad(0, g.emit("Reshape", {v, g.ints(x)}));
  return Status::ok();
}

Status space_to_depth_grad(GradientContext& g) {
  if (g.wants(0))
    g.set_grad(0, g.emit("DepthToSpace", {g.grad_output(0)},
                         {{"blocksize", g.attrs().i("blocksize")}, {"mode", std::string("DCR")}}));
  return Status::ok();
}

// ---- broadcasts ----

Status expand_grad(GradientContext& g) {
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(g.grad_output(0), g.input(0)));
  return Status::ok();
}

// dX = dY viewed as [r0, n0, r1, n1, ...], summed over the repeat axes.
Status tile_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  TRY(std::vector<int64_t> reps, const_ints(g, g.input(1), "Tile's repeats"));
  TRY(Shape x, static_shape(g, g.input(0), "Tile"));
  if (std::all_of(reps.begin(), reps.end(), [](int64_t r) { return r == 1; })) {
    g.set_grad(0, g.grad_output(0));
    return Status::ok();
  }
  std::vector<int64_t> view, axes;
  for (size_t d = 0; d < x.size(); ++d) {
    axes.push_back(static_cast<int64_t>(view.size()));
    view.push_back(reps[d]);
    view.push_back(x[d]);
  }
  ValueId v = g.emit("Reshape", {g.grad_output(0), g.ints(view)});
  g.set_grad(0, g.emit("ReduceSum", {v, g.ints(axes)}, {{"keepdims", int64_t{0}}}));
  return Status::ok();
}

Status sum_to_shape_grad(GradientContext& g) {
  if (g.wants(0)) g.set_grad(0, g.emit("Expand", {g.grad_output(0), g.shape_of(g.input(0))}));
  return Status::ok();
}

// ---- Concat, Split ----

Status concat_grad(GradientContext& g) {
  const int rank = g.rank(g.input(0));
  int64_t axis = g.attrs().i("axis");
  if (axis < 0) axis += rank;
  if (g.num_inputs() == 1) {
    if (g.wants(0)) g.set_grad(0, g.grad_output(0));
    return Status::ok();
  }
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    const ir::Dim d = g.type(g.input(i)).dims[static_cast<size_t>(axis)];
    if (!d.is_known()) return g.fail("the sizes of the joined axis must be known");
    sizes.push_back(d.size);
  }
  std::vector<ValueId> parts = g.emit_n("Split", {g.grad_output(0), g.ints(sizes)},
                                        static_cast<int>(sizes.size()), {{"axis", axis}});
  for (size_t i = 0; i < parts.size(); ++i)
    if (g.wants(i)) g.set_grad(i, parts[i]);
  return Status::ok();
}

// dX = the output gradients joined again; zeros for pieces that do not reach the loss.
Status split_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  std::vector<ValueId> parts;
  for (size_t i = 0; i < g.num_outputs(); ++i) parts.push_back(g.grad_output_or_zeros(i));
  g.set_grad(
      0, parts.size() == 1 ? parts[0] : g.emit("Concat", parts, {{"axis", g.attrs().i("axis")}}));
  return Status::ok();
}

// ---- masks and permutations that are their own adjoints ----

Status trilu_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  std::vector<ValueId> ins{g.grad_output(0)};
  if (g.has_input(1)) ins.push_back(g.input(1));
  g.set_grad(0, g.emit("Trilu", ins, g.node().attrs));
  return Status::ok();
}

Status reverse_sequence_grad(GradientContext& g) {
  if (g.wants(0))
    g.set_grad(0, g.emit("ReverseSequence", {g.grad_output(0), g.input(1)}, g.node().attrs));
  return Status::ok();
}

// ---- reductions ----

// The reduced axes of a Reduce* node (axes input for ReduceSum, attribute for the others),
// normalised to [0, rank) and sorted; all axes when none are given; empty when
// noop_with_empty_axes makes the op an identity.
Expected<std::vector<int64_t>> reduced_axes(GradientContext& g) {
  int rank = g.rank(g.input(0));
  std::vector<int64_t> axes;
  if (g.has_input(1)) {
    const Tensor* t = g.constant(g.input(1));
    if (!t) return g.fail("the axes must be known when the graph is built");
    axes = ops::to_int64s(*t);
  } else if (const ir::Attribute* a = g.node().attr("axes")) {
    axes = a->ints();
  }
  if (axes.empty()) {
    if (g.attrs().has("noop_with_empty_axes") && g.attrs().i("noop_with_empty_axes")) return axes;
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes)
    if (a < 0) a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// A reduction's output (or its gradient), with the reduced axes back as size-1 dims.
ValueId keep_dims(GradientContext& g, ValueId v, const std::vector<int64_t>& axes) {
  bool keep = !g.attrs().has("keepdims") || g.attrs().i("keepdims") != 0;
  if (keep || axes.empty()) return v;
  return g.emit("Unsqueeze", {v, g.ints(axes)});
}

// What a reduction rule works with: dY and Y with kept dims, X; `identity` when
// noop_with_empty_axes left the input unchanged (then dX = dY).
struct Reduced {
  std::vector<int64_t> axes;
  bool identity = false;
  ValueId dy = ir::kNoValue, y = ir::kNoValue, x = ir::kNoValue;
};

Expected<Reduced> reduced(GradientContext& g) {
  Reduced r;
  TRY(r.axes, reduced_axes(g));
  r.identity = r.axes.empty();
  r.x = g.input(0);
  if (r.identity) {
    r.dy = g.grad_output(0);
    r.y = g.output(0);
  } else {
    r.dy = keep_dims(g, g.grad_output(0), r.axes);
    r.y = keep_dims(g, g.output(0), r.axes);
  }
  return r;
}

// Registers a reduction rule `dx(g, r)`: dX from dY and Y (kept dims) and X; the identity case is
// handled here.
template <class F>
ops::GradientFn reduction_rule(F dx) {
  return [dx](GradientContext& g) -> Status {
    if (!g.wants(0)) return Status::ok();
    TRY(Reduced r, reduced(g));
    if (r.identity) {
      g.set_grad(0, g.grad_output(0));
      return Status::ok();
    }
    TRY(ValueId d, dx(g, r));
    g.set_grad(0, d);
    return Status::ok();
  };
}

Expected<ValueId> reduce_sum_dx(GradientContext& g, const Reduced& r) {
  return g.emit("Expand", {r.dy, g.shape_of(r.x)});
}

Expected<ValueId> reduce_mean_dx(GradientContext& g, const Reduced& r) {
  const ir::TensorType& t = g.type(r.x);
  double count = 1;
  for (int64_t a : r.axes) {
    const ir::Dim& d = t.dims[static_cast<size_t>(a)];
    if (!d.is_known()) return g.fail("the sizes of the reduced axes must be known");
    count *= static_cast<double>(d.size);
  }
  ValueId scaled = g.emit("Mul", {r.dy, g.scalar(1.0 / count, g.dtype(r.x))});
  return g.emit("Expand", {scaled, g.shape_of(r.x)});
}

// d|x| = sign(x) (0 at 0, the subgradient PyTorch uses).
Expected<ValueId> reduce_l1_dx(GradientContext& g, const Reduced& r) {
  return g.emit("Mul", {g.emit("Sign", {r.x}), r.dy});
}

// y = sqrt(sum x^2): dx = x * dy / y.
Expected<ValueId> reduce_l2_dx(GradientContext& g, const Reduced& r) {
  return g.emit("Mul", {r.x, g.emit("Div", {r.dy, r.y})});
}

Expected<ValueId> reduce_sum_square_dx(GradientContext& g, const Reduced& r) {
  return g.emit("Mul", {r.x, g.emit("Mul", {r.dy, g.scalar(2.0, g.dtype(r.x))})});
}

// y = log(s), s = sum x: dx = dy / s = dy / exp(y).
Expected<ValueId> reduce_log_sum_dx(GradientContext& g, const Reduced& r) {
  ValueId per = g.emit("Div", {r.dy, g.emit("Exp", {r.y})});
  return g.emit("Expand", {per, g.shape_of(r.x)});
}

// y = log(sum exp x): dx = dy * exp(x - y) (the softmax over the reduced axes).
Expected<ValueId> reduce_log_sum_exp_dx(GradientContext& g, const Reduced& r) {
  return g.emit("Mul", {g.emit("Exp", {g.emit("Sub", {r.x, r.y})}), r.dy});
}

// dx = dy where x is the extreme, else 0 (every tied element gets the full dy).
Expected<ValueId> reduce_extreme_dx(GradientContext& g, const Reduced& r) {
  ValueId at = g.emit("Equal", {r.x, r.y});
  return g.emit("Where", {at, r.dy, g.scalar(0.0, g.dtype(r.x))});
}

// y = prod x: dx = dy * y / x (inputs containing 0 give NaN or inf there).
Expected<ValueId> reduce_prod_dx(GradientContext& g, const Reduced& r) {
  return g.emit("Mul", {g.emit("Div", {r.y, r.x}), r.dy});
}

}  // namespace

void register_tensor_gradients(ops::OpRegistry& registry) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    set_gradient(registry, op, reshape_grad);
  set_gradient(registry, "Transpose", transpose_grad);
  set_gradient(registry, "DepthToSpace", depth_to_space_grad);
  set_gradient(registry, "SpaceToDepth", space_to_depth_grad);
  set_gradient(registry, "Expand", expand_grad);
  set_gradient(registry, "Tile", tile_grad);
  set_gradient(registry, "SumToShape", sum_to_shape_grad);
  set_gradient(registry, "Concat", concat_grad);
  set_gradient(registry, "Split", split_grad);
  set_gradient(registry, "Trilu", trilu_grad);
  set_gradient(registry, "ReverseSequence", reverse_sequence_grad);

  set_gradient(registry, "ReduceSum", reduction_rule(reduce_sum_dx));
  set_gradient(registry, "ReduceMean", reduction_rule(reduce_mean_dx));
  set_gradient(registry, "ReduceL1", reduction_rule(reduce_l1_dx));
  set_gradient(registry, "ReduceL2", reduction_rule(reduce_l2_dx));
  set_gradient(registry, "ReduceSumSquare", reduction_rule(reduce_sum_square_dx));
  set_gradient(registry, "ReduceLogSum", reduction_rule(reduce_log_sum_dx));
  set_gradient(registry, "ReduceLogSumExp", reduction_rule(reduce_log_sum_exp_dx));
  set_gradient(registry, "ReduceMax", reduction_rule(reduce_extreme_dx));
  set_gradient(registry, "ReduceMin", reduction_rule(reduce_extreme_dx));
  set_gradient(registry, "ReduceProd", reduction_rule(reduce_prod_dx));

  set_no_gradient(registry, "Scan",
                  "not implemented: it would need the body graph differentiated on its own and a "
                  "reverse Scan over the per-iteration states saved by the forward one");
  register_index_gradients(registry);
}

}  // namespace tessera::autodiff
