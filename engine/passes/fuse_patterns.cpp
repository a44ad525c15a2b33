// Pattern fusion ("fuse-patterns"): decomposed forms that exporters write for ops the CPU backend
// runs as one kernel (ONNX Runtime's LayerNormFusion, GeluFusion and the activation fusions):
//
//   Mul(x, Sigmoid(x))                                   -> Swish(x)            (SiLU, EfficientNet)
//   Mul(x, HardSigmoid(x, alpha 1/6, beta 1/2))          -> HardSwish(x)        (MobileNetV3 at opset < 14)
//   x * 0.5 * (1 + Erf(x / sqrt 2)), either Mul order    -> Gelu(x)             (BERT, ViT, ConvNeXt)
//   ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div [-> Mul gamma] [-> Add beta]
//                                                        -> LayerNormalization  (every transformer)
//
// Every intermediate must have its single use inside the pattern (a value also read elsewhere,
// by a gradient for instance, keeps the pattern as it is), constants must match to 1e-6 relative,
// and the replacement takes the last value's name and type. The fused node keeps the provenance
// of every node it replaces. Once fused, the `fuse` pass can absorb Swish, HardSwish, HardSigmoid
// and Gelu into a preceding Conv or MatMul as a post-op.
#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

struct Matcher {
  ir::Graph& g;
  const std::set<std::string>& captured;

  const ir::Node* producer(ir::ValueId v, const char* op) const {
    const ir::Node* p = passes::producer(g, v, op);
    return p && p->outputs.size() == 1 ? p : nullptr;
  }
  // The single consumer of v when it is a live `op` node, else nullptr.
  const ir::Node* sole(ir::ValueId v, const char* op) const {
    const ir::NodeId u = sole_user(g, v, captured);
    if (u == ir::kNoNode) return nullptr;
    const ir::Node& n = g.node(u);
    return n.op == op && n.outputs.size() == 1 ? &n : nullptr;
  }
  // The scalar value of constant v (one element), if any.
  std::optional<double> scalar(ir::ValueId v) const {
    const Tensor* t = v == ir::kNoValue ? nullptr : ops::constant_value(g, v);
    if (!t || t->numel() != 1) return std::nullopt;
    return t->get(0);
  }
  bool is_scalar(ir::ValueId v, double want) const {
    const auto x = scalar(v);
    return x && std::fabs(*x - want) <= 1e-6 * std::max(1.0, std::fabs(want));
  }
  // The operand of binary node n that is not `v` (kNoValue when both are v).
  static ir::ValueId other(const ir::Node& n, ir::ValueId v) {
    if (n.inputs.size() != 2) return ir::kNoValue;
    return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : ir::kNoValue;
  }
  const ir::TensorType& type(ir::ValueId v) const { return g.value(v).type; }
};

// Replaces the value `last` with a new `op` node over `inputs`, removing `nodes` (which must
// include last's producer).
void replace(ir::Graph& g, ir::ValueId last, const std::string& op, std::vector<ir::ValueId> inputs,
             ir::Attributes attrs, const std::vector<ir::NodeId>& nodes, PassContext& ctx) {
  const ir::Node& first = g.node(nodes.front());
  const std::string name = first.name, origin = first.provenance.origin;
  const ir::NodeId n = g.add_node(op, std::move(inputs), 1, name, std::move(attrs));
  ir::Node& f = g.node(n);
  f.provenance.origin = origin;
  std::string what;
  for (ir::NodeId id : nodes) {
    f.provenance.from.push_back(id);
    what += (what.empty() ? "" : "+") + g.node(id).op;
  }
  g.value(f.outputs[0]).type = g.value(last).type;
  take_over(g, last, f.outputs[0]);
  for (ir::NodeId id : nodes) g.remove_node(id);
  ctx.diagnostics.push_back("fuse-patterns: " + what + " -> " + op + " #" + std::to_string(n));
}

// Mul(x, Gate(x)) -> op(x), Gate being Sigmoid (Swish) or HardSigmoid 1/6, 1/2 (HardSwish).
bool match_gated(Matcher& m, const ir::Node& gate, PassContext& ctx) {
  const ir::ValueId x = gate.inputs[0];
  const ir::Node* mul = m.sole(gate.outputs[0], "Mul");
  if (!mul || Matcher::other(*mul, gate.outputs[0]) != x || m.type(mul->outputs[0]) != m.type(x)) return false;
  std::string op = "Swish";
  if (gate.op == "HardSigmoid") {
    const ir::Attribute* a = gate.attr("alpha");
    const ir::Attribute* b = gate.attr("beta");
    const double alpha = a ? a->f() : 0.2, beta = b ? b->f() : 0.5;
    if (std::fabs(alpha - 1.0 / 6.0) > 1e-6 || std::fabs(beta - 0.5) > 1e-6) return false;
    op = "HardSwish";
  }
  ir::Attributes attrs;
  if (op == "Swish") attrs.insert_or_assign("alpha", ir::Attribute(1.0));
  replace(m.g, mul->outputs[0], op, {x}, std::move(attrs), {gate.id, mul->id}, ctx);
  return true;
}

// x * 0.5 * (1 + Erf(x / sqrt 2)) in PyTorch's order Mul(Mul(x, A), 0.5) or Mul(x, Mul(A, 0.5)),
// A = Add(Erf(Div(x, sqrt 2) | Mul(x, 1 / sqrt 2)), 1).
bool match_gelu(Matcher& m, const ir::Node& erf, PassContext& ctx) {
  const ir::Node* scale = m.producer(erf.inputs[0], "Div");
  double want = std::sqrt(2.0);
  if (!scale) {
    scale = m.producer(erf.inputs[0], "Mul");
    want = std::sqrt(0.5);
  }
  if (!scale || sole_user(m.g, scale->outputs[0], m.captured) != erf.id) return false;
  const ir::ValueId x = scale->inputs[0];
  if (!m.is_scalar(scale->inputs[1], want) || !is_float(m.type(x).dtype)) return false;
  const ir::Node* add = m.sole(erf.outputs[0], "Add");
  if (!add || !m.is_scalar(Matcher::other(*add, erf.outputs[0]), 1.0)) return false;
  const ir::Node* m1 = m.sole(add->outputs[0], "Mul");
  if (!m1) return false;
  const ir::ValueId o1 = Matcher::other(*m1, add->outputs[0]);
  const ir::Node* m2 = m.sole(m1->outputs[0], "Mul");
  if (!m2) return false;
  const ir::ValueId o2 = Matcher::other(*m2, m1->outputs[0]);
  const bool ok = (o1 == x && m.is_scalar(o2, 0.5)) || (m.is_scalar(o1, 0.5) && o2 == x);
  if (!ok || m.type(m2->outputs[0]) != m.type(x)) return false;
  ir::Attributes attrs;
  attrs.insert_or_assign("approximate", ir::Attribute("none"));
  replace(m.g, m2->outputs[0], "Gelu", {x}, std::move(attrs), {scale->id, erf.id, add->id, m1->id, m2->id}, ctx);
  return true;
}

// ReduceMean's axes (attribute, or constant input 1 from opset 18), normalised; empty on failure.
std::vector<int64_t> mean_axes(const Matcher& m, const ir::Node& r, int rank) {
  std::vector<int64_t> axes;
  if (const ir::Attribute* a = r.attr("axes"); a && a->kind() == ir::AttrKind::kInts) {
    axes = a->ints();
  } else if (r.inputs.size() > 1 && r.inputs[1] != ir::kNoValue) {
    const Tensor* t = ops::constant_value(m.g, r.inputs[1]);
    if (!t) return {};
    for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(static_cast<int64_t>(t->get(i)));
  }
  const ir::Attribute* keep = r.attr("keepdims");
  if (keep && keep->i() == 0) return {};
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return {};
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// A constant of the normalised shape (the trailing dims of x from `axis`), possibly with leading
// ones, as LayerNormalization's Scale / B need; returns it reshaped, or kNoValue.
ir::ValueId norm_param(Matcher& m, ir::ValueId v, const std::vector<int64_t>& norm_shape, const std::string& name) {
  const Tensor* t = ops::constant_value(m.g, v);
  if (!t) return ir::kNoValue;
  int64_t n = 1;
  for (int64_t d : norm_shape) n *= d;
  const std::vector<int64_t>& s = t->shape();
  if (t->numel() != n || s.size() < norm_shape.size()) return ir::kNoValue;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t tail = s.size() - i;
    if (tail > norm_shape.size() ? s[i] != 1 : s[i] != norm_shape[norm_shape.size() - tail]) return ir::kNoValue;
  }
  if (s == norm_shape) return v;
  Tensor r(t->dtype(), norm_shape);
  for (int64_t i = 0; i < n; ++i) r.set(i, t->get(i));
  return m.g.add_param(unique_value_name(m.g, name), std::move(r));
}

bool match_layer_norm(Matcher& m, const ir::Node& mean, PassContext& ctx) {
  const ir::ValueId x = mean.inputs[0];
  const ir::TensorType& xt = m.type(x);
  if (!xt.is_static() || xt.rank() < 1 || !is_float(xt.dtype)) return false;
  const int rank = xt.rank();
  const std::vector<int64_t> axes = mean_axes(m, mean, rank);
  if (axes.empty() || axes.back() != rank - 1) return false;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  const ir::Node* sub = m.sole(mean.outputs[0], "Sub");
  if (!sub || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0]) return false;
  const ir::ValueId d = sub->outputs[0];
  // d is read twice: by Pow (variance) and by Div (normalisation).
  if (use_count(m.g, d, m.captured) != 2) return false;
  const ir::Node* pow = nullptr;
  const ir::Node* div = nullptr;
  for (const ir::Use& u : m.g.uses(d)) {
    const ir::Node& n = m.g.node(u.node);
    if (u.input_index != 0 || n.outputs.size() != 1) continue;
    if (n.op == "Pow") pow = &n;
    if (n.op == "Div") div = &n;
  }
  if (!pow || !div || !m.is_scalar(pow->inputs[1], 2.0)) return false;
  const ir::Node* var = m.sole(pow->outputs[0], "ReduceMean");
  if (!var || mean_axes(m, *var, rank) != axes) return false;
  const ir::Node* add = m.sole(var->outputs[0], "Add");
  if (!add) return false;
  const auto eps = m.scalar(Matcher::other(*add, var->outputs[0]));
  if (!eps || !(*eps >= 0)) return false;
  const ir::Node* sqrt = m.sole(add->outputs[0], "Sqrt");
  if (!sqrt || sole_user(m.g, sqrt->outputs[0], m.captured) != div->id || div->inputs[1] != sqrt->outputs[0]) return false;
  std::vector<ir::NodeId> nodes{mean.id, sub->id, pow->id, var->id, add->id, sqrt->id, div->id};
  ir::ValueId last = div->outputs[0];
  std::vector<int64_t> norm_shape;
  for (int a = static_cast<int>(axes.front()); a < rank; ++a) norm_shape.push_back(xt.dims[a].size);
  const std::string base = mean.name.empty() ? "layer_norm" : mean.name;
  ir::ValueId gamma = ir::kNoValue, beta = ir::kNoValue;
  if (const ir::Node* mul = m.sole(last, "Mul")) {
    gamma = norm_param(m, Matcher::other(*mul, last), norm_shape, base + ".scale");
    if (gamma != ir::kNoValue && m.type(mul->outputs[0]) == xt) {
      nodes.push_back(mul->id);
      last = mul->outputs[0];
      if (const ir::Node* badd = m.sole(last, "Add")) {
        beta = norm_param(m, Matcher::other(*badd, last), norm_shape, base + ".bias");
        if (beta != ir::kNoValue && m.type(badd->outputs[0]) == xt) {
          nodes.push_back(badd->id);
          last = badd->outputs[0];
        } else {
          beta = ir::kNoValue;
        }
      }
    } else {
      gamma = ir::kNoValue;
    }
  }
  if (gamma == ir::kNoValue) {
    Tensor ones(xt.dtype, norm_shape);
    for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1.0);
    gamma = m.g.add_param(unique_value_name(m.g, base + ".scale"), std::move(ones));
  }
  std::vector<ir::ValueId> inputs{x, gamma};
  if (beta != ir::kNoValue) inputs.push_back(beta);
  ir::Attributes attrs;
  attrs.insert_or_assign("axis", ir::Attribute(axes.front() - rank));
  attrs.insert_or_assign("epsilon", ir::Attribute(*eps));
  replace(m.g, last, "LayerNormalization", std::move(inputs), std::move(attrs), nodes, ctx);
  return true;
}

class FusePatternsPass : public Pass {
 public:
  std::string name() const override { return "fuse-patterns"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    const std::set<std::string> captured = captured_names(g);
    Matcher m{g, captured};
    bool changed = false;
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    for (ir::NodeId id : order) {
      if (!g.has_node(id)) continue;
      const ir::Node& n = g.node(id);
      if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == ir::kNoValue) continue;
      if (n.op == "Sigmoid" || n.op == "HardSigmoid") changed |= match_gated(m, n, ctx);
      else if (n.op == "Erf") changed |= match_gelu(m, n, ctx);
      else if (n.op == "ReduceMean") changed |= match_layer_norm(m, n, ctx);
    }
    if (changed) remove_unused_params(g);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_patterns_pass() { return std::make_unique<FusePatternsPass>(); }

}  // namespace tessera::passes
