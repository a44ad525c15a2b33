// register_gradients: attaches every family's gradient rules to the registry (op_def.h).
#include "engine/autodiff/gradient.h"

namespace tessera::ops {

void register_gradients(OpRegistry& registry) {
  autodiff::register_elementwise_gradients(registry);
  autodiff::register_tensor_gradients(registry);
  autodiff::register_nn_gradients(registry);
  autodiff::register_control_gradients(registry);
}

}  // namespace tessera::ops
