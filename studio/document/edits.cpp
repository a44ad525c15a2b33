// Planning the studio's graph edits: validation, the trial edit, inference on the trial, the patch.
// Layout edits (moves, positions, groups) and paste are in edits_layout.cpp.
#include "studio/document/edits.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "engine/ir/verifier.h"

namespace tessera::studio {

namespace {

Error node_error(const ir::Node& n, const std::string& message) {
  return make_error(ir::describe_node(n) + message, {}, n.id);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> node_names(const ir::Graph& g, ir::NodeId except = ir::kNoNode) {
  std::vector<std::string> names;
  for (ir::NodeId id : g.node_ids())
    if (id != except) names.push_back(g.node(id).name);
  return names;
}

std::vector<std::string> value_names(const ir::Graph& g, ir::ValueId except = ir::kNoValue) {
  std::vector<std::string> names;
  for (ir::ValueId id = 0; id < g.value_capacity(); ++id)
    if (g.has_value(id) && id != except) names.push_back(g.value(id).name);
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// "%5 'w' : f32[10, 3]" (the type only when known).
std::string value_text(const EditContext& ctx, ir::ValueId v) {
  const ir::Value& val = ctx.state.graph().value(v);
  std::string s = "%" + std::to_string(v);
  if (!val.name.empty()) s += " '" + val.name + "'";
  if (ctx.analysis.typed.size() > static_cast<size_t>(v) &&
      ctx.analysis.typed[static_cast<size_t>(v)])
    s += " : " + val.type.to_string();
  return s;
}

std::string value_label(const ir::Graph& g, ir::ValueId v) {
  const std::string& name = g.value(v).name;
  return name.empty() ? "%" + std::to_string(v) : "'" + name + "'";
}

std::string node_label(const ir::Node& n) {
  return n.name.empty() ? n.op + " #" + std::to_string(n.id) : n.op + " '" + n.name + "'";
}

// The schema's name for input slot `index` (a variadic port names all its slots).
std::string port_name(const ops::OpDef& def, int index) {
  if (def.inputs.empty()) return "?";
  return def.inputs[std::min(static_cast<size_t>(index), def.inputs.size() - 1)].name;
}

Expected<const ops::OpDef*> def_of(const EditContext& ctx, const ir::Node& n) {
  const ops::OpDef* def = ctx.registry.find(n.op);
  if (!def) return node_error(n, ": unknown op '" + n.op + "'");
  return def;
}

// The attribute is in the schema (or is "layout", allowed on every op) with the declared kind.
Status check_attribute(const ops::OpDef& def, const std::string& who, const std::string& key,
                       const ir::Attribute& attr) {
  const ops::AttrSpec* spec = def.find_attr(key);
  ir::AttrKind want = ir::AttrKind::kString;
  if (spec)
    want = spec->kind;
  else if (key != "layout")
    return make_error(who + ": op " + def.name + " has no attribute '" + key + "'");
  bool ok = attr.kind() == want;
  // An empty list carries no element type: it fits any list kind (as ops::check_node accepts).
  const bool list = want == ir::AttrKind::kInts || want == ir::AttrKind::kFloats ||
                    want == ir::AttrKind::kStrings;
  if (!ok && list)
    ok = (attr.kind() == ir::AttrKind::kInts && attr.ints().empty()) ||
         (attr.kind() == ir::AttrKind::kFloats && attr.floats().empty()) ||
         (attr.kind() == ir::AttrKind::kStrings && attr.strings().empty());
  if (!ok)
    return make_error(who + ": attribute '" + key + "' must be " +
                      std::string(ir::attr_kind_name(want)) + ", got " +
                      std::string(ir::attr_kind_name(attr.kind())));
  return Status::ok();
}

Status live_node(const ir::Graph& g, ir::NodeId id) {
  if (!g.has_node(id)) return make_error("there is no node #" + std::to_string(id));
  return Status::ok();
}

Status live_value(const ir::Graph& g, ir::ValueId id) {
  if (!g.has_value(id)) return make_error("there is no value %" + std::to_string(id));
  return Status::ok();
}

Status check_new_value_name(const ir::Graph& g, const std::string& name,
                            ir::ValueId except = ir::kNoValue) {
  if (name.empty()) return make_error("a value needs a name");
  if (contains(value_names(g, except), name))
    return make_error("a value named '" + name + "' already exists");
  return Status::ok();
}

// Does `to` depend on `from` (is there a path of edges from `from` to `to`)?
bool reaches(const ir::Graph& g, ir::NodeId from, ir::NodeId to) {
  std::map<ir::NodeId, std::vector<ir::NodeId>> consumers;
  for (ir::NodeId id : g.node_ids())
    for (ir::ValueId v : g.node(id).inputs)
      if (g.has_value(v) && g.value(v).kind == ir::ValueKind::kNodeOutput)
        consumers[g.value(v).producer].push_back(id);
  std::vector<ir::NodeId> stack{from};
  std::set<ir::NodeId> seen{from};
  while (!stack.empty()) {
    const ir::NodeId id = stack.back();
    stack.pop_back();
    if (id == to) return true;
    for (ir::NodeId c : consumers[id])
      if (seen.insert(c).second) stack.push_back(c);
  }
  return false;
}

// Runs inference on the trial. Returns why `node` fails there when it did not fail before.
std::optional<std::string> new_failure(const EditContext& ctx, Trial& trial, const ir::Node& node) {
  const TypeAnalysis after = analyse_types(trial.graph(), ctx.registry, ctx.outer);
  if (!after.failed(node.id) || ctx.analysis.failed(node.id)) return std::nullopt;
  return without_node_prefix(after.problem(node.id)->error, node);
}

Edit made(EditKind kind, std::string text, StateChange change, std::vector<ir::NodeId> nodes = {}) {
  Edit e;
  e.kind = kind;
  e.text = std::move(text);
  e.change = std::move(change);
  e.nodes = std::move(nodes);
  return e;
}

Edit nothing(EditKind kind) {
  Edit e = made(kind, "", {});
  e.no_op = true;
  return e;
}

}  // namespace

std::string unique_name(const std::string& base, const std::vector<std::string>& taken) {
  if (!contains(taken, base)) return base;
  for (int k = 2;; ++k) {
    std::string name = base + "_" + std::to_string(k);
    if (!contains(taken, name)) return name;
  }
}

Expected<Edit> plan_add_node(const EditContext& ctx, const std::string& op, const std::string& name,
                             NodePosition position, const ir::Attributes& attrs) {
  const ir::Graph& g = ctx.state.graph();
  const ops::OpDef* def = ctx.registry.find(op);
  if (!def) return make_error("unknown op '" + op + "'");
  std::vector<std::string> names = node_names(g);
  std::string node_name = name;
  if (node_name.empty()) {
    for (int k = 1; node_name.empty() || contains(names, node_name); ++k)
      node_name = lower(op) + std::to_string(k);
  } else if (contains(names, node_name)) {
    return make_error("a node named '" + node_name + "' already exists");
  }
  const std::string who = op + " '" + node_name + "'";
  for (const auto& [key, attr] : attrs) RETURN_IF_ERROR(check_attribute(*def, who, key, attr));
  std::vector<std::string> taken = value_names(g);
  std::vector<std::string> outputs;
  for (int i = 0; i < def->min_outputs(); ++i) {
    const std::string& port =
        def->outputs[std::min(static_cast<size_t>(i), def->outputs.size() - 1)].name;
    outputs.push_back(unique_name(node_name + "." + lower(port), taken));
    taken.push_back(outputs.back());
  }
  Trial trial(ctx.state);
  const ir::NodeId id = trial.add_node(op, {}, outputs, node_name, attrs);
  trial.set_position(id, position);
  return made(EditKind::kAddNode, "Add " + who, trial.finish(), {id});
}

Expected<Edit> plan_add_input(const EditContext& ctx, const std::string& name,
                              const ir::TensorType& type, NodePosition position) {
  RETURN_IF_ERROR(check_new_value_name(ctx.state.graph(), name));
  Trial trial(ctx.state);
  const ir::ValueId v = trial.add_input(name, type);
  trial.set_value_position(v, position);
  Edit e = made(EditKind::kAddInput, "Add input '" + name + "'", trial.finish(), {});
  e.value = v;
  return e;
}

Expected<Edit> plan_add_param(const EditContext& ctx, const std::string& name, const Tensor& data,
                              NodePosition position) {
  RETURN_IF_ERROR(check_new_value_name(ctx.state.graph(), name));
  Trial trial(ctx.state);
  const ir::ValueId v = trial.add_param(name, data);
  trial.set_value_position(v, position);
  Edit e = made(EditKind::kAddParam, "Add param '" + name + "'", trial.finish(), {});
  e.value = v;
  return e;
}

Expected<Edit> plan_remove_value(const EditContext& ctx, ir::ValueId id) {
  const ir::Graph& g = ctx.state.graph();
  RETURN_IF_ERROR(live_value(g, id));
  const ir::ValueKind kind = g.value(id).kind;
  if (kind != ir::ValueKind::kInput && kind != ir::ValueKind::kParam)
    return make_error("value " + value_label(g, id) + " is a node output: remove its node instead");
  Trial trial(ctx.state);
  trial.remove_values({id});
  return made(EditKind::kRemoveValue, "Remove " + value_label(g, id), trial.finish(), {});
}

Expected<Edit> plan_set_outputs(const EditContext& ctx, const std::vector<ir::ValueId>& outputs) {
  const ir::Graph& g = ctx.state.graph();
  std::set<ir::ValueId> seen;
  for (ir::ValueId v : outputs) {
    RETURN_IF_ERROR(live_value(g, v));
    if (!seen.insert(v).second)
      return make_error("value " + value_label(g, v) + " is listed twice as a graph output");
  }
  Trial trial(ctx.state);
  trial.set_outputs(outputs);
  return made(EditKind::kSetOutputs, "Set graph outputs", trial.finish(), {});
}

Expected<Edit> plan_remove_nodes(const EditContext& ctx, const std::vector<ir::NodeId>& ids) {
  const ir::Graph& g = ctx.state.graph();
  if (ids.empty()) return make_error("no node to remove");
  const std::set<ir::NodeId> gone(ids.begin(), ids.end());
  std::set<ir::ValueId> params;  // params the removed nodes use
  for (ir::NodeId id : gone) {
    RETURN_IF_ERROR(live_node(g, id));
    for (ir::ValueId v : g.node(id).inputs)
      if (g.has_value(v) && g.value(v).kind == ir::ValueKind::kParam) params.insert(v);
  }
  Trial trial(ctx.state);
  for (ir::NodeId id : gone) trial.remove_node(id);
  // A param drawn inside the removed nodes' boxes goes with them, unless something else uses it.
  std::vector<ir::ValueId> unused;
  const std::vector<ir::ValueId>& outs = trial.graph().outputs();
  for (ir::ValueId p : params)
    if (trial.graph().uses(p).empty() && std::find(outs.begin(), outs.end(), p) == outs.end())
      unused.push_back(p);
  if (!unused.empty()) trial.remove_values(unused);
  const std::string text = gone.size() == 1 ? "Remove " + node_label(g.node(*gone.begin()))
                                            : "Remove " + std::to_string(gone.size()) + " nodes";
  return made(EditKind::kRemoveNodes, text, trial.finish(), {ids.begin(), ids.end()});
}

Expected<Edit> plan_connect(const EditContext& ctx, ir::ValueId value, ir::NodeId node, int index) {
  const ir::Graph& g = ctx.state.graph();
  RETURN_IF_ERROR(live_node(g, node));
  RETURN_IF_ERROR(live_value(g, value));
  const ir::Node& n = g.node(node);
  TRY(const ops::OpDef* def, def_of(ctx, n));
  const int declared = static_cast<int>(def->inputs.size());
  const int size = static_cast<int>(n.inputs.size());
  const bool variadic = declared > 0 && def->inputs.back().variadic;
  // Declared ports, the slots a variadic port already has, and one more to append to it.
  const int slots = variadic ? std::max(declared, size + 1) : declared;
  if (index < 0 || index >= slots)
    return node_error(n, ": has no input " + std::to_string(index) + " (" + n.op + " takes " +
                             (variadic ? "at least " : "") + std::to_string(declared) + ")");
  const std::string who = ir::describe_node(n) + " input " + std::to_string(index) + " ('" +
                          port_name(*def, index) + "')";
  if (index < size && n.inputs[static_cast<size_t>(index)] == value)
    return nothing(EditKind::kConnect);
  const ir::Value& val = g.value(value);
  if (val.kind == ir::ValueKind::kNodeOutput && reaches(g, node, val.producer))
    return make_error(who + ": connecting " + value_text(ctx, value) + " would close a cycle", {},
                      node);
  Trial trial(ctx.state);
  ir::Node& m = trial.node(node);
  if (index >= static_cast<int>(m.inputs.size()))
    m.inputs.resize(static_cast<size_t>(index) + 1, ir::kNoValue);
  m.inputs[static_cast<size_t>(index)] = value;
  if (std::optional<std::string> why = new_failure(ctx, trial, n))
    return make_error(who + ": cannot take " + value_text(ctx, value) + ": " + *why, {}, node);
  return made(EditKind::kConnect,
              "Connect " + value_label(g, value) + " to " + node_label(n) + " input " +
                  std::to_string(index),
              trial.finish(), {node});
}

Expected<Edit> plan_disconnect(const EditContext& ctx, ir::NodeId node, int index) {
  const ir::Graph& g = ctx.state.graph();
  RETURN_IF_ERROR(live_node(g, node));
  const ir::Node& n = g.node(node);
  if (index < 0 || index >= static_cast<int>(n.inputs.size()) ||
      n.inputs[static_cast<size_t>(index)] == ir::kNoValue) {
    const ops::OpDef* def = ctx.registry.find(n.op);
    const std::string port = def ? " ('" + port_name(*def, std::max(index, 0)) + "')" : "";
    return node_error(n, " input " + std::to_string(index) + port + ": nothing is connected there");
  }
  Trial trial(ctx.state);
  ir::Node& m = trial.node(node);
  m.inputs[static_cast<size_t>(index)] = ir::kNoValue;
  trim_inputs(m);
  return made(EditKind::kDisconnect,
              "Disconnect " + node_label(n) + " input " + std::to_string(index), trial.finish(),
              {node});
}

Expected<Edit> plan_set_attribute(const EditContext& ctx, ir::NodeId node, const std::string& key,
                                  const std::optional<ir::Attribute>& value) {
  const ir::Graph& g = ctx.state.graph();
  RETURN_IF_ERROR(live_node(g, node));
  const ir::Node& n = g.node(node);
  TRY(const ops::OpDef* def, def_of(ctx, n));
  const std::string who = ir::describe_node(n) + " attribute '" + key + "'";
  if (value) {
    Status st = check_attribute(*def, ir::describe_node(n), key, *value);
    if (!st) return make_error(st.error().message, {}, node);
  } else if (!def->find_attr(key) && key != "layout") {
    return node_error(n, ": op " + n.op + " has no attribute '" + key + "'");
  }
  if (!value && !n.attr(key)) return nothing(EditKind::kSetAttribute);
  Trial trial(ctx.state);
  ir::Node& m = trial.node(node);
  if (value)
    m.attrs.insert_or_assign(key, *value);
  else
    m.attrs.erase(key);
  if (std::optional<std::string> why = new_failure(ctx, trial, n))
    return make_error(who + ": " + *why, {}, node);
  const std::string label = (n.name.empty() ? n.op : n.name) + "." + key;
  return made(EditKind::kSetAttribute, (value ? "Set " : "Clear ") + label, trial.finish(), {node});
}

Expected<Edit> plan_rename_node(const EditContext& ctx, ir::NodeId node, const std::string& name) {
  const ir::Graph& g = ctx.state.graph();
  RETURN_IF_ERROR(live_node(g, node));
  const ir::Node& n = g.node(node);
  if (name.empty()) return node_error(n, ": a node needs a name");
  if (name == n.name) return nothing(EditKind::kRenameNode);
  if (contains(node_names(g, node), name))
    return node_error(n, ": a node named '" + name + "' already exists");
  Trial trial(ctx.state);
  trial.node(node).name = name;
  return made(EditKind::kRenameNode, "Rename " + node_label(n) + " to '" + name + "'",
              trial.finish(), {node});
}

Expected<Edit> plan_rename_value(const EditContext& ctx, ir::ValueId value,
                                 const std::string& name) {
  const ir::Graph& g = ctx.state.graph();
  RETURN_IF_ERROR(live_value(g, value));
  if (name == g.value(value).name) return nothing(EditKind::kRenameValue);
  Status st = check_new_value_name(g, name, value);
  if (!st) return make_error("cannot rename " + value_label(g, value) + ": " + st.error().message);
  Trial trial(ctx.state);
  trial.set_value_name(value, name);
  Edit e = made(EditKind::kRenameValue, "Rename " + value_label(g, value) + " to '" + name + "'",
                trial.finish(), {});
  e.value = value;
  return e;
}

}  // namespace tessera::studio
