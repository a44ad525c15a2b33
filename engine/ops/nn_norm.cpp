// Normalisation and regularisation: BatchNormalization (inference and training), LayerNormalization,
// Dropout and DropoutGrad (they share the mask generator).
#include <algorithm>
#include <cmath>
#include <vector>

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

// y = scale * (x - mean) / sqrt(var + epsilon) + B, per channel (axis 1). Inference uses
// input_mean / input_var; training_mode=1 uses the batch's mean and population variance (over N
// and the spatial axes) and returns running_mean = input_mean * momentum + mean * (1 - momentum),
// running_var likewise with the variance (as ONNX).
Status batchnorm_kernel(KernelContext& ctx) {
  const AttrReader attrs = ctx.attrs();
  const bool training = attrs.i("training_mode") != 0;
  if (training && attrs.i("sync_ranks") > 1)
    return node_error(ctx.node, "statistics synchronised over ranks (sync_ranks) need the cpu.vec kernel: plain static f32 [N, C, ...]");
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  std::vector<std::vector<Dim>> pdims;
  for (size_t i = 1; i < 5; ++i) pdims.push_back(dims_of(ctx.in(i)));
  TRY(Dim c,
      batchnorm_channels(ctx.node, dims_of(x), {&pdims[0], &pdims[1], &pdims[2], &pdims[3]}));
  const double eps = attrs.f("epsilon");
  const std::vector<double> scale = ctx.in(1).to_doubles(), bias = ctx.in(2).to_doubles();
  std::vector<double> mean = ctx.in(3).to_doubles(), var = ctx.in(4).to_doubles();
  const size_t nc = static_cast<size_t>(c.size);
  const int64_t spatial = x.dim(0) * c.size == 0 ? 0 : x.numel() / (x.dim(0) * c.size);
  std::vector<double> batch_mean(nc, 0.0), batch_var(nc, 0.0);
  if (training) {
    const double count = static_cast<double>(x.dim(0) * spatial);
    for (int64_t n = 0; n < x.dim(0); ++n)
      for (size_t ch = 0; ch < nc; ++ch)
        for (int64_t i = 0; i < spatial; ++i)
          batch_mean[ch] += x.get((n * c.size + static_cast<int64_t>(ch)) * spatial + i);
    for (double& m : batch_mean) m /= count;
    for (int64_t n = 0; n < x.dim(0); ++n)
      for (size_t ch = 0; ch < nc; ++ch)
        for (int64_t i = 0; i < spatial; ++i) {
          const double d = x.get((n * c.size + static_cast<int64_t>(ch)) * spatial + i) - batch_mean[ch];
          batch_var[ch] += d * d;
        }
    for (double& v : batch_var) v /= count;
  }
  const std::vector<double>& use_mean = training ? batch_mean : mean;
  const std::vector<double>& use_var = training ? batch_var : var;
  // Per channel: y = x * a + b.
  std::vector<double> a(nc), b(nc);
  for (size_t ch = 0; ch < nc; ++ch) {
    a[ch] = scale[ch] / std::sqrt(use_var[ch] + eps);
    b[ch] = bias[ch] - use_mean[ch] * a[ch];
  }
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
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
  const double momentum = attrs.f("momentum");
  for (size_t k = 1; k < ctx.node.outputs.size(); ++k) {  // running_mean, running_var
    const std::vector<double>& old = k == 1 ? mean : var;
    const std::vector<double>& now = k == 1 ? batch_mean : batch_var;
    TRY(Tensor r, Tensor::create(ctx.in(2 + k).dtype(), {c.size}));
    for (size_t ch = 0; ch < nc; ++ch)
      r.set(static_cast<int64_t>(ch), old[ch] * momentum + now[ch] * (1.0 - momentum));
    ctx.outputs.push_back(r);
  }
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

Status check_rng_offset(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return Status::ok();
  if (ctx.inputs[i]->dtype != DType::kI64)
    return node_error(ctx.node, "input 'rng_offset' must be i64, got " + ctx.inputs[i]->to_string());
  return check_scalar(ctx.node, *ctx.inputs[i], "rng_offset");
}

// rng_rows: two i64, the first row of this batch in the global batch and its rows.
Status check_rng_rows(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return Status::ok();
  const TensorType& t = *ctx.inputs[i];
  if (t.dtype != DType::kI64) return node_error(ctx.node, "input 'rng_rows' must be i64, got " + t.to_string());
  if (t.rank_known && (t.dims.size() != 1 || (t.dims[0].is_known() && t.dims[0].size != 2)))
    return node_error(ctx.node, "input 'rng_rows' must hold 2 values (first row, rows), got " + t.to_string());
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
  RETURN_IF_ERROR(check_rng_offset(ctx, 3));
  RETURN_IF_ERROR(check_rng_rows(ctx, 4));
  const TensorType& x = *ctx.inputs[0];
  std::vector<TensorType> out{x};
  if (ctx.node.outputs.size() > 1) {
    TensorType mask = x;
    mask.dtype = DType::kBool;
    out.push_back(mask);
  }
  return out;
}

// The dropout mask, a pure function of (seed, rng_offset, element index), so it does not depend
// on threads or on how the work is split:
//   key = splitmix64(seed ^ splitmix64(rng_offset)),  u_i = (splitmix64(key + base + i) >> 11) * 2^-53,
//   kept_i = u_i >= ratio.
// base is 0 unless rng_rows = (first, rows) says the tensor holds rows [first, first + rows) of a
// larger batch: then base = first * numel / rows, the index its first element has in the whole
// batch's tensor, so a rank or a micro-batch draws exactly the rows of the single process's mask
// (for tensors whose outermost axis is the batch). A tensor whose size is not a multiple of rows
// mixes `first` into the key instead (masks differ between slices, matching none).
struct DropoutMask {
  bool training = false;
  double ratio = 0.5;
  uint64_t key = 0;
  uint64_t base = 0;
  bool kept(int64_t i) const {
    return static_cast<double>(splitmix64(key + base + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53 >= ratio;
  }
};

// Reads ratio (input r), training_mode (input t), rng_offset (input o) and rng_rows (input o + 1)
// of Dropout or DropoutGrad.
Expected<DropoutMask> dropout_mask(const KernelContext& ctx, size_t r, size_t t, size_t o) {
  DropoutMask m;
  m.ratio = ctx.has_input(r) ? ctx.in(r).get(0) : 0.5;
  m.training = ctx.has_input(t) && ctx.in(t).get(0) != 0 && m.ratio != 0;
  if (m.training && !(m.ratio >= 0 && m.ratio < 1))
    return node_error(ctx.node, "ratio must be in [0, 1) in training mode, got " + std::to_string(m.ratio));
  const AttrReader attrs = ctx.attrs();
  const uint64_t seed = static_cast<uint64_t>(attrs.has("seed") ? attrs.i("seed") : 0);
  const uint64_t offset = ctx.has_input(o) ? static_cast<uint64_t>(ctx.in(o).get(0)) : 0;
  m.key = splitmix64(seed ^ splitmix64(offset));
  if (ctx.has_input(o + 1)) {
    const Tensor& rows = ctx.in(o + 1);
    if (rows.numel() != 2) return node_error(ctx.node, "rng_rows must hold 2 values, got " + std::to_string(rows.numel()));
    const int64_t first = rows.data<int64_t>()[0], count = rows.data<int64_t>()[1];
    if (first < 0 || count < 1)
      return node_error(ctx.node, "rng_rows (" + std::to_string(first) + ", " + std::to_string(count) +
                                      ") must be a first row >= 0 and at least 1 row");
    const int64_t numel = ctx.in(0).numel();
    if (numel % count == 0) m.base = static_cast<uint64_t>(first) * static_cast<uint64_t>(numel / count);
    else if (first != 0) m.key = splitmix64(m.key ^ splitmix64(static_cast<uint64_t>(first)));
  }
  return m;
}

// out = x * kept / (1 - ratio) in training, else x; `mask` (optional) receives kept.
Status apply_dropout(KernelContext& ctx, const DropoutMask& m, Tensor* mask) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  uint8_t* pm = mask ? mask->data<uint8_t>() : nullptr;
  if (!m.training) {
    y = x.clone();
    if (pm) std::fill(pm, pm + mask->numel(), uint8_t{1});
  } else {
    const double scale = 1.0 / (1.0 - m.ratio);
    RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const bool keep = m.kept(i);
        if (pm) pm[i] = keep ? 1 : 0;
        py[i] = keep ? static_cast<T>(static_cast<double>(px[i]) * scale) : T{0};
      }
      return Status::ok();
    }));
  }
  ctx.outputs = {narrow(y, dt)};
  return Status::ok();
}

Status dropout_kernel(KernelContext& ctx) {
  TRY(DropoutMask m, dropout_mask(ctx, 1, 2, 3));
  const bool want_mask = ctx.node.outputs.size() > 1;
  TRY(Tensor mask, Tensor::create(DType::kBool, want_mask ? ctx.in(0).shape() : Shape{0}));
  RETURN_IF_ERROR(apply_dropout(ctx, m, want_mask ? &mask : nullptr));
  if (want_mask) ctx.outputs.push_back(mask);
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_dropout_grad(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_float_input(ctx, 1));
  if (ctx.has_input(1)) RETURN_IF_ERROR(check_scalar(ctx.node, *ctx.inputs[1], "ratio"));
  if (ctx.has_input(2) && ctx.inputs[2]->dtype != DType::kBool)
    return node_error(ctx.node, "input 'training_mode' must be bool");
  RETURN_IF_ERROR(check_rng_offset(ctx, 3));
  RETURN_IF_ERROR(check_rng_rows(ctx, 4));
  return std::vector<TensorType>{*ctx.inputs[0]};
}

// ---- registration ----------------------------------------------------------------------------

void register_batchnorm(OpRegistry& registry) {
  OpDef def("BatchNormalization", "normalization",
            "Per-channel normalisation, channels on axis 1: Y = scale * (X - mean) / sqrt(var + "
            "epsilon) + B. Inference uses input_mean / input_var; training_mode=1 uses the batch "
            "mean and population variance over every axis but 1, and returns running_mean = "
            "input_mean * momentum + mean * (1 - momentum) and running_var likewise.");
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
            "1: normalise with batch statistics and update the running ones")
      .attr("sync_ranks", AttrKind::kInt, Attribute(0),
            "Tessera's data parallel (SyncBatchNorm): above 1, the batch statistics are those of every "
            "rank's rows, all-reduced over this many ranks (the split stage sets it; cpu.vec kernels)");
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
      "Identity unless training_mode is true; then zeroes each element with probability `ratio` "
      "and scales the rest by 1 / (1 - ratio). The mask is a counter-based hash, independent of "
      "threads: key = splitmix64(seed ^ splitmix64(rng_offset)), element i is kept when "
      "(splitmix64(key + i) >> 11) * 2^-53 >= ratio. Tessera extension: the optional input "
      "rng_offset (i64 scalar, default 0) varies the mask from step to step (a trainer feeds the "
      "step number); the seed alone gives the same mask on every run. Tessera extension: the "
      "optional input rng_rows (i64 [2]: first row, rows) says the data holds rows [first, first + "
      "rows) of a larger batch and shifts the element index by first * numel / rows, so data-"
      "parallel ranks and accumulated micro-batches draw the single process's mask.");
  def.input("data", "any shape")
      .input("ratio", "scalar drop probability in [0, 1); default 0.5", /*optional=*/true)
      .input("training_mode", "bool scalar; default false", /*optional=*/true)
      .input("rng_offset", "i64 scalar mixed into the mask hash (Tessera extension); default 0",
             /*optional=*/true)
      .input("rng_rows", "i64 [2], first row and rows of this batch slice (Tessera extension); default: the whole batch",
             /*optional=*/true)
      .output("output", "same shape as data")
      .output("mask", "bool, true where data was kept", /*optional=*/true)
      .attr("seed", AttrKind::kInt, std::nullopt, "random seed; 0 when absent");
  def.allowed_types = kFloatTypes;
  def.infer = infer_dropout;
  def.reference = dropout_kernel;
  registry.add(std::move(def));

  OpDef grad("DropoutGrad", "grad",
             "Gradient of Dropout: dY * kept / (1 - ratio) in training mode (the mask regenerated "
             "from seed, rng_offset and rng_rows exactly as the forward Dropout), dY otherwise.");
  grad.input("dY", "gradient of Dropout's output")
      .input("ratio", "as the forward Dropout", /*optional=*/true)
      .input("training_mode", "as the forward Dropout", /*optional=*/true)
      .input("rng_offset", "as the forward Dropout", /*optional=*/true)
      .input("rng_rows", "as the forward Dropout", /*optional=*/true)
      .output("dX", "shape of dY")
      .attr("seed", AttrKind::kInt, std::nullopt, "as the forward Dropout");
  grad.allowed_types = kFloatTypes;
  grad.infer = infer_dropout_grad;
  grad.reference = [](KernelContext& ctx) -> Status {
    TRY(DropoutMask m, dropout_mask(ctx, 1, 2, 3));
    return apply_dropout(ctx, m, nullptr);
  };
  registry.add(std::move(grad));
}

}  // namespace

void register_norm_ops(OpRegistry& registry) {
  register_batchnorm(registry);
  register_layernorm(registry);
  register_dropout(registry);
}

}  // namespace tessera::ops
