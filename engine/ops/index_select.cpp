// Ops that select by value or position (ONNX opset 17): NonZero, Unique, Trilu, ReverseSequence.
// Registered by register_index_ops (index_ops.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string_view>
#include <type_traits>

#include "engine/ops/index_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

// Calls f(T{}) for every dtype: numeric types as themselves, bool as uint8_t, f16/bf16 as
// uint16_t (bit patterns; use only where equality of bits is what is wanted).
template <class F>
Status dispatch_bits(DType dt, const Node& node, F&& f) {
  switch (dt) {
    case DType::kBool:
      return f(uint8_t{});
    case DType::kF16:
    case DType::kBF16:
      return f(uint16_t{});
    default:
      return dispatch_numeric(dt, node, f);
  }
}

// ---- NonZero ----

Expected<std::vector<TensorType>> infer_non_zero(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(TensorType(DType::kI64, {Dim::unknown(), Dim::unknown()}));
  return one(TensorType(DType::kI64, {Dim::known(x.rank()), Dim::unknown()}));
}

Status non_zero_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.get(i) != 0) hits.push_back(i);  // NaN != 0: counted, as NumPy does
  const int r = x.rank();
  const auto nnz = static_cast<int64_t>(hits.size());
  TRY(Tensor y, make_tensor(DType::kI64, {r, nnz}, ctx.node));
  int64_t* py = y.data<int64_t>();
  for (int64_t h = 0; h < nnz; ++h) {
    int64_t rest = hits[static_cast<size_t>(h)];
    for (int d = r; d-- > 0;) {
      py[d * nnz + h] = rest % x.dim(d);
      rest /= x.dim(d);
    }
  }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Unique ----

Expected<std::vector<TensorType>> infer_unique(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  const AttrReader attrs = ctx.attrs();
  const TensorType idx(DType::kI64, {Dim::unknown()});
  TensorType y(x.dtype, {Dim::unknown()});
  TensorType inverse = idx;
  if (attrs.has("axis")) {
    if (!x.rank_known) {
      y = TensorType::unranked(x.dtype);
    } else {
      TRY(int a, normalize_axis(attrs.i("axis"), x.rank(), ctx.node));
      y = x;
      y.dims[static_cast<size_t>(a)] = Dim::unknown();
      inverse = TensorType(DType::kI64, {x.dims[static_cast<size_t>(a)]});
    }
  } else if (x.is_static()) {
    inverse = TensorType(DType::kI64, {Dim::known(x.static_numel())});
  }
  std::vector<TensorType> out{y, idx, inverse, idx};
  out.resize(ctx.node.outputs.size());
  return out;
}

// Unique slices along the middle axis of x viewed as [outer, dim, inner].
struct UniqueResult {
  std::vector<int64_t> first;    // per unique slice: its first position in x, in output order
  std::vector<int64_t> inverse;  // per slice of x: index of its unique slice
  std::vector<int64_t> counts;   // per unique slice
};

// A strict weak order on elements: NaN after every number and equal to NaN (as np.unique).
template <class T>
bool element_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);
  }
  return a < b;
}

template <class T>
UniqueResult unique_slices(const T* x, int64_t outer, int64_t dim, int64_t inner, bool sorted) {
  auto less = [&](int64_t a, int64_t b) {  // lexicographic over the slice, row-major
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T va = x[(o * dim + a) * inner + i], vb = x[(o * dim + b) * inner + i];
        if (element_less(va, vb)) return true;
        if (element_less(vb, va)) return false;
      }
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<int64_t> order(static_cast<size_t>(dim));
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal slices keep their order, so the first of a run is the first occurrence.
  std::stable_sort(order.begin(), order.end(), less);
  UniqueResult r;
  r.inverse.assign(static_cast<size_t>(dim), 0);
  std::vector<int64_t> group_of(static_cast<size_t>(dim));  // sorted-group id per slice
  std::vector<int64_t> group_first;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !equal(order[k - 1], order[k])) group_first.push_back(order[k]);
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(group_first.size()) - 1;
  }
  std::vector<int64_t> rank(group_first.size());  // output position of each group
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted)
    std::sort(rank.begin(), rank.end(),
              [&](int64_t a, int64_t b) { return group_first[a] < group_first[b]; });
  std::vector<int64_t> pos(rank.size());
  for (size_t k = 0; k < rank.size(); ++k)
    pos[static_cast<size_t>(rank[k])] = static_cast<int64_t>(k);
  r.first.resize(rank.size());
  r.counts.assign(rank.size(), 0);
  for (size_t g = 0; g < group_first.size(); ++g)
    r.first[static_cast<size_t>(pos[g])] = group_first[g];
  for (int64_t j = 0; j < dim; ++j) {
    const int64_t p = pos[static_cast<size_t>(group_of[static_cast<size_t>(j)])];
    r.inverse[static_cast<size_t>(j)] = p;
    ++r.counts[static_cast<size_t>(p)];
  }
  return r;
}

Tensor i64_vector(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

Status unique_kernel(KernelContext& ctx) {
  Tensor x = ctx.in(0).contiguous();
  const AttrReader attrs = ctx.attrs();
  int a = 0;
  if (attrs.has("axis")) {
    TRY(a, normalize_axis(attrs.i("axis"), x.rank(), ctx.node));
    if (x.rank() == 0) return node_error(ctx.node, "axis given for a scalar input");
  } else {
    TRY(x, x.reshape({x.numel()}));
  }
  const int64_t outer = numel_of(x.shape(), 0, static_cast<size_t>(a));
  const int64_t dim = x.dim(a);
  const int64_t inner = numel_of(x.shape(), static_cast<size_t>(a) + 1, x.shape().size());
  const bool sorted = attrs.i("sorted") != 0;
  UniqueResult r;
  const Tensor keyed = x.dtype() == DType::kF16 || x.dtype() == DType::kBF16 ? widen(x) : x;
  if (keyed.dtype() == DType::kString) {  // by their text (byte order, as ONNX Runtime sorts them)
    std::vector<std::string_view> text(static_cast<size_t>(keyed.numel()));
    for (int64_t i = 0; i < keyed.numel(); ++i) text[static_cast<size_t>(i)] = keyed.string_at(i);
    r = unique_slices<std::string_view>(text.data(), outer, dim, inner, sorted);
  } else {
    RETURN_IF_ERROR(dispatch_bits(keyed.dtype(), ctx.node, [&](auto tag) -> Status {
      using T = decltype(tag);
      r = unique_slices<T>(keyed.data<T>(), outer, dim, inner, sorted);
      return Status::ok();
    }));
  }
  Shape shape = x.shape();
  shape[static_cast<size_t>(a)] = static_cast<int64_t>(r.first.size());
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));
  const auto block = static_cast<size_t>(inner * dtype_size(x.dtype()));
  for (int64_t o = 0; o < outer && block > 0; ++o)
    for (size_t k = 0; k < r.first.size(); ++k)
      std::memcpy(byte_data(y) + (static_cast<size_t>(o) * r.first.size() + k) * block,
                  byte_data(x) + static_cast<size_t>(o * dim + r.first[k]) * block, block);
  std::vector<Tensor> outs{y, i64_vector(r.first), i64_vector(r.inverse), i64_vector(r.counts)};
  outs.resize(ctx.node.outputs.size());
  ctx.outputs = std::move(outs);
  return Status::ok();
}

// ---- Trilu ----

Expected<std::vector<TensorType>> infer_trilu(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  if (ctx.has_input(1) && ctx.inputs[1]->dtype != DType::kI64)
    return node_error(ctx.node, "input 'k' must be i64");
  if (x.rank_known && x.rank() < 2)
    return node_error(ctx.node, "input 'input' must have rank >= 2, got " + x.to_string());
  return one(x);
}

Status trilu_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() < 2) return node_error(ctx.node, "input must have rank >= 2");
  int64_t k = 0;
  if (ctx.has_input(1)) {
    TRY(k, read_scalar_int(ctx.in(1), ctx.node, "input 'k'"));
  }
  const bool upper = ctx.attrs().i("upper") != 0;
  Tensor y = x.clone();
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  const auto esz = static_cast<size_t>(dtype_size(x.dtype()));
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep)
          std::memset(byte_data(y) + static_cast<size_t>((m * rows + i) * cols + j) * esz, 0, esz);
      }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- ReverseSequence ----

Expected<std::pair<int, int>> sequence_axes(const Node& node, const AttrReader& attrs, int rank) {
  const int64_t b = attrs.i("batch_axis"), t = attrs.i("time_axis");
  if (rank < 2) return node_error(node, "input must have rank >= 2");
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
    return node_error(node, "batch_axis and time_axis must be 0 and 1 in some order, got " +
                                std::to_string(b) + " and " + std::to_string(t));
  return std::pair<int, int>{static_cast<int>(b), static_cast<int>(t)};
}

Expected<std::vector<TensorType>> infer_reverse_sequence(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  if (!x.rank_known) return one(x);
  TRY(auto axes, sequence_axes(ctx.node, ctx.attrs(), x.rank()));
  const TensorType& lens = *ctx.inputs[1];
  const Dim& batch = x.dims[static_cast<size_t>(axes.first)];
  if (lens.rank_known && lens.dims[0].is_known() && batch.is_known() && lens.dims[0] != batch)
    return node_error(ctx.node, "'sequence_lens' " + lens.to_string() +
                                    " must have one entry per batch entry (" + batch.to_string() +
                                    ")");
  return one(x);
}

Status reverse_sequence_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(auto axes, sequence_axes(ctx.node, ctx.attrs(), x.rank()));
  const auto [ba, ta] = axes;
  TRY(std::vector<int64_t> lens, read_ints(ctx.in(1), ctx.node, "input 'sequence_lens'"));
  const int64_t batch = x.dim(ba), time = x.dim(ta);
  if (static_cast<int64_t>(lens.size()) != batch)
    return node_error(ctx.node, "'sequence_lens' has " + std::to_string(lens.size()) +
                                    " entries for a batch of " + std::to_string(batch));
  for (int64_t l : lens)
    if (l < 0 || l > time)
      return node_error(ctx.node, "sequence length " + std::to_string(l) + " is outside [0, " +
                                      std::to_string(time) + "]");
  Tensor y = x.clone();
  const int64_t inner = numel_of(x.shape(), 2, x.shape().size());
  const auto block = static_cast<size_t>(inner * dtype_size(x.dtype()));
  const std::vector<int64_t> st = contiguous_strides(x.shape());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < lens[static_cast<size_t>(b)]; ++t) {
      const int64_t src = b * st[static_cast<size_t>(ba)] + t * st[static_cast<size_t>(ta)];
      const int64_t dst = b * st[static_cast<size_t>(ba)] +
                          (lens[static_cast<size_t>(b)] - 1 - t) * st[static_cast<size_t>(ta)];
      std::memcpy(
          byte_data(y) + static_cast<size_t>(dst) * static_cast<size_t>(dtype_size(x.dtype())),
          byte_data(x) + static_cast<size_t>(src) * static_cast<size_t>(dtype_size(x.dtype())),
          block);
    }
  ctx.outputs = {y};
  return Status::ok();
}

}  // namespace

void register_index_select_ops(OpRegistry& registry) {
  {
    OpDef def("NonZero", "tensor",
              "Indices of the non-zero elements, one column per element in row-major order: "
              "i64 [rank, count]; the count is data-dependent.");
    def.input("X", "tensor of any dtype").output("Y", "i64 [rank, count]");
    def.allowed_types = kAllTypes;
    def.infer = infer_non_zero;
    def.reference = non_zero_kernel;
    def.no_gradient_reason = "the output is integer positions";
    registry.add(std::move(def));
  }
  {
    OpDef def("Unique", "tensor",
              "Unique elements (or slices along 'axis'), sorted ascending or in order of first "
              "occurrence, with the first index of each, the inverse map and the counts.");
    def.input("X", "tensor");
    def.output("Y", "the unique elements or slices")
        .output("indices", "i64: first occurrence of each in X", true)
        .output("inverse_indices", "i64: for each element (slice) of X, its place in Y", true)
        .output("counts", "i64: occurrences of each", true);
    def.attr("axis", AttrKind::kInt, std::nullopt, "axis of the slices; absent: flatten")
        .attr("sorted", AttrKind::kInt, Attribute(int64_t{1}),
              "1: ascending (lexicographic for slices); 0: order of first occurrence");
    def.allowed_types = kAllTypes;
    def.infer = infer_unique;
    def.reference = unique_kernel;
    def.no_gradient_reason = "the output size and order depend on the values";
    registry.add(std::move(def));
  }
  {
    OpDef def("Trilu", "tensor",
              "Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes "
              "and zeroes the rest.");
    def.input("input", "tensor of rank >= 2").input("k", "i64 scalar diagonal offset", true);
    def.output("output", "shape of 'input'");
    def.attr("upper", AttrKind::kInt, Attribute(int64_t{1}), "1: upper triangle, 0: lower");
    def.allowed_types = kAllTypes;
    def.infer = infer_trilu;
    def.reference = trilu_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("ReverseSequence", "tensor",
              "Reverses the first sequence_lens[b] entries along time_axis of each batch entry b; "
              "the rest is copied.");
    def.input("input", "tensor of rank >= 2").input("sequence_lens", "i64 [batch]");
    def.output("Y", "shape of 'input'");
    def.attr("batch_axis", AttrKind::kInt, Attribute(int64_t{1}), "0 or 1")
        .attr("time_axis", AttrKind::kInt, Attribute(int64_t{0}), "1 or 0 (not batch_axis)");
    def.allowed_types = kAllTypes;
    def.infer = infer_reverse_sequence;
    def.reference = reverse_sequence_kernel;
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
