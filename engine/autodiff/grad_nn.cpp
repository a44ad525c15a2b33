// Gradient rules of the nn families.
#include "engine/autodiff/gradient.h"

namespace tessera::autodiff {

void register_nn_gradients(ops::OpRegistry& registry) { (void)registry; }

}  // namespace tessera::autodiff
