// Batch-norm folding: inference BatchNormalization after a linear op with constant weights.
//
// Algorithm: for each BatchNormalization (training_mode 0, only Y used, scale / B / mean / var
// constant [C]) whose input X is the only use of a Conv, Gemm or MatMul output:
//   s[c] = scale[c] / sqrt(var[c] + epsilon),   t[c] = B[c] - mean[c] * s[c]
//   Conv(x, W, b)       -> Conv(x, W * s (per output channel, W's axis 0), b * s + t)
//   Gemm(a, W, C)       -> Gemm(a, W * s (per output column), beta * C * s + t, beta = 1)
//                          (C absent or broadcasting along the columns only: [], [1], [N], [1, N])
//   MatMul(a, W), 2-D   -> Gemm(a, W * s, t)
// The channel axis of BN is axis 1, which is the feature (last) axis of a 2-D Gemm / MatMul
// output. The new node gets a new id, the producer's name and origin, and provenance from both
// nodes; it replaces BN's output (taking its name). The old nodes are removed; weights left
// unused are dce's. Arithmetic is in double, rounded once to the weights' dtype.
#include <cmath>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

// Reads a constant [C] (or broadcastable scalar when allow_scalar) vector as doubles.
bool channel_vector(const Tensor* t, int64_t c, std::vector<double>& out, bool allow_scalar = false) {
  if (!t) return false;
  const bool scalar = allow_scalar && t->numel() == 1;
  if (!scalar) {
    if (t->numel() != c) return false;
    for (int i = 0; i + 1 < t->rank(); ++i)
      if (t->dim(i) != 1) return false;
  }
  out.resize(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) out[i] = t->get(scalar ? 0 : i);
  return true;
}

// W scaled by s along `axis` (each slice W[..., c, ...] times s[c]).
Tensor scale_along(const Tensor& w, int axis, const std::vector<double>& s) {
  Tensor out(w.dtype(), w.shape());
  int64_t inner = 1;
  for (int d = axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
  const int64_t c = w.dim(axis);
  for (int64_t i = 0; i < w.numel(); ++i) out.set(i, w.get(i) * s[static_cast<size_t>((i / inner) % c)]);
  return out;
}

Tensor vector_tensor(DType dt, const std::vector<double>& v) {
  return Tensor::from_doubles(dt, {static_cast<int64_t>(v.size())}, v);
}

class FoldBatchNormPass : public Pass {
 public:
  std::string name() const override { return "fold-batchnorm"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    const std::set<std::string> captured = captured_names(g);
    int folded = 0;
    for (ir::NodeId id : order) {
      if (!g.has_node(id) || g.node(id).op != "BatchNormalization") continue;
      if (fold_one(g, id, captured, ctx)) ++folded;
    }
    return folded > 0;
  }

 private:
  static bool fold_one(ir::Graph& g, ir::NodeId bn_id, const std::set<std::string>& captured, PassContext& ctx) {
    const ir::Node& bn = g.node(bn_id);
    if (const ir::Attribute* tm = bn.attr("training_mode"); tm && tm->i() != 0) return false;
    for (size_t i = 1; i < bn.outputs.size(); ++i)
      if (use_count(g, bn.outputs[i], captured) > 0) return false;
    const ir::ValueId x = bn.inputs[0];
    if (g.value(x).kind != ir::ValueKind::kNodeOutput || sole_user(g, x, captured) != bn_id) return false;
    const ir::Node& p = g.node(g.value(x).producer);
    if (p.op != "Conv" && p.op != "Gemm" && p.op != "MatMul") return false;
    const Tensor* w = ops::constant_value(g, p.inputs[1]);
    if (!w || !is_float(w->dtype())) return false;
    // Channel count: W's axis 0 for Conv, op(B)'s columns for Gemm / MatMul.
    const bool trans_b = p.op == "Gemm" && p.attr("transB") && p.attr("transB")->i() != 0;
    if (p.op == "Conv" ? w->rank() < 3 : w->rank() != 2) return false;
    const int w_axis = p.op == "Conv" || trans_b ? 0 : 1;
    const int64_t c = w->dim(w_axis);
    std::vector<double> scale, shift, mean, var;
    if (!channel_vector(ops::constant_value(g, bn.inputs[1]), c, scale) ||
        !channel_vector(ops::constant_value(g, bn.inputs[2]), c, shift) ||
        !channel_vector(ops::constant_value(g, bn.inputs[3]), c, mean) ||
        !channel_vector(ops::constant_value(g, bn.inputs[4]), c, var))
      return false;
    const ir::Attribute* eps_attr = bn.attr("epsilon");
    const double eps = eps_attr ? eps_attr->f() : 1e-5;
    std::vector<double> s(static_cast<size_t>(c)), t(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) {
      s[i] = scale[i] / std::sqrt(var[i] + eps);
      t[i] = shift[i] - mean[i] * s[i];
    }

    // The bias of the folded node: b * s + t (Conv), beta * C * s + t (Gemm), t (MatMul).
    std::vector<double> bias = t;
    ir::Attributes attrs = p.attrs;
    std::string op = p.op;
    if (p.op == "MatMul") {
      if (g.value(p.inputs[0]).type.rank() != 2 || !g.value(p.inputs[0]).type.rank_known) return false;
      op = "Gemm";
    } else if (p.inputs.size() > 2 && p.inputs[2] != ir::kNoValue) {
      std::vector<double> b;
      if (!channel_vector(ops::constant_value(g, p.inputs[2]), c, b, /*allow_scalar=*/p.op == "Gemm")) return false;
      const double beta = p.op == "Gemm" && p.attr("beta") ? p.attr("beta")->f() : 1.0;
      for (int64_t i = 0; i < c; ++i) bias[i] = beta * b[i] * s[i] + t[i];
    }
    if (op == "Gemm") attrs.insert_or_assign("beta", ir::Attribute(1.0));

    const std::string wname = g.value(p.inputs[1]).name.empty() ? p.name + ".weight" : g.value(p.inputs[1]).name;
    const ir::ValueId w2 = g.add_param(unique_value_name(g, wname + ".bn"), scale_along(*w, w_axis, s));
    const ir::ValueId b2 = g.add_param(unique_value_name(g, wname + ".bn_bias"), vector_tensor(w->dtype(), bias));
    const ir::Node& prod = g.node(g.value(x).producer);
    const ir::NodeId prod_id = prod.id;
    const ir::NodeId n = g.add_node(op, {prod.inputs[0], w2, b2}, 1, prod.name, attrs);
    ir::Node& fused = g.node(n);
    const ir::Node& bn_now = g.node(bn_id);
    fused.provenance.from = {prod_id, bn_id};
    fused.provenance.origin = g.node(prod_id).provenance.origin;
    g.value(fused.outputs[0]).type = g.value(bn_now.outputs[0]).type;
    take_over(g, bn_now.outputs[0], fused.outputs[0]);
    ctx.diagnostics.push_back("fold-batchnorm: folded BatchNormalization #" + std::to_string(bn_id) + " into " +
                              g.node(prod_id).op + " #" + std::to_string(prod_id) + " as #" + std::to_string(n));
    g.remove_node(bn_id);
    g.remove_node(prod_id);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batchnorm_pass() { return std::make_unique<FoldBatchNormPass>(); }

}  // namespace tessera::passes
