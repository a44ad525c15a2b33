// Indexing ops with index tensors (ONNX opset 17): GatherElements, ScatterElements, GatherND,
// ScatterND, Compress, OneHot; and register_index_ops, which registers the whole family
// (index_*.cpp, nn_more_*.cpp).
//
// Index conventions: negative indices count from the back of their axis; an index out of
// [-dim, dim) is an error of the kernel (a value, never a crash). Elements move as bytes; the
// scatter reductions (add, mul, max, min) compute in the element type (f16/bf16 through f32).
#include <algorithm>
#include <cstring>

#include "engine/ops/index_internal.h"

namespace tessera::ops {

Expected<Tensor> make_tensor(DType dt, Shape shape, const ir::Node& node) {
  auto t = Tensor::create(dt, std::move(shape));
  if (!t) return node_error(node, t.error().message);
  return std::move(t).value();
}

void next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return;
    idx[d] = 0;
  }
}

Expected<int64_t> read_scalar_int(const Tensor& t, const ir::Node& node, const std::string& what) {
  TRY(std::vector<int64_t> v, read_ints(t, node, what));
  if (v.size() != 1)
    return node_error(node, what + " must hold one value, got shape " + shape_to_string(t.shape()));
  return v[0];
}

namespace {

using ir::Node;

// Normalises index i of an axis of size dim; error when out of range.
Expected<int64_t> fix_index(int64_t i, int64_t dim, const Node& node, int axis) {
  if (i < -dim || i >= dim)
    return node_error(node, "index " + std::to_string(i) + " is out of range for axis " +
                                std::to_string(axis) + " of size " + std::to_string(dim));
  return i < 0 ? i + dim : i;
}

Status check_indices_type(const InferContext& ctx, size_t i) {
  const DType dt = ctx.inputs[i]->dtype;
  if (dt != DType::kI64 && dt != DType::kI32)
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be i32 or i64, got " +
                                    std::string(dtype_name(dt)));
  return Status::ok();
}

// ---- reductions shared by the scatters ----

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Expected<Reduction> read_reduction(const Node& node, const AttrReader& attrs) {
  const std::string& r = attrs.s("reduction");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return node_error(node, "reduction must be none, add, mul, max or min, got '" + r + "'");
}

// out[dst] (op)= upd[src] for element offsets; `out` and `upd` share a (widened) dtype.
struct Combiner {
  Reduction red;
  Tensor& out;
  const Tensor& upd;
  size_t esz;

  Status apply(const Node& node, const std::vector<std::pair<int64_t, int64_t>>& moves) {
    if (red == Reduction::kNone) {
      for (const auto& [dst, src] : moves)
        std::memcpy(byte_data(out) + dst * esz, byte_data(upd) + src * esz, esz);
      return Status::ok();
    }
    if (out.dtype() == DType::kBool) return node_error(node, "reductions do not apply to bool");
    return dispatch_numeric(out.dtype(), node, [&](auto tag) -> Status {
      using T = decltype(tag);
      T* o = out.data<T>();
      const T* u = upd.data<T>();
      for (const auto& [dst, src] : moves) {
        switch (red) {
          case Reduction::kAdd:
            o[dst] = static_cast<T>(o[dst] + u[src]);
            break;
          case Reduction::kMul:
            o[dst] = static_cast<T>(o[dst] * u[src]);
            break;
          case Reduction::kMax:
            o[dst] = std::max(o[dst], u[src]);
            break;
          case Reduction::kMin:
            o[dst] = std::min(o[dst], u[src]);
            break;
          case Reduction::kNone:
            break;
        }
      }
      return Status::ok();
    });
  }
};

// Runs the scatter: `moves` pairs (output offset, update offset) applied in order.
Status finish_scatter(KernelContext& ctx, const std::vector<std::pair<int64_t, int64_t>>& moves) {
  TRY(Reduction red, read_reduction(ctx.node, ctx.attrs()));
  const DType dt = ctx.in(0).dtype();
  const bool wide = red != Reduction::kNone;
  Tensor out = (wide ? widen(ctx.in(0)) : ctx.in(0)).contiguous().clone();
  const Tensor upd = (wide ? widen(ctx.in(2)) : ctx.in(2)).contiguous();
  Combiner c{red, out, upd, static_cast<size_t>(dtype_size(out.dtype()))};
  RETURN_IF_ERROR(c.apply(ctx.node, moves));
  ctx.outputs = {narrow(out, dt)};
  return Status::ok();
}

// ---- GatherElements, ScatterElements ----

Expected<std::vector<TensorType>> infer_gather_elements(const InferContext& ctx) {
  RETURN_IF_ERROR(check_indices_type(ctx, 1));
  const TensorType& x = *ctx.inputs[0];
  const TensorType& idx = *ctx.inputs[1];
  if (!x.rank_known || !idx.rank_known) return one(TensorType::unranked(x.dtype));
  if (x.rank() == 0 || idx.rank() != x.rank())
    return node_error(ctx.node, "'data' " + x.to_string() + " and 'indices' " + idx.to_string() +
                                    " must have the same rank >= 1");
  RETURN_IF_ERROR(normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node).status());
  return one(TensorType(x.dtype, idx.dims));
}

// For every position p of `indices`: the flat offset in data (p with axis replaced by the index)
// and the flat offset of p itself.
Expected<std::vector<std::pair<int64_t, int64_t>>> element_pairs(const Tensor& data,
                                                                 const Tensor& indices, int axis,
                                                                 const Node& node) {
  if (indices.rank() != data.rank())
    return node_error(node, "'indices' " + shape_to_string(indices.shape()) +
                                " must have the rank of 'data' " + shape_to_string(data.shape()));
  TRY(std::vector<int64_t> idx, read_ints(indices, node, "input 'indices'", true));
  const std::vector<int64_t> ds = contiguous_strides(data.shape());
  std::vector<std::pair<int64_t, int64_t>> pairs(idx.size());
  std::vector<int64_t> pos(static_cast<size_t>(data.rank()), 0);
  for (size_t k = 0; k < idx.size(); ++k) {
    TRY(int64_t i, fix_index(idx[k], data.dim(axis), node, axis));
    int64_t off = 0;
    for (int d = 0; d < data.rank(); ++d) {
      const int64_t p = d == axis ? i : pos[static_cast<size_t>(d)];
      if (d != axis && p >= data.dim(d))
        return node_error(node, "'indices' " + shape_to_string(indices.shape()) +
                                    " exceeds 'data' " + shape_to_string(data.shape()) +
                                    " outside axis " + std::to_string(axis));
      off += p * ds[static_cast<size_t>(d)];
    }
    pairs[k] = {off, static_cast<int64_t>(k)};
    next_index(pos, indices.shape());
  }
  return pairs;
}

Status gather_elements_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  TRY(auto pairs, element_pairs(x, ctx.in(1), axis, ctx.node));
  TRY(Tensor y, make_tensor(x.dtype(), ctx.in(1).shape(), ctx.node));
  const auto esz = static_cast<size_t>(dtype_size(x.dtype()));
  for (const auto& [src, dst] : pairs)
    std::memcpy(byte_data(y) + dst * esz, byte_data(x) + src * esz, esz);
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_scatter_elements(const InferContext& ctx) {
  RETURN_IF_ERROR(check_indices_type(ctx, 1));
  if (ctx.inputs[2]->dtype != ctx.inputs[0]->dtype)
    return node_error(ctx.node, "'updates' must have the element type of 'data'");
  RETURN_IF_ERROR(read_reduction(ctx.node, ctx.attrs()).status());
  const TensorType& x = *ctx.inputs[0];
  const TensorType& idx = *ctx.inputs[1];
  const TensorType& upd = *ctx.inputs[2];
  if (x.rank_known && idx.rank_known) {
    if (x.rank() == 0 || idx.rank() != x.rank())
      return node_error(ctx.node, "'data' " + x.to_string() + " and 'indices' " + idx.to_string() +
                                      " must have the same rank >= 1");
    RETURN_IF_ERROR(normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node).status());
  }
  if (idx.rank_known && upd.rank_known && idx.dims.size() == upd.dims.size())
    for (size_t d = 0; d < idx.dims.size(); ++d)
      if (idx.dims[d].is_known() && upd.dims[d].is_known() && idx.dims[d] != upd.dims[d])
        return node_error(ctx.node, "'updates' " + upd.to_string() +
                                        " must have the shape of 'indices' " + idx.to_string());
  return one(x);
}

Status scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  if (ctx.in(2).shape() != ctx.in(1).shape())
    return node_error(ctx.node, "'updates' " + shape_to_string(ctx.in(2).shape()) +
                                    " must have the shape of 'indices' " +
                                    shape_to_string(ctx.in(1).shape()));
  TRY(auto pairs, element_pairs(x, ctx.in(1), axis, ctx.node));
  return finish_scatter(ctx, pairs);
}

// ---- GatherND, ScatterND ----

// Geometry of an ND gather/scatter: data [B..., K..., S...], indices [B..., Q..., k].
struct NdGeometry {
  int64_t batch = 1;       // product of the batch dims
  int64_t tuples = 1;      // index tuples per batch (product of Q)
  int64_t k = 0;           // length of one tuple
  int64_t slice = 1;       // elements of one selected slice (product of S)
  int64_t data_batch = 1;  // data elements per batch entry
  Shape out;               // GatherND output shape
};

Expected<NdGeometry> nd_geometry(const Shape& data, const Shape& indices, int64_t b,
                                 const Node& node) {
  const auto r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) return node_error(node, "'data' and 'indices' must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return node_error(node, "batch_dims " + std::to_string(b) +
                                " must be smaller than the ranks of 'data' and 'indices'");
  NdGeometry g;
  g.k = indices.back();
  if (g.k < 1 || g.k > r - b)
    return node_error(node, "the last dimension of 'indices' (" + std::to_string(g.k) +
                                ") must be in [1, rank(data) - batch_dims] = [1, " +
                                std::to_string(r - b) + "]");
  for (int64_t d = 0; d < b; ++d) {
    if (data[d] != indices[d])
      return node_error(node, "batch dimension " + std::to_string(d) + " differs: 'data' " +
                                  shape_to_string(data) + ", 'indices' " +
                                  shape_to_string(indices));
    g.batch *= data[d];
  }
  for (int64_t d = b; d < q - 1; ++d) g.tuples *= indices[d];
  for (int64_t d = b + g.k; d < r; ++d) g.slice *= data[d];
  g.data_batch = numel_of(data, static_cast<size_t>(b), data.size());
  g.out.assign(indices.begin(), indices.end() - 1);
  g.out.insert(g.out.end(), data.begin() + b + g.k, data.end());
  return g;
}

// Element offsets in data of the first element of each selected slice, batch-major.
Expected<std::vector<int64_t>> nd_offsets(const Shape& data, const Tensor& indices, int64_t b,
                                          const NdGeometry& g, const Node& node) {
  TRY(std::vector<int64_t> idx, read_ints(indices, node, "input 'indices'", true));
  const std::vector<int64_t> ds = contiguous_strides(data);
  std::vector<int64_t> offs;
  offs.reserve(static_cast<size_t>(g.batch * g.tuples));
  for (int64_t bt = 0; bt < g.batch; ++bt) {
    for (int64_t t = 0; t < g.tuples; ++t) {
      int64_t off = bt * g.data_batch;
      for (int64_t j = 0; j < g.k; ++j) {
        const auto axis = static_cast<int>(b + j);
        TRY(int64_t i, fix_index(idx[static_cast<size_t>((bt * g.tuples + t) * g.k + j)],
                                 data[static_cast<size_t>(axis)], node, axis));
        off += i * ds[static_cast<size_t>(axis)];
      }
      offs.push_back(off);
    }
  }
  return offs;
}

Expected<std::vector<TensorType>> infer_gather_nd(const InferContext& ctx) {
  if (ctx.inputs[1]->dtype != DType::kI64)
    return node_error(ctx.node, "input 'indices' must be i64");
  const TensorType& x = *ctx.inputs[0];
  const TensorType& idx = *ctx.inputs[1];
  if (!x.rank_known || !idx.rank_known || idx.rank() == 0 || !idx.dims.back().is_known())
    return one(TensorType::unranked(x.dtype));
  const int64_t b = ctx.attrs().i("batch_dims");
  const int64_t k = idx.dims.back().size;
  if (b < 0 || b >= std::min(x.rank(), idx.rank()) || k < 1 || k > x.rank() - b)
    return node_error(ctx.node, "'indices' " + idx.to_string() + " with batch_dims " +
                                    std::to_string(b) + " do not fit 'data' " + x.to_string());
  std::vector<Dim> dims(idx.dims.begin(), idx.dims.end() - 1);
  dims.insert(dims.end(), x.dims.begin() + b + k, x.dims.end());
  return one(TensorType(x.dtype, std::move(dims)));
}

Status gather_nd_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  const int64_t b = ctx.attrs().i("batch_dims");
  TRY(NdGeometry g, nd_geometry(x.shape(), ctx.in(1).shape(), b, ctx.node));
  TRY(std::vector<int64_t> offs, nd_offsets(x.shape(), ctx.in(1), b, g, ctx.node));
  TRY(Tensor y, make_tensor(x.dtype(), g.out, ctx.node));
  const auto block = static_cast<size_t>(g.slice * dtype_size(x.dtype()));
  for (size_t i = 0; i < offs.size() && block > 0; ++i)
    std::memcpy(byte_data(y) + i * block,
                byte_data(x) + static_cast<size_t>(offs[i] * dtype_size(x.dtype())), block);
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_scatter_nd(const InferContext& ctx) {
  if (ctx.inputs[1]->dtype != DType::kI64)
    return node_error(ctx.node, "input 'indices' must be i64");
  if (ctx.inputs[2]->dtype != ctx.inputs[0]->dtype)
    return node_error(ctx.node, "'updates' must have the element type of 'data'");
  RETURN_IF_ERROR(read_reduction(ctx.node, ctx.attrs()).status());
  const TensorType& x = *ctx.inputs[0];
  const TensorType& idx = *ctx.inputs[1];
  const TensorType& upd = *ctx.inputs[2];
  if (x.rank_known && idx.rank_known && upd.rank_known && idx.rank() > 0 &&
      idx.dims.back().is_known()) {
    const int64_t k = idx.dims.back().size;
    if (k < 1 || k > x.rank() || upd.rank() != idx.rank() - 1 + x.rank() - k)
      return node_error(ctx.node, "'updates' " + upd.to_string() +
                                      " must have shape indices[:-1] + "
                                      "data[k:] for 'indices' " +
                                      idx.to_string() + " and 'data' " + x.to_string());
  }
  return one(x);
}

Status scatter_nd_kernel(KernelContext& ctx) {
  const Shape& xs = ctx.in(0).shape();
  TRY(NdGeometry g, nd_geometry(xs, ctx.in(1).shape(), 0, ctx.node));
  if (ctx.in(2).shape() != g.out)
    return node_error(ctx.node, "'updates' " + shape_to_string(ctx.in(2).shape()) + " must be " +
                                    shape_to_string(g.out));
  TRY(std::vector<int64_t> offs, nd_offsets(xs, ctx.in(1), 0, g, ctx.node));
  std::vector<std::pair<int64_t, int64_t>> moves;
  moves.reserve(static_cast<size_t>(g.tuples * g.slice));
  for (size_t t = 0; t < offs.size(); ++t)
    for (int64_t e = 0; e < g.slice; ++e)
      moves.emplace_back(offs[t] + e, static_cast<int64_t>(t) * g.slice + e);
  return finish_scatter(ctx, moves);
}

// ---- Compress ----

Expected<std::vector<TensorType>> infer_compress(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  const TensorType& c = *ctx.inputs[1];
  if (c.dtype != DType::kBool) return node_error(ctx.node, "input 'condition' must be bool");
  if (c.rank_known && c.rank() != 1)
    return node_error(ctx.node, "input 'condition' must be 1-D, got " + c.to_string());
  Dim kept = Dim::unknown();
  if (const Tensor* cv = ctx.constant(1)) {
    int64_t n = 0;
    for (int64_t i = 0; i < cv->numel(); ++i) n += cv->get(i) != 0 ? 1 : 0;
    kept = Dim::known(n);
  }
  const AttrReader attrs = ctx.attrs();
  if (!attrs.has("axis")) return one(TensorType(x.dtype, {kept}));
  if (!x.rank_known) return one(TensorType::unranked(x.dtype));
  TRY(int a, normalize_axis(attrs.i("axis"), x.rank(), ctx.node));
  TensorType out = x;
  out.dims[static_cast<size_t>(a)] = kept;
  return one(out);
}

Status compress_kernel(KernelContext& ctx) {
  Tensor x = ctx.in(0).contiguous();
  const Tensor cond = ctx.in(1).contiguous();
  if (cond.rank() != 1) return node_error(ctx.node, "input 'condition' must be 1-D");
  const AttrReader attrs = ctx.attrs();
  int a = 0;
  if (attrs.has("axis")) {
    TRY(a, normalize_axis(attrs.i("axis"), x.rank(), ctx.node));
  } else {
    TRY(x, x.reshape({x.numel()}));
  }
  const int64_t dim = x.dim(a);
  if (cond.numel() > dim)
    return node_error(ctx.node, "'condition' has " + std::to_string(cond.numel()) +
                                    " entries for an axis of size " + std::to_string(dim));
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i)
    if (cond.get(i) != 0) keep.push_back(i);
  Shape shape = x.shape();
  shape[static_cast<size_t>(a)] = static_cast<int64_t>(keep.size());
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));
  const auto inner = static_cast<size_t>(
      numel_of(x.shape(), static_cast<size_t>(a) + 1, x.shape().size()) * dtype_size(x.dtype()));
  const int64_t outer = numel_of(x.shape(), 0, static_cast<size_t>(a));
  std::byte* dst = byte_data(y);
  for (int64_t o = 0; o < outer && inner > 0; ++o)
    for (int64_t i : keep) {
      std::memcpy(dst, byte_data(x) + static_cast<size_t>(o * dim + i) * inner, inner);
      dst += inner;
    }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- OneHot ----

Expected<std::vector<TensorType>> infer_one_hot(const InferContext& ctx) {
  const TensorType& idx = *ctx.inputs[0];
  const TensorType& values = *ctx.inputs[2];
  if (!is_integer(idx.dtype) && !is_float(idx.dtype))
    return node_error(ctx.node, "input 'indices' must be numeric");
  if (values.rank_known &&
      (values.rank() != 1 || (values.dims[0].is_known() && values.dims[0].size != 2)))
    return node_error(ctx.node,
                      "input 'values' must be [2] ([off, on]), got " + values.to_string());
  if (!idx.rank_known) return one(TensorType::unranked(values.dtype));
  TRY(int a, normalize_axis(ctx.attrs().i("axis"), idx.rank() + 1, ctx.node));
  Dim depth = Dim::unknown();
  if (const Tensor* d = ctx.constant(1); d && d->numel() == 1)
    depth = Dim::known(static_cast<int64_t>(d->get(0)));
  std::vector<Dim> dims = idx.dims;
  dims.insert(dims.begin() + a, depth);
  return one(TensorType(values.dtype, std::move(dims)));
}

Status one_hot_kernel(KernelContext& ctx) {
  const Tensor& idx = ctx.in(0);
  if (ctx.in(1).numel() != 1) return node_error(ctx.node, "input 'depth' must hold one value");
  const auto depth = static_cast<int64_t>(ctx.in(1).get(0));
  if (depth < 1) return node_error(ctx.node, "depth must be >= 1, got " + std::to_string(depth));
  const Tensor values = ctx.in(2).contiguous();
  if (values.numel() != 2) return node_error(ctx.node, "input 'values' must hold [off, on]");
  TRY(int a, normalize_axis(ctx.attrs().i("axis"), idx.rank() + 1, ctx.node));
  Shape shape = idx.shape();
  shape.insert(shape.begin() + a, depth);
  TRY(Tensor y, make_tensor(values.dtype(), shape, ctx.node));
  const auto esz = static_cast<size_t>(dtype_size(values.dtype()));
  const std::byte* off = byte_data(values);
  const std::byte* on = off + esz;
  const int64_t outer = numel_of(idx.shape(), 0, static_cast<size_t>(a));
  const int64_t inner = numel_of(idx.shape(), static_cast<size_t>(a), idx.shape().size());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(byte_data(y) + i * esz, off, esz);
  const Tensor ic = idx.contiguous();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto k = static_cast<int64_t>(ic.get(o * inner + in));
      if (k < 0) k += depth;
      if (k < 0 || k >= depth) continue;  // out of range: the row stays all "off"
      std::memcpy(byte_data(y) + static_cast<size_t>((o * depth + k) * inner + in) * esz, on, esz);
    }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- registration ----

void add_reduction_attr(OpDef& def) {
  def.attr("reduction", AttrKind::kString, Attribute("none"),
           "how an update meets the existing value: none (replace), add, mul, max, min; "
           "duplicate indices are applied in order");
}

void register_gather_scatter(OpRegistry& registry) {
  {
    OpDef def("GatherElements", "tensor",
              "output[i][j][k] = data[index][j][k] for axis 0 (index = indices[i][j][k]), likewise "
              "for other axes; output has the shape of 'indices'.");
    def.input("data", "tensor of rank r >= 1").input("indices", "i32/i64, rank r");
    def.output("output", "shape of 'indices'");
    def.attr("axis", AttrKind::kInt, Attribute(int64_t{0}), "axis to index, in [-r, r-1]");
    def.allowed_types = kAllTypes;
    def.infer = infer_gather_elements;
    def.reference = gather_elements_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("ScatterElements", "tensor",
              "A copy of 'data' where, for each position p of 'indices', the element at p with "
              "p[axis] replaced by indices[p] receives updates[p] (combined by 'reduction').");
    def.input("data", "tensor of rank r >= 1")
        .input("indices", "i32/i64, rank r")
        .input("updates", "shape of 'indices', dtype of 'data'");
    def.output("output", "shape of 'data'");
    def.attr("axis", AttrKind::kInt, Attribute(int64_t{0}), "axis to index, in [-r, r-1]");
    add_reduction_attr(def);
    def.allowed_types = kAllTypes;
    def.infer = infer_scatter_elements;
    def.reference = scatter_elements_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("GatherND", "tensor",
              "Gathers slices of 'data' addressed by the tuples in the last axis of 'indices'; "
              "the first batch_dims axes of both are matched. Output shape "
              "indices[:-1] + data[batch_dims + k:].");
    def.input("data", "tensor of rank r >= 1").input("indices", "i64 [B..., Q..., k]");
    def.output("output", "the gathered slices");
    def.attr("batch_dims", AttrKind::kInt, Attribute(int64_t{0}), "leading axes shared by both");
    def.allowed_types = kAllTypes;
    def.infer = infer_gather_nd;
    def.reference = gather_nd_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def(
        "ScatterND", "tensor",
        "A copy of 'data' whose slices addressed by the tuples of 'indices' [Q..., k] receive "
        "'updates' [Q..., data[k:]...] (combined by 'reduction').");
    def.input("data", "tensor of rank r >= 1")
        .input("indices", "i64 [Q..., k]")
        .input("updates", "indices[:-1] + data[k:], dtype of 'data'");
    def.output("output", "shape of 'data'");
    add_reduction_attr(def);
    def.allowed_types = kAllTypes;
    def.infer = infer_scatter_nd;
    def.reference = scatter_nd_kernel;
    registry.add(std::move(def));
  }
}

void register_compress_one_hot(OpRegistry& registry) {
  {
    OpDef def("Compress", "tensor",
              "Keeps the slices along 'axis' (the flattened input when axis is absent) whose "
              "'condition' entry is true; a shorter condition drops the rest. The output length is "
              "data-dependent.");
    def.input("input", "tensor of rank >= 1").input("condition", "bool 1-D");
    def.output("output", "the kept slices");
    def.attr("axis", AttrKind::kInt, std::nullopt, "axis to select along; absent: flatten first");
    def.allowed_types = kAllTypes;
    def.infer = infer_compress;
    def.reference = compress_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("OneHot", "tensor",
              "One-hot encoding: a new axis of size 'depth' holding values[1] at the index and "
              "values[0] elsewhere; negative indices count from the back, out-of-range ones give "
              "an all-off row.");
    def.input("indices", "numeric tensor (floats are truncated)")
        .input("depth", "scalar or one-element numeric tensor")
        .input("values", "[off, on]; their dtype is the output's");
    def.output("output", "rank(indices) + 1");
    def.attr("axis", AttrKind::kInt, Attribute(int64_t{-1}), "where the new axis goes");
    def.allowed_types = kNumericTypes;
    def.infer = infer_one_hot;
    def.reference = one_hot_kernel;
    def.no_gradient_reason = "the output does not depend smoothly on the indices";
    registry.add(std::move(def));
  }
}

}  // namespace

void register_index_ops(OpRegistry& registry) {
  register_gather_scatter(registry);
  register_compress_one_hot(registry);
  register_index_select_ops(registry);
  register_index_move_ops(registry);
  register_resize_op(registry);
  register_scan_op(registry);
}

}  // namespace tessera::ops
