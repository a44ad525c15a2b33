// Registration of the CPU kernels and the intra-op thread setting.
#include "engine/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

// What oneDNN 2.6 indexes with 32-bit integers: a tensor of 2^31 elements or more, and window
// attributes (pads, kernel, strides, dilations) past 2^24, made it divide by zero creating the
// primitive (SIGFPE: a 1-D Conv with pads of 2^30) or spin in it without end (pads of 2^31).
constexpr int64_t kOneDnnMaxElements = (int64_t{1} << 31) - 1;
constexpr int64_t kOneDnnMaxWindow = int64_t{1} << 24;

// Whether oneDNN may take this node, else why not: not an empty tensor (oneDNN 2.6 divides by zero
// creating a primitive for a zero-size dimension: SIGFPE; the vectorised and reference kernels
// handle them), at most DNNL_MAX_NDIMS dimensions (it throws beyond), and sizes within its 32-bit
// indexing (the reference kernel takes larger ones).
std::string onednn_refusal(const backend::KernelInit& init) {
  for (const auto* types : {&init.in_types, &init.out_types})
    for (const ir::TensorType* t : *types) {
      if (!t) continue;
      if (t->static_numel() == 0) return "an empty tensor";
      if (t->rank() > DNNL_MAX_NDIMS) return "rank over " + std::to_string(DNNL_MAX_NDIMS);
      if (t->static_numel() > kOneDnnMaxElements) return "a tensor of 2^31 elements or more";
    }
  for (const char* window : {"pads", "kernel_shape", "strides", "dilations", "output_padding"})
    if (const ir::Attribute* a = init.node.attr(window); a && a->kind() == ir::AttrKind::kInts)
      for (int64_t v : a->ints())
        if (v > kOneDnnMaxWindow || v < -kOneDnnMaxWindow) return std::string(window) + " past 2^24";
  return "";
}



// Adds every kernel of `onednn` to `to`, each declining (nullptr) what onednn_refusal refuses: one
// guard for every oneDNN factory, the layout pass's questions included.
void add_guarded(const backend::KernelRegistry& onednn, backend::KernelRegistry& to) {
  for (const std::string& op : onednn.ops())
    for (const backend::KernelRegistry::Entry* e : onednn.candidates(op))
      to.add(e->op, e->impl, e->priority,
             [factory = e->factory](const backend::KernelInit& init) -> Expected<std::unique_ptr<backend::Kernel>> {
               if (std::string why = onednn_refusal(init); !why.empty()) {
                 backend::set_decline_reason("oneDNN: " + why);
                 return std::unique_ptr<backend::Kernel>();
               }
               return factory(init);
             });
}

}  // namespace

void register_cpu_kernels(backend::KernelRegistry& registry) {
  std::shared_ptr<OneDnnContext> ctx;
  Status st = guarded("oneDNN CPU engine", [&] {
    ctx = std::make_shared<OneDnnContext>(OneDnnContext{dnnl::engine(dnnl::engine::kind::cpu, 0)});
  });
  if (st) {
    backend::KernelRegistry onednn;
    register_onednn_conv(onednn, ctx);
    register_onednn_matmul(onednn, ctx);
    register_onednn_nn(onednn, ctx);
    register_onednn_eltwise(onednn, ctx);
    register_onednn_grad(onednn, ctx);
    register_onednn_rnn(onednn, ctx);
    register_int8_kernels(onednn, ctx);
    add_guarded(onednn, registry);
  }
  register_vec_kernels(registry);
}

std::string bf16_unsupported() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  if (isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx) return "";
  std::string name = "an older ISA";
  switch (isa) {
    case dnnl::cpu_isa::sse41: name = "SSE4.1"; break;
    case dnnl::cpu_isa::avx: name = "AVX"; break;
    case dnnl::cpu_isa::avx2: name = "AVX2"; break;
    case dnnl::cpu_isa::avx2_vnni: name = "AVX2 VNNI"; break;
    case dnnl::cpu_isa::avx512_core: name = "AVX-512"; break;
    case dnnl::cpu_isa::avx512_core_vnni: name = "AVX-512 VNNI"; break;
    default: break;
  }
  std::string cap;
  for (const char* var : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* v = std::getenv(var); v && cap.empty()) cap = std::string(" (") + var + "=" + v + ")";
  return "this CPU offers oneDNN " + name + cap +
         ", without AVX-512 BF16 or AMX: bf16 would be emulated, slower than fp32 (use --precision fp32)";
}

void set_intra_op_threads(int n) {
  omp_set_num_threads(std::clamp(n, 1, kMaxThreads));
}

}  // namespace tessera::cpu
