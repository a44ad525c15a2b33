// Structural verifier of the IR, independent of the op set: single assignment, dangling values,
// graph outputs, param data, unique input names, cycles; recurses into nested graphs.
// Op-level checks (known op, arity, attribute kinds, nested-graph signatures) live in
// ops::check_graph (engine/ops/infer.h), which calls this first.
#pragma once

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace tessera::ir {

// Returns the first problem found; the Error names the node (Error::node) where there is one.
Status verify(const Graph& graph);

// "Conv 'conv1' (#3)": how diagnostics refer to a node.
std::string describe_node(const Node& node);

}  // namespace tessera::ir
