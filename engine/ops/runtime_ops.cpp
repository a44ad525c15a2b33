// Ops the stages insert: Copy moves a value between devices (split stage), Reorder changes the
// physical layout of a value (optimiser's layout pass). Both are the identity on the logical
// tensor, which is what their reference kernels compute: the reference executor runs a split,
// laid-out graph and gets the same numbers.
#include <cstring>

#include "engine/dist/communicator.h"
#include "engine/ops/helpers.h"

namespace tessera::ops {
namespace {

Expected<std::vector<TensorType>> same_type(const InferContext& ctx) { return std::vector<TensorType>{*ctx.inputs[0]}; }

Status identity_kernel(KernelContext& ctx) {
  ctx.outputs.push_back(ctx.in(0).clone());
  return Status::ok();
}

// The mean over the ranks of each input: the inputs are packed into one flat buffer (a gradient
// bucket), summed by the current communicator (engine/dist), and unpacked scaled by 1/world.
// Without a communicator (one process) each output is its input.
Status allreduce_kernel(KernelContext& ctx) {
  int64_t total = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.in(i).dtype() != DType::kF32) return make_error("AllReduce sums f32 tensors, input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.in(i).dtype())));
    total += ctx.in(i).numel();
  }
  dist::Communicator* comm = dist::current();
  const int world = comm ? comm->size() : 1;
  const int64_t expect = ctx.attrs().i("world_size");
  if (comm && expect != world)
    return make_error("the graph was split for " + std::to_string(expect) + " ranks, this run has " + std::to_string(world));
  TRY(Tensor flat, Tensor::create_uninitialized(DType::kF32, {total}));
  float* f = flat.data<float>();
  int64_t at = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor c = ctx.in(i).contiguous();
    std::memcpy(f + at, c.raw_data(), c.nbytes());
    at += c.numel();
  }
  if (comm && world > 1) RETURN_IF_ERROR(comm->allreduce_sum(f, total));
  const float scale = 1.0f / static_cast<float>(world);
  at = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    TRY(Tensor out, Tensor::create_uninitialized(DType::kF32, ctx.in(i).shape()));
    float* o = out.data<float>();
    for (int64_t k = 0; k < out.numel(); ++k) o[k] = f[at + k] * scale;
    at += out.numel();
    ctx.outputs.push_back(std::move(out));
  }
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

  OpDef allreduce("AllReduce", "runtime",
                  "The mean over the ranks of data-parallel training of each input (a gradient bucket), "
                  "inserted by the split stage between the backward pass and the optimizer updates. "
                  "The inputs travel as one flat buffer. With one process, the identity.");
  allreduce.input("X", "the bucket's gradients (f32)", false, true).output("Y", "their means over the ranks", false, true);
  allreduce.required_attr("bucket", AttrKind::kInt, "the bucket's index (buckets run in this order on every rank)");
  allreduce.required_attr("bytes", AttrKind::kInt, "the bucket's size in bytes");
  allreduce.required_attr("world_size", AttrKind::kInt, "the number of ranks the graph was split for");
  allreduce.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    std::vector<TensorType> out;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return make_error("input " + std::to_string(i) + " is absent");
      if (ctx.inputs[i]->dtype != DType::kF32) return make_error("input " + std::to_string(i) + " is " + ctx.inputs[i]->to_string() + "; AllReduce sums f32");
      out.push_back(*ctx.inputs[i]);
    }
    return out;
  };
  allreduce.reference = allreduce_kernel;
  allreduce.no_gradient_reason = "inserted after autodiff, in the training step's update";
  allreduce.flops = [](const InferContext&, const std::vector<TensorType>&) { return 0.0; };
  registry.add(std::move(allreduce));
}

}  // namespace tessera::ops
