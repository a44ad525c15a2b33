// Tensor ops that select or join along axes (ONNX opset 17): Concat, Split, Slice, Gather.
// Registered by register_tensor_ops (tensor_ops.cpp) through register_tensor_index_ops.
//
// Kernels copy bytes by element size: Concat, Split and Gather move contiguous blocks
// (outer x axis x inner, inner being the row-major tail after the axis), Slice reads a strided view.
#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/ops/helpers.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

Expected<Tensor> new_tensor(DType dt, Shape shape, const Node& node) {
  auto t = Tensor::create(dt, std::move(shape));
  if (!t) return node_error(node, t.error().message);
  return std::move(t).value();
}

// Axis of an op that needs rank >= 1 (normalize_axis accepts 0 and -1 for scalars).
Expected<int> axis_of_ranked(int64_t axis, int rank, const Node& node, const char* what) {
  if (rank == 0) return node_error(node, std::string("cannot ") + what + " a scalar");
  return normalize_axis(axis, rank, node);
}

const std::byte* bytes(const Tensor& t) { return static_cast<const std::byte*>(t.raw_data()); }
std::byte* bytes(Tensor& t) { return static_cast<std::byte*>(t.raw_data()); }

// ---- Concat ----

// Two dims that must be equal: a known size beats a symbol, a symbol beats unknown.
Expected<Dim> same_dim(const Dim& a, const Dim& b, const Node& node, size_t input, size_t axis) {
  if (a.is_known() && b.is_known() && a.size != b.size)
    return node_error(node, "input " + std::to_string(input) + " has size " + b.to_string() +
                                " at dimension " + std::to_string(axis) + " but input 0 has " +
                                a.to_string());
  if (a.is_known()) return a;
  if (b.is_known() || (!a.is_symbolic() && b.is_symbolic())) return b;
  return a;
}

Expected<std::vector<TensorType>> infer_concat(const InferContext& ctx) {
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, ctx.num_inputs() - 1));
  const DType dt = ctx.inputs[0]->dtype;
  const TensorType* ranked = nullptr;
  for (const TensorType* t : ctx.inputs)
    if (t != nullptr && t->rank_known && ranked == nullptr) ranked = t;
  if (ranked == nullptr) return one(TensorType::unranked(dt));
  TRY(int a, axis_of_ranked(ctx.attrs().i("axis"), ranked->rank(), ctx.node, "concatenate"));
  std::vector<Dim> dims = ranked->dims;
  int64_t known_sum = 0;
  std::vector<Dim> unknown_parts;
  bool any_unranked = false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return node_error(ctx.node, "input " + std::to_string(i) + " is absent");
    const TensorType& t = *ctx.inputs[i];
    if (!t.rank_known) {
      any_unranked = true;
      continue;
    }
    if (t.rank() != ranked->rank())
      return node_error(ctx.node, "input " + std::to_string(i) + " " + t.to_string() +
                                      " has a different rank from " + ranked->to_string());
    for (size_t d = 0; d < dims.size(); ++d) {
      if (static_cast<int>(d) == a) continue;
      TRY(dims[d], same_dim(dims[d], t.dims[d], ctx.node, i, d));
    }
    if (t.dims[a].is_known()) known_sum += t.dims[a].size;
    else unknown_parts.push_back(t.dims[a]);
  }
  if (any_unranked) dims[a] = Dim::unknown();
  else if (unknown_parts.empty()) dims[a] = Dim::known(known_sum);
  else if (unknown_parts.size() == 1 && known_sum == 0) dims[a] = unknown_parts[0];
  else dims[a] = Dim::unknown();
  return one(TensorType(dt, std::move(dims)));
}

Status concat_kernel(KernelContext& ctx) {
  const Tensor& first = ctx.in(0);
  TRY(int a, axis_of_ranked(ctx.attrs().i("axis"), first.rank(), ctx.node, "concatenate"));
  Shape shape = first.shape();
  shape[a] = 0;
  std::vector<Tensor> parts;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) return node_error(ctx.node, "input " + std::to_string(i) + " is absent");
    const Tensor& t = ctx.in(i);
    bool fits = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int d = 0; fits && d < t.rank(); ++d) fits = d == a || t.dim(d) == first.dim(d);
    if (!fits)
      return node_error(ctx.node, "input " + std::to_string(i) + " " + t.summary(0) +
                                      " does not match input 0 " + first.summary(0) +
                                      " outside axis " + std::to_string(a));
    shape[a] += t.dim(a);
    parts.push_back(t.contiguous());
  }
  TRY(Tensor y, new_tensor(first.dtype(), shape, ctx.node));
  const size_t esz = static_cast<size_t>(dtype_size(first.dtype()));
  const int64_t outer = numel_of(shape, 0, static_cast<size_t>(a));
  std::byte* dst = bytes(y);
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& p : parts) {
      const size_t block = static_cast<size_t>(numel_of(p.shape(), a, p.shape().size())) * esz;
      if (block == 0) continue;
      std::memcpy(dst, bytes(p) + static_cast<size_t>(o) * block, block);
      dst += block;
    }
  }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Split ----

// Piece sizes along an axis of known size `dim` for n outputs: `split` when given, else equal.
Expected<std::vector<int64_t>> split_sizes(int64_t dim, const std::optional<std::vector<int64_t>>& split,
                                           size_t n, const Node& node) {
  if (!split) {
    if (n == 0 || dim % static_cast<int64_t>(n) != 0)
      return node_error(node, "an axis of size " + std::to_string(dim) + " cannot be split evenly into " +
                                  std::to_string(n) + " outputs");
    return std::vector<int64_t>(n, dim / static_cast<int64_t>(n));
  }
  if (split->size() != n)
    return node_error(node, "split has " + std::to_string(split->size()) + " entries for " +
                                std::to_string(n) + " outputs");
  int64_t sum = 0;
  for (int64_t s : *split) {
    if (s < 0) return node_error(node, "split has the negative entry " + std::to_string(s));
    sum += s;
  }
  if (dim >= 0 && sum != dim)
    return node_error(node, "split sizes add up to " + std::to_string(sum) + " but the axis has size " +
                                std::to_string(dim));
  return *split;
}

Expected<std::vector<TensorType>> infer_split(const InferContext& ctx) {
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  const size_t n = ctx.node.outputs.size();
  if (!x.rank_known) return std::vector<TensorType>(n, TensorType::unranked(x.dtype));
  TRY(int a, axis_of_ranked(ctx.attrs().i("axis"), x.rank(), ctx.node, "split"));
  TRY(auto split, constant_ints(ctx, 1));
  std::vector<TensorType> out(n, x);
  if (ctx.has_input(1) && !split) {
    const int64_t len = static_length(ctx.inputs[1]);
    if (len >= 0 && static_cast<size_t>(len) != n)
      return node_error(ctx.node, "split has " + std::to_string(len) + " entries for " +
                                      std::to_string(n) + " outputs");
    for (TensorType& t : out) t.dims[a] = Dim::unknown();
    return out;
  }
  const Dim& d = x.dims[a];
  if (!d.is_known() && !split) {
    for (TensorType& t : out) t.dims[a] = Dim::unknown();
    return out;
  }
  TRY(std::vector<int64_t> sizes, split_sizes(d.size, split, n, ctx.node));
  for (size_t i = 0; i < n; ++i) out[i].dims[a] = Dim::known(sizes[i]);
  return out;
}

Status split_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(int a, axis_of_ranked(ctx.attrs().i("axis"), x.rank(), ctx.node, "split"));
  std::optional<std::vector<int64_t>> split;
  if (ctx.has_input(1)) {
    TRY(std::vector<int64_t> s, read_ints(ctx.in(1), ctx.node, "input 'split'"));
    split = std::move(s);
  }
  const size_t n = ctx.node.outputs.size();
  TRY(std::vector<int64_t> sizes, split_sizes(x.dim(a), split, n, ctx.node));
  const size_t esz = static_cast<size_t>(dtype_size(x.dtype()));
  const size_t inner = static_cast<size_t>(numel_of(x.shape(), a + 1, x.shape().size())) * esz;
  const int64_t outer = numel_of(x.shape(), 0, static_cast<size_t>(a));
  const size_t in_block = static_cast<size_t>(x.dim(a)) * inner;
  ctx.outputs.clear();
  size_t at = 0;  // byte offset of the current piece inside one outer block
  for (size_t i = 0; i < n; ++i) {
    Shape shape = x.shape();
    shape[a] = sizes[i];
    TRY(Tensor y, new_tensor(x.dtype(), shape, ctx.node));
    const size_t block = static_cast<size_t>(sizes[i]) * inner;
    for (int64_t o = 0; o < outer && block > 0; ++o)
      std::memcpy(bytes(y) + static_cast<size_t>(o) * block,
                  bytes(x) + static_cast<size_t>(o) * in_block + at, block);
    at += block;
    ctx.outputs.push_back(y);
  }
  return Status::ok();
}

// ---- Slice ----

struct SliceSpec {
  int axis;
  int64_t start, end, step;  // as given (before clamping)
};

Expected<std::vector<SliceSpec>> slice_specs(const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends,
                                             const std::optional<std::vector<int64_t>>& axes,
                                             const std::optional<std::vector<int64_t>>& steps,
                                             int rank, const Node& node) {
  const size_t n = starts.size();
  if (ends.size() != n || (axes && axes->size() != n) || (steps && steps->size() != n))
    return node_error(node, "starts, ends, axes and steps must have the same length");
  std::vector<SliceSpec> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t ax = axes ? (*axes)[i] : static_cast<int64_t>(i);
    if (ax < -rank || ax >= rank)
      return node_error(node, "axis " + std::to_string(ax) + " is out of range for rank " +
                                  std::to_string(rank));
    const int a = static_cast<int>(ax < 0 ? ax + rank : ax);
    if (seen[static_cast<size_t>(a)])
      return node_error(node, "axis " + std::to_string(ax) + " appears more than once");
    seen[static_cast<size_t>(a)] = true;
    const int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) return node_error(node, "steps must not be 0");
    out.push_back({a, starts[i], ends[i], step});
  }
  return out;
}

// First index and element count of one sliced axis of size dim (ONNX clamping rules).
std::pair<int64_t, int64_t> slice_range(int64_t dim, const SliceSpec& s) {
  if (dim == 0) return {0, 0};
  int64_t start = s.start < 0 ? s.start + dim : s.start;
  int64_t end = s.end < 0 ? s.end + dim : s.end;
  if (s.step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? 1 + (end - start - 1) / s.step : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  const int64_t back = s.step == std::numeric_limits<int64_t>::min()
                           ? std::numeric_limits<int64_t>::max()
                           : -s.step;
  return {start, start > end ? 1 + (start - end - 1) / back : 0};
}

Expected<std::vector<TensorType>> infer_slice(const InferContext& ctx) {
  for (size_t i = 1; i <= 4; ++i) RETURN_IF_ERROR(check_index_input(ctx, i, true));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(TensorType::unranked(x.dtype));
  TRY(auto starts, constant_ints(ctx, 1));
  TRY(auto ends, constant_ints(ctx, 2));
  TRY(auto axes, constant_ints(ctx, 3));
  TRY(auto steps, constant_ints(ctx, 4));
  TensorType out = x;
  if (!starts || !ends || (ctx.has_input(3) && !axes) || (ctx.has_input(4) && !steps)) {
    // Values unknown: the sliced axes are unknown, the others keep their dims.
    std::vector<int64_t> sliced;
    const int64_t len = starts ? static_cast<int64_t>(starts->size()) : static_length(ctx.inputs[1]);
    if (axes) sliced = *axes;
    else if (!ctx.has_input(3) && len >= 0 && len <= x.rank())
      for (int64_t i = 0; i < len; ++i) sliced.push_back(i);
    else
      for (int i = 0; i < x.rank(); ++i) sliced.push_back(i);
    for (int64_t a : sliced) {
      TRY(int n, normalize_axis(a, x.rank(), ctx.node));
      out.dims[static_cast<size_t>(n)] = Dim::unknown();
    }
    return one(out);
  }
  TRY(std::vector<SliceSpec> specs, slice_specs(*starts, *ends, axes, steps, x.rank(), ctx.node));
  for (const SliceSpec& s : specs) {
    Dim& d = out.dims[static_cast<size_t>(s.axis)];
    if (d.is_known()) {
      d = Dim::known(slice_range(d.size, s).second);
    } else if (!(s.start == 0 && s.step == 1 && s.end == std::numeric_limits<int64_t>::max())) {
      d = Dim::unknown();  // a symbol survives only a full forward slice [0:INT64_MAX:1]
    }
  }
  return one(out);
}

Status slice_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(std::vector<int64_t> starts, read_ints(ctx.in(1), ctx.node, "input 'starts'"));
  TRY(std::vector<int64_t> ends, read_ints(ctx.in(2), ctx.node, "input 'ends'"));
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.has_input(3)) {
    TRY(std::vector<int64_t> v, read_ints(ctx.in(3), ctx.node, "input 'axes'"));
    axes = std::move(v);
  }
  if (ctx.has_input(4)) {
    TRY(std::vector<int64_t> v, read_ints(ctx.in(4), ctx.node, "input 'steps'"));
    steps = std::move(v);
  }
  TRY(std::vector<SliceSpec> specs, slice_specs(starts, ends, axes, steps, x.rank(), ctx.node));
  Shape shape = x.shape();
  std::vector<int64_t> strides = x.strides();
  int64_t offset = 0;
  for (const SliceSpec& s : specs) {
    const auto a = static_cast<size_t>(s.axis);
    const auto [start, len] = slice_range(shape[a], s);
    shape[a] = len;
    if (len == 0) continue;
    offset += start * strides[a];
    if (len > 1) strides[a] *= s.step;  // |step| < dim here, so no overflow
  }
  TRY(Tensor y, strided_copy(x, shape, strides, offset, ctx.node));
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Gather ----

Expected<std::vector<TensorType>> infer_gather(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  const TensorType& idx = *ctx.inputs[1];
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32)
    return node_error(ctx.node, "input 'indices' must be i32 or i64, got " +
                                    std::string(dtype_name(idx.dtype)));
  if (!x.rank_known || !idx.rank_known) return one(TensorType::unranked(x.dtype));
  TRY(int a, axis_of_ranked(ctx.attrs().i("axis"), x.rank(), ctx.node, "gather from"));
  std::vector<Dim> dims(x.dims.begin(), x.dims.begin() + a);
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), x.dims.begin() + a + 1, x.dims.end());
  return one(TensorType(x.dtype, std::move(dims)));
}

Status gather_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  const Tensor& idx_t = ctx.in(1);
  TRY(int a, axis_of_ranked(ctx.attrs().i("axis"), x.rank(), ctx.node, "gather from"));
  TRY(std::vector<int64_t> idx, read_ints(idx_t, ctx.node, "input 'indices'", true));
  const int64_t dim = x.dim(a);
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim)
      return node_error(ctx.node, "index " + std::to_string(i) + " is out of range for axis " +
                                      std::to_string(a) + " of size " + std::to_string(dim));
    if (i < 0) i += dim;
  }
  Shape shape(x.shape().begin(), x.shape().begin() + a);
  shape.insert(shape.end(), idx_t.shape().begin(), idx_t.shape().end());
  shape.insert(shape.end(), x.shape().begin() + a + 1, x.shape().end());
  TRY(Tensor y, new_tensor(x.dtype(), shape, ctx.node));
  const size_t esz = static_cast<size_t>(dtype_size(x.dtype()));
  const size_t inner = static_cast<size_t>(numel_of(x.shape(), a + 1, x.shape().size())) * esz;
  const int64_t outer = numel_of(x.shape(), 0, static_cast<size_t>(a));
  std::byte* dst = bytes(y);
  for (int64_t o = 0; o < outer && inner > 0; ++o) {
    for (int64_t i : idx) {
      std::memcpy(dst, bytes(x) + (static_cast<size_t>(o * dim + i)) * inner, inner);
      dst += inner;
    }
  }
  ctx.outputs = {y};
  return Status::ok();
}

}  // namespace

void register_tensor_index_ops(OpRegistry& registry) {
  {
    OpDef def("Concat", "tensor", "Joins the inputs along `axis`; all other dims must match.");
    def.input("inputs", "tensors of one dtype and rank", false, true);
    def.output("concat_result", "the joined tensor");
    def.required_attr("axis", AttrKind::kInt, "axis to join along, in [-rank, rank-1]");
    def.infer = infer_concat;
    def.reference = concat_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Split", "tensor",
              "Cuts the input along `axis` into one piece per output: sizes from `split`, or equal "
              "pieces when it is absent.");
    def.input("input", "tensor to split").input("split", "i64 1-D piece sizes, one per output", true);
    def.output("outputs", "the pieces", false, true);
    def.attr("axis", AttrKind::kInt, Attribute(int64_t{0}), "axis to split, in [-rank, rank-1]");
    def.infer = infer_split;
    def.reference = split_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Slice", "tensor",
              "data[starts:ends:steps] on the given axes; negative starts/ends count from the back, "
              "out-of-range values clamp, negative steps walk backwards.");
    def.input("data", "tensor to slice")
        .input("starts", "i32/i64 1-D first indices")
        .input("ends", "i32/i64 1-D end indices (exclusive)")
        .input("axes", "i32/i64 1-D axes the entries apply to; default 0..len-1", true)
        .input("steps", "i32/i64 1-D strides, non-zero; default 1", true);
    def.output("output", "the slice");
    def.infer = infer_slice;
    def.reference = slice_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Gather", "tensor",
              "Picks entries of `data` along `axis` at `indices` (negative count from the back); "
              "output shape data[:axis] + indices + data[axis+1:].");
    def.input("data", "tensor of rank >= 1").input("indices", "i32/i64 tensor of any rank");
    def.output("output", "the gathered entries");
    def.attr("axis", AttrKind::kInt, Attribute(int64_t{0}), "axis to index, in [-rank, rank-1]");
    def.infer = infer_gather;
    def.reference = gather_kernel;
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
