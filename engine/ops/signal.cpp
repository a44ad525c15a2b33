// Signal processing ops (ONNX opset 17): HannWindow, HammingWindow, BlackmanWindow, DFT, STFT,
// MelWeightMatrix. Complex values are a trailing axis of 2 (real, imaginary), as ONNX has them.
//
//   windows      w[n] for n < size, over N = size (periodic) or size - 1 (symmetric):
//                Hann 0.5 - 0.5 cos(2 pi n / N); Hamming 25/46 - 21/46 cos(2 pi n / N);
//                Blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
//   DFT          X[k] = sum_n x[n] e^(-2 pi i k n / L) along `axis` (a signal axis, not the last),
//                x real ([..., 1]) or complex ([..., 2]), zero-padded or cut to dft_length L;
//                inverse: e^(+...) / L; onesided: the first L / 2 + 1 bins
//   STFT         frames of frame_length every frame_step of a [batch, length, 1 or 2] signal, times
//                the window, each DFT'd: [batch, frames, bins, 2]
//   MelWeightMatrix  [dft_length / 2 + 1, num_mel_bins] triangular filters between the mel
//                points of ONNX's reference (mel = 2595 log10(1 + hz / 700))
// output_datatype (windows, MelWeightMatrix) is ONNX's TensorProto.DataType number. The reference
// kernels compute in double with a direct O(L^2) transform.
#include <cmath>

#include "engine/ops/index_internal.h"

namespace tessera::ops {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ONNX's TensorProto.DataType numbers of the element types Tessera has.
Expected<DType> onnx_data_type(int64_t code, const ir::Node& node) {
  switch (code) {
    case 1: return DType::kF32;
    case 2: return DType::kU8;
    case 3: return DType::kI8;
    case 6: return DType::kI32;
    case 7: return DType::kI64;
    case 9: return DType::kBool;
    case 10: return DType::kF16;
    case 11: return DType::kF64;
    case 16: return DType::kBF16;
    default: return node_error(node, "output_datatype " + std::to_string(code) + " is not an element type Tessera has");
  }
}

Status check_scalar_input(const InferContext& ctx, size_t i, bool integer) {
  if (!ctx.has_input(i)) return Status::ok();
  const TensorType& t = *ctx.inputs[i];
  const bool is_int = t.dtype == DType::kI32 || t.dtype == DType::kI64;
  if (integer != is_int || (!integer && t.dtype != DType::kF32 && t.dtype != DType::kF64 && t.dtype != DType::kF16))
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be " + (integer ? "an i32 or i64" : "a float") +
                                    " scalar, got " + t.to_string());
  if (t.rank_known && t.static_numel() > 1)
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be a scalar, got " + t.to_string());
  return Status::ok();
}

// ---- windows ----

enum class Window { kHann, kHamming, kBlackman };

Expected<std::vector<TensorType>> infer_window(const InferContext& ctx) {
  RETURN_IF_ERROR(check_scalar_input(ctx, 0, true));
  TRY(DType dt, onnx_data_type(ctx.attrs().i("output_datatype"), ctx.node));
  Dim n = Dim::unknown();
  if (const Tensor* s = ctx.constant(0)) {
    TRY(int64_t size, read_scalar_int(*s, ctx.node, "size"));
    if (size < 0) return node_error(ctx.node, "size must be >= 0, got " + std::to_string(size));
    n = Dim::known(size);
  }
  return std::vector<TensorType>{TensorType(dt, {n})};
}

Status window_kernel(KernelContext& ctx, Window w) {
  TRY(int64_t size, read_scalar_int(ctx.in(0), ctx.node, "size"));
  if (size < 0) return node_error(ctx.node, "size must be >= 0, got " + std::to_string(size));
  TRY(DType dt, onnx_data_type(ctx.attrs().i("output_datatype"), ctx.node));
  const double n_den = static_cast<double>(ctx.attrs().i("periodic") != 0 ? size : size - 1);
  TRY(Tensor y, make_tensor(DType::kF64, {size}, ctx.node));
  for (int64_t n = 0; n < size; ++n) {
    const double a = n_den > 0 ? 2 * kPi * static_cast<double>(n) / n_den : 0;
    double v = 0;
    switch (w) {
      case Window::kHann: v = 0.5 - 0.5 * std::cos(a); break;
      case Window::kHamming: v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a); break;
      case Window::kBlackman: v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a); break;
    }
    y.data<double>()[n] = v;
  }
  ctx.outputs = {y.cast(dt)};
  return Status::ok();
}

// ---- DFT ----

// One transform of `len` complex samples (stride `stride` in re/im pairs) of length L to `bins`
// outputs.
void dft_1d(const double* in, int64_t len, int64_t stride, int64_t L, bool inverse, int64_t bins, double* out,
            int64_t out_stride) {
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0, im = 0;
    for (int64_t n = 0; n < std::min(len, L); ++n) {
      const double a = sign * 2 * kPi * static_cast<double>(static_cast<__int128>(k) * n % L) / static_cast<double>(L);
      const double c = std::cos(a), s = std::sin(a);
      const double xr = in[n * stride * 2], xi = in[n * stride * 2 + 1];
      re += xr * c - xi * s;
      im += xr * s + xi * c;
    }
    if (inverse) {
      re /= static_cast<double>(L);
      im /= static_cast<double>(L);
    }
    out[k * out_stride * 2] = re;
    out[k * out_stride * 2 + 1] = im;
  }
}

Expected<std::vector<TensorType>> infer_dft(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_scalar_input(ctx, 1, true));
  const TensorType& x = *ctx.inputs[0];
  const AttrReader a = ctx.attrs();
  if (a.i("inverse") != 0 && a.i("onesided") != 0) return node_error(ctx.node, "inverse and onesided cannot both be set");
  if (!x.rank_known) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
  if (x.rank() < 2) return node_error(ctx.node, "input must be [batch, ..., 1 or 2], got " + x.to_string());
  const Dim& last = x.dims.back();
  if (last.is_known() && last.size != 1 && last.size != 2)
    return node_error(ctx.node, "the last axis of the input must be 1 (real) or 2 (complex), got " + x.to_string());
  int64_t axis = a.i("axis");
  if (axis < 0) axis += x.rank();
  if (axis < 1 || axis >= x.rank() - 1)
    return node_error(ctx.node, "axis " + std::to_string(a.i("axis")) + " must be a signal axis (1 to rank - 2)");
  std::vector<Dim> out = x.dims;
  out.back() = Dim::known(2);
  Dim len = x.dims[static_cast<size_t>(axis)];
  if (ctx.has_input(1)) {
    const Tensor* l = ctx.constant(1);
    if (!l) {
      len = Dim::unknown();
    } else {
      TRY(int64_t L, read_scalar_int(*l, ctx.node, "dft_length"));
      if (L < 1) return node_error(ctx.node, "dft_length must be >= 1, got " + std::to_string(L));
      len = Dim::known(L);
    }
  }
  out[static_cast<size_t>(axis)] = a.i("onesided") != 0 && len.is_known() ? Dim::known(len.size / 2 + 1)
                                   : a.i("onesided") != 0                  ? Dim::unknown()
                                                                           : len;
  return std::vector<TensorType>{TensorType(x.dtype, out)};
}

// x as complex doubles [..., 2].
Tensor as_complex(const Tensor& x) {
  Shape s = x.shape();
  const bool real = s.back() == 1;
  s.back() = 2;
  Tensor out(DType::kF64, s);
  const int64_t n = out.numel() / 2;
  for (int64_t i = 0; i < n; ++i) {
    out.data<double>()[2 * i] = real ? x.get(i) : x.get(2 * i);
    out.data<double>()[2 * i + 1] = real ? 0.0 : x.get(2 * i + 1);
  }
  return out;
}

Status dft_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() < 2 || (x.shape().back() != 1 && x.shape().back() != 2))
    return node_error(ctx.node, "input must be [batch, ..., 1 or 2], got " + shape_to_string(x.shape()));
  const AttrReader a = ctx.attrs();
  int64_t axis = a.i("axis");
  if (axis < 0) axis += x.rank();
  if (axis < 1 || axis >= x.rank() - 1) return node_error(ctx.node, "axis must be a signal axis");
  const bool inverse = a.i("inverse") != 0, onesided = a.i("onesided") != 0;
  const Tensor c = as_complex(x);
  const int64_t n = x.dim(static_cast<int>(axis));
  int64_t L = n;
  if (ctx.has_input(1)) {
    TRY(L, read_scalar_int(ctx.in(1), ctx.node, "dft_length"));
    if (L < 1) return node_error(ctx.node, "dft_length must be >= 1, got " + std::to_string(L));
  }
  const int64_t bins = onesided ? L / 2 + 1 : L;
  Shape os = c.shape();
  os[static_cast<size_t>(axis)] = bins;
  TRY(Tensor y, make_tensor(DType::kF64, os, ctx.node));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  for (int64_t d = axis + 1; d < x.rank() - 1; ++d) inner *= x.dim(static_cast<int>(d));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      dft_1d(c.data<double>() + (o * n * inner + i) * 2, n, inner, L, inverse, bins,
             y.data<double>() + (o * bins * inner + i) * 2, inner);
  ctx.outputs = {y.cast(dt)};
  return Status::ok();
}

// ---- STFT ----

Expected<std::vector<TensorType>> infer_stft(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_scalar_input(ctx, 1, true));
  RETURN_IF_ERROR(check_scalar_input(ctx, 3, true));
  const TensorType& x = *ctx.inputs[0];
  if (x.rank_known && (x.rank() != 3 || (x.dims[2].is_known() && x.dims[2].size != 1 && x.dims[2].size != 2)))
    return node_error(ctx.node, "signal must be [batch, length, 1 or 2], got " + x.to_string());
  if (ctx.has_input(2)) {
    const TensorType& w = *ctx.inputs[2];
    if (w.rank_known && w.rank() != 1) return node_error(ctx.node, "window must be 1-D, got " + w.to_string());
  }
  Dim frames = Dim::unknown(), bins = Dim::unknown();
  const Tensor* step = ctx.constant(1);
  const Tensor* flen = ctx.has_input(3) ? ctx.constant(3) : nullptr;
  int64_t fl = -1;
  if (flen) {
    TRY(fl, read_scalar_int(*flen, ctx.node, "frame_length"));
  } else if (ctx.has_input(2) && ctx.inputs[2]->rank_known && ctx.inputs[2]->dims[0].is_known()) {
    fl = ctx.inputs[2]->dims[0].size;
  }
  if (fl == 0 || fl < -1) return node_error(ctx.node, "frame_length must be >= 1");
  if (fl > 0) bins = Dim::known(ctx.attrs().i("onesided") != 0 ? fl / 2 + 1 : fl);
  if (step && fl > 0 && x.rank_known && x.dims[1].is_known()) {
    TRY(int64_t s, read_scalar_int(*step, ctx.node, "frame_step"));
    if (s < 1) return node_error(ctx.node, "frame_step must be >= 1, got " + std::to_string(s));
    if (x.dims[1].size < fl) return node_error(ctx.node, "the signal is shorter than one frame");
    frames = Dim::known((x.dims[1].size - fl) / s + 1);
  }
  const Dim b = x.rank_known ? x.dims[0] : Dim::unknown();
  return std::vector<TensorType>{TensorType(x.dtype, {b, frames, bins, Dim::known(2)})};
}

Status stft_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2)) return node_error(ctx.node, "signal must be [batch, length, 1 or 2]");
  TRY(int64_t step, read_scalar_int(ctx.in(1), ctx.node, "frame_step"));
  if (step < 1) return node_error(ctx.node, "frame_step must be >= 1, got " + std::to_string(step));
  std::vector<double> window;
  if (ctx.has_input(2)) window = ctx.in(2).to_doubles();
  int64_t fl = static_cast<int64_t>(window.size());
  if (ctx.has_input(3)) {
    TRY(fl, read_scalar_int(ctx.in(3), ctx.node, "frame_length"));
  }
  if (fl < 1) return node_error(ctx.node, "frame_length (or the window's length) must be >= 1");
  if (!window.empty() && static_cast<int64_t>(window.size()) != fl)
    return node_error(ctx.node, "the window has " + std::to_string(window.size()) + " values, frame_length is " + std::to_string(fl));
  const int64_t B = x.dim(0), n = x.dim(1);
  if (n < fl) return node_error(ctx.node, "the signal is shorter than one frame");
  const int64_t frames = (n - fl) / step + 1, bins = ctx.attrs().i("onesided") != 0 ? fl / 2 + 1 : fl;
  const Tensor c = as_complex(x);
  TRY(Tensor y, make_tensor(DType::kF64, {B, frames, bins, 2}, ctx.node));
  std::vector<double> frame(static_cast<size_t>(fl * 2));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < fl; ++t) {
        const double w = window.empty() ? 1.0 : window[static_cast<size_t>(t)];
        const double* p = c.data<double>() + (b * n + f * step + t) * 2;
        frame[static_cast<size_t>(2 * t)] = p[0] * w;
        frame[static_cast<size_t>(2 * t + 1)] = p[1] * w;
      }
      dft_1d(frame.data(), fl, 1, fl, false, bins, y.data<double>() + ((b * frames + f) * bins) * 2, 1);
    }
  ctx.outputs = {y.cast(dt)};
  return Status::ok();
}

// ---- MelWeightMatrix ----

Expected<std::vector<TensorType>> infer_mel(const InferContext& ctx) {
  RETURN_IF_ERROR(check_scalar_input(ctx, 0, true));
  RETURN_IF_ERROR(check_scalar_input(ctx, 1, true));
  RETURN_IF_ERROR(check_scalar_input(ctx, 2, true));
  RETURN_IF_ERROR(check_scalar_input(ctx, 3, false));
  RETURN_IF_ERROR(check_scalar_input(ctx, 4, false));
  TRY(DType dt, onnx_data_type(ctx.attrs().i("output_datatype"), ctx.node));
  Dim rows = Dim::unknown(), cols = Dim::unknown();
  if (const Tensor* m = ctx.constant(0)) {
    TRY(int64_t v, read_scalar_int(*m, ctx.node, "num_mel_bins"));
    cols = Dim::known(v);
  }
  if (const Tensor* d = ctx.constant(1)) {
    TRY(int64_t v, read_scalar_int(*d, ctx.node, "dft_length"));
    rows = Dim::known(v / 2 + 1);
  }
  return std::vector<TensorType>{TensorType(dt, {rows, cols})};
}

Status mel_kernel(KernelContext& ctx) {
  TRY(int64_t mels, read_scalar_int(ctx.in(0), ctx.node, "num_mel_bins"));
  TRY(int64_t dft, read_scalar_int(ctx.in(1), ctx.node, "dft_length"));
  TRY(int64_t rate, read_scalar_int(ctx.in(2), ctx.node, "sample_rate"));
  const double lo = ctx.in(3).get(0), hi = ctx.in(4).get(0);
  if (mels < 1 || dft < 1 || rate < 1 || mels > (int64_t{1} << 30) || dft > (int64_t{1} << 40))
    return node_error(ctx.node, "num_mel_bins, dft_length and sample_rate must be >= 1 (and at most 2^30 bins, 2^40 points)");
  if (!(lo >= 0) || !(hi > lo) || hi > static_cast<double>(rate) / 2)
    return node_error(ctx.node, "the band must satisfy 0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2, got [" +
                                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
  TRY(DType dt, onnx_data_type(ctx.attrs().i("output_datatype"), ctx.node));
  const int64_t rows = dft / 2 + 1;
  const double low_mel = 2595 * std::log10(1 + lo / 700), high_mel = 2595 * std::log10(1 + hi / 700);
  const double step = (high_mel - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bin(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595) - 1);
    bin[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  TRY(Tensor y, make_tensor(DType::kF64, {rows, mels}, ctx.node));
  double* p = y.data<double>();
  auto at = [&](int64_t r, int64_t c) -> double* { return r >= 0 && r < rows ? p + r * mels + c : nullptr; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = bin[static_cast<size_t>(i)], c = bin[static_cast<size_t>(i + 1)], h = bin[static_cast<size_t>(i + 2)];
    if (c == l) {
      if (double* q = at(c, i)) *q = 1;
    } else {
      for (int64_t j = l; j <= c; ++j)
        if (double* q = at(j, i)) *q = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    if (h > c)
      for (int64_t j = c; j < h; ++j)
        if (double* q = at(j, i)) *q = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  ctx.outputs = {y.cast(dt)};
  return Status::ok();
}

void add_window(OpRegistry& registry, const std::string& name, Window w, const std::string& formula) {
  OpDef def(name, "signal", "A window of `size` values: " + formula + ", N = size (periodic) or size - 1.");
  def.input("size", "i32 or i64 scalar").output("output", "[size], output_datatype");
  def.attr("output_datatype", AttrKind::kInt, Attribute(1), "ONNX's TensorProto.DataType of the output (1: f32)")
      .attr("periodic", AttrKind::kInt, Attribute(1), "1: periodic (for spectral analysis); 0: symmetric");
  def.allowed_types = {DType::kI32, DType::kI64};
  def.infer = infer_window;
  def.reference = [w](KernelContext& ctx) { return window_kernel(ctx, w); };
  registry.add(std::move(def));
}

}  // namespace

void register_signal_ops(OpRegistry& registry) {
  add_window(registry, "HannWindow", Window::kHann, "0.5 - 0.5 cos(2 pi n / N)");
  add_window(registry, "HammingWindow", Window::kHamming, "25/46 - 21/46 cos(2 pi n / N)");
  add_window(registry, "BlackmanWindow", Window::kBlackman, "0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)");
  {
    OpDef def("DFT", "signal",
              "Discrete Fourier transform along a signal axis of real ([..., 1]) or complex ([..., 2]) input; the "
              "result is complex [..., 2]. inverse divides by the length; onesided keeps the first L / 2 + 1 bins.");
    def.input("input", "[batch, signal..., 1 or 2]")
        .input("dft_length", "i32 or i64 scalar: zero-pad or cut the signal to it (default: its length)", true)
        .output("output", "[batch, ..., bins, ..., 2]");
    def.attr("axis", AttrKind::kInt, Attribute(1), "the signal axis (1 to rank - 2)")
        .attr("inverse", AttrKind::kInt, Attribute(0), "1: the inverse transform")
        .attr("onesided", AttrKind::kInt, Attribute(0), "1: only the non-redundant half of a real signal's spectrum");
    def.allowed_types = kFloatTypes;
    def.infer = infer_dft;
    def.reference = dft_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("STFT", "signal",
              "Short-time Fourier transform: frames of frame_length every frame_step, times the window, each "
              "transformed.");
    def.input("signal", "[batch, length, 1 or 2]")
        .input("frame_step", "i32 or i64 scalar")
        .input("window", "[frame_length] (none: rectangular)", true)
        .input("frame_length", "i32 or i64 scalar (default: the window's length)", true)
        .output("output", "[batch, frames, bins, 2]");
    def.attr("onesided", AttrKind::kInt, Attribute(1), "1: the first frame_length / 2 + 1 bins");
    def.allowed_types = kFloatTypes;
    def.infer = infer_stft;
    def.reference = stft_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("MelWeightMatrix", "signal",
              "Triangular mel filters mapping the dft_length / 2 + 1 bins of a one-sided spectrum to num_mel_bins "
              "mel bands between lower_edge_hertz and upper_edge_hertz.");
    def.input("num_mel_bins", "i32 or i64 scalar").input("dft_length", "i32 or i64 scalar")
        .input("sample_rate", "i32 or i64 scalar").input("lower_edge_hertz", "float scalar")
        .input("upper_edge_hertz", "float scalar").output("output", "[dft_length / 2 + 1, num_mel_bins]");
    def.attr("output_datatype", AttrKind::kInt, Attribute(1), "ONNX's TensorProto.DataType of the output (1: f32)");
    def.allowed_types = {DType::kI32, DType::kI64};
    def.infer = infer_mel;
    def.reference = mel_kernel;
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
