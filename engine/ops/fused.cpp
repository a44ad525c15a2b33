// Fused forms created by the optimiser (conv/matmul/gemm with bias, activation, residual add) and layout reorders.
#include "engine/ops/helpers.h"

namespace tessera::ops {

void register_fused_ops(OpRegistry& registry) { (void)registry; }

}  // namespace tessera::ops
