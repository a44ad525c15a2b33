// int8 kernels: QuantizeLinear and DequantizeLinear (vectorised loops, per-tensor constant scale
// and zero point), QLinearConv and QLinearMatMul on oneDNN's int8 primitives (VNNI on Zen 4 and
// Cascade Lake on, AMX on Sapphire Rapids).
//
// QLinearConv: u8 or s8 activations, s8 weights with zero point 0 (oneDNN has no weight zero
// points), constant per-tensor x/y scales and zero points, per-tensor or per-filter w scales:
//   y = saturate(round(oscale[m] * (sum (x - x_zp) w + B[m])) + y_zp),  oscale = x_s * w_s[m] / y_s
// oneDNN's output scales and zero points compute exactly that (its bias is added to the s32
// accumulator before the scale). The node's buffers are plain NCHW; the primitive runs on its own
// preferred (channels-last) formats, with reorders of the 8-bit activations around it.
// QLinearMatMul: A [..., M, K] (batch axes folded into M), constant s8 B [K, N], the same scales
// (per column of B) and the optional i32 bias B [N] (qdq-fuse's Gemm).
// DynamicQuantizeLinear (vectorised range and quantization), MatMulInteger and ConvInteger (ONNX
// Runtime's dynamic quantizer: u8 data whose zero point comes from DynamicQuantizeLinear at run
// time, s8 weights of zero point 0) on the same primitives with a run-time source zero point and
// an s32 output.
// Anything else declines to the reference kernels (engine/ops/quantize.cpp).
#include <cmath>
#include <cstring>

#include "engine/cpu/onednn_util.h"
#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

using dt = memory::data_type;
using tag = memory::format_tag;

bool is_8bit(DType d) { return d == DType::kU8 || d == DType::kI8; }
dt onednn_type(DType d) { return d == DType::kU8 ? dt::u8 : d == DType::kI8 ? dt::s8 : dt::s32; }

// A constant input's values (nullopt when not constant).
std::optional<std::vector<double>> const_values(const KernelInit& init, size_t i) {
  const Tensor* t = constant_at(init, i);
  if (!t) return std::nullopt;
  return t->to_doubles();
}
bool positive_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!(x > 0) || !std::isfinite(x)) return false;
  return true;
}

// ---- QuantizeLinear, DequantizeLinear ----

// y = saturate(round(x / s) + zp), the division in float as the reference kernel does; compiled
// for AVX-512 / AVX2 (rounding needs SSE4.1's roundps: the baseline build would call nearbyintf).
// Plain functions per type: clang's target_clones takes no templates.
template <class Q>
__attribute__((always_inline)) inline void quantize_loop(const float* x, Q* y, int64_t n, float scale, float zp,
                                                         float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Q>(std::min(hi, std::max(lo, __builtin_nearbyintf(x[i] / scale) + zp)));
}
template <class Q>
__attribute__((always_inline)) inline void dequantize_loop(const Q* x, float* y, int64_t n, float scale, float zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zp) * scale;
}
TESSERA_VEC_CLONES void quantize_u8(const float* x, uint8_t* y, int64_t n, float scale, float zp) {
  quantize_loop(x, y, n, scale, zp, 0.f, 255.f);
}
TESSERA_VEC_CLONES void quantize_s8(const float* x, int8_t* y, int64_t n, float scale, float zp) {
  quantize_loop(x, y, n, scale, zp, -128.f, 127.f);
}
TESSERA_VEC_CLONES void dequantize_u8(const uint8_t* x, float* y, int64_t n, float scale, float zp) {
  dequantize_loop(x, y, n, scale, zp);
}
TESSERA_VEC_CLONES void dequantize_s8(const int8_t* x, float* y, int64_t n, float scale, float zp) {
  dequantize_loop(x, y, n, scale, zp);
}

// The data input and the output in the same dense layout (plain or channels-last: per-tensor
// quantization is element-wise over the same bytes), every other input plain.
bool same_dense_layout(const KernelInit& init) {
  const LayoutTag& l = init.out_layout;
  if ((!l.empty() && l != "nhwc") || layout_at(init, 0) != l) return false;
  for (size_t i = 1; i < init.in_layouts.size(); ++i)
    if (!init.in_layouts[i].empty()) return false;
  for (const ir::TensorType* t : init.in_types)
    if (t && !t->is_static()) return false;
  for (const ir::TensorType* t : init.out_types)
    if (!t || !t->is_static()) return false;
  return true;
}

Expected<KernelPtr> make_quantize(const KernelInit& init, bool quantize) {
  const std::string impl = quantize ? "cpu.vec:quantize" : "cpu.vec:dequantize";
  if (!same_dense_layout(init) || init.out_types.size() != 1) return decline(init, impl, "needs static types, plain or nhwc");
  const ir::TensorType* x = input_type(init, 0);
  if (!x || (quantize ? x->dtype != DType::kF32 : !is_8bit(x->dtype))) return decline(init, impl, "f32 <-> u8/i8 only");
  auto s = const_values(init, 1);
  auto zp = input_type(init, 2) ? const_values(init, 2) : std::optional<std::vector<double>>(std::vector<double>{0});
  if (!s || !zp || s->size() != 1 || zp->size() != 1 || !positive_finite(*s))
    return decline(init, impl, "per-axis or run-time scale and zero point");
  const int64_t n = x->static_numel();
  const float scale = static_cast<float>((*s)[0]);
  const float z = static_cast<float>((*zp)[0]);
  const bool u8 = (quantize ? init.out_types[0]->dtype : x->dtype) == DType::kU8;
  constexpr int64_t kSerial = 1 << 15;
  if (quantize)
    return make(impl, init, [=](KernelRun& run) -> Status {
      const float* px = static_cast<const float*>(run.inputs[0].data);
      for_chunks(n, kSerial, [&](int64_t b, int64_t e) {
        if (u8) quantize_u8(px + b, static_cast<uint8_t*>(run.outputs[0].data) + b, e - b, scale, z);
        else quantize_s8(px + b, static_cast<int8_t*>(run.outputs[0].data) + b, e - b, scale, z);
      });
      return Status::ok();
    });
  return make(impl, init, [=](KernelRun& run) -> Status {
    float* py = static_cast<float*>(run.outputs[0].data);
    for_chunks(n, kSerial, [&](int64_t b, int64_t e) {
      if (u8) dequantize_u8(static_cast<const uint8_t*>(run.inputs[0].data) + b, py + b, e - b, scale, z);
      else dequantize_s8(static_cast<const int8_t*>(run.inputs[0].data) + b, py + b, e - b, scale, z);
    });
    return Status::ok();
  });
}

// ---- QLinearConv, QLinearMatMul ----

// The quantisation parameters every int8 primitive here needs, read from constant inputs
// (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp, B).
struct QParams {
  std::vector<float> oscales;  // per output channel / column, or one
  int32_t src_zp = 0, dst_zp = 0;
  Tensor weights;              // s8, as given
  std::optional<Tensor> bias;  // s32
};

Expected<QParams> read_qparams(const KernelInit& init, int64_t channels) {
  QParams q;
  for (size_t i = 0; i < 8; ++i)
    if (!input_type(init, i)) return make_error("missing input");
  if (!is_8bit(input_type(init, 0)->dtype) || input_type(init, 3)->dtype != DType::kI8 ||
      !is_8bit(input_type(init, 7)->dtype))
    return make_error("needs u8/s8 activations and s8 weights");
  auto as = const_values(init, 1), azp = const_values(init, 2), ws = const_values(init, 4), wzp = const_values(init, 5),
       ys = const_values(init, 6), yzp = const_values(init, 7);
  const Tensor* w = constant_at(init, 3);
  if (!as || !azp || !ws || !wzp || !ys || !yzp || !w) return make_error("scales, zero points and weights must be constants");
  if (as->size() != 1 || azp->size() != 1 || ys->size() != 1 || yzp->size() != 1)
    return make_error("per-tensor activation scales and zero points only");
  if (!positive_finite(*as) || !positive_finite(*ws) || !positive_finite(*ys)) return make_error("a scale is not positive");
  for (double z : *wzp)
    if (z != 0) return make_error("weight zero points must be 0");
  if (ws->size() != 1 && static_cast<int64_t>(ws->size()) != channels) return make_error("weight scales");
  for (size_t c = 0; c < ws->size(); ++c)
    q.oscales.push_back(static_cast<float>((*as)[0] * (*ws)[c] / (*ys)[0]));
  q.src_zp = static_cast<int32_t>((*azp)[0]);
  q.dst_zp = static_cast<int32_t>((*yzp)[0]);
  q.weights = w->contiguous();
  if (input_type(init, 8)) {
    const Tensor* b = constant_at(init, 8);
    if (!b || b->numel() != channels) return make_error("bias must be a constant i32 per channel");
    q.bias = b->contiguous();
  }
  return q;
}

dnnl::primitive_attr int8_attr(const QParams& q) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_output_scales(q.oscales.size() > 1 ? 2 : 0, q.oscales);
  if (q.src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {q.src_zp});
  if (q.dst_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {q.dst_zp});
  return attr;
}

// One int8 primitive between plain user buffers: src and dst reordered to and from the
// primitive's formats when they differ; weights reordered once at load.
class Int8Kernel : public OneDnnKernel {
 public:
  // `zp_input` >= 0: the source zero point is that input's one value at run time (a
  // DynamicQuantizeLinear's output), of type `zp_type`; the primitive was made for a run-time zero point.
  Int8Kernel(ContextPtr ctx, std::string impl, const KernelInit& init, dnnl::primitive_desc pd, memory::desc user_src,
             memory::desc user_wei, memory::desc user_dst, QParams q, int zp_input = -1, DType zp_type = DType::kU8)
      : OneDnnKernel(std::move(ctx), std::move(impl), init.node.name),
        pd_(std::move(pd)),
        user_src_(user_src),
        user_wei_(user_wei),
        user_dst_(user_dst),
        q_(std::move(q)),
        zp_input_(zp_input),
        zp_type_(zp_type) {
    out_bytes_ = {user_dst.get_size()};
    need_scratch(pd_);
  }

 private:
  void do_load() override {
    const dnnl::engine& eng = ctx_->engine;
    prim_ = dnnl::primitive(pd_.get());
    const memory::desc src = pd_.query_md(dnnl::query::src_md), dst = pd_.query_md(dnnl::query::dst_md),
                       wei = pd_.query_md(dnnl::query::weights_md);
    scratchpad_ = memory(pd_.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    user_src_mem_ = memory(user_src_, eng, DNNL_MEMORY_NONE);
    user_dst_mem_ = memory(user_dst_, eng, DNNL_MEMORY_NONE);
    if (src != user_src_) {
      src_mem_ = memory(src, eng);
      src_reorder_ = dnnl::reorder(user_src_mem_, src_mem_);
    }
    if (dst != user_dst_) {
      dst_mem_ = memory(dst, eng);
      dst_reorder_ = dnnl::reorder(dst_mem_, user_dst_mem_);
    }
    memory user_w(user_wei_, eng, q_.weights.raw_data());
    wei_mem_ = memory(wei, eng);
    dnnl::reorder(user_w, wei_mem_).execute(stream_, user_w, wei_mem_);
    if (q_.bias) bias_mem_ = memory(memory::desc({q_.bias->numel()}, dt::s32, tag::x), eng, q_.bias->raw_data());
    if (zp_input_ >= 0) zp_mem_ = memory(memory::desc({1}, dt::s32, tag::x), eng, &zp_value_);
    stream_.wait();
  }

  void do_run(KernelRun& run) override {
    scratchpad_.set_data_handle(aligned_scratch(run));
    user_src_mem_.set_data_handle(run.inputs[0].data);
    user_dst_mem_.set_data_handle(run.outputs[0].data);
    memory src = user_src_mem_, dst = user_dst_mem_;
    if (src_mem_) {
      src_reorder_.execute(stream_, user_src_mem_, src_mem_);
      src = src_mem_;
    }
    if (dst_mem_) dst = dst_mem_;
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei_mem_}, {DNNL_ARG_DST, dst},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad_}};
    if (bias_mem_) args[DNNL_ARG_BIAS] = bias_mem_;
    if (zp_input_ >= 0) {
      const void* z = run.inputs[static_cast<size_t>(zp_input_)].data;
      zp_value_ = zp_type_ == DType::kU8 ? *static_cast<const uint8_t*>(z) : *static_cast<const int8_t*>(z);
      args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zp_mem_;
    }
    prim_.execute(stream_, args);
    if (dst_mem_) dst_reorder_.execute(stream_, dst_mem_, user_dst_mem_);
  }

  dnnl::primitive_desc pd_;
  memory::desc user_src_, user_wei_, user_dst_;
  QParams q_;
  int zp_input_;
  DType zp_type_;
  int32_t zp_value_ = 0;
  dnnl::primitive prim_;
  dnnl::reorder src_reorder_, dst_reorder_;
  memory scratchpad_, user_src_mem_, user_dst_mem_, src_mem_, dst_mem_, wei_mem_, bias_mem_, zp_mem_;
};

Expected<KernelPtr> make_qlinear_conv(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:qlinear_conv";
  // x and y plain or channels-last ("nhwc", which the layout pass keeps between int8 convolutions).
  const LayoutTag in_layout = layout_at(init, 0), out_layout = init.out_layout;
  for (const LayoutTag& l : {in_layout, out_layout})
    if (!l.empty() && l != "nhwc") return decline(init, impl, "layout " + l);
  for (size_t i = 1; i < init.in_layouts.size(); ++i)
    if (!init.in_layouts[i].empty()) return decline(init, impl, "parameters must be plain");
  if (init.out_types.size() != 1 || !init.out_types[0]->is_static()) return decline(init, impl, "needs static types");
  const ir::TensorType* xt = input_type(init, 0);
  const ir::TensorType* wt = input_type(init, 3);
  if (!xt || !wt || !xt->is_static() || !wt->is_static()) return decline(init, impl, "needs static types");
  const memory::dims x = dims_of(*xt), w = dims_of(*wt), y = dims_of(*init.out_types[0]);
  if (x.size() < 3 || x.size() > 5) return decline(init, impl, "rank");
  auto q = read_qparams(init, w[0]);
  if (!q) return decline(init, impl, q.error().message);
  const memory::dims in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end()), kernel(w.begin() + 2, w.end());
  auto geom = window_geom(init, kernel, in, out);
  if (!geom) return decline(init, impl, geom.error().message);
  const memory::dims wdims = grouped_weight_dims(w, attr_int(init, "group", 1));
  auto src_md = layout_md(x, in_layout, onednn_type(xt->dtype));
  auto dst_md = layout_md(y, out_layout, onednn_type(init.out_types[0]->dtype));
  if (!src_md || !dst_md) return decline(init, impl, "layout of this rank");
  const memory::desc user_src = *src_md, user_dst = *dst_md;
  const memory::desc user_wei = plain_md(wdims, dt::s8);
  const memory::desc src_any(x, onednn_type(xt->dtype), tag::any), dst_any(y, onednn_type(init.out_types[0]->dtype), tag::any);
  const memory::desc wei_any(wdims, dt::s8, tag::any);
  const memory::desc bias_md = q->bias ? memory::desc({w[0]}, dt::s32, tag::x) : memory::desc();
  std::unique_ptr<Int8Kernel> k;
  Status st = guarded(impl, [&] {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any,
                                      wei_any, bias_md, dst_any, geom->strides, geom->dilations, geom->pad_l, geom->pad_r);
    dnnl::convolution_forward::primitive_desc pd(d, int8_attr(*q), ctx->engine);
    k = std::make_unique<Int8Kernel>(ctx, impl, init, pd, user_src, user_wei, user_dst, std::move(*q));
  });
  if (!st.is_ok()) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

Expected<KernelPtr> make_qlinear_matmul(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:qlinear_matmul";
  if (!all_plain(init) || init.out_types.size() != 1 || !init.out_types[0]->is_static())
    return decline(init, impl, "needs plain static types");
  const ir::TensorType* at = input_type(init, 0);
  const ir::TensorType* bt = input_type(init, 3);
  if (!at || !bt || !at->is_static() || !bt->is_static() || bt->rank() != 2 || at->rank() < 2)
    return decline(init, impl, "needs A [..., M, K] and a 2-D B");
  const memory::dims a = dims_of(*at), b = dims_of(*bt);
  memory::dim m = 1;
  for (size_t i = 0; i + 1 < a.size(); ++i) m *= a[i];
  const memory::dim k = a.back(), n = b[1];
  auto q = read_qparams(init, n);
  if (!q) return decline(init, impl, q.error().message);
  const memory::desc user_src({m, k}, onednn_type(at->dtype), tag::ab);
  const memory::desc user_dst({m, n}, onednn_type(init.out_types[0]->dtype), tag::ab);
  const memory::desc user_wei({k, n}, dt::s8, tag::ab);
  const memory::desc wei_any({k, n}, dt::s8, tag::any);
  const memory::desc bias_md = q->bias ? memory::desc({1, n}, dt::s32, tag::ab) : memory::desc();
  std::unique_ptr<Int8Kernel> kern;
  Status st = guarded(impl, [&] {
    dnnl::matmul::desc d(user_src, wei_any, bias_md, user_dst);
    dnnl::matmul::primitive_desc pd(d, int8_attr(*q), ctx->engine);
    kern = std::make_unique<Int8Kernel>(ctx, impl, init, pd, user_src, user_wei, user_dst, std::move(*q));
  });
  if (!st.is_ok()) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(kern));
}

// ---- DynamicQuantizeLinear, MatMulInteger, ConvInteger (ONNX Runtime's dynamic quantizer) ----

// Min and max of x with 0 (the range DynamicQuantizeLinear takes), and whether every element is
// finite (a NaN or an infinity has no scale: the reference kernel's error).
TESSERA_VEC_CLONES void range_with_zero(const float* x, int64_t n, float* lo_out, float* hi_out, bool* finite) {
  // 16 lanes written out: a reduction through std::min stayed scalar (vminss), 2 ns per element.
  constexpr int kLanes = 16;
  float lo[kLanes] = {}, hi[kLanes] = {}, probe[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = x[i + j];
      lo[j] = v < lo[j] ? v : lo[j];
      hi[j] = v > hi[j] ? v : hi[j];
      probe[j] += v * 0.f;  // NaN when any element is NaN or infinite
    }
  for (; i < n; ++i) {
    lo[0] = x[i] < lo[0] ? x[i] : lo[0];
    hi[0] = x[i] > hi[0] ? x[i] : hi[0];
    probe[0] += x[i] * 0.f;
  }
  float l = 0.f, h = 0.f, p = 0.f;
  for (int j = 0; j < kLanes; ++j) {
    l = std::min(l, lo[j]);
    h = std::max(h, hi[j]);
    p += probe[j];
  }
  *lo_out = l;
  *hi_out = h;
  *finite = p == 0.f;
}

// y = saturate(round(x / scale) + zp) in u8 with scale = (max - min) / 255 over the range with 0
// (1 when it is empty) and zp = round(-min / scale): the reference kernel's float arithmetic.
Expected<KernelPtr> make_dynamic_quantize(const KernelInit& init) {
  const std::string impl = "cpu.vec:dynamic_quantize";
  if (!plain_static(init) || init.out_types.size() != 3 || !input_type(init, 0) || input_type(init, 0)->dtype != DType::kF32)
    return decline(init, impl, "needs plain static f32");
  const int64_t n = input_type(init, 0)->static_numel();
  constexpr int64_t kSerial = 1 << 15;
  return make(impl, init, [n](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    float lo, hi;
    bool finite;
    range_with_zero(x, n, &lo, &hi, &finite);
    if (!finite) {
      int64_t i = 0;
      while (i < n && std::isfinite(x[i])) ++i;
      return make_error("input element " + std::to_string(i) + " is " + std::to_string(x[i]) +
                        ": a range with a NaN or infinity has no scale");
    }
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zp = std::min(255.f, std::max(0.f, __builtin_nearbyintf(0.f - lo / scale)));
    uint8_t* y = static_cast<uint8_t*>(run.outputs[0].data);
    for_chunks(n, kSerial, [&](int64_t b, int64_t e) { quantize_u8(x + b, y + b, e - b, scale, zp); });
    *static_cast<float*>(run.outputs[1].data) = scale;
    *static_cast<uint8_t*>(run.outputs[2].data) = static_cast<uint8_t>(zp);
    return Status::ok();
  });
}

// The integer ops' parameters: constant s8 weights with zero point 0 (absent or constant zeros),
// and the data's zero point: absent, a constant, or one value known at run time.
struct IntegerParams {
  QParams q;
  int zp_input = -1;  // the data zero point's input when it is known only at run time
  DType zp_type = DType::kU8;
};

Expected<IntegerParams> read_integer_params(const KernelInit& init) {
  IntegerParams p;
  p.q.oscales = {1.0f};
  const ir::TensorType* xt = input_type(init, 0);
  const ir::TensorType* wt = input_type(init, 1);
  if (!xt || !wt || !is_8bit(xt->dtype) || wt->dtype != DType::kI8) return make_error("needs u8/s8 data and s8 weights");
  const Tensor* w = constant_at(init, 1);
  if (!w) return make_error("weights must be constant");
  p.q.weights = w->contiguous();
  if (input_type(init, 3)) {
    auto v = const_values(init, 3);
    if (!v) return make_error("the weights' zero point must be constant");
    for (double z : *v)
      if (z != 0) return make_error("weight zero points must be 0");
  }
  if (const ir::TensorType* xz = input_type(init, 2)) {
    if (!xz->is_static() || xz->static_numel() != 1) return make_error("per-row data zero points");
    if (auto v = const_values(init, 2)) {
      p.q.src_zp = static_cast<int32_t>((*v)[0]);
    } else {
      p.zp_input = 2;
      p.zp_type = xz->dtype;
    }
  }
  return p;
}

dnnl::primitive_attr integer_attr(const IntegerParams& p) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (p.zp_input >= 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  else if (p.q.src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {p.q.src_zp});
  return attr;
}

Expected<KernelPtr> make_matmul_integer(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:matmul_integer";
  if (!all_plain(init) || init.out_types.size() != 1 || !init.out_types[0]->is_static())
    return decline(init, impl, "needs plain static types");
  const ir::TensorType* at = input_type(init, 0);
  const ir::TensorType* bt = input_type(init, 1);
  if (!at || !bt || !at->is_static() || !bt->is_static() || bt->rank() != 2 || at->rank() < 2)
    return decline(init, impl, "needs A [..., M, K] and a 2-D B");
  auto p = read_integer_params(init);
  if (!p) return decline(init, impl, p.error().message);
  const memory::dims a = dims_of(*at), b = dims_of(*bt);
  memory::dim m = 1;
  for (size_t i = 0; i + 1 < a.size(); ++i) m *= a[i];
  const memory::dim k = a.back(), n = b[1];
  const memory::desc user_src({m, k}, onednn_type(at->dtype), tag::ab);
  const memory::desc user_dst({m, n}, dt::s32, tag::ab);
  const memory::desc user_wei({k, n}, dt::s8, tag::ab);
  std::unique_ptr<Int8Kernel> kern;
  Status st = guarded(impl, [&] {
    dnnl::matmul::desc d(user_src, memory::desc({k, n}, dt::s8, tag::any), user_dst);
    dnnl::matmul::primitive_desc pd(d, integer_attr(*p), ctx->engine);
    kern = std::make_unique<Int8Kernel>(ctx, impl, init, pd, user_src, user_wei, user_dst, std::move(p->q), p->zp_input,
                                        p->zp_type);
  });
  if (!st.is_ok()) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(kern));
}

Expected<KernelPtr> make_conv_integer(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:conv_integer";
  if (!all_plain(init) || init.out_types.size() != 1 || !init.out_types[0]->is_static())
    return decline(init, impl, "needs plain static types");
  const ir::TensorType* xt = input_type(init, 0);
  const ir::TensorType* wt = input_type(init, 1);
  if (!xt || !wt || !xt->is_static() || !wt->is_static()) return decline(init, impl, "needs static types");
  const memory::dims x = dims_of(*xt), w = dims_of(*wt), y = dims_of(*init.out_types[0]);
  if (x.size() < 3 || x.size() > 5) return decline(init, impl, "rank");
  auto p = read_integer_params(init);
  if (!p) return decline(init, impl, p.error().message);
  const memory::dims in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end()), kernel(w.begin() + 2, w.end());
  auto geom = window_geom(init, kernel, in, out);
  if (!geom) return decline(init, impl, geom.error().message);
  const memory::dims wdims = grouped_weight_dims(w, attr_int(init, "group", 1));
  const memory::desc user_src = plain_md(x, onednn_type(xt->dtype)), user_dst = plain_md(y, dt::s32);
  const memory::desc user_wei = plain_md(wdims, dt::s8);
  std::unique_ptr<Int8Kernel> k;
  Status st = guarded(impl, [&] {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      memory::desc(x, onednn_type(xt->dtype), tag::any),
                                      memory::desc(wdims, dt::s8, tag::any), memory::desc(),
                                      memory::desc(y, dt::s32, tag::any), geom->strides, geom->dilations, geom->pad_l,
                                      geom->pad_r);
    dnnl::convolution_forward::primitive_desc pd(d, integer_attr(*p), ctx->engine);
    k = std::make_unique<Int8Kernel>(ctx, impl, init, pd, user_src, user_wei, user_dst, std::move(p->q), p->zp_input,
                                     p->zp_type);
  });
  if (!st.is_ok()) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

}  // namespace

void register_int8_kernels(KernelRegistry& registry, const ContextPtr& ctx) {
  registry.add("QuantizeLinear", "cpu.vec:quantize", kVecPriority, [](const KernelInit& init) { return make_quantize(init, true); });
  registry.add("DequantizeLinear", "cpu.vec:dequantize", kVecPriority,
               [](const KernelInit& init) { return make_quantize(init, false); });
  registry.add("QLinearConv", "onednn:qlinear_conv", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_qlinear_conv(ctx, init); });
  registry.add("QLinearMatMul", "onednn:qlinear_matmul", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_qlinear_matmul(ctx, init); });
  registry.add("DynamicQuantizeLinear", "cpu.vec:dynamic_quantize", kVecPriority, make_dynamic_quantize);
  registry.add("MatMulInteger", "onednn:matmul_integer", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_matmul_integer(ctx, init); });
  registry.add("ConvInteger", "onednn:conv_integer", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_conv_integer(ctx, init); });
}

}  // namespace tessera::cpu
