// Algebraic simplification ("canonicalize"): local rewrite rules indexed by op type, applied over
// the graph until none fires (ONNX Runtime's rule-based transformer).
//
// Rules (each keeps the value's type; rewrite.h's name rule decides when a graph output may be
// forwarded: an Identity from a graph input to a graph output stays):
//   Identity(x)                                  -> x
//   Dropout(x) in inference (no training_mode, or a constant false one; mask unused) -> x
//   Dropout(x, ratio 0) in either mode (mask unused)  -> x
//   Add(x, 0) Add(0, x) Sub(x, 0) Mul(x, 1) Mul(1, x) Div(x, 1)  -> x   when the constant is all
//                                                   zeros / ones and the result has x's type
//   Cast(x, to = dtype of x)                     -> x
//   Transpose(Transpose(x, p1), p2)              -> Transpose(x, p1[p2[i]]), or x when that is
//                                                   the identity; Transpose(x, identity) -> x
//   Transpose(x, p) moving only axes of size 1   -> Reshape(x, static result shape)
//   Reshape(x, s) with static x and result of the same shape -> x
//   Reshape(Reshape(x, s1) | Flatten(x), s2)     -> Reshape(x, static result shape)
//   Squeeze(Unsqueeze(x, a), a), Unsqueeze(Squeeze(x, a), a)  -> x   (axes constant, normalised)
//   If(constant condition)                       -> the chosen branch's nodes in this graph (ONNX
//                                                   Runtime's constant folding of If): the model
//                                                   then goes through every pass as one graph.
//                                                   Not when the branch holds nested graphs, a value
//                                                   name this graph has, or returns a value it does
//                                                   not compute, nor when a nested graph captures an
//                                                   output of the If.
// An outer node rewritten in place (Transpose, Reshape) keeps its id and adds the inner node to
// its provenance; the inner node, when now unused, is left to dce.
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

struct RuleContext {
  ir::Graph& g;
  const std::set<std::string>& captured;
};

using Rule = std::function<bool(RuleContext&, ir::NodeId)>;

const ir::TensorType& type_of(const ir::Graph& g, ir::ValueId v) { return g.value(v).type; }

// Forwards node output 0 to `x` and removes the node, when names allow.
bool forward(RuleContext& rc, ir::NodeId id, ir::ValueId x) {
  const ir::Node& n = rc.g.node(id);
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (use_count(rc.g, n.outputs[i], rc.captured) > 0) return false;
  if (!replace_value(rc.g, n.outputs[0], x, rc.captured)) return false;
  rc.g.remove_node(id);
  return true;
}

bool identity_rule(RuleContext& rc, ir::NodeId id) { return forward(rc, id, rc.g.node(id).inputs[0]); }

bool dropout_rule(RuleContext& rc, ir::NodeId id) {
  const ir::Node& n = rc.g.node(id);
  // Ratio 0 drops nothing, in training mode too (torchvision 0.14's Swin exports that).
  const Tensor* ratio = n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue ? ops::constant_value(rc.g, n.inputs[1]) : nullptr;
  if (ratio && ratio->numel() == 1 && ratio->get(0) == 0) return forward(rc, id, n.inputs[0]);
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
    const Tensor* mode = ops::constant_value(rc.g, n.inputs[2]);
    if (!mode || mode->numel() != 1 || mode->get(0) != 0) return false;
  }
  return forward(rc, id, n.inputs[0]);
}

// Binary op with a neutral constant at operand `c`; the other operand is forwarded.
Rule neutral_rule(double neutral, bool either_side) {
  return [neutral, either_side](RuleContext& rc, ir::NodeId id) {
    const ir::Node& n = rc.g.node(id);
    for (int c = 1; c >= (either_side ? 0 : 1); --c) {
      const ir::ValueId x = n.inputs[1 - c];
      const Tensor* k = ops::constant_value(rc.g, n.inputs[c]);
      if (!k || !all_elements_equal(*k, neutral)) continue;
      const ir::TensorType& tx = type_of(rc.g, x);
      if (!tx.rank_known || tx != type_of(rc.g, n.outputs[0])) continue;
      if (forward(rc, id, x)) return true;
    }
    return false;
  };
}

bool cast_rule(RuleContext& rc, ir::NodeId id) {
  const ir::Node& n = rc.g.node(id);
  const ir::Attribute* to = n.attr("to");
  if (!to || to->kind() != ir::AttrKind::kString) return false;
  const auto dt = dtype_from_name(to->s());
  if (!dt || *dt != type_of(rc.g, n.inputs[0]).dtype) return false;
  return forward(rc, id, n.inputs[0]);
}

// perm of a Transpose node (default: reversed), or empty when the input rank is unknown.
std::vector<int64_t> perm_of(const ir::Graph& g, const ir::Node& n) {
  if (const ir::Attribute* p = n.attr("perm")) return p->ints();
  const ir::TensorType& t = type_of(g, n.inputs[0]);
  if (!t.rank_known) return {};
  std::vector<int64_t> p(static_cast<size_t>(t.rank()));
  std::iota(p.rbegin(), p.rend(), 0);
  return p;
}

bool is_identity_perm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// A Transpose that only moves axes of size 1 keeps every element where it was: it is a Reshape
// (which the compile stage makes a view). Batch-1 exports of nn.MultiheadAttention are full of
// them ([1, 128, 256] <-> [128, 1, 256]).
bool moves_only_unit_axes(const ir::TensorType& x, const std::vector<int64_t>& perm) {
  if (!x.is_static() || static_cast<int>(perm.size()) != x.rank()) return false;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank()) return false;
    if (x.dims[static_cast<size_t>(p)].size == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

bool transpose_rule(RuleContext& rc, ir::NodeId id) {
  ir::Node& n = rc.g.node(id);
  const std::vector<int64_t> p2 = perm_of(rc.g, n);
  if (p2.empty() && !n.attr("perm")) return false;
  if (is_identity_perm(p2)) return forward(rc, id, n.inputs[0]);
  const ir::Node* inner = producer(rc.g, n.inputs[0], "Transpose");
  if (!inner) {
    const ir::TensorType& y = type_of(rc.g, n.outputs[0]);
    if (!moves_only_unit_axes(type_of(rc.g, n.inputs[0]), p2) || !y.is_static()) return false;
    const Shape dims = y.static_shape();
    const ir::ValueId shape = rc.g.add_param(unique_value_name(rc.g, (n.name.empty() ? "transpose" : n.name) + ".shape"),
                                             Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
    ir::Node& r = rc.g.node(id);
    r.op = "Reshape";
    r.inputs = {r.inputs[0], shape};
    r.attrs.erase("perm");
    return true;
  }
  const std::vector<int64_t> p1 = perm_of(rc.g, *inner);
  if (p1.size() != p2.size()) return false;
  std::vector<int64_t> composed(p2.size());
  for (size_t i = 0; i < p2.size(); ++i) {
    if (p2[i] < 0 || p2[i] >= static_cast<int64_t>(p1.size())) return false;
    composed[i] = p1[static_cast<size_t>(p2[i])];
  }
  const ir::ValueId x = inner->inputs[0];
  const ir::NodeId inner_id = inner->id;
  if (is_identity_perm(composed)) return forward(rc, id, x);
  n.inputs[0] = x;
  n.attrs.insert_or_assign("perm", ir::Attribute(composed));
  n.provenance.from.push_back(inner_id);
  return true;
}

bool reshape_rule(RuleContext& rc, ir::NodeId id) {
  ir::Node& n = rc.g.node(id);
  const ir::TensorType& in = type_of(rc.g, n.inputs[0]);
  const ir::TensorType& out = type_of(rc.g, n.outputs[0]);
  if (!out.is_static()) return false;
  if (in.is_static() && in.static_shape() == out.static_shape()) return forward(rc, id, n.inputs[0]);
  const ir::Node* inner = producer(rc.g, n.inputs[0], "Reshape");
  if (!inner) inner = producer(rc.g, n.inputs[0], "Flatten");
  if (!inner) return false;
  const Shape shape = out.static_shape();
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return false;  // 0 means "copy"
  const ir::ValueId x = inner->inputs[0];
  const ir::NodeId inner_id = inner->id;
  const std::string base = (n.name.empty() ? std::string("reshape") : n.name) + ".shape";
  const ir::ValueId s = rc.g.add_param(unique_value_name(rc.g, base), Tensor::from_vector<int64_t>(
                                                                           {static_cast<int64_t>(shape.size())}, shape));
  ir::Node& outer = rc.g.node(id);  // add_param does not move nodes, but be explicit
  outer.inputs = {x, s};
  outer.provenance.from.push_back(inner_id);
  return true;
}

// Normalised, sorted axes of a constant axes operand for a tensor of rank `rank`.
std::vector<int64_t> axes_of(const ir::Graph& g, ir::ValueId v, int64_t rank) {
  if (v == ir::kNoValue) return {};
  const Tensor* t = ops::constant_value(g, v);
  if (!t || t->rank() > 1) return {};
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < t->numel(); ++i) {
    int64_t a = static_cast<int64_t>(t->get(i));
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return {};
    axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool squeeze_rule(RuleContext& rc, ir::NodeId id) {
  const ir::Node& n = rc.g.node(id);
  const ir::Node* inner = producer(rc.g, n.inputs[0], "Unsqueeze");
  if (!inner || n.inputs.size() < 2) return false;
  const ir::TensorType& mid = type_of(rc.g, n.inputs[0]);  // rank r + k
  if (!mid.rank_known) return false;
  const auto a = axes_of(rc.g, inner->inputs[1], mid.rank());
  const auto b = axes_of(rc.g, n.inputs[1], mid.rank());
  if (a.empty() || a != b) return false;
  return forward(rc, id, inner->inputs[0]);
}

bool unsqueeze_rule(RuleContext& rc, ir::NodeId id) {
  const ir::Node& n = rc.g.node(id);
  const ir::Node* inner = producer(rc.g, n.inputs[0], "Squeeze");
  if (!inner || inner->inputs.size() < 2) return false;
  const ir::TensorType& x = type_of(rc.g, inner->inputs[0]);  // rank R
  if (!x.rank_known) return false;
  const auto a = axes_of(rc.g, inner->inputs[1], x.rank());
  const auto b = axes_of(rc.g, n.inputs[1], x.rank());
  if (a.empty() || a != b) return false;
  return forward(rc, id, inner->inputs[0]);
}

bool if_rule(RuleContext& rc, ir::NodeId id) {
  ir::Graph& g = rc.g;
  const Tensor* cond = ops::constant_value(g, g.node(id).inputs[0]);
  if (!cond || cond->numel() != 1) return false;
  const ir::Attribute* attr = g.node(id).attr(cond->get(0) != 0 ? "then_branch" : "else_branch");
  if (!attr || attr->kind() != ir::AttrKind::kGraph) return false;
  const ir::Graph branch = attr->g();  // a copy: adding nodes below moves the If node
  if (!branch.inputs().empty() || branch.outputs().size() != g.node(id).outputs.size()) return false;
  // A nested graph reading an output by name would see it defined by nodes that come after it
  // (captures are no edges of the topological order): left as it is.
  for (ir::ValueId out : g.node(id).outputs)
    if (is_captured(g, out, rc.captured)) return false;
  std::set<ir::ValueId> returned;
  for (ir::ValueId out : branch.outputs())
    if (branch.value(out).kind != ir::ValueKind::kNodeOutput || !returned.insert(out).second) return false;
  for (ir::NodeId bn : branch.node_ids())
    if (has_graph_attribute(branch.node(bn))) return false;
  // The enclosing graph's names, once (first live value by name, as Graph::find_value), less the
  // If's own outputs, which go away (exporters often name the branch's output as the If's).
  std::map<std::string, ir::ValueId> names;
  for (ir::ValueId v = 0; v < g.value_capacity(); ++v)
    if (g.has_value(v) && !g.value(v).name.empty()) names.emplace(g.value(v).name, v);
  for (ir::ValueId out : g.node(id).outputs) {
    auto it = names.find(g.value(out).name);
    if (it != names.end() && it->second == out) names.erase(it);
  }
  for (ir::ValueId v = 0; v < branch.value_capacity(); ++v)
    if (branch.has_value(v) && branch.value(v).kind != ir::ValueKind::kCapture && !branch.value(v).name.empty() &&
        names.count(branch.value(v).name))
      return false;
  std::vector<ir::ValueId> map(static_cast<size_t>(branch.value_capacity()), ir::kNoValue);
  for (ir::ValueId c : branch.captures()) {
    auto it = names.find(branch.value(c).name);
    if (it == names.end()) return false;
    map[static_cast<size_t>(c)] = it->second;
  }
  Expected<std::vector<ir::NodeId>> order = branch.topological_order();
  if (!order.has_value()) return false;
  for (ir::ValueId p : branch.params())
    map[static_cast<size_t>(p)] = g.add_param(branch.value(p).name, *branch.param_data(p));
  const std::string origin = g.node(id).provenance.origin;
  for (ir::NodeId bn : *order) {
    const ir::Node& b = branch.node(bn);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : b.inputs) inputs.push_back(v == ir::kNoValue ? ir::kNoValue : map[static_cast<size_t>(v)]);
    const ir::NodeId nn = g.add_node(b.op, inputs, static_cast<int>(b.outputs.size()), b.name, b.attrs);
    g.node(nn).provenance.from = {id};
    g.node(nn).provenance.origin = b.provenance.origin.empty() ? origin : b.provenance.origin;
    for (size_t i = 0; i < b.outputs.size(); ++i) {
      const ir::ValueId nv = g.node(nn).outputs[i];
      g.set_value_name(nv, branch.value(b.outputs[i]).name);
      g.value(nv).type = branch.value(b.outputs[i]).type;
      map[static_cast<size_t>(b.outputs[i])] = nv;
    }
  }
  const std::vector<ir::ValueId> if_outputs = g.node(id).outputs;
  for (size_t i = 0; i < if_outputs.size(); ++i) take_over(g, if_outputs[i], map[static_cast<size_t>(branch.outputs()[i])]);
  g.remove_node(id);
  return true;
}

const std::map<std::string, std::vector<Rule>>& rules() {
  static const std::map<std::string, std::vector<Rule>> kRules = {
      {"Identity", {identity_rule}},
      {"If", {if_rule}},
      {"Dropout", {dropout_rule}},
      {"Add", {neutral_rule(0.0, true)}},
      {"Sub", {neutral_rule(0.0, false)}},
      {"Mul", {neutral_rule(1.0, true)}},
      {"Div", {neutral_rule(1.0, false)}},
      {"Cast", {cast_rule}},
      {"Transpose", {transpose_rule}},
      {"Reshape", {reshape_rule}},
      {"Squeeze", {squeeze_rule}},
      {"Unsqueeze", {unsqueeze_rule}},
  };
  return kRules;
}

class CanonicalizePass : public Pass {
 public:
  static constexpr int kMaxRounds = 32;
  std::string name() const override { return "canonicalize"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    const std::set<std::string> captured = captured_names(g);
    RuleContext rc{g, captured};
    std::map<std::string, int> fired;
    bool any = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      bool changed = false;
      TRY(std::vector<ir::NodeId> order, g.topological_order());
      for (ir::NodeId id : order) {
        if (!g.has_node(id)) continue;
        auto it = rules().find(g.node(id).op);
        if (it == rules().end()) continue;
        const std::string op = g.node(id).op;
        for (const Rule& rule : it->second)
          if (rule(rc, id)) {
            ++fired[op];
            changed = true;
            break;
          }
      }
      any |= changed;
      if (!changed) break;
    }
    for (const auto& [op, count] : fired)
      ctx.diagnostics.push_back("canonicalize: simplified " + std::to_string(count) + " " + op);
    return any;
  }
};

}  // namespace

std::unique_ptr<Pass> make_canonicalize_pass() { return std::make_unique<CanonicalizePass>(); }

}  // namespace tessera::passes
