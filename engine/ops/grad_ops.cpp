// Backward ops autodiff emits for the nn family (convolution, pooling, loss and LRN gradients),
// each with a reference kernel; the CPU backend adds oneDNN kernels for the hot ones
// (engine/cpu/onednn_grad.cpp). DropoutGrad lives with Dropout in nn_norm.cpp (they share the
// mask generator).
//
// Window geometry is explicit: the gradient rules resolve auto_pad into `pads`, and the output
// extents come from dY, so no op here has auto_pad or ceil_mode. With input extent `in`, kernel k,
// stride s, dilation d and pads (b, e), output position o reads input positions
//   o * s - b + t * d,  t = 0 .. k-1   (positions outside [0, in) are padding)
// ConvGradInput / ConvGradWeight check that dY's extents are floor((in + b + e - ext) / s) + 1
// with ext = d * (k - 1) + 1, the forward Conv's; the pool gradients take any dY extent >= 1 (the
// forward pool's ceil_mode gives one more window than the floor).
//
// Reference kernels accumulate in double and round once; f16/bf16 go through f32.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/ir/limits.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

std::vector<Dim> dims_of(const Tensor& t) { return TensorType::of(t.dtype(), t.shape()).dims; }

// ---- window geometry --------------------------------------------------------------------------

// Explicit window attributes for `nsp` spatial axes (kernel from the attribute or the caller).
struct GradWindow {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: all begins, then all ends
};


Expected<GradWindow> read_grad_window(const ir::Node& node, const AttrReader& attrs, size_t nsp,
                                      std::vector<int64_t> kernel) {
  GradWindow w;
  if (kernel.empty()) {
    TRY(kernel, per_axis(node, attrs, "kernel_shape", nsp, 1, 1));
  }
  w.kernel = std::move(kernel);
  TRY(w.strides, per_axis(node, attrs, "strides", nsp, 1, 1));
  TRY(w.dilations, per_axis(node, attrs, "dilations", nsp, 1, 1));
  TRY(w.pads, per_axis(node, attrs, "pads", 2 * nsp, 0, 0));
  return w;
}

// The windows of one plane (nn_internal.h's Spatial) from a backward op's window attributes.
Spatial plane_of(const std::vector<int64_t>& in_sp, const std::vector<int64_t>& out_sp, const GradWindow& w) {
  const size_t nsp = in_sp.size();
  return Spatial(in_sp, out_sp, w.kernel, w.strides, w.dilations, std::vector<int64_t>(w.pads.begin(), w.pads.begin() + nsp),
                 std::vector<int64_t>(w.pads.begin() + nsp, w.pads.end()));
}

// A shape input (i32/i64 1-D) as dims: its value when constant, else `rank` unknown dims
// (rank from `like`).
Expected<std::vector<Dim>> shape_input_dims(const InferContext& ctx, size_t i, int rank) {
  const TensorType& t = *ctx.inputs[i];
  if (t.dtype != DType::kI64 && t.dtype != DType::kI32)
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be an i64 shape");
  if (const Tensor* c = ctx.constant(i)) {
    std::vector<Dim> d;
    for (int64_t v : to_int64s(*c)) {
      if (v < 0) return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' has a negative size");
      d.push_back(Dim::known(v));
    }
    return d;
  }
  if (rank < 0) return std::vector<Dim>{};
  return ir::unknown_dims(rank);
}

// Checks dY [N, M, O...] against a forward input [N, C, I...] through the window: ranks, batch,
// and (when `exact`) each O = floor((I + b + e - ext) / s) + 1.
Status check_window(const ir::Node& node, const std::vector<Dim>& dy, const std::vector<Dim>& x,
                    const GradWindow& w, bool exact) {
  if (dy.size() != x.size() || x.size() < 3)
    return node_error(node, "dY " + dims_to_string(dy) + " and the input " + dims_to_string(x) +
                                " must both be [N, C, spatial...]");
  const size_t nsp = x.size() - 2;
  if (w.kernel.size() != nsp) return node_error(node, "kernel rank does not match the spatial rank");
  if (dy[0].is_known() && x[0].is_known() && dy[0] != x[0])
    return node_error(node, "dY and the input disagree on the batch size");
  for (size_t d = 0; d < nsp; ++d) {
    const Dim &o = dy[2 + d], &i = x[2 + d];
    if (!o.is_known() || !i.is_known()) continue;
    const int64_t ext = w.dilations[d] * (w.kernel[d] - 1) + 1;
    const int64_t span = i.size + w.pads[d] + w.pads[nsp + d] - ext;
    const bool ok = exact ? span >= 0 && o.size == span / w.strides[d] + 1 : o.size >= 1;
    if (!ok)
      return node_error(node, "dY " + dims_to_string(dy) + " does not match the window over " +
                                  dims_to_string(x) + " on spatial axis " + std::to_string(d));
  }
  return Status::ok();
}

std::vector<int64_t> spatial(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

// ---- ConvGradInput, ConvGradWeight ------------------------------------------------------------

// Shapes of one convolution gradient: dY [N, M, O...], X [N, C, I...], W [M, C / group, k...].
Status check_conv_shapes(const ir::Node& node, const AttrReader& attrs, const std::vector<Dim>& dy,
                         const std::vector<Dim>& x, const std::vector<Dim>& w, GradWindow* win) {
  if (w.size() != x.size() || x.size() < 3)
    return node_error(node, "W " + dims_to_string(w) + " must have the rank of X " + dims_to_string(x));
  const int64_t group = attrs.i("group");
  if (group < 1) return node_error(node, "group must be >= 1");
  const size_t nsp = x.size() - 2;
  std::vector<int64_t> kernel(nsp, 1);
  bool kernel_known = true;
  for (size_t d = 0; d < nsp; ++d) {
    kernel_known &= w[2 + d].is_known();
    kernel[d] = w[2 + d].is_known() ? w[2 + d].size : 1;
  }
  TRY(GradWindow gw, read_grad_window(node, attrs, nsp, kernel));
  if (x[1].is_known() && w[1].is_known() && x[1].size != w[1].size * group)
    return node_error(node, "X " + dims_to_string(x) + " has channels that W " + dims_to_string(w) +
                                " with " + std::to_string(group) + " groups does not expect");
  if (w[0].is_known() && (w[0].size % group != 0 || (dy[1].is_known() && dy[1] != w[0])))
    return node_error(node, "dY " + dims_to_string(dy) + " must have one channel per filter of W " +
                                dims_to_string(w) + " (and the filters divide into the groups)");
  if (kernel_known) RETURN_IF_ERROR(check_window(node, dy, x, gw, /*exact=*/true));
  if (win) *win = gw;
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_conv_grad(const InferContext& ctx, bool weight) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  const TensorType& dy = *ctx.inputs[0];
  const TensorType& other = *ctx.inputs[1];  // W for the input gradient, X for the weights'
  TRY(std::vector<Dim> shape, shape_input_dims(ctx, 2, dy.rank_known ? dy.rank() : -1));
  const TensorType out = shape.empty() && !dy.rank_known ? TensorType::unranked(dy.dtype) : TensorType(dy.dtype, shape);
  if (dy.rank_known && other.rank_known && out.rank_known) {
    if (static_cast<int>(shape.size()) != dy.rank())
      return node_error(ctx.node, "the requested shape must have the rank of dY " + dy.to_string());
    if (weight)
      RETURN_IF_ERROR(check_conv_shapes(ctx.node, ctx.attrs(), dy.dims, other.dims, shape, nullptr));
    else
      RETURN_IF_ERROR(check_conv_shapes(ctx.node, ctx.attrs(), dy.dims, shape, other.dims, nullptr));
  }
  std::vector<TensorType> types{out};
  if (weight && ctx.node.outputs.size() > 1) {  // dB [M]: the bias gradient
    if (!dy.rank_known || dy.rank() < 2) return std::vector<TensorType>{out, TensorType::unranked(dy.dtype)};
    types.push_back(TensorType(dy.dtype, {dy.dims[1]}));
  }
  return types;
}

// dX[n, g*cg + c, at(o, t)] += W[m, c, t] * dY[n, m, o] (weight = false), or
// dW[m, c, t] += dY[n, m, o] * X[n, g*cg + c, at(o, t)] (weight = true).
Status conv_grad_kernel(KernelContext& ctx, bool weight) {
  const DType dt = ctx.in(0).dtype();
  const Tensor dy = widen(ctx.in(0)).contiguous();
  const Tensor other = widen(ctx.in(1)).contiguous();
  Shape out_shape;
  for (int64_t v : to_int64s(ctx.in(2))) out_shape.push_back(v);
  const Shape& xs = weight ? other.shape() : out_shape;
  const Shape& ws = weight ? out_shape : other.shape();
  GradWindow win;
  RETURN_IF_ERROR(check_conv_shapes(ctx.node, ctx.attrs(), dims_of(dy),
                                    TensorType::of(dt, xs).dims, TensorType::of(dt, ws).dims, &win));
  if (out_shape.size() != dy.shape().size()) return node_error(ctx.node, "shape rank mismatch");
  const Spatial pl = plane_of(spatial(xs), spatial(dy.shape()), win);
  const int64_t n_batch = dy.dim(0), m_out = dy.dim(1), c_in = xs[1], group = ctx.attrs().i("group");
  const int64_t cg = c_in / group, mg = m_out / group;
  TRY(Tensor result, Tensor::create(dy.dtype(), out_shape));
  std::vector<double> acc(static_cast<size_t>(result.numel()), 0.0);
  RETURN_IF_ERROR(dispatch_float(dy.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* pdy = dy.data<T>();
    const T* po = other.data<T>();
    std::vector<int64_t> base(pl.nsp);
    for (int64_t n = 0; n < n_batch; ++n)
      for (int64_t m = 0; m < m_out; ++m) {
        const int64_t x_off = (n * c_in + (m / mg) * cg) * pl.in_size;  // first channel of m's group
        const int64_t w_off = m * cg * pl.num_taps;
        const T* dym = pdy + (n * m_out + m) * pl.out_size;
        for (int64_t o = 0; o < pl.out_size; ++o) {
          const double g = static_cast<double>(dym[o]);
          if (g == 0.0) continue;
          pl.window_base(o, base);
          for (int64_t t = 0; t < pl.num_taps; ++t) {
            const int64_t at = pl.tap(base, t);
            if (at < 0) continue;
            for (int64_t c = 0; c < cg; ++c) {
              const int64_t xi = x_off + c * pl.in_size + at, wi = w_off + c * pl.num_taps + t;
              if (weight)
                acc[static_cast<size_t>(wi)] += g * static_cast<double>(po[xi]);
              else
                acc[static_cast<size_t>(xi)] += g * static_cast<double>(po[wi]);
            }
          }
        }
      }
    for (int64_t i = 0; i < result.numel(); ++i) result.data<T>()[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    return Status::ok();
  }));
  ctx.outputs = {narrow(result, dt)};
  if (weight && ctx.node.outputs.size() > 1) {  // dB[m] = sum of dY[n, m, o]
    TRY(Tensor db, Tensor::create(dy.dtype(), {m_out}));
    for (int64_t m = 0; m < m_out; ++m) {
      double sum = 0;
      for (int64_t n = 0; n < n_batch; ++n)
        for (int64_t o = 0; o < pl.out_size; ++o) sum += dy.get((n * m_out + m) * pl.out_size + o);
      db.set(m, sum);
    }
    ctx.outputs.push_back(narrow(db, dt));
  }
  return Status::ok();
}

// ---- MaxPoolGrad, AveragePoolGrad -------------------------------------------------------------

Expected<std::vector<TensorType>> infer_pool_grad(const InferContext& ctx, bool max) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& dy = *ctx.inputs[0];
  TensorType out = TensorType::unranked(dy.dtype);
  if (max) {
    RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
    out = *ctx.inputs[1];
  } else {
    TRY(std::vector<Dim> shape, shape_input_dims(ctx, 1, dy.rank_known ? dy.rank() : -1));
    if (dy.rank_known || !shape.empty()) out = TensorType(dy.dtype, shape);
  }
  if (dy.rank_known && out.rank_known) {
    if (dy.rank() != out.rank() || dy.rank() < 3)
      return node_error(ctx.node, "dY " + dy.to_string() + " and the input " + out.to_string() +
                                      " must both be [N, C, spatial...]");
    TRY(GradWindow w, read_grad_window(ctx.node, ctx.attrs(), static_cast<size_t>(dy.rank() - 2), {}));
    RETURN_IF_ERROR(check_window(ctx.node, dy.dims, out.dims, w, /*exact=*/false));
    if (dy.dims[1].is_known() && out.dims[1].is_known() && dy.dims[1] != out.dims[1])
      return node_error(ctx.node, "dY and the input disagree on the channels");
  }
  return std::vector<TensorType>{out};
}

// MaxPool: each dY goes to the first maximum of its window (row-major tap order, as the forward
// kernel, PyTorch and oneDNN pick it). AveragePool: dY / count to every counted tap.
Status pool_grad_kernel(KernelContext& ctx, bool max) {
  const DType dt = ctx.in(0).dtype();
  const Tensor dy = widen(ctx.in(0)).contiguous();
  const Tensor x = max ? widen(ctx.in(1)).contiguous() : Tensor();
  Shape xs;
  if (max) xs = x.shape();
  else
    for (int64_t v : to_int64s(ctx.in(1))) xs.push_back(v);
  if (xs.size() != dy.shape().size() || xs.size() < 3 || xs[0] != dy.dim(0) || xs[1] != dy.dim(1))
    return node_error(ctx.node, "dY " + shape_to_string(dy.shape()) + " does not match the input " +
                                    shape_to_string(xs));
  TRY(GradWindow w, read_grad_window(ctx.node, ctx.attrs(), xs.size() - 2, {}));
  RETURN_IF_ERROR(check_window(ctx.node, dims_of(dy), TensorType::of(dt, xs).dims, w, false));
  const bool include_pad = !max && ctx.attrs().i("count_include_pad") != 0;
  const Spatial pl = plane_of(spatial(xs), spatial(dy.shape()), w);
  const int64_t planes = xs[0] * xs[1];
  TRY(Tensor dx, Tensor::create(dy.dtype(), xs));
  std::vector<double> acc(static_cast<size_t>(dx.numel()), 0.0);
  RETURN_IF_ERROR(dispatch_float(dy.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    std::vector<int64_t> base(pl.nsp);
    for (int64_t p = 0; p < planes; ++p) {
      const T* dyp = dy.data<T>() + p * pl.out_size;
      double* ap = acc.data() + p * pl.in_size;
      const T* xp = max ? x.data<T>() + p * pl.in_size : nullptr;
      for (int64_t o = 0; o < pl.out_size; ++o) {
        pl.window_base(o, base);
        if (max) {
          int64_t best_at = -1;
          for (int64_t t = 0; t < pl.num_taps; ++t) {
            const int64_t at = pl.tap(base, t);
            if (at >= 0 && (best_at < 0 || xp[at] > xp[best_at])) best_at = at;
          }
          if (best_at >= 0) ap[best_at] += static_cast<double>(dyp[o]);
          continue;
        }
        int64_t count = 0;
        for (int64_t t = 0; t < pl.num_taps; ++t) {
          bool in_padded = false;
          const int64_t at = pl.tap(base, t, &in_padded);
          if (at >= 0 || (include_pad && in_padded)) ++count;
        }
        if (count == 0) continue;
        const double g = static_cast<double>(dyp[o]) / static_cast<double>(count);
        for (int64_t t = 0; t < pl.num_taps; ++t) {
          const int64_t at = pl.tap(base, t);
          if (at >= 0) ap[at] += g;
        }
      }
    }
    for (int64_t i = 0; i < dx.numel(); ++i) dx.data<T>()[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    return Status::ok();
  }));
  ctx.outputs = {narrow(dx, dt)};
  return Status::ok();
}

// ---- NegativeLogLikelihoodLossGrad, SoftmaxCrossEntropyLossGrad -------------------------------

Expected<std::vector<TensorType>> infer_loss_grad(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  const TensorType& x = *ctx.inputs[1];
  const TensorType& t = *ctx.inputs[2];
  if (t.dtype != DType::kI64 && t.dtype != DType::kI32)
    return node_error(ctx.node, "the target must be i32 or i64, got " + t.to_string());
  if (x.rank_known && x.rank() < 2) return node_error(ctx.node, "input must be [N, C, d1, ...]");
  const std::string& r = ctx.attrs().s("reduction");
  if (r != "none" && r != "sum" && r != "mean")
    return node_error(ctx.node, "reduction must be none, sum or mean, got '" + r + "'");
  return std::vector<TensorType>{x};
}

// For each position p with class k = target[p] (not ignore_index), c = g_p * w[k] with g_p the
// loss gradient at p (none), or the scalar (sum), or the scalar / sum of applied weights (mean):
//   NLL: d input[n, k, p] = -c;   SCE: d scores[n, j, p] = c * (softmax_j - [j == k]).
Status loss_grad_kernel(KernelContext& ctx, bool softmax) {
  const DType dt = ctx.in(1).dtype();
  const Tensor dl = widen(ctx.in(0)).contiguous();
  const Tensor x = widen(ctx.in(1)).contiguous();
  const Tensor w = ctx.has_input(3) ? widen(ctx.in(3)).contiguous() : Tensor();
  const AttrReader attrs = ctx.attrs();
  const std::string& red = attrs.s("reduction");
  const bool has_ignore = attrs.has("ignore_index");
  const int64_t ignore = has_ignore ? attrs.i("ignore_index") : 0;
  if (x.rank() < 2) return node_error(ctx.node, "input must be [N, C, d1, ...]");
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / std::max<int64_t>(1, n * c);
  const std::vector<int64_t> tv = to_int64s(ctx.in(2).contiguous());
  if (static_cast<int64_t>(tv.size()) != n * inner)
    return node_error(ctx.node, "the target must be [N, d1, ...] for input " + shape_to_string(x.shape()));
  if (ctx.has_input(3) && w.numel() != c) return node_error(ctx.node, "weights must be [C]");
  if (red == "none" ? dl.numel() != n * inner : dl.numel() != 1)
    return node_error(ctx.node, "the loss gradient has the wrong size for reduction " + red);
  const std::vector<double> wv = ctx.has_input(3) ? w.to_doubles() : std::vector<double>();
  double weight_sum = 0;
  for (int64_t k : tv) {
    if (has_ignore && k == ignore) continue;
    if (k < 0 || k >= c)
      return node_error(ctx.node, "target class " + std::to_string(k) + " is out of range for " +
                                      std::to_string(c) + " classes");
    weight_sum += wv.empty() ? 1.0 : wv[static_cast<size_t>(k)];
  }
  TRY(Tensor dx, Tensor::create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pd = dx.data<T>();
    std::fill(pd, pd + dx.numel(), T{0});
    std::vector<double> e(static_cast<size_t>(c));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t p = b * inner + i, k = tv[static_cast<size_t>(p)];
        if (has_ignore && k == ignore) continue;
        double g = red == "none" ? dl.get(p) : dl.get(0);
        if (red == "mean") g /= weight_sum;
        g *= wv.empty() ? 1.0 : wv[static_cast<size_t>(k)];
        if (softmax) {
          double mx = -std::numeric_limits<double>::infinity(), s = 0;
          for (int64_t j = 0; j < c; ++j) mx = std::max(mx, static_cast<double>(px[(b * c + j) * inner + i]));
          for (int64_t j = 0; j < c; ++j) s += e[j] = std::exp(static_cast<double>(px[(b * c + j) * inner + i]) - mx);
          for (int64_t j = 0; j < c; ++j) pd[(b * c + j) * inner + i] = static_cast<T>(g * e[j] / s);
        }
        const int64_t at = (b * c + k) * inner + i;
        pd[at] = static_cast<T>(static_cast<double>(pd[at]) - g);
      }
    return Status::ok();
  }));
  ctx.outputs = {narrow(dx, dt)};
  return Status::ok();
}

// ---- LRNGrad ----------------------------------------------------------------------------------

// y_j = x_j * D_j^-beta with D_j = bias + alpha / size * sum_{i in win(j)} x_i^2, so
// dx_i = dy_i * D_i^-beta - 2 alpha beta / size * x_i * sum_{j : i in win(j)} dy_j x_j D_j^(-beta-1).
Status lrn_grad_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor dy = widen(ctx.in(0)).contiguous();
  const Tensor x = widen(ctx.in(1)).contiguous();
  if (dy.shape() != x.shape() || x.rank() < 2) return node_error(ctx.node, "dY and X must be [N, C, ...] alike");
  const AttrReader attrs = ctx.attrs();
  const int64_t size = attrs.i("size");
  if (size < 1) return node_error(ctx.node, "size must be >= 1");
  const double alpha = attrs.f("alpha"), beta = attrs.f("beta"), bias = attrs.f("bias");
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / std::max<int64_t>(1, n * c);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // win(j) = [j - lo, j + hi]
  TRY(Tensor dx, Tensor::create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    std::vector<double> d(static_cast<size_t>(c)), q(static_cast<size_t>(c));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t s = 0; s < inner; ++s) {
        auto at = [&](int64_t ch) { return (b * c + ch) * inner + s; };
        for (int64_t j = 0; j < c; ++j) {
          double sq = 0;
          for (int64_t i = std::max<int64_t>(0, j - lo); i <= std::min(c - 1, j + hi); ++i)
            sq += static_cast<double>(x.data<T>()[at(i)]) * static_cast<double>(x.data<T>()[at(i)]);
          d[j] = bias + alpha / static_cast<double>(size) * sq;
          q[j] = static_cast<double>(dy.data<T>()[at(j)]) * static_cast<double>(x.data<T>()[at(j)]) *
                 std::pow(d[j], -beta - 1);
        }
        for (int64_t i = 0; i < c; ++i) {
          double sum = 0;
          for (int64_t j = std::max<int64_t>(0, i - hi); j <= std::min(c - 1, i + lo); ++j) sum += q[j];
          const double xi = static_cast<double>(x.data<T>()[at(i)]);
          dx.data<T>()[at(i)] = static_cast<T>(static_cast<double>(dy.data<T>()[at(i)]) * std::pow(d[i], -beta) -
                                               2 * alpha * beta / static_cast<double>(size) * xi * sum);
        }
      }
    return Status::ok();
  }));
  ctx.outputs = {narrow(dx, dt)};
  return Status::ok();
}

// ---- registration ----------------------------------------------------------------------------

void window_attrs(OpDef& def, bool pool) {
  if (pool) def.required_attr("kernel_shape", AttrKind::kInts, "window size, one per spatial axis");
  def.attr("pads", AttrKind::kInts, std::nullopt,
           "explicit [x1_begin, ..., x1_end, ...] as the forward op applied them; default 0")
      .attr("strides", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1")
      .attr("dilations", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1");
}

void register_conv_grad(OpRegistry& registry, bool weight) {
  OpDef def(weight ? "ConvGradWeight" : "ConvGradInput", "grad",
            weight ? "Gradient of Conv with respect to its filters: dW [M, C / group, k...] from dY "
                     "[N, M, O...] and the forward input X [N, C, I...]."
                   : "Gradient of Conv with respect to its input: dX [N, C, I...] from dY [N, M, O...] "
                     "and the filters W [M, C / group, k...] (a transposed convolution).");
  def.input("dY", "gradient of Conv's output [N, M, O1, ...]")
      .input(weight ? "X" : "W", weight ? "the forward input [N, C, I1, ...]" : "filters [M, C / group, k1, ...]")
      .input(weight ? "weight_shape" : "input_shape", "i64 1-D shape of the result")
      .output(weight ? "dW" : "dX", weight ? "shape weight_shape" : "shape input_shape")
      .attr("group", AttrKind::kInt, Attribute(int64_t{1}), "number of channel groups, as the forward Conv");
  if (weight) def.output("dB", "[M]: the bias gradient, dY summed over every axis but 1 (computed with dW)", /*optional=*/true);
  window_attrs(def, /*pool=*/false);
  def.allowed_types = kFloatTypes;
  def.infer = [weight](const InferContext& ctx) { return infer_conv_grad(ctx, weight); };
  def.reference = [weight](KernelContext& ctx) { return conv_grad_kernel(ctx, weight); };
  // As the forward Conv: 2 * |dY| * (C / group) * prod(kernel).
  def.flops = [weight](const InferContext& ctx, const std::vector<TensorType>& out) {
    const TensorType& dy = *ctx.inputs[0];
    const TensorType& w = weight ? out[0] : *ctx.inputs[1];
    if (!w.is_static() || dy.static_numel() < 0) return 0.0;
    double per = 1;
    for (int i = 1; i < w.rank(); ++i) per *= static_cast<double>(w.dims[i].size);
    return 2.0 * static_cast<double>(dy.static_numel()) * per;
  };
  registry.add(std::move(def));
}

void register_pool_grad(OpRegistry& registry, bool max) {
  OpDef def(max ? "MaxPoolGrad" : "AveragePoolGrad", "grad",
            max ? "Gradient of MaxPool: each dY element goes to the first maximum of its window in X."
                : "Gradient of AveragePool: each dY element is shared out over its window, divided "
                  "by the forward's count (count_include_pad as the forward).");
  def.input("dY", "gradient of the pool's output [N, C, O1, ...]");
  if (max)
    def.input("X", "the forward input [N, C, I1, ...]");
  else
    def.input("input_shape", "i64 1-D shape of the forward input");
  def.output("dX", "shape of the forward input");
  window_attrs(def, /*pool=*/true);
  if (!max) def.attr("count_include_pad", AttrKind::kInt, Attribute(int64_t{0}), "as the forward AveragePool");
  def.allowed_types = kFloatTypes;
  def.infer = [max](const InferContext& ctx) { return infer_pool_grad(ctx, max); };
  def.reference = [max](KernelContext& ctx) { return pool_grad_kernel(ctx, max); };
  registry.add(std::move(def));
}

void register_loss_grad(OpRegistry& registry, bool softmax) {
  OpDef def(softmax ? "SoftmaxCrossEntropyLossGrad" : "NegativeLogLikelihoodLossGrad", "grad",
            softmax ? "Gradient of SoftmaxCrossEntropyLoss with respect to the scores: "
                      "g * w[k] * (softmax(scores, 1) - onehot(k)) per position."
                    : "Gradient of NegativeLogLikelihoodLoss with respect to its input: -g * w[k] at "
                      "the target class of each position, 0 elsewhere.");
  def.input("dloss", "gradient of the loss (its shape: [N, d1, ...] for none, else a scalar)")
      .input(softmax ? "scores" : "input", "the forward input [N, C, d1, ...]")
      .input("target", "i32/i64 classes [N, d1, ...]")
      .input("weights", "class weights [C]", /*optional=*/true)
      .output("dX", "shape of the forward input")
      .attr("ignore_index", AttrKind::kInt, std::nullopt, "as the forward op")
      .attr("reduction", AttrKind::kString, Attribute("mean"), "as the forward op");
  def.allowed_types = kFloatTypes;
  def.infer = infer_loss_grad;
  def.reference = [softmax](KernelContext& ctx) { return loss_grad_kernel(ctx, softmax); };
  registry.add(std::move(def));
}

void register_lrn_grad(OpRegistry& registry) {
  OpDef def("LRNGrad", "grad", "Gradient of LRN with respect to X (attributes as the forward op).");
  def.input("dY", "gradient of LRN's output").input("X", "the forward input [N, C, ...]").output("dX", "shape of X");
  def.required_attr("size", AttrKind::kInt, "as the forward LRN")
      .attr("alpha", AttrKind::kFloat, Attribute(1e-4), "as the forward LRN")
      .attr("beta", AttrKind::kFloat, Attribute(0.75), "as the forward LRN")
      .attr("bias", AttrKind::kFloat, Attribute(1.0), "as the forward LRN");
  def.allowed_types = kFloatTypes;
  def.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    RETURN_IF_ERROR(check_allowed_type(ctx));
    RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
    return std::vector<TensorType>{*ctx.inputs[1]};
  };
  def.reference = lrn_grad_kernel;
  registry.add(std::move(def));
}

}  // namespace

constexpr const char* kSecondOrder = "a gradient op, emitted by autodiff (second derivatives are not supported)";

void register_relu_grad(OpRegistry& registry) {
  OpDef def("ReluGrad", "grad", "Gradient of Relu from its output: dX = dY where Y > 0, else 0 (0 at the kink, as PyTorch).");
  def.input("dY", "gradient of the Relu's output").input("Y", "the Relu's output, same shape as dY");
  def.output("dX", "shape of dY");
  def.allowed_types = kFloatTypes;
  def.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    if (ctx.inputs[0]->dtype != ctx.inputs[1]->dtype)
      return make_error("dY is " + std::string(dtype_name(ctx.inputs[0]->dtype)) + " and Y " + std::string(dtype_name(ctx.inputs[1]->dtype)));
    if (ctx.inputs[0]->is_static() && ctx.inputs[1]->is_static() && ctx.inputs[0]->static_shape() != ctx.inputs[1]->static_shape())
      return make_error("dY " + ctx.inputs[0]->to_string() + " and Y " + ctx.inputs[1]->to_string() + " differ in shape");
    return std::vector<TensorType>{*ctx.inputs[0]};
  };
  def.reference = [](KernelContext& ctx) -> Status {
    const Tensor dy = ctx.in(0).contiguous(), y = ctx.in(1).contiguous();
    if (dy.shape() != y.shape())
      return make_error("dY " + shape_to_string(dy.shape()) + " and Y " + shape_to_string(y.shape()) + " differ in shape");
    TRY(Tensor dx, Tensor::create(dy.dtype(), dy.shape()));
    for (int64_t i = 0; i < dy.numel(); ++i) dx.set(i, y.get(i) > 0 ? dy.get(i) : 0.0);
    ctx.outputs.push_back(std::move(dx));
    return Status::ok();
  };
  def.no_gradient_reason = kSecondOrder;
  registry.add(std::move(def));
}

// dX, dScale, dBias of BatchNormalization in training mode (batch moments over every axis but 1),
// recomputing the moments from X: dBias = sum(dY), dScale = sum(dY * xhat),
// dX = scale * inv * (dY - dBias / M - xhat * dScale / M), xhat = (X - mean) * inv, M the count.
Status batchnorm_grad_kernel(KernelContext& ctx) {
  if (ctx.attrs().i("sync_ranks") > 1)
    return node_error(ctx.node, "moments synchronised over ranks (sync_ranks) need the cpu.vec kernel: plain static f32 [N, C, ...]");
  const Tensor dy = widen(ctx.in(0)).contiguous(), x = widen(ctx.in(1)).contiguous();
  const std::vector<double> scale = ctx.in(2).to_doubles();
  const double eps = ctx.attrs().f("epsilon");
  if (x.rank() < 2 || dy.shape() != x.shape() || static_cast<int64_t>(scale.size()) != x.dim(1))
    return node_error(ctx.node, "dY " + shape_to_string(dy.shape()) + ", X " + shape_to_string(x.shape()) + " and scale [" +
                                    std::to_string(scale.size()) + "] do not fit (X is [N, C, ...], scale [C])");
  const int64_t n = x.dim(0), c = x.dim(1), inner = n * c == 0 ? 0 : x.numel() / (n * c);
  const double count = static_cast<double>(n * inner);
  TRY(Tensor dx, Tensor::create(x.dtype(), x.shape()));
  TRY(Tensor dscale, Tensor::create(ctx.in(2).dtype(), {c}));
  TRY(Tensor dbias, Tensor::create(ctx.in(2).dtype(), {c}));
  auto at = [&](int64_t i, int64_t ch, int64_t k) { return (i * c + ch) * inner + k; };
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0, sdy = 0, sdyxc = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) mean += x.get(at(i, ch, k));
    mean /= count;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) {
        const double d = x.get(at(i, ch, k)) - mean;
        var += d * d;
        sdy += dy.get(at(i, ch, k));
        sdyxc += dy.get(at(i, ch, k)) * d;
      }
    var /= count;
    const double inv = 1.0 / std::sqrt(var + eps);
    dbias.set(ch, sdy);
    dscale.set(ch, sdyxc * inv);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) {
        const double xc = x.get(at(i, ch, k)) - mean;
        dx.set(at(i, ch, k), scale[static_cast<size_t>(ch)] * inv * (dy.get(at(i, ch, k)) - sdy / count - xc * inv * inv * sdyxc / count));
      }
  }
  ctx.outputs = {narrow(dx, ctx.in(1).dtype()), std::move(dscale), std::move(dbias)};
  return Status::ok();
}

void register_batchnorm_grad(OpRegistry& registry) {
  OpDef def("BatchNormalizationGrad", "grad",
            "Gradient of BatchNormalization in training mode with respect to X, scale and B, from the batch "
            "moments (recomputed from X): one op instead of a dozen reductions and element-wise ops.");
  def.input("dY", "gradient of Y [N, C, ...]").input("X", "the forward input").input("scale", "the forward scale [C]");
  def.output("dX", "shape of X").output("dScale", "[C]").output("dB", "[C]");
  def.attr("epsilon", AttrKind::kFloat, Attribute(1e-5), "as the forward op");
  def.attr("sync_ranks", AttrKind::kInt, Attribute(0), "as the forward op: moments over every rank's rows (cpu.vec kernel)");
  def.allowed_types = kFloatTypes;
  def.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    if (ctx.inputs[0]->dtype != ctx.inputs[1]->dtype)
      return node_error(ctx.node, "dY and X differ in type: " + ctx.inputs[0]->to_string() + ", " + ctx.inputs[1]->to_string());
    return std::vector<TensorType>{*ctx.inputs[1], *ctx.inputs[2], *ctx.inputs[2]};
  };
  def.reference = batchnorm_grad_kernel;
  def.no_gradient_reason = kSecondOrder;
  registry.add(std::move(def));
}

// ---- fused gradients of activations and normalisations (one op where the rule emitted a dozen) --

// dX = dY * gelu'(X): exact 0.5 (1 + erf(x / sqrt 2)) + x phi(x), or the tanh form's derivative.
double gelu_derivative(double x, bool exact) {
  if (exact) return 0.5 * (1.0 + std::erf(x * M_SQRT1_2)) + x * std::exp(-0.5 * x * x) * 0.5 * M_2_SQRTPI * M_SQRT1_2;
  const double a = 0.044715, k = std::sqrt(2.0 / M_PI);
  const double t = std::tanh(k * x * (1.0 + a * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * a * x * x);
}

Expected<std::vector<TensorType>> infer_same_as_input(const InferContext& ctx, size_t dy, size_t like) {
  if (ctx.inputs[dy]->dtype != ctx.inputs[like]->dtype)
    return node_error(ctx.node, "the gradient " + ctx.inputs[dy]->to_string() + " and " + ctx.inputs[like]->to_string() + " differ in type");
  if (ctx.inputs[dy]->is_static() && ctx.inputs[like]->is_static() && ctx.inputs[dy]->static_shape() != ctx.inputs[like]->static_shape())
    return node_error(ctx.node, "the gradient " + ctx.inputs[dy]->to_string() + " and " + ctx.inputs[like]->to_string() + " differ in shape");
  return std::vector<TensorType>{*ctx.inputs[like]};
}

void register_gelu_grad(OpRegistry& registry) {
  OpDef def("GeluGrad", "grad", "Gradient of Gelu: dX = dY * Gelu'(X) (approximate as the forward op).");
  def.input("dY", "gradient of the Gelu's output").input("X", "the Gelu's input, same shape");
  def.output("dX", "shape of X");
  def.attr("approximate", AttrKind::kString, Attribute("none"), "none (erf) or tanh, as the forward op");
  def.allowed_types = kFloatTypes;
  def.infer = [](const InferContext& ctx) { return infer_same_as_input(ctx, 0, 1); };
  def.reference = [](KernelContext& ctx) -> Status {
    const std::string mode = ctx.attrs().s("approximate");
    if (mode != "none" && mode != "tanh") return node_error(ctx.node, "unknown approximate mode '" + mode + "'");
    const Tensor dy = ctx.in(0).contiguous(), x = ctx.in(1).contiguous();
    if (dy.shape() != x.shape()) return node_error(ctx.node, "dY and X differ in shape");
    TRY(Tensor dx, Tensor::create(x.dtype(), x.shape()));
    for (int64_t i = 0; i < x.numel(); ++i) dx.set(i, dy.get(i) * gelu_derivative(x.get(i), mode == "none"));
    ctx.outputs.push_back(std::move(dx));
    return Status::ok();
  };
  def.no_gradient_reason = kSecondOrder;
  registry.add(std::move(def));
}

// Row-wise views for SoftmaxGrad / LayerNormalizationGrad: outer x axis-size x inner.
struct Rows {
  int64_t outer = 1, len = 1, inner = 1;
};
Rows rows_of(const Shape& s, int64_t axis, bool to_end) {
  Rows r;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) r.outer *= s[static_cast<size_t>(d)];
    else if (d == axis || to_end) r.len *= s[static_cast<size_t>(d)];
    else r.inner *= s[static_cast<size_t>(d)];
  }
  return r;
}

void register_softmax_grad(OpRegistry& registry) {
  OpDef def("SoftmaxGrad", "grad", "Gradient of Softmax from its output: dX = Y * (dY - sum(dY * Y, axis)).");
  def.input("dY", "gradient of the Softmax's output").input("Y", "the Softmax's output, same shape");
  def.output("dX", "shape of Y");
  def.attr("axis", AttrKind::kInt, Attribute(int64_t{-1}), "as the forward op");
  def.allowed_types = kFloatTypes;
  def.infer = [](const InferContext& ctx) { return infer_same_as_input(ctx, 0, 1); };
  def.reference = [](KernelContext& ctx) -> Status {
    const Tensor dy = ctx.in(0).contiguous(), y = ctx.in(1).contiguous();
    if (dy.shape() != y.shape()) return node_error(ctx.node, "dY and Y differ in shape");
    int64_t axis = ctx.attrs().i("axis");
    if (axis < 0) axis += y.rank();
    if (axis < 0 || axis >= std::max(1, y.rank())) return node_error(ctx.node, "axis out of range");
    const Rows r = rows_of(y.shape(), axis, false);
    TRY(Tensor dx, Tensor::create(y.dtype(), y.shape()));
    for (int64_t o = 0; o < r.outer; ++o)
      for (int64_t in = 0; in < r.inner; ++in) {
        auto at = [&](int64_t k) { return (o * r.len + k) * r.inner + in; };
        double sum = 0;
        for (int64_t k = 0; k < r.len; ++k) sum += dy.get(at(k)) * y.get(at(k));
        for (int64_t k = 0; k < r.len; ++k) dx.set(at(k), y.get(at(k)) * (dy.get(at(k)) - sum));
      }
    ctx.outputs.push_back(std::move(dx));
    return Status::ok();
  };
  def.no_gradient_reason = kSecondOrder;
  registry.add(std::move(def));
}

// LayerNormalization over the axes from `axis` to the last, Scale of exactly those dims:
// xhat = (x - mean) * inv per row, g = dY * Scale, dX = inv * (g - mean(g) - xhat * mean(g * xhat)),
// dScale = sum over rows of dY * xhat, dB = sum over rows of dY.
void register_layernorm_grad(OpRegistry& registry) {
  OpDef def("LayerNormalizationGrad", "grad",
            "Gradient of LayerNormalization with respect to X, Scale and B (Scale and B of the normalised "
            "dims), from the row moments recomputed from X.");
  def.input("dY", "gradient of Y").input("X", "the forward input").input("Scale", "X.shape[axis:]");
  def.output("dX", "shape of X").output("dScale", "shape of Scale").output("dB", "shape of Scale");
  def.attr("axis", AttrKind::kInt, Attribute(int64_t{-1}), "as the forward op");
  def.attr("epsilon", AttrKind::kFloat, Attribute(1e-5), "as the forward op");
  def.allowed_types = kFloatTypes;
  def.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    TRY(std::vector<TensorType> t, infer_same_as_input(ctx, 0, 1));
    return std::vector<TensorType>{t[0], *ctx.inputs[2], *ctx.inputs[2]};
  };
  def.reference = [](KernelContext& ctx) -> Status {
    const Tensor dy = widen(ctx.in(0)).contiguous(), x = widen(ctx.in(1)).contiguous(), scale = widen(ctx.in(2)).contiguous();
    int64_t axis = ctx.attrs().i("axis");
    if (axis < 0) axis += x.rank();
    if (dy.shape() != x.shape() || axis < 0 || axis >= x.rank() ||
        Shape(x.shape().begin() + axis, x.shape().end()) != scale.shape())
      return node_error(ctx.node, "dY " + shape_to_string(dy.shape()) + ", X " + shape_to_string(x.shape()) + " and Scale " +
                                      shape_to_string(scale.shape()) + " do not fit axis " + std::to_string(axis));
    const Rows r = rows_of(x.shape(), axis, true);
    const double eps = ctx.attrs().f("epsilon");
    TRY(Tensor dx, Tensor::create(x.dtype(), x.shape()));
    std::vector<double> ds(static_cast<size_t>(r.len), 0.0), db(static_cast<size_t>(r.len), 0.0);
    for (int64_t o = 0; o < r.outer; ++o) {
      const int64_t base = o * r.len;
      double mean = 0, var = 0, mg = 0, mgx = 0;
      for (int64_t k = 0; k < r.len; ++k) mean += x.get(base + k);
      mean /= static_cast<double>(r.len);
      for (int64_t k = 0; k < r.len; ++k) var += (x.get(base + k) - mean) * (x.get(base + k) - mean);
      const double inv = 1.0 / std::sqrt(var / static_cast<double>(r.len) + eps);
      for (int64_t k = 0; k < r.len; ++k) {
        const double xhat = (x.get(base + k) - mean) * inv, g = dy.get(base + k) * scale.get(k);
        mg += g, mgx += g * xhat;
        ds[static_cast<size_t>(k)] += dy.get(base + k) * xhat;
        db[static_cast<size_t>(k)] += dy.get(base + k);
      }
      mg /= static_cast<double>(r.len), mgx /= static_cast<double>(r.len);
      for (int64_t k = 0; k < r.len; ++k) {
        const double xhat = (x.get(base + k) - mean) * inv, g = dy.get(base + k) * scale.get(k);
        dx.set(base + k, inv * (g - mg - xhat * mgx));
      }
    }
    TRY(Tensor dscale, Tensor::create(ctx.in(2).dtype(), scale.shape()));
    TRY(Tensor dbias, Tensor::create(ctx.in(2).dtype(), scale.shape()));
    for (int64_t k = 0; k < r.len; ++k) dscale.set(k, ds[static_cast<size_t>(k)]), dbias.set(k, db[static_cast<size_t>(k)]);
    ctx.outputs = {narrow(dx, ctx.in(1).dtype()), std::move(dscale), std::move(dbias)};
    return Status::ok();
  };
  def.no_gradient_reason = kSecondOrder;
  registry.add(std::move(def));
}

void register_grad_ops(OpRegistry& registry) {
  register_relu_grad(registry);
  register_gelu_grad(registry);
  register_softmax_grad(registry);
  register_layernorm_grad(registry);
  register_batchnorm_grad(registry);
  register_conv_grad(registry, /*weight=*/false);
  register_conv_grad(registry, /*weight=*/true);
  register_pool_grad(registry, /*max=*/true);
  register_pool_grad(registry, /*max=*/false);
  register_loss_grad(registry, /*softmax=*/true);
  register_loss_grad(registry, /*softmax=*/false);
  register_lrn_grad(registry);
}

}  // namespace tessera::ops
