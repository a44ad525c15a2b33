// Linear algebra (ONNX opset 11): Det, the determinant of each square matrix of the last two axes,
// by LU decomposition with partial pivoting in double.
#include <cmath>

#include "engine/ops/index_internal.h"

namespace tessera::ops {
namespace {

Expected<std::vector<TensorType>> infer_det(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
  if (x.rank() < 2) return node_error(ctx.node, "input must be [..., M, M], got " + x.to_string());
  const Dim &r = x.dims[x.dims.size() - 2], &c = x.dims.back();
  if (r.is_known() && c.is_known() && r != c)
    return node_error(ctx.node, "input must hold square matrices, got " + x.to_string());
  return std::vector<TensorType>{TensorType(x.dtype, std::vector<Dim>(x.dims.begin(), x.dims.end() - 2))};
}

Status det_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
    return node_error(ctx.node, "input must be [..., M, M], got " + shape_to_string(x.shape()));
  const int64_t m = x.dim(x.rank() - 1);
  const Shape out(x.shape().begin(), x.shape().end() - 2);
  TRY(Tensor y, make_tensor(DType::kF64, out, ctx.node));
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < y.numel(); ++b) {
    for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = x.get(b * m * m + i);
    double det = 1;
    for (int64_t k = 0; k < m && det != 0; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < m; ++i)
        if (std::fabs(a[static_cast<size_t>(i * m + k)]) > std::fabs(a[static_cast<size_t>(p * m + k)])) p = i;
      const double pivot = a[static_cast<size_t>(p * m + k)];
      if (pivot == 0) {
        det = 0;
        break;
      }
      if (p != k) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[static_cast<size_t>(k * m + j)], a[static_cast<size_t>(p * m + j)]);
        det = -det;
      }
      det *= pivot;
      for (int64_t i = k + 1; i < m; ++i) {
        const double f = a[static_cast<size_t>(i * m + k)] / pivot;
        for (int64_t j = k; j < m; ++j) a[static_cast<size_t>(i * m + j)] -= f * a[static_cast<size_t>(k * m + j)];
      }
    }
    y.data<double>()[b] = det;
  }
  ctx.outputs = {narrow(y.cast(dt == DType::kF64 ? DType::kF64 : DType::kF32), dt)};
  return Status::ok();
}

}  // namespace

void register_linalg_ops(OpRegistry& registry) {
  OpDef def("Det", "math", "The determinant of each square matrix of the last two axes.");
  def.input("X", "[..., M, M]").output("Y", "[...]");
  def.allowed_types = kFloatTypes;
  def.infer = infer_det;
  def.reference = det_kernel;
  registry.add(std::move(def));
}

}  // namespace tessera::ops
