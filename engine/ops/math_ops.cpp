// More element-wise math, logic and reduction ops (ONNX opset 17 semantics): the family's entry
// point and the helpers its files share (math_internal.h).
#include <string>
#include <vector>

#include "engine/ops/math_internal.h"

namespace tessera::ops {

Status check_kernel_type(const KernelContext& ctx, DType dt) {
  const std::vector<DType>& allowed = ctx.def.allowed_types;
  if (allowed.empty() || std::find(allowed.begin(), allowed.end(), dt) != allowed.end())
    return Status::ok();
  return node_error(ctx.node,
                    "element type " + dt_name(dt) + " is not supported by " + ctx.def.name);
}

Status check_kernel_dtype(const KernelContext& ctx, size_t index, DType want) {
  const DType got = ctx.in(index).dtype();
  if (got == want) return Status::ok();
  const std::string name =
      index < ctx.def.inputs.size() ? ctx.def.inputs[index].name : ctx.def.inputs.back().name;
  return node_error(ctx.node, "input " + std::to_string(index) + " ('" + name +
                                  "') has element type " + dt_name(got) + " but the op needs " +
                                  dt_name(want));
}

Expected<Shape> broadcast_tensors(const KernelContext& ctx, const std::vector<const Tensor*>& ts) {
  Shape out = ts.front()->shape();
  for (const Tensor* t : ts) {
    auto s = broadcast_shapes(out, t->shape());
    if (!s) return node_error(ctx.node, s.error().message);
    out = std::move(*s);
  }
  return out;
}

Expected<TensorType> broadcast_types(const InferContext& ctx, size_t first, DType out_dtype) {
  TensorType out(out_dtype, {});
  bool started = false;
  for (size_t i = first; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType& t = *ctx.inputs[i];
    if (!out.rank_known || !t.rank_known) {
      out = TensorType::unranked(out_dtype);
      continue;
    }
    if (!started) {
      out.dims = t.dims;
      started = true;
      continue;
    }
    auto dims = broadcast_dims(out.dims, t.dims);
    if (!dims) return node_error(ctx.node, dims.error().message);
    out.dims = std::move(*dims);
  }
  return out;
}

Expected<int64_t> scalar_int(const Tensor& t, const ir::Node& node, const std::string& what) {
  if (t.dtype() != DType::kI32 && t.dtype() != DType::kI64)
    return node_error(node, what + " must be i32 or i64, got " + dt_name(t.dtype()));
  if (t.numel() != 1 || t.rank() > 1)
    return node_error(node, what + " must hold one value (rank 0 or [1]), got shape " +
                                shape_to_string(t.shape()));
  return to_int64s(t)[0];
}

double flops_input_numel(const InferContext& ctx, const std::vector<TensorType>& /*outputs*/) {
  if (!ctx.has_input(0)) return 0;
  return static_cast<double>(std::max<int64_t>(ctx.inputs[0]->static_numel(), 0));
}

void register_math_ops(OpRegistry& registry) {
  register_math_binary_ops(registry);
  register_math_unary_ops(registry);
  register_math_reduce_ops(registry);
  register_math_index_ops(registry);
  register_math_generate_ops(registry);
  register_math_einsum_ops(registry);
}

}  // namespace tessera::ops
