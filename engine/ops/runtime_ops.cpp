// Ops the stages insert: Copy moves a value between devices (split stage), Reorder changes the
// physical layout of a value (optimiser's layout pass). Both are the identity on the logical
// tensor, which is what their reference kernels compute: the reference executor runs a split,
// laid-out graph and gets the same numbers.
#include "engine/ops/helpers.h"

namespace tessera::ops {
namespace {

Expected<std::vector<TensorType>> same_type(const InferContext& ctx) { return std::vector<TensorType>{*ctx.inputs[0]}; }

Status identity_kernel(KernelContext& ctx) {
  ctx.outputs.push_back(ctx.in(0).clone());
  return Status::ok();
}

}  // namespace

void register_runtime_ops(OpRegistry& registry) {
  OpDef copy("Copy", "runtime",
             "Copies a value from one device to another (inserted by the split stage on cut edges). "
             "Identity on the tensor.");
  copy.input("X", "value on the source device").output("Y", "the same value on the destination device");
  copy.required_attr("from", AttrKind::kString, "source device name (\"cpu\", \"cpu:test\", \"cuda:0\")");
  copy.required_attr("to", AttrKind::kString, "destination device name");
  copy.infer = same_type;
  copy.reference = identity_kernel;
  copy.no_gradient_reason = "inserted after autodiff; the gradient of a copy is a copy back, made by the split stage";
  copy.flops = [](const InferContext&, const std::vector<TensorType>&) { return 0.0; };
  registry.add(std::move(copy));

  OpDef reorder("Reorder", "runtime",
                "Changes the physical layout of a value (plain row-major <-> a oneDNN blocked format); "
                "identity on the logical tensor.");
  reorder.input("X", "input in its current layout").output("Y", "the same tensor in layout `to`");
  reorder.required_attr("to", AttrKind::kString, "target layout: \"\" (plain) or a oneDNN tag such as \"nChw16c\"");
  reorder.infer = same_type;
  reorder.reference = identity_kernel;
  reorder.no_gradient_reason = "inserted by the optimiser after autodiff";
  reorder.flops = [](const InferContext&, const std::vector<TensorType>&) { return 0.0; };
  registry.add(std::move(reorder));
}

}  // namespace tessera::ops
