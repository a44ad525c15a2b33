// Internal to engine/cpu: the oneDNN context shared by the kernels, memory descriptors from IR
// types and layout tags, attribute reading with defaults, fused activations, and the base class
// that turns oneDNN exceptions into Status values.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backend/kernel.h"
#include "engine/core/status.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/nan_repair.h"

namespace tessera::cpu {

using backend::Kernel;
using backend::KernelInit;
using backend::KernelRegistry;
using backend::KernelRun;
using backend::LayoutTag;
using KernelPtr = std::unique_ptr<Kernel>;
using dnnl::memory;

// The oneDNN CPU engine, created once per register_cpu_kernels call and shared by its kernels.
struct OneDnnContext {
  dnnl::engine engine;
};
using ContextPtr = std::shared_ptr<const OneDnnContext>;

// Registration of each family (one per source file).
void register_onednn_conv(KernelRegistry& registry, const ContextPtr& ctx);    // onednn_conv.cpp
void register_onednn_matmul(KernelRegistry& registry, const ContextPtr& ctx);  // onednn_matmul.cpp
void register_onednn_nn(KernelRegistry& registry, const ContextPtr& ctx);      // onednn_nn.cpp
void register_onednn_grad(KernelRegistry& registry, const ContextPtr& ctx);    // onednn_grad.cpp
void register_onednn_rnn(KernelRegistry& registry, const ContextPtr& ctx);     // onednn_rnn.cpp
void register_int8_kernels(KernelRegistry& registry, const ContextPtr& ctx);   // int8_kernels.cpp
void register_onednn_eltwise(KernelRegistry& registry,
                             const ContextPtr& ctx);  // onednn_eltwise.cpp
void register_vec_kernels(KernelRegistry& registry);  // vec_kernels.cpp
void register_vec_train(KernelRegistry& registry);    // vec_train.cpp
void register_vec_norm(KernelRegistry& registry);     // vec_norm.cpp
void register_vec_conv(KernelRegistry& registry);     // vec_conv.cpp
void register_vec_detection(KernelRegistry& registry);  // vec_detection.cpp
void register_vec_small(KernelRegistry& registry);      // vec_small.cpp
void register_vec_unary(KernelRegistry& registry);      // vec_unary.cpp
void register_vec_dist(KernelRegistry& registry);     // vec_dist.cpp

// ---- errors ----

// "<impl> '<node name>': <what>" as an Error carrying the node id.
Error kernel_error(const KernelInit& init, const std::string& impl, const std::string& what);
// The factory's answer when it cannot take a node: nullptr (decline, the reference takes over) if
// every layout is plain, an error otherwise (nobody else can read blocked buffers).
Expected<KernelPtr> decline(const KernelInit& init, const std::string& impl,
                            const std::string& why);
bool all_plain(const KernelInit& init);

// Runs f(); oneDNN and standard exceptions become an Error naming `what`.
template <class F>
Status guarded(const std::string& what, F&& f) noexcept {
  try {
    f();
    return Status::ok();
  } catch (const dnnl::error& e) {
    return make_error(what + ": oneDNN error " + std::to_string(static_cast<int>(e.status)) + ": " +
                      e.what());
  } catch (const std::exception& e) {
    return make_error(what + ": " + e.what());
  } catch (...) {
    return make_error(what + ": unknown exception");
  }
}

// ---- types and descriptors ----

// Input i's type, compile-time value and layout; nullptr / "" when absent or out of range.
const ir::TensorType* input_type(const KernelInit& init, size_t i);
const Tensor* constant_at(const KernelInit& init, size_t i);
LayoutTag layout_at(const KernelInit& init, size_t i);

// A present input or output with a static f32 type.
bool is_static_f32(const ir::TensorType* t);
// Dims of a static type as oneDNN dims; a rank-0 tensor becomes {1}.
memory::dims dims_of(const ir::TensorType& t);
// Contiguous row-major descriptor (f32 unless `type` says otherwise).
memory::desc plain_md(const memory::dims& dims, memory::data_type type = memory::data_type::f32);
// A convolution's weights [M, C/group, k...] as oneDNN's grouped [group, M/group, C/group, k...]
// (unchanged for one group).
memory::dims grouped_weight_dims(const memory::dims& w, int64_t group);
// Descriptor of a static f32 tensor in `layout` ("" plain, "nChw16c", "nChw8c", "nCdhw16c", ...).
// An unknown tag or a rank that does not fit it is an error.
// `type` other than f32: the same tag over 8-bit or 32-bit elements (the int8 kernels, Reorder).
Expected<memory::desc> layout_md(const memory::dims& dims, const LayoutTag& layout,
                                 memory::data_type type = memory::data_type::f32);
// The block ("nChw16c" -> 16), 0 for plain or unknown tags.
int layout_block(const LayoutTag& layout);

// ---- attributes (node value, else the schema default, else `dflt`) ----

int64_t attr_int(const KernelInit& init, const std::string& name, int64_t dflt);
double attr_float(const KernelInit& init, const std::string& name, double dflt);
std::string attr_string(const KernelInit& init, const std::string& name, const std::string& dflt);
std::vector<int64_t> attr_ints(const KernelInit& init, const std::string& name,
                               std::vector<int64_t> dflt);

// ---- sliding windows (Conv, pools) ----

// oneDNN's view of an ONNX window: auto_pad resolved, dilations minus one, and pad_r raised where
// the output (from the inferred type, ceil_mode included) needs more than the ONNX end pad.
struct WindowGeom {
  memory::dims strides, kernel, dilations, pad_l, pad_r;
  bool overhang = false;  // some pad_r was raised past the ONNX end pad (ceil_mode)
};
// `kernel`, `in` and `out` are the spatial extents. Errors for attributes we do not map.
Expected<WindowGeom> window_geom(const KernelInit& init, const memory::dims& kernel,
                                 const memory::dims& in, const memory::dims& out);

// Winograd F(4x4, 3x3) (oneDNN 2.6's jit_wino_4x3, AVX-512 only) for the convolutions where it
// beats the direct kernels: 2-D, 3x3, stride 1, undilated, one group, input and output channels in
// multiples of 16, and at least 48 output tiles of 4x4 (N * ceil(OH/4) * ceil(OW/4)). Measured on
// an AMD EPYC (Zen 4), 2 threads: 2 to 2.8x faster forward, backward-data and backward-weights at
// batch 64 on ResNet-18's 32x32 to 4x4 layers; slower below about 32 tiles (ResNet-50's 7x7 layers
// at batch 1). TESSERA_CONV_ALGO=direct turns it off (benchmarks, numerical comparisons).
bool winograd_candidate(const memory::dims& x, const memory::dims& w, const memory::dims& y, const WindowGeom& g,
                        int64_t group);
// Builds with convolution_winograd when `wino`, falling back to convolution_direct when oneDNN has
// no Winograd implementation for it (no AVX-512, unsupported post-ops): make(algorithm) creates
// the primitive descriptors and may throw dnnl::error.
template <class F>
void with_conv_algorithm(bool wino, F&& make) {
  if (wino) {
    try {
      make(dnnl::algorithm::convolution_winograd);
      return;
    } catch (const dnnl::error&) {
    }
  }
  make(dnnl::algorithm::convolution_direct);
}

// make(memory::data_type::bf16) when `bf16` (KernelInit::bf16), falling back to
// make(memory::data_type::f32) when oneDNN has no bf16 kernel for it (make throws dnnl::error).
template <class F>
void with_bf16_fallback(bool bf16, F&& make) {
  if (bf16) {
    try {
      make(memory::data_type::bf16);
      return;
    } catch (const dnnl::error&) {
    }
  }
  make(memory::data_type::f32);
}

// ---- fused activations ----

// One eltwise step, then optionally a second (HardSigmoid: linear, then a clip to [0, 1]).
struct EltwiseStep {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
};
struct Activation {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
  std::optional<EltwiseStep> then;
  // Set where the post-ops turn NaN into a number: oneDNN's relu with alpha 0 is max(x, 0) and its
  // clip is max, then min (the x86 max gives its second operand when either is NaN). A fused
  // kernel with such an activation checks its inputs each run and, when one holds a NaN or an
  // infinity, runs a primitive without the activation and applies this loop, which keeps NaN.
  // (No chain of post-ops keeps NaN and every other value exactly: elu with alpha 0 does for
  // Relu, but rules out Winograd and doubles a depthwise convolution's time.)
  std::optional<ExactActivation> exact;
};
// Appends `a` as eltwise post-op(s).
void append_activation(dnnl::post_ops& po, const Activation& a);
// The activation of a fused node (attrs activation, activation_alpha, activation_beta): nullopt
// for "" and an error for a name we do not map.
Expected<std::optional<Activation>> read_activation(const KernelInit& init);
// Eltwise algorithm of an element-wise op name with its attributes (Relu, LeakyRelu, Gelu, ...);
// nullopt when not mapped (or an attribute we do not handle).
std::optional<Activation> unary_activation(const KernelInit& init);

// ---- the kernel base ----

// A primitive_attr with a user scratchpad (the planner's scratch buffer).
dnnl::primitive_attr user_scratchpad_attr();

// A kernel whose work is oneDNN primitives. Subclasses build descriptors in the factory (so that
// a failure there declines), create primitives and prepack constants in do_load(), and execute
// in do_run(); both may throw, the base converts.
class OneDnnKernel : public Kernel {
 public:
  OneDnnKernel(ContextPtr ctx, std::string name, std::string node_name)
      : ctx_(std::move(ctx)), name_(std::move(name)), node_name_(std::move(node_name)) {}
  std::string name() const override { return name_; }
  size_t output_bytes(size_t i) const override { return i < out_bytes_.size() ? out_bytes_[i] : 0; }
  size_t scratch_bytes() const override { return scratch_bytes_ == 0 ? 0 : scratch_bytes_ + 64; }
  Status load() override;
  Status run(KernelRun& run) override;

 protected:
  virtual void do_load() = 0;
  virtual void do_run(KernelRun& run) = 0;
  // The scratch buffer aligned to 64 bytes (the base reserves the slack).
  static void* aligned_scratch(const KernelRun& run);
  // Records a primitive's scratchpad need (max over calls).
  void need_scratch(const dnnl::primitive_desc_base& pd);

  ContextPtr ctx_;
  std::string name_, node_name_;
  dnnl::stream stream_;
  std::vector<size_t> out_bytes_;
  size_t scratch_bytes_ = 0;
};

// One memory argument of a primitive: a node input, a node output, or a constant the kernel holds.
struct Binding {
  enum class Source { kInput, kOutput, kConstant };
  int arg = 0;  // DNNL_ARG_*
  Source source = Source::kInput;
  size_t index = 0;  // input or output index
  memory::desc md;
  Tensor constant;  // for kConstant (contiguous f32, laid out as md)
  memory mem;
};
Binding bind_input(int arg, size_t index, const memory::desc& md);
Binding bind_output(int arg, size_t index, const memory::desc& md);
Binding bind_constant(int arg, Tensor value, const memory::desc& md);

// How a primitive that drops NaN gets the reference kernels' NaN back (nan_repair.h), checked
// after each run on its SRC: kWindow for max pooling and max reduction (the primitive runs again
// on a 0/1 map of where the NaNs are: the outputs it gives a 1 become NaN), kSoftmax for Softmax
// and LogSoftmax over a plain [outer, len, inner] along the middle axis.
struct NanRepair {
  enum class Kind { kNone, kWindow, kSoftmax } kind = Kind::kNone;
  int64_t outer = 0, len = 0, inner = 0;
  bool log = false;
};

// A kernel that executes one primitive whose descriptor the factory made (with
// user_scratchpad_attr()); output i is out_bytes[i] long.
class PrimitiveKernel : public OneDnnKernel {
 public:
  PrimitiveKernel(ContextPtr ctx, std::string impl, std::string node_name,
                  const dnnl::primitive_desc_base& pd, std::vector<Binding> bindings,
                  std::vector<size_t> out_bytes, NanRepair repair = {});
  std::string detail() const override { return pd_.impl_info_str(); }

 protected:
  void do_load() override;
  void do_run(KernelRun& run) override;

 private:
  void repair_nan(std::unordered_map<int, memory>& args);

  dnnl::primitive_desc_base pd_;
  dnnl::primitive prim_;
  std::vector<Binding> bindings_;
  memory scratchpad_;
  NanRepair repair_;
};

// Creates a PrimitiveKernel from a descriptor-making function (which may throw): a failure
// declines (or errors for blocked layouts, see decline()).
template <class MakePd>
Expected<KernelPtr> primitive_kernel(const ContextPtr& ctx, const KernelInit& init,
                                     const std::string& impl, MakePd&& make_pd,
                                     std::vector<Binding> bindings, std::vector<size_t> out_bytes,
                                     NanRepair repair = {}) {
  std::unique_ptr<PrimitiveKernel> k;
  Status st = guarded(impl, [&] {
    k = std::make_unique<PrimitiveKernel>(ctx, impl, init.node.name, make_pd(ctx->engine),
                                          std::move(bindings), std::move(out_bytes), repair);
  });
  if (!st) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

}  // namespace tessera::cpu
