// Shared pieces of the oneDNN kernels: descriptors, attributes, activations, the kernel base.
#include "engine/cpu/onednn_util.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <unordered_map>

#include "engine/cpu/nan_repair.h"

namespace tessera::cpu {

Error kernel_error(const KernelInit& init, const std::string& impl, const std::string& what) {
  return make_error(
      impl + " '" + (init.node.name.empty() ? init.node.op : init.node.name) + "': " + what, {},
      init.node.id);
}

bool all_plain(const KernelInit& init) {
  for (const LayoutTag& l : init.in_layouts)
    if (!l.empty()) return false;
  return init.out_layout.empty();
}

Expected<KernelPtr> decline(const KernelInit& init, const std::string& impl,
                            const std::string& why) {
  if (all_plain(init)) {
    backend::set_decline_reason(why);
    return KernelPtr();
  }
  return kernel_error(init, impl, "cannot honour the requested layouts: " + why);
}

const ir::TensorType* input_type(const KernelInit& init, size_t i) {
  return i < init.in_types.size() ? init.in_types[i] : nullptr;
}
const Tensor* constant_at(const KernelInit& init, size_t i) {
  return i < init.constants.size() ? init.constants[i] : nullptr;
}
LayoutTag layout_at(const KernelInit& init, size_t i) {
  return i < init.in_layouts.size() ? init.in_layouts[i] : "";
}

bool is_static_f32(const ir::TensorType* t) {
  return t && t->dtype == DType::kF32 && t->is_static();
}

memory::dims dims_of(const ir::TensorType& t) {
  memory::dims d;
  for (const ir::Dim& x : t.dims) d.push_back(x.size);
  if (d.empty()) d.push_back(1);
  return d;
}

memory::desc plain_md(const memory::dims& dims, memory::data_type type) {
  memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * std::max<memory::dim>(dims[i], 1);
  return memory::desc(dims, type, strides);
}

memory::dims grouped_weight_dims(const memory::dims& w, int64_t group) {
  if (group <= 1) return w;
  memory::dims g = {group, w[0] / group};
  g.insert(g.end(), w.begin() + 1, w.end());
  return g;
}

namespace {

struct TagInfo {
  const char* name;
  memory::format_tag tag;
  int rank;
  int block;
};
const TagInfo kTags[] = {
    {"nCw8c", memory::format_tag::nCw8c, 3, 8},
    {"nCw16c", memory::format_tag::nCw16c, 3, 16},
    {"nChw8c", memory::format_tag::nChw8c, 4, 8},
    {"nChw16c", memory::format_tag::nChw16c, 4, 16},
    {"nCdhw8c", memory::format_tag::nCdhw8c, 5, 8},
    {"nCdhw16c", memory::format_tag::nCdhw16c, 5, 16},
    {"nhwc", memory::format_tag::nhwc, 4, 0},
};

const TagInfo* find_tag(const LayoutTag& layout) {
  for (const TagInfo& t : kTags)
    if (layout == t.name) return &t;
  return nullptr;
}

}  // namespace

Expected<memory::desc> layout_md(const memory::dims& dims, const LayoutTag& layout, memory::data_type type) {
  if (layout.empty()) return plain_md(dims, type);
  const TagInfo* t = find_tag(layout);
  if (!t) return make_error("unknown layout tag '" + layout + "'");
  if (static_cast<int>(dims.size()) != t->rank)
    return make_error("layout '" + layout + "' needs rank " + std::to_string(t->rank) +
                      ", got rank " + std::to_string(dims.size()));
  return memory::desc(dims, type, t->tag);
}

int layout_block(const LayoutTag& layout) {
  const TagInfo* t = find_tag(layout);
  return t ? t->block : 0;
}

// ---- attributes ----

namespace {
const ir::Attribute* find_attr(const KernelInit& init, const std::string& name) {
  if (const ir::Attribute* a = init.node.attr(name)) return a;
  const ops::AttrSpec* spec = init.def.find_attr(name);
  return spec && spec->default_value ? &*spec->default_value : nullptr;
}
}  // namespace

int64_t attr_int(const KernelInit& init, const std::string& name, int64_t dflt) {
  const ir::Attribute* a = find_attr(init, name);
  return a && a->kind() == ir::AttrKind::kInt ? a->i() : dflt;
}

double attr_float(const KernelInit& init, const std::string& name, double dflt) {
  const ir::Attribute* a = find_attr(init, name);
  if (a && a->kind() == ir::AttrKind::kFloat) return a->f();
  if (a && a->kind() == ir::AttrKind::kInt) return static_cast<double>(a->i());
  return dflt;
}

std::string attr_string(const KernelInit& init, const std::string& name, const std::string& dflt) {
  const ir::Attribute* a = find_attr(init, name);
  return a && a->kind() == ir::AttrKind::kString ? a->s() : dflt;
}

std::vector<int64_t> attr_ints(const KernelInit& init, const std::string& name,
                               std::vector<int64_t> dflt) {
  const ir::Attribute* a = find_attr(init, name);
  return a && a->kind() == ir::AttrKind::kInts ? a->ints() : dflt;
}

// ---- windows ----

Expected<WindowGeom> window_geom(const KernelInit& init, const memory::dims& kernel,
                                 const memory::dims& in, const memory::dims& out) {
  const size_t nsp = kernel.size();
  WindowGeom g;
  g.kernel = kernel;
  const std::vector<int64_t> strides = attr_ints(init, "strides", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> dil = attr_ints(init, "dilations", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> pads = attr_ints(init, "pads", std::vector<int64_t>(2 * nsp, 0));
  const std::string auto_pad = attr_string(init, "auto_pad", "NOTSET");
  if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp || in.size() != nsp ||
      out.size() != nsp)
    return make_error("window attributes do not match the spatial rank");
  for (size_t d = 0; d < nsp; ++d) {
    const int64_t s = strides[d], k = kernel[d], ext = dil[d] * (k - 1) + 1;
    if (s < 1 || dil[d] < 1 || k < 1) return make_error("bad window attribute");
    int64_t pb = pads[d], pe = pads[nsp + d];
    if (auto_pad == "VALID") {
      pb = pe = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = std::max<int64_t>(0, (out[d] - 1) * s + ext - in[d]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (auto_pad != "NOTSET") {
      return make_error("auto_pad '" + auto_pad + "' is not handled");
    }
    const int64_t needed =
        (out[d] - 1) * s + ext - in[d] - pb;  // right pad that gives `out` exactly
    g.overhang |= needed > pe;
    g.strides.push_back(s);
    g.dilations.push_back(dil[d] - 1);
    g.pad_l.push_back(pb);
    g.pad_r.push_back(std::max(pe, needed));
  }
  return g;
}

bool winograd_candidate(const memory::dims& x, const memory::dims& w, const memory::dims& y, const WindowGeom& g,
                        int64_t group) {
  static const bool enabled = [] {
    const char* v = std::getenv("TESSERA_CONV_ALGO");
    return !(v && std::string(v) == "direct");
  }();
  if (!enabled || group != 1 || x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
  if (w[2] != 3 || w[3] != 3 || w[0] % 16 != 0 || w[1] % 16 != 0) return false;
  for (size_t d = 0; d < 2; ++d)
    if (g.strides[d] != 1 || g.dilations[d] != 0) return false;
  const int64_t tiles = y[0] * ((y[2] + 3) / 4) * ((y[3] + 3) / 4);
  return tiles >= 48;
}

// ---- activations ----

namespace {

// Maps an activation name with its parameters; nullopt when unknown.
std::optional<Activation> map_activation(const std::string& name, const KernelInit& init,
                                         bool fused) {
  using dnnl::algorithm;
  const auto param = [&](const char* fused_name, const char* plain_name, double dflt) {
    return static_cast<float>(fused ? attr_float(init, fused_name, dflt)
                                    : attr_float(init, plain_name, dflt));
  };
  if (name == "Relu") return Activation{algorithm::eltwise_relu, 0.f, 0.f, {}, ExactActivation{ActFn::kRelu}};
  if (name == "LeakyRelu") {  // with alpha != 0 a compare and blend (x > 0 ? x : alpha * x): keeps NaN
    const float alpha = param("activation_alpha", "alpha", 0.01);
    Activation a{algorithm::eltwise_relu, alpha, 0.f};
    if (alpha == 0.f) a.exact = ExactActivation{ActFn::kLeakyRelu, 0.f};
    return a;
  }
  if (name == "Sigmoid") return Activation{algorithm::eltwise_logistic, 0.f, 0.f};
  if (name == "Tanh") return Activation{algorithm::eltwise_tanh, 0.f, 0.f};
  if (name == "Sqrt") return Activation{algorithm::eltwise_sqrt, 0.f, 0.f};
  if (name == "Abs") return Activation{algorithm::eltwise_abs, 0.f, 0.f};
  if (name == "Elu")
    return Activation{algorithm::eltwise_elu, param("activation_alpha", "alpha", 1.0), 0.f};
  if (name == "HardSwish") return Activation{algorithm::eltwise_hardswish, 0.f, 0.f};
  if (name == "Swish") return Activation{algorithm::eltwise_swish, param("activation_alpha", "alpha", 1.0), 0.f};
  if (name == "HardSigmoid" && fused) {  // two post-ops; the unary kernel cannot chain them
    const float alpha = param("activation_alpha", "alpha", 0.2), beta = param("activation_beta", "beta", 0.5);
    if (!std::isfinite(alpha) || !std::isfinite(beta)) return std::nullopt;
    return Activation{algorithm::eltwise_linear, alpha, beta, EltwiseStep{algorithm::eltwise_clip_v2, 0.f, 1.f},
                      ExactActivation{ActFn::kHardSigmoid, alpha, beta}};
  }
  if (name == "Softplus") return Activation{algorithm::eltwise_soft_relu, 0.f, 0.f};
  if (name == "Neg") return Activation{algorithm::eltwise_linear, -1.f, 0.f};
  if (name == "Gelu") {
    const std::string mode = fused ? attr_string(init, "activation_approximate", "none")
                                   : attr_string(init, "approximate", "none");
    if (mode == "none") return Activation{algorithm::eltwise_gelu_erf, 0.f, 0.f};
    if (mode == "tanh") return Activation{algorithm::eltwise_gelu_tanh, 0.f, 0.f};
    return std::nullopt;
  }
  if (name == "Clip" && fused) {
    const float lo = param("activation_alpha", "", -INFINITY),
                hi = param("activation_beta", "", INFINITY);
    if (lo > hi) return std::nullopt;  // ONNX gives max everywhere; oneDNN's clip does not
    if (std::isnan(lo) || std::isnan(hi)) return std::nullopt;  // oneDNN throws appending it
    return Activation{algorithm::eltwise_clip_v2, lo, hi, {}, ExactActivation{ActFn::kClip, lo, hi}};
  }
  return std::nullopt;
}

}  // namespace

Expected<std::optional<Activation>> read_activation(const KernelInit& init) {
  const std::string name = attr_string(init, "activation", "");
  if (name.empty()) return std::optional<Activation>();
  std::optional<Activation> a = map_activation(name, init, /*fused=*/true);
  if (!a) return make_error("activation '" + name + "' is not mapped to oneDNN");
  // oneDNN throws appending a post-op with a NaN parameter (a Clip bound of NaN crashed the CLI).
  if (std::isnan(a->alpha) || std::isnan(a->beta))
    return make_error("activation '" + name + "' has a NaN parameter");
  return a;
}

void append_activation(dnnl::post_ops& po, const Activation& a) {
  po.append_eltwise(1.f, a.alg, a.alpha, a.beta);
  if (a.then) po.append_eltwise(1.f, a.then->alg, a.then->alpha, a.then->beta);
}

std::optional<Activation> unary_activation(const KernelInit& init) {
  return map_activation(init.node.op, init, /*fused=*/false);
}

// ---- the kernel base ----

Status OneDnnKernel::load() {
  return guarded(name_ + " '" + node_name_ + "' load", [&] {
    stream_ = dnnl::stream(ctx_->engine);
    do_load();
  });
}

Status OneDnnKernel::run(KernelRun& run) {
  return guarded(name_ + " '" + node_name_ + "' run", [&] {
    if (!stream_) throw std::runtime_error("run before load");
    do_run(run);
    stream_.wait();
  });
}

void* OneDnnKernel::aligned_scratch(const KernelRun& run) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(run.scratch.data);
  return reinterpret_cast<void*>((p + 63) & ~uintptr_t{63});
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void OneDnnKernel::need_scratch(const dnnl::primitive_desc_base& pd) {
  scratch_bytes_ = std::max(scratch_bytes_, pd.scratchpad_desc().get_size());
}

// ---- one-primitive kernels ----

Binding bind_input(int arg, size_t index, const memory::desc& md) {
  Binding b;
  b.arg = arg;
  b.index = index;
  b.md = md;
  return b;
}

Binding bind_output(int arg, size_t index, const memory::desc& md) {
  Binding b = bind_input(arg, index, md);
  b.source = Binding::Source::kOutput;
  return b;
}

Binding bind_constant(int arg, Tensor value, const memory::desc& md) {
  Binding b = bind_input(arg, 0, md);
  b.source = Binding::Source::kConstant;
  b.constant = value.contiguous();
  return b;
}

PrimitiveKernel::PrimitiveKernel(ContextPtr ctx, std::string impl, std::string node_name,
                                 const dnnl::primitive_desc_base& pd, std::vector<Binding> bindings,
                                 std::vector<size_t> out_bytes, NanRepair repair)
    : OneDnnKernel(std::move(ctx), std::move(impl), std::move(node_name)),
      pd_(pd),
      bindings_(std::move(bindings)),
      repair_(repair) {
  out_bytes_ = std::move(out_bytes);
  need_scratch(pd_);
}

void PrimitiveKernel::do_load() {
  const dnnl::engine& eng = ctx_->engine;
  prim_ = dnnl::primitive(pd_.get());
  scratchpad_ = memory(pd_.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
  for (Binding& b : bindings_)
    b.mem =
        memory(b.md, eng,
               b.source == Binding::Source::kConstant ? b.constant.raw_data() : DNNL_MEMORY_NONE);
}

void PrimitiveKernel::do_run(KernelRun& run) {
  std::unordered_map<int, memory> args = {{DNNL_ARG_SCRATCHPAD, scratchpad_}};
  scratchpad_.set_data_handle(aligned_scratch(run));
  for (Binding& b : bindings_) {
    if (b.source == Binding::Source::kInput) b.mem.set_data_handle(run.inputs.at(b.index).data);
    if (b.source == Binding::Source::kOutput) b.mem.set_data_handle(run.outputs.at(b.index).data);
    args[b.arg] = b.mem;
  }
  prim_.execute(stream_, args);
  if (repair_.kind != NanRepair::Kind::kNone) repair_nan(args);
}

void PrimitiveKernel::repair_nan(std::unordered_map<int, memory>& args) {
  const memory src = args.at(DNNL_ARG_SRC), dst = args.at(DNNL_ARG_DST);
  const auto* x = static_cast<const float*>(src.get_data_handle());
  auto* y = static_cast<float*>(dst.get_data_handle());
  const size_t nx = src.get_desc().get_size() / sizeof(float), ny = dst.get_desc().get_size() / sizeof(float);
  stream_.wait();
  if (repair_.kind == NanRepair::Kind::kSoftmax) {
    if (has_non_finite(x, nx)) repair_softmax_rows(x, y, repair_.outer, repair_.len, repair_.inner, repair_.log);
    return;
  }
  if (!has_nan(x, nx)) return;
  std::vector<float> mark_in(nx), mark_out(ny);
  nan_indicator(x, mark_in.data(), nx);
  args[DNNL_ARG_SRC] = memory(src.get_desc(), ctx_->engine, mark_in.data());
  args[DNNL_ARG_DST] = memory(dst.get_desc(), ctx_->engine, mark_out.data());
  prim_.execute(stream_, args);
  stream_.wait();
  apply_nan_mark(mark_out.data(), y, ny);
}

}  // namespace tessera::cpu
