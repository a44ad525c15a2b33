// Parameter and FLOP counting over a graph.
#include "engine/ops/cost.h"

#include <algorithm>
#include <optional>

#include "engine/ops/infer.h"

namespace tessera::ops {
namespace {

// Categories whose ops do arithmetic per output element when they have no flops function.
bool is_math_category(const std::string& c) {
  return c == "math" || c == "activation" || c == "normalization" || c == "reduce" || c == "nn";
}

// FLOPs of the graphs a node holds: the larger branch of an If, a Loop's or Scan's body once.
double nested_flops(const ir::Node& n, const OpRegistry& registry, int depth) {
  if (depth > 64) return 0;
  double total = 0, largest = 0;
  for (const auto& [key, attr] : n.attrs) {
    if (attr.kind() != ir::AttrKind::kGraph) continue;
    const ir::Graph& sub = attr.g();
    double f = 0;
    for (ir::NodeId id : sub.node_ids()) {
      const OpDef* def = registry.find(sub.node(id).op);
      if (def) f += node_flops(sub, id, *def) + nested_flops(sub.node(id), registry, depth + 1);
    }
    total += f;
    largest = std::max(largest, f);
  }
  return n.op == "If" ? largest : total;
}

}  // namespace

double node_flops(const ir::Graph& g, ir::NodeId id, const OpDef& def) {
  const ir::Node& n = g.node(id);
  InferContext ctx{n, def, {}, {}};
  for (ir::ValueId v : n.inputs) {
    ctx.inputs.push_back(v == ir::kNoValue ? nullptr : &g.value(v).type);
    ctx.constants.push_back(v == ir::kNoValue ? nullptr : constant_value(g, v));
  }
  std::vector<TensorType> outs;
  for (ir::ValueId v : n.outputs) outs.push_back(g.value(v).type);
  double f = 0;
  if (def.flops) {
    f = def.flops(ctx, outs);
  } else if (is_math_category(def.category)) {
    for (const TensorType& t : outs) f += std::max<int64_t>(t.static_numel(), 0);
  }
  return f;
}

int64_t weight_elements(const ir::Graph& g, int depth) {
  int64_t n = 0;
  for (ir::ValueId p : g.params())
    if (const Tensor* t = g.param_data(p)) n += t->numel();
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& node = g.node(id);
    for (const auto& [key, attr] : node.attrs) {
      if (node.op == "Constant" && key == "value" && attr.kind() == ir::AttrKind::kTensor && attr.t().is_tensor() &&
          is_float(attr.t().dtype()))
        n += attr.t().numel();
      if (attr.kind() == ir::AttrKind::kGraph && depth < 64) n += weight_elements(attr.g(), depth + 1);
    }
  }
  return n;
}

Expected<GraphCost> graph_cost(const ir::Graph& graph, const OpRegistry& registry, int64_t symbol_size) {
  // A graph typed with static shapes throughout is costed as it is; any other is copied, its
  // symbols bound to symbol_size, and typed.
  bool typed = true;
  for (ir::ValueId v : graph.inputs()) typed &= graph.value(v).type.is_static();
  for (ir::NodeId id : graph.node_ids()) {
    if (!typed) break;
    for (ir::ValueId v : graph.node(id).outputs) typed &= graph.value(v).type.is_static();
  }
  std::optional<ir::Graph> copy;
  if (!typed) {
    copy = graph;
    for (ir::ValueId v : copy->inputs()) {
      ir::TensorType& t = copy->value(v).type;
      for (ir::Dim& d : t.dims)
        if (!d.is_known()) d = ir::Dim::known(symbol_size);
    }
    RETURN_IF_ERROR(infer_types(*copy, registry));
  }
  const ir::Graph& g = copy ? *copy : graph;
  GraphCost cost;
  cost.params = weight_elements(g);
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    ++cost.op_counts[n.op];
    double f = node_flops(g, id, *registry.find(n.op)) + nested_flops(n, registry, 0);
    cost.flops += f;
    cost.flops_by_op[n.op] += f;
    cost.flops_by_node[id] = f;
  }
  return cost;
}

}  // namespace tessera::ops
