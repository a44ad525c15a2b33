// Type inference for a graph being edited: like ops::infer_types, but it does not stop at the
// first problem. Every node whose inputs are typed is inferred, so a failure in one branch leaves
// the other branches typed, and a node still being built (a required input not connected, a
// required attribute not set) is "incomplete" rather than failed: it and what follows it are simply
// not typed yet. The document runs it after every edit; the edit commands run it on a trial copy
// to refuse an edit that makes its target node fail.
//
// Usage:
//   TypeAnalysis a = analyse_types(graph, registry);   // writes the inferred types into graph
//   if (const NodeProblem* p = a.problem(3)) show(p->error.to_string(), p->incomplete);
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"

namespace tessera::studio {

struct NodeProblem {
  Error error;              // names the node ("MatMul 'fc' (#3): ..."), Error::node is its id
  bool incomplete = false;  // true: a required input or attribute is missing (not a failure)
};

struct TypeAnalysis {
  // The first problem in topological order (or a structural one: a cycle, a dangling value),
  // absent when every node was typed.
  std::optional<Error> first_error;
  std::map<ir::NodeId, NodeProblem> problems;  // by node; nodes merely waiting for inputs have none
  std::vector<bool> typed;                     // by ValueId: the value's type is known

  const NodeProblem* problem(ir::NodeId id) const {
    auto it = problems.find(id);
    return it == problems.end() ? nullptr : &it->second;
  }
  bool failed(ir::NodeId id) const {
    const NodeProblem* p = problem(id);
    return p && !p->incomplete;
  }
};

// Infers what it can. Node outputs it does not reach get the type f32[*] (what Graph::add_node
// gives), so the graph's text depends on its structure only. Graph inputs, params and captures
// keep their declared types and are typed. Never fails: problems are in the result.
// `outer`: the named values of the enclosing graphs with their types, for a nested graph shown on
// its own (an If branch's window): its captures take their types from there, and its own nested
// graphs see them, as they do inside the whole model.
TypeAnalysis analyse_types(ir::Graph& graph, const ops::OpRegistry& registry, const ops::Scope& outer = {});

// The message of an inference error without the prefixes that name the node ("Op 'name' (#id): ",
// then "Op 'name': "), for a reason that names the node itself.
std::string without_node_prefix(const Error& error, const ir::Node& node);

}  // namespace tessera::studio
