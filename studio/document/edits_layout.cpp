// Planning the studio's layout edits (moves, positions, groups) and paste. Layout edits touch no
// graph item, so they build their patches directly instead of copying the state into a Trial.
#include <algorithm>
#include <set>

#include "studio/document/edits.h"

namespace tessera::studio {

namespace {

Status live_nodes(const ir::Graph& g, const std::vector<ir::NodeId>& ids) {
  if (ids.empty()) return make_error("no node is selected");
  for (ir::NodeId id : ids)
    if (!g.has_node(id)) return make_error("there is no node #" + std::to_string(id));
  return Status::ok();
}

const NodeGroup* find_group(const DocumentState& state, const std::string& name) {
  for (const NodeGroup& g : state.layout().groups)
    if (g.name == name) return &g;
  return nullptr;
}

Edit make_edit(EditKind kind, std::string text, std::vector<ir::NodeId> nodes = {}) {
  Edit e;
  e.kind = kind;
  e.text = std::move(text);
  e.nodes = std::move(nodes);
  return e;
}

Edit nothing(EditKind kind) {
  Edit e = make_edit(kind, "");
  e.no_op = true;
  return e;
}

Edit groups_edit(const DocumentState& state, EditKind kind, std::string text,
                 std::vector<NodeGroup> groups) {
  Edit e = make_edit(kind, std::move(text));
  e.change.before.groups = state.layout().groups;
  e.change.after.groups = std::move(groups);
  return e;
}

std::string count_text(const char* verb, size_t n) {
  return std::string(verb) + " " + std::to_string(n) + (n == 1 ? " node" : " nodes");
}

}  // namespace

Expected<Edit> plan_move_nodes(const EditContext& ctx, const std::vector<ir::NodeId>& ids,
                               double dx, double dy) {
  RETURN_IF_ERROR(live_nodes(ctx.state.graph(), ids));
  const std::set<ir::NodeId> selection(ids.begin(), ids.end());
  const auto& positions = ctx.state.layout().positions;
  for (ir::NodeId id : selection)
    if (!positions.count(id))
      return make_error(
          "node #" + std::to_string(id) + " has no position yet: set_positions places it first", {},
          id);
  if (dx == 0 && dy == 0) return nothing(EditKind::kMoveNodes);
  Edit e = make_edit(EditKind::kMoveNodes, count_text("Move", selection.size()),
                     {selection.begin(), selection.end()});
  for (ir::NodeId id : selection) {
    const NodePosition from = positions.at(id);
    e.change.before.positions[id] = from;
    e.change.after.positions[id] = NodePosition{from.x + dx, from.y + dy};
  }
  return e;
}

Expected<Edit> plan_set_positions(const EditContext& ctx,
                                  const std::map<ir::NodeId, NodePosition>& positions) {
  std::vector<ir::NodeId> ids;
  for (const auto& [id, pos] : positions) ids.push_back(id);
  RETURN_IF_ERROR(live_nodes(ctx.state.graph(), ids));
  Edit e = make_edit(EditKind::kSetPositions, count_text("Place", ids.size()), ids);
  for (const auto& [id, pos] : positions) {
    auto it = ctx.state.layout().positions.find(id);
    e.change.before.positions[id] = it == ctx.state.layout().positions.end()
                                        ? std::nullopt
                                        : std::optional<NodePosition>(it->second);
    e.change.after.positions[id] = pos;
  }
  return e;
}

Expected<Edit> plan_clear_positions(const EditContext& ctx) {
  std::vector<ir::NodeId> ids;
  for (const auto& [id, pos] : ctx.state.layout().positions) ids.push_back(id);
  if (ids.empty() && ctx.state.value_positions.empty()) return make_error("nothing is placed by hand");
  Edit e = make_edit(EditKind::kSetPositions, "Arrange", ids);
  for (const auto& [id, pos] : ctx.state.layout().positions) {
    e.change.before.positions[id] = pos;
    e.change.after.positions[id] = std::nullopt;
  }
  for (const auto& [id, pos] : ctx.state.value_positions) {
    e.change.before.value_positions[id] = pos;
    e.change.after.value_positions[id] = std::nullopt;
  }
  return e;
}

Expected<Edit> plan_set_value_position(const EditContext& ctx, ir::ValueId id,
                                       NodePosition position) {
  const ir::Graph& g = ctx.state.graph();
  if (!g.has_value(id)) return make_error("there is no value %" + std::to_string(id));
  if (g.value(id).kind == ir::ValueKind::kNodeOutput)
    return make_error("value %" + std::to_string(id) +
                      " is a node output: it is drawn with its node");
  Edit e = make_edit(EditKind::kSetPositions, "Move '" + g.value(id).name + "'");
  auto it = ctx.state.value_positions.find(id);
  e.change.before.value_positions[id] = it == ctx.state.value_positions.end()
                                            ? std::nullopt
                                            : std::optional<NodePosition>(it->second);
  e.change.after.value_positions[id] = position;
  e.value = id;
  return e;
}

Expected<Edit> plan_group(const EditContext& ctx, const std::vector<ir::NodeId>& ids,
                          const std::string& name) {
  RETURN_IF_ERROR(live_nodes(ctx.state.graph(), ids));
  if (name.empty()) return make_error("a group needs a name");
  if (find_group(ctx.state, name)) return make_error("a group named '" + name + "' already exists");
  const std::set<ir::NodeId> members(ids.begin(), ids.end());
  for (const NodeGroup& g : ctx.state.layout().groups)
    for (ir::NodeId id : g.nodes)
      if (members.count(id))
        return make_error("node #" + std::to_string(id) + " is already in group '" + g.name + "'",
                          {}, id);
  std::vector<NodeGroup> groups = ctx.state.layout().groups;
  groups.push_back(NodeGroup{name, {members.begin(), members.end()}, false});
  return groups_edit(ctx.state, EditKind::kGroup, "Group '" + name + "'", std::move(groups));
}

Expected<Edit> plan_ungroup(const EditContext& ctx, const std::string& name) {
  if (!find_group(ctx.state, name)) return make_error("there is no group named '" + name + "'");
  std::vector<NodeGroup> groups = ctx.state.layout().groups;
  groups.erase(std::remove_if(groups.begin(), groups.end(),
                              [&](const NodeGroup& g) { return g.name == name; }),
               groups.end());
  return groups_edit(ctx.state, EditKind::kUngroup, "Ungroup '" + name + "'", std::move(groups));
}

Expected<Edit> plan_set_group_collapsed(const EditContext& ctx, const std::string& name,
                                        bool collapsed) {
  const NodeGroup* group = find_group(ctx.state, name);
  if (!group) return make_error("there is no group named '" + name + "'");
  if (group->collapsed == collapsed) return nothing(EditKind::kSetGroupCollapsed);
  std::vector<NodeGroup> groups = ctx.state.layout().groups;
  for (NodeGroup& g : groups)
    if (g.name == name) g.collapsed = collapsed;
  return groups_edit(ctx.state, EditKind::kSetGroupCollapsed,
                     (collapsed ? "Collapse '" : "Expand '") + name + "'", std::move(groups));
}

Expected<Edit> plan_paste(const EditContext& ctx, const ClipboardPayload& payload, double dx,
                          double dy) {
  const ir::Graph& from = payload.graph;
  if (from.num_nodes() == 0) return make_error("the clipboard holds no node");
  for (ir::NodeId id : from.node_ids())
    if (!ctx.registry.find(from.node(id).op))
      return make_error("the clipboard holds node '" + from.node(id).name + "' of unknown op '" +
                        from.node(id).op + "'");
  TRY(std::vector<ir::NodeId> order, from.topological_order());
  Trial trial(ctx.state);
  std::vector<std::string> node_names, value_names;
  const ir::Graph& g = ctx.state.graph();
  for (ir::NodeId id : g.node_ids()) node_names.push_back(g.node(id).name);
  for (ir::ValueId v = 0; v < g.value_capacity(); ++v)
    if (g.has_value(v)) value_names.push_back(g.value(v).name);
  auto fresh_value_name = [&](const std::string& base) {
    value_names.push_back(unique_name(base.empty() ? "v" : base, value_names));
    return value_names.back();
  };
  std::map<ir::ValueId, ir::ValueId> mapped;  // payload value -> document value
  for (ir::ValueId p : from.params())
    mapped[p] = trial.add_param(fresh_value_name(from.value(p).name), *from.param_data(p));
  Edit e = make_edit(EditKind::kPaste, "");
  for (ir::NodeId id : order) {
    const ir::Node& n = from.node(id);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : n.inputs) {
      auto it = mapped.find(v);
      inputs.push_back(it == mapped.end() ? ir::kNoValue : it->second);  // payload inputs: absent
    }
    std::vector<std::string> outputs;
    for (ir::ValueId v : n.outputs) outputs.push_back(fresh_value_name(from.value(v).name));
    node_names.push_back(unique_name(n.name.empty() ? n.op : n.name, node_names));
    const ir::NodeId copy = trial.add_node(n.op, inputs, outputs, node_names.back(), n.attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      mapped[n.outputs[i]] = trial.graph().node(copy).outputs[i];
    auto pos = payload.positions.find(id);
    NodePosition at = pos == payload.positions.end() ? NodePosition{} : pos->second;
    trial.set_position(copy, NodePosition{at.x + dx, at.y + dy});
    e.nodes.push_back(copy);
  }
  e.text = count_text("Paste", e.nodes.size());
  e.change = trial.finish();
  return e;
}

}  // namespace tessera::studio
