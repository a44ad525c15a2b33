// Structural verification of graphs.
#include "engine/ir/verifier.h"

#include <set>

namespace tessera::ir {

std::string describe_node(const Node& node) {
  std::string s = node.op;
  if (!node.name.empty()) s += " '" + node.name + "'";
  return s + " (#" + std::to_string(node.id) + ")";
}

namespace {

Error node_err(const Node& n, const std::string& msg) {
  return make_error(describe_node(n) + ": " + msg, {}, n.id);
}

std::string value_ref(const Graph& g, ValueId v) {
  std::string s = "%" + std::to_string(v);
  if (g.has_value(v) && !g.value(v).name.empty()) s += " '" + g.value(v).name + "'";
  return s;
}

Status verify_values(const Graph& g) {
  std::set<std::string> names;
  auto check_kind = [&](const std::vector<ValueId>& ids, ValueKind kind, const char* what) -> Status {
    for (ValueId v : ids) {
      if (!g.has_value(v) || g.value(v).kind != kind)
        return make_error(std::string("graph ") + what + " list refers to " + value_ref(g, v) +
                          ", which is not a live " + what);
      const std::string& name = g.value(v).name;
      if (name.empty()) return make_error(std::string("graph ") + what + " " + value_ref(g, v) + " has no name");
      if (!names.insert(name).second)
        return make_error("two graph inputs, params or captures are named '" + name + "'");
    }
    return Status::ok();
  };
  RETURN_IF_ERROR(check_kind(g.inputs(), ValueKind::kInput, "input"));
  RETURN_IF_ERROR(check_kind(g.params(), ValueKind::kParam, "param"));
  RETURN_IF_ERROR(check_kind(g.captures(), ValueKind::kCapture, "capture"));
  for (ValueId v : g.params()) {
    const Tensor* data = g.param_data(v);
    if (!data) return make_error("param " + value_ref(g, v) + " has no data");
    if (!g.value(v).type.accepts(data->dtype(), data->shape()))
      return make_error("param " + value_ref(g, v) + " is declared " + g.value(v).type.to_string() +
                        " but holds " + std::string(dtype_name(data->dtype())) + shape_to_string(data->shape()));
  }
  for (int id = 0; id < g.value_capacity(); ++id) {
    const Value& v = g.value(id);
    if (!v.alive || v.kind != ValueKind::kNodeOutput) continue;
    if (!g.has_node(v.producer))
      return make_error("value " + value_ref(g, id) + " has no live producing node");
    const Node& p = g.node(v.producer);
    if (v.producer_output < 0 || v.producer_output >= static_cast<int>(p.outputs.size()) ||
        p.outputs[v.producer_output] != id)
      return node_err(p, "value " + value_ref(g, id) + " claims to be output " +
                             std::to_string(v.producer_output) + " of this node, but is not");
  }
  return Status::ok();
}

}  // namespace

Status verify(const Graph& g) {
  RETURN_IF_ERROR(verify_values(g));
  if (!g.name_index_consistent())  // a bug of ours, not of the input: some code assigned Value::name
    return make_error("internal: a value was renamed without Graph::set_value_name (the name index is stale)");
  for (NodeId id : g.node_ids()) {
    const Node& n = g.node(id);
    if (n.op.empty()) return node_err(n, "node has no op");
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      if (v != kNoValue && !g.has_value(v))
        return node_err(n, "input " + std::to_string(i) + " refers to undefined value %" + std::to_string(v));
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ValueId v = n.outputs[i];
      if (!g.has_value(v) || g.value(v).kind != ValueKind::kNodeOutput || g.value(v).producer != id ||
          g.value(v).producer_output != static_cast<int>(i))
        return node_err(n, "output " + std::to_string(i) + " (%" + std::to_string(v) +
                               ") is not a value defined by this node (single assignment)");
    }
    for (const auto& [key, attr] : n.attrs) {
      if (attr.kind() != AttrKind::kGraph) continue;
      Status st = verify(attr.g());
      if (!st.is_ok()) {
        Error e = st.error();
        e.message = describe_node(n) + ": in graph attribute '" + key + "': " + e.message;
        e.node = n.id;
        return e;
      }
    }
  }
  for (ValueId v : g.outputs())
    if (!g.has_value(v)) return make_error("graph output refers to undefined value %" + std::to_string(v));
  auto order = g.topological_order();
  if (!order) return order.error();
  return Status::ok();
}

}  // namespace tessera::ir
