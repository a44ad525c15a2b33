// Losses (ONNX opset 17): NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss; and
// register_loss_ops, which also registers the nn extras (nn_more_conv.cpp, nn_more_norm.cpp).
//
// For input [N, C, d1, ...] (log-probabilities, or scores for the softmax form), target
// [N, d1, ...] and optional class weights w [C], each position p = (n, d...) with class
// t = target[p] contributes
//   loss[p] = -input[n, t, d...] * w[t]     (w[t] = 1 without weights)
// except where t == ignore_index: loss 0 and weight 0. Reductions: none (shape of target), sum,
// mean = sum / (sum of the weights of the non-ignored positions). SoftmaxCrossEntropyLoss applies
// log-softmax over axis 1 first and can return it as a second output.
#include <cmath>
#include <limits>

#include "engine/ops/index_internal.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

enum class LossReduction { kNone, kSum, kMean };

Expected<LossReduction> loss_reduction(const Node& node, const AttrReader& attrs) {
  const std::string& r = attrs.s("reduction");
  if (r == "none") return LossReduction::kNone;
  if (r == "sum") return LossReduction::kSum;
  if (r == "mean") return LossReduction::kMean;
  return node_error(node, "reduction must be none, sum or mean, got '" + r + "'");
}

// Checks the shapes of input [N, C, d...], target [N, d...] and weight [C]; returns the output
// type of the loss.
Expected<TensorType> infer_loss_type(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  TRY(LossReduction red, loss_reduction(ctx.node, ctx.attrs()));
  const TensorType& x = *ctx.inputs[0];
  const TensorType& t = *ctx.inputs[1];
  if (t.dtype != DType::kI64 && t.dtype != DType::kI32)
    return node_error(ctx.node, "input '" + ctx.def.inputs[1].name + "' must be i32 or i64, got " +
                                    std::string(dtype_name(t.dtype)));
  if (ctx.has_input(2) && ctx.inputs[2]->dtype != x.dtype)
    return node_error(ctx.node, "'weights' must have the element type of the input");
  if (x.rank_known && x.rank() < 2)
    return node_error(ctx.node, "input must be [N, C, d1, ...], got " + x.to_string());
  if (x.rank_known && t.rank_known) {
    bool fits = t.rank() == x.rank() - 1;
    for (int d = 0; fits && d < t.rank(); ++d) {
      const Dim& a = t.dims[static_cast<size_t>(d)];
      const Dim& b = x.dims[static_cast<size_t>(d == 0 ? 0 : d + 1)];
      fits = !a.is_known() || !b.is_known() || a == b;
    }
    if (!fits)
      return node_error(
          ctx.node, "target " + t.to_string() + " must be [N, d1, ...] for input " + x.to_string());
  }
  if (ctx.has_input(2) && ctx.inputs[2]->rank_known) {
    const TensorType& w = *ctx.inputs[2];
    if (w.rank() != 1 ||
        (x.rank_known && w.dims[0].is_known() && x.dims[1].is_known() && w.dims[0] != x.dims[1]))
      return node_error(ctx.node, "weights " + w.to_string() + " must be [C]");
  }
  if (red != LossReduction::kNone) return TensorType(x.dtype, {});
  if (!t.rank_known) return TensorType::unranked(x.dtype);
  return TensorType(x.dtype, t.dims);
}

// The loss of log-probabilities `logp` (f32 or f64, [N, C, d...]) against `target`.
Expected<Tensor> nll(const Tensor& logp, const Tensor& target, const Tensor* weight,
                     const KernelContext& ctx) {
  const AttrReader attrs = ctx.attrs();
  TRY(LossReduction red, loss_reduction(ctx.node, attrs));
  const bool has_ignore = attrs.has("ignore_index");
  const int64_t ignore = has_ignore ? attrs.i("ignore_index") : 0;
  if (logp.rank() < 2) return node_error(ctx.node, "input must be [N, C, d1, ...]");
  const int64_t n = logp.dim(0), c = logp.dim(1);
  const int64_t inner = numel_of(logp.shape(), 2, logp.shape().size());
  Shape tshape{n};
  tshape.insert(tshape.end(), logp.shape().begin() + 2, logp.shape().end());
  if (target.shape() != tshape)
    return node_error(ctx.node, "target " + shape_to_string(target.shape()) + " must be " +
                                    shape_to_string(tshape));
  if (weight && (weight->dtype() != logp.dtype() || weight->rank() != 1 || weight->dim(0) != c))
    return node_error(
        ctx.node, "weights must be [C] = [" + std::to_string(c) + "] of the input's element type");
  TRY(std::vector<int64_t> tv, read_ints(target, ctx.node, "target", true));
  TRY(Tensor per, make_tensor(logp.dtype(), tshape, ctx.node));
  double total = 0, weight_sum = 0;
  RETURN_IF_ERROR(dispatch_float(logp.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* lp = logp.data<T>();
    const T* w = weight ? weight->data<T>() : nullptr;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t p = b * inner + i;
        const int64_t k = tv[static_cast<size_t>(p)];
        double l = 0;
        if (!(has_ignore && k == ignore)) {
          if (k < 0 || k >= c)
            return node_error(ctx.node, "target class " + std::to_string(k) +
                                            " is out of range for " + std::to_string(c) +
                                            " classes");
          const double wk = w ? static_cast<double>(w[k]) : 1.0;
          l = -static_cast<double>(lp[(b * c + k) * inner + i]) * wk;
          weight_sum += wk;
        }
        per.data<T>()[p] = static_cast<T>(l);
        total += l;
      }
    return Status::ok();
  }));
  if (red == LossReduction::kNone) return per;
  Tensor out(logp.dtype(), {});
  out.set(0, red == LossReduction::kSum ? total : total / weight_sum);
  return out;
}

Expected<std::vector<TensorType>> infer_nll(const InferContext& ctx) {
  TRY(TensorType t, infer_loss_type(ctx));
  return one(t);
}

Status nll_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  const Tensor w = ctx.has_input(2) ? widen(ctx.in(2)).contiguous() : Tensor();
  TRY(Tensor loss, nll(x, ctx.in(1), ctx.has_input(2) ? &w : nullptr, ctx));
  ctx.outputs = {narrow(loss, dt)};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_sce(const InferContext& ctx) {
  TRY(TensorType t, infer_loss_type(ctx));
  std::vector<TensorType> out{t};
  if (ctx.node.outputs.size() > 1) out.push_back(*ctx.inputs[0]);
  return out;
}

// log_softmax over axis 1 of [N, C, d...], in double.
Expected<Tensor> log_softmax_axis1(const Tensor& x, const Node& node) {
  if (x.rank() < 2) return node_error(node, "scores must be [N, C, d1, ...]");
  const int64_t n = x.dim(0), c = x.dim(1), inner = numel_of(x.shape(), 2, x.shape().size());
  TRY(Tensor y, make_tensor(x.dtype(), x.shape(), node));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < c; ++k)
          mx = std::max(mx, static_cast<double>(px[(b * c + k) * inner + i]));
        double s = 0;
        for (int64_t k = 0; k < c; ++k)
          s += std::exp(static_cast<double>(px[(b * c + k) * inner + i]) - mx);
        const double lse = mx + std::log(s);
        for (int64_t k = 0; k < c; ++k) {
          const int64_t at = (b * c + k) * inner + i;
          py[at] = static_cast<T>(static_cast<double>(px[at]) - lse);
        }
      }
    return Status::ok();
  }));
  return y;
}

Status sce_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).contiguous();
  TRY(Tensor logp, log_softmax_axis1(x, ctx.node));
  const Tensor w = ctx.has_input(2) ? widen(ctx.in(2)).contiguous() : Tensor();
  TRY(Tensor loss, nll(logp, ctx.in(1), ctx.has_input(2) ? &w : nullptr, ctx));
  ctx.outputs = {narrow(loss, dt)};
  if (ctx.node.outputs.size() > 1) ctx.outputs.push_back(narrow(logp, dt));
  return Status::ok();
}

void loss_attrs(OpDef& def) {
  def.attr("ignore_index", AttrKind::kInt, std::nullopt,
           "target value that contributes nothing (neither loss nor weight); default none")
      .attr("reduction", AttrKind::kString, Attribute("mean"),
            "none (per position), sum, or mean (divided by the sum of the applied weights)");
}

// About 2 operations per position (multiply by the weight, accumulate).
double loss_flops(const InferContext& ctx, const std::vector<TensorType>&) {
  return std::max<double>(0.0, 2.0 * static_cast<double>(ctx.inputs[1]->static_numel()));
}

}  // namespace

void register_loss_ops(OpRegistry& registry) {
  {
    OpDef def("NegativeLogLikelihoodLoss", "loss",
              "-input[n, target[n, d...], d...] * weight[target], reduced by 'reduction'; the "
              "input holds log-probabilities [N, C, d1, ...].");
    def.input("input", "log-probabilities [N, C, d1, ...]")
        .input("target", "i32/i64 classes [N, d1, ...] in [0, C)")
        .input("weight", "class weights [C]", true);
    def.output("loss", "[N, d1, ...] for reduction none, else a scalar");
    loss_attrs(def);
    def.allowed_types = kFloatTypes;
    def.infer = infer_nll;
    def.reference = nll_kernel;
    def.flops = loss_flops;
    registry.add(std::move(def));
  }
  {
    OpDef def("SoftmaxCrossEntropyLoss", "loss",
              "Cross entropy of softmax(scores) over axis 1 against class labels: "
              "NegativeLogLikelihoodLoss(log_softmax(scores, 1), labels, weights).");
    def.input("scores", "[N, C, d1, ...]")
        .input("labels", "i32/i64 classes [N, d1, ...] in [0, C)")
        .input("weights", "class weights [C]", true);
    def.output("output", "[N, d1, ...] for reduction none, else a scalar")
        .output("log_prob", "log_softmax(scores, axis 1), shape of 'scores'", true);
    loss_attrs(def);
    def.allowed_types = kFloatTypes;
    def.infer = infer_sce;
    def.reference = sce_kernel;
    // exp, sum, log and subtract per score, then the loss itself.
    def.flops = [](const InferContext& ctx, const std::vector<TensorType>& out) {
      return std::max<double>(0.0, 4.0 * static_cast<double>(ctx.inputs[0]->static_numel())) +
             loss_flops(ctx, out);
    };
    registry.add(std::move(def));
  }
  register_nn_more_conv_ops(registry);
  register_nn_more_norm_ops(registry);
}

}  // namespace tessera::ops
