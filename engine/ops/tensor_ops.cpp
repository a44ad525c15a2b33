// Tensor ops that move data without arithmetic (ONNX opset 17): Flatten, Reshape, Transpose,
// Squeeze, Unsqueeze, Shape, Expand, Constant, Identity here; Concat, Split, Slice and Gather in
// tensor_index_ops.cpp.
//
// Reference kernels never dispatch on the element type: they copy bytes by element size, either
// through a strided view (Tensor::view, then clone()) or as contiguous blocks.
#include <algorithm>
#include <optional>
#include <set>

#include "engine/ir/limits.h"
#include "engine/ops/helpers.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {

// ---- shared pieces (declared in tensor_ops_internal.h) ----

Expected<std::vector<int64_t>> read_ints(const Tensor& t, const ir::Node& node,
                                         const std::string& what, bool any_rank) {
  if (t.dtype() != DType::kI64 && t.dtype() != DType::kI32)
    return node_error(node, what + " must be i32 or i64, got " + std::string(dtype_name(t.dtype())));
  if (!any_rank && t.rank() > 1)
    return node_error(node, what + " must be 1-D, got shape " + shape_to_string(t.shape()));
  const Tensor c = t.contiguous();
  std::vector<int64_t> out(static_cast<size_t>(c.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = c.dtype() == DType::kI64 ? c.data<int64_t>()[i] : c.data<int32_t>()[i];
  return out;
}

Status check_index_input(const InferContext& ctx, size_t i, bool allow_i32) {
  if (!ctx.has_input(i)) return Status::ok();
  const TensorType& t = *ctx.inputs[i];
  const std::string& name = ctx.def.inputs[std::min(i, ctx.def.inputs.size() - 1)].name;
  if (t.dtype != DType::kI64 && !(allow_i32 && t.dtype == DType::kI32))
    return node_error(ctx.node, "input '" + name + "' must be " + (allow_i32 ? "i32 or i64" : "i64") +
                                    ", got " + std::string(dtype_name(t.dtype)));
  // A scalar counts as one index (ONNX's own Loop test bodies feed Unsqueeze a scalar axis).
  if (t.rank_known && t.rank() > 1)
    return node_error(ctx.node, "input '" + name + "' must be 1-D, got " + t.to_string());
  return Status::ok();
}

Expected<std::optional<std::vector<int64_t>>> constant_ints(const InferContext& ctx, size_t i) {
  const Tensor* c = ctx.constant(i);
  if (c == nullptr) return std::optional<std::vector<int64_t>>();
  const std::string& name = ctx.def.inputs[std::min(i, ctx.def.inputs.size() - 1)].name;
  TRY(std::vector<int64_t> v, read_ints(*c, ctx.node, "input '" + name + "'"));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

TensorType union_type(const TensorType& a, const TensorType& b) {
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return TensorType::unranked(a.dtype).as(a.kind);
  TensorType out = a;
  for (size_t i = 0; i < out.dims.size(); ++i)
    if (a.dims[i] != b.dims[i]) out.dims[i] = Dim::unknown();
  return out;
}

int64_t static_length(const TensorType* t) {
  if (t != nullptr && t->rank_known && t->rank() == 0) return 1;
  if (t == nullptr || !t->rank_known || t->rank() != 1 || !t->dims[0].is_known()) return -1;
  return t->dims[0].size;
}

std::vector<Dim> known_dims(const Shape& s) {
  std::vector<Dim> d;
  for (int64_t v : s) d.push_back(Dim::known(v));
  return d;
}

int64_t numel_of(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) n *= s[i];
  return n;
}

Expected<Tensor> reshaped_copy(const Tensor& x, Shape shape, const ir::Node& node) {
  auto r = x.clone().reshape(std::move(shape));
  if (!r) return node_error(node, r.error().message);
  return std::move(r).value();
}

Expected<Tensor> strided_copy(const Tensor& x, Shape shape, std::vector<int64_t> strides,
                              int64_t offset, const ir::Node& node) {
  auto n = checked_numel(shape, x.dtype());
  if (!n) return node_error(node, n.error().message);
  if (*n == 0) return Tensor(x.dtype(), std::move(shape));
  return x.view(std::move(shape), std::move(strides), offset).clone();
}

std::vector<TensorType> one(TensorType t) { return std::vector<TensorType>{std::move(t)}; }

namespace {

using ir::Node;

// ---- Flatten ----

// Product of dims [begin, end): known when all are; a lone symbol times known 1s keeps the symbol.
Dim dim_product(const std::vector<Dim>& dims, int begin, int end) {
  int64_t known = 1;
  std::vector<const Dim*> other;
  for (int i = begin; i < end; ++i) {
    if (dims[i].is_known()) known *= dims[i].size;
    else other.push_back(&dims[i]);
  }
  if (known == 0) return Dim::known(0);
  if (other.empty()) return Dim::known(known);
  if (other.size() == 1 && known == 1) return *other[0];
  return Dim::unknown();
}

Expected<int> flatten_axis(int64_t axis, int rank, const Node& node) {
  if (axis < -rank || axis > rank)
    return node_error(node, "axis " + std::to_string(axis) + " is out of range [" +
                                std::to_string(-rank) + ", " + std::to_string(rank) + "]");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Expected<std::vector<TensorType>> infer_flatten(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  const int64_t axis = ctx.attrs().i("axis");
  if (!x.rank_known)
    return one(TensorType(x.dtype, {axis == 0 ? Dim::known(1) : Dim::unknown(), Dim::unknown()}));
  TRY(int a, flatten_axis(axis, x.rank(), ctx.node));
  return one(TensorType(x.dtype, {dim_product(x.dims, 0, a), dim_product(x.dims, a, x.rank())}));
}

Status flatten_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TRY(int a, flatten_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  const auto r = static_cast<size_t>(x.rank());
  TRY(Tensor y, reshaped_copy(x, {numel_of(x.shape(), 0, a), numel_of(x.shape(), a, r)}, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Reshape ----

// Output dims of Reshape(in, target) (ONNX: 0 copies the input dim unless allowzero, -1 takes
// what is left). With symbols, equal symbols on both sides cancel; -1 is then known when nothing
// else is left, the input's last symbol when exactly that one is left, else unknown.
Expected<std::vector<Dim>> reshape_dims(const TensorType& in, const std::vector<int64_t>& target,
                                        bool allowzero, const Node& node) {
  const std::string to = shape_to_string(target);
  int infer_at = -1;
  bool has_zero = false;
  std::vector<Dim> out;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t t = target[i];
    if (t < -1) return node_error(node, "shape " + to + " has the invalid entry " + std::to_string(t));
    if (t == -1) {
      if (infer_at >= 0) return node_error(node, "shape " + to + " has more than one -1");
      infer_at = static_cast<int>(i);
      out.push_back(Dim::unknown());
    } else if (t == 0 && !allowzero) {
      if (in.rank_known && i >= in.dims.size())
        return node_error(node, "shape " + to + " copies dimension " + std::to_string(i) +
                                    " (0) but the input " + in.to_string() + " has rank " +
                                    std::to_string(in.rank()));
      out.push_back(in.rank_known ? in.dims[i] : Dim::unknown());
    } else {
      has_zero = has_zero || t == 0;
      out.push_back(Dim::known(t));
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    return node_error(node, "shape " + to + " has both 0 and -1 while allowzero is set");
  if (!in.rank_known) return out;
  // Cancel the symbols the two sides share, multiply the known sizes.
  std::multiset<std::string> in_syms;
  int64_t in_known = 1, out_known = 1;
  bool in_unknown = false, out_left = false;
  for (const Dim& d : in.dims) {
    if (d.is_known()) in_known *= d.size;
    else if (d.is_symbolic()) in_syms.insert(d.symbol);
    else in_unknown = true;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const Dim& d = out[i];
    if (static_cast<int>(i) == infer_at) continue;
    if (d.is_known()) {
      out_known *= d.size;
    } else if (auto it = in_syms.find(d.symbol); d.is_symbolic() && it != in_syms.end()) {
      in_syms.erase(it);
    } else {
      out_left = true;
    }
  }
  if (in_unknown || out_left) return out;
  const std::string msg = "cannot reshape " + in.to_string() + " to " + to;
  if (infer_at < 0) {
    if (in_syms.empty() && in_known != out_known) return node_error(node, msg);
    return out;
  }
  if (out_known == 0) {
    if (in_known != 0 || !in_syms.empty()) return node_error(node, msg);
    return node_error(node, msg + ": -1 is ambiguous when the other dimensions hold 0 elements");
  }
  if (in_syms.empty()) {
    if (in_known % out_known != 0) return node_error(node, msg);
    out[infer_at] = Dim::known(in_known / out_known);
  } else if (in_syms.size() == 1 && in_known == out_known) {
    out[infer_at] = Dim::named(*in_syms.begin());
  }
  return out;
}

Expected<std::vector<TensorType>> infer_reshape(const InferContext& ctx) {
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  TRY(auto target, constant_ints(ctx, 1));
  if (!target) {
    const int64_t n = static_length(ctx.inputs[1]);
    if (n < 0) return one(TensorType::unranked(x.dtype));
    TRY(std::vector<Dim> dims, ir::unknown_dims(n));
    return one(TensorType(x.dtype, std::move(dims)));
  }
  TRY(std::vector<Dim> dims, reshape_dims(x, *target, ctx.attrs().i("allowzero") != 0, ctx.node));
  return one(TensorType(x.dtype, std::move(dims)));
}

Status reshape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TRY(std::vector<int64_t> target, read_ints(ctx.in(1), ctx.node, "input 'shape'"));
  const TensorType in = TensorType::of(x.dtype(), x.shape());
  TRY(std::vector<Dim> dims, reshape_dims(in, target, ctx.attrs().i("allowzero") != 0, ctx.node));
  Shape shape;
  for (const Dim& d : dims) shape.push_back(d.size);
  TRY(Tensor y, reshaped_copy(x, shape, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Transpose ----

Expected<std::vector<int>> transpose_perm(const AttrReader& attrs, int rank, const Node& node) {
  std::vector<int> perm;
  if (!attrs.has("perm")) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  const std::vector<int64_t>& p = attrs.ints("perm");
  if (static_cast<int>(p.size()) != rank)
    return node_error(node, "perm has " + std::to_string(p.size()) + " entries for an input of rank " +
                                std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t v : p) {
    if (v < 0 || v >= rank || seen[static_cast<size_t>(v)])
      return node_error(node, "perm is not a permutation of 0.." + std::to_string(rank - 1));
    seen[static_cast<size_t>(v)] = true;
    perm.push_back(static_cast<int>(v));
  }
  return perm;
}

Expected<std::vector<TensorType>> infer_transpose(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  const AttrReader attrs = ctx.attrs();
  if (!x.rank_known) {
    if (!attrs.has("perm")) return one(x);
    return one(TensorType(x.dtype, std::vector<Dim>(attrs.ints("perm").size(), Dim::unknown())));
  }
  TRY(std::vector<int> perm, transpose_perm(attrs, x.rank(), ctx.node));
  TensorType out(x.dtype, {});
  for (int p : perm) out.dims.push_back(x.dims[static_cast<size_t>(p)]);
  return one(out);
}

Status transpose_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(std::vector<int> perm, transpose_perm(ctx.attrs(), x.rank(), ctx.node));
  Shape shape;
  std::vector<int64_t> strides;
  for (int p : perm) {
    shape.push_back(x.dim(p));
    strides.push_back(x.strides()[static_cast<size_t>(p)]);
  }
  TRY(Tensor y, strided_copy(x, shape, strides, 0, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Squeeze / Unsqueeze ----

// Sorted, unique axes normalized against `rank`.
Expected<std::vector<int>> normalize_axes(const std::vector<int64_t>& axes, int rank, const Node& node) {
  std::vector<int> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return node_error(node, "axis " + std::to_string(a) + " is out of range for rank " +
                                  std::to_string(rank));
    const int n = static_cast<int>(a < 0 ? a + rank : a);
    if (std::find(out.begin(), out.end(), n) != out.end())
      return node_error(node, "axis " + std::to_string(a) + " appears more than once");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Squeezed dims; `axes` absent squeezes every dim of size 1 (the caller makes sure all are known).
Expected<std::vector<Dim>> squeeze_dims(const std::vector<Dim>& dims,
                                        const std::optional<std::vector<int64_t>>& axes,
                                        const Node& node) {
  std::vector<Dim> out;
  if (!axes) {
    for (const Dim& d : dims)
      if (!(d.is_known() && d.size == 1)) out.push_back(d);
    return out;
  }
  TRY(std::vector<int> ax, normalize_axes(*axes, static_cast<int>(dims.size()), node));
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool squeezed = std::find(ax.begin(), ax.end(), static_cast<int>(i)) != ax.end();
    if (squeezed && dims[i].is_known() && dims[i].size != 1)
      return node_error(node, "cannot squeeze axis " + std::to_string(i) + " of size " +
                                  std::to_string(dims[i].size));
    if (!squeezed) out.push_back(dims[i]);
  }
  return out;
}

Expected<std::vector<TensorType>> infer_squeeze(const InferContext& ctx) {
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  TRY(auto axes, constant_ints(ctx, 1));
  if (!x.rank_known) return one(TensorType::unranked(x.dtype));
  if (ctx.has_input(1) && !axes) {
    const int64_t n = static_length(ctx.inputs[1]);
    if (n < 0 || n > x.rank()) return one(TensorType::unranked(x.dtype));
    return one(TensorType(x.dtype, std::vector<Dim>(static_cast<size_t>(x.rank() - n), Dim::unknown())));
  }
  if (!axes && !x.is_static()) return one(TensorType::unranked(x.dtype));  // which dims are 1?
  TRY(std::vector<Dim> dims, squeeze_dims(x.dims, axes, ctx.node));
  return one(TensorType(x.dtype, std::move(dims)));
}

Status squeeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(1)) {
    TRY(std::vector<int64_t> a, read_ints(ctx.in(1), ctx.node, "input 'axes'"));
    axes = std::move(a);
  }
  TRY(std::vector<Dim> dims, squeeze_dims(known_dims(x.shape()), axes, ctx.node));
  Shape shape;
  for (const Dim& d : dims) shape.push_back(d.size);
  TRY(Tensor y, reshaped_copy(x, shape, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<Dim>> unsqueeze_dims(const std::vector<Dim>& dims,
                                          const std::vector<int64_t>& axes, const Node& node) {
  const int out_rank = static_cast<int>(dims.size() + axes.size());
  TRY(std::vector<int> ax, normalize_axes(axes, out_rank, node));
  std::vector<Dim> out;
  size_t next = 0;
  for (int i = 0; i < out_rank; ++i) {
    if (std::find(ax.begin(), ax.end(), i) != ax.end()) out.push_back(Dim::known(1));
    else out.push_back(dims[next++]);
  }
  return out;
}

Expected<std::vector<TensorType>> infer_unsqueeze(const InferContext& ctx) {
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  TRY(auto axes, constant_ints(ctx, 1));
  if (!x.rank_known) return one(TensorType::unranked(x.dtype));
  if (!axes) {
    const int64_t n = static_length(ctx.inputs[1]);
    if (n < 0) return one(TensorType::unranked(x.dtype));
    TRY(std::vector<Dim> dims, ir::unknown_dims(x.rank() + n));
    return one(TensorType(x.dtype, std::move(dims)));
  }
  TRY(std::vector<Dim> dims, unsqueeze_dims(x.dims, *axes, ctx.node));
  return one(TensorType(x.dtype, std::move(dims)));
}

Status unsqueeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TRY(std::vector<int64_t> axes, read_ints(ctx.in(1), ctx.node, "input 'axes'"));
  TRY(std::vector<Dim> dims, unsqueeze_dims(known_dims(x.shape()), axes, ctx.node));
  Shape shape;
  for (const Dim& d : dims) shape.push_back(d.size);
  TRY(Tensor y, reshaped_copy(x, shape, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Shape ----

// [start, end) of Shape's slice of a rank-`rank` shape: negatives count from the back, clamped.
std::pair<int, int> shape_range(const AttrReader& attrs, int rank) {
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return static_cast<int>(std::clamp<int64_t>(v, 0, rank));
  };
  const int start = clamp(attrs.i("start"));
  const int end = attrs.has("end") ? clamp(attrs.i("end")) : rank;
  return {start, std::max(start, end)};
}

Expected<std::vector<TensorType>> infer_shape(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(TensorType(DType::kI64, {Dim::unknown()}));
  const auto [start, end] = shape_range(ctx.attrs(), x.rank());
  return one(TensorType(DType::kI64, {Dim::known(end - start)}));
}

Status shape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const auto [start, end] = shape_range(ctx.attrs(), x.rank());
  const Shape s(x.shape().begin() + start, x.shape().begin() + end);
  ctx.outputs = {Tensor::from_vector<int64_t>({static_cast<int64_t>(s.size())}, s)};
  return Status::ok();
}

// ---- Expand ----

Expected<std::vector<TensorType>> infer_expand(const InferContext& ctx) {
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  TRY(auto target, constant_ints(ctx, 1));
  if (!x.rank_known) return one(TensorType::unranked(x.dtype));
  if (!target) {
    // Each output dim is the input's where that is known > 1; the rest depend on the shape values.
    const int64_t n = static_length(ctx.inputs[1]);
    if (n < 0) return one(TensorType::unranked(x.dtype));
    const size_t rank = std::max<size_t>(x.dims.size(), static_cast<size_t>(n));
    TRY(std::vector<Dim> dims, ir::unknown_dims(static_cast<int64_t>(rank)));
    for (size_t i = 0; i < x.dims.size(); ++i)
      if (x.dims[i].is_known() && x.dims[i].size != 1) dims[rank - x.dims.size() + i] = x.dims[i];
    return one(TensorType(x.dtype, std::move(dims)));
  }
  for (int64_t v : *target)
    if (v < 0) return node_error(ctx.node, "shape has the negative entry " + std::to_string(v));
  auto dims = broadcast_dims(x.dims, known_dims(*target));
  if (!dims) return node_error(ctx.node, dims.error().message);
  return one(TensorType(x.dtype, std::move(*dims)));
}

Status expand_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(std::vector<int64_t> target, read_ints(ctx.in(1), ctx.node, "input 'shape'"));
  for (int64_t v : target)
    if (v < 0) return node_error(ctx.node, "shape has the negative entry " + std::to_string(v));
  auto shape = broadcast_shapes(x.shape(), target);
  if (!shape) return node_error(ctx.node, shape.error().message);
  std::vector<int64_t> strides = broadcast_strides(x.shape(), *shape);
  TRY(Tensor y, strided_copy(x, *shape, strides, 0, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Constant ----

constexpr const char* kConstantAttrs[] = {"value", "value_float", "value_floats", "value_int",
                                          "value_ints"};

Expected<Tensor> constant_tensor(const Node& node) {
  const char* set = nullptr;
  for (const char* name : kConstantAttrs) {
    if (node.attr(name) == nullptr) continue;
    if (set != nullptr)
      return node_error(node, std::string("attributes '") + set + "' and '" + name +
                                  "' are both set; exactly one value attribute is allowed");
    set = name;
  }
  if (set == nullptr)
    return node_error(node, "no value attribute (value, value_float, value_floats, value_int, "
                            "value_ints) is set");
  const Attribute& a = *node.attr(set);
  const std::string which = set;
  if (which == "value") return a.t();
  if (which == "value_float") return Tensor::scalar<float>(static_cast<float>(a.f()));
  if (which == "value_int") return Tensor::scalar<int64_t>(a.i());
  if (which == "value_floats") {
    const std::vector<double>& v = a.floats();
    return Tensor::from_doubles(DType::kF32, {static_cast<int64_t>(v.size())}, v);
  }
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(a.ints().size())}, a.ints());
}

Expected<std::vector<TensorType>> infer_constant(const InferContext& ctx) {
  TRY(Tensor t, constant_tensor(ctx.node));
  return one(TensorType::of(t.dtype(), t.shape()));
}

Status constant_kernel(KernelContext& ctx) {
  TRY(Tensor t, constant_tensor(ctx.node));
  ctx.outputs = {t.clone()};
  return Status::ok();
}

// ---- Identity ----

Status identity_kernel(KernelContext& ctx) {
  ctx.outputs = {ctx.in(0).clone()};
  return Status::ok();
}

}  // namespace

void register_tensor_ops(OpRegistry& registry) {
  {
    OpDef def("Flatten", "tensor",
              "Reshapes to 2-D: the dims before `axis` multiply into the first, the rest into the "
              "second.");
    def.input("input", "tensor of rank >= axis").output("output", "2-D tensor");
    def.attr("axis", AttrKind::kInt, Attribute(int64_t{1}),
             "first dim of the second output dim, in [-rank, rank]");
    def.infer = infer_flatten;
    def.reference = flatten_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Reshape", "tensor",
              "Same data, new shape. A 0 in `shape` copies the input dim (unless allowzero), one -1 "
              "takes the remaining size.");
    def.input("data", "tensor to reshape").input("shape", "i64 1-D target shape");
    def.output("reshaped", "tensor of the target shape");
    def.attr("allowzero", AttrKind::kInt, Attribute(int64_t{0}),
             "1: a 0 in shape is a zero-sized dim instead of a copy of the input dim");
    def.infer = infer_reshape;
    def.reference = reshape_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Transpose", "tensor", "Permutes the dims: output dim i is input dim perm[i].");
    def.input("data", "tensor").output("transposed", "permuted tensor");
    def.attr("perm", AttrKind::kInts, std::nullopt, "permutation of 0..rank-1; default reverses");
    def.infer = infer_transpose;
    def.reference = transpose_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Squeeze", "tensor",
              "Removes dims of size 1: those listed in `axes`, or all of them when it is absent.");
    def.input("data", "tensor").input("axes", "i64 1-D axes to remove, negatives from the back", true);
    def.output("squeezed", "tensor without the removed dims");
    def.infer = infer_squeeze;
    def.reference = squeeze_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Unsqueeze", "tensor", "Inserts dims of size 1 at `axes` (positions in the output).");
    def.input("data", "tensor").input("axes", "i64 1-D output positions of the new dims");
    def.output("expanded", "tensor with the inserted dims");
    def.infer = infer_unsqueeze;
    def.reference = unsqueeze_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Shape", "tensor", "The input's shape as an i64 1-D tensor, sliced to [start, end).");
    def.input("data", "tensor of any type").output("shape", "i64 1-D dims of data");
    def.attr("start", AttrKind::kInt, Attribute(int64_t{0}), "first dim, negatives from the back");
    def.attr("end", AttrKind::kInt, std::nullopt, "one past the last dim; default the rank");
    def.infer = infer_shape;
    def.reference = shape_kernel;
    def.no_gradient_reason = "the output depends only on the input's shape, not its values";
    registry.add(std::move(def));
  }
  {
    OpDef def("Expand", "tensor",
              "Broadcasts the input to `shape` (bidirectional: the result is the broadcast of both).");
    def.input("input", "tensor").input("shape", "i64 1-D target shape");
    def.output("output", "broadcast tensor");
    def.infer = infer_expand;
    def.reference = expand_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Constant", "tensor",
              "A constant tensor from exactly one attribute: value (tensor), value_float, "
              "value_floats (f32), value_int, value_ints (i64).");
    def.output("output", "the constant");
    def.attr("value", AttrKind::kTensor, std::nullopt, "the tensor");
    def.attr("value_float", AttrKind::kFloat, std::nullopt, "an f32 scalar");
    def.attr("value_floats", AttrKind::kFloats, std::nullopt, "an f32 1-D tensor");
    def.attr("value_int", AttrKind::kInt, std::nullopt, "an i64 scalar");
    def.attr("value_ints", AttrKind::kInts, std::nullopt, "an i64 1-D tensor");
    def.infer = infer_constant;
    def.reference = constant_kernel;
    def.no_gradient_reason = "it has no inputs";
    registry.add(std::move(def));
  }
  {
    OpDef def("Identity", "tensor", "A copy of the input (a tensor, a sequence or an optional).");
    def.input("input", "tensor, sequence or optional").output("output", "the same values");
    def.takes_sequences = true;
    def.infer = [](const InferContext& ctx) { return one(*ctx.inputs[0]); };
    def.reference = identity_kernel;
    registry.add(std::move(def));
  }
  register_tensor_index_ops(registry);
}

}  // namespace tessera::ops
