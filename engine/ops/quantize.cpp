// Quantization ops (ONNX opset 13): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
//
//   QuantizeLinear    y = saturate(round(x / y_scale) + y_zero_point)   (round half to even)
//   DequantizeLinear  y = (x - x_zero_point) * x_scale
//   scales and zero points: per tensor (one value) or per axis (1-D, one per slice of `axis`)
//   DynamicQuantizeLinear  u8 with scale = (max(x, 0) - min(x, 0)) / 255 (1 when that is 0) and
//                          zero point round(-min(x, 0) / scale)
//   MatMulInteger, ConvInteger  i32 products of (a - a_zero_point) and (b - b_zero_point); zero
//                          points per tensor, per row of A / column of B, per filter of W
//   QLinearMatMul, QLinearConv  the same products (plus an i32 bias: QLinearConv's B, and
//                          QLinearMatMul's optional B, a Tessera extension for Gemm), scaled by
//                          a_scale * b_scale / y_scale, then quantized like QuantizeLinear
// The reference kernels compute exactly in double (integer products of 8-bit values are exact up
// to 2^53) through Conv's and MatMul's reference kernels. A scale that is zero, negative or not
// finite is an error naming the node and the element.
#include <cmath>
#include <limits>

#include "engine/ops/index_internal.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

const std::vector<DType> kQuantTypes = {DType::kU8, DType::kI8};

struct Range {
  double lo, hi;
};
Range range_of(DType dt) {
  switch (dt) {
    case DType::kU8: return {0, 255};
    case DType::kI8: return {-128, 127};
    default: return {static_cast<double>(std::numeric_limits<int32_t>::min()),
                     static_cast<double>(std::numeric_limits<int32_t>::max())};
  }
}
// saturate(round(v) + zero_point): ONNX rounds (half to even) before adding the zero point.
double quantize(double v, double zero_point, DType dt) {
  const Range r = range_of(dt);
  const double q = std::nearbyint(v) + zero_point;
  return q < r.lo ? r.lo : q > r.hi ? r.hi : q;
}

std::string input_name(const OpDef& def, size_t i) { return "'" + def.inputs[i].name + "'"; }

// A scale or zero point: per tensor (one element) or per axis (1-D with `count` elements).
Status check_param_type(const ir::Node& node, const OpDef& def, size_t i, const TensorType& t,
                        const std::vector<DType>& types, const Dim& count, const std::string& per) {
  bool type_ok = false;
  for (DType d : types) type_ok = type_ok || t.dtype == d;
  if (!type_ok) {
    std::string list;
    for (DType d : types) list += (list.empty() ? "" : " or ") + std::string(dtype_name(d));
    return node_error(node, "input " + input_name(def, i) + " must be " + list + ", got " + t.to_string());
  }
  if (!t.rank_known) return Status::ok();
  const bool scalar = t.rank() == 0 || (t.rank() == 1 && t.dims[0].is_known() && t.dims[0].size == 1);
  if (scalar) return Status::ok();
  if (t.rank() != 1 || per.empty())
    return node_error(node, "input " + input_name(def, i) + " must be a scalar" + (per.empty() ? "" : " or 1-D [" + per + "]") +
                                ", got " + t.to_string());
  if (t.dims[0].is_known() && count.is_known() && t.dims[0] != count)
    return node_error(node, "input " + input_name(def, i) + " " + t.to_string() + " must have one value per " + per +
                                " (" + count.to_string() + ")");
  return Status::ok();
}

// The values of a scale input, every one checked > 0 and finite.
Expected<std::vector<double>> scales(const KernelContext& ctx, size_t i) {
  std::vector<double> v = ctx.in(i).to_doubles();
  for (size_t k = 0; k < v.size(); ++k)
    if (!(v[k] > 0) || !std::isfinite(v[k]))
      return node_error(ctx.node, "input " + input_name(ctx.def, i) + "[" + std::to_string(k) + "] is " +
                                      std::to_string(v[k]) + ": scales must be positive and finite");
  return v;
}
std::vector<double> zero_points(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.in(i).to_doubles() : std::vector<double>{0.0};
}
// Value of per-tensor-or-per-slice parameter `p` for slice c.
double at(const std::vector<double>& p, int64_t c) { return p.size() == 1 ? p[0] : p[static_cast<size_t>(c)]; }

// Axis-slice geometry of x: element i lies in slice (i / inner) % count.
struct AxisWalk {
  int64_t count = 1, inner = 1;
  int64_t slice(int64_t i) const { return (i / inner) % count; }
};
Expected<AxisWalk> axis_walk(const KernelContext& ctx, const Tensor& x, size_t param, size_t param_count) {
  AxisWalk w;
  if (param_count <= 1 || x.rank() == 0) return w;
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  w.count = x.dim(axis);
  for (int d = axis + 1; d < x.rank(); ++d) w.inner *= x.dim(d);
  if (static_cast<int64_t>(param_count) != w.count)
    return node_error(ctx.node, "input " + input_name(ctx.def, param) + " has " + std::to_string(param_count) +
                                    " values, but axis " + std::to_string(axis) + " of the input has " +
                                    std::to_string(w.count));
  return w;
}

// Whether a scale or zero point holds one value per slice (1-D, not of length 1).
bool per_axis_param(const TensorType* t) {
  return t && t->rank_known && t->rank() == 1 && !(t->dims[0].is_known() && t->dims[0].size == 1);
}

// The size of x's `axis` when the scale or zero point is per axis (the axis checked then only,
// as ONNX ignores it for per-tensor parameters); unknown otherwise.
Expected<Dim> axis_dim(const InferContext& ctx, const TensorType& x) {
  if (!per_axis_param(ctx.inputs[1]) && !(ctx.has_input(2) && per_axis_param(ctx.inputs[2]))) return Dim::unknown();
  if (!x.rank_known) return Dim::unknown();
  if (x.rank() == 0) return node_error(ctx.node, "a per-axis scale needs an input of rank >= 1");
  TRY(int axis, normalize_axis(ctx.attrs().i("axis"), x.rank(), ctx.node));
  return x.dims[static_cast<size_t>(axis)];
}

// ---- QuantizeLinear, DequantizeLinear ----

Expected<std::vector<TensorType>> infer_quantize(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  TRY(const Dim c, axis_dim(ctx, x));
  RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, 1, *ctx.inputs[1], {DType::kF32}, c, "slice of axis"));
  DType out = DType::kU8;
  if (ctx.has_input(2)) {
    RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, 2, *ctx.inputs[2], kQuantTypes, c, "slice of axis"));
    out = ctx.inputs[2]->dtype;
  }
  return std::vector<TensorType>{TensorType(out, x.dims)};
}

Status quantize_kernel(KernelContext& ctx) {
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(std::vector<double> s, scales(ctx, 1));
  const std::vector<double> zp = zero_points(ctx, 2);
  const DType out = ctx.has_input(2) ? ctx.in(2).dtype() : DType::kU8;
  TRY(AxisWalk w, axis_walk(ctx, x, 1, std::max(s.size(), zp.size())));
  if (zp.size() > 1 && s.size() > 1 && zp.size() != s.size())
    return node_error(ctx.node, "'y_scale' and 'y_zero_point' have different lengths");
  TRY(Tensor y, make_tensor(out, x.shape(), ctx.node));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = w.slice(i);
    // In float, as ONNX's reference and ONNX Runtime divide (25.5 stays 25.5, not 25.4999...).
    const float q = static_cast<float>(x.get(i)) / static_cast<float>(at(s, c));
    y.set(i, quantize(static_cast<double>(q), at(zp, c), out));
  }
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_dequantize(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  TRY(const Dim c, axis_dim(ctx, x));
  RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, 1, *ctx.inputs[1], {DType::kF32}, c, "slice of axis"));
  if (ctx.has_input(2)) RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, 2, *ctx.inputs[2], {x.dtype}, c, "slice of axis"));
  return std::vector<TensorType>{TensorType(DType::kF32, x.dims)};
}

Status dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TRY(std::vector<double> s, scales(ctx, 1));
  const std::vector<double> zp = zero_points(ctx, 2);
  if (x.dtype() == DType::kI32)
    for (double z : zp)
      if (z != 0) return node_error(ctx.node, "an i32 input needs a zero point of 0 (ONNX)");
  TRY(AxisWalk w, axis_walk(ctx, x, 1, std::max(s.size(), zp.size())));
  TRY(Tensor y, make_tensor(DType::kF32, x.shape(), ctx.node));
  float* py = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = w.slice(i);
    py[i] = static_cast<float>((x.get(i) - at(zp, c)) * at(s, c));
  }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- DynamicQuantizeLinear ----

Expected<std::vector<TensorType>> infer_dynamic_quantize(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  return std::vector<TensorType>{TensorType(DType::kU8, ctx.inputs[0]->dims), TensorType(DType::kF32, {}),
                                 TensorType(DType::kU8, {})};
}

Status dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.get(i);
    if (!std::isfinite(v))
      return node_error(ctx.node, "input element " + std::to_string(i) + " is " + std::to_string(v) +
                                      ": a range with a NaN or infinity has no scale");
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  // In float, as ONNX's reference computes it.
  const float scale = hi == lo ? 1.0f : static_cast<float>(static_cast<float>(hi) - static_cast<float>(lo)) / 255.0f;
  const double zp = quantize(0.0 - static_cast<double>(static_cast<float>(lo) / scale), 0, DType::kU8);
  TRY(Tensor y, make_tensor(DType::kU8, x.shape(), ctx.node));
  for (int64_t i = 0; i < x.numel(); ++i)
    y.set(i, quantize(static_cast<double>(static_cast<float>(x.get(i)) / scale), zp, DType::kU8));
  ctx.outputs = {y, Tensor::scalar<float>(scale), Tensor::from_doubles(DType::kU8, {}, {zp})};
  return Status::ok();
}

// ---- integer products ----

// x - zero point as f64, the zero point per tensor or per slice of `axis`.
Tensor shifted(const Tensor& x, const std::vector<double>& zp, int axis) {
  Tensor out(DType::kF64, x.shape());
  AxisWalk w;
  if (zp.size() > 1) {
    w.count = x.dim(axis);
    for (int d = axis + 1; d < x.rank(); ++d) w.inner *= x.dim(d);
  }
  double* p = out.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = x.get(i) - at(zp, w.slice(i));
  return out;
}

// A zero point with one value, or `count` values (checked); `what` names what they follow.
Status check_count(const KernelContext& ctx, size_t i, const std::vector<double>& v, int64_t count, const std::string& what) {
  if (v.size() == 1 || static_cast<int64_t>(v.size()) == count) return Status::ok();
  return node_error(ctx.node, "input " + input_name(ctx.def, i) + " has " + std::to_string(v.size()) + " values; expected 1 or " +
                                  std::to_string(count) + " (one per " + what + ")");
}

// The exact product of the shifted operands through MatMul's or Conv's reference kernel.
Expected<Tensor> integer_product(KernelContext& ctx, bool conv, const Tensor& a, const Tensor& b) {
  KernelContext inner{ctx.node, ctx.def, {&a, &b}, {}, {}};
  RETURN_IF_ERROR(conv ? conv_reference(inner) : matmul_reference(inner));
  return inner.outputs[0];
}

// Operand positions: MatMulInteger/ConvInteger (a, b, a_zp, b_zp), QLinear* (a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp[, B]).
struct Ports {
  size_t a, a_zp, b, b_zp;
};

Expected<Tensor> shifted_product(KernelContext& ctx, bool conv, const Ports& p) {
  const Tensor& a = ctx.in(p.a);
  const Tensor& b = ctx.in(p.b);
  if (a.rank() < 1 || b.rank() < 1) return node_error(ctx.node, "inputs must have rank >= 1");
  const std::vector<double> azp = zero_points(ctx, p.a_zp), bzp = zero_points(ctx, p.b_zp);
  // A's zero point per row (axis -2 of a matrix; MatMul) or per tensor (Conv); B's per column
  // (axis -1) or per filter (axis 0 of W).
  const int a_axis = conv ? 1 : std::max(0, a.rank() - 2);
  const int b_axis = conv ? 0 : b.rank() - 1;
  if (conv && azp.size() != 1) return node_error(ctx.node, "the input's zero point must be a scalar");
  RETURN_IF_ERROR(check_count(ctx, p.a_zp, azp, a.dim(a_axis), "row of A"));
  RETURN_IF_ERROR(check_count(ctx, p.b_zp, bzp, b.dim(b_axis), conv ? "filter of W" : "column of B"));
  return integer_product(ctx, conv, shifted(a, azp, a_axis), shifted(b, bzp, b_axis));
}

Expected<std::vector<TensorType>> infer_integer_product(const InferContext& ctx, bool conv, const Ports& p, DType out,
                                                        size_t y_zp) {
  const TensorType& a = *ctx.inputs[p.a];
  const TensorType& b = *ctx.inputs[p.b];
  for (size_t i : {p.a, p.b})
    if (ctx.inputs[i]->dtype != DType::kU8 && ctx.inputs[i]->dtype != DType::kI8)
      return node_error(ctx.node, "input " + input_name(ctx.def, i) + " must be u8 or i8, got " + ctx.inputs[i]->to_string());
  if (ctx.has_input(p.a_zp)) {
    const Dim rows = !conv && a.rank_known && a.rank() >= 2 ? a.dims[a.dims.size() - 2] : Dim::unknown();
    RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, p.a_zp, *ctx.inputs[p.a_zp], {a.dtype}, rows, conv ? "" : "row of A"));
  }
  if (ctx.has_input(p.b_zp)) {
    const Dim cols = b.rank_known && b.rank() >= 1 ? (conv ? b.dims[0] : b.dims.back()) : Dim::unknown();
    RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, p.b_zp, *ctx.inputs[p.b_zp], {b.dtype}, cols,
                                     conv ? "filter of W" : "column of B"));
  }
  if (y_zp != SIZE_MAX) out = ctx.inputs[y_zp]->dtype;
  if (!a.rank_known || !b.rank_known) return std::vector<TensorType>{TensorType::unranked(out)};
  if (conv) {
    TRY(std::vector<Dim> dims, conv_output_dims(ctx.node, ctx.attrs(), a.dims, b.dims));
    return std::vector<TensorType>{TensorType(out, dims)};
  }
  TRY(std::vector<Dim> dims, matmul_output_dims(ctx.node, a.dims, b.dims));
  return std::vector<TensorType>{TensorType(out, dims)};
}

Status integer_kernel(KernelContext& ctx, bool conv) {
  TRY(Tensor acc, shifted_product(ctx, conv, {0, 2, 1, 3}));
  TRY(Tensor y, make_tensor(DType::kI32, acc.shape(), ctx.node));
  const double* pa = acc.data<double>();
  int32_t* py = y.data<int32_t>();
  for (int64_t i = 0; i < acc.numel(); ++i) py[i] = static_cast<int32_t>(quantize(pa[i], 0, DType::kI32));
  ctx.outputs = {y};
  return Status::ok();
}

// QLinear*: inputs a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp (, B for Conv).
const Ports kQLinear = {0, 2, 3, 5};

Expected<std::vector<TensorType>> infer_qlinear(const InferContext& ctx, bool conv) {
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}})
    RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, i, *ctx.inputs[i], {DType::kF32}, Dim::unknown(), i == 6 ? "" : "slice"));
  RETURN_IF_ERROR(check_param_type(ctx.node, ctx.def, 7, *ctx.inputs[7], kQuantTypes, Dim::unknown(), ""));
  if (ctx.has_input(8)) {
    const TensorType& bias = *ctx.inputs[8];
    if (bias.dtype != DType::kI32 || (bias.rank_known && bias.rank() != 1))
      return node_error(ctx.node, "input 'B' must be i32 " + std::string(conv ? "[M]" : "[N]") + ", got " + bias.to_string());
  }
  return infer_integer_product(ctx, conv, kQLinear, DType::kU8, 7);
}

Status qlinear_kernel(KernelContext& ctx, bool conv) {
  TRY(Tensor acc, shifted_product(ctx, conv, kQLinear));
  TRY(std::vector<double> as, scales(ctx, 1));
  TRY(std::vector<double> bs, scales(ctx, 4));
  TRY(std::vector<double> ys, scales(ctx, 6));
  if (ys.size() != 1) return node_error(ctx.node, "'y_scale' must be a scalar");
  const double yzp = ctx.in(7).get(0);
  const DType out = ctx.in(7).dtype();
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(3);
  // The output's slice for a's scale (rows of a matrix; per tensor for Conv) and b's (columns of
  // the output, or its channels for Conv).
  if (conv && as.size() != 1) return node_error(ctx.node, "'x_scale' must be a scalar");
  RETURN_IF_ERROR(check_count(ctx, 1, as, conv ? 1 : a.dim(std::max(0, a.rank() - 2)), "row of A"));
  RETURN_IF_ERROR(check_count(ctx, 4, bs, conv ? b.dim(0) : b.dim(b.rank() - 1), conv ? "filter of W" : "column of B"));
  std::vector<double> bias;
  if (ctx.has_input(8)) {
    bias = ctx.in(8).to_doubles();
    const int64_t want = conv ? b.dim(0) : b.dim(b.rank() - 1);
    if (static_cast<int64_t>(bias.size()) != want)
      return node_error(ctx.node, "input 'B' has " + std::to_string(bias.size()) + " values, expected one per " +
                                      (conv ? "filter (" : "column of b (") + std::to_string(want) + ")");
  }
  const Shape& s = acc.shape();
  const int r = static_cast<int>(s.size());
  // Conv: channel = axis 1 of [N, M, ...]; MatMul: row = axis -2, column = axis -1.
  int64_t inner_c = 1;
  for (int d = 2; d < r; ++d) inner_c *= s[static_cast<size_t>(d)];
  const int64_t cols = r >= 1 ? s[static_cast<size_t>(r - 1)] : 1, rows = r >= 2 ? s[static_cast<size_t>(r - 2)] : 1;
  TRY(Tensor y, make_tensor(out, s, ctx.node));
  const double* pa = acc.data<double>();
  for (int64_t i = 0; i < acc.numel(); ++i) {
    double v = pa[i];
    double scale;
    if (conv) {
      const int64_t m = (i / inner_c) % s[1];
      if (!bias.empty()) v += bias[static_cast<size_t>(m)];
      scale = at(as, 0) * at(bs, m);
    } else {
      const int64_t col = i % cols, row = (i / cols) % rows;
      if (!bias.empty()) v += bias[static_cast<size_t>(col)];
      scale = at(as, row) * at(bs, col);
    }
    y.set(i, quantize(v * scale / ys[0], yzp, out));
  }
  ctx.outputs = {y};
  return Status::ok();
}

}  // namespace

void register_quantize_ops(OpRegistry& registry) {
  {
    OpDef def("QuantizeLinear", "quantization",
              "y = saturate(round(x / y_scale) + y_zero_point), rounding half to even; per tensor or per slice of "
              "`axis`. The output takes y_zero_point's type (u8 when absent).");
    def.input("x", "f32 (or f16, bf16, i32)")
        .input("y_scale", "f32 scalar, or 1-D per slice of axis")
        .input("y_zero_point", "u8 or i8, shaped as y_scale (0 when absent)", true)
        .output("y", "x's shape, y_zero_point's type");
    def.attr("axis", AttrKind::kInt, Attribute(1), "the axis of per-axis scales");
    def.allowed_types = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32};
    def.infer = infer_quantize;
    def.reference = quantize_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("DequantizeLinear", "quantization",
              "y = (x - x_zero_point) * x_scale, per tensor or per slice of `axis`; f32 result.");
    def.input("x", "u8, i8 or i32")
        .input("x_scale", "f32 scalar, or 1-D per slice of axis")
        .input("x_zero_point", "x's type, shaped as x_scale (0 when absent)", true)
        .output("y", "f32, x's shape");
    def.attr("axis", AttrKind::kInt, Attribute(1), "the axis of per-axis scales");
    def.allowed_types = {DType::kU8, DType::kI8, DType::kI32};
    def.infer = infer_dequantize;
    def.reference = dequantize_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("DynamicQuantizeLinear", "quantization",
              "Quantizes x to u8 over its own range (which always includes 0): scale = (max - min) / 255, zero "
              "point round(-min / scale).");
    def.input("x", "f32").output("y", "u8, x's shape").output("y_scale", "f32 scalar").output("y_zero_point", "u8 scalar");
    def.allowed_types = {DType::kF32};
    def.infer = infer_dynamic_quantize;
    def.reference = dynamic_quantize_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("MatMulInteger", "quantization",
              "i32 matrix product of (A - a_zero_point) and (B - b_zero_point), NumPy's matmul broadcasting.");
    def.input("A", "u8 or i8 [..., M, K]").input("B", "u8 or i8 [..., K, N]")
        .input("a_zero_point", "A's type: scalar or [M] (per row)", true)
        .input("b_zero_point", "B's type: scalar or [N] (per column)", true)
        .output("Y", "i32 [..., M, N]");
    def.allowed_types = kQuantTypes;
    def.infer = [](const InferContext& ctx) { return infer_integer_product(ctx, false, {0, 2, 1, 3}, DType::kI32, SIZE_MAX); };
    def.reference = [](KernelContext& ctx) { return integer_kernel(ctx, false); };
    registry.add(std::move(def));
  }
  {
    OpDef def("ConvInteger", "quantization",
              "i32 convolution of (x - x_zero_point) with (w - w_zero_point); Conv's attributes.");
    def.input("x", "u8 or i8 [N, C, D1, ...]").input("w", "u8 or i8 [M, C / group, k1, ...]")
        .input("x_zero_point", "x's type, scalar", true)
        .input("w_zero_point", "w's type: scalar or [M] (per filter)", true)
        .output("y", "i32 [N, M, O1, ...]");
    conv_window_attrs(def);
    def.allowed_types = kQuantTypes;
    def.infer = [](const InferContext& ctx) { return infer_integer_product(ctx, true, {0, 2, 1, 3}, DType::kI32, SIZE_MAX); };
    def.reference = [](KernelContext& ctx) { return integer_kernel(ctx, true); };
    registry.add(std::move(def));
  }
  {
    OpDef def("QLinearMatMul", "quantization",
              "Quantized matrix product: (a - a_zero_point) x (b - b_zero_point), scaled by a_scale * b_scale / "
              "y_scale, then rounded and saturated with y_zero_point.");
    def.input("a", "u8 or i8 [..., M, K]").input("a_scale", "f32: scalar or [M]").input("a_zero_point", "a's type")
        .input("b", "u8 or i8 [..., K, N]").input("b_scale", "f32: scalar or [N]").input("b_zero_point", "b's type")
        .input("y_scale", "f32 scalar").input("y_zero_point", "u8 or i8 scalar: the output's type")
        .input("B", "i32 [N], scale a_scale * b_scale (a Tessera extension: what the optimiser's qdq-fuse makes of "
                    "a Gemm's bias; not exportable to ONNX)", true)
        .output("y", "[..., M, N]");
    def.allowed_types = kQuantTypes;
    def.infer = [](const InferContext& ctx) { return infer_qlinear(ctx, false); };
    def.reference = [](KernelContext& ctx) { return qlinear_kernel(ctx, false); };
    registry.add(std::move(def));
  }
  {
    OpDef def("QLinearConv", "quantization",
              "Quantized convolution: (x - x_zero_point) * (w - w_zero_point) + B, scaled by x_scale * w_scale / "
              "y_scale, then rounded and saturated with y_zero_point; Conv's attributes.");
    def.input("x", "u8 or i8 [N, C, D1, ...]").input("x_scale", "f32 scalar").input("x_zero_point", "x's type, scalar")
        .input("w", "u8 or i8 [M, C / group, k1, ...]").input("w_scale", "f32: scalar or [M]")
        .input("w_zero_point", "w's type: scalar or [M]").input("y_scale", "f32 scalar")
        .input("y_zero_point", "u8 or i8 scalar: the output's type").input("B", "i32 [M], scale x_scale * w_scale", true)
        .output("y", "[N, M, O1, ...]");
    conv_window_attrs(def);
    def.allowed_types = kQuantTypes;
    def.infer = [](const InferContext& ctx) { return infer_qlinear(ctx, true); };
    def.reference = [](KernelContext& ctx) { return qlinear_kernel(ctx, true); };
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
