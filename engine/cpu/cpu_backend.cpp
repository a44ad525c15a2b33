// Registration of the CPU kernels and the intra-op thread setting.
#include "engine/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

// Whether oneDNN may take this node: not an empty tensor (oneDNN 2.6 divides by zero creating a
// primitive for a zero-size dimension: SIGFPE; the vectorised and reference kernels handle them),
// and at most DNNL_MAX_NDIMS dimensions (it throws beyond).
bool onednn_may_take(const backend::KernelInit& init) {
  for (const auto* types : {&init.in_types, &init.out_types})
    for (const ir::TensorType* t : *types)
      if (t && (t->static_numel() == 0 || t->rank() > DNNL_MAX_NDIMS)) return false;
  return true;
}

// Adds every kernel of `onednn` to `to`, each declining (nullptr) what onednn_may_take refuses: one
// guard for every oneDNN factory, the layout pass's questions included.
void add_guarded(const backend::KernelRegistry& onednn, backend::KernelRegistry& to) {
  for (const std::string& op : onednn.ops())
    for (const backend::KernelRegistry::Entry* e : onednn.candidates(op))
      to.add(e->op, e->impl, e->priority,
             [factory = e->factory](const backend::KernelInit& init) -> Expected<std::unique_ptr<backend::Kernel>> {
               if (!onednn_may_take(init)) return std::unique_ptr<backend::Kernel>();
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

void set_intra_op_threads(int n) {
  omp_set_num_threads(std::clamp(n, 1, kMaxThreads));
}

}  // namespace tessera::cpu
