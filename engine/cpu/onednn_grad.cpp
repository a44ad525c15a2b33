// oneDNN kernels for the backward ops autodiff emits: ConvGradInput (convolution_backward_data),
// ConvGradWeight (convolution_backward_weights), MaxPoolGrad and AveragePoolGrad
// (pooling_backward; max pooling runs its own forward_training pass for the workspace), GeluGrad
// (eltwise_backward) and SoftmaxGrad (softmax_backward).
//
// oneDNN 2.x builds backward primitive descriptors from a forward one (the hint). Convolutions are
// created with format_tag::any; every operand whose chosen format differs from the user's buffer
// (plain, or the producer's layout for inputs) is reordered through scratch. Outputs are always
// plain; inputs may be in any layout layout_md knows, so the layout pass needs no Reorder in front
// of these ops. Scratch: [primitive scratchpad | copies | max pooling's dst and workspace].
#include <unordered_map>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

size_t align64(size_t n) { return (n + 63) & ~size_t{63}; }

// One operand of the backward primitive: the user's buffer (input or output `index`) and the
// primitive's view of it, with a reorder through scratch when they differ.
struct Operand {
  int arg = 0;
  bool output = false;
  size_t index = 0;
  memory::desc user_md, prim_md;
  bool copy = false;
  size_t tmp_off = 0;
  memory user, prim;
  dnnl::reorder reorder;
};

class GradKernel : public OneDnnKernel {
 public:
  GradKernel(ContextPtr ctx, std::string impl, std::string node_name)
      : OneDnnKernel(std::move(ctx), std::move(impl), std::move(node_name)) {}

  // Sets the main primitive and lays out scratch; `fwd` (max pooling) is run first, its dst and
  // workspace in scratch. Call after add().
  void finish(const dnnl::primitive_desc_base& pd, const dnnl::primitive_desc_base* fwd) {
    pd_ = pd;
    need_scratch(pd_);
    if (fwd) {
      fwd_pd_ = *fwd;
      has_fwd_ = true;
      need_scratch(fwd_pd_);
    }
    size_t off = align64(scratch_bytes_);
    for (Operand& o : ops_) {
      o.copy = o.prim_md != o.user_md;
      if (!o.copy) continue;
      o.tmp_off = off;
      off += align64(o.prim_md.get_size());
    }
    if (has_fwd_) {
      fwd_dst_off_ = off;
      off += align64(fwd_pd_.query_md(dnnl::query::dst_md).get_size());
      ws_off_ = off;
      off += align64(pd_.query_md(dnnl::query::workspace_md).get_size());
    }
    scratch_bytes_ = off;
  }
  void add(int arg, bool output, size_t index, const memory::desc& user, const memory::desc& prim) {
    Operand o;
    o.arg = arg;
    o.output = output;
    o.index = index;
    o.user_md = user;
    o.prim_md = prim;
    ops_.push_back(o);
    if (output) {
      if (out_bytes_.size() <= index) out_bytes_.resize(index + 1);
      out_bytes_[index] = user.get_size();
    }
  }
  std::string detail() const override { return pd_.impl_info_str(); }

 protected:
  void do_load() override {
    const dnnl::engine& eng = ctx_->engine;
    prim_ = dnnl::primitive(pd_.get());
    scratchpad_ = memory(pd_.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    for (Operand& o : ops_) {
      o.user = memory(o.user_md, eng, DNNL_MEMORY_NONE);
      o.prim = o.copy ? memory(o.prim_md, eng, DNNL_MEMORY_NONE) : o.user;
      if (o.copy) o.reorder = o.output ? dnnl::reorder(o.prim, o.user) : dnnl::reorder(o.user, o.prim);
    }
    if (has_fwd_) {
      fwd_ = dnnl::primitive(fwd_pd_.get());
      fwd_dst_ = memory(fwd_pd_.query_md(dnnl::query::dst_md), eng, DNNL_MEMORY_NONE);
      fwd_scratchpad_ = memory(fwd_pd_.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
      ws_ = memory(pd_.query_md(dnnl::query::workspace_md), eng, DNNL_MEMORY_NONE);
    }
  }

  void do_run(KernelRun& run) override {
    char* scratch = static_cast<char*>(aligned_scratch(run));
    scratchpad_.set_data_handle(scratch);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SCRATCHPAD, scratchpad_}};
    for (Operand& o : ops_) {
      o.user.set_data_handle(o.output ? run.outputs.at(o.index).data : run.inputs.at(o.index).data);
      if (o.copy) o.prim.set_data_handle(scratch + o.tmp_off);
      if (o.copy && !o.output) o.reorder.execute(stream_, o.user, o.prim);
      args[o.arg] = o.prim;
    }
    if (has_fwd_) {  // max pooling: the forward pass fills the workspace (argmax positions)
      fwd_dst_.set_data_handle(scratch + fwd_dst_off_);
      ws_.set_data_handle(scratch + ws_off_);
      fwd_scratchpad_.set_data_handle(scratch);
      fwd_.execute(stream_, {{DNNL_ARG_SRC, args.at(DNNL_ARG_SRC)},
                             {DNNL_ARG_DST, fwd_dst_},
                             {DNNL_ARG_WORKSPACE, ws_},
                             {DNNL_ARG_SCRATCHPAD, fwd_scratchpad_}});
      args.erase(DNNL_ARG_SRC);
      args[DNNL_ARG_WORKSPACE] = ws_;
    }
    prim_.execute(stream_, args);
    for (Operand& o : ops_)
      if (o.copy && o.output) o.reorder.execute(stream_, o.prim, o.user);
  }

 private:
  dnnl::primitive_desc_base pd_, fwd_pd_;
  dnnl::primitive prim_, fwd_;
  bool has_fwd_ = false;
  size_t fwd_dst_off_ = 0, ws_off_ = 0;
  std::vector<Operand> ops_;
  memory scratchpad_, fwd_scratchpad_, fwd_dst_, ws_;
};

// Static f32 inputs 0 and 1 and output 0 (ConvGradWeight's dB may follow), ranks 3-5, plain output.
bool usable(const KernelInit& init) {
  if (init.in_types.size() < 2 || !is_static_f32(init.in_types[0]) || !is_static_f32(init.in_types[1]) ||
      init.out_types.empty() || init.out_types.size() > 2 || !is_static_f32(init.out_types[0]) || !init.out_layout.empty())
    return false;
  const int rank = init.out_types[0]->rank();
  return rank >= 3 && rank <= 5 && init.in_types[0]->rank() == rank;
}

memory::desc any_md(const memory::dims& d, memory::data_type t = memory::data_type::f32) {
  return memory::desc(d, t, memory::format_tag::any);
}

memory::dims spatial(const memory::dims& d) { return memory::dims(d.begin() + 2, d.end()); }

// ConvGradInput (dY, W, input_shape) -> dX and ConvGradWeight (dY, X, weight_shape) -> dW.
Expected<KernelPtr> make_conv_grad(const ContextPtr& ctx, const KernelInit& init, bool weight) {
  const std::string impl = weight ? "onednn:conv_grad_weight" : "onednn:conv_grad_input";
  if (!usable(init)) return decline(init, impl, "needs static f32 dY, W / X and a plain result of rank 3-5");
  const memory::dims dy = dims_of(*init.in_types[0]);
  const memory::dims x = weight ? dims_of(*init.in_types[1]) : dims_of(*init.out_types[0]);
  const memory::dims w = weight ? dims_of(*init.out_types[0]) : dims_of(*init.in_types[1]);
  const int64_t group = attr_int(init, "group", 1);
  if (w.size() != x.size() || group < 1 || x[1] != w[1] * group || w[0] % group != 0 || dy[1] != w[0])
    return decline(init, impl, "channels and groups");
  if (!weight && !layout_at(init, 1).empty()) return decline(init, impl, "blocked weights");
  const bool with_bias = weight && init.out_types.size() > 1;
  if (with_bias && (!is_static_f32(init.out_types[1]) || init.out_types[1]->static_shape() != Shape{dy[1]}))
    return decline(init, impl, "dB must be static f32 [M]");
  auto geom = window_geom(init, spatial(w), spatial(x), spatial(dy));
  if (!geom) return decline(init, impl, geom.error().message);
  const WindowGeom g = *geom;
  memory::dims wd = w;
  if (group > 1) {
    wd = {group, w[0] / group};
    wd.insert(wd.end(), w.begin() + 1, w.end());
  }
  auto dy_user = layout_md(dy, layout_at(init, 0));
  auto other_user = weight ? layout_md(x, layout_at(init, 1)) : Expected<memory::desc>(plain_md(wd));
  if (!dy_user || !other_user) return decline(init, impl, "layout tag");
  std::unique_ptr<GradKernel> k;
  // bf16 (KernelInit::bf16): dY, X and W read as bf16 (reordered through scratch), dX, dW and dB
  // f32; f32 where oneDNN has no bf16 kernel for the shapes.
  const auto build = [&](memory::data_type math) {
    k = std::make_unique<GradKernel>(ctx, impl, init.node.name);
    const dnnl::engine& eng = ctx->engine;
    using namespace dnnl;
    const bool f32 = math == memory::data_type::f32;
    // Winograd or direct, as the forward convolution chose for the same shapes.
    with_conv_algorithm(f32 && winograd_candidate(x, wd, dy, g, group), [&](algorithm alg) {
      // The forward primitive descriptor is the hint oneDNN 2.x builds backward ones from.
      auto hint = [&](const memory::desc& xm, const memory::desc& ym) {
        convolution_forward::desc fd(prop_kind::forward_training, alg, xm, any_md(wd, math), ym, g.strides,
                                     g.dilations, g.pad_l, g.pad_r);
        return convolution_forward::primitive_desc(fd, eng);
      };
      if (weight) {
        // With a second output, dB comes out of the same primitive (diff_bias).
        const memory::desc bias_md = with_bias ? plain_md({dy[1]}) : memory::desc();
        auto make = [&](const memory::desc& xm, const memory::desc& ym) {
          convolution_backward_weights::desc bd(alg, xm, any_md(wd), bias_md, ym, g.strides, g.dilations, g.pad_l,
                                                g.pad_r);
          return convolution_backward_weights::primitive_desc(bd, user_scratchpad_attr(), eng, hint(xm, ym));
        };
        convolution_backward_weights::primitive_desc pd = make(any_md(x, math), any_md(dy, math));
        // With open layouts and few input channels (LeNet's 6), oneDNN 2.6 takes its AVX2 kernel;
        // channels-last gets the AVX-512 one: 142 against 225 us for LeNet's conv2 at batch 64.
        if (x.size() == 4 && std::string(pd.impl_info_str()).find("avx512") == std::string::npos) {
          try {
            auto cl = [math](const memory::dims& d) { return memory::desc(d, math, memory::format_tag::nhwc); };
            convolution_backward_weights::primitive_desc alt = make(cl(x), cl(dy));
            if (std::string(alt.impl_info_str()).find("avx512") != std::string::npos) pd = alt;
          } catch (const dnnl::error&) {
          }
        }
        k->add(DNNL_ARG_DIFF_DST, false, 0, *dy_user, pd.diff_dst_desc());
        k->add(DNNL_ARG_SRC, false, 1, *other_user, pd.src_desc());
        k->add(DNNL_ARG_DIFF_WEIGHTS, true, 0, plain_md(wd), pd.diff_weights_desc());
        if (with_bias) k->add(DNNL_ARG_DIFF_BIAS, true, 1, bias_md, pd.diff_bias_desc());
        k->finish(pd, nullptr);
      } else {
        convolution_backward_data::desc bd(alg, any_md(x), any_md(wd, math), any_md(dy, math), g.strides, g.dilations,
                                           g.pad_l, g.pad_r);
        const convolution_backward_data::primitive_desc pd(bd, user_scratchpad_attr(), eng,
                                                           hint(any_md(x, math), any_md(dy, math)));
        k->add(DNNL_ARG_DIFF_DST, false, 0, *dy_user, pd.diff_dst_desc());
        k->add(DNNL_ARG_WEIGHTS, false, 1, *other_user, pd.weights_desc());
        k->add(DNNL_ARG_DIFF_SRC, true, 0, plain_md(x), pd.diff_src_desc());
        k->finish(pd, nullptr);
      }
    });
  };
  // Winograd stays f32, as forward.
  Status st = guarded(impl, [&] { with_bf16_fallback(init.bf16 && !winograd_candidate(x, wd, dy, g, group), build); });
  if (!st) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

// MaxPoolGrad (dY, X) -> dX and AveragePoolGrad (dY, input_shape) -> dX, in plain layouts (inputs
// in other layouts are reordered first).
Expected<KernelPtr> make_pool_grad(const ContextPtr& ctx, const KernelInit& init, bool max) {
  const std::string impl = max ? "onednn:maxpool_grad" : "onednn:avgpool_grad";
  const bool ok = max ? usable(init)
                      : init.in_types.size() == 2 && is_static_f32(init.in_types[0]) && init.out_types.size() == 1 &&
                            is_static_f32(init.out_types[0]) && init.out_layout.empty() &&
                            init.out_types[0]->rank() >= 3 && init.out_types[0]->rank() <= 5;
  if (!ok) return decline(init, impl, "needs static f32 dY and a plain dX of rank 3-5");
  const memory::dims dy = dims_of(*init.in_types[0]), x = dims_of(*init.out_types[0]);
  for (int64_t d : attr_ints(init, "dilations", {}))
    if (d != 1) return decline(init, impl, "dilated pooling");
  auto geom = window_geom(init, attr_ints(init, "kernel_shape", {}), spatial(x), spatial(dy));
  if (!geom) return decline(init, impl, geom.error().message);
  const WindowGeom g = *geom;
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  if (!max) {
    const bool include = attr_int(init, "count_include_pad", 0) != 0;
    if (include && g.overhang) return decline(init, impl, "count_include_pad with a ceil_mode overhang");
    alg = include ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  auto dy_user = layout_md(dy, layout_at(init, 0));
  auto x_user = max ? layout_md(x, layout_at(init, 1)) : Expected<memory::desc>(plain_md(x));
  if (!dy_user || !x_user) return decline(init, impl, "layout tag");
  auto k = std::make_unique<GradKernel>(ctx, impl, init.node.name);
  Status st = guarded(impl, [&] {
    const dnnl::engine& eng = ctx->engine;
    dnnl::pooling_forward::desc fd(dnnl::prop_kind::forward_training, alg, plain_md(x), plain_md(dy), g.strides,
                                   g.kernel, g.pad_l, g.pad_r);
    const dnnl::pooling_forward::primitive_desc hint(fd, user_scratchpad_attr(), eng);
    dnnl::pooling_backward::desc bd(alg, plain_md(x), plain_md(dy), g.strides, g.kernel, g.pad_l, g.pad_r);
    const dnnl::pooling_backward::primitive_desc pd(bd, user_scratchpad_attr(), eng, hint);
    k->add(DNNL_ARG_DIFF_DST, false, 0, *dy_user, pd.diff_dst_desc());
    if (max) k->add(DNNL_ARG_SRC, false, 1, *x_user, hint.src_desc());
    k->add(DNNL_ARG_DIFF_SRC, true, 0, plain_md(x), pd.diff_src_desc());
    k->finish(pd, max ? &hint : nullptr);
  });
  if (!st) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

// GeluGrad (eltwise_backward with gelu_erf / gelu_tanh, from X) and SoftmaxGrad (softmax_backward,
// from Y): plain static f32 dY and X (Y) of one shape.
Expected<KernelPtr> make_activation_grad(const ContextPtr& ctx, const KernelInit& init, bool softmax) {
  const std::string impl = softmax ? "onednn:softmax_grad" : "onednn:gelu_grad";
  if (init.in_types.size() != 2 || !is_static_f32(init.in_types[0]) || !is_static_f32(init.in_types[1]) || !all_plain(init) ||
      init.in_types[0]->static_shape() != init.in_types[1]->static_shape() || init.in_types[0]->rank() == 0)
    return decline(init, impl, "needs plain static f32 dY and X of one shape");
  const memory::desc md = plain_md(dims_of(*init.in_types[0]));
  if (softmax) {
    int64_t axis = attr_int(init, "axis", -1);
    if (axis < 0) axis += init.in_types[0]->rank();
    if (axis < 0 || axis >= init.in_types[0]->rank()) return decline(init, impl, "axis");
    return primitive_kernel(
        ctx, init, impl,
        [&](const dnnl::engine& eng) {
          dnnl::softmax_v2_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::softmax_accurate, md, md,
                                            static_cast<int>(axis));
          const dnnl::softmax_v2_forward::primitive_desc hint(fd, user_scratchpad_attr(), eng);
          dnnl::softmax_v2_backward::desc bd(dnnl::algorithm::softmax_accurate, md, md, md, static_cast<int>(axis));
          return dnnl::softmax_v2_backward::primitive_desc(bd, user_scratchpad_attr(), eng, hint);
        },
        {bind_input(DNNL_ARG_DIFF_DST, 0, md), bind_input(DNNL_ARG_DST, 1, md), bind_output(DNNL_ARG_DIFF_SRC, 0, md)},
        {md.get_size()});
  }
  const ir::Attribute* mode = init.node.attr("approximate");
  const std::string approximate = mode ? mode->s() : "none";
  if (approximate != "none" && approximate != "tanh") return decline(init, impl, "approximate mode");
  const dnnl::algorithm alg = approximate == "none" ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_gelu_tanh;
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg, md, 0.f, 0.f);
        const dnnl::eltwise_forward::primitive_desc hint(fd, user_scratchpad_attr(), eng);
        dnnl::eltwise_backward::desc bd(alg, md, md, 0.f, 0.f);
        return dnnl::eltwise_backward::primitive_desc(bd, user_scratchpad_attr(), eng, hint);
      },
      {bind_input(DNNL_ARG_DIFF_DST, 0, md), bind_input(DNNL_ARG_SRC, 1, md), bind_output(DNNL_ARG_DIFF_SRC, 0, md)},
      {md.get_size()});
}

}  // namespace

void register_onednn_grad(KernelRegistry& registry, const ContextPtr& ctx) {
  registry.add("GeluGrad", "onednn:gelu_grad", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_activation_grad(ctx, i, false); });
  registry.add("SoftmaxGrad", "onednn:softmax_grad", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_activation_grad(ctx, i, true); });
  registry.add("ConvGradInput", "onednn:conv_grad_input", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_conv_grad(ctx, i, false); });
  registry.add("ConvGradWeight", "onednn:conv_grad_weight", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_conv_grad(ctx, i, true); });
  registry.add("MaxPoolGrad", "onednn:maxpool_grad", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_pool_grad(ctx, i, true); });
  registry.add("AveragePoolGrad", "onednn:avgpool_grad", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_pool_grad(ctx, i, false); });
}

}  // namespace tessera::cpu
