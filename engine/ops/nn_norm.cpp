// Normalisation and regularisation: BatchNormalization (inference), LayerNormalization, Dropout.
#include <cmath>
#include <random>

#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

std::vector<Dim> dims_of(const Tensor& t) {
  return TensorType::of(t.dtype(), t.shape()).dims;
}

Status check_float_input(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i) || is_float(ctx.inputs[i]->dtype)) return Status::ok();
  return node_error(ctx.node, "input '" + ctx.def.inputs[i].name +
                                  "' must be a float tensor, got " +
                                  std::string(dtype_name(ctx.inputs[i]->dtype)));
}

// ---- BatchNormalization ----------------------------------------------------------------------

const char* const kBatchNormParams[] = {"scale", "B", "input_mean", "input_var"};

// Checks X is [N, C, ...] and each per-channel input is [C]; returns C.
Expected<Dim> batchnorm_channels(const ir::Node& node, const std::vector<Dim>& x,
                                 const std::vector<const std::vector<Dim>*>& params) {
  if (x.size() < 2)
    return node_error(node, "input 'X' must be [N, C, ...], got " + dims_to_string(x));
  const Dim& c = x[1];
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i]) continue;
    const std::vector<Dim>& p = *params[i];
    if (p.size() != 1 || (p[0].is_known() && c.is_known() && p[0].size != c.size))
      return node_error(node, "input '" + std::string(kBatchNormParams[i]) + "' " +
                                  dims_to_string(p) + " must be [C] = [" + c.to_string() +
                                  "] for 'X' " + dims_to_string(x));
  }
  return c;
}

Expected<std::vector<TensorType>> infer_batchnorm(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  for (size_t i = 1; i < 5; ++i) RETURN_IF_ERROR(check_float_input(ctx, i));
  const size_t nout = ctx.node.outputs.size();
  if (nout > 1 && ctx.attrs().i("training_mode") == 0)
    return node_error(ctx.node,
                      "outputs running_mean and running_var exist only with training_mode=1");
  const TensorType& x = *ctx.inputs[0];
  std::vector<TensorType> out{x};
  Dim c = Dim::unknown();
  if (x.rank_known) {
    std::vector<const std::vector<Dim>*> params;
    for (size_t i = 1; i < 5; ++i)
      params.push_back(ctx.inputs[i]->rank_known ? &ctx.inputs[i]->dims : nullptr);
    TRY(c, batchnorm_channels(ctx.node, x.dims, params));
  }
  for (size_t i = 1; i < nout; ++i) out.emplace_back(ctx.inputs[2 + i]->dtype, std::vector<Dim>{c});
  return out;
}

// y = scale * (x - mean) / sqrt(var + epsilon) + B, per channel (axis 1).
Status batchnorm_kernel(KernelContext& ctx) {
  const AttrReader attrs = ctx.attrs();
  if (attrs.i("training_mode") != 0)
    return node_error(ctx.node, "training_mode=1 is not supported yet (inference only)");
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  std::vector<std::vector<Dim>> pdims;
  for (size_t i = 1; i < 5; ++i) pdims.push_back(dims_of(ctx.in(i)));
  TRY(Dim c,
      batchnorm_channels(ctx.node, dims_of(x), {&pdims[0], &pdims[1], &pdims[2], &pdims[3]}));
  const double eps = attrs.f("epsilon");
  // Per channel: y = x * a + b.
  const std::vector<double> scale = ctx.in(1).to_doubles(), bias = ctx.in(2).to_doubles();
  const std::vector<double> mean = ctx.in(3).to_doubles(), var = ctx.in(4).to_doubles();
  std::vector<double> a(static_cast<size_t>(c.size)), b(static_cast<size_t>(c.size));
  for (size_t ch = 0; ch < a.size(); ++ch) {
    a[ch] = scale[ch] / std::sqrt(var[ch] + eps);
    b[ch] = bias[ch] - mean[ch] * a[ch];
  }
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  const int64_t spatial = x.dim(0) * c.size == 0 ? 0 : x.numel() / (x.dim(0) * c.size);
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t n = 0; n < x.dim(0); ++n)
      for (int64_t ch = 0; ch < c.size; ++ch) {
        const int64_t base = (n * c.size + ch) * spatial;
        for (int64_t i = 0; i < spatial; ++i)
          py[base + i] = static_cast<T>(static_cast<double>(px[base + i]) * a[ch] + b[ch]);
      }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

// ---- LayerNormalization ----------------------------------------------------------------------

// stash_type is an ONNX TensorProto data type: 1 float, 11 double.
Expected<DType> stash_dtype(const ir::Node& node, int64_t stash) {
  if (stash == 1) return DType::kF32;
  if (stash == 11) return DType::kF64;
  return node_error(
      node, "stash_type " + std::to_string(stash) + " is not supported (1: float, 11: double)");
}

struct LayerNormDims {
  int axis = 0;
  std::vector<Dim> stats;  // Mean and InvStdDev: X's leading dims, then 1s
};

Expected<LayerNormDims> layernorm_dims(const ir::Node& node, const AttrReader& attrs,
                                       const std::vector<Dim>& x, const std::vector<Dim>* scale,
                                       const std::vector<Dim>* bias) {
  const int rank = static_cast<int>(x.size());
  if (rank == 0) return node_error(node, "input 'X' must have rank >= 1");
  LayerNormDims r;
  TRY(r.axis, normalize_axis(attrs.i("axis"), rank, node));
  const std::vector<Dim> normalized(x.begin() + r.axis, x.end());
  if (scale) RETURN_IF_ERROR(check_unidirectional(node, *scale, normalized, "input 'Scale'"));
  if (bias) RETURN_IF_ERROR(check_unidirectional(node, *bias, normalized, "input 'B'"));
  r.stats.assign(x.begin(), x.begin() + r.axis);
  r.stats.resize(x.size(), Dim::known(1));
  return r;
}

Expected<std::vector<TensorType>> infer_layernorm(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  TRY(DType stash, stash_dtype(ctx.node, ctx.attrs().i("stash_type")));
  const TensorType& x = *ctx.inputs[0];
  std::vector<TensorType> out{x};
  TensorType stats = TensorType::unranked(stash);
  if (x.rank_known) {
    auto known = [&](size_t i) {
      return ctx.has_input(i) && ctx.inputs[i]->rank_known ? &ctx.inputs[i]->dims : nullptr;
    };
    TRY(LayerNormDims d, layernorm_dims(ctx.node, ctx.attrs(), x.dims, known(1), known(2)));
    stats = TensorType(stash, d.stats);
  }
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i) out.push_back(stats);
  return out;
}

// Values of `t` broadcast to `shape` (unidirectionally), as doubles in row-major order.
std::vector<double> expand(const Tensor& t, const Shape& shape) {
  const Tensor c = t.contiguous();
  const std::vector<int64_t> st = broadcast_strides(c.shape(), shape);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      off += (rest % shape[d]) * st[d];
      rest /= shape[d];
    }
    out[static_cast<size_t>(i)] = c.get(off);
  }
  return out;
}

// Over the axes from `axis` on: y = (x - mean) / sqrt(var + epsilon) * Scale + B.
// Statistics are computed in double and stored in the stash type.
Status layernorm_kernel(KernelContext& ctx) {
  const AttrReader attrs = ctx.attrs();
  const DType dt = ctx.in(0).dtype();
  TRY(DType stash, stash_dtype(ctx.node, attrs.i("stash_type")));
  const Tensor x = widen(ctx.in(0)).contiguous();
  const std::vector<Dim> sd = dims_of(ctx.in(1));
  const std::vector<Dim> bd = ctx.has_input(2) ? dims_of(ctx.in(2)) : std::vector<Dim>{};
  TRY(LayerNormDims d,
      layernorm_dims(ctx.node, attrs, dims_of(x), &sd, ctx.has_input(2) ? &bd : nullptr));
  const Shape normalized(x.shape().begin() + d.axis, x.shape().end());
  const std::vector<double> scale = expand(ctx.in(1), normalized);
  const std::vector<double> bias =
      ctx.has_input(2) ? expand(ctx.in(2), normalized) : std::vector<double>(scale.size(), 0.0);
  const int64_t inner = static_cast<int64_t>(scale.size());
  const int64_t outer = inner == 0 ? 0 : x.numel() / inner;
  const double eps = attrs.f("epsilon");
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  const Shape stats_shape = TensorType(stash, d.stats).static_shape();
  TRY(Tensor mean_out, Tensor::create(stash, stats_shape));
  TRY(Tensor inv_out, Tensor::create(stash, stats_shape));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = px + o * inner;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += static_cast<double>(row[j]);
      mean /= static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j) var += (row[j] - mean) * (row[j] - mean);
      var /= static_cast<double>(inner);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < inner; ++j)
        py[o * inner + j] = static_cast<T>((row[j] - mean) * inv * scale[j] + bias[j]);
      mean_out.set(o, mean);
      inv_out.set(o, inv);
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, dt)};
  if (ctx.node.outputs.size() > 1) ctx.outputs.push_back(mean_out);
  if (ctx.node.outputs.size() > 2) ctx.outputs.push_back(inv_out);
  return Status::ok();
}

// ---- Dropout ---------------------------------------------------------------------------------

// A scalar, or a tensor with one element; unknown sizes pass.
Status check_scalar(const ir::Node& node, const TensorType& t, const std::string& what) {
  if (!t.rank_known) return Status::ok();
  for (const Dim& d : t.dims)
    if (d.is_known() && d.size != 1)
      return node_error(node, "input '" + what + "' must be a scalar, got " + t.to_string());
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_dropout(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_float_input(ctx, 1));
  if (ctx.has_input(1)) RETURN_IF_ERROR(check_scalar(ctx.node, *ctx.inputs[1], "ratio"));
  if (ctx.has_input(2)) {
    if (ctx.inputs[2]->dtype != DType::kBool)
      return node_error(ctx.node,
                        "input 'training_mode' must be bool, got " + ctx.inputs[2]->to_string());
    RETURN_IF_ERROR(check_scalar(ctx.node, *ctx.inputs[2], "training_mode"));
  }
  const TensorType& x = *ctx.inputs[0];
  std::vector<TensorType> out{x};
  if (ctx.node.outputs.size() > 1) {
    TensorType mask = x;
    mask.dtype = DType::kBool;
    out.push_back(mask);
  }
  return out;
}

// Inference (training_mode absent or false, or ratio 0): a copy of the data and an all-true mask.
// Training: element i is kept when u_i >= ratio and scaled by 1 / (1 - ratio), where u_i is the
// i-th draw of mt19937_64 seeded with `seed` (0 when absent), taken as (draw >> 11) * 2^-53. The
// reference kernel is stateless, so a node draws the same mask on every run.
Status dropout_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const double ratio = ctx.has_input(1) ? ctx.in(1).get(0) : 0.5;
  const bool training = ctx.has_input(2) && ctx.in(2).get(0) != 0;
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  TRY(Tensor mask, Tensor::create(DType::kBool, x.shape()));
  uint8_t* pm = mask.data<uint8_t>();
  if (!training || ratio == 0) {
    y = x.clone();
    std::fill(pm, pm + mask.numel(), uint8_t{1});
  } else {
    if (!(ratio >= 0 && ratio < 1))
      return node_error(ctx.node,
                        "ratio must be in [0, 1) in training mode, got " + std::to_string(ratio));
    const AttrReader attrs = ctx.attrs();
    std::mt19937_64 gen(static_cast<uint64_t>(attrs.has("seed") ? attrs.i("seed") : 0));
    for (int64_t i = 0; i < mask.numel(); ++i)
      pm[i] = static_cast<double>(gen() >> 11) * 0x1.0p-53 >= ratio ? 1 : 0;
    const double scale = 1.0 / (1.0 - ratio);
    RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i)
        py[i] = pm[i] ? static_cast<T>(static_cast<double>(px[i]) * scale) : T{0};
      return Status::ok();
    }));
  }
  ctx.outputs = {narrow(y, dt)};
  if (ctx.node.outputs.size() > 1) ctx.outputs.push_back(mask);
  return Status::ok();
}

// ---- registration ----------------------------------------------------------------------------

void register_batchnorm(OpRegistry& registry) {
  OpDef def("BatchNormalization", "normalization",
            "Per-channel normalisation with running statistics (inference): Y = scale * (X - "
            "input_mean) / sqrt(input_var + epsilon) + B, channels on axis 1. training_mode=1 is "
            "not supported yet.");
  def.input("X", "[N, C, D1, ...]")
      .input("scale", "[C]")
      .input("B", "[C]")
      .input("input_mean", "running mean [C]")
      .input("input_var", "running variance [C]")
      .output("Y", "same shape as X")
      .output("running_mean", "updated mean [C] (training_mode=1 only)", /*optional=*/true)
      .output("running_var", "updated variance [C] (training_mode=1 only)", /*optional=*/true)
      .attr("epsilon", AttrKind::kFloat, Attribute(1e-5), "added to the variance")
      .attr("momentum", AttrKind::kFloat, Attribute(0.9),
            "running statistics update factor (training)")
      .attr("training_mode", AttrKind::kInt, Attribute(0),
            "1: use batch statistics (not supported yet)");
  def.allowed_types = kFloatTypes;
  def.infer = infer_batchnorm;
  def.reference = batchnorm_kernel;
  registry.add(std::move(def));
}

void register_layernorm(OpRegistry& registry) {
  OpDef def(
      "LayerNormalization", "normalization",
      "Normalises over the axes from `axis` to the last: Y = (X - mean) / sqrt(var + epsilon) "
      "* Scale + B; Mean and InvStdDev keep the reduced axes as 1.");
  def.input("X", "any rank >= 1")
      .input("Scale", "broadcastable to X.shape[axis:]")
      .input("B", "bias, broadcastable to X.shape[axis:]", /*optional=*/true)
      .output("Y", "same shape as X")
      .output("Mean", "X.shape[:axis] followed by 1s, in the stash type", /*optional=*/true)
      .output("InvStdDev", "1 / sqrt(var + epsilon), shaped as Mean", /*optional=*/true)
      .attr("axis", AttrKind::kInt, Attribute(-1), "first normalised axis, in [-rank, rank-1]")
      .attr("epsilon", AttrKind::kFloat, Attribute(1e-5), "added to the variance")
      .attr("stash_type", AttrKind::kInt, Attribute(1),
            "ONNX data type of Mean and InvStdDev: 1 (float) or 11 (double)");
  def.allowed_types = kFloatTypes;
  def.infer = infer_layernorm;
  def.reference = layernorm_kernel;
  registry.add(std::move(def));
}

void register_dropout(OpRegistry& registry) {
  OpDef def(
      "Dropout", "nn",
      "Identity unless training_mode is true; then zeroes each element with probability "
      "`ratio` and scales the rest by 1 / (1 - ratio). The mask comes from a generator seeded "
      "by `seed` (0 when absent), so it is deterministic.");
  def.input("data", "any shape")
      .input("ratio", "scalar drop probability in [0, 1); default 0.5", /*optional=*/true)
      .input("training_mode", "bool scalar; default false", /*optional=*/true)
      .output("output", "same shape as data")
      .output("mask", "bool, true where data was kept", /*optional=*/true)
      .attr("seed", AttrKind::kInt, std::nullopt, "random seed; 0 when absent");
  def.allowed_types = kFloatTypes;
  def.infer = infer_dropout;
  def.reference = dropout_kernel;
  registry.add(std::move(def));
}

}  // namespace

void register_norm_ops(OpRegistry& registry) {
  register_batchnorm(registry);
  register_layernorm(registry);
  register_dropout(registry);
}

}  // namespace tessera::ops
