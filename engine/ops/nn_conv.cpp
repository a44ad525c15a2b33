// Convolution and pooling over N spatial axes: Conv, MaxPool, AveragePool, GlobalAveragePool.
//
// Window geometry, per spatial axis with input extent `in`, kernel k, stride s, dilation d and
// kernel extent e = d * (k - 1) + 1:
//   NOTSET      out = floor((in + pad_begin + pad_end - e) / s) + 1   (ceil with ceil_mode, then
//               one less when the last window would start past the input and the leading pad)
//   SAME_UPPER  out = ceil(in / s); total pad = max(0, (out - 1) * s + e - in), the odd one at
//   SAME_LOWER  the end (UPPER) or at the beginning (LOWER)
//   VALID       no padding, out = floor((in - e) / s) + 1
// The reference kernels are direct loops over output positions, kernel taps and channels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/ir/limits.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

// Sliding-window attributes, per spatial axis; a kernel size < 0 is unknown (inference only).
struct Window {
  std::string auto_pad;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: all begins, then all ends
  bool ceil_mode = false;
};

// The geometry of one node: output dims and the pads actually applied (auto_pad resolved).
struct Geometry {
  Window win;
  std::vector<Dim> out;  // full output dims [N, C_out, spatial...]
  std::vector<int64_t> pad_begin, pad_end;
};


// Reads auto_pad, strides, dilations, pads (and ceil_mode for pools) for `nsp` spatial axes.
Expected<Window> read_window(const ir::Node& node, const AttrReader& attrs, size_t nsp,
                             std::vector<int64_t> kernel, bool pool) {
  Window w;
  w.kernel = std::move(kernel);
  w.auto_pad = attrs.s("auto_pad");
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID")
    return node_error(
        node, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + w.auto_pad + "'");
  TRY(w.strides, per_axis(node, attrs, "strides", nsp, 1, 1));
  TRY(w.dilations, per_axis(node, attrs, "dilations", nsp, 1, 1));
  TRY(w.pads, per_axis(node, attrs, "pads", 2 * nsp, 0, 0));
  if (w.auto_pad != "NOTSET" &&
      std::any_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p != 0; }))
    return node_error(node, "explicit pads cannot be combined with auto_pad " + w.auto_pad);
  w.ceil_mode = pool && attrs.i("ceil_mode") != 0;
  for (size_t d = 0; d < nsp; ++d) {
    const int64_t k = w.kernel[d];
    if (k == 0 || k < -1)
      return node_error(node, "kernel size must be >= 1, got " + std::to_string(k) +
                                  " on spatial axis " + std::to_string(d));
    // As ONNX Runtime: a pooling window that could lie entirely in the padding is rejected.
    if (pool && k > 0 && (w.pads[d] >= k || w.pads[nsp + d] >= k))
      return node_error(node, "pads must be smaller than the kernel (" + std::to_string(k) +
                                  ") on spatial axis " + std::to_string(d));
  }
  return w;
}

// Output extent of spatial axis d (-1 when `in` or the kernel is unknown) and the applied pads.
Expected<int64_t> window_out(const ir::Node& node, const Window& w, size_t d, int64_t in,
                             int64_t* pad_begin, int64_t* pad_end) {
  const size_t nsp = w.kernel.size();
  const int64_t k = w.kernel[d], s = w.strides[d];
  int64_t pb = w.pads[d], pe = w.pads[nsp + d];
  *pad_begin = pb;
  *pad_end = pe;
  if (in < 0 || k < 0) return int64_t{-1};
  // In 128 bits: strides, dilations and pads come from the model and may be near 2^63.
  using Wide = __int128;
  const Wide ext = Wide{w.dilations[d]} * (k - 1) + 1;
  Wide out = 0, wpb = pb, wpe = pe;
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    out = (Wide{in} + s - 1) / s;
    const Wide total = std::max<Wide>(0, (out - 1) * s + ext - in);
    wpb = w.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    wpe = total - wpb;
  } else {
    if (w.auto_pad == "VALID") wpb = wpe = 0;
    const Wide span = Wide{in} + wpb + wpe - ext;
    if (span >= 0) {
      out = (w.ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (w.ceil_mode && (out - 1) * s >= in + wpb) --out;
    }
  }
  auto text = [](Wide v) { return v > Wide{INT64_MAX} || v < Wide{INT64_MIN} ? std::string("beyond 2^63") : std::to_string(static_cast<int64_t>(v)); };
  if (out < 1)
    return node_error(node, "kernel extent " + text(ext) + " does not fit the padded input (" + std::to_string(in) +
                                " + pads " + text(wpb) + ", " + text(wpe) + ") on spatial axis " + std::to_string(d));
  if (out > ir::kMaxElements || wpb > ir::kMaxElements || wpe > ir::kMaxElements)
    return node_error(node, "the output extent (" + text(out) + ") or the pads on spatial axis " + std::to_string(d) +
                                " are over the limit of 2^48");
  pb = static_cast<int64_t>(wpb);
  pe = static_cast<int64_t>(wpe);
  *pad_begin = pb;
  *pad_end = pe;
  return static_cast<int64_t>(out);
}

// Fills out[2:], pad_begin and pad_end from the input's spatial dims.
Status spatial_out(const ir::Node& node, const std::vector<Dim>& x, Geometry& g) {
  const size_t nsp = x.size() - 2;
  g.pad_begin.assign(nsp, 0);
  g.pad_end.assign(nsp, 0);
  for (size_t d = 0; d < nsp; ++d) {
    const Dim& in = x[2 + d];
    TRY(int64_t out,
        window_out(node, g.win, d, in.is_known() ? in.size : -1, &g.pad_begin[d], &g.pad_end[d]));
    g.out.push_back(out >= 0 ? Dim::known(out) : Dim::unknown());
  }
  return Status::ok();
}

Status check_spatial_rank(const ir::Node& node, const std::vector<Dim>& x) {
  if (x.size() < 3)
    return node_error(node,
                      "input 'X' must be [N, C, D1, ...] with at least one spatial axis, got " +
                          dims_to_string(x));
  return Status::ok();
}

// ---- Conv ------------------------------------------------------------------------------------

Expected<Geometry> conv_geometry(const ir::Node& node, const AttrReader& attrs,
                                 const std::vector<Dim>& x, const std::vector<Dim>& w,
                                 const std::vector<Dim>* b) {
  RETURN_IF_ERROR(check_spatial_rank(node, x));
  if (w.size() != x.size())
    return node_error(node, "input 'W' " + dims_to_string(w) + " must have the rank of 'X' " +
                                dims_to_string(x) + " ([M, C / group, k1, ...])");
  const size_t nsp = x.size() - 2;
  std::vector<int64_t> kernel(nsp, -1);
  for (size_t d = 0; d < nsp; ++d) kernel[d] = w[2 + d].is_known() ? w[2 + d].size : -1;
  if (attrs.has("kernel_shape")) {
    const std::vector<int64_t>& ks = attrs.ints("kernel_shape");
    if (ks.size() != nsp)
      return node_error(node, "attribute 'kernel_shape' has " + std::to_string(ks.size()) +
                                  " values, expected " + std::to_string(nsp));
    for (size_t d = 0; d < nsp; ++d) {
      if (kernel[d] >= 0 && kernel[d] != ks[d])
        return node_error(node, "kernel_shape " +
                                    dims_to_string(TensorType::of(DType::kF32, ks).dims) +
                                    " disagrees with 'W' " + dims_to_string(w));
      kernel[d] = ks[d];
    }
  }
  const int64_t group = attrs.i("group");
  if (group < 1) return node_error(node, "group must be >= 1, got " + std::to_string(group));
  const Dim& c = x[1];
  const Dim& wc = w[1];
  const Dim& m = w[0];
  if (c.is_known() && wc.is_known() && c.size != wc.size * group)
    return node_error(node, "input 'X' " + dims_to_string(x) + " has " + std::to_string(c.size) +
                                " channels but 'W' " + dims_to_string(w) + " expects " +
                                std::to_string(wc.size) + " per group x " + std::to_string(group) +
                                " groups = " + std::to_string(wc.size * group));
  if (m.is_known() && m.size % group != 0)
    return node_error(node, "the " + std::to_string(m.size) +
                                " filters of 'W' do not divide into " + std::to_string(group) +
                                " groups");
  if (b) {
    if (b->size() != 1)
      return node_error(node, "input 'B' must be 1-D [M], got " + dims_to_string(*b));
    if ((*b)[0].is_known() && m.is_known() && (*b)[0].size != m.size)
      return node_error(node, "input 'B' " + dims_to_string(*b) +
                                  " must have one value per filter (" + std::to_string(m.size) +
                                  ")");
  }
  Geometry g;
  TRY(g.win, read_window(node, attrs, nsp, kernel, /*pool=*/false));
  g.out = {x[0], m};
  RETURN_IF_ERROR(spatial_out(node, x, g));
  return g;
}

Expected<std::vector<TensorType>> infer_conv(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  const TensorType& x = *ctx.inputs[0];
  const TensorType& w = *ctx.inputs[1];
  if (!x.rank_known || !w.rank_known) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
  const std::vector<Dim>* b =
      ctx.has_input(2) && ctx.inputs[2]->rank_known ? &ctx.inputs[2]->dims : nullptr;
  TRY(Geometry g, conv_geometry(ctx.node, ctx.attrs(), x.dims, w.dims, b));
  return std::vector<TensorType>{TensorType(x.dtype, g.out)};
}

std::vector<Dim> dims_of(const Tensor& t) {
  return TensorType::of(t.dtype(), t.shape()).dims;
}

// The window iteration of a kernel over input `x` with geometry `g`.
Spatial spatial_of(const Shape& x, const Geometry& g) {
  std::vector<int64_t> in, out;
  for (size_t d = 2; d < x.size(); ++d) {
    in.push_back(x[d]);
    out.push_back(g.out[d].size);
  }
  return Spatial(in, out, g.win.kernel, g.win.strides, g.win.dilations, g.pad_begin, g.pad_end);
}

Status conv_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const Tensor w = widen(ctx.in(1)).contiguous();
  const bool has_b = ctx.has_input(2);
  const Tensor b = has_b ? widen(ctx.in(2)).contiguous() : Tensor();
  const std::vector<Dim> bdims = has_b ? dims_of(b) : std::vector<Dim>{};
  TRY(Geometry g,
      conv_geometry(ctx.node, ctx.attrs(), dims_of(x), dims_of(w), has_b ? &bdims : nullptr));
  TRY(Tensor y, Tensor::create(x.dtype(), TensorType(x.dtype(), g.out).static_shape()));
  const Spatial sp = spatial_of(x.shape(), g);
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), m_out = w.dim(0),
                group = ctx.attrs().i("group");
  const int64_t cg = c_in / group, mg = m_out / group;
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    T* py = y.data<T>();
    std::vector<int64_t> base(sp.nsp);
    for (int64_t n = 0; n < n_batch; ++n) {
      for (int64_t m = 0; m < m_out; ++m) {
        const T* xg = px + (n * c_in + (m / mg) * cg) * sp.in_size;  // first channel of m's group
        const T* wm = pw + m * cg * sp.num_taps;
        T* ym = py + (n * m_out + m) * sp.out_size;
        for (int64_t o = 0; o < sp.out_size; ++o) {
          sp.window_base(o, base);
          double acc = has_b ? static_cast<double>(b.data<T>()[m]) : 0.0;
          for (int64_t t = 0; t < sp.num_taps; ++t) {
            const int64_t at = sp.tap(base, t);
            if (at < 0) continue;
            for (int64_t c = 0; c < cg; ++c)
              acc += static_cast<double>(xg[c * sp.in_size + at]) *
                     static_cast<double>(wm[c * sp.num_taps + t]);
          }
          ym[o] = static_cast<T>(acc);
        }
      }
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- MaxPool, AveragePool --------------------------------------------------------------------

Expected<Geometry> pool_geometry(const ir::Node& node, const AttrReader& attrs,
                                 const std::vector<Dim>& x) {
  RETURN_IF_ERROR(check_spatial_rank(node, x));
  const size_t nsp = x.size() - 2;
  const std::vector<int64_t>& kernel = attrs.ints("kernel_shape");
  if (kernel.size() != nsp)
    return node_error(node, "attribute 'kernel_shape' has " + std::to_string(kernel.size()) +
                                " values but 'X' " + dims_to_string(x) + " has " +
                                std::to_string(nsp) + " spatial axes");
  if (std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k < 1; }))
    return node_error(node, "kernel_shape values must be >= 1");
  Geometry g;
  TRY(g.win, read_window(node, attrs, nsp, kernel, /*pool=*/true));
  g.out = {x[0], x[1]};
  RETURN_IF_ERROR(spatial_out(node, x, g));
  return g;
}

Expected<std::vector<TensorType>> infer_pool(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  const size_t nout = ctx.node.outputs.size();
  if (!x.rank_known) return std::vector<TensorType>(nout, TensorType::unranked(x.dtype));
  TRY(Geometry g, pool_geometry(ctx.node, ctx.attrs(), x.dims));
  std::vector<TensorType> out{TensorType(x.dtype, g.out)};
  if (nout > 1) out.emplace_back(DType::kI64, g.out);  // MaxPool's Indices
  return out;
}

Status maxpool_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const AttrReader attrs = ctx.attrs();
  TRY(Geometry g, pool_geometry(ctx.node, attrs, dims_of(x)));
  const Shape out_shape = TensorType(x.dtype(), g.out).static_shape();
  TRY(Tensor y, Tensor::create(x.dtype(), out_shape));
  const bool want_indices = ctx.node.outputs.size() > 1;
  TRY(Tensor indices, Tensor::create(DType::kI64, want_indices ? out_shape : Shape{0}));
  const bool column_major = attrs.i("storage_order") != 0;
  const Spatial sp = spatial_of(x.shape(), g);
  const int64_t planes = x.dim(0) * x.dim(1);
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    int64_t* pi = want_indices ? indices.data<int64_t>() : nullptr;
    std::vector<int64_t> base(sp.nsp), pos(sp.nsp);
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = px + p * sp.in_size;
      for (int64_t o = 0; o < sp.out_size; ++o) {
        sp.window_base(o, base);
        T best = std::numeric_limits<T>::lowest();
        if constexpr (std::is_floating_point_v<T>) best = -std::numeric_limits<T>::infinity();
        int64_t best_at = -1;
        for (int64_t t = 0; t < sp.num_taps; ++t) {
          const int64_t at = sp.tap(base, t);
          // A NaN in the window wins (the first one), wherever it lies, as in numpy and PyTorch.
          if (at >= 0 && (best_at < 0 || xp[at] > best || (xp[at] != xp[at] && best == best))) {
            best = xp[at];
            best_at = at;
          }
        }
        py[p * sp.out_size + o] = best;
        if (!pi) continue;
        int64_t idx = best_at < 0 ? 0 : best_at;
        if (column_major && best_at >= 0) {  // the first spatial axis varies fastest
          int64_t rest = best_at, scale = 1;
          for (size_t d = sp.nsp; d-- > 0;) {
            pos[d] = rest % sp.in[d];
            rest /= sp.in[d];
          }
          idx = 0;
          for (size_t d = 0; d < sp.nsp; ++d) {
            idx += pos[d] * scale;
            scale *= sp.in[d];
          }
        }
        pi[p * sp.out_size + o] = p * sp.in_size + idx;
      }
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  if (want_indices) ctx.outputs.push_back(indices);
  return Status::ok();
}

Status avgpool_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const AttrReader attrs = ctx.attrs();
  TRY(Geometry g, pool_geometry(ctx.node, attrs, dims_of(x)));
  TRY(Tensor y, Tensor::create(x.dtype(), TensorType(x.dtype(), g.out).static_shape()));
  const bool include_pad = attrs.i("count_include_pad") != 0;
  const Spatial sp = spatial_of(x.shape(), g);
  const int64_t planes = x.dim(0) * x.dim(1);
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::vector<int64_t> base(sp.nsp);
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = px + p * sp.in_size;
      for (int64_t o = 0; o < sp.out_size; ++o) {
        sp.window_base(o, base);
        double sum = 0;
        int64_t count = 0;
        for (int64_t t = 0; t < sp.num_taps; ++t) {
          bool in_padded = false;
          const int64_t at = sp.tap(base, t, &in_padded);
          if (at >= 0) sum += static_cast<double>(xp[at]);
          // Pads count when asked; positions past the pads (ceil_mode overhang) never do.
          if (at >= 0 || (include_pad && in_padded)) ++count;
        }
        py[p * sp.out_size + o] =
            static_cast<T>(count > 0 ? sum / static_cast<double>(count) : 0.0);
      }
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- GlobalAveragePool -----------------------------------------------------------------------

Expected<std::vector<Dim>> global_pool_dims(const ir::Node& node, const std::vector<Dim>& x) {
  if (x.size() < 2)
    return node_error(node, "input 'X' must be [N, C, D1, ...], got " + dims_to_string(x));
  std::vector<Dim> out = x;
  for (size_t d = 2; d < out.size(); ++d) out[d] = Dim::known(1);
  return out;
}

Expected<std::vector<TensorType>> infer_global_pool(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return std::vector<TensorType>{x};
  TRY(std::vector<Dim> out, global_pool_dims(ctx.node, x.dims));
  return std::vector<TensorType>{TensorType(x.dtype, out)};
}

Status global_avgpool_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(std::vector<Dim> out, global_pool_dims(ctx.node, dims_of(x)));
  TRY(Tensor y, Tensor::create(x.dtype(), TensorType(x.dtype(), out).static_shape()));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(x.data<T>()[p * size + i]);
      y.data<T>()[p] = static_cast<T>(sum / static_cast<double>(size));  // NaN for empty planes
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- registration ----------------------------------------------------------------------------

// Attributes common to Conv and the pools.
void window_attrs(OpDef& def) {
  def.attr("auto_pad", AttrKind::kString, Attribute("NOTSET"),
           "NOTSET (use pads), SAME_UPPER / SAME_LOWER (output = ceil(input / stride), the odd pad "
           "at the end / beginning) or VALID (no padding)")
      .attr("pads", AttrKind::kInts, std::nullopt,
            "[x1_begin, x2_begin, ..., x1_end, x2_end, ...]; default 0")
      .attr("strides", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1");
}

void register_conv(OpRegistry& registry) {
  OpDef def(
      "Conv", "nn",
      "N-D convolution (cross-correlation) of X [N, C, D1, ...] with filters W [M, C / group, "
      "k1, ...], plus an optional bias B [M]; Y is [N, M, O1, ...].");
  def.input("X", "[N, C, D1, D2, ...]")
      .input("W", "filters [M, C / group, k1, k2, ...]")
      .input("B", "bias [M]", /*optional=*/true)
      .output("Y", "[N, M, O1, O2, ...]");
  conv_window_attrs(def);
  def.allowed_types = kFloatTypes;
  def.infer = infer_conv;
  def.reference = conv_kernel;
  // 2 * |Y| * (C / group) * prod(kernel), plus |Y| for the bias.
  def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
    const TensorType& w = *ctx.inputs[1];
    if (!w.is_static() || out[0].static_numel() < 0) return 0.0;
    double per_output = 1;
    for (int i = 1; i < w.rank(); ++i) per_output *= static_cast<double>(w.dims[i].size);
    const double y = static_cast<double>(out[0].static_numel());
    return 2.0 * y * per_output + (ctx.has_input(2) ? y : 0.0);
  };
  registry.add(std::move(def));
}

void register_pool(OpRegistry& registry, bool max) {
  OpDef def(max ? "MaxPool" : "AveragePool", "nn",
            max ? "Maximum over sliding windows of each channel; padding never wins; a NaN in a "
                  "window makes its maximum NaN (as numpy and PyTorch; ONNX Runtime skips NaN). The optional "
                  "Indices output holds flat positions in X (storage_order 1: spatial axes "
                  "column-major)."
                : "Mean over sliding windows of each channel; count_include_pad says whether "
                  "padded positions count in the divisor.");
  def.input("X", "[N, C, D1, D2, ...]").output("Y", "[N, C, O1, O2, ...]");
  if (max) def.output("Indices", "i64 flat indices of the maxima in X", /*optional=*/true);
  def.required_attr("kernel_shape", AttrKind::kInts, "window size, one per spatial axis")
      .attr("ceil_mode", AttrKind::kInt, Attribute(0),
            "round output sizes up; windows starting past the input and leading pad are dropped")
      .attr("dilations", AttrKind::kInts, std::nullopt,
            max ? "one per spatial axis; default 1" : "one per spatial axis; default 1 (ONNX 19)");
  window_attrs(def);
  if (max) {
    def.attr("storage_order", AttrKind::kInt, Attribute(0),
             "Indices order: 0 row-major, 1 column-major");
    def.allowed_types = {DType::kF32, DType::kF16, DType::kBF16,
                         DType::kF64, DType::kI8,  DType::kU8};
    def.reference = maxpool_kernel;
  } else {
    def.attr("count_include_pad", AttrKind::kInt, Attribute(0),
             "count padded positions in the divisor");
    def.allowed_types = kFloatTypes;
    def.reference = avgpool_kernel;
  }
  def.infer = infer_pool;
  // One comparison or addition per window element: |Y| * prod(kernel_shape) (it counted |Y|,
  // whatever the window).
  def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
    const ir::Attribute* k = ctx.node.attr("kernel_shape");
    if (!k || k->kind() != AttrKind::kInts || out.empty() || out[0].static_numel() < 0) return 0.0;
    double window = 1;
    for (int64_t d : k->ints()) window *= static_cast<double>(std::max<int64_t>(d, 1));
    return static_cast<double>(out[0].static_numel()) * window;
  };
  registry.add(std::move(def));
}

void register_global_avgpool(OpRegistry& registry) {
  OpDef def("GlobalAveragePool", "nn",
            "Mean over all spatial axes: [N, C, D1, ...] -> [N, C, 1, ...].");
  def.input("X", "[N, C, D1, D2, ...]").output("Y", "[N, C, 1, 1, ...]");
  def.allowed_types = kFloatTypes;
  def.infer = infer_global_pool;
  def.reference = global_avgpool_kernel;
  registry.add(std::move(def));
}

}  // namespace

Status conv_reference(KernelContext& ctx) { return conv_kernel(ctx); }
Expected<std::vector<Dim>> conv_output_dims(const ir::Node& node, const AttrReader& attrs, const std::vector<Dim>& x,
                                            const std::vector<Dim>& w) {
  TRY(Geometry g, conv_geometry(node, attrs, x, w, nullptr));
  return g.out;
}
void conv_window_attrs(OpDef& def) {
  def.attr("dilations", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1")
      .attr("group", AttrKind::kInt, Attribute(1), "number of channel groups; C and M divide by it")
      .attr("kernel_shape", AttrKind::kInts, std::nullopt, "taken from W when absent");
  window_attrs(def);
}

Expected<std::vector<int64_t>> per_axis(const ir::Node& node, const AttrReader& attrs,
                                        const std::string& name, size_t count, int64_t dflt,
                                        int64_t min_value) {
  std::vector<int64_t> v(count, dflt);
  if (attrs.has(name)) v = attrs.ints(name);
  if (v.size() != count)
    return node_error(node, "attribute '" + name + "' has " + std::to_string(v.size()) +
                                " values, expected " + std::to_string(count));
  for (int64_t e : v)
    if (e < min_value)
      return node_error(node, "attribute '" + name + "' values must be >= " +
                                  std::to_string(min_value) + ", got " + std::to_string(e));
  return v;
}

Spatial::Spatial(std::vector<int64_t> in_sp, std::vector<int64_t> out_sp, const std::vector<int64_t>& kernel,
                 std::vector<int64_t> strides, const std::vector<int64_t>& dilations, std::vector<int64_t> pads_begin,
                 std::vector<int64_t> pads_end)
    : nsp(in_sp.size()),
      in(std::move(in_sp)),
      out(std::move(out_sp)),
      stride(std::move(strides)),
      pad_begin(std::move(pads_begin)),
      pad_end(std::move(pads_end)) {
  for (size_t d = 0; d < nsp; ++d) {
    in_size *= in[d];
    out_size *= out[d];
    num_taps *= kernel[d];
  }
  taps.resize(static_cast<size_t>(num_taps) * nsp);
  for (int64_t t = 0; t < num_taps; ++t) {
    int64_t rest = t;
    for (size_t d = nsp; d-- > 0;) {
      taps[t * nsp + d] = (rest % kernel[d]) * dilations[d];
      rest /= kernel[d];
    }
  }
}

void Spatial::window_base(int64_t o, std::vector<int64_t>& base) const {
  for (size_t d = nsp; d-- > 0;) {
    base[d] = (o % out[d]) * stride[d] - pad_begin[d];
    o /= out[d];
  }
}

int64_t Spatial::tap(const std::vector<int64_t>& base, int64_t t, bool* in_padded) const {
  int64_t flat = 0;
  bool inside = true, padded = true;
  for (size_t d = 0; d < nsp; ++d) {
    const int64_t p = base[d] + taps[t * nsp + d];
    inside &= p >= 0 && p < in[d];
    padded &= p >= -pad_begin[d] && p < in[d] + pad_end[d];
    flat = flat * in[d] + p;
  }
  if (in_padded) *in_padded = padded;
  return inside ? flat : -1;
}

void register_conv_ops(OpRegistry& registry) {
  register_conv(registry);
  register_pool(registry, /*max=*/true);
  register_pool(registry, /*max=*/false);
  register_global_avgpool(registry);
}

}  // namespace tessera::ops
