// The nn family: MatMul, Gemm, Softmax and LogSoftmax here; convolution and pooling in nn_conv.cpp,
// normalisation and dropout in nn_norm.cpp. register_nn_ops registers all of them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/ops/nn_internal.h"

namespace tessera::ops {

std::string dims_to_string(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].to_string();
  return s + "]";
}

Status check_unidirectional(const ir::Node& node, const std::vector<Dim>& from,
                            const std::vector<Dim>& to, const std::string& what) {
  const std::string bad =
      what + " of shape " + dims_to_string(from) + " cannot be broadcast to " + dims_to_string(to);
  if (from.size() > to.size()) return node_error(node, bad);
  const size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    const Dim& f = from[i];
    const Dim& t = to[off + i];
    if (f.is_known() && f.size != 1 && t.is_known() && f.size != t.size)
      return node_error(node, bad);
  }
  return Status::ok();
}

namespace {

// Integers accumulate in int64, floats in double: the reference rounds once, at the end.
template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

const std::vector<DType> kMatMulTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                         DType::kF64, DType::kI32, DType::kI64};

// Calls f(T{}) for the element types of kMatMulTypes once halves are widened.
template <class F>
Status dispatch_matmul(DType dt, const ir::Node& node, F&& f) {
  if (dt == DType::kI32) return f(int32_t{});
  if (dt == DType::kI64) return f(int64_t{});
  return dispatch_float(dt, node, std::forward<F>(f));
}

// ---- MatMul ----------------------------------------------------------------------------------

// numpy.matmul shapes: a 1-D A is [1, K] and a 1-D B is [K, 1], the added axis removed again
// from the result; leading (batch) axes broadcast.
struct MatMulDims {
  std::vector<Dim> batch;  // broadcast batch axes
  Dim m, k_a, k_b, n;
  std::vector<Dim> out;
};

Expected<MatMulDims> matmul_dims(const ir::Node& node, const std::vector<Dim>& a,
                                 const std::vector<Dim>& b) {
  if (a.empty() || b.empty())
    return node_error(node, "inputs must have rank >= 1, got A " + dims_to_string(a) + " and B " +
                                dims_to_string(b));
  MatMulDims r;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  r.m = a_vec ? Dim::known(1) : a[a.size() - 2];
  r.k_a = a.back();
  r.k_b = b_vec ? b[0] : b[b.size() - 2];
  r.n = b_vec ? Dim::known(1) : b.back();
  if (r.k_a.is_known() && r.k_b.is_known() && r.k_a.size != r.k_b.size)
    return node_error(node, "inner dimensions differ: A " + dims_to_string(a) +
                                " has K = " + r.k_a.to_string() + " but B " + dims_to_string(b) +
                                " has K = " + r.k_b.to_string());
  const std::vector<Dim> a_batch(a.begin(), a.end() - (a_vec ? 1 : 2));
  const std::vector<Dim> b_batch(b.begin(), b.end() - (b_vec ? 1 : 2));
  auto batch = broadcast_dims(a_batch, b_batch);
  if (!batch)
    return node_error(node, "batch dimensions of A " + dims_to_string(a) + " and B " +
                                dims_to_string(b) + " do not broadcast: " + batch.error().message);
  r.batch = std::move(*batch);
  r.out = r.batch;
  if (!a_vec) r.out.push_back(r.m);
  if (!b_vec) r.out.push_back(r.n);
  return r;
}

Expected<std::vector<TensorType>> infer_matmul(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  const TensorType& a = *ctx.inputs[0];
  const TensorType& b = *ctx.inputs[1];
  if (!a.rank_known || !b.rank_known) return std::vector<TensorType>{TensorType::unranked(a.dtype)};
  TRY(MatMulDims d, matmul_dims(ctx.node, a.dims, b.dims));
  return std::vector<TensorType>{TensorType(a.dtype, d.out)};
}

// y[M, N] = a[M, K] * b[K, N], row by row (i-k-j order keeps b's reads sequential).
template <class T>
void matmul_block(const T* a, const T* b, T* y, int64_t m, int64_t k, int64_t n,
                  std::vector<Acc<T>>& row) {
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), Acc<T>{0});
    for (int64_t p = 0; p < k; ++p) {
      const Acc<T> av = a[i * k + p];
      const T* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<Acc<T>>(brow[j]);
    }
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<T>(row[j]);
  }
}

// Element offset of batch index `flat` (row-major over `batch`) given per-axis strides.
int64_t batch_offset(int64_t flat, const Shape& batch, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
    off += (flat % batch[d]) * strides[d];
    flat /= batch[d];
  }
  return off;
}

Status matmul_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor a = widen(ctx.in(0)).contiguous();
  const Tensor b = widen(ctx.in(1)).contiguous();
  TRY(MatMulDims d, matmul_dims(ctx.node, TensorType::of(a.dtype(), a.shape()).dims,
                                TensorType::of(b.dtype(), b.shape()).dims));
  const Shape batch = TensorType(a.dtype(), d.batch).static_shape();
  const int64_t m = d.m.size, k = d.k_a.size, n = d.n.size;
  // Batch axes of each operand as a contiguous tensor of matrices, strides in elements.
  const Shape a_batch(a.shape().begin(), a.shape().end() - std::min<size_t>(2, a.shape().size()));
  const Shape b_batch(b.shape().begin(), b.shape().end() - std::min<size_t>(2, b.shape().size()));
  std::vector<int64_t> sa = broadcast_strides(a_batch, batch);
  std::vector<int64_t> sb = broadcast_strides(b_batch, batch);
  for (int64_t& s : sa) s *= m * k;
  for (int64_t& s : sb) s *= k * n;
  TRY(Tensor y, Tensor::create(a.dtype(), TensorType(a.dtype(), d.out).static_shape()));
  int64_t count = 1;
  for (int64_t e : batch) count *= e;
  RETURN_IF_ERROR(dispatch_matmul(a.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    std::vector<Acc<T>> row(static_cast<size_t>(n));
    for (int64_t i = 0; i < count; ++i)
      matmul_block(a.data<T>() + batch_offset(i, batch, sa),
                   b.data<T>() + batch_offset(i, batch, sb), y.data<T>() + i * m * n, m, k, n, row);
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- Gemm ------------------------------------------------------------------------------------

struct GemmDims {
  Dim m, k_a, k_b, n;
};

Expected<GemmDims> gemm_dims(const ir::Node& node, const AttrReader& attrs,
                             const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != 2 || b.size() != 2)
    return node_error(
        node, "A and B must be 2-D, got A " + dims_to_string(a) + " and B " + dims_to_string(b));
  const bool ta = attrs.i("transA") != 0, tb = attrs.i("transB") != 0;
  GemmDims g{ta ? a[1] : a[0], ta ? a[0] : a[1], tb ? b[1] : b[0], tb ? b[0] : b[1]};
  if (g.k_a.is_known() && g.k_b.is_known() && g.k_a.size != g.k_b.size)
    return node_error(node, "inner dimensions differ: op(A) is [" + g.m.to_string() + ", " +
                                g.k_a.to_string() + "] and op(B) is [" + g.k_b.to_string() + ", " +
                                g.n.to_string() + "] (transA=" + std::to_string(ta) +
                                ", transB=" + std::to_string(tb) + ")");
  return g;
}

Expected<std::vector<TensorType>> infer_gemm(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  const TensorType& a = *ctx.inputs[0];
  const TensorType& b = *ctx.inputs[1];
  if (!a.rank_known || !b.rank_known)
    return std::vector<TensorType>{TensorType(a.dtype, {Dim::unknown(), Dim::unknown()})};
  TRY(GemmDims g, gemm_dims(ctx.node, ctx.attrs(), a.dims, b.dims));
  const std::vector<Dim> out = {g.m, g.n};
  if (ctx.has_input(2) && ctx.inputs[2]->rank_known)
    RETURN_IF_ERROR(check_unidirectional(ctx.node, ctx.inputs[2]->dims, out, "input 'C'"));
  return std::vector<TensorType>{TensorType(a.dtype, out)};
}

Status gemm_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor a = widen(ctx.in(0)).contiguous();
  const Tensor b = widen(ctx.in(1)).contiguous();
  const AttrReader attrs = ctx.attrs();
  TRY(GemmDims g, gemm_dims(ctx.node, attrs, TensorType::of(a.dtype(), a.shape()).dims,
                            TensorType::of(b.dtype(), b.shape()).dims));
  const int64_t m = g.m.size, k = g.k_a.size, n = g.n.size;
  const bool ta = attrs.i("transA") != 0, tb = attrs.i("transB") != 0;
  const double alpha = attrs.f("alpha"), beta = attrs.f("beta");
  Tensor c;  // C as a contiguous [rows, cols] view with broadcast strides
  int64_t c_si = 0, c_sj = 0;
  const bool has_c = ctx.has_input(2);
  if (has_c) {
    c = widen(ctx.in(2)).contiguous();
    RETURN_IF_ERROR(check_unidirectional(ctx.node, TensorType::of(c.dtype(), c.shape()).dims,
                                         {Dim::known(m), Dim::known(n)}, "input 'C'"));
    Shape cs = c.shape();
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    c_si = cs[0] == 1 ? 0 : cs[1];
    c_sj = cs[1] == 1 ? 0 : 1;
  }
  TRY(Tensor y, Tensor::create(a.dtype(), {m, n}));
  RETURN_IF_ERROR(dispatch_matmul(a.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T* pc = has_c ? c.data<T>() : nullptr;
    T* py = y.data<T>();
    std::vector<Acc<T>> row(static_cast<size_t>(n));
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), Acc<T>{0});
      for (int64_t p = 0; p < k; ++p) {
        const Acc<T> av = ta ? pa[p * m + i] : pa[i * k + p];
        for (int64_t j = 0; j < n; ++j)
          row[j] += av * static_cast<Acc<T>>(tb ? pb[j * k + p] : pb[p * n + j]);
      }
      for (int64_t j = 0; j < n; ++j) {
        double v = alpha * static_cast<double>(row[j]);
        if (pc) v += beta * static_cast<double>(pc[i * c_si + j * c_sj]);
        py[i * n + j] = static_cast<T>(v);
      }
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- Softmax, LogSoftmax ---------------------------------------------------------------------

Expected<std::vector<TensorType>> infer_softmax(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (x.rank_known)
    RETURN_IF_ERROR(normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node).status());
  return std::vector<TensorType>{x};
}

// Along `axis`: subtract the maximum, exponentiate, normalise (log: x - max - log(sum)).
Status softmax_kernel(KernelContext& ctx, bool log) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  int64_t outer = 1, len = 1, inner = 1;
  for (int d = 0; d < x.rank(); ++d) (d < axis ? outer : d == axis ? len : inner) *= x.dim(d);
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * len * inner + in;
        T mx = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < len; ++j) mx = std::max(mx, px[base + j * inner]);
        double sum = 0;
        for (int64_t j = 0; j < len; ++j)
          sum += std::exp(static_cast<double>(px[base + j * inner] - mx));
        const double log_sum = std::log(sum);
        for (int64_t j = 0; j < len; ++j) {
          const double z = static_cast<double>(px[base + j * inner] - mx);
          py[base + j * inner] = static_cast<T>(log ? z - log_sum : std::exp(z) / sum);
        }
      }
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

void register_matmul(OpRegistry& registry) {
  OpDef def("MatMul", "nn",
            "Matrix product with numpy.matmul semantics: 1-D operands are promoted (A to [1, K], B "
            "to [K, 1]) and the added axis removed; leading batch axes broadcast.");
  def.input("A", "left operand [..., M, K] or [K]")
      .input("B", "right operand [..., K, N] or [K]")
      .output("Y", "product [..., M, N]");
  def.allowed_types = kMatMulTypes;
  def.infer = infer_matmul;
  def.reference = matmul_kernel;
  // 2 * |Y| * K (one multiply and one add per term).
  def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
    const TensorType& a = *ctx.inputs[0];
    if (!a.is_static() || a.rank() == 0 || out[0].static_numel() < 0) return 0.0;
    return 2.0 * static_cast<double>(out[0].static_numel()) * static_cast<double>(a.dims.back().size);
  };
  registry.add(std::move(def));
}

void register_gemm(OpRegistry& registry) {
  OpDef def("Gemm", "nn",
            "General matrix multiply: Y = alpha * op(A) * op(B) + beta * C, where op transposes "
            "when transA / transB is set and C broadcasts one way to [M, N].");
  def.input("A", "[M, K], or [K, M] when transA")
      .input("B", "[K, N], or [N, K] when transB")
      .input("C", "bias, broadcastable to [M, N]", /*optional=*/true)
      .output("Y", "[M, N]")
      .attr("alpha", AttrKind::kFloat, Attribute(1.0), "scale of op(A) * op(B)")
      .attr("beta", AttrKind::kFloat, Attribute(1.0), "scale of C")
      .attr("transA", AttrKind::kInt, Attribute(0), "transpose A when non-zero")
      .attr("transB", AttrKind::kInt, Attribute(0), "transpose B when non-zero");
  def.allowed_types = kMatMulTypes;
  def.infer = infer_gemm;
  def.reference = gemm_kernel;
  // 2 * M * N * K, plus M * N for the bias.
  def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
    const TensorType& a = *ctx.inputs[0];
    if (!a.is_static() || a.rank() != 2 || out[0].static_numel() < 0) return 0.0;
    const int64_t k = ctx.attrs().i("transA") ? a.dims[0].size : a.dims[1].size;
    const double mn = static_cast<double>(out[0].static_numel());
    return 2.0 * mn * static_cast<double>(k) + (ctx.has_input(2) ? mn : 0.0);
  };
  registry.add(std::move(def));
}

void register_softmax(OpRegistry& registry, bool log) {
  OpDef def(log ? "LogSoftmax" : "Softmax", "activation",
            log ? "log(softmax(x)) along one axis, computed as x - max - log(sum(exp(x - max)))."
                : "exp(x) / sum(exp(x)) along one axis; the maximum is subtracted first, so large "
                  "inputs do not overflow.");
  def.input("input", "any rank")
      .output("output", "same shape as input")
      .attr("axis", AttrKind::kInt, Attribute(-1), "the axis normalised over, in [-rank, rank-1]");
  def.allowed_types = kFloatTypes;
  def.infer = infer_softmax;
  def.reference = [log](KernelContext& ctx) { return softmax_kernel(ctx, log); };
  registry.add(std::move(def));
}

}  // namespace

Status matmul_reference(KernelContext& ctx) { return matmul_kernel(ctx); }
Expected<std::vector<Dim>> matmul_output_dims(const ir::Node& node, const std::vector<Dim>& a, const std::vector<Dim>& b) {
  TRY(MatMulDims d, matmul_dims(node, a, b));
  return d.out;
}

void register_nn_ops(OpRegistry& registry) {
  register_matmul(registry);
  register_gemm(registry);
  register_softmax(registry, /*log=*/false);
  register_softmax(registry, /*log=*/true);
  register_conv_ops(registry);
  register_norm_ops(registry);
}

}  // namespace tessera::ops
