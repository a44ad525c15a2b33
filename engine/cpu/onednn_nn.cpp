// oneDNN kernels for MaxPool, AveragePool, GlobalAveragePool, BatchNormalization (inference),
// LayerNormalization, Softmax and LogSoftmax.
//
// Pools and BatchNormalization take blocked layouts (src and dst in the same tag); the others are
// plain only. ONNX window attributes map through window_geom (ceil_mode raises the right pad; an
// AveragePool that counts pads and has such an overhang declines, oneDNN would count it too).
#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

using dnnl::prop_kind;

bool single_f32(const KernelInit& init) {
  return !init.in_types.empty() && is_static_f32(init.in_types[0]) && init.out_types.size() == 1 &&
         is_static_f32(init.out_types[0]);
}

Expected<KernelPtr> make_pool(const ContextPtr& ctx, const KernelInit& init, bool max,
                              bool global) {
  const std::string impl = global ? "onednn:global_avgpool"
                           : max  ? "onednn:maxpool"
                                  : "onednn:avgpool";
  if (!single_f32(init)) return decline(init, impl, "needs static f32 X and a single output Y");
  const memory::dims x = dims_of(*init.in_types[0]), y = dims_of(*init.out_types[0]);
  if (x.size() < 3 || x.size() > 5) return decline(init, impl, "rank not handled");
  const memory::dims in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end());
  WindowGeom g;
  if (global) {
    g.kernel = in;
    g.strides.assign(in.size(), 1);
    g.pad_l.assign(in.size(), 0);
    g.pad_r.assign(in.size(), 0);
  } else {
    const std::vector<int64_t> dil = attr_ints(init, "dilations", {});
    for (int64_t d : dil)
      if (d != 1) return decline(init, impl, "dilated pooling");
    auto geom = window_geom(init, attr_ints(init, "kernel_shape", {}), in, out);
    if (!geom) return decline(init, impl, geom.error().message);
    g = *geom;
  }
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  if (!max) {
    const bool include = !global && attr_int(init, "count_include_pad", 0) != 0;
    if (include && g.overhang)
      return decline(init, impl, "count_include_pad with a ceil_mode overhang");
    alg = include ? dnnl::algorithm::pooling_avg_include_padding
                  : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  auto src = layout_md(x, layout_at(init, 0));
  auto dst = layout_md(y, init.out_layout);
  if (!src || !dst) return decline(init, impl, "layout tag");
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        dnnl::pooling_forward::desc d(prop_kind::forward_inference, alg, *src, *dst, g.strides,
                                      g.kernel, g.pad_l, g.pad_r);
        return dnnl::pooling_forward::primitive_desc(d, user_scratchpad_attr(), eng);
      },
      {bind_input(DNNL_ARG_SRC, 0, *src), bind_output(DNNL_ARG_DST, 0, *dst)}, {dst->get_size()},
      NanRepair{max ? NanRepair::Kind::kWindow : NanRepair::Kind::kNone});
}

// A per-channel parameter [C] as an input binding, or a held constant when known.
Binding param(const KernelInit& init, int arg, size_t input, const memory::desc& md) {
  if (const Tensor* c = constant_at(init, input)) return bind_constant(arg, *c, md);
  return bind_input(arg, input, md);
}

Expected<KernelPtr> make_batchnorm(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:batchnorm";
  if (!single_f32(init) || init.in_types.size() != 5 || attr_int(init, "training_mode", 0) != 0)
    return decline(init, impl, "needs inference mode, static f32 and one output");
  const memory::dims x = dims_of(*init.in_types[0]);
  if (x.size() < 2 || x.size() > 5) return decline(init, impl, "rank not handled");
  for (size_t i = 1; i < 5; ++i)
    if (!is_static_f32(init.in_types[i]) || dims_of(*init.in_types[i]) != memory::dims{x[1]} ||
        !layout_at(init, i).empty())
      return decline(init, impl, "parameters must be plain f32 [C]");
  if (layout_at(init, 0) != init.out_layout) return decline(init, impl, "X and Y layouts differ");
  auto data = layout_md(x, init.out_layout);
  if (!data) return decline(init, impl, data.error().message);
  const float eps = static_cast<float>(attr_float(init, "epsilon", 1e-5));
  const memory::desc c_md = plain_md({x[1]});
  std::vector<Binding> b = {
      bind_input(DNNL_ARG_SRC, 0, *data),   bind_output(DNNL_ARG_DST, 0, *data),
      param(init, DNNL_ARG_SCALE, 1, c_md), param(init, DNNL_ARG_SHIFT, 2, c_md),
      param(init, DNNL_ARG_MEAN, 3, c_md),  param(init, DNNL_ARG_VARIANCE, 4, c_md)};
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        const auto flags = dnnl::normalization_flags::use_global_stats |
                           dnnl::normalization_flags::use_scale |
                           dnnl::normalization_flags::use_shift;
        dnnl::batch_normalization_forward::desc d(prop_kind::forward_inference, *data, eps, flags);
        return dnnl::batch_normalization_forward::primitive_desc(d, user_scratchpad_attr(), eng);
      },
      std::move(b), {data->get_size()});
}

Expected<KernelPtr> make_layernorm(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:layernorm";
  if (!single_f32(init) || !all_plain(init) || init.in_types.size() < 2)
    return decline(init, impl, "needs plain static f32 and only output Y");
  const ir::TensorType& xt = *init.in_types[0];
  int64_t axis = attr_int(init, "axis", -1);
  if (axis < 0) axis += xt.rank();
  if (axis < 0 || axis >= xt.rank()) return decline(init, impl, "axis");
  memory::dim outer = 1, inner = 1;
  for (int d = 0; d < xt.rank(); ++d)
    (d < axis ? outer : inner) *= xt.dims[static_cast<size_t>(d)].size;
  // Scale and B must cover the normalised axes exactly (no broadcasting).
  for (size_t i = 1; i < 3 && i < init.in_types.size(); ++i) {
    const ir::TensorType* t = init.in_types[i];
    if (t && (!is_static_f32(t) || t->static_numel() != inner || t->rank() > xt.rank() - axis))
      return decline(init, impl, "Scale and B must have the normalised shape");
  }
  const bool has_b = input_type(init, 2) != nullptr;
  const memory::desc data = plain_md({outer, inner}), c_md = plain_md({inner});
  std::vector<Binding> b = {bind_input(DNNL_ARG_SRC, 0, data), bind_output(DNNL_ARG_DST, 0, data),
                            param(init, DNNL_ARG_SCALE, 1, c_md)};
  if (has_b) b.push_back(param(init, DNNL_ARG_SHIFT, 2, c_md));
  const float eps = static_cast<float>(attr_float(init, "epsilon", 1e-5));
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        auto flags = dnnl::normalization_flags::use_scale;
        if (has_b) flags = flags | dnnl::normalization_flags::use_shift;
        dnnl::layer_normalization_forward::desc d(prop_kind::forward_inference, data, eps, flags);
        return dnnl::layer_normalization_forward::primitive_desc(d, user_scratchpad_attr(), eng);
      },
      std::move(b), {data.get_size()});
}

Expected<KernelPtr> make_softmax(const ContextPtr& ctx, const KernelInit& init, bool log) {
  const std::string impl = log ? "onednn:logsoftmax" : "onednn:softmax";
  if (!single_f32(init) || !all_plain(init)) return decline(init, impl, "needs plain static f32");
  const ir::TensorType& xt = *init.in_types[0];
  int64_t axis = attr_int(init, "axis", -1);
  if (axis < 0) axis += xt.rank();
  if (xt.rank() == 0 || axis < 0 || axis >= xt.rank()) return decline(init, impl, "axis");
  const memory::desc md = plain_md(dims_of(xt));
  NanRepair repair{NanRepair::Kind::kSoftmax, 1, xt.dims[static_cast<size_t>(axis)].size, 1, log};
  for (int64_t d = 0; d < xt.rank(); ++d)
    if (d != axis) (d < axis ? repair.outer : repair.inner) *= xt.dims[static_cast<size_t>(d)].size;
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        dnnl::softmax_v2_forward::desc d(
            prop_kind::forward_inference,
            log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md,
            static_cast<int>(axis));
        return dnnl::softmax_v2_forward::primitive_desc(d, user_scratchpad_attr(), eng);
      },
      {bind_input(DNNL_ARG_SRC, 0, md), bind_output(DNNL_ARG_DST, 0, md)}, {md.get_size()}, repair);
}

}  // namespace

void register_onednn_nn(KernelRegistry& registry, const ContextPtr& ctx) {
  registry.add("MaxPool", "onednn:maxpool", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_pool(ctx, i, true, false); });
  registry.add("AveragePool", "onednn:avgpool", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_pool(ctx, i, false, false); });
  registry.add("GlobalAveragePool", "onednn:global_avgpool", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_pool(ctx, i, false, true); });
  registry.add("BatchNormalization", "onednn:batchnorm", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_batchnorm(ctx, i); });
  registry.add("LayerNormalization", "onednn:layernorm", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_layernorm(ctx, i); });
  registry.add("Softmax", "onednn:softmax", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_softmax(ctx, i, false); });
  registry.add("LogSoftmax", "onednn:logsoftmax", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_softmax(ctx, i, true); });
}

}  // namespace tessera::cpu
