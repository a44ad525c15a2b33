// More normalisations (ONNX opset 17): InstanceNormalization, LRN, MeanVarianceNormalization.
// Registered by register_loss_ops (loss_ops.cpp) through register_nn_more_norm_ops.
//
//   InstanceNormalization  y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], mean and
//                          (population) variance over the spatial axes of each (n, c)
//   LRN                    y = x / (bias + alpha / size * sum of x^2 over the channels
//                          [c - floor((size-1)/2), c + ceil((size-1)/2)]) ^ beta
//   MVN                    y = (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9), moments over `axes`
// Sums are accumulated in double.
#include <cmath>

#include "engine/ops/index_internal.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

// ---- InstanceNormalization ----

Expected<std::vector<TensorType>> infer_instance_norm(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(x);
  if (x.rank() < 3)
    return node_error(ctx.node, "input must be [N, C, D1, ...], got " + x.to_string());
  for (size_t i = 1; i <= 2; ++i) {
    const TensorType& p = *ctx.inputs[i];
    if (!p.rank_known) continue;
    if (p.rank() != 1 || (p.dims[0].is_known() && x.dims[1].is_known() && p.dims[0] != x.dims[1]))
      return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' " + p.to_string() +
                                      " must be [C] = [" + x.dims[1].to_string() + "]");
  }
  return one(x);
}

Status instance_norm_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const Tensor scale = widen(ctx.in(1)).contiguous();
  const Tensor bias = widen(ctx.in(2)).contiguous();
  if (x.rank() < 3) return node_error(ctx.node, "input must be [N, C, D1, ...]");
  const int64_t n = x.dim(0), c = x.dim(1), size = numel_of(x.shape(), 2, x.shape().size());
  if (scale.numel() != c || bias.numel() != c)
    return node_error(ctx.node, "'scale' and 'B' must have one value per channel");
  const double eps = ctx.attrs().f("epsilon");
  TRY(Tensor y, make_tensor(x.dtype(), x.shape(), ctx.node));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t p = 0; p < n * c; ++p) {
      const T* xp = x.data<T>() + p * size;
      T* yp = y.data<T>() + p * size;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < size; ++i) mean += static_cast<double>(xp[i]);
      mean /= static_cast<double>(size);
      for (int64_t i = 0; i < size; ++i) var += (xp[i] - mean) * (xp[i] - mean);
      var /= static_cast<double>(size);
      const double s = static_cast<double>(scale.data<T>()[p % c]) / std::sqrt(var + eps);
      const double b = static_cast<double>(bias.data<T>()[p % c]);
      for (int64_t i = 0; i < size; ++i) yp[i] = static_cast<T>((xp[i] - mean) * s + b);
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- LRN ----

Expected<std::vector<TensorType>> infer_lrn(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (ctx.attrs().i("size") < 1) return node_error(ctx.node, "size must be >= 1");
  if (x.rank_known && x.rank() < 3)
    return node_error(ctx.node, "input must be [N, C, D1, ...], got " + x.to_string());
  return one(x);
}

Status lrn_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  if (x.rank() < 3) return node_error(ctx.node, "input must be [N, C, D1, ...]");
  const AttrReader attrs = ctx.attrs();
  const int64_t size = attrs.i("size");
  if (size < 1) return node_error(ctx.node, "size must be >= 1");
  const double alpha = attrs.f("alpha"), beta = attrs.f("beta"), bias = attrs.f("bias");
  const int64_t n = x.dim(0), c = x.dim(1), sp = numel_of(x.shape(), 2, x.shape().size());
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  TRY(Tensor y, make_tensor(x.dtype(), x.shape(), ctx.node));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < sp; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
            const double v = static_cast<double>(px[(b * c + k) * sp + i]);
            sq += v * v;
          }
          const int64_t at = (b * c + ch) * sp + i;
          y.data<T>()[at] =
              static_cast<T>(static_cast<double>(px[at]) /
                             std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- MeanVarianceNormalization ----

// Per axis: whether it is reduced.
Expected<std::vector<bool>> mvn_axes(const Node& node, const AttrReader& attrs, int rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : attrs.ints("axes")) {
    TRY(int n, normalize_axis(a, rank, node));
    reduced[static_cast<size_t>(n)] = true;
  }
  return reduced;
}

Expected<std::vector<TensorType>> infer_mvn(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (x.rank_known) RETURN_IF_ERROR(mvn_axes(ctx.node, ctx.attrs(), x.rank()).status());
  return one(x);
}

Status mvn_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(std::vector<bool> reduced, mvn_axes(ctx.node, ctx.attrs(), x.rank()));
  // Group id of each element: its row-major index over the kept axes.
  std::vector<int64_t> group(static_cast<size_t>(x.numel()));
  int64_t groups = 1;
  for (int d = 0; d < x.rank(); ++d)
    if (!reduced[static_cast<size_t>(d)]) groups *= x.dim(d);
  std::vector<int64_t> pos(static_cast<size_t>(x.rank()), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t g = 0;
    for (int d = 0; d < x.rank(); ++d)
      if (!reduced[static_cast<size_t>(d)]) g = g * x.dim(d) + pos[static_cast<size_t>(d)];
    group[static_cast<size_t>(i)] = g;
    next_index(pos, x.shape());
  }
  TRY(Tensor y, make_tensor(x.dtype(), x.shape(), ctx.node));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(sum), cnt(sum);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const auto g = static_cast<size_t>(group[static_cast<size_t>(i)]);
      sum[g] += static_cast<double>(px[i]);
      sq[g] += static_cast<double>(px[i]) * static_cast<double>(px[i]);
      cnt[g] += 1;
    }
    for (int64_t i = 0; i < x.numel(); ++i) {
      const auto g = static_cast<size_t>(group[static_cast<size_t>(i)]);
      const double mean = sum[g] / cnt[g];
      const double var = std::max(0.0, sq[g] / cnt[g] - mean * mean);
      y.data<T>()[i] =
          static_cast<T>((static_cast<double>(px[i]) - mean) / (std::sqrt(var) + 1e-9));
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

}  // namespace

void register_nn_more_norm_ops(OpRegistry& registry) {
  {
    OpDef def("InstanceNormalization", "normalization",
              "Normalises each channel of each sample over its spatial axes, then scales and "
              "shifts per channel.");
    def.input("input", "[N, C, D1, ...]")
        .input("scale", "[C]")
        .input("B", "[C]")
        .output("output", "shape of 'input'");
    def.attr("epsilon", AttrKind::kFloat, Attribute(1e-5), "added to the variance");
    def.allowed_types = kFloatTypes;
    def.infer = infer_instance_norm;
    def.reference = instance_norm_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("LRN", "normalization",
              "Local response normalisation across nearby channels (AlexNet): "
              "x / (bias + alpha / size * sum of squares) ^ beta.");
    def.input("X", "[N, C, D1, ...]").output("Y", "shape of 'X'");
    def.required_attr("size", AttrKind::kInt, "number of channels summed over, >= 1");
    def.attr("alpha", AttrKind::kFloat, Attribute(1e-4), "scale of the sum of squares")
        .attr("beta", AttrKind::kFloat, Attribute(0.75), "exponent")
        .attr("bias", AttrKind::kFloat, Attribute(1.0), "added before the power");
    def.allowed_types = kFloatTypes;
    def.infer = infer_lrn;
    def.reference = lrn_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("MeanVarianceNormalization", "normalization",
              "(X - mean) / (std + 1e-9) with the mean and population standard deviation over "
              "'axes'.");
    def.input("X", "tensor").output("Y", "shape of 'X'");
    def.attr("axes", AttrKind::kInts, Attribute(std::vector<int64_t>{0, 2, 3}),
             "axes the moments are taken over; default [0, 2, 3] (per channel of NCHW)");
    def.allowed_types = kFloatTypes;
    def.infer = infer_mvn;
    def.reference = mvn_kernel;
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
