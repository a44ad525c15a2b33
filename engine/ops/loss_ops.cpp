// Losses and further nn ops (ONNX opset 17 semantics).
#include "engine/ops/helpers.h"

namespace tessera::ops {

void register_loss_ops(OpRegistry& registry) { (void)registry; }

}  // namespace tessera::ops
