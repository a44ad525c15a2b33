// Gradient rules of control flow (If, Loop) and of the ops the stages and training insert.
#include "engine/autodiff/gradient.h"

namespace tessera::autodiff {

void register_control_gradients(ops::OpRegistry& registry) { (void)registry; }

}  // namespace tessera::autodiff
