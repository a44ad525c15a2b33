// Resize (ONNX opsets 13 to 17), following the ONNX reference implementation exactly.
// Registered by register_index_ops (index_ops.cpp).
//
// Algorithm (per axis, then a separable weighted sum):
//   sizes given:  out = sizes[d], scale = out / in        (doubles)
//   scales given: out = floor(in * scale[d]), scale = scales[d]
//   The output coordinate x maps to x_ori in the input through coordinate_transformation_mode,
//   with the fractional output length L = scale * in:
//     half_pixel          (x + 0.5) / scale - 0.5
//     pytorch_half_pixel  L > 1 ? (x + 0.5) / scale - 0.5 : -0.5
//     align_corners       L == 1 ? 0 : x * (in - 1) / (L - 1)
//     asymmetric          x / scale
//     tf_half_pixel_for_nn (x + 0.5) / scale   (opset 11 only)
//     tf_crop_and_resize  roi start s, end e: L > 1 ? s*(in-1) + x*(e-s)*(in-1)/(L-1)
//                         : (e-s)*(in-1)/2 + s*(in-1); outside [0, in-1] the output element is
//                         extrapolation_value
//   ratio = x_ori - floor(x_ori), or 1 when x_ori is an integer (the left neighbour is preferred).
//   The n taps (nearest and linear n = 2, cubic n = 4) are the n consecutive positions starting
//   at x_ori - ratio - (n/2 - 1), read from the input edge-padded by ceil(n/2) on both sides: the
//   window is shifted to stay inside the padded input, positions are clamped into the input.
//   Coefficients of the taps:
//     nearest  [1, 0] or [0, 1] by nearest_mode (integer x_ori: [0, 1])
//     linear   [1 - ratio, ratio]
//     cubic    Keys' kernel with a = cubic_coeff_a at distances ratio+1, ratio, 1-ratio, 2-ratio;
//              exclude_outside zeroes taps outside the input and renormalises
// Integer element types are rounded to nearest after interpolation.
#include <algorithm>
#include <cmath>

#include "engine/ir/limits.h"
#include "engine/ops/index_internal.h"
#include "engine/ops/resize.h"

namespace tessera::ops {
namespace {

using ir::Node;

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn
};
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

Expected<ResizeAttrs> read_attrs(const Node& node, const AttrReader& attrs) {
  ResizeAttrs r;
  const std::string& mode = attrs.s("mode");
  if (mode == "nearest")
    r.mode = Mode::kNearest;
  else if (mode == "linear")
    r.mode = Mode::kLinear;
  else if (mode == "cubic")
    r.mode = Mode::kCubic;
  else
    return node_error(node, "mode must be nearest, linear or cubic, got '" + mode + "'");
  const std::string& c = attrs.s("coordinate_transformation_mode");
  if (c == "half_pixel")
    r.coord = Coord::kHalfPixel;
  else if (c == "pytorch_half_pixel")
    r.coord = Coord::kPytorchHalfPixel;
  else if (c == "align_corners")
    r.coord = Coord::kAlignCorners;
  else if (c == "asymmetric")
    r.coord = Coord::kAsymmetric;
  else if (c == "tf_crop_and_resize")
    r.coord = Coord::kTfCropAndResize;
  else if (c == "tf_half_pixel_for_nn")
    r.coord = Coord::kTfHalfPixelForNn;
  else
    return node_error(node,
                      "coordinate_transformation_mode must be half_pixel, "
                      "pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize or "
                      "tf_half_pixel_for_nn, "
                      "got '" +
                          c + "'");
  const std::string& n = attrs.s("nearest_mode");
  if (n == "round_prefer_floor")
    r.nearest = Nearest::kRoundPreferFloor;
  else if (n == "round_prefer_ceil")
    r.nearest = Nearest::kRoundPreferCeil;
  else if (n == "floor")
    r.nearest = Nearest::kFloor;
  else if (n == "ceil")
    r.nearest = Nearest::kCeil;
  else
    return node_error(node,
                      "nearest_mode must be round_prefer_floor, round_prefer_ceil, floor "
                      "or ceil, got '" +
                          n + "'");
  r.cubic_a = attrs.f("cubic_coeff_a");
  r.exclude_outside = attrs.i("exclude_outside") != 0;
  r.extrapolation = attrs.f("extrapolation_value");
  return r;
}

// An input that is absent or empty (opset 13 passes "" or an empty tensor for unused inputs).
bool given(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) && ctx.in(i).numel() > 0;
}
bool given_type(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  const TensorType& t = *ctx.inputs[i];
  return !(t.is_static() && t.static_numel() == 0);
}


// The most coordinates an output axis may have: each gets its interpolation taps (two small
// vectors, ~100 bytes), so an axis of 2^31 asked for 170 GB before the output was even checked
// (the campaign's sizes [1, 1, 2^31 - 1, 2]).
constexpr int64_t kMaxResizeAxis = int64_t{1} << 24;

Status check_resize_axes(const ir::Node& node, const std::vector<int64_t>& out) {
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d] > kMaxResizeAxis)
      return node_error(node, "output axis " + std::to_string(d) + " would be " + std::to_string(out[d]) +
                                  " long, past the 2^24 coordinates a resized axis may have");
  return Status::ok();
}

// floor(scale * size) of an axis, refused unless the scale is positive and finite and the
// extent stays within ir::kMaxElements (a scale of 1e9, or 3e38, once overflowed int64).
Expected<int64_t> scaled_extent(const ir::Node& node, double scale, int64_t size, size_t axis) {
  if (!(scale > 0) || !std::isfinite(scale))
    return node_error(node, "scales must be positive and finite, got " + std::to_string(scale) + " on axis " + std::to_string(axis));
  const double extent = std::floor(scale * static_cast<double>(size));
  if (extent > static_cast<double>(ir::kMaxElements))
    return node_error(node, "scale " + std::to_string(scale) + " makes axis " + std::to_string(axis) + " " +
                                std::to_string(extent) + " long, over the limit of 2^48 elements");
  return static_cast<int64_t>(extent);
}

Expected<std::vector<TensorType>> infer_resize(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(read_attrs(ctx.node, ctx.attrs()).status());
  const TensorType& x = *ctx.inputs[0];
  const bool has_scales = given_type(ctx, 2), has_sizes = given_type(ctx, 3);
  if (has_scales == has_sizes)
    return node_error(ctx.node, "exactly one of 'scales' and 'sizes' must be given");
  if (has_scales && ctx.inputs[2]->dtype != DType::kF32)
    return node_error(ctx.node, "'scales' must be f32");
  if (has_sizes) RETURN_IF_ERROR(check_index_input(ctx, 3, false));
  if (!x.rank_known) return one(x);
  TensorType out = x;
  const size_t in = has_scales ? 2 : 3;
  const Tensor* c = ctx.constant(in);
  const int64_t len = c ? c->numel() : static_length(ctx.inputs[in]);
  if (len >= 0 && len != x.rank())
    return node_error(ctx.node, "'" + ctx.def.inputs[in].name + "' has " + std::to_string(len) +
                                    " entries for rank " + std::to_string(x.rank()));
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (!c) {
      out.dims[d] = Dim::unknown();
    } else if (has_sizes) {
      out.dims[d] = Dim::known(static_cast<int64_t>(c->get(static_cast<int64_t>(d))));
    } else if (x.dims[d].is_known()) {
      TRY(const int64_t size, scaled_extent(ctx.node, c->get(static_cast<int64_t>(d)), x.dims[d].size, d));
      out.dims[d] = Dim::known(size);
    } else if (c->get(static_cast<int64_t>(d)) != 1.0) {
      out.dims[d] = Dim::unknown();
    }
  }
  return one(out);
}

// The taps of one output coordinate on one axis: input positions and weights; empty with
// `outside` set when the coordinate must take the extrapolation value.
struct Taps {
  std::vector<int64_t> at;
  std::vector<double> w;
  bool outside = false;
};

std::vector<double> coefficients(const ResizeAttrs& a, double ratio, bool integer) {
  switch (a.mode) {
    case Mode::kNearest: {
      if (integer) return {0, 1};
      bool right = false;
      switch (a.nearest) {
        case Nearest::kRoundPreferFloor:
          right = ratio > 0.5;
          break;
        case Nearest::kRoundPreferCeil:
          right = ratio >= 0.5;
          break;
        case Nearest::kFloor:
          right = false;
          break;
        case Nearest::kCeil:
          right = true;
          break;
      }
      return {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
    }
    case Mode::kLinear:
      return {1 - ratio, ratio};
    case Mode::kCubic: {
      const double A = a.cubic_a, r = ratio, q = 1 - ratio;
      return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
              ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * q - (A + 3)) * q * q + 1,
              ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
    }
  }
  return {};
}

Taps axis_taps(const ResizeAttrs& a, int64_t x, int64_t in, double scale, double roi_start,
               double roi_end) {
  const double length = scale * static_cast<double>(in);  // fractional output length
  const double xd = static_cast<double>(x), ind = static_cast<double>(in);
  double xo = 0;
  Taps t;
  switch (a.coord) {
    case Coord::kHalfPixel:
      xo = (xd + 0.5) / scale - 0.5;
      break;
    case Coord::kPytorchHalfPixel:
      xo = length == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
      break;
    case Coord::kAlignCorners:
      xo = length == 1 ? 0.0 : xd * (ind - 1) / (length - 1);
      break;
    case Coord::kAsymmetric:
      xo = xd / scale;
      break;
    case Coord::kTfHalfPixelForNn:
      xo = (xd + 0.5) / scale;
      break;
    case Coord::kTfCropAndResize:
      xo = length == 1 ? (roi_end - roi_start) * (ind - 1) / 2
                       : xd * (roi_end - roi_start) * (ind - 1) / (length - 1);
      xo += roi_start * (ind - 1);
      if (xo < 0 || xo > ind - 1) {
        t.outside = true;
        return t;
      }
      break;
  }
  const double fl = std::floor(xo);
  const bool integer = fl == xo;
  const double ratio = integer ? 1.0 : xo - fl;
  std::vector<double> coeffs = coefficients(a, ratio, integer);
  const auto n = static_cast<int64_t>(coeffs.size());
  const int64_t pad = (n + 1) / 2;
  // First tap in padded coordinates, the window kept inside [0, in + 2 pad).
  int64_t first = static_cast<int64_t>(std::llround(xo - ratio)) - (n / 2 - 1) + pad;
  first = std::clamp<int64_t>(first, 0, std::max<int64_t>(0, in + 2 * pad - n));
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t idx = first + k - pad;  // position in input coordinates (may be outside)
    if (a.exclude_outside && (idx < 0 || idx >= in)) coeffs[static_cast<size_t>(k)] = 0;
    sum += coeffs[static_cast<size_t>(k)];
  }
  for (int64_t k = 0; k < n; ++k) {
    double w = coeffs[static_cast<size_t>(k)];
    if (a.exclude_outside) w /= sum;
    if (w == 0) continue;
    t.at.push_back(std::clamp<int64_t>(first + k - pad, 0, in - 1));
    t.w.push_back(w);
  }
  return t;
}

Status resize_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(ResizeAttrs a, read_attrs(ctx.node, ctx.attrs()));
  const int r = x.rank();
  const bool has_scales = given(ctx, 2), has_sizes = given(ctx, 3);
  if (has_scales == has_sizes)
    return node_error(ctx.node, "exactly one of 'scales' and 'sizes' must be given");
  std::vector<double> scales(static_cast<size_t>(r));
  Shape shape(static_cast<size_t>(r));
  if (has_sizes) {
    TRY(std::vector<int64_t> sizes, read_ints(ctx.in(3), ctx.node, "input 'sizes'"));
    if (static_cast<int>(sizes.size()) != r)
      return node_error(ctx.node, "'sizes' must have one entry per axis");
    for (int d = 0; d < r; ++d) {
      if (sizes[static_cast<size_t>(d)] < 0) return node_error(ctx.node, "sizes must be >= 0");
      shape[static_cast<size_t>(d)] = sizes[static_cast<size_t>(d)];
      scales[static_cast<size_t>(d)] =
          static_cast<double>(sizes[static_cast<size_t>(d)]) / static_cast<double>(x.dim(d));
    }
  } else {
    const Tensor s = ctx.in(2).contiguous();
    if (s.numel() != r) return node_error(ctx.node, "'scales' must have one entry per axis");
    for (int d = 0; d < r; ++d) {
      scales[static_cast<size_t>(d)] = s.get(d);
      TRY(shape[static_cast<size_t>(d)], scaled_extent(ctx.node, s.get(d), x.dim(d), static_cast<size_t>(d)));
    }
  }
  std::vector<double> roi(2 * static_cast<size_t>(r), 0.0);
  for (int d = 0; d < r; ++d) roi[static_cast<size_t>(r + d)] = 1.0;
  if (a.coord == Coord::kTfCropAndResize && given(ctx, 1)) {
    const Tensor t = ctx.in(1).contiguous();
    if (t.numel() != 2 * r) return node_error(ctx.node, "'roi' must hold 2 * rank values");
    for (int64_t i = 0; i < t.numel(); ++i) roi[static_cast<size_t>(i)] = t.get(i);
  }
  RETURN_IF_ERROR(check_resize_axes(ctx.node, shape));
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));  // before the taps: the size is checked first
  // taps[d][o]: the taps of output coordinate o on axis d.
  std::vector<std::vector<Taps>> taps(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) {
    if (x.dim(d) == 0 && shape[static_cast<size_t>(d)] > 0)
      return node_error(ctx.node, "cannot resize an empty axis to a non-empty one");
    for (int64_t o = 0; o < shape[static_cast<size_t>(d)]; ++o)
      taps[static_cast<size_t>(d)].push_back(
          axis_taps(a, o, x.dim(d), scales[static_cast<size_t>(d)], roi[static_cast<size_t>(d)],
                    roi[static_cast<size_t>(r + d)]));
  }
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  std::vector<int64_t> pos(static_cast<size_t>(r), 0), k(static_cast<size_t>(r), 0);
  for (int64_t e = 0; e < y.numel(); ++e) {
    bool outside = false;
    std::vector<const Taps*> cur(static_cast<size_t>(r));
    for (size_t d = 0; d < cur.size(); ++d) {
      cur[d] = &taps[d][static_cast<size_t>(pos[d])];
      outside |= cur[d]->outside;
    }
    double v = a.extrapolation;
    if (!outside) {  // sum over every combination of taps
      v = 0;
      std::fill(k.begin(), k.end(), 0);
      while (true) {
        double w = 1;
        int64_t off = 0;
        for (size_t d = 0; d < cur.size(); ++d) {
          w *= cur[d]->w[static_cast<size_t>(k[d])];
          off += cur[d]->at[static_cast<size_t>(k[d])] * xs[d];
        }
        v += w * x.get(off);
        size_t d = cur.size();
        while (d-- > 0 && ++k[d] == static_cast<int64_t>(cur[d]->at.size())) k[d] = 0;
        if (d == static_cast<size_t>(-1)) break;
      }
    }
    y.set(e, is_integer(x.dtype()) ? std::nearbyint(v) : v);
    next_index(pos, shape);
  }
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

}  // namespace

Expected<std::vector<ResizeAxisTaps>> resize_taps(const ir::Node& node, const AttrReader& attrs,
                                                  const std::vector<int64_t>& in,
                                                  const std::vector<int64_t>& out,
                                                  const std::vector<double>& scales,
                                                  const std::vector<double>& roi) {
  TRY(ResizeAttrs a, read_attrs(node, attrs));
  const size_t r = in.size();
  if (out.size() != r || scales.size() != r || roi.size() != 2 * r)
    return node_error(node, "Resize taps: shapes, scales and roi do not match the rank");
  RETURN_IF_ERROR(check_resize_axes(node, out));
  std::vector<ResizeAxisTaps> axes(r);
  for (size_t d = 0; d < r; ++d) {
    if (in[d] == 0 && out[d] > 0) return node_error(node, "cannot resize an empty axis to a non-empty one");
    for (int64_t o = 0; o < out[d]; ++o) {
      Taps t = axis_taps(a, o, in[d], scales[d], roi[d], roi[r + d]);
      axes[d].at.push_back(std::move(t.at));
      axes[d].w.push_back(std::move(t.w));
      axes[d].outside.push_back(t.outside);
    }
  }
  return axes;
}

void register_resize_op(OpRegistry& registry) {
  OpDef def("Resize", "tensor",
            "Resizes every axis by 'scales' or to 'sizes' with nearest, (multi-)linear or cubic "
            "interpolation; coordinate_transformation_mode says how output coordinates map to "
            "input ones (ONNX opset 13 to 17).");
  def.input("X", "tensor of rank >= 1")
      .input("roi", "float [2 * rank]: starts, then ends, normalised; tf_crop_and_resize only",
             true)
      .input("scales", "f32 [rank]: output / input per axis; exclusive with 'sizes'", true)
      .input("sizes", "i64 [rank]: output shape; exclusive with 'scales'", true);
  def.output("Y", "the resized tensor");
  def.attr("mode", AttrKind::kString, Attribute("nearest"), "nearest, linear or cubic")
      .attr("coordinate_transformation_mode", AttrKind::kString, Attribute("half_pixel"),
            "half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize, or "
            "tf_half_pixel_for_nn (opset 11)")
      .attr("nearest_mode", AttrKind::kString, Attribute("round_prefer_floor"),
            "rounding of mode nearest: round_prefer_floor, round_prefer_ceil, floor, ceil")
      .attr("cubic_coeff_a", AttrKind::kFloat, Attribute(-0.75),
            "the 'a' of the cubic kernel (-0.5 is TensorFlow's, -0.75 PyTorch's)")
      .attr("exclude_outside", AttrKind::kInt, Attribute(int64_t{0}),
            "1: taps outside the input get weight 0 and the rest are renormalised")
      .attr("extrapolation_value", AttrKind::kFloat, Attribute(0.0),
            "value of outputs that map outside the input (tf_crop_and_resize)");
  def.allowed_types = kNumericTypes;
  def.infer = infer_resize;
  def.reference = resize_kernel;
  // About two operations per tap: nearest 1 tap, linear 2, cubic 4 per axis.
  def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
    const int64_t n = out[0].static_numel();
    if (n < 0 || !ctx.inputs[0]->rank_known) return 0.0;
    const AttrReader attrs = ctx.attrs();
    const double per_axis = attrs.s("mode") == "cubic" ? 4 : attrs.s("mode") == "linear" ? 2 : 0;
    return 2.0 * static_cast<double>(n) * std::pow(per_axis, ctx.inputs[0]->rank());
  };
  registry.add(std::move(def));
}

}  // namespace tessera::ops
