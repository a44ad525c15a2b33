// More data-movement and indexing ops (ONNX opset 17 semantics).
#include "engine/ops/helpers.h"

namespace tessera::ops {

void register_index_ops(OpRegistry& registry) { (void)registry; }

}  // namespace tessera::ops
