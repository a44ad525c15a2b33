// Patches of the studio's document state: capturing items by id, writing them back, trial edits.
#include "studio/document/document_state.h"

#include <algorithm>
#include <cassert>

namespace tessera::studio {

namespace {

// Makes `id` a slot of the graph without touching its lists (define_value of an input or param
// would append it to the input or param list), then writes the value there.
void put_value(ir::Graph& g, ir::ValueId id, const ir::Value& v) {
  if (id >= g.value_capacity()) {
    ir::Value placeholder;
    placeholder.kind = ir::ValueKind::kNodeOutput;
    [[maybe_unused]] Status st = g.define_value(id, placeholder);
    assert(st.is_ok());
  }
  g.set_value_name(id, v.name);  // first: the graph's name index follows renames
  g.value(id) = v;
  g.value(id).id = id;
}

void put_node(ir::Graph& g, ir::NodeId id, const ir::Node& n) {
  if (id >= g.node_capacity()) {
    [[maybe_unused]] Status st = g.define_node(id, ir::Node{});
    assert(st.is_ok());
  }
  g.node(id) = n;
  g.node(id).id = id;
}

template <class Map, class Key>
auto find_opt(const Map& m, const Key& k) -> std::optional<typename Map::mapped_type> {
  auto it = m.find(k);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace

StatePatch capture(const DocumentState& state, const Touched& touched) {
  const ir::Graph& g = state.graph();
  StatePatch p;
  for (ir::NodeId id : touched.nodes)
    p.nodes[id] = g.has_node(id) ? std::optional<ir::Node>(g.node(id)) : std::nullopt;
  for (ir::ValueId id : touched.values) {
    if (!g.has_value(id)) {
      p.values[id] = std::nullopt;
      continue;
    }
    ValueState vs{g.value(id), std::nullopt};
    if (const Tensor* t = g.param_data(id); t && g.value(id).kind == ir::ValueKind::kParam)
      vs.data = *t;
    p.values[id] = std::move(vs);
  }
  if (touched.lists) {
    p.inputs = g.inputs();
    p.params = g.params();
  }
  if (touched.outputs) p.outputs = g.outputs();
  for (ir::NodeId id : touched.positions) p.positions[id] = find_opt(state.layout().positions, id);
  for (ir::ValueId id : touched.value_positions)
    p.value_positions[id] = find_opt(state.value_positions, id);
  if (touched.groups) p.groups = state.layout().groups;
  return p;
}

void apply_patch(DocumentState& state, const StatePatch& p) {
  ir::Graph& g = state.graph();
  for (const auto& [id, vs] : p.values) {
    if (vs) {
      put_value(g, id, vs->value);
      if (vs->data) g.set_param_data(id, *vs->data);
    } else if (id < g.value_capacity()) {
      g.value(id).alive = false;
    }
  }
  for (const auto& [id, n] : p.nodes) {
    if (n)
      put_node(g, id, *n);
    else if (id < g.node_capacity())
      g.node(id).alive = false;
  }
  if (p.inputs || p.params)
    g = with_lists(g, p.inputs.value_or(g.inputs()), p.params.value_or(g.params()));
  if (p.outputs) g.set_outputs(*p.outputs);
  for (const auto& [id, pos] : p.positions) {
    if (pos)
      state.layout().positions[id] = *pos;
    else
      state.layout().positions.erase(id);
  }
  for (const auto& [id, pos] : p.value_positions) {
    if (pos)
      state.value_positions[id] = *pos;
    else
      state.value_positions.erase(id);
  }
  if (p.groups) state.layout().groups = *p.groups;
}

ir::Graph with_lists(const ir::Graph& graph, const std::vector<ir::ValueId>& inputs,
                     const std::vector<ir::ValueId>& params) {
  ir::Graph out(graph.name());
  // define_value appends inputs, params and captures to their lists: define those in list order.
  auto define = [&](ir::ValueId id) {
    [[maybe_unused]] Status st = out.define_value(id, graph.value(id));
    assert(st.is_ok());
  };
  for (ir::ValueId id : inputs) define(id);
  for (ir::ValueId id : params) {
    define(id);
    if (const Tensor* t = graph.param_data(id)) out.set_param_data(id, *t);
  }
  for (ir::ValueId id : graph.captures()) define(id);
  for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
    if (out.has_value(id)) continue;
    ir::Value v = graph.value(id);
    // A live input or param left out of the lists would break the graph: callers tombstone it.
    if (v.kind != ir::ValueKind::kNodeOutput) v.alive = false;
    put_value(out, id, v);
  }
  for (ir::NodeId id = 0; id < graph.node_capacity(); ++id) put_node(out, id, graph.node(id));
  out.set_outputs(graph.outputs());
  return out;
}

void trim_inputs(ir::Node& node) {
  while (!node.inputs.empty() && node.inputs.back() == ir::kNoValue) node.inputs.pop_back();
}

// ---- Trial ----

ir::NodeId Trial::add_node(const std::string& op, std::vector<ir::ValueId> inputs,
                           const std::vector<std::string>& output_names, const std::string& name,
                           ir::Attributes attrs) {
  ir::Graph& g = graph();
  const ir::NodeId id = g.add_node(op, std::move(inputs), static_cast<int>(output_names.size()),
                                   name, std::move(attrs));
  g.node(id).provenance.origin = "studio";
  trim_inputs(g.node(id));
  touched_.nodes.insert(id);
  for (size_t i = 0; i < output_names.size(); ++i) {
    const ir::ValueId v = g.node(id).outputs[i];
    g.set_value_name(v, output_names[i]);
    touched_.values.insert(v);
  }
  return id;
}

ir::ValueId Trial::add_input(const std::string& name, ir::TensorType type) {
  const ir::ValueId v = graph().add_input(name, std::move(type));
  touched_.values.insert(v);
  touched_.lists = true;
  return v;
}

ir::ValueId Trial::add_param(const std::string& name, Tensor data) {
  const ir::ValueId v = graph().add_param(name, std::move(data));
  touched_.values.insert(v);
  touched_.lists = true;
  return v;
}

void Trial::drop_uses(ir::ValueId v) {
  ir::Graph& g = graph();
  for (const ir::Use& use : g.uses(v)) {
    ir::Node& n = node(use.node);
    n.inputs[static_cast<size_t>(use.input_index)] = ir::kNoValue;
    trim_inputs(n);
  }
  const std::vector<ir::ValueId>& outs = g.outputs();
  if (std::find(outs.begin(), outs.end(), v) != outs.end()) {
    std::vector<ir::ValueId> kept;
    for (ir::ValueId o : outs)
      if (o != v) kept.push_back(o);
    set_outputs(std::move(kept));
  }
}

void Trial::remove_node(ir::NodeId id) {
  ir::Graph& g = graph();
  touched_.nodes.insert(id);
  for (ir::ValueId v : g.node(id).outputs) touched_.values.insert(v);
  g.remove_node(id);
  for (ir::ValueId v : g.node(id).outputs) drop_uses(v);
  set_position(id, std::nullopt);
  std::vector<NodeGroup>& gs = groups();
  for (NodeGroup& group : gs)
    group.nodes.erase(std::remove(group.nodes.begin(), group.nodes.end(), id), group.nodes.end());
  gs.erase(
      std::remove_if(gs.begin(), gs.end(), [](const NodeGroup& grp) { return grp.nodes.empty(); }),
      gs.end());
}

void Trial::remove_values(const std::vector<ir::ValueId>& ids) {
  ir::Graph& g = graph();
  const std::set<ir::ValueId> gone(ids.begin(), ids.end());
  for (ir::ValueId id : gone) {
    drop_uses(id);
    touched_.values.insert(id);
    set_value_position(id, std::nullopt);
    g.value(id).alive = false;
  }
  touched_.lists = true;
  std::vector<ir::ValueId> inputs, params;
  for (ir::ValueId v : g.inputs())
    if (!gone.count(v)) inputs.push_back(v);
  for (ir::ValueId v : g.params())
    if (!gone.count(v)) params.push_back(v);
  g = with_lists(g, inputs, params);
}

ir::Node& Trial::node(ir::NodeId id) {
  touched_.nodes.insert(id);
  return graph().node(id);
}

ir::Value& Trial::value(ir::ValueId id) {
  touched_.values.insert(id);
  return graph().value(id);
}

void Trial::set_value_name(ir::ValueId id, std::string name) {
  touched_.values.insert(id);
  graph().set_value_name(id, std::move(name));
}

void Trial::set_outputs(std::vector<ir::ValueId> outputs) {
  touched_.outputs = true;
  graph().set_outputs(std::move(outputs));
}

void Trial::set_position(ir::NodeId id, std::optional<NodePosition> pos) {
  touched_.positions.insert(id);
  if (pos)
    state_.layout().positions[id] = *pos;
  else
    state_.layout().positions.erase(id);
}

void Trial::set_value_position(ir::ValueId id, std::optional<NodePosition> pos) {
  touched_.value_positions.insert(id);
  if (pos)
    state_.value_positions[id] = *pos;
  else
    state_.value_positions.erase(id);
}

std::vector<NodeGroup>& Trial::groups() {
  touched_.groups = true;
  return state_.layout().groups;
}

}  // namespace tessera::studio
