// More element-wise math, logic and reduction ops (ONNX opset 17 semantics).
#include "engine/ops/helpers.h"

namespace tessera::ops {

void register_math_ops(OpRegistry& registry) { (void)registry; }

}  // namespace tessera::ops
