// Schema checking and type inference over a whole graph, using the op registry.
//
//   TRY(bool ok, ...);  Status s = ops::infer_types(graph, registry);
//
// check_graph: ir::verify (structure) plus, for every node, the op exists, the arity fits the
// schema, attributes have the declared kinds, required attributes are present, and op-specific
// checks (nested-graph signatures of If and Loop). Recurses into nested graphs.
// infer_types: check_graph, then visits nodes in topological order and sets each output value's
// TensorType from the op's inference function. Errors name the node.
#pragma once

#include <map>
#include <string>

#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::ops {

// Types visible from an enclosing graph (name -> type), for captures of nested graphs.
using Scope = std::map<std::string, TensorType>;

Status check_node(const ir::Node& node, const OpRegistry& registry);
Status check_graph(const ir::Graph& graph, const OpRegistry& registry);
Status infer_types(ir::Graph& graph, const OpRegistry& registry, const Scope& outer = {});

// Infers the output types of one node from its inputs' current types (a node without graph
// attributes; autodiff uses it to type each gradient node as it emits it). Errors name the node.
Status infer_node(ir::Graph& graph, ir::NodeId id, const OpRegistry& registry);

// Compile-time value of v when known: a param, or the output of a Constant node.
const Tensor* constant_value(const ir::Graph& graph, ir::ValueId v);

}  // namespace tessera::ops
