// The reference executor: runs a graph node by node with the ops' reference CPU kernels. It is the
// semantics every fast backend is checked against, not a fast path.
//
// Usage:
//   ops::OpRegistry reg = ops::make_default_registry();
//   RETURN_IF_ERROR(ops::infer_types(graph, reg));
//   runtime::Feeds feeds{{"x", x_tensor}};
//   TRY(std::vector<Tensor> outs, runtime::run_reference(graph, reg, feeds));
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::runtime {

using Feeds = std::map<std::string, Tensor>;  // graph input name -> tensor

// Runs `graph` (types inferred or not) and returns its outputs in order. Each input must be fed
// with a tensor whose dtype and shape fit the input's declared type (symbolic dims must bind
// consistently); errors name the input. Kernel failures name the node.
Expected<std::vector<Tensor>> run_reference(const ir::Graph& graph, const ops::OpRegistry& registry,
                                            const Feeds& feeds);

// A value's type as the IR writes it: "f32[2, 3]", "seq(f32[2], f32[3])", "opt()".
std::string describe_value(const Tensor& t);

// Checks feeds against the graph's inputs (names, dtypes, ranks, known sizes, consistent
// symbols) and returns them in input order. Errors name the input.
Expected<std::vector<Tensor>> bind_feeds(const ir::Graph& graph, const Feeds& feeds);

using NamedTensors = std::map<std::string, Tensor>;
// Runs a nested graph (an If branch, a Loop body) on positional inputs with the reference kernels;
// its captures resolve in `scope` (enclosing values by name). The compiled executor uses this for
// nodes with graph attributes.
Expected<std::vector<Tensor>> run_nested_reference(const ir::Graph& graph, const ops::OpRegistry& registry,
                                                   const std::vector<Tensor>& inputs, const NamedTensors& scope);
// Names of enclosing values that the nested graphs of `node` capture (at any depth); appended.
void nested_captures(const ir::Node& node, std::vector<std::string>& names);

// Test and tooling helper: builds a one-node graph of `op` over `inputs` (nullopt-free; use
// run_single_op_with_absent for optional gaps), infers its types, runs the reference kernel and
// checks that each output fits its inferred type. Returns the outputs.
Expected<std::vector<Tensor>> run_single_op(const ops::OpRegistry& registry, const std::string& op,
                                            const std::vector<Tensor>& inputs,
                                            ir::Attributes attrs = {}, int num_outputs = 1);
// As above; a null entry in `inputs` is an absent optional input.
Expected<std::vector<Tensor>> run_single_op_with_absent(const ops::OpRegistry& registry,
                                                        const std::string& op,
                                                        const std::vector<const Tensor*>& inputs,
                                                        ir::Attributes attrs = {},
                                                        int num_outputs = 1);
// Inference only: the output types of `op` for the given input types (null: absent input).
// `constants[i]`, when given and non-null, is the compile-time value of input i.
Expected<std::vector<ir::TensorType>> infer_single_op(
    const ops::OpRegistry& registry, const std::string& op,
    const std::vector<const ir::TensorType*>& inputs, ir::Attributes attrs = {},
    int num_outputs = 1, const std::vector<const Tensor*>& constants = {});

}  // namespace tessera::runtime
