// Vectorised C++ kernels (plain loops the compiler vectorises at -O3, OpenMP across rows): the
// memcpy ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity), Transpose (tiled), Slice, Split and
// Expand (as strided transposes: stepped strides, zero strides), Gather on axis 0
// (embedding rows), Where, Cast f32 <-> i64, Erf, and Pow with a scalar constant exponent.
// Plain layouts only; anything else declines.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include "engine/cpu/onednn_util.h"
#include "engine/cpu/vec_internal.h"
#include "engine/ops/resize.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kParallelMin = 1 << 15;  // elements below which a loop stays on one thread

// ---- memcpy ops -------------------------------------------------------------------------------

Expected<KernelPtr> make_copy(const KernelInit& init) {
  if (!plain_static(init) || init.in_types.empty() || !init.in_types[0] ||
      init.out_types.size() != 1)
    return decline(init, "cpu.vec:copy", "needs plain static types");
  const size_t bytes = backend::plain_bytes(*init.out_types[0]);
  if (backend::plain_bytes(*init.in_types[0]) != bytes)
    return decline(init, "cpu.vec:copy", "sizes differ");
  return make_byte_copy("cpu.vec:copy", bytes);
}

// ---- Transpose --------------------------------------------------------------------------------

// out[o] = in[sum_d idx_d * stride_d], walking out row-major; the last two output axes in 32x32
// tiles so that both the reads and the writes stay in cache.
template <class T>
void transpose(const T* in, T* out, const std::vector<int64_t>& out_dims,
               const std::vector<int64_t>& in_strides) {
  const size_t r = out_dims.size();
  const int64_t rows = out_dims[r - 2], cols = out_dims[r - 1];
  const int64_t sr = in_strides[r - 2], sc = in_strides[r - 1];
  int64_t outer = 1;
  for (size_t d = 0; d + 2 < r; ++d) outer *= out_dims[d];
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t total = outer * row_tiles;
#pragma omp parallel for if (outer * rows * cols > kParallelMin) schedule(static)
  for (int64_t job = 0; job < total; ++job) {
    const int64_t o = job / row_tiles, i0 = (job % row_tiles) * kTile;
    int64_t base = 0, rest = o;
    for (size_t d = r - 2; d-- > 0;) {
      base += (rest % out_dims[d]) * in_strides[d];
      rest /= out_dims[d];
    }
    T* dst = out + o * rows * cols;
    const int64_t i1 = std::min(rows, i0 + kTile);
    if (sc == 1) {  // the last axis stays last (attention's [B, T, H, D] <-> [B, H, T, D]): whole rows
      for (int64_t i = i0; i < i1; ++i) std::memcpy(dst + i * cols, in + base + i * sr, static_cast<size_t>(cols) * sizeof(T));
      continue;
    }
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        const T* src = in + base + i * sr;
        T* drow = dst + i * cols;
        for (int64_t j = j0; j < j1; ++j) drow[j] = src[j * sc];
      }
    }
  }
}

// The transpose loop for elements of `size` bytes (the values are only moved, never read as numbers).
void strided_copy(const void* in, void* out, int size, const std::vector<int64_t>& out_dims,
                  const std::vector<int64_t>& in_strides) {
  switch (size) {
    case 1: transpose(static_cast<const uint8_t*>(in), static_cast<uint8_t*>(out), out_dims, in_strides); break;
    case 2: transpose(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), out_dims, in_strides); break;
    case 4: transpose(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), out_dims, in_strides); break;
    default: transpose(static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), out_dims, in_strides);
  }
}

// NCHW <-> NHWC Transposes of a channels-last buffer are byte copies: perm [0, 2, 3, 1] of an
// "nhwc" input to a plain output, perm [0, 3, 1, 2] of a plain input to an "nhwc" output
// (ConvNeXt's LayerNorm sandwich). The compile stage makes them views (no copy at all).
bool is_relayout(const KernelInit& init) {
  if (init.in_types.size() != 1 || init.out_types.size() != 1 || !init.in_types[0] ||
      !init.in_types[0]->is_static() || init.in_types[0]->rank() != 4 || init.in_types[0]->dtype != DType::kF32)
    return false;
  const std::vector<int64_t> perm = attr_ints(init, "perm", {});
  const LayoutTag in = init.in_layouts.empty() ? "" : init.in_layouts[0];
  return (perm == std::vector<int64_t>{0, 2, 3, 1} && in == "nhwc" && init.out_layout.empty()) ||
         (perm == std::vector<int64_t>{0, 3, 1, 2} && in.empty() && init.out_layout == "nhwc");
}

Expected<KernelPtr> make_transpose(const KernelInit& init) {
  const std::string impl = "cpu.vec:transpose";
  if (is_relayout(init)) return make_byte_copy("cpu.vec:relayout", backend::plain_bytes(*init.out_types[0]));
  if (!plain_static(init) || init.in_types.size() != 1 || init.out_types.size() != 1)
    return decline(init, impl, "needs plain static types");
  const ir::TensorType& xt = *init.in_types[0];
  const int rank = xt.rank();
  std::vector<int64_t> perm = attr_ints(init, "perm", {});
  if (perm.empty())
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int>(perm.size()) != rank || rank == 0) return decline(init, impl, "perm");
  const Shape x = xt.static_shape();
  const std::vector<int64_t> xs = contiguous_strides(x);
  std::vector<int64_t> out_dims{1}, in_strides{0};  // a leading 1 keeps rank >= 2
  for (int64_t p : perm) {
    if (p < 0 || p >= rank) return decline(init, impl, "perm");
    out_dims.push_back(x[static_cast<size_t>(p)]);
    in_strides.push_back(xs[static_cast<size_t>(p)]);
  }
  const int size = dtype_size(xt.dtype);
  return make(impl, init, [=](KernelRun& run) -> Status {
    strided_copy(run.inputs[0].data, run.outputs[0].data, size, out_dims, in_strides);
    return Status::ok();
  });
}

// ---- Slice (constant starts/axes/steps) -------------------------------------------------------

// The i-th element of an i32/i64 constant; nullopt for other dtypes.
std::optional<int64_t> int_at(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kI64) return t.data<int64_t>()[i];
  if (t.dtype() == DType::kI32) return t.data<int32_t>()[i];
  return std::nullopt;
}

// A slice is a strided view: out[o] = in[offset + sum_d idx_d * stride_d * step_d], which is the
// transpose loop above with the slice's start folded into the base pointer (negative steps give
// negative strides). The output shape comes from inference; only starts and steps are needed.
Expected<KernelPtr> make_slice(const KernelInit& init) {
  const std::string impl = "cpu.vec:slice";
  if (!plain_static(init) || init.in_types.size() < 3 || init.out_types.size() != 1)
    return decline(init, impl, "needs plain static types");
  for (size_t i = 1; i < init.in_types.size(); ++i)
    if (init.in_types[i] && !init.constants[i]) return decline(init, impl, "starts/ends/axes/steps not constant");
  const Shape x = init.in_types[0]->static_shape();
  const int rank = static_cast<int>(x.size());
  const Tensor& starts = *init.constants[1];
  const int64_t n = starts.numel();
  const Tensor* axes = init.in_types.size() > 3 ? init.constants[3] : nullptr;
  const Tensor* steps = init.in_types.size() > 4 ? init.constants[4] : nullptr;
  std::vector<int64_t> start(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  for (int64_t k = 0; k < n; ++k) {
    auto a = axes ? int_at(*axes, k) : std::optional<int64_t>(k);
    auto s = int_at(starts, k);
    auto st = steps ? int_at(*steps, k) : std::optional<int64_t>(1);
    if (!a || !s || !st || *st == 0) return decline(init, impl, "starts/axes/steps");
    int64_t ax = *a < 0 ? *a + rank : *a;
    if (ax < 0 || ax >= rank) return decline(init, impl, "axis");
    const int64_t dim = x[static_cast<size_t>(ax)];
    int64_t b = *s < 0 ? *s + dim : *s;
    b = *st > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
    start[static_cast<size_t>(ax)] = b;
    step[static_cast<size_t>(ax)] = *st;
  }
  const std::vector<int64_t> xs = contiguous_strides(x);
  const Shape y = init.out_types[0]->static_shape();
  int64_t offset = 0, count = 1;
  std::vector<int64_t> out_dims{1}, in_strides{0};  // a leading 1 keeps rank >= 2
  for (int d = 0; d < rank; ++d) {
    offset += start[static_cast<size_t>(d)] * xs[static_cast<size_t>(d)];
    out_dims.push_back(y[static_cast<size_t>(d)]);
    in_strides.push_back(xs[static_cast<size_t>(d)] * step[static_cast<size_t>(d)]);
    count *= y[static_cast<size_t>(d)];
  }
  const int size = dtype_size(init.in_types[0]->dtype);
  return make(impl, init, [=](KernelRun& run) -> Status {
    if (count == 0) return Status::ok();
    strided_copy(static_cast<const char*>(run.inputs[0].data) + offset * size, run.outputs[0].data, size, out_dims, in_strides);
    return Status::ok();
  });
}

// ---- Expand -----------------------------------------------------------------------------------

// A broadcast is a strided view too: every broadcast axis has stride 0 (the transpose loop fills
// rows from one element, or copies whole rows when the last axis is not broadcast). The output
// shape comes from inference, so the shape input need not be constant.
Expected<KernelPtr> make_expand(const KernelInit& init) {
  const std::string impl = "cpu.vec:expand";
  if (!plain_static(init) || init.in_types.empty() || !init.in_types[0] || init.out_types.size() != 1)
    return decline(init, impl, "needs plain static types");
  const Shape x = init.in_types[0]->static_shape(), y = init.out_types[0]->static_shape();
  if (x.size() > y.size()) return decline(init, impl, "output rank below the input's");
  const std::vector<int64_t> xs = contiguous_strides(x);
  const size_t lead = y.size() - x.size();
  std::vector<int64_t> out_dims{1}, in_strides{0};  // a leading 1 keeps rank >= 2
  int64_t count = 1;
  for (size_t d = 0; d < y.size(); ++d) {
    const int64_t in_dim = d < lead ? 1 : x[d - lead];
    if (in_dim != y[d] && in_dim != 1) return decline(init, impl, "shapes do not broadcast");
    out_dims.push_back(y[d]);
    in_strides.push_back(in_dim == 1 ? 0 : xs[d - lead]);
    count *= y[d];
  }
  const int size = dtype_size(init.in_types[0]->dtype);
  return make(impl, init, [=](KernelRun& run) -> Status {
    if (count > 0) strided_copy(run.inputs[0].data, run.outputs[0].data, size, out_dims, in_strides);
    return Status::ok();
  });
}

// ---- Split ------------------------------------------------------------------------------------

// Each piece is a slice along the axis: the transpose loop from the piece's first index (Concat's
// gradient: DenseNet-121's training step has 58). Piece sizes come from the inferred outputs.
Expected<KernelPtr> make_split(const KernelInit& init) {
  const std::string impl = "cpu.vec:split";
  if (!plain_static(init) || init.in_types.empty() || !init.in_types[0] || init.out_types.empty())
    return decline(init, impl, "needs plain static types");
  const Shape x = init.in_types[0]->static_shape();
  const int rank = static_cast<int>(x.size());
  int64_t axis = init.node.attr("axis") ? init.node.attr("axis")->i() : 0;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return decline(init, impl, "axis");
  const std::vector<int64_t> xs = contiguous_strides(x);
  struct Piece {
    std::vector<int64_t> out_dims, in_strides;
    int64_t offset = 0, count = 1;
  };
  std::vector<Piece> pieces;
  int64_t at = 0;
  for (const ir::TensorType* t : init.out_types) {
    if (!t) return decline(init, impl, "an output without a type");
    const Shape y = t->static_shape();
    if (static_cast<int>(y.size()) != rank) return decline(init, impl, "output rank");
    Piece p{{1}, {0}, at * xs[static_cast<size_t>(axis)], 1};  // a leading 1 keeps rank >= 2
    for (int d = 0; d < rank; ++d) {
      p.out_dims.push_back(y[static_cast<size_t>(d)]);
      p.in_strides.push_back(xs[static_cast<size_t>(d)]);
      p.count *= y[static_cast<size_t>(d)];
    }
    at += y[static_cast<size_t>(axis)];
    pieces.push_back(std::move(p));
  }
  if (at > x[static_cast<size_t>(axis)]) return decline(init, impl, "pieces larger than the input");
  const int size = dtype_size(init.in_types[0]->dtype);
  return make(impl, init, [=](KernelRun& run) -> Status {
    const char* in = static_cast<const char*>(run.inputs[0].data);
    for (size_t k = 0; k < pieces.size(); ++k)
      if (pieces[k].count > 0)
        strided_copy(in + pieces[k].offset * size, run.outputs[k].data, size, pieces[k].out_dims, pieces[k].in_strides);
    return Status::ok();
  });
}

// ---- Gather (axis 0) --------------------------------------------------------------------------

// Copies row idx[i] of data into row i of out; indices are checked first (negatives count from
// the back). Returns the first bad index, or nullopt.
template <class I>
std::optional<int64_t> gather_rows(const char* data, const I* idx, char* out, int64_t n,
                                   int64_t rows, size_t row_bytes) {
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < -rows || idx[i] >= rows) return static_cast<int64_t>(idx[i]);
#pragma omp parallel for if (static_cast <int64_t>(row_bytes) * n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = idx[i] < 0 ? idx[i] + rows : static_cast<int64_t>(idx[i]);
    std::memcpy(out + static_cast<size_t>(i) * row_bytes, data + static_cast<size_t>(r) * row_bytes,
                row_bytes);
  }
  return std::nullopt;
}

// Gather along any axis: for each of the `outer` blocks before the axis, gather_rows over rows of
// the axis with everything after it as the row (axis 0: one block; ViT's class token x[:, 0]:
// one block per batch row).
Expected<KernelPtr> make_gather(const KernelInit& init) {
  const std::string impl = "cpu.vec:gather";
  if (!plain_static(init) || init.in_types.size() != 2 || init.out_types.size() != 1)
    return decline(init, impl, "needs plain static types");
  const ir::TensorType& dt = *init.in_types[0];
  const DType it = init.in_types[1]->dtype;
  const int rank = dt.rank();
  int64_t axis = attr_int(init, "axis", 0);
  if (axis < 0) axis += rank;
  if (rank < 1 || axis < 0 || axis >= rank || (it != DType::kI64 && it != DType::kI32))
    return decline(init, impl, "needs an axis in range and i32/i64 indices");
  const Shape shape = dt.static_shape();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  const int64_t rows = shape[static_cast<size_t>(axis)];
  const int64_t n = init.in_types[1]->static_numel();
  const size_t total = backend::plain_bytes(dt);
  const size_t row_bytes = rows == 0 || outer == 0 ? 0 : total / static_cast<size_t>(outer * rows);
  const Error bad =
      kernel_error(init, impl, "index out of range for " + std::to_string(rows) + " rows: ");
  return make(impl, init, [=](KernelRun& run) -> Status {
    const char* data = static_cast<const char*>(run.inputs[0].data);
    char* out = static_cast<char*>(run.outputs[0].data);
    for (int64_t o = 0; o < outer; ++o) {
      const char* block = data + static_cast<size_t>(o * rows) * row_bytes;
      char* dst = out + static_cast<size_t>(o * n) * row_bytes;
      const std::optional<int64_t> r =
          it == DType::kI64 ? gather_rows(block, static_cast<const int64_t*>(run.inputs[1].data), dst, n, rows, row_bytes)
                            : gather_rows(block, static_cast<const int32_t*>(run.inputs[1].data), dst, n, rows, row_bytes);
      if (!r) continue;
      Error e = bad;
      e.message += std::to_string(*r);
      return e;
    }
    return Status::ok();
  });
}

// ---- Where ------------------------------------------------------------------------------------

// Element strides of `in` (right-aligned, 0 on broadcast axes) over `out`.
std::vector<int64_t> bcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const std::vector<int64_t> cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

// `same`: every operand has the output's shape; `scalar_y`: cond and x do, y is one element
// (autodiff's masks: Where(Y > 0, dY, 0)).
template <class T>
void where_loop(const uint8_t* c, const T* x, const T* y, T* out, const Shape& shape,
                const std::array<std::vector<int64_t>, 3>& st, bool same, bool scalar_y) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (same) {
#pragma omp parallel for simd if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = c[i] ? x[i] : y[i];
    return;
  }
  if (scalar_y) {  // branch-free select: the masks of Relu gradients are random, branches mispredict
    const T yv = y[0];
#pragma omp parallel for simd if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const T mask = static_cast<T>(0) - static_cast<T>(c[i] != 0);
      out[i] = (x[i] & mask) | (yv & ~mask);
    }
    return;
  }
  const size_t r = shape.size();
  const int64_t inner = r ? shape[r - 1] : 1, outer = inner ? n / inner : 0;
#pragma omp parallel for if (n > kParallelMin)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off[3] = {0, 0, 0}, rest = o;
    for (size_t d = r - 1; d-- > 0;) {
      const int64_t i = rest % shape[d];
      rest /= shape[d];
      for (int k = 0; k < 3; ++k) off[k] += i * st[k][d];
    }
    const int64_t sc = st[0][r - 1], sx = st[1][r - 1], sy = st[2][r - 1];
    T* dst = out + o * inner;
    for (int64_t j = 0; j < inner; ++j)
      dst[j] = c[off[0] + j * sc] ? x[off[1] + j * sx] : y[off[2] + j * sy];
  }
}

Expected<KernelPtr> make_where(const KernelInit& init) {
  const std::string impl = "cpu.vec:where";
  if (!plain_static(init) || init.in_types.size() != 3 || init.out_types.size() != 1)
    return decline(init, impl, "needs plain static types");
  const int size = dtype_size(init.in_types[1]->dtype);
  if (init.in_types[0]->dtype != DType::kBool || (size != 4 && size != 8))
    return decline(init, impl, "bool condition and 4- or 8-byte values only");
  const Shape out = init.out_types[0]->static_shape();
  if (out.empty()) return decline(init, impl, "scalar");
  std::array<std::vector<int64_t>, 3> st;
  bool same = true;
  for (size_t k = 0; k < 3; ++k) {
    const Shape s = init.in_types[k]->static_shape();
    same &= s == out;
    st[k] = bcast_strides(s, out);
  }
  const bool scalar_y = init.in_types[0]->static_shape() == out && init.in_types[1]->static_shape() == out &&
                        init.in_types[2]->static_numel() == 1;
  return make(impl, init, [=](KernelRun& run) -> Status {
    const auto* c = static_cast<const uint8_t*>(run.inputs[0].data);
    if (size == 4)
      where_loop(c, static_cast<const uint32_t*>(run.inputs[1].data),
                 static_cast<const uint32_t*>(run.inputs[2].data),
                 static_cast<uint32_t*>(run.outputs[0].data), out, st, same, scalar_y);
    else
      where_loop(c, static_cast<const uint64_t*>(run.inputs[1].data),
                 static_cast<const uint64_t*>(run.inputs[2].data),
                 static_cast<uint64_t*>(run.outputs[0].data), out, st, same, scalar_y);
    return Status::ok();
  });
}

// ---- Cast, Erf, Pow ---------------------------------------------------------------------------

// Float to i64 as the reference: truncate, NaN -> 0, saturate.
inline int64_t to_i64(float v) {
  if (std::isnan(v)) return 0;
  if (v <= -9.2233720368547758e18f) return std::numeric_limits<int64_t>::lowest();
  if (v >= 9.2233720368547758e18f) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

Expected<KernelPtr> make_cast(const KernelInit& init) {
  const std::string impl = "cpu.vec:cast";
  if (!plain_static(init) || init.in_types.size() != 1 || init.out_types.size() != 1)
    return decline(init, impl, "needs plain static types");
  const DType from = init.in_types[0]->dtype, to = init.out_types[0]->dtype;
  const int64_t n = init.in_types[0]->static_numel();
  if (from == DType::kF32 && to == DType::kI64)
    return make(impl, init, [n](KernelRun& run) -> Status {
      const float* x = static_cast<const float*>(run.inputs[0].data);
      int64_t* y = static_cast<int64_t*>(run.outputs[0].data);
#pragma omp parallel for simd if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) y[i] = to_i64(x[i]);
      return Status::ok();
    });
  if (from == DType::kI64 && to == DType::kF32)
    return make(impl, init, [n](KernelRun& run) -> Status {
      const int64_t* x = static_cast<const int64_t*>(run.inputs[0].data);
      float* y = static_cast<float*>(run.outputs[0].data);
#pragma omp parallel for simd if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
      return Status::ok();
    });
  if (from == DType::kI32 && to == DType::kF32)  // the integer ops' accumulators (dynamic quantization)
    return make(impl, init, [n](KernelRun& run) -> Status {
      const int32_t* x = static_cast<const int32_t*>(run.inputs[0].data);
      float* y = static_cast<float*>(run.outputs[0].data);
#pragma omp parallel for simd if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
      return Status::ok();
    });
  if ((from == DType::kF16 && to == DType::kF32) || (from == DType::kF32 && to == DType::kF16))  // widen-f16's interface
    return make(impl, init, [n, from](KernelRun& run) -> Status {
      if (from == DType::kF16) {
        const uint16_t* x = static_cast<const uint16_t*>(run.inputs[0].data);
        float* y = static_cast<float*>(run.outputs[0].data);
        for (int64_t i = 0; i < n; ++i) y[i] = half_to_float(x[i]);
      } else {
        const float* x = static_cast<const float*>(run.inputs[0].data);
        uint16_t* y = static_cast<uint16_t*>(run.outputs[0].data);
        for (int64_t i = 0; i < n; ++i) y[i] = float_to_half(x[i]);
      }
      return Status::ok();
    });
  if (from == to) return make_copy(init);
  return decline(init, impl, "only f32 <-> i64, i32 -> f32, f16 <-> f32");
}

Expected<KernelPtr> make_erf(const KernelInit& init) {
  if (!plain_static(init) || init.in_types.size() != 1 || !is_static_f32(init.in_types[0]))
    return decline(init, "cpu.vec:erf", "needs plain static f32");
  const int64_t n = init.in_types[0]->static_numel();
  return make("cpu.vec:erf", init, [n](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    float* y = static_cast<float*>(run.outputs[0].data);
#pragma omp parallel for if (n > kParallelMin / 8)
    for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
    return Status::ok();
  });
}

// HardSigmoid: clip(alpha x + beta, 0, 1). oneDNN 2.6 has no such eltwise algorithm (fused into a
// Conv or MatMul it is two post-ops, linear then clip).
// Resize of the last two axes (every other axis kept), any mode and coordinate transform but
// tf_crop_and_resize, with constant scales or sizes: the taps come from the op's own
// resize_taps(), flattened per axis into K taps (missing ones weigh 0); planes run in parallel.
Expected<KernelPtr> make_resize(const KernelInit& init) {
  const std::string impl = "cpu.vec:resize";
  if (!plain_static(init) || init.in_types.empty() || !is_static_f32(init.in_types[0]) ||
      init.out_types.size() != 1 || init.in_types[0]->rank() < 2)
    return decline(init, impl, "needs plain static f32 of rank >= 2");
  const std::vector<int64_t> in = init.in_types[0]->static_shape(), out = init.out_types[0]->static_shape();
  const size_t r = in.size();
  const ops::AttrReader attrs = init.attrs();
  if (attrs.s("coordinate_transformation_mode") == "tf_crop_and_resize")
    return decline(init, impl, "tf_crop_and_resize");
  std::vector<double> scales(r);
  const Tensor* sizes = init.in_types.size() > 3 && init.in_types[3] ? constant_at(init, 3) : nullptr;
  const Tensor* sc = init.in_types.size() > 2 && init.in_types[2] ? constant_at(init, 2) : nullptr;
  if (sizes && sizes->numel() == static_cast<int64_t>(r)) {
    for (size_t d = 0; d < r; ++d) scales[d] = static_cast<double>(out[d]) / static_cast<double>(in[d]);
  } else if (sc && sc->numel() == static_cast<int64_t>(r)) {
    for (size_t d = 0; d < r; ++d) scales[d] = sc->get(static_cast<int64_t>(d));
  } else {
    return decline(init, impl, "scales or sizes must be constant");
  }
  std::vector<double> roi(2 * r, 0.0);
  std::fill(roi.begin() + static_cast<std::ptrdiff_t>(r), roi.end(), 1.0);
  auto taps = ops::resize_taps(init.node, attrs, in, out, scales, roi);
  if (!taps) return decline(init, impl, taps.error().message);
  for (size_t d = 0; d + 2 < r; ++d) {  // leading axes must be kept as they are
    if (in[d] != out[d]) return decline(init, impl, "resizes a leading axis");
    for (int64_t o = 0; o < out[d]; ++o) {
      const auto& at = (*taps)[d].at[static_cast<size_t>(o)];
      const auto& w = (*taps)[d].w[static_cast<size_t>(o)];
      if (at.size() != 1 || at[0] != o || w[0] != 1.0) return decline(init, impl, "resizes a leading axis");
    }
  }
  // Flattened taps of the last two axes: idx[o * K + k] (element offset along the axis), w[o * K + k].
  struct Axis {
    int64_t taps = 0;
    std::vector<int64_t> idx;
    std::vector<float> w;
  };
  auto flatten = [&](size_t d) -> std::optional<Axis> {
    const ops::ResizeAxisTaps& t = (*taps)[d];
    Axis a;
    for (size_t o = 0; o < t.at.size(); ++o) {
      if (t.outside[o]) return std::nullopt;
      a.taps = std::max<int64_t>(a.taps, static_cast<int64_t>(t.at[o].size()));
    }
    a.taps = std::max<int64_t>(a.taps, 1);
    a.idx.assign(t.at.size() * static_cast<size_t>(a.taps), 0);
    a.w.assign(a.idx.size(), 0.f);
    for (size_t o = 0; o < t.at.size(); ++o)
      for (size_t k = 0; k < t.at[o].size(); ++k) {
        a.idx[o * static_cast<size_t>(a.taps) + k] = t.at[o][k];
        a.w[o * static_cast<size_t>(a.taps) + k] = static_cast<float>(t.w[o][k]);
      }
    return a;
  };
  auto ay = flatten(r - 2), ax = flatten(r - 1);
  if (!ay || !ax) return decline(init, impl, "extrapolated elements");
  int64_t planes = 1;
  for (size_t d = 0; d + 2 < r; ++d) planes *= in[d];
  const int64_t ih = in[r - 2], iw = in[r - 1], oh = out[r - 2], ow = out[r - 1];
  // Separable: each input row is interpolated along x once (into a per-thread [ih, ow] buffer),
  // then each output row blends ky of those rows: (ih kx + oh ky) ow operations per plane instead
  // of oh ow ky kx with indirect loads (LRASPP's 8x up-sampling: 1.8 to 0.3 ms).
  return make(impl, init, [planes, ih, iw, oh, ow, ay = std::move(*ay), ax = std::move(*ax)](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    float* y = static_cast<float*>(run.outputs[0].data);
    const int64_t ky = ay.taps, kx = ax.taps;
#pragma omp parallel if (planes * oh * ow > kParallelMin / 4)
    {
      std::vector<float> rows(static_cast<size_t>(ih * ow));
#pragma omp for
      for (int64_t p = 0; p < planes; ++p) {
        const float* xp = x + p * ih * iw;
        for (int64_t r = 0; r < ih; ++r) {
          const float* src = xp + r * iw;
          float* dst = rows.data() + r * ow;
          for (int64_t j = 0; j < ow; ++j) {
            float v = 0.f;
            for (int64_t b = 0; b < kx; ++b)
              v += ax.w[static_cast<size_t>(j * kx + b)] * src[ax.idx[static_cast<size_t>(j * kx + b)]];
            dst[j] = v;
          }
        }
        for (int64_t i = 0; i < oh; ++i) {
          float* yr = y + (p * oh + i) * ow;
          const float w0 = ay.w[static_cast<size_t>(i * ky)];
          const float* r0 = rows.data() + ay.idx[static_cast<size_t>(i * ky)] * ow;
#pragma omp simd
          for (int64_t j = 0; j < ow; ++j) yr[j] = w0 * r0[j];
          for (int64_t a = 1; a < ky; ++a) {
            const float wa = ay.w[static_cast<size_t>(i * ky + a)];
            const float* ra = rows.data() + ay.idx[static_cast<size_t>(i * ky + a)] * ow;
#pragma omp simd
            for (int64_t j = 0; j < ow; ++j) yr[j] += wa * ra[j];
          }
        }
      }
    }
    return Status::ok();
  });
}

Expected<KernelPtr> make_pad(const KernelInit& init) {
  const std::string impl = "cpu.vec:pad";
  if (!plain_static(init) || init.in_types.size() < 2 || !is_static_f32(init.in_types[0]) ||
      init.out_types.size() != 1 || init.in_types[0]->rank() < 1)
    return decline(init, impl, "needs plain static f32");
  if (init.attrs().s("mode") != "constant") return decline(init, impl, "modes other than constant");
  const Shape x = init.in_types[0]->static_shape(), y = init.out_types[0]->static_shape();
  const int rank = static_cast<int>(x.size());
  const Tensor* pads = constant_at(init, 1);
  const Tensor* value = init.in_types.size() > 2 && init.in_types[2] ? constant_at(init, 2) : nullptr;
  const Tensor* axes_t = init.in_types.size() > 3 && init.in_types[3] ? constant_at(init, 3) : nullptr;
  if (!pads || (init.in_types.size() > 2 && init.in_types[2] && !value) ||
      (init.in_types.size() > 3 && init.in_types[3] && !axes_t))
    return decline(init, impl, "pads, value and axes must be constant");
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < (axes_t ? axes_t->numel() : rank); ++i) {
    const int64_t a = axes_t ? static_cast<int64_t>(axes_t->get(i)) : i;
    axes.push_back(a < 0 ? a + rank : a);
  }
  if (pads->numel() != 2 * static_cast<int64_t>(axes.size())) return decline(init, impl, "pads size");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank) return decline(init, impl, "axis");
    begin[static_cast<size_t>(axes[i])] = static_cast<int64_t>(pads->get(static_cast<int64_t>(i)));
  }
  const float fill = value && value->numel() == 1 ? static_cast<float>(value->get(0)) : 0.f;
  const int64_t rows = std::accumulate(y.begin(), y.end() - 1, int64_t{1}, std::multiplies<>());
  const int64_t ow = y.back(), iw = x.back(), b = begin.back();
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* in = static_cast<const float*>(run.inputs[0].data);
    float* out = static_cast<float*>(run.outputs[0].data);
#pragma omp parallel for if (rows * ow > kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
      // The input row of output row r, or -1 when a leading coordinate falls in the padding.
      int64_t rem = r, in_row = 0, scale = 1;
      bool inside = true;
      for (int d = rank - 2; d >= 0; --d) {
        const int64_t o = rem % y[static_cast<size_t>(d)];
        rem /= y[static_cast<size_t>(d)];
        const int64_t i = o - begin[static_cast<size_t>(d)];
        inside &= i >= 0 && i < x[static_cast<size_t>(d)];
        in_row += i * scale;
        scale *= x[static_cast<size_t>(d)];
      }
      float* dst = out + r * ow;
      const int64_t lo = std::clamp<int64_t>(b, 0, ow), hi = std::clamp<int64_t>(b + iw, 0, ow);
      if (!inside || lo >= hi) {
        std::fill(dst, dst + ow, fill);
        continue;
      }
      std::fill(dst, dst + lo, fill);
      std::memcpy(dst + lo, in + in_row * iw + (lo - b), static_cast<size_t>(hi - lo) * sizeof(float));
      std::fill(dst + hi, dst + ow, fill);
    }
    return Status::ok();
  });
}

// Add Sub Mul Div Max Min (and Equal, to bool) on f32 with numpy broadcasting, both operands included: dims are
// right-aligned and runs of dims with the same broadcast pattern collapsed, so the inner loop is
// one contiguous (or scalar) stretch per operand; the outer loop runs in parallel.
template <class Out, class F>
Status broadcast_binary(const float* a, const float* b, Out* y, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, F f) {
  const size_t r = dims.size();
  const int64_t inner = dims[r - 1], ia = sa[r - 1], ib = sb[r - 1];
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < r; ++d) outer *= dims[d];
#pragma omp parallel for if (outer * inner > kParallelMin)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, oa = 0, ob = 0;
    for (size_t d = r - 1; d-- > 0;) {
      const int64_t i = rem % dims[d];
      rem /= dims[d];
      oa += i * sa[d];
      ob += i * sb[d];
    }
    const float* pa = a + oa;
    const float* pb = b + ob;
    Out* py = y + o * inner;
    if (ia && ib) {
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) py[i] = f(pa[i], pb[i]);
    } else if (ia) {
      const float vb = *pb;
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) py[i] = f(pa[i], vb);
    } else if (ib) {
      const float va = *pa;
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) py[i] = f(va, pb[i]);
    } else {
      const Out v = f(*pa, *pb);
      std::fill(py, py + inner, v);
    }
  }
  return Status::ok();
}

Expected<KernelPtr> make_binary(const KernelInit& init) {
  const std::string impl = "cpu.vec:binary";
  const std::string& op = init.node.op;
  // Comparisons of f32 give bool (one byte): Clip's gradient compares X with Y (MobileNetV2's
  // ReLU6, 35 reference Equals a training step).
  const bool compare = op == "Equal";  // Less and Greater against a scalar: cpu.vec:less/greater
  if (!plain_static(init) || init.in_types.size() != 2 || !is_static_f32(init.in_types[0]) ||
      !is_static_f32(init.in_types[1]) || init.out_types.size() != 1 || !init.out_types[0] ||
      !init.out_types[0]->is_static() || init.out_types[0]->dtype != (compare ? DType::kBool : DType::kF32))
    return decline(init, impl, "needs plain static f32 operands");
  const Shape y = init.out_types[0]->static_shape();
  const size_t rank = std::max<size_t>(1, y.size());
  auto aligned = [&](const Shape& s) {
    Shape d(rank - std::min(rank, s.size()), 1);
    d.insert(d.end(), s.begin(), s.end());
    return d;
  };
  const Shape a = aligned(init.in_types[0]->static_shape()), b = aligned(init.in_types[1]->static_shape());
  const Shape out = aligned(y);
  // Element strides (0 where broadcast), then runs with the same (a broadcast, b broadcast)
  // pattern merged from the innermost dim outwards.
  const std::vector<int64_t> ca = contiguous_strides(a), cb = contiguous_strides(b);
  std::vector<int64_t> dims, sa, sb;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    const int64_t da = a[d] == 1 ? 0 : ca[d], db = b[d] == 1 ? 0 : cb[d];
    if (!dims.empty() && (sa.back() == 0) == (da == 0) && (sb.back() == 0) == (db == 0) &&
        (da == 0 || sa.back() == da * out[d]) && (db == 0 || sb.back() == db * out[d])) {
      dims.back() *= out[d];
      sa.back() = da;
      sb.back() = db;
      continue;
    }
    dims.push_back(out[d]);
    sa.push_back(da);
    sb.push_back(db);
  }
  if (dims.empty()) {
    dims = {1};
    sa = {0};
    sb = {0};
  }
  // Inner strides must be 1 or 0 for the contiguous loop; collapsing guarantees it for row-major.
  if ((sa.back() != 0 && sa.back() != 1) || (sb.back() != 0 && sb.back() != 1))
    return decline(init, impl, "inner stride");
  auto kernel = [=](auto f) {
    return make(impl, init, [=](KernelRun& run) -> Status {
      return broadcast_binary(static_cast<const float*>(run.inputs[0].data), static_cast<const float*>(run.inputs[1].data),
                              static_cast<float*>(run.outputs[0].data), dims, sa, sb, f);
    });
  };
  auto comparison = [=](auto f) {
    return make(impl, init, [=](KernelRun& run) -> Status {
      return broadcast_binary(static_cast<const float*>(run.inputs[0].data), static_cast<const float*>(run.inputs[1].data),
                              static_cast<uint8_t*>(run.outputs[0].data), dims, sa, sb, f);
    });
  };
  if (op == "Equal") return comparison([](float x, float z) -> uint8_t { return x == z; });
  if (op == "Add") return kernel([](float x, float z) { return x + z; });
  if (op == "Sub") return kernel([](float x, float z) { return x - z; });
  if (op == "Mul") return kernel([](float x, float z) { return x * z; });
  if (op == "Div") return kernel([](float x, float z) { return x / z; });
  if (op == "Max") return kernel([](float x, float z) { return std::isnan(x) || x > z ? x : z; });
  if (op == "Min") return kernel([](float x, float z) { return std::isnan(x) || x < z ? x : z; });
  return decline(init, impl, "op");
}

// Concat along channels of channels-last 4-D buffers: every pixel's channels are the inputs'
// channel runs one after the other. Registered above oneDNN, whose "simple" concat took 1.1 ms
// for UNet's [1, 48, 128, 128] (this: a copy of each pixel's runs).
Expected<KernelPtr> make_concat_nhwc(const KernelInit& init) {
  const std::string impl = "cpu.vec:concat_nhwc";
  if (init.out_layout != "nhwc" || init.out_types.size() != 1 || !is_static_f32(init.out_types[0]) ||
      init.out_types[0]->rank() != 4)
    return KernelPtr();  // not this kernel's case: oneDNN's concat takes it
  const int64_t axis = attr_int(init, "axis", 0);
  if (axis != 1 && axis != -3) return KernelPtr();
  std::vector<int64_t> channels;
  for (size_t i = 0; i < init.in_types.size(); ++i) {
    if (!init.in_types[i] || !is_static_f32(init.in_types[i]) || i >= init.in_layouts.size() ||
        init.in_layouts[i] != "nhwc")
      return KernelPtr();
    channels.push_back(init.in_types[i]->static_shape()[1]);
  }
  const Shape y = init.out_types[0]->static_shape();
  const int64_t pixels = y[0] * y[2] * y[3], c_out = y[1];
  return make(impl, init, [channels, pixels, c_out](KernelRun& run) -> Status {
    float* out = static_cast<float*>(run.outputs[0].data);
#pragma omp parallel for if (pixels * c_out > kParallelMin)
    for (int64_t p = 0; p < pixels; ++p) {
      float* dst = out + p * c_out;
      for (size_t i = 0; i < channels.size(); ++i) {
        const int64_t c = channels[i];
        std::memcpy(dst, static_cast<const float*>(run.inputs[i].data) + p * c, static_cast<size_t>(c) * sizeof(float));
        dst += c;
      }
    }
    return Status::ok();
  });
}

Expected<KernelPtr> make_pow(const KernelInit& init) {
  const std::string impl = "cpu.vec:pow";
  if (!plain_static(init) || init.in_types.size() != 2 || !is_static_f32(init.in_types[0]) ||
      !is_static_f32(init.in_types[1]) ||
      init.out_types[0]->static_shape() != init.in_types[0]->static_shape())
    return decline(init, impl, "needs f32 X and a scalar f32 exponent");
  const Tensor* e = constant_at(init, 1);
  if (!e || e->numel() != 1) return decline(init, impl, "exponent must be a constant scalar");
  const float p = static_cast<float>(e->get(0));
  const int64_t n = init.in_types[0]->static_numel();
  return make(impl, init, [n, p](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    float* y = static_cast<float*>(run.outputs[0].data);
    if (p == 2.f) {
#pragma omp parallel for simd if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
    } else if (p == 3.f) {
#pragma omp parallel for simd if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
    } else if (p == 0.5f) {
#pragma omp parallel for simd if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
    } else {
#pragma omp parallel for if (n > kParallelMin / 8)
      for (int64_t i = 0; i < n; ++i) y[i] = std::pow(x[i], p);
    }
    return Status::ok();
  });
}

}  // namespace

void register_vec_kernels(KernelRegistry& registry) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    registry.add(op, "cpu.vec:copy", kVecPriority, make_copy);
  registry.add("Transpose", "cpu.vec:transpose", kVecPriority, make_transpose);
  registry.add("Expand", "cpu.vec:expand", kVecPriority, make_expand);
  registry.add("Split", "cpu.vec:split", kVecPriority, make_split);
  registry.add("Slice", "cpu.vec:slice", kVecPriority, make_slice);
  registry.add("Gather", "cpu.vec:gather", kVecPriority, make_gather);
  registry.add("Where", "cpu.vec:where", kVecPriority, make_where);
  registry.add("Cast", "cpu.vec:cast", kVecPriority, make_cast);
  registry.add("Erf", "cpu.vec:erf", kVecPriority, make_erf);
  registry.add("Pow", "cpu.vec:pow", kVecPriority, make_pow);
  registry.add("Resize", "cpu.vec:resize", kVecPriority, make_resize);
  registry.add("Pad", "cpu.vec:pad", kVecPriority, make_pad);
  registry.add("Concat", "cpu.vec:concat_nhwc", kOneDnnPriority + 10, make_concat_nhwc);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal"})
    registry.add(op, "cpu.vec:binary", kVecPriority, make_binary);
  register_vec_train(registry);
  register_vec_norm(registry);
  register_vec_dist(registry);
  register_vec_conv(registry);
  register_vec_detection(registry);
  register_vec_small(registry);
  register_vec_unary(registry);
}

}  // namespace tessera::cpu
