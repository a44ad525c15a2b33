// Graph-editing helpers shared by the passes (internal to engine/passes).
//
// The one rule about names: a graph output's value name is part of the graph's interface, and a
// nested graph (If branch, Loop body) refers to an enclosing value by name. A rewrite that makes
// another value stand in for such a value gives the stand-in the old name (replace_value,
// take_over); when the stand-in cannot be renamed (a graph input, a param, a value that is itself
// an output or captured) the rewrite is not done and the original node stays.
#pragma once

#include <set>
#include <string>

#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::passes {

// Names that nested graphs of `g`'s nodes capture (at any depth).
std::set<std::string> captured_names(const ir::Graph& g);
bool is_graph_output(const ir::Graph& g, ir::ValueId v);
// True when the name of `v` is captured by a nested graph.
bool is_captured(const ir::Graph& g, ir::ValueId v, const std::set<std::string>& captured);
// Node operand uses, plus one per appearance in the output list, plus one when captured.
int use_count(const ir::Graph& g, ir::ValueId v, const std::set<std::string>& captured);
// The single consumer of `v` when its only use is one operand of one node, else kNoNode.
ir::NodeId sole_user(const ir::Graph& g, ir::ValueId v, const std::set<std::string>& captured);

// The producer of v when it is a live node with op `op`, else nullptr.
const ir::Node* producer(const ir::Graph& g, ir::ValueId v, const std::string& op);

// Makes `to` (an existing value) stand in for `from` in every use. When `from` is a graph output
// or captured, `to` takes over its name; that needs `to` to be a node output which is neither a
// graph output nor captured itself. Returns false (and changes nothing) when not allowed. The
// caller then removes `from`'s producer.
bool replace_value(ir::Graph& g, ir::ValueId from, ir::ValueId to, const std::set<std::string>& captured);
// Makes `fresh` (a value the pass just created) stand in for `from`, taking its name. Always legal.
void take_over(ir::Graph& g, ir::ValueId from, ir::ValueId fresh);

// Removes params that no node, graph output or nested-graph capture uses, keeping every other id
// as it is (ids are never reused: trailing tombstones are kept). Returns whether any was removed.
bool remove_unused_params(ir::Graph& g);
// `base` if no live value has that name, else base_1, base_2, ...
std::string unique_value_name(const ir::Graph& g, const std::string& base);

// Every element of `t` equals `x` (t non-empty).
bool all_elements_equal(const Tensor& t, double x);
// Ops whose result is not a function of their inputs (randomness), which no pass folds or merges.
bool is_impure(const ir::Node& n);
bool has_graph_attribute(const ir::Node& n);
// A DequantizeLinear whose every user takes it as the weight (input 1) of a Conv, Gemm or MatMul
// whose data input is itself dequantized: a QDQ pattern qdq-fuse turns into an integer op, so
// constant-fold leaves it (qdq_fuse.cpp).
bool feeds_qdq_pattern(const ir::Graph& g, const ir::Node& dq);

}  // namespace tessera::passes
