// FLOPs of a graph whose shapes are computed by the graph (passes.h: folded_graph_cost).
#include <iterator>
#include <map>
#include <string>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"

namespace tessera::passes {

Expected<ops::GraphCost> folded_graph_cost(const ir::Graph& graph, const ops::OpRegistry& registry,
                                           const std::map<std::string, int64_t>& sizes, int64_t default_size) {
  // Nothing to bind, nothing typed unknown and nothing to fold (no node whose inputs are all
  // constants): the graph's own cost, without the two copies (a third of `tessera info` on a
  // 100,000-node chain).
  bool plain = true;
  for (ir::ValueId v : graph.inputs()) plain &= graph.value(v).type.is_static();
  for (ir::NodeId id : graph.node_ids()) {
    if (!plain) break;
    const ir::Node& n = graph.node(id);
    bool all_constant = true;
    for (ir::ValueId v : n.inputs)
      all_constant &= v == ir::kNoValue || graph.value(v).kind == ir::ValueKind::kParam;
    plain = !all_constant && !n.attr("then_branch") && !n.attr("body");
    for (ir::ValueId v : n.outputs) plain &= graph.value(v).type.is_static();
  }
  if (plain) return ops::graph_cost(graph, registry, default_size);
  ir::Graph g = graph;
  for (ir::ValueId v : g.inputs())
    for (ir::Dim& d : g.value(v).type.dims)
      if (!d.is_known()) {
        auto it = d.is_symbolic() ? sizes.find(d.symbol) : sizes.end();
        d = ir::Dim::known(it != sizes.end() ? it->second : default_size);
      }
  RETURN_IF_ERROR(ops::infer_types(g, registry));
  PassContext ctx{registry, {}, {}};
  // Folding is best effort: a graph it cannot fold is counted as bound and typed.
  ir::Graph folded = g;
  if (make_constant_fold_pass()->run(folded, ctx).has_value()) g = std::move(folded);
  TRY(ops::GraphCost cost, ops::graph_cost(g, registry, default_size));
  // Parameters and op counts of the graph as written (folding turned shape nodes into params).
  cost.params = ops::weight_elements(graph);
  cost.op_counts.clear();
  for (ir::NodeId id : graph.node_ids()) {
    ++cost.op_counts[graph.node(id).op];
    cost.flops_by_node.emplace(id, 0.0);  // folded away: computed once, not per run
  }
  for (auto it = cost.flops_by_node.begin(); it != cost.flops_by_node.end();)  // only the graph's own ids
    it = graph.has_node(it->first) ? std::next(it) : cost.flops_by_node.erase(it);
  // A value folding computed became a param named after it (constant_fold.cpp; "_1" when the
  // old value still held the name): its type is the param's.
  std::map<std::string, const ir::TensorType*> folded_params;
  for (ir::ValueId p : g.params()) folded_params.emplace(g.value(p).name, &g.value(p).type);
  for (ir::NodeId id : graph.node_ids())
    for (ir::ValueId v : graph.node(id).outputs) {
      if (graph.value(v).type.is_static()) continue;
      if (g.has_value(v) && g.value(v).type.is_static()) {
        cost.folded_types.emplace(v, g.value(v).type);
        continue;
      }
      const std::string& name = graph.value(v).name;
      if (name.empty()) continue;
      for (const std::string& candidate : {name, name + "_1"})
        if (auto it = folded_params.find(candidate); it != folded_params.end() && it->second->is_static()) {
          cost.folded_types.emplace(v, *it->second);
          break;
        }
    }
  return cost;
}

}  // namespace tessera::passes
