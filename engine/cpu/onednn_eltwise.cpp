// oneDNN element-wise and data-movement kernels: unary activations and math (eltwise; Relu, Exp,
// Log and Clip are cpu.vec:unary's, which keep NaN), binary Add / Sub / Mul / Div (binary, ONNX broadcasting mapped to
// oneDNN's: src0 must have the output's dims, src1 may broadcast), ReduceSum / ReduceMean /
// ReduceMax with constant axes (reduction), Concat, and Reorder between layouts.
#include <algorithm>
#include <cmath>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

using dnnl::algorithm;

// ---- unary ------------------------------------------------------------------------------------

Expected<KernelPtr> make_unary(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:eltwise";
  if (init.in_types.empty() || !is_static_f32(init.in_types[0]) || init.out_types.size() != 1)
    return decline(init, impl, "needs static f32");
  const std::optional<Activation> act = unary_activation(init);
  if (!act) return decline(init, impl, "op or attribute not mapped to oneDNN");
  if (std::isnan(act->alpha) || std::isnan(act->beta)) return decline(init, impl, "a NaN parameter");
  // oneDNN's eltwise primitive with an eltwise post-op runs its slow reference implementation.
  if (act->then || act->exact) return decline(init, impl, "two steps, or drops NaN (cpu.vec:unary's)");
  if (layout_at(init, 0) != init.out_layout)
    return decline(init, impl, "input and output layouts differ");
  auto md = layout_md(dims_of(*init.in_types[0]), init.out_layout);
  if (!md) return decline(init, impl, md.error().message);
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, act->alg, *md, act->alpha,
                                      act->beta);
        return dnnl::eltwise_forward::primitive_desc(d, user_scratchpad_attr(), eng);
      },
      {bind_input(DNNL_ARG_SRC, 0, *md), bind_output(DNNL_ARG_DST, 0, *md)}, {md->get_size()});
}

// ---- binary -----------------------------------------------------------------------------------

memory::dims right_align(const ir::TensorType& t, size_t rank) {
  memory::dims d;
  for (const ir::Dim& x : t.dims) d.push_back(x.size);
  while (d.size() < rank) d.insert(d.begin(), 1);
  return d;
}

Expected<KernelPtr> make_binary(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:binary";
  const std::string& op = init.node.op;
  if (init.in_types.size() != 2 || !is_static_f32(init.in_types[0]) ||
      !is_static_f32(init.in_types[1]) || init.out_types.size() != 1 ||
      !is_static_f32(init.out_types[0]))
    return decline(init, impl, "needs static f32 operands");
  const algorithm alg = op == "Add"   ? algorithm::binary_add
                        : op == "Sub" ? algorithm::binary_sub
                        : op == "Mul" ? algorithm::binary_mul
                                      : algorithm::binary_div;
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(init.out_types[0]->rank()));
  const memory::dims y = right_align(*init.out_types[0], rank);
  memory::dims a = right_align(*init.in_types[0], rank), b = right_align(*init.in_types[1], rank);
  size_t first = 0;  // the input bound to src0 (it must have the output's dims)
  bool negate = false;
  if (a != y) {
    if (b != y || op == "Div") return decline(init, impl, "src0 would need broadcasting");
    first = 1;
    negate = op == "Sub";  // B - A, negated
  }
  const size_t second = 1 - first;
  const memory::dims& d1 = first == 0 ? b : a;
  LayoutTag tag1 = layout_at(init, second);
  // A plain broadcast operand whose bytes read the same in src0's layout (every dim but one is 1,
  // as a squeeze-excitation scale [1, C, 1, 1]) is described in that layout: oneDNN's jit binary
  // wants src1 in src0's format and otherwise falls back to its reference implementation (4 ms
  // per Mul on EfficientNet-B0 at nhwc).
  if (tag1.empty() && !layout_at(init, first).empty() && layout_block(layout_at(init, first)) == 0 &&
      std::count_if(d1.begin(), d1.end(), [](memory::dim x) { return x != 1; }) <= 1)
    tag1 = layout_at(init, first);
  auto src0 = layout_md(first == 0 ? a : b, layout_at(init, first));
  auto src1 = layout_md(d1, tag1);
  auto dst = layout_md(y, init.out_layout);
  if (!src0 || !src1 || !dst) return decline(init, impl, "layout tag");
  std::string chosen;
  auto k = primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        dnnl::primitive_attr attr = user_scratchpad_attr();
        if (negate) {
          dnnl::post_ops po;
          po.append_eltwise(1.f, algorithm::eltwise_linear, -1.f, 0.f);
          attr.set_post_ops(po);
        }
        dnnl::binary::desc d(alg, *src0, *src1, *dst);
        auto pd = dnnl::binary::primitive_desc(d, attr, eng);
        chosen = pd.impl_info_str();
        return pd;
      },
      {bind_input(DNNL_ARG_SRC_0, first, *src0), bind_input(DNNL_ARG_SRC_1, second, *src1),
       bind_output(DNNL_ARG_DST, 0, *dst)},
      {dst->get_size()});
  // oneDNN 2.6 has only its reference binary for broadcasts other than per-channel and scalar
  // (Swin-T's [64, 3, 49, 49] + [64, 1, 49, 49] mask: 23 ms): on plain buffers the vectorised
  // binary kernel does those.
  if (k && *k && chosen.rfind("ref", 0) == 0 && all_plain(init))
    return decline(init, impl, "oneDNN offers only its reference implementation for this broadcast");
  return k;
}

// ---- reductions -------------------------------------------------------------------------------

Expected<KernelPtr> make_reduce(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:reduction";
  const std::string& op = init.node.op;
  if (init.in_types.empty() || !is_static_f32(init.in_types[0]) || !all_plain(init) ||
      init.out_types.size() != 1)
    return decline(init, impl, "needs plain static f32");
  const ir::TensorType& xt = *init.in_types[0];
  std::vector<int64_t> axes;
  if (op == "ReduceSum") {
    if (input_type(init, 1)) {
      const Tensor* c = constant_at(init, 1);
      if (!c) return decline(init, impl, "axes must be constant");
      for (int64_t i = 0; i < c->numel(); ++i) axes.push_back(static_cast<int64_t>(c->get(i)));
    }
    if (axes.empty() && attr_int(init, "noop_with_empty_axes", 0) != 0)
      return decline(init, impl, "identity");
  } else {
    axes = attr_ints(init, "axes", {});
  }
  const int rank = xt.rank();
  if (rank == 0) return decline(init, impl, "scalar");
  memory::dims x = dims_of(xt), y = x;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return decline(init, impl, "axis out of range");
    y[static_cast<size_t>(a < 0 ? a + rank : a)] = 1;
  }
  if (axes.empty()) y.assign(x.size(), 1);
  for (memory::dim d : x)
    if (d == 0) return decline(init, impl, "empty input");
  const algorithm alg = op == "ReduceSum"    ? algorithm::reduction_sum
                        : op == "ReduceMean" ? algorithm::reduction_mean
                                             : algorithm::reduction_max;
  const memory::desc src = plain_md(x), dst = plain_md(y);
  if (x == y) return decline(init, impl, "nothing reduced");
  return primitive_kernel(ctx, init, impl,
                          [&](const dnnl::engine& eng) {
                            dnnl::reduction::desc d(alg, src, dst, 0.f, 0.f);
                            return dnnl::reduction::primitive_desc(d, user_scratchpad_attr(), eng);
                          },
                          {bind_input(DNNL_ARG_SRC, 0, src), bind_output(DNNL_ARG_DST, 0, dst)},
                          {dst.get_size()},
                          NanRepair{alg == algorithm::reduction_max ? NanRepair::Kind::kWindow : NanRepair::Kind::kNone});
}

// ---- Concat, Reorder --------------------------------------------------------------------------

Expected<KernelPtr> make_concat(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:concat";
  if (init.out_types.size() != 1 || !is_static_f32(init.out_types[0]) || init.in_types.empty())
    return decline(init, impl, "needs static f32");
  const int rank = init.out_types[0]->rank();
  int64_t axis = attr_int(init, "axis", 0);
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return decline(init, impl, "axis");
  std::vector<memory::desc> srcs;
  std::vector<Binding> b;
  for (size_t i = 0; i < init.in_types.size(); ++i) {
    const ir::TensorType* t = init.in_types[i];
    if (!is_static_f32(t) || t->rank() != rank || t->static_numel() == 0)
      return decline(init, impl, "inputs");
    auto md = layout_md(dims_of(*t), layout_at(init, i));
    if (!md) return decline(init, impl, md.error().message);
    srcs.push_back(*md);
    b.push_back(bind_input(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), i, *md));
  }
  auto dst = layout_md(dims_of(*init.out_types[0]), init.out_layout);
  if (!dst) return decline(init, impl, dst.error().message);
  b.push_back(bind_output(DNNL_ARG_DST, 0, *dst));
  return primitive_kernel(ctx, init, impl,
                          [&](const dnnl::engine& eng) {
                            return dnnl::concat::primitive_desc(*dst, static_cast<int>(axis), srcs,
                                                                eng, user_scratchpad_attr());
                          },
                          std::move(b), {dst->get_size()});
}

Expected<KernelPtr> make_reorder(const ContextPtr& ctx, const KernelInit& init) {
  const std::string impl = "onednn:reorder";
  const ir::TensorType* xt = init.in_types.empty() ? nullptr : init.in_types[0];
  const bool q8 = xt && xt->is_static() && (xt->dtype == DType::kU8 || xt->dtype == DType::kI8);
  if (!xt || (!is_static_f32(xt) && !q8) || init.out_types.size() != 1)
    return decline(init, impl, "needs static f32, u8 or i8");
  const memory::data_type type = !q8 ? memory::data_type::f32 : xt->dtype == DType::kU8 ? memory::data_type::u8 : memory::data_type::s8;
  const LayoutTag to = attr_string(init, "to", "");
  if (!init.out_layout.empty() && init.out_layout != to)
    return kernel_error(init, impl,
                        "out_layout '" + init.out_layout + "' disagrees with to='" + to + "'");
  const memory::dims d = dims_of(*init.in_types[0]);
  auto src = layout_md(d, layout_at(init, 0), type);
  auto dst = layout_md(d, to, type);
  if (!src) return kernel_error(init, impl, src.error().message);
  if (!dst) return kernel_error(init, impl, dst.error().message);
  return primitive_kernel(
      ctx, init, impl,
      [&](const dnnl::engine& eng) {
        return dnnl::reorder::primitive_desc(eng, *src, eng, *dst, user_scratchpad_attr());
      },
      {bind_input(DNNL_ARG_FROM, 0, *src), bind_output(DNNL_ARG_TO, 0, *dst)}, {dst->get_size()});
}

}  // namespace

void register_onednn_eltwise(KernelRegistry& registry, const ContextPtr& ctx) {
  // Relu, Exp, Clip and Log are cpu.vec:unary's: oneDNN's make NaN 0, +inf and a bound, and its
  // log is 1.4e-6 off at 1.
  for (const char* op : {"LeakyRelu", "Sigmoid", "Tanh", "Sqrt", "Abs",
                         "Gelu", "Elu", "HardSwish", "Swish", "Softplus", "Neg"})
    registry.add(op, "onednn:eltwise", kOneDnnPriority,
                 [ctx](const KernelInit& i) { return make_unary(ctx, i); });
  // Not Max and Min: oneDNN's binary_max gives the second operand where either is NaN
  // (cpu.vec:binary keeps NaN, as ONNX does).
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    registry.add(op, "onednn:binary", kOneDnnPriority,
                 [ctx](const KernelInit& i) { return make_binary(ctx, i); });
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"})
    registry.add(op, "onednn:reduction", kOneDnnPriority,
                 [ctx](const KernelInit& i) { return make_reduce(ctx, i); });
  registry.add("Concat", "onednn:concat", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_concat(ctx, i); });
  registry.add("Reorder", "onednn:reorder", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_reorder(ctx, i); });
}

}  // namespace tessera::cpu
