// Static cost of a graph: parameter count and FLOPs, for `tessera info` and the studio.
//
//   TRY(GraphCost c, ops::graph_cost(graph, registry, /*bind symbols to*/ 1));
//   c.params, c.flops
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::ops {

struct GraphCost {
  int64_t params = 0;                    // weight_elements()
  double flops = 0;                      // for one execution with symbols bound as requested
  std::map<std::string, int> op_counts;  // live nodes per op (nested graphs not included)
  std::map<std::string, double> flops_by_op;
  std::map<ir::NodeId, double> flops_by_node;  // nodes of the top-level graph
  // passes::folded_graph_cost only: the node outputs whose types folding made static (Reshape
  // targets computed by Shape -> Gather -> Concat), by the graph's own value ids.
  std::map<ir::ValueId, ir::TensorType> folded_types;
};

// Elements of the weights: params, floating-point Constant nodes (paddle2onnx keeps weights so)
// and both of these inside nested graphs (a model whose whole body is an If's branch).
int64_t weight_elements(const ir::Graph& g, int depth = 0);

// Binds every symbolic or unknown input dimension to `symbol_size` (1: "per sample" when the
// symbol is the batch), re-infers types on a copy and sums each node's FLOPs. Nested graphs count
// in their node: an If its larger branch, a Loop or Scan its body once (the trip count is not
// known statically).
// FLOPs of one node of a typed graph (its op's flops function, else one per output element for
// math-like categories, else 0).
double node_flops(const ir::Graph& graph, ir::NodeId node, const OpDef& def);

Expected<GraphCost> graph_cost(const ir::Graph& graph, const OpRegistry& registry, int64_t symbol_size = 1);

}  // namespace tessera::ops
