// Best-effort type inference for the studio: every reachable node typed, problems per node.
#include "studio/document/type_analysis.h"

#include <algorithm>

#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"

namespace tessera::studio {

namespace {

// Why the node cannot be inferred yet (a required input or attribute missing), or nullopt.
std::optional<std::string> missing_parts(const ir::Node& n, const ops::OpDef& def) {
  std::vector<std::string> missing;
  auto need = [&](size_t i, const ops::PortSpec& port) {
    const bool absent = i >= n.inputs.size() || n.inputs[i] == ir::kNoValue;
    if (absent && !port.optional)
      missing.push_back("required input " + std::to_string(i) + " ('" + port.name + "')");
  };
  for (size_t i = 0; i < def.inputs.size(); ++i) need(i, def.inputs[i]);
  // Further slots of a variadic last port exist only when the node has them.
  if (!def.inputs.empty() && def.inputs.back().variadic)
    for (size_t i = def.inputs.size(); i < n.inputs.size(); ++i) need(i, def.inputs.back());
  for (const ops::AttrSpec& spec : def.attrs)
    if (spec.required && !n.attr(spec.name))
      missing.push_back("required attribute '" + spec.name + "'");
  if (missing.empty()) return std::nullopt;
  std::string text;
  for (size_t i = 0; i < missing.size(); ++i) text += (i ? ", " : "") + missing[i];
  return text + (missing.size() == 1 ? " is missing" : " are missing");
}

}  // namespace

std::string without_node_prefix(const Error& error, const ir::Node& node) {
  // infer_node adds "Op 'name' (#id): "; many ops' own messages start with "Op 'name': ".
  std::string message = error.message;
  const std::string named = node.name.empty() ? node.op : node.op + " '" + node.name + "'";
  for (const std::string& prefix : {ir::describe_node(node) + ": ", named + ": "})
    if (message.compare(0, prefix.size(), prefix) == 0) message = message.substr(prefix.size());
  return message;
}

TypeAnalysis analyse_types(ir::Graph& graph, const ops::OpRegistry& registry, const ops::Scope& outer) {
  TypeAnalysis out;
  for (ir::ValueId c : graph.captures())
    if (auto it = outer.find(graph.value(c).name); it != outer.end()) graph.value(c).type = it->second;
  out.typed.assign(static_cast<size_t>(graph.value_capacity()), false);
  for (const auto* list : {&graph.inputs(), &graph.params(), &graph.captures()})
    for (ir::ValueId v : *list)
      if (graph.has_value(v)) out.typed[static_cast<size_t>(v)] = true;
  // Node outputs start unknown; inference below sets what it reaches.
  for (ir::NodeId id : graph.node_ids())
    for (ir::ValueId v : graph.node(id).outputs)
      if (graph.has_value(v)) graph.value(v).type = ir::TensorType::unranked(DType::kF32);

  auto fail = [&](const Error& e, bool incomplete) {
    if (!out.first_error) out.first_error = e;
    if (e.node >= 0 && graph.has_node(e.node))
      out.problems.emplace(e.node, NodeProblem{e, incomplete});
  };
  // Structure first (a cycle, a dangling value, duplicate names): nothing past the inputs is typed.
  if (Status st = ir::verify(graph); !st) {
    fail(st.error(), false);
    return out;
  }
  Expected<std::vector<ir::NodeId>> order = graph.topological_order();
  if (!order) {
    fail(order.error(), false);
    return out;
  }
  // Named typed values visible to nested graphs (If branches, Loop bodies), as infer_types keeps.
  ops::Scope scope = outer;
  auto publish = [&](ir::ValueId v) {
    if (!graph.value(v).name.empty()) scope[graph.value(v).name] = graph.value(v).type;
  };
  for (ir::ValueId v : graph.captures()) publish(v);
  for (ir::ValueId v : graph.inputs()) publish(v);
  for (ir::ValueId v : graph.params()) publish(v);

  for (ir::NodeId id : *order) {
    ir::Node& n = graph.node(id);
    const ops::OpDef* def = registry.find(n.op);
    if (!def) {
      fail(make_error(ir::describe_node(n) + ": unknown op '" + n.op + "'", {}, id), false);
      continue;
    }
    if (std::optional<std::string> missing = missing_parts(n, *def)) {
      fail(make_error(ir::describe_node(n) + ": " + *missing, {}, id), true);
      continue;
    }
    bool ready = true;
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue && !out.typed[static_cast<size_t>(v)]) ready = false;
    if (!ready) continue;  // waits for an upstream node: no problem of its own
    Status st = Status::ok();
    for (auto& [key, attr] : n.attrs) {
      if (attr.kind() != ir::AttrKind::kGraph || !st) continue;
      Status nested = ops::infer_types(attr.g(), registry, scope);
      if (!nested) {
        Error e = nested.error();
        e.message = ir::describe_node(n) + ": in graph attribute '" + key + "': " + e.message;
        e.node = id;
        st = e;
      }
    }
    if (st) st = ops::infer_node(graph, id, registry);
    if (!st) {
      Error e = st.error();
      e.node = id;
      for (ir::ValueId v : n.outputs) graph.value(v).type = ir::TensorType::unranked(DType::kF32);
      fail(e, false);
      continue;
    }
    for (ir::ValueId v : n.outputs) {
      out.typed[static_cast<size_t>(v)] = true;
      publish(v);
    }
  }
  return out;
}

}  // namespace tessera::studio
