// Registration of the CPU kernels and the intra-op thread setting.
#include "engine/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {

void register_cpu_kernels(backend::KernelRegistry& registry) {
  std::shared_ptr<OneDnnContext> ctx;
  Status st = guarded("oneDNN CPU engine", [&] {
    ctx = std::make_shared<OneDnnContext>(OneDnnContext{dnnl::engine(dnnl::engine::kind::cpu, 0)});
  });
  if (st) {
    register_onednn_conv(registry, ctx);
    register_onednn_matmul(registry, ctx);
    register_onednn_nn(registry, ctx);
    register_onednn_eltwise(registry, ctx);
    register_onednn_grad(registry, ctx);
  }
  register_vec_kernels(registry);
}

void set_intra_op_threads(int n) {
  omp_set_num_threads(std::max(1, n));
}

}  // namespace tessera::cpu
