// Transposed convolution and global max pooling (ONNX opset 17): ConvTranspose, GlobalMaxPool.
// Registered by register_loss_ops (loss_ops.cpp) through register_nn_more_conv_ops.
//
// ConvTranspose geometry, per spatial axis with input extent in, stride s, dilation d, kernel k,
// output_padding op and kernel extent e = d * (k - 1) + 1:
//   full      = s * (in - 1) + op + e
//   explicit  out = full - pad_begin - pad_end
//   output_shape given, or auto_pad SAME_* (then out = in * s):
//             total = full - out; SAME_UPPER: pad_begin = floor(total / 2), else pad_begin =
//             total - floor(total / 2); pad_end = total - pad_begin
// The reference kernel scatters every input element through the kernel taps:
//   y[n, g*Mg + m, i*s + t*d - pad_begin] += x[n, g*Cg + c, i] * w[g*Cg + c, m, t].
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/ir/limits.h"
#include "engine/ops/index_internal.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

struct TransposeGeometry {
  std::vector<int64_t> kernel, strides, dilations, pad_begin;
  std::vector<Dim> out;  // [N, M, O1, ...]
  int64_t group = 1;
};

Expected<TransposeGeometry> conv_transpose_geometry(const Node& node, const AttrReader& attrs,
                                                    const std::vector<Dim>& x,
                                                    const std::vector<Dim>& w) {
  if (x.size() < 3 || w.size() != x.size())
    return node_error(node, "'X' " + dims_to_string(x) + " must be [N, C, D1, ...] and 'W' " +
                                dims_to_string(w) + " [C, M / group, k1, ...] of the same rank");
  const size_t nsp = x.size() - 2;
  TransposeGeometry g;
  g.group = attrs.i("group");
  if (g.group < 1) return node_error(node, "group must be >= 1");
  g.kernel.assign(nsp, -1);
  for (size_t d = 0; d < nsp; ++d) g.kernel[d] = w[2 + d].is_known() ? w[2 + d].size : -1;
  if (attrs.has("kernel_shape")) {
    TRY(std::vector<int64_t> ks, per_axis(node, attrs, "kernel_shape", nsp, 1, 1));
    for (size_t d = 0; d < nsp; ++d) {
      if (g.kernel[d] >= 0 && g.kernel[d] != ks[d])
        return node_error(node, "kernel_shape disagrees with 'W' " + dims_to_string(w));
      g.kernel[d] = ks[d];
    }
  }
  TRY(g.strides, per_axis(node, attrs, "strides", nsp, 1, 1));
  TRY(g.dilations, per_axis(node, attrs, "dilations", nsp, 1, 1));
  TRY(std::vector<int64_t> pads, per_axis(node, attrs, "pads", 2 * nsp, 0, 0));
  TRY(std::vector<int64_t> out_pad, per_axis(node, attrs, "output_padding", nsp, 0, 0));
  const std::string& auto_pad = attrs.s("auto_pad");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    return node_error(node, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  std::vector<int64_t> out_shape;
  if (attrs.has("output_shape")) {
    out_shape = attrs.ints("output_shape");
    if (out_shape.size() == nsp + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != nsp)
      return node_error(node, "attribute 'output_shape' must have one value per spatial axis");
  }
  if (x[1].is_known() && w[0].is_known() && x[1] != w[0])
    return node_error(node, "'X' " + dims_to_string(x) + " has " + x[1].to_string() +
                                " channels but 'W' " + dims_to_string(w) + " expects " +
                                w[0].to_string());
  if (x[1].is_known() && x[1].size % g.group != 0)
    return node_error(node, "the channels of 'X' do not divide into the groups");
  g.out = {x[0], w[1].is_known() ? Dim::known(w[1].size * g.group) : Dim::unknown()};
  g.pad_begin.assign(nsp, 0);
  for (size_t d = 0; d < nsp; ++d) {
    const Dim& in = x[2 + d];
    if (!in.is_known() || g.kernel[d] < 0) {
      g.out.push_back(out_shape.empty() ? Dim::unknown() : Dim::known(out_shape[d]));
      continue;
    }
    // In 128 bits: strides, dilations, pads and output_shape come from the model.
    using Wide = __int128;
    const Wide full = Wide{g.strides[d]} * (in.size - 1) + out_pad[d] + Wide{g.dilations[d]} * (g.kernel[d] - 1) + 1;
    Wide out = 0, pad_begin = 0;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = out_shape.empty() ? Wide{in.size} * g.strides[d] : Wide{out_shape[d]};
      const Wide total = full - out;
      // Floor division, as the ONNX reference: a negative total (output_shape past the full
      // output) leaves pad_begin 0 and adds zeros at the end.
      const Wide half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pad_begin = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      const bool valid = auto_pad == "VALID";
      pad_begin = valid ? 0 : pads[d];
      out = full - (valid ? Wide{0} : Wide{pads[d]} + pads[nsp + d]);
    }
    if (out < 1)
      return node_error(node, "the output extent on spatial axis " + std::to_string(d) + " is not positive");
    if (out > ir::kMaxElements || pad_begin > ir::kMaxElements || pad_begin < -ir::kMaxElements)
      return node_error(node, "the output extent or the pads on spatial axis " + std::to_string(d) + " are over the limit of 2^48");
    g.pad_begin[d] = static_cast<int64_t>(pad_begin);
    g.out.push_back(Dim::known(static_cast<int64_t>(out)));
  }
  return g;
}

Expected<std::vector<TensorType>> infer_conv_transpose(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  const TensorType& x = *ctx.inputs[0];
  const TensorType& w = *ctx.inputs[1];
  if (!x.rank_known || !w.rank_known) return one(TensorType::unranked(x.dtype));
  TRY(TransposeGeometry g, conv_transpose_geometry(ctx.node, ctx.attrs(), x.dims, w.dims));
  if (ctx.has_input(2) && ctx.inputs[2]->rank_known) {
    const TensorType& b = *ctx.inputs[2];
    if (b.rank() != 1 || (b.dims[0].is_known() && g.out[1].is_known() && b.dims[0] != g.out[1]))
      return node_error(ctx.node,
                        "'B' " + b.to_string() + " must be [M] = [" + g.out[1].to_string() + "]");
  }
  return one(TensorType(x.dtype, g.out));
}

std::vector<Dim> dims_of(const Tensor& t) {
  return TensorType::of(t.dtype(), t.shape()).dims;
}

Status conv_transpose_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const Tensor w = widen(ctx.in(1)).contiguous();
  TRY(TransposeGeometry g, conv_transpose_geometry(ctx.node, ctx.attrs(), dims_of(x), dims_of(w)));
  const Shape out_shape = TensorType(x.dtype(), g.out).static_shape();
  if (ctx.has_input(2) && (ctx.in(2).rank() != 1 || ctx.in(2).dim(0) != out_shape[1]))
    return node_error(ctx.node, "'B' must be [M]");
  TRY(Tensor y, make_tensor(x.dtype(), out_shape, ctx.node));
  const size_t nsp = out_shape.size() - 2;
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), m_out = out_shape[1];
  const int64_t cg = c_in / g.group, mg = m_out / g.group;
  int64_t in_size = 1, out_size = 1, taps = 1;
  for (size_t d = 0; d < nsp; ++d) {
    in_size *= x.dim(static_cast<int>(2 + d));
    out_size *= out_shape[2 + d];
    taps *= g.kernel[d];
  }
  const Shape in_sp(x.shape().begin() + 2, x.shape().end());
  const Shape k_sp(g.kernel.begin(), g.kernel.end());
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
    std::vector<int64_t> ipos(nsp, 0), kpos(nsp, 0);
    for (int64_t i = 0; i < in_size; ++i) {
      std::fill(kpos.begin(), kpos.end(), 0);
      for (int64_t t = 0; t < taps; ++t) {
        int64_t flat = 0;
        bool inside = true;
        for (size_t d = 0; d < nsp && inside; ++d) {
          const int64_t o = ipos[d] * g.strides[d] + kpos[d] * g.dilations[d] - g.pad_begin[d];
          inside = o >= 0 && o < out_shape[2 + d];
          flat = flat * out_shape[2 + d] + o;
        }
        if (inside) {
          for (int64_t n = 0; n < n_batch; ++n)
            for (int64_t c = 0; c < c_in; ++c) {
              const double xv = static_cast<double>(px[(n * c_in + c) * in_size + i]);
              const int64_t grp = c / cg;
              for (int64_t m = 0; m < mg; ++m)
                acc[static_cast<size_t>((n * m_out + grp * mg + m) * out_size + flat)] +=
                    xv * static_cast<double>(pw[(c * mg + m) * taps + t]);
            }
        }
        next_index(kpos, k_sp);
      }
      next_index(ipos, in_sp);
    }
    T* py = y.data<T>();
    const Tensor b = ctx.has_input(2) ? widen(ctx.in(2)).contiguous() : Tensor();
    for (int64_t k = 0; k < y.numel(); ++k) {
      double v = acc[static_cast<size_t>(k)];
      if (ctx.has_input(2)) v += static_cast<double>(b.data<T>()[(k / out_size) % m_out]);
      py[k] = static_cast<T>(v);
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- GlobalMaxPool ----

Expected<std::vector<TensorType>> infer_global_max_pool(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  TensorType x = *ctx.inputs[0];
  if (!x.rank_known) return one(x);
  if (x.rank() < 2) return node_error(ctx.node, "input 'X' must be [N, C, D1, ...]");
  for (size_t d = 2; d < x.dims.size(); ++d) x.dims[d] = Dim::known(1);
  return one(x);
}

Status global_max_pool_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  if (x.rank() < 2) return node_error(ctx.node, "input 'X' must be [N, C, D1, ...]");
  Shape shape = x.shape();
  for (size_t d = 2; d < shape.size(); ++d) shape[d] = 1;
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = numel_of(x.shape(), 2, x.shape().size());
  if (size == 0 && planes > 0) return node_error(ctx.node, "cannot pool an empty plane");
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      T best = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < size; ++i) {
        const T v = x.data<T>()[p * size + i];
        if (std::isnan(v) || v > best) best = v;
        if (std::isnan(v)) break;
      }
      y.data<T>()[p] = best;
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

}  // namespace

void register_nn_more_conv_ops(OpRegistry& registry) {
  {
    OpDef def("ConvTranspose", "nn",
              "Transposed (fractionally strided) convolution of X [N, C, D1, ...] with W "
              "[C, M / group, k1, ...] plus an optional bias [M]; the gradient of Conv with "
              "respect to its input.");
    def.input("X", "[N, C, D1, D2, ...]")
        .input("W", "filters [C, M / group, k1, k2, ...]")
        .input("B", "bias [M]", true)
        .output("Y", "[N, M, O1, O2, ...]");
    def.attr("auto_pad", AttrKind::kString, Attribute("NOTSET"),
             "NOTSET (use pads), SAME_UPPER / SAME_LOWER (output = input * stride), VALID")
        .attr("dilations", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1")
        .attr("group", AttrKind::kInt, Attribute(int64_t{1}), "number of channel groups")
        .attr("kernel_shape", AttrKind::kInts, std::nullopt, "taken from W when absent")
        .attr("output_padding", AttrKind::kInts, std::nullopt,
              "extra size added at the end of each spatial axis; default 0")
        .attr("output_shape", AttrKind::kInts, std::nullopt,
              "spatial output size; the pads are then derived from it")
        .attr("pads", AttrKind::kInts, std::nullopt,
              "[x1_begin, x2_begin, ..., x1_end, x2_end, ...] removed from the full output")
        .attr("strides", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1");
    def.allowed_types = kFloatTypes;
    def.infer = infer_conv_transpose;
    def.reference = conv_transpose_kernel;
    // 2 * |X| * (M / group) * prod(kernel), plus |Y| for the bias.
    def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
      const TensorType& x = *ctx.inputs[0];
      const TensorType& w = *ctx.inputs[1];
      if (!x.is_static() || !w.is_static() || out[0].static_numel() < 0) return 0.0;
      double per_input = 1;
      for (int i = 1; i < w.rank(); ++i) per_input *= static_cast<double>(w.dims[i].size);
      return 2.0 * static_cast<double>(x.static_numel()) * per_input +
             (ctx.has_input(2) ? static_cast<double>(out[0].static_numel()) : 0.0);
    };
    registry.add(std::move(def));
  }
  {
    OpDef def("GlobalMaxPool", "nn",
              "Maximum over all spatial axes: [N, C, D1, ...] -> [N, C, 1, ...]; NaN wins.");
    def.input("X", "[N, C, D1, D2, ...]").output("Y", "[N, C, 1, 1, ...]");
    def.allowed_types = kFloatTypes;
    def.infer = infer_global_max_pool;
    def.reference = global_max_pool_kernel;
    def.flops = [](const InferContext& ctx, const std::vector<TensorType>&) {
      return std::max<double>(0.0, static_cast<double>(ctx.inputs[0]->static_numel()));
    };
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
