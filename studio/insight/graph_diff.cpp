// graph_diff: node matching, change detection and provenance links (see graph_diff.h).
#include "studio/insight/graph_diff.h"

#include <map>

#include <algorithm>
#include <set>

#include "engine/ir/text.h"

namespace tessera::studio {
namespace {

// Where input value `v` of a node comes from, in terms both graphs share: the before-graph id of
// its producer (via `producer_key`) and the output index, or the graph input / param name.
template <class ProducerKey>
std::string source_key(const ir::Graph& g, ir::ValueId v, ProducerKey producer_key) {
  if (v == ir::kNoValue) return "_";
  if (!g.has_value(v)) return "?" + std::to_string(v);
  const ir::Value& val = g.value(v);
  if (val.kind == ir::ValueKind::kNodeOutput)
    return "n" + producer_key(val.producer) + ":" + std::to_string(val.producer_output);
  return "v:" + val.name;  // graph input, param or capture alike (snapshots keep params as inputs)
}

std::map<ir::NodeId, ir::NodeId> match_nodes(const ir::Graph& before, const ir::Graph& after, DiffMatch match) {
  std::map<ir::NodeId, ir::NodeId> matched;
  if (match == DiffMatch::kById) {
    for (ir::NodeId id : after.node_ids())
      if (before.has_node(id)) matched[id] = id;
    return matched;
  }
  std::map<std::string, std::vector<ir::NodeId>> by_name;  // before nodes, id order
  for (ir::NodeId id : before.node_ids())
    if (!before.node(id).name.empty()) by_name[before.node(id).name].push_back(id);
  std::map<std::string, size_t> next;
  for (ir::NodeId id : after.node_ids()) {
    const std::string& name = after.node(id).name;
    if (name.empty()) continue;
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    size_t& k = next[name];
    if (k < it->second.size()) matched[id] = it->second[k++];
  }
  return matched;
}

}  // namespace

GraphDiff::Status GraphDiff::after_status(ir::NodeId id) const {
  if (std::binary_search(added.begin(), added.end(), id)) return Status::kAdded;
  if (std::binary_search(changed.begin(), changed.end(), id)) return Status::kChanged;
  return Status::kSame;
}

GraphDiff::Status GraphDiff::before_status(ir::NodeId id) const {
  if (std::binary_search(removed.begin(), removed.end(), id)) return Status::kRemoved;
  for (ir::NodeId a : changed)
    if (auto it = matched.find(a); it != matched.end() && it->second == id) return Status::kChanged;
  return Status::kSame;
}

std::string GraphDiff::summary() const {
  return "+" + std::to_string(added.size()) + " -" + std::to_string(removed.size()) + " ~" +
         std::to_string(changed.size());
}

GraphDiff diff_graphs(const ir::Graph& before, const ir::Graph& after, const ProvenanceList& provenance,
                      DiffMatch match) {
  GraphDiff d;
  d.matched = match_nodes(before, after, match);
  std::set<ir::NodeId> matched_before;
  for (const auto& [a, b] : d.matched) matched_before.insert(b);
  for (ir::NodeId id : before.node_ids())
    if (!matched_before.count(id)) d.removed.push_back(id);

  auto before_key = [](ir::NodeId p) { return std::to_string(p); };
  auto after_key = [&](ir::NodeId p) {
    auto it = d.matched.find(p);
    return it == d.matched.end() ? "new" + std::to_string(p) : std::to_string(it->second);
  };
  for (ir::NodeId id : after.node_ids()) {
    auto it = d.matched.find(id);
    if (it == d.matched.end()) {
      d.added.push_back(id);
      continue;
    }
    const ir::Node& na = after.node(id);
    const ir::Node& nb = before.node(it->second);
    bool same = na.op == nb.op && na.inputs.size() == nb.inputs.size() && ir::same_attributes(na.attrs, nb.attrs);
    for (size_t i = 0; same && i < na.inputs.size(); ++i)
      same = source_key(after, na.inputs[i], after_key) == source_key(before, nb.inputs[i], before_key);
    if (!same) d.changed.push_back(id);
  }
  for (const auto& [node, from] : provenance) {
    if (!after.has_node(node) || d.after_status(node) == GraphDiff::Status::kSame) continue;
    std::vector<ir::NodeId> live;
    for (int32_t f : from)
      if (before.has_node(f) && std::find(live.begin(), live.end(), f) == live.end()) live.push_back(f);
    if (!live.empty()) d.links.emplace_back(node, std::move(live));
  }
  return d;
}

ProvenanceList trace_provenance(const ProvenanceList& after, const ProvenanceList& earlier,
                                const ir::Graph& before) {
  std::map<int32_t, const std::vector<int32_t>*> made;  // by an earlier pass: its sources
  for (const auto& [node, from] : earlier) made.emplace(node, &from);
  for (const auto& [node, from] : after) made.emplace(node, &from);
  ProvenanceList out;
  for (const auto& [node, from] : after) {
    std::set<int32_t> found, seen;
    std::vector<int32_t> todo(from.begin(), from.end());
    while (!todo.empty()) {
      const int32_t id = todo.back();
      todo.pop_back();
      if (!seen.insert(id).second) continue;
      auto it = made.find(id);
      if (before.has_node(id) || it == made.end() || it->first == node) {
        found.insert(id);
        continue;
      }
      todo.insert(todo.end(), it->second->begin(), it->second->end());
    }
    out.emplace_back(node, std::vector<int32_t>(found.begin(), found.end()));
  }
  return out;
}

}  // namespace tessera::studio
