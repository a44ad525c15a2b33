// Gradient rules of the element-wise and math families (elementwise.cpp, math_*.cpp).
#include "engine/autodiff/gradient.h"

namespace tessera::autodiff {
namespace {

using ops::GradientContext;
using ir::ValueId;

Status add_grad(GradientContext& g) {
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(dy, g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(dy, g.input(1)));
  return Status::ok();
}

Status sub_grad(GradientContext& g) {
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(dy, g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(g.emit("Neg", {dy}), g.input(1)));
  return Status::ok();
}

Status mul_grad(GradientContext& g) {
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(g.emit("Mul", {dy, g.input(1)}), g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(g.emit("Mul", {dy, g.input(0)}), g.input(1)));
  return Status::ok();
}

Status sum_grad(GradientContext& g) {
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.wants(i)) g.set_grad(i, g.unbroadcast(g.grad_output(0), g.input(i)));
  return Status::ok();
}

Status identity_grad(GradientContext& g) {
  if (g.wants(0)) g.set_grad(0, g.grad_output(0));
  return Status::ok();
}

Status relu_grad(GradientContext& g) {
  // dX = dY where Y > 0, else 0.
  ValueId zero = g.scalar(0.0, g.dtype(g.output(0)));
  ValueId mask = g.emit("Greater", {g.output(0), zero});
  if (g.wants(0)) g.set_grad(0, g.emit("Where", {mask, g.grad_output(0), g.zeros_like(g.output(0))}));
  return Status::ok();
}

}  // namespace

void register_elementwise_gradients(ops::OpRegistry& registry) {
  set_gradient(registry, "Add", add_grad);
  set_gradient(registry, "Sub", sub_grad);
  set_gradient(registry, "Mul", mul_grad);
  set_gradient(registry, "Sum", sum_grad);
  set_gradient(registry, "Identity", identity_grad);
  set_gradient(registry, "Relu", relu_grad);
}

}  // namespace tessera::autodiff
