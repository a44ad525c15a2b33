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

// Checks a bucket's inputs (f32) and the world size the graph was split for; returns the floats.
Expected<int64_t> bucket_floats(const KernelContext& ctx, size_t first, dist::Communicator* comm) {
  int64_t total = 0;
  for (size_t i = first; i < ctx.inputs.size(); ++i) {
    if (ctx.in(i).dtype() != DType::kF32)
      return make_error(ctx.node.op + " sums f32 tensors, input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.in(i).dtype())));
    total += ctx.in(i).numel();
  }
  RETURN_IF_ERROR(dist::check_world_size(ctx.attrs().i("world_size"), comm));
  return total;
}

void pack(const KernelContext& ctx, size_t first, float* f) {
  int64_t at = 0;
  for (size_t i = first; i < ctx.inputs.size(); ++i) {
    const Tensor c = ctx.in(i).contiguous();
    std::memcpy(f + at, c.raw_data(), c.nbytes());
    at += c.numel();
  }
}

// The sums: each input's slice of the summed buffer `f`.
Status unpack(KernelContext& ctx, size_t first, const float* f) {
  int64_t at = 0;
  for (size_t i = first; i < ctx.inputs.size(); ++i) {
    TRY(Tensor out, Tensor::create_uninitialized(DType::kF32, ctx.in(i).shape()));
    std::memcpy(out.data<float>(), f + at, out.nbytes());
    at += out.numel();
    ctx.outputs.push_back(std::move(out));
  }
  return Status::ok();
}

// The sum over the ranks of each input: the inputs are packed into one flat buffer (a gradient
// bucket), summed by the current communicator (engine/dist), and unpacked (the optimizer update
// takes the mean: its grad_scale). Without a communicator (one process) each output is its input.
Status allreduce_kernel(KernelContext& ctx) {
  dist::Communicator* comm = dist::current();
  TRY(int64_t total, bucket_floats(ctx, 0, comm));
  TRY(Tensor flat, Tensor::create_uninitialized(DType::kF32, {total}));
  pack(ctx, 0, flat.data<float>());
  if (comm && comm->size() > 1) RETURN_IF_ERROR(comm->allreduce_sum(flat.data<float>(), total));
  return unpack(ctx, 0, flat.data<float>());
}

// AllReduceStart packs the bucket into its buffer (dist::bucket_buffer) and starts the sum; the
// token orders AllReduceWait after it.
Status allreduce_start_kernel(KernelContext& ctx) {
  dist::Communicator* comm = dist::current();
  TRY(int64_t total, bucket_floats(ctx, 0, comm));
  const int bucket = static_cast<int>(ctx.attrs().i("bucket"));
  float* f = dist::bucket_buffer(bucket, total);
  pack(ctx, 0, f);
  if (comm && comm->size() > 1) RETURN_IF_ERROR(comm->start_allreduce(bucket, f, total));
  ctx.outputs.push_back(Tensor::scalar<int64_t>(bucket));
  return Status::ok();
}

// AllReduceWait waits for the bucket's sum and writes the means (its inputs after the token give
// the shapes: the gradients as they were packed).
Status allreduce_wait_kernel(KernelContext& ctx) {
  dist::Communicator* comm = dist::current();
  TRY(int64_t total, bucket_floats(ctx, 1, comm));
  const int bucket = static_cast<int>(ctx.attrs().i("bucket"));
  if (comm && comm->size() > 1) RETURN_IF_ERROR(comm->wait_allreduce(bucket));
  return unpack(ctx, 1, dist::bucket_buffer(bucket, total));
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

  auto bucket_attrs = [](OpDef& d) {
    d.required_attr("bucket", AttrKind::kInt, "the bucket's index (buckets run in this order on every rank)");
    d.required_attr("bytes", AttrKind::kInt, "the bucket's size in bytes");
    d.required_attr("world_size", AttrKind::kInt, "the number of ranks the graph was split for");
    d.no_gradient_reason = "inserted after autodiff, in the training step's update";
    d.flops = [](const InferContext&, const std::vector<TensorType>&) { return 0.0; };
  };
  // Output types: the f32 inputs from `first` on.
  auto sums_of = [](size_t first) {
    return [first](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
      std::vector<TensorType> out;
      for (size_t i = first; i < ctx.num_inputs(); ++i) {
        if (!ctx.has_input(i)) return make_error("input " + std::to_string(i) + " is absent");
        if (ctx.inputs[i]->dtype != DType::kF32)
          return make_error("input " + std::to_string(i) + " is " + ctx.inputs[i]->to_string() + "; the all-reduce sums f32");
        out.push_back(*ctx.inputs[i]);
      }
      return out;
    };
  };

  OpDef allreduce("AllReduce", "runtime",
                  "The sum over the ranks of data-parallel training of each input (a gradient bucket), "
                  "blocking: the split stage's form without overlap. The inputs travel as one flat buffer; "
                  "the optimizer updates take the mean (grad_scale 1/ranks). With one process, the identity.");
  allreduce.input("X", "the bucket's gradients (f32)", false, true).output("Y", "their sums over the ranks", false, true);
  bucket_attrs(allreduce);
  allreduce.infer = sums_of(0);
  allreduce.reference = allreduce_kernel;
  registry.add(std::move(allreduce));

  OpDef start("AllReduceStart", "runtime",
              "Starts the sum over the ranks of a gradient bucket (packed into one flat buffer) and "
              "returns at once; scheduled as soon as the bucket's last gradient exists, so the sum runs "
              "while the backward pass goes on. Its token orders the AllReduceWait of the bucket.");
  start.input("X", "the bucket's gradients (f32)", false, true).output("token", "the bucket's index (i64 scalar)");
  bucket_attrs(start);
  start.attr(ir::kScheduleEarlyAttr, AttrKind::kInt, Attribute(int64_t{1}), "run as soon as the inputs exist");
  start.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      if (!ctx.has_input(i) || ctx.inputs[i]->dtype != DType::kF32)
        return make_error("input " + std::to_string(i) + " must be an f32 gradient");
    return std::vector<TensorType>{TensorType::of(DType::kI64, {})};
  };
  start.reference = allreduce_start_kernel;
  registry.add(std::move(start));

  OpDef wait("AllReduceWait", "runtime",
             "Waits for the bucket's sum started by AllReduceStart and gives each gradient's sum over "
             "the ranks (the gradients after the token give the shapes; the optimizer updates take the "
             "mean: grad_scale 1/ranks).");
  wait.input("token", "AllReduceStart's token").input("X", "the bucket's gradients, as started", false, true);
  wait.output("Y", "their sums over the ranks", false, true);
  bucket_attrs(wait);
  wait.attr(ir::kScheduleLateAttr, AttrKind::kInt, Attribute(int64_t{1}), "run when no other node is ready");
  wait.infer = sums_of(1);
  wait.reference = allreduce_wait_kernel;
  registry.add(std::move(wait));
}

}  // namespace tessera::ops
