// Random ops: RandomUniform RandomNormal RandomUniformLike RandomNormalLike Bernoulli Multinomial.
//
// Values are counter-based: with key k, element i's uniform is u_i = (splitmix64(k + i) >> 11) *
// 2^-53 in [0, 1), so results do not depend on threads. With the `seed` attribute k comes from
// the seed (the same values on every run and every machine); without it each execution draws a
// fresh key. Normal values take two uniforms per element (Box-Muller). The passes treat these ops
// as impure (no constant folding, no CSE). NumPy's generator draws other values for the same seed,
// so ONNX's backend cases of these ops cannot match (tests/conformance/onnx_filters.txt).
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <random>

#include "engine/ops/helpers.h"
#include "engine/ops/op_def.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {
namespace {

uint64_t draw_key(const AttrReader& attrs) {
  if (attrs.has("seed")) {
    const double seed = attrs.f("seed");
    uint64_t bits;
    std::memcpy(&bits, &seed, sizeof bits);
    return splitmix64(bits);
  }
  static std::atomic<uint64_t> counter{std::random_device{}()};
  const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return splitmix64(counter.fetch_add(0x9E3779B97F4A7C15ull) ^ t);
}

double uniform(uint64_t key, uint64_t i) { return static_cast<double>(splitmix64(key + i) >> 11) * 0x1.0p-53; }

double normal(uint64_t key, uint64_t i) {
  const double u1 = uniform(key, 2 * i), u2 = uniform(key, 2 * i + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * M_PI * u2);
}

// The output dtype: attribute `dtype` when set, else `fallback`.
Expected<DType> out_dtype(const ir::Node& node, const AttrReader& attrs, DType fallback) {
  if (!attrs.has("dtype")) return fallback;
  const std::optional<DType> dt = dtype_from_name(attrs.s("dtype"));
  if (!dt) return node_error(node, "unknown element type '" + attrs.s("dtype") + "' in attribute 'dtype'");
  return *dt;
}

Status need_float(const ir::Node& node, DType dt) {
  if (!is_float(dt)) return node_error(node, "draws floating-point values; dtype " + std::string(dtype_name(dt)) + " is not one");
  return Status::ok();
}

// RandomUniform/RandomNormal (shape from the attribute) and their *Like forms (shape of the input).
Expected<std::vector<TensorType>> infer_draw(const InferContext& ctx) {
  const bool like = !ctx.inputs.empty();
  TRY(DType dt, out_dtype(ctx.node, ctx.attrs(), like ? ctx.inputs[0]->dtype : DType::kF32));
  RETURN_IF_ERROR(need_float(ctx.node, dt));
  if (like) {
    TensorType t = *ctx.inputs[0];
    t.dtype = dt;
    return one(t);
  }
  for (int64_t d : ctx.attrs().ints("shape"))
    if (d < 0) return node_error(ctx.node, "attribute 'shape' has a negative dimension " + std::to_string(d));
  return one(TensorType::of(dt, ctx.attrs().ints("shape")));
}

Status draw_kernel(KernelContext& ctx, bool gaussian) {
  const AttrReader a = ctx.attrs();
  const bool like = ctx.has_input(0);
  TRY(DType dt, out_dtype(ctx.node, a, like ? ctx.in(0).dtype() : DType::kF32));
  RETURN_IF_ERROR(need_float(ctx.node, dt));
  TRY(Tensor y, Tensor::create(dt, like ? ctx.in(0).shape() : Shape(a.ints("shape"))));
  const uint64_t key = draw_key(a);
  const double lo = gaussian ? a.f("mean") : a.f("low");
  const double span = gaussian ? a.f("scale") : a.f("high") - a.f("low");
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double r = gaussian ? normal(key, static_cast<uint64_t>(i)) : uniform(key, static_cast<uint64_t>(i));
    y.set(i, lo + span * r);
  }
  ctx.outputs = {std::move(y)};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_bernoulli(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  TRY(DType dt, out_dtype(ctx.node, ctx.attrs(), ctx.inputs[0]->dtype));
  TensorType t = *ctx.inputs[0];
  t.dtype = dt;
  return one(t);
}

Status bernoulli_kernel(KernelContext& ctx) {
  const Tensor p = ctx.in(0).contiguous();
  TRY(DType dt, out_dtype(ctx.node, ctx.attrs(), p.dtype()));
  TRY(Tensor y, Tensor::create(dt, p.shape()));
  const uint64_t key = draw_key(ctx.attrs());
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double prob = p.get(i);
    if (!(prob >= 0 && prob <= 1))
      return node_error(ctx.node, "probability " + std::to_string(prob) + " at element " + std::to_string(i) + " is outside [0, 1]");
    y.set(i, uniform(key, static_cast<uint64_t>(i)) < prob ? 1 : 0);
  }
  ctx.outputs = {std::move(y)};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_multinomial(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  TRY(DType dt, out_dtype(ctx.node, ctx.attrs(), DType::kI32));
  if (dt != DType::kI32 && dt != DType::kI64) return node_error(ctx.node, "dtype must be i32 or i64");
  const int64_t n = ctx.attrs().i("sample_size");
  if (n < 1) return node_error(ctx.node, "sample_size must be at least 1, got " + std::to_string(n));
  const TensorType& x = *ctx.inputs[0];
  if (x.rank_known && x.rank() != 2) return node_error(ctx.node, "input must be [batch, classes], got " + x.to_string());
  return one(TensorType(dt, {x.rank_known ? x.dims[0] : Dim::unknown(), Dim::known(n)}));
}

// Samples class indices from each row's unnormalised log-probabilities.
Status multinomial_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() != 2 || x.dim(1) < 1)
    return node_error(ctx.node, "input must be [batch, classes] with at least one class, got " + shape_to_string(x.shape()));
  TRY(DType dt, out_dtype(ctx.node, ctx.attrs(), DType::kI32));
  const int64_t samples = ctx.attrs().i("sample_size");
  const int64_t rows = x.dim(0), classes = x.dim(1);
  TRY(Tensor y, Tensor::create(dt, {rows, samples}));
  const uint64_t key = draw_key(ctx.attrs());
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, x.get(r * classes + c));
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const double v = x.get(r * classes + c);
      total += std::isfinite(mx) ? std::exp(v - mx) : 0;
      cdf[static_cast<size_t>(c)] = total;
    }
    if (!(total > 0) || !std::isfinite(total))
      return node_error(ctx.node, "row " + std::to_string(r) + " has no finite log-probability");
    for (int64_t s = 0; s < samples; ++s) {
      const double u = uniform(key, static_cast<uint64_t>(r * samples + s)) * total;
      const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
      y.set(r * samples + s, static_cast<double>(std::min(c, classes - 1)));
    }
  }
  ctx.outputs = {std::move(y)};
  return Status::ok();
}

OpDef random_def(const char* name, const char* doc) {
  OpDef d(name, "random", doc);
  d.no_gradient_reason = "a random draw has no gradient";
  return d;
}

void add_draw_attrs(OpDef& d, bool gaussian) {
  if (gaussian) {
    d.attr("mean", AttrKind::kFloat, Attribute(0.0), "mean of the normal distribution");
    d.attr("scale", AttrKind::kFloat, Attribute(1.0), "standard deviation");
  } else {
    d.attr("low", AttrKind::kFloat, Attribute(0.0), "lower bound (inclusive)");
    d.attr("high", AttrKind::kFloat, Attribute(1.0), "upper bound (exclusive)");
  }
  d.attr("seed", AttrKind::kFloat, std::nullopt, "seed: the same values on every run; absent: fresh values per run");
}

}  // namespace

void register_random_ops(OpRegistry& reg) {
  for (const bool gaussian : {false, true}) {
    for (const bool like : {false, true}) {
      const std::string name = std::string(gaussian ? "RandomNormal" : "RandomUniform") + (like ? "Like" : "");
      OpDef d = random_def(name.c_str(),
                           gaussian ? "Values drawn from a normal distribution (mean, scale)."
                                    : "Values drawn uniformly from [low, high).");
      if (like) {
        d.input("input", "its shape (and, without dtype, its element type) is the output's");
        d.attr("dtype", AttrKind::kString, std::nullopt, "float element type of the output (default: the input's)");
      } else {
        d.required_attr("shape", AttrKind::kInts, "output shape");
        d.attr("dtype", AttrKind::kString, Attribute(std::string("f32")), "float element type of the output");
      }
      d.output("output", "the drawn values");
      add_draw_attrs(d, gaussian);
      d.infer = infer_draw;
      d.reference = [gaussian](KernelContext& ctx) { return draw_kernel(ctx, gaussian); };
      reg.add(std::move(d));
    }
  }
  {
    OpDef d = random_def("Bernoulli", "1 with probability input[i], else 0, element-wise.");
    d.input("input", "probabilities in [0, 1]").output("output", "0s and 1s, input's shape");
    d.attr("dtype", AttrKind::kString, std::nullopt, "output element type (default: the input's)");
    d.attr("seed", AttrKind::kFloat, std::nullopt, "seed: the same values on every run; absent: fresh values per run");
    d.allowed_types = kFloatTypes;
    d.infer = infer_bernoulli;
    d.reference = bernoulli_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = random_def("Multinomial", "sample_size class indices per row, drawn from the row's unnormalised log-probabilities.");
    d.input("input", "[batch, classes] log-probabilities").output("output", "[batch, sample_size] class indices");
    d.attr("dtype", AttrKind::kString, Attribute(std::string("i32")), "i32 or i64");
    d.attr("sample_size", AttrKind::kInt, Attribute(1), "samples per row");
    d.attr("seed", AttrKind::kFloat, std::nullopt, "seed: the same values on every run; absent: fresh values per run");
    d.allowed_types = kFloatTypes;
    d.infer = infer_multinomial;
    d.reference = multinomial_kernel;
    reg.add(std::move(d));
  }
}

}  // namespace tessera::ops
