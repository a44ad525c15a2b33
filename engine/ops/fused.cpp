// Fused forms created by the optimiser's fuse pass: FusedConv, FusedMatMul, FusedGemm.
//
//   Y = act(base(inputs) + Bias + Z)
// base is Conv, MatMul or Gemm with the same inputs and attributes (its schema, inference and
// reference kernel are reused, so the fused ops cannot drift from them); Bias is FusedMatMul's
// per-column bias (Conv and Gemm carry theirs as the base op's B / C); Z, the residual, has Y's
// exact shape and is added BEFORE the activation (oneDNN's "sum" post-op, then "eltwise").
// The post-ops compute in the output's element type in the unfused order (bias, residual,
// activation), so a fused node rounds as the chain it replaces.
#include <cmath>
#include <memory>

#include "engine/ops/helpers.h"

namespace tessera::ops {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;

enum class Act { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh, kGelu, kHardSwish, kHardSigmoid, kSwish };

Expected<Act> parse_activation(const ir::Node& node, const std::string& s) {
  static const std::pair<const char*, Act> kNames[] = {
      {"", Act::kNone},         {"Relu", Act::kRelu}, {"LeakyRelu", Act::kLeakyRelu},
      {"Clip", Act::kClip},     {"Sigmoid", Act::kSigmoid}, {"Tanh", Act::kTanh},
      {"Gelu", Act::kGelu},     {"HardSwish", Act::kHardSwish}, {"HardSigmoid", Act::kHardSigmoid},
      {"Swish", Act::kSwish}};
  for (const auto& [name, act] : kNames)
    if (s == name) return act;
  return node_error(node, "attribute 'activation' is '" + s +
                              "'; expected \"\", Relu, LeakyRelu, Clip, Sigmoid, Tanh, Gelu, HardSwish, "
                              "HardSigmoid or Swish");
}

template <class T>
T activate(T x, Act act, T alpha, T beta) {
  switch (act) {
    case Act::kNone: return x;
    case Act::kRelu: return x < T(0) ? T(0) : x;
    case Act::kLeakyRelu: return x < T(0) ? alpha * x : x;
    case Act::kClip: {
      const T v = x < alpha ? alpha : x;
      return beta < v ? beta : v;
    }
    case Act::kSigmoid: return sigmoid(x);
    case Act::kTanh: return std::tanh(x);
    case Act::kGelu: return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf)));
    case Act::kHardSwish: {
      const T r = x + T(3);
      return x * (r < T(0) ? T(0) : r > T(6) ? T(6) : r) / T(6);
    }
    case Act::kHardSigmoid: {  // alpha, beta as HardSigmoid's
      const T v = alpha * x + beta;
      return v < T(0) ? T(0) : v > T(1) ? T(1) : v;
    }
    case Act::kSwish: return x * sigmoid(alpha * x);  // alpha as Swish's
  }
  return x;
}

// Which fused op: the base op's name and how many of the fused inputs belong to the base op.
struct FusedKind {
  const char* name;
  const char* base;
  size_t base_inputs;  // Conv: X W B; MatMul: A B; Gemm: A B C
  bool has_bias;       // FusedMatMul's own Bias input
};

// The base op's view of a fused node: the same node (attributes read through the base schema)
// with the first base_inputs inputs.
template <class P>
std::vector<P> first_n(const std::vector<P>& v, size_t n) {
  std::vector<P> out;
  for (size_t i = 0; i < n && i < v.size(); ++i) out.push_back(v[i]);
  return out;
}

Status check_post_inputs(const InferContext& ctx, const FusedKind& k, const TensorType& y) {
  TRY(Act act, parse_activation(ctx.node, ctx.attrs().s("activation")));
  (void)act;
  const size_t z = k.base_inputs + (k.has_bias ? 1 : 0);
  for (size_t i = k.base_inputs; i <= z; ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType& t = *ctx.inputs[i];
    const std::string what = "input '" + ctx.def.inputs[i].name + "'";
    if (t.dtype != y.dtype)
      return node_error(ctx.node, what + " is " + std::string(dtype_name(t.dtype)) + ", expected " +
                                      std::string(dtype_name(y.dtype)));
    if (!t.rank_known || !y.rank_known) continue;
    if (i == z) {  // residual: exactly Y's shape
      bool ok = t.rank() == y.rank();
      for (int d = 0; ok && d < t.rank(); ++d)
        ok = !(t.dims[d].is_known() && y.dims[d].is_known() && t.dims[d].size != y.dims[d].size);
      if (!ok) return node_error(ctx.node, what + " has type " + t.to_string() + " but Y is " + y.to_string());
    } else {  // Bias: [N] or [1..., N]
      bool ok = t.rank() >= 1 && t.rank() <= std::max(1, y.rank());
      for (int d = 0; ok && d + 1 < t.rank(); ++d) ok = t.dims[d].is_known() && t.dims[d].size == 1;
      const Dim& n = t.rank() ? t.dims.back() : Dim::unknown();
      const Dim& yn = y.rank() ? y.dims.back() : Dim::unknown();
      ok = ok && !(n.is_known() && yn.is_known() && n.size != yn.size);
      if (!ok)
        return node_error(ctx.node, what + " has type " + t.to_string() + "; expected [N] or [1, ..., N] with N = " +
                                        yn.to_string());
    }
  }
  return Status::ok();
}

// Adds bias (broadcast) and residual to y, then applies the activation, in y's element type.
Status post_ops(KernelContext& ctx, const FusedKind& k, Tensor& y) {
  const DType dt = y.dtype();
  Tensor yw = widen(y).contiguous();
  if (yw.dtype() == dt) yw = yw.clone();  // never write into a tensor we did not make
  const AttrReader attrs = ctx.attrs();
  TRY(Act act, parse_activation(ctx.node, attrs.s("activation")));
  const size_t zi = k.base_inputs + (k.has_bias ? 1 : 0);
  Tensor bias, z;
  if (k.has_bias && ctx.has_input(k.base_inputs)) {
    bias = widen(ctx.in(k.base_inputs)).contiguous();
    if (!broadcast_shapes(bias.shape(), yw.shape()) || *broadcast_shapes(bias.shape(), yw.shape()) != yw.shape())
      return node_error(ctx.node, "Bias of shape " + shape_to_string(bias.shape()) + " does not broadcast to Y " +
                                      shape_to_string(yw.shape()));
    const int64_t last = yw.rank() ? yw.dim(yw.rank() - 1) : 1;
    if (bias.numel() != 1 && bias.numel() != last)
      return node_error(ctx.node, "Bias of shape " + shape_to_string(bias.shape()) + " is not [N] or [1, ..., N] for Y " +
                                      shape_to_string(yw.shape()));
  }
  if (ctx.has_input(zi)) {
    z = widen(ctx.in(zi)).contiguous();
    if (z.shape() != yw.shape())
      return node_error(ctx.node, "residual Z has shape " + shape_to_string(z.shape()) + " but Y is " +
                                      shape_to_string(yw.shape()));
  }
  const bool has_bias = k.has_bias && ctx.has_input(k.base_inputs);
  const bool has_z = ctx.has_input(zi);
  RETURN_IF_ERROR(dispatch_float(yw.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    T* py = yw.data<T>();
    const int64_t n = yw.numel();
    if (has_bias) {  // [N] or [1, ..., N] (checked above): element i % N, or the one element
      const T* pb = bias.data<T>();
      const int64_t nb = bias.numel();
      for (int64_t i = 0; i < n; ++i) py[i] = py[i] + pb[nb == 1 ? 0 : i % nb];
    }
    if (has_z) {
      const T* pz = z.data<T>();
      for (int64_t i = 0; i < n; ++i) py[i] = py[i] + pz[i];
    }
    if (act != Act::kNone) {
      const T alpha = static_cast<T>(attrs.f("activation_alpha"));
      const T beta = static_cast<T>(attrs.f("activation_beta"));
      for (int64_t i = 0; i < n; ++i) py[i] = activate(py[i], act, alpha, beta);
    }
    return Status::ok();
  }));
  y = narrow(yw, dt);
  return Status::ok();
}

void register_fused(OpRegistry& registry, const FusedKind& k, std::string doc) {
  const OpDef* found = registry.find(k.base);
  if (!found) return;  // a registry without the base op has no use for its fused form
  const auto base = std::make_shared<const OpDef>(*found);
  OpDef def(k.name, "fused", std::move(doc));
  for (size_t i = 0; i < k.base_inputs; ++i) {
    const PortSpec& p = base->inputs[i];
    def.input(p.name, p.doc, p.optional);
  }
  if (k.has_bias) def.input("Bias", "bias broadcast over the last axis: [N] or [1, ..., N]", true);
  def.input("Z", "residual added before the activation, Y's shape", true);
  def.output("Y", "act(" + std::string(k.base) + "(...) + Z)");
  def.attrs = base->attrs;
  def.attr("activation", AttrKind::kString, Attribute(""),
           "\"\" (none), Relu, LeakyRelu, Clip, Sigmoid, Tanh, Gelu (exact, erf), HardSwish, "
           "HardSigmoid or Swish")
      .attr("activation_alpha", AttrKind::kFloat, Attribute(0.0),
            "LeakyRelu's, HardSigmoid's and Swish's alpha; Clip's min")
      .attr("activation_beta", AttrKind::kFloat, Attribute(0.0), "Clip's max; HardSigmoid's beta");
  def.allowed_types = kFloatTypes;
  def.no_gradient_reason = "made by the optimiser after autodiff; training graphs are differentiated unfused";
  const FusedKind kind = k;
  def.infer = [base, kind](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    InferContext b{ctx.node, *base, first_n(ctx.inputs, kind.base_inputs), first_n(ctx.constants, kind.base_inputs)};
    TRY(std::vector<TensorType> out, base->infer(b));
    RETURN_IF_ERROR(check_post_inputs(ctx, kind, out[0]));
    return out;
  };
  def.reference = [base, kind](KernelContext& ctx) -> Status {
    KernelContext b{ctx.node, *base, first_n(ctx.inputs, kind.base_inputs), {}, {}};
    RETURN_IF_ERROR(base->reference(b));
    if (b.outputs.empty()) return node_error(ctx.node, std::string(kind.base) + " kernel produced no output");
    Tensor y = b.outputs[0];
    RETURN_IF_ERROR(post_ops(ctx, kind, y));
    ctx.outputs = {y};
    return Status::ok();
  };
  // The base op's FLOPs plus one per output element for each post-op.
  def.flops = [base, kind](const InferContext& ctx, const std::vector<TensorType>& out) {
    InferContext b{ctx.node, *base, first_n(ctx.inputs, kind.base_inputs), first_n(ctx.constants, kind.base_inputs)};
    double f = base->flops ? base->flops(b, out) : 0.0;
    const double y = static_cast<double>(std::max<int64_t>(0, out[0].static_numel()));
    const size_t zi = kind.base_inputs + (kind.has_bias ? 1 : 0);
    if (kind.has_bias && ctx.has_input(kind.base_inputs)) f += y;
    if (ctx.has_input(zi)) f += y;
    if (!ctx.attrs().s("activation").empty()) f += y;
    return f;
  };
  registry.add(std::move(def));
}

}  // namespace

void register_fused_ops(OpRegistry& registry) {
  register_fused(registry, {"FusedConv", "Conv", 3, false},
                 "Conv(X, W, B) + Z, then the activation: Y = act(conv(X, W) + B + Z). Made by the "
                 "fuse pass from Conv, bias Add, residual Add and activation nodes.");
  register_fused(registry, {"FusedMatMul", "MatMul", 2, true},
                 "MatMul(A, B) + Bias + Z, then the activation: Y = act(A @ B + Bias + Z), Bias "
                 "broadcast over the last axis. Made by the fuse pass.");
  register_fused(registry, {"FusedGemm", "Gemm", 3, false},
                 "Gemm(A, B, C) + Z, then the activation: Y = act(alpha op(A) op(B) + beta C + Z). "
                 "Made by the fuse pass.");
}

}  // namespace tessera::ops
