// oneDNN convolution: Conv and FusedConv (bias, residual Z as a sum post-op, activation as an
// eltwise post-op), 1-3 spatial axes, groups and depthwise, any auto_pad.
//
// Layouts: src, weights and dst are created with format_tag::any so that oneDNN picks its best
// implementation; constant weights are reordered once at load; the user's src (plain or blocked,
// from in_layouts[0]) and dst (out_layout) are reordered through scratch only when the chosen
// format differs. In a blocked chain (the layout pass) the formats match and nothing is copied.
#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "engine/cpu/onednn_util.h"
#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

using dnnl::convolution_forward;

// 64-byte aligned sub-buffers of the scratch buffer: [primitive scratchpad | src copy | dst copy].
size_t align64(size_t n) {
  return (n + 63) & ~size_t{63};
}

class ConvKernel : public OneDnnKernel {
 public:
  ConvKernel(ContextPtr ctx, const KernelInit& init, std::string impl)
      : OneDnnKernel(std::move(ctx), impl, init.node.name) {}

  // Builds the primitive descriptor; errors decline.
  Status init(const KernelInit& init, bool fused) {
    const ir::TensorType& xt = *init.in_types[0];
    const ir::TensorType& wt = *init.in_types[1];
    const ir::TensorType& yt = *init.out_types[0];
    const int rank = xt.rank();
    if (rank < 3 || rank > 5 || wt.rank() != rank || yt.rank() != rank)
      return make_error("rank not handled");
    const int64_t group = attr_int(init, "group", 1);
    const memory::dims x = dims_of(xt), w = dims_of(wt), y = dims_of(yt);
    if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1])
      return make_error("group does not divide the channels");
    memory::dims kernel(w.begin() + 2, w.end());
    TRY(WindowGeom g, window_geom(init, kernel, memory::dims(x.begin() + 2, x.end()),
                                  memory::dims(y.begin() + 2, y.end())));
    TRY(src_user_md_, layout_md(x, layout_at(init, 0)));
    TRY(dst_user_md_, layout_md(y, init.out_layout));
    if (!layout_at(init, 1).empty()) return make_error("blocked weights");
    const memory::dims wd = grouped_weight_dims(w, group);
    wei_user_md_ = plain_md(wd);
    w_const_ = constant_at(init, 1);
    if (w_const_) w_copy_ = w_const_->contiguous();
    has_bias_ = input_type(init, 2) != nullptr;
    if (has_bias_) {
      if (!is_static_f32(input_type(init, 2)) || !layout_at(init, 2).empty())
        return make_error("bias");
      b_const_ = constant_at(init, 2) != nullptr;
      if (b_const_) b_copy_ = constant_at(init, 2)->contiguous();
    }
    dnnl::post_ops po;
    has_z_ = fused && input_type(init, 3) != nullptr;
    if (has_z_) {
      if (!is_static_f32(input_type(init, 3)) || dims_of(*input_type(init, 3)) != y)
        return make_error("residual Z");
      TRY(z_user_md_, layout_md(y, layout_at(init, 3)));
      po.append_sum(1.f);
    }
    dnnl::primitive_attr exact_attr = user_scratchpad_attr();  // without the activation
    exact_attr.set_post_ops(po);
    if (fused) {
      TRY(std::optional<Activation> act, read_activation(init));
      if (act) append_activation(po, *act);
      if (act) exact_ = act->exact;
    }
    // Constants holding NaN or inf take the exact path every run (when there is one).
    always_exact_ = (w_const_ && has_non_finite(w_copy_)) || (b_const_ && has_non_finite(b_copy_));
    attr_ = user_scratchpad_attr();
    attr_.set_post_ops(po);
    return guarded("conv", [&] {
      // bf16 (KernelInit::bf16): src and weights in bf16, reordered from f32 through scratch (the
      // weights once when constant), f32 accumulation and dst. A convolution oneDNN has no bf16
      // kernel for stays f32, and so does a Winograd one (bf16 has no Winograd form): its 2.25x
      // fewer multiplies matched bf16's direct kernel (ResNet-18 training 85-91 img/s either way,
      // ResNet-50 at batch 32 800-864 ms) with f32's accuracy (ResNet-50's output 0.116 -> 0.097
      // of its scale from PyTorch's, ResNet-18's 0.0105 -> 0.0057; AMD EPYC, Zen 4). Depthwise
      // convolutions stay f32 too: memory-bound, they gain nothing from bf16 products and paid for
      // the conversion of their input (MobileNetV2 at batch 1, alternated: 3.34-3.54 ms with them
      // in bf16, 2.87-3.24 ms in f32; MobileNetV3-Large 2.94-3.46 against 2.72-2.87).
      const bool depthwise = group > 1 && w[1] == 1;
      memory::data_type math = memory::data_type::f32;
      with_bf16_fallback(init.bf16 && !depthwise && !winograd_candidate(x, wd, y, g, group),
                         [&](memory::data_type t) {
                           make_pd(x, wd, y, g, group, t);
                           math = t;
                         });
      need_scratch(pd_);
      const memory::desc wei_md(wd, math, memory::format_tag::any);
      // The exact path, for runs whose inputs hold NaN or inf: a direct convolution on the src and
      // dst formats the first one chose, without an activation that drops NaN (applied after by
      // apply_activation). Winograd needs it whatever the activation: its transforms add and
      // subtract a tile's inputs, so one infinity made NaN in outputs whose windows never saw it.
      if (exact_ || alg_ == dnnl::algorithm::convolution_winograd) {
        try {
          convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      pd_.src_desc(), wei_md, has_bias_ ? pd_.bias_desc() : memory::desc(),
                                      pd_.dst_desc(), g.strides, g.dilations, g.pad_l, g.pad_r);
          exact_pd_ = convolution_forward::primitive_desc(d, exact_ ? exact_attr : attr_, ctx_->engine);
          need_scratch(exact_pd_);
          guarded_ = true;
        } catch (const dnnl::error&) {
          guarded_ = false;  // no such direct convolution: the fast path alone, as before
        }
      }
      size_t off = align64(scratch_bytes_);
      if (pd_.src_desc() != src_user_md_) {
        src_copy_ = true;
        const memory::data_type math = pd_.src_desc().data_type();
        nchw_to_nhwc_ = x.size() == 4 && src_user_md_ == plain_md(x) &&
                        pd_.src_desc() == memory::desc(x, math, memory::format_tag::acdb);
        src_dims_ = x;
        src_tmp_off_ = off;
        off += align64(pd_.src_desc().get_size());
      }
      if (pd_.dst_desc() != dst_user_md_) {
        dst_copy_ = true;
        dst_tmp_off_ = off;
        off += align64(pd_.dst_desc().get_size());
      }
      if (!w_const_ && pd_.weights_desc() != wei_user_md_) {
        wei_copy_ = true;
        wei_tmp_off_ = off;
        off += align64(pd_.weights_desc().get_size());
      }
      scratch_bytes_ = off;
      out_bytes_ = {dst_user_md_.get_size()};
    });
  }

  std::string detail() const override { return pd_.impl_info_str(); }

 protected:
  // pd_ (and alg_, prop_) for src/weights of type `math`; throws when oneDNN has no such kernel.
  void make_pd(const memory::dims& x, const memory::dims& wd, const memory::dims& y, const WindowGeom& g,
               int64_t group, memory::data_type math) {
    const memory::desc any_src(x, math, memory::format_tag::any);
    const memory::desc any_dst(y, memory::data_type::f32, memory::format_tag::any);
    // Weights are `any` even when they change every run (training): oneDNN's plain-weights
    // convolutions are its slow gemm path, and reordering weights each run costs far less.
    const memory::desc wei_md(wd, math, memory::format_tag::any);
    const memory::desc bias_md = has_bias_ ? plain_md({y[1]}) : memory::desc();
    const bool wino = math == memory::data_type::f32 && winograd_candidate(x, wd, y, g, group);
    with_conv_algorithm(wino, [&](dnnl::algorithm alg) {
      // Winograd for inference keeps its weights transformed (prepacked once); with weights that
      // change every run, its transforming reorder is C++ code that cost more than the
      // convolution (43 ms for 512 channels), so training asks for forward_training, whose
      // weights stay blocked and are transformed inside the primitive.
      const bool transform_inside = alg == dnnl::algorithm::convolution_winograd && !w_const_;
      prop_ = transform_inside ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
      convolution_forward::desc d(prop_, alg, any_src, wei_md, bias_md, any_dst, g.strides, g.dilations, g.pad_l,
                                  g.pad_r);
      pd_ = convolution_forward::primitive_desc(d, attr_, ctx_->engine);
      alg_ = alg;
    });
  }

  // Plain NCHW to NHWC, the first convolution's input: oneDNN 2.6's jit reorder took 7.9 ms for
  // a 3x224x224 image (3 channels innermost); this loop writes each pixel's channels in order,
  // as f32 or (bf16 convolutions) rounded to bf16.
  template <class Out>
  void to_channels_last(const float* src, Out* dst) const {
    const int64_t n = src_dims_[0], c = src_dims_[1], hw = src_dims_[2] * src_dims_[3];
#pragma omp parallel for collapse(2) if (n * c * hw > (1 << 16))
    for (int64_t b = 0; b < n; ++b)
      for (int64_t p0 = 0; p0 < hw; p0 += 256) {
        const int64_t p1 = std::min<int64_t>(hw, p0 + 256);
        const float* s = src + b * c * hw;
        Out* d = dst + b * c * hw;
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t p = p0; p < p1; ++p) d[p * c + ch] = convert<Out>(s[ch * hw + p]);
      }
  }
  template <class Out>
  static Out convert(float v) {
    if constexpr (std::is_same_v<Out, float>) {
      return v;
    } else {  // bf16, rounded to nearest even as oneDNN's reorders do; NaN stays NaN
      uint32_t u;
      std::memcpy(&u, &v, sizeof u);
      if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
      return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }

  void do_load() override {
    const dnnl::engine& eng = ctx_->engine;
    prim_ = convolution_forward(pd_);
    if (w_const_) {  // prepack once
      wei_mem_ = memory(pd_.weights_desc(), eng);
      memory user(wei_user_md_, eng, const_cast<void*>(w_copy_.raw_data()));
      dnnl::reorder(user, wei_mem_).execute(stream_, user, wei_mem_);
      stream_.wait();
    } else if (wei_copy_) {  // reordered into scratch each run
      wei_user_ = memory(wei_user_md_, eng, DNNL_MEMORY_NONE);
      wei_mem_ = memory(pd_.weights_desc(), eng, DNNL_MEMORY_NONE);
      wei_reorder_ = dnnl::reorder(wei_user_, wei_mem_);
    } else {
      wei_mem_ = memory(wei_user_md_, eng, DNNL_MEMORY_NONE);
    }
    if (has_bias_)
      bias_mem_ = memory(pd_.bias_desc(), eng,
                         b_const_ ? const_cast<void*>(b_copy_.raw_data()) : DNNL_MEMORY_NONE);
    src_user_ = memory(src_user_md_, eng, DNNL_MEMORY_NONE);
    dst_user_ = memory(dst_user_md_, eng, DNNL_MEMORY_NONE);
    src_conv_ = src_copy_ ? memory(pd_.src_desc(), eng, DNNL_MEMORY_NONE) : src_user_;
    dst_conv_ = dst_copy_ ? memory(pd_.dst_desc(), eng, DNNL_MEMORY_NONE) : dst_user_;
    scratchpad_ = memory(pd_.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    if (src_copy_) src_reorder_ = dnnl::reorder(src_user_, src_conv_);
    if (dst_copy_) dst_reorder_ = dnnl::reorder(dst_conv_, dst_user_);
    if (has_z_) {
      z_user_ = memory(z_user_md_, eng, DNNL_MEMORY_NONE);
      z_reorder_ = dnnl::reorder(z_user_, dst_conv_);
    }
  }

  void do_run(KernelRun& run) override {
    char* scratch = static_cast<char*>(aligned_scratch(run));
    src_user_.set_data_handle(run.inputs[0].data);
    dst_user_.set_data_handle(run.outputs[0].data);
    if (src_copy_) src_conv_.set_data_handle(scratch + src_tmp_off_);
    if (dst_copy_) dst_conv_.set_data_handle(scratch + dst_tmp_off_);
    scratchpad_.set_data_handle(scratch);
    if (wei_copy_) {
      wei_user_.set_data_handle(run.inputs[1].data);
      wei_mem_.set_data_handle(scratch + wei_tmp_off_);
      wei_reorder_.execute(stream_, wei_user_, wei_mem_);
    } else if (!w_const_) {
      wei_mem_.set_data_handle(run.inputs[1].data);
    }
    if (has_bias_ && !b_const_) bias_mem_.set_data_handle(run.inputs[2].data);
    if (src_copy_ && nchw_to_nhwc_ && pd_.src_desc().data_type() == memory::data_type::bf16) {
      to_channels_last(static_cast<const float*>(run.inputs[0].data), static_cast<uint16_t*>(src_conv_.get_data_handle()));
    } else if (src_copy_ && nchw_to_nhwc_) {
      to_channels_last(static_cast<const float*>(run.inputs[0].data), static_cast<float*>(src_conv_.get_data_handle()));
    } else if (src_copy_) {
      src_reorder_.execute(stream_, src_user_, src_conv_);
    }
    if (has_z_) {
      // The residual goes into dst first (the sum post-op adds onto it): a plain copy when the
      // formats match (oneDNN's "simple" reorder of acdb to acdb was 4x slower than memcpy).
      if (z_user_md_ == pd_.dst_desc()) {
        if (dst_conv_.get_data_handle() != run.inputs[3].data)
          parallel_copy(dst_conv_.get_data_handle(), run.inputs[3].data, z_user_md_.get_size());
      } else {
        z_user_.set_data_handle(run.inputs[3].data);
        z_reorder_.execute(stream_, z_user_, dst_conv_);
      }
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_conv_},
                                            {DNNL_ARG_WEIGHTS, wei_mem_},
                                            {DNNL_ARG_DST, dst_conv_},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad_}};
    if (has_bias_) args[DNNL_ARG_BIAS] = bias_mem_;
    if (guarded_ && (always_exact_ || inputs_non_finite(run))) {
      // A NaN or an infinity: the exact path (made the first time it is needed), on weights in
      // its own format (reordered once when constant, else each such run).
      const dnnl::engine& eng = ctx_->engine;
      if (!exact_prim_) {
        exact_prim_ = convolution_forward(exact_pd_);
        exact_wei_ = memory(exact_pd_.weights_desc(), eng);
      }
      if (!w_const_ || !exact_wei_ready_) {
        memory user(wei_user_md_, eng, w_const_ ? const_cast<void*>(w_copy_.raw_data()) : run.inputs[1].data);
        dnnl::reorder(user, exact_wei_).execute(stream_, user, exact_wei_);
        exact_wei_ready_ = w_const_ != nullptr;
      }
      args[DNNL_ARG_WEIGHTS] = exact_wei_;
      exact_prim_.execute(stream_, args);
      if (dst_copy_) dst_reorder_.execute(stream_, dst_conv_, dst_user_);
      stream_.wait();
      if (exact_) {
        auto* y = static_cast<float*>(run.outputs[0].data);
        apply_activation(*exact_, y, y, static_cast<int64_t>(dst_user_md_.get_size() / sizeof(float)));
      }
      return;
    }
    prim_.execute(stream_, args);
    if (dst_copy_) dst_reorder_.execute(stream_, dst_conv_, dst_user_);
  }

 private:
  // Whether an input read at run time (X, and W, B, Z when not constants) holds NaN or inf.
  bool inputs_non_finite(const KernelRun& run) const {
    const auto check = [&](size_t i, const memory::desc& md) {
      return i < run.inputs.size() && run.inputs[i].data &&
             has_non_finite(static_cast<const float*>(run.inputs[i].data), md.get_size() / sizeof(float));
    };
    return check(0, src_user_md_) || (!w_const_ && check(1, wei_user_md_)) ||
           (has_bias_ && !b_const_ && check(2, pd_.bias_desc())) || (has_z_ && check(3, z_user_md_));
  }

  convolution_forward::primitive_desc pd_, exact_pd_;
  dnnl::primitive_attr attr_;  // the post-ops
  convolution_forward prim_, exact_prim_;
  dnnl::algorithm alg_ = dnnl::algorithm::convolution_direct;  // the primitive's
  dnnl::prop_kind prop_ = dnnl::prop_kind::forward_inference;
  std::optional<ExactActivation> exact_;  // the activation, when its post-op drops NaN
  bool guarded_ = false;        // exact_pd_ exists: runs with NaN or inf inputs take it
  bool always_exact_ = false;   // a constant W or B holds NaN or inf
  memory exact_wei_;            // the weights in exact_pd_'s format
  bool exact_wei_ready_ = false;
  memory::desc src_user_md_, dst_user_md_, wei_user_md_, z_user_md_;
  const Tensor* w_const_ = nullptr;
  Tensor w_copy_, b_copy_;  // keep the constants alive (shared storage)
  bool has_bias_ = false, b_const_ = false, has_z_ = false;
  bool src_copy_ = false, dst_copy_ = false, wei_copy_ = false;  // the primitive's format differs from the user's
  bool nchw_to_nhwc_ = false;  // the src copy is plain NCHW to NHWC (done by to_channels_last)
  memory::dims src_dims_;
  size_t src_tmp_off_ = 0, dst_tmp_off_ = 0, wei_tmp_off_ = 0;    // where the copies live in scratch
  memory wei_mem_, wei_user_, bias_mem_, src_user_, dst_user_, src_conv_, dst_conv_, z_user_, scratchpad_;
  dnnl::reorder src_reorder_, dst_reorder_, z_reorder_, wei_reorder_;
};

Expected<KernelPtr> make_conv(const ContextPtr& ctx, const KernelInit& init, bool fused) {
  const std::string impl = fused ? "onednn:fused_conv" : "onednn:conv";
  if (init.in_types.size() < 2 || !is_static_f32(init.in_types[0]) ||
      !is_static_f32(init.in_types[1]) || init.out_types.size() != 1 ||
      !is_static_f32(init.out_types[0]))
    return decline(init, impl, "needs static f32 X, W and Y");
  auto k = std::make_unique<ConvKernel>(ctx, init, impl);
  Status st = k->init(init, fused);
  if (!st) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

// ConvTranspose as oneDNN's deconvolution: plain or channels-last src and dst, explicit pads (auto_pad NOTSET, no
// output_shape: the right pad comes from the inferred output, so output_padding is honoured),
// groups, dilations. ONNX's W [C_in, C_out / group, k...] is oneDNN's weights {[G,] OC/G, IC/G, k}
// read in the iohw / giohw family of formats; a constant W is reordered once, here, into the format
// the primitive prefers.
Expected<KernelPtr> make_deconv(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:deconv";
  if (init.in_types.size() < 2 || !is_static_f32(init.in_types[0]) || !is_static_f32(init.in_types[1]) ||
      init.out_types.size() != 1 || !is_static_f32(init.out_types[0]))
    return decline(init, impl, "needs static f32 X, W and Y");
  // X and Y plain or channels-last (where oneDNN has a jit deconvolution; on plain NCHW it runs a
  // gemm with col2im, 7x slower on UNet's up-sampling); W and B plain.
  for (size_t i = 0; i < init.in_layouts.size(); ++i)
    if (!init.in_layouts[i].empty() && !(i == 0 && init.in_layouts[i] == "nhwc"))
      return decline(init, impl, "layouts other than plain and nhwc");
  if (!init.out_layout.empty() && init.out_layout != "nhwc") return decline(init, impl, "output layout");
  if (attr_string(init, "auto_pad", "NOTSET") != "NOTSET" || !attr_ints(init, "output_shape", {}).empty())
    return decline(init, impl, "auto_pad and output_shape are not mapped");
  const memory::dims x = dims_of(*init.in_types[0]), w = dims_of(*init.in_types[1]), y = dims_of(*init.out_types[0]);
  const size_t rank = x.size(), nsp = rank - 2;
  if (rank < 3 || rank > 5 || w.size() != rank || y.size() != rank)
    return decline(init, impl, "rank not handled");
  const int64_t group = attr_int(init, "group", 1);
  if (group < 1 || x[1] % group != 0 || w[0] != x[1] || y[1] != w[1] * group)
    return decline(init, impl, "channels and group do not match");
  const std::vector<int64_t> strides = attr_ints(init, "strides", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> dil = attr_ints(init, "dilations", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> pads = attr_ints(init, "pads", std::vector<int64_t>(2 * nsp, 0));
  if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp)
    return decline(init, impl, "window attributes do not match the spatial rank");
  memory::dims st, di, pl, pr;
  for (size_t d = 0; d < nsp; ++d) {
    if (strides[d] < 1 || dil[d] < 1) return decline(init, impl, "bad window attribute");
    const int64_t full = (x[2 + d] - 1) * strides[d] + dil[d] * (w[2 + d] - 1) + 1;
    const int64_t right = full - pads[d] - y[2 + d];  // output_padding makes it smaller
    if (pads[d] < 0 || right < 0) return decline(init, impl, "negative padding");
    st.push_back(strides[d]);
    di.push_back(dil[d] - 1);
    pl.push_back(pads[d]);
    pr.push_back(right);
  }
  // Logical weights dims and the tag that reads ONNX's plain W.
  memory::dims wd;
  if (group > 1) wd = {group, w[1], w[0] / group};
  else wd = {w[1], w[0]};
  wd.insert(wd.end(), w.begin() + 2, w.end());
  using tag = memory::format_tag;
  static const tag kPlain[3] = {tag::bac, tag::bacd, tag::bacde};  // iow, iohw, iodhw
  static const tag kGrouped[3] = {tag::acbd, tag::acbde, tag::acbdef};  // giow, giohw, giodhw
  const memory::desc wei_user(wd, memory::data_type::f32, group > 1 ? kGrouped[nsp - 1] : kPlain[nsp - 1]);
  auto src_md = layout_md(x, layout_at(init, 0));
  auto dst_md = layout_md(y, init.out_layout);
  if (!src_md || !dst_md) return decline(init, impl, "layout");
  const memory::desc src = *src_md, dst = *dst_md;
  const bool has_bias = input_type(init, 2) != nullptr;
  if (has_bias && !is_static_f32(input_type(init, 2))) return decline(init, impl, "bias");
  const Tensor* w_const = constant_at(init, 1);
  const memory::desc bias_md = has_bias ? plain_md({y[1]}) : memory::desc();
  Tensor packed;
  memory::desc wei_md = wei_user;
  std::vector<Binding> bindings{bind_input(DNNL_ARG_SRC, 0, src), bind_output(DNNL_ARG_DST, 0, dst)};
  auto make_pd = [&](const dnnl::engine& eng) {
    const memory::desc wei_any(wd, memory::data_type::f32, tag::any);
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        src, w_const ? wei_any : wei_user, bias_md, dst, st, di, pl, pr);
    auto pd = dnnl::deconvolution_forward::primitive_desc(d, user_scratchpad_attr(), eng);
    if (w_const) {  // reorder W once into the primitive's format
      wei_md = pd.weights_desc();
      packed = Tensor(DType::kF32, {static_cast<int64_t>(wei_md.get_size() / sizeof(float))});
      const Tensor plain = w_const->contiguous();
      memory from(wei_user, eng, const_cast<void*>(plain.raw_data()));
      memory to(wei_md, eng, packed.raw_data());
      dnnl::stream stream(eng);
      dnnl::reorder(from, to).execute(stream, from, to);
      stream.wait();
    }
    return pd;
  };
  // The descriptor is made inside primitive_kernel; the weights binding needs wei_md from it, so
  // make it first here (a throw declines through guarded()).
  std::optional<dnnl::deconvolution_forward::primitive_desc> pd;
  Status made = guarded(impl, [&] { pd = make_pd(ctx->engine); });
  if (!made) return decline(init, impl, made.error().message);
  bindings.push_back(w_const ? bind_constant(DNNL_ARG_WEIGHTS, packed, wei_md) : bind_input(DNNL_ARG_WEIGHTS, 1, wei_user));
  if (has_bias) {
    const Tensor* b = constant_at(init, 2);
    bindings.push_back(b ? bind_constant(DNNL_ARG_BIAS, *b, bias_md) : bind_input(DNNL_ARG_BIAS, 2, bias_md));
  }
  return primitive_kernel(
      ctx, init, impl, [&](const dnnl::engine&) { return *pd; }, std::move(bindings), {dst.get_size()});
}

}  // namespace

void register_onednn_conv(KernelRegistry& registry, const ContextPtr& ctx) {
  registry.add("Conv", "onednn:conv", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_conv(ctx, init, false); });
  registry.add("ConvTranspose", "onednn:deconv", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_deconv(ctx, init); });
  registry.add("FusedConv", "onednn:fused_conv", kOneDnnPriority,
               [ctx](const KernelInit& init) { return make_conv(ctx, init, true); });
}

}  // namespace tessera::cpu
