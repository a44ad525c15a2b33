// Dead code elimination.
//
// Algorithm (mark and sweep, nested graphs first):
//   1. Run DCE inside every graph attribute (If branches, Loop bodies), whose outputs are their
//      roots; a nested graph can only shrink what it captures.
//   2. Mark: the graph outputs are live; a live value's producer is live; a live node's operands
//      and the enclosing values its nested graphs capture by name are live.
//   3. Sweep: remove unmarked nodes (no op has side effects today; impure ops such as Dropout in
//      training mode still produce nothing observable once unused), then params nothing uses.
#include <vector>

#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

void collect_nested_captures(const ir::Graph& g, std::vector<std::string>& names) {
  for (ir::ValueId c : g.captures()) names.push_back(g.value(c).name);
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph) collect_nested_captures(attr.g(), names);
}

bool dce_graph(ir::Graph& g, int& removed) {
  bool changed = false;
  for (ir::NodeId id : g.node_ids())
    for (auto& [key, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph) changed |= dce_graph(attr.g(), removed);

  std::vector<char> live(static_cast<size_t>(g.node_capacity()), 0);
  std::vector<ir::ValueId> work(g.outputs().begin(), g.outputs().end());
  while (!work.empty()) {
    const ir::ValueId v = work.back();
    work.pop_back();
    if (!g.has_value(v) || g.value(v).kind != ir::ValueKind::kNodeOutput) continue;
    const ir::NodeId p = g.value(v).producer;
    if (!g.has_node(p) || live[p]) continue;
    live[p] = 1;
    const ir::Node& n = g.node(p);
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue) work.push_back(in);
    std::vector<std::string> names;
    for (const auto& [key, attr] : n.attrs)
      if (attr.kind() == ir::AttrKind::kGraph) collect_nested_captures(attr.g(), names);
    for (const std::string& name : names)
      if (auto found = g.find_value(name)) work.push_back(*found);
  }
  for (ir::NodeId id : g.node_ids())
    if (!live[id]) {
      g.remove_node(id);
      ++removed;
      changed = true;
    }
  changed |= remove_unused_params(g);
  return changed;
}

class DcePass : public Pass {
 public:
  std::string name() const override { return "dce"; }
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    int removed = 0;
    const bool changed = dce_graph(graph, removed);
    if (removed > 0) ctx.diagnostics.push_back("dce: removed " + std::to_string(removed) + " nodes");
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce_pass() { return std::make_unique<DcePass>(); }

}  // namespace tessera::passes
