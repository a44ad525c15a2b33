// Graph-editing helpers shared by the passes.
#include "engine/passes/rewrite.h"

#include <algorithm>

namespace tessera::passes {
namespace {

void collect_captures(const ir::Graph& g, std::set<std::string>& names) {
  for (ir::ValueId c : g.captures()) names.insert(g.value(c).name);
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph) collect_captures(attr.g(), names);
}

}  // namespace

std::set<std::string> captured_names(const ir::Graph& g) {
  std::set<std::string> names;
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph) collect_captures(attr.g(), names);
  return names;
}

bool is_graph_output(const ir::Graph& g, ir::ValueId v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

bool is_captured(const ir::Graph& g, ir::ValueId v, const std::set<std::string>& captured) {
  const std::string& name = g.value(v).name;
  return !name.empty() && captured.count(name) > 0;
}

int use_count(const ir::Graph& g, ir::ValueId v, const std::set<std::string>& captured) {
  int n = static_cast<int>(g.uses(v).size());
  n += static_cast<int>(std::count(g.outputs().begin(), g.outputs().end(), v));
  return n + (is_captured(g, v, captured) ? 1 : 0);
}

const ir::Node* producer(const ir::Graph& g, ir::ValueId v, const std::string& op) {
  if (v == ir::kNoValue || !g.has_value(v) || g.value(v).kind != ir::ValueKind::kNodeOutput) return nullptr;
  const ir::Node& p = g.node(g.value(v).producer);
  return p.alive && p.op == op ? &p : nullptr;
}

ir::NodeId sole_user(const ir::Graph& g, ir::ValueId v, const std::set<std::string>& captured) {
  if (is_graph_output(g, v) || is_captured(g, v, captured)) return ir::kNoNode;
  const std::vector<ir::Use> uses = g.uses(v);
  return uses.size() == 1 ? uses[0].node : ir::kNoNode;
}

bool replace_value(ir::Graph& g, ir::ValueId from, ir::ValueId to, const std::set<std::string>& captured) {
  if (from == to) return false;
  if (is_graph_output(g, from) || is_captured(g, from, captured)) {
    const ir::Value& t = g.value(to);
    if (t.kind != ir::ValueKind::kNodeOutput || is_graph_output(g, to) || is_captured(g, to, captured))
      return false;
    g.set_value_name(to, g.value(from).name);
  }
  g.replace_all_uses(from, to);
  return true;
}

void take_over(ir::Graph& g, ir::ValueId from, ir::ValueId fresh) {
  g.set_value_name(fresh, g.value(from).name);
  g.replace_all_uses(from, fresh);
}

bool remove_unused_params(ir::Graph& g) {
  std::set<ir::ValueId> used(g.outputs().begin(), g.outputs().end());
  for (ir::NodeId id : g.node_ids())
    for (ir::ValueId v : g.node(id).inputs) used.insert(v);
  const std::set<std::string> captured = captured_names(g);
  std::vector<ir::ValueId> keep;
  for (ir::ValueId p : g.params())
    if (used.count(p) || is_captured(g, p, captured)) keep.push_back(p);
  if (keep.size() == g.params().size()) return false;

  // No Graph::remove_param: rebuild with the same ids (define_value / define_node fill gaps with
  // tombstones), then pin the old capacities with a dead node so that ids are never reused.
  ir::Graph out(g.name());
  auto copy_value = [&](ir::ValueId v) {
    Status st = out.define_value(v, g.value(v));
    assert(st.is_ok());
    (void)st;
  };
  for (ir::ValueId v : g.inputs()) copy_value(v);
  for (ir::ValueId v : keep) {
    copy_value(v);
    out.set_param_data(v, *g.param_data(v));
  }
  for (ir::ValueId v : g.captures()) copy_value(v);
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    for (ir::ValueId v : n.outputs) copy_value(v);
    Status st = out.define_node(id, n);
    assert(st.is_ok());
    (void)st;
  }
  const bool nodes_short = out.node_capacity() < g.node_capacity();
  const bool values_short = out.value_capacity() < g.value_capacity();
  if (nodes_short || values_short) {
    const ir::NodeId tomb_id = std::max(g.node_capacity() - 1, out.node_capacity());
    ir::Node tomb;
    tomb.op = "<removed>";
    if (values_short) {
      const ir::ValueId vid = g.value_capacity() - 1;
      ir::Value v;
      v.producer = tomb_id;
      v.producer_output = 0;
      Status st = out.define_value(vid, v);
      assert(st.is_ok());
      (void)st;
      tomb.outputs.push_back(vid);
    }
    Status st = out.define_node(tomb_id, std::move(tomb));
    assert(st.is_ok());
    (void)st;
    out.remove_node(tomb_id);
  }
  out.set_outputs(g.outputs());
  g = std::move(out);
  return true;
}

std::string unique_value_name(const ir::Graph& g, const std::string& base) {
  if (!g.find_value(base)) return base;
  for (int i = 1;; ++i) {
    std::string name = base + "_" + std::to_string(i);
    if (!g.find_value(name)) return name;
  }
}

bool all_elements_equal(const Tensor& t, double x) {
  if (t.numel() == 0) return false;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.get(i) != x) return false;
  return true;
}

bool is_impure(const ir::Node& n) {
  static const std::set<std::string> kRandom = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                "RandomUniformLike", "Multinomial", "Bernoulli"};
  if (kRandom.count(n.op)) return true;
  // Collectives talk to the other ranks: never folded, merged or dropped.
  if (n.op == "AllReduce" || n.op == "AllReduceStart" || n.op == "AllReduceWait") return true;
  // Dropout draws a mask when training_mode is given (its value decides at run time).
  return n.op == "Dropout" && n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue;
}

bool has_graph_attribute(const ir::Node& n) {
  for (const auto& [key, attr] : n.attrs)
    if (attr.kind() == ir::AttrKind::kGraph) return true;
  return false;
}

}  // namespace tessera::passes
