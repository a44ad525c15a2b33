// Direct convolutions for few output channels (LeNet's 1 -> 6 first layer), where oneDNN's
// kernels vectorise over channels and waste most of their 16 lanes: oneDNN 2.6 ran LeNet's conv1
// forward at 38 to 60 GFLOP/s (AMD EPYC, Zen 4, 2 threads), this at 123 alone and 66 inside a
// training step. It vectorises along the output row instead: for each image and output row, 6
// output channels x 2 vectors of 16 columns accumulate in registers over every input channel and
// window tap (12 FMAs per two loads), from a zero-padded copy of the image's planes, so there is
// no bounds check in the loop.
//
//   Conv / FusedConv (activation "" or Relu, no residual) with fewer than 8 output channels.
//
// (The same loop as ConvGradInput, a full correlation of dY with flipped weights, was slower than
// oneDNN's for LeNet's conv2: it multiplies the zeros of dY's padding, twice the work. A
// ConvGradWeight along rows (25 accumulators per channel pair, one unaligned load per FMA) took
// LeNet's conv1 from 0.236 to 0.214 ms only: split cache-line loads bound it; not kept.)
//
// Plain NCHW f32, 2-D, stride 1, no dilation, one group; AVX-512 only (elsewhere they decline and
// oneDNN runs the node). The layout pass keeps convolutions with fewer than 8 output channels
// plain (layout.cpp), so these are the kernels that take them.
#include <immintrin.h>

#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

// y[n][o][r][c] = act(b[o] + sum_{i,a,e} w[o][i][a][e] * x[n][i][r + a - pad_t][c + e - pad_l]),
// x zero outside [0, ih) x [0, iw).
struct RowConv {
  int64_t n = 0, ic = 0, ih = 0, iw = 0, oc = 0, oh = 0, ow = 0, kh = 0, kw = 0, pad_t = 0, pad_l = 0;
  bool relu = false;
};

constexpr int kOcBlock = 6;  // 6 x 2 accumulators + 2 inputs + a broadcast: 15 of 32 registers

// One image's rows [0, oh) for output channels [o0, o0 + no) and columns [c0, c0 + 16 NV), from the
// padded planes `pad` (rows of `pw` floats).
template <int NV>
__attribute__((target("avx512f"))) void conv_block(const RowConv& g, const float* pad, int64_t ph, int64_t pw,
                                                   const float* w, const float* b, float* y, int64_t o0, int64_t no,
                                                   int64_t c0) {
  const int64_t wstride = g.ic * g.kh * g.kw;
  const int64_t left = g.ow - c0;  // columns still to write from c0
  __mmask16 masks[NV];
  for (int v = 0; v < NV; ++v) {
    const int64_t cols = std::clamp<int64_t>(left - 16 * v, 0, 16);
    masks[v] = static_cast<__mmask16>((1u << cols) - 1);
  }
  for (int64_t r = 0; r < g.oh; ++r) {
    __m512 acc[kOcBlock][NV];
    for (int o = 0; o < kOcBlock; ++o)
      for (int v = 0; v < NV; ++v) acc[o][v] = _mm512_setzero_ps();
    for (int64_t i = 0; i < g.ic; ++i)
      for (int64_t a = 0; a < g.kh; ++a) {
        const float* row = pad + (i * ph + r + a) * pw + c0;
        const float* wr = w + (o0 * g.ic + i) * g.kh * g.kw + a * g.kw;
        for (int64_t e = 0; e < g.kw; ++e) {
          __m512 in[NV];
          for (int v = 0; v < NV; ++v) in[v] = _mm512_loadu_ps(row + e + 16 * v);
          for (int o = 0; o < kOcBlock; ++o) {
            if (o >= no) break;
            const __m512 wv = _mm512_set1_ps(wr[o * wstride + e]);
            for (int v = 0; v < NV; ++v) acc[o][v] = _mm512_fmadd_ps(wv, in[v], acc[o][v]);
          }
        }
      }
    for (int64_t o = 0; o < no; ++o) {
      const __m512 bias = _mm512_set1_ps(b ? b[o0 + o] : 0.f);
      float* out = y + ((o0 + o) * g.oh + r) * g.ow + c0;
      for (int v = 0; v < NV; ++v) {
        __m512 s = _mm512_add_ps(acc[o][v], bias);
        if (g.relu)  // zero where s < 0: NaN stays NaN
          s = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_LT_OQ), s, _mm512_setzero_ps());
        _mm512_mask_storeu_ps(out + 16 * v, masks[v], s);
      }
    }
  }
}

// Image n's planes zero-padded into `pad` (g.ic planes of ph rows of pw floats): row r holds input
// row r - pad_t, column c input column c - pad_l, zeros elsewhere.
void pad_image(const RowConv& g, const float* x, int64_t n, int64_t ph, int64_t pw, float* pad) {
  const int64_t c_lo = std::max<int64_t>(0, g.pad_l), c_hi = std::min<int64_t>(pw, g.pad_l + g.iw);
  for (int64_t i = 0; i < g.ic; ++i)
    for (int64_t r = 0; r < ph; ++r) {
      float* dst = pad + (i * ph + r) * pw;
      const int64_t src_r = r - g.pad_t;
      if (src_r < 0 || src_r >= g.ih || c_lo >= c_hi) {
        std::fill(dst, dst + pw, 0.f);
        continue;
      }
      std::fill(dst, dst + c_lo, 0.f);
      std::memcpy(dst + c_lo, x + ((n * g.ic + i) * g.ih + src_r) * g.iw + (c_lo - g.pad_l),
                  static_cast<size_t>(c_hi - c_lo) * sizeof(float));
      std::fill(dst + c_hi, dst + pw, 0.f);
    }
}

// Every image, split over the OpenMP team; each thread pads one image's planes at a time.
// (No target attribute here: the OpenMP region is outlined without it; conv_block has it.)
void conv_rows(const RowConv& g, const float* x, const float* w, const float* b, float* y) {
  const int64_t nv = (g.ow + 15) / 16;
  const int64_t ph = g.oh + g.kh - 1, pw = nv * 16 + g.kw - 1 + 16;  // + 16: the last block may read 2 vectors
#pragma omp parallel if (g.n * g.oc * g.oh * g.ow * g.ic * g.kh * g.kw > (1 << 16))
  {
    std::vector<float> pad(static_cast<size_t>(g.ic * ph * pw), 0.f);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.n; ++n) {
      pad_image(g, x, n, ph, pw, pad.data());
      float* yn = y + n * g.oc * g.oh * g.ow;
      for (int64_t o0 = 0; o0 < g.oc; o0 += kOcBlock) {
        const int64_t no = std::min<int64_t>(kOcBlock, g.oc - o0);
        int64_t c0 = 0;
        for (; c0 + 16 < g.ow; c0 += 32) conv_block<2>(g, pad.data(), ph, pw, w, b, yn, o0, no, c0);
        if (c0 < g.ow) conv_block<1>(g, pad.data(), ph, pw, w, b, yn, o0, no, c0);
      }
    }
  }
}

bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

// Stride 1, no dilation, one group, 2-D, and the window geometry resolved (auto_pad too).
Expected<WindowGeom> unit_window(const KernelInit& init, const Shape& w, const Shape& in, const Shape& out) {
  if (w.size() != 4 || in.size() != 4 || out.size() != 4) return make_error("2-D convolutions only");
  if (attr_int(init, "group", 1) != 1) return make_error("groups");
  TRY(WindowGeom g, window_geom(init, {w[2], w[3]}, {in[2], in[3]}, {out[2], out[3]}));
  for (int d = 0; d < 2; ++d)
    if (g.strides[d] != 1 || g.dilations[d] != 0) return make_error("strides or dilations");
  return g;
}

constexpr int64_t kMaxChannels = 8;  // from 8 output channels on, oneDNN's kernels fill their vectors

Expected<KernelPtr> make_conv_small(const KernelInit& init, bool fused) {
  const std::string impl = "cpu.vec:conv_rows";
  if (!have_avx512()) return pass_to_next("needs AVX-512");
  if (!plain_static(init) || init.in_types.size() < 2 || !is_static_f32(init.in_types[0]) ||
      !is_static_f32(init.in_types[1]) || init.out_types.size() != 1 || !is_static_f32(init.out_types[0]))
    return pass_to_next("needs plain static f32");
  if (init.in_types.size() > 3 && init.in_types[3]) return pass_to_next("residual input");
  const ir::TensorType* bias = init.in_types.size() > 2 ? init.in_types[2] : nullptr;
  const std::string act = fused ? attr_string(init, "activation", "") : "";
  if (!act.empty() && act != "Relu") return pass_to_next("activation " + act);
  const Shape x = init.in_types[0]->static_shape(), w = init.in_types[1]->static_shape(),
              y = init.out_types[0]->static_shape();
  auto geom = unit_window(init, w, x, y);
  if (!geom) return pass_to_next(geom.error().message);
  if (w[0] >= kMaxChannels || y[3] < 8) return pass_to_next("8 or more output channels, or rows under 8");
  if (bias && (!is_static_f32(bias) || bias->static_shape() != Shape{w[0]})) return pass_to_next("bias");
  if (x[1] != w[1]) return pass_to_next("channels");
  RowConv g;
  g.n = x[0], g.ic = x[1], g.ih = x[2], g.iw = x[3], g.oc = w[0], g.oh = y[2], g.ow = y[3];
  g.kh = w[2], g.kw = w[3], g.pad_t = geom->pad_l[0], g.pad_l = geom->pad_l[1], g.relu = act == "Relu";
  const bool has_bias = bias != nullptr;
  return make(impl, init, [g, has_bias](KernelRun& run) -> Status {
    conv_rows(g, static_cast<const float*>(run.inputs[0].data), static_cast<const float*>(run.inputs[1].data),
              has_bias ? static_cast<const float*>(run.inputs[2].data) : nullptr,
              static_cast<float*>(run.outputs[0].data));
    return Status::ok();
  });
}

}  // namespace

void register_vec_conv(KernelRegistry& registry) {
  // Above oneDNN's: they only take what oneDNN does badly.
  registry.add("Conv", "cpu.vec:conv_rows", kOneDnnPriority + 10,
               [](const KernelInit& i) { return make_conv_small(i, false); });
  registry.add("FusedConv", "cpu.vec:conv_rows", kOneDnnPriority + 10,
               [](const KernelInit& i) { return make_conv_small(i, true); });
}

}  // namespace tessera::cpu
