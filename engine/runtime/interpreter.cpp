// The reference executor: walks a graph in topological order calling reference kernels.
#include "engine/runtime/interpreter.h"

#include <optional>
#include <unordered_map>

#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"

namespace tessera::runtime {
namespace {

// Names of enclosing values that nested graphs of `n` read (captures, at any depth).
void collect_captures(const ir::Graph& g, std::vector<std::string>& names) {
  for (ir::ValueId c : g.captures()) names.push_back(g.value(c).name);
  // What graphs nested deeper capture, less what `g` itself defines (a Loop body inside an If
  // branch reading a value of that branch: Faster R-CNN's exported post-processing).
  std::vector<std::string> inner;
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph) collect_captures(attr.g(), inner);
  for (std::string& name : inner)
    if (!g.find_value(name)) names.push_back(std::move(name));
}

// Named values visible to nested graphs: this graph's computed values, then enclosing scopes.
struct Scope {
  std::unordered_map<std::string, Tensor> by_name;
  const Scope* parent = nullptr;
  const Tensor* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->by_name.find(name);
      if (it != s->by_name.end()) return &it->second;
    }
    return nullptr;
  }
};

class Interpreter {
 public:
  explicit Interpreter(const ops::OpRegistry& registry) : registry_(registry) {}

  // Runs `g` with its inputs bound positionally; captures resolve through `outer`.
  Expected<std::vector<Tensor>> run(const ir::Graph& g, const std::vector<Tensor>& inputs, const Scope* outer) {
    std::vector<std::optional<Tensor>> values(static_cast<size_t>(g.value_capacity()));
    if (inputs.size() != g.inputs().size())
      return make_error("graph '" + g.name() + "' takes " + std::to_string(g.inputs().size()) +
                        " inputs, got " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) values[g.inputs()[i]] = inputs[i];
    for (ir::ValueId p : g.params()) values[p] = *g.param_data(p);
    for (ir::ValueId c : g.captures()) {
      const Tensor* t = outer ? outer->find(g.value(c).name) : nullptr;
      if (!t) return make_error("graph '" + g.name() + "' captures '" + g.value(c).name + "', which is not defined");
      values[c] = *t;
    }
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    // Remaining uses, so a value is released once its last consumer has run. A node whose nested
    // graphs capture a value by name counts as a consumer of it.
    std::vector<int> uses(values.size(), 0);
    std::vector<std::vector<ir::ValueId>> consumed(static_cast<size_t>(g.node_capacity()));
    for (ir::NodeId id : order) {
      const ir::Node& n = g.node(id);
      for (ir::ValueId v : n.inputs)
        if (v != ir::kNoValue) consumed[id].push_back(v);
      std::vector<std::string> names;
      for (const auto& [key, attr] : n.attrs)
        if (attr.kind() == ir::AttrKind::kGraph) collect_captures(attr.g(), names);
      for (const std::string& name : names)
        if (auto v = g.find_value(name)) consumed[id].push_back(*v);
      for (ir::ValueId v : consumed[id]) ++uses[v];
    }
    for (ir::ValueId v : g.outputs()) ++uses[v];

    for (ir::NodeId id : order) {
      const ir::Node& n = g.node(id);
      const ops::OpDef* def = registry_.find(n.op);
      if (!def) return make_error(ir::describe_node(n) + ": unknown op '" + n.op + "'", {}, n.id);
      if (!def->reference) return make_error(ir::describe_node(n) + ": op has no reference kernel", {}, n.id);
      ops::KernelContext ctx{n, *def, {}, {}, {}};
      for (ir::ValueId v : n.inputs) {
        if (v != ir::kNoValue && !values[v])
          return make_error(ir::describe_node(n) + ": input %" + std::to_string(v) + " has no value", {}, n.id);
        ctx.inputs.push_back(v == ir::kNoValue ? nullptr : &*values[v]);
      }
      Scope scope;
      bool nested = false;
      for (const auto& [key, attr] : n.attrs) nested |= attr.kind() == ir::AttrKind::kGraph;
      if (nested) {
        scope.parent = outer;
        for (size_t v = 0; v < values.size(); ++v)
          if (values[v] && !g.value(static_cast<ir::ValueId>(v)).name.empty())
            scope.by_name.emplace(g.value(static_cast<ir::ValueId>(v)).name, *values[v]);
        ctx.run_subgraph = [this, &scope](const ir::Graph& sub, const std::vector<Tensor>& in) {
          return run(sub, in, &scope);
        };
      }
      Status st;
      try {
        st = def->reference(ctx);
      } catch (const std::bad_alloc&) {
        st = make_error("out of memory");
      }
      if (!st.is_ok()) {
        Error e = st.error();
        if (e.node < 0) {
          e.node = n.id;
          e.message = ir::describe_node(n) + ": " + e.message;
        }
        return e;
      }
      if (ctx.outputs.size() < n.outputs.size())
        return make_error(ir::describe_node(n) + ": kernel produced " + std::to_string(ctx.outputs.size()) +
                              " outputs, the node has " + std::to_string(n.outputs.size()), {}, n.id);
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        const ir::Value& out = g.value(n.outputs[i]);
        const Tensor& t = ctx.outputs[i];
        // Inferred types are a contract: a kernel disagreeing with inference is a bug worth naming.
        if ((out.type.rank_known || !out.type.is_tensor()) && !out.type.accepts(t))
          return make_error(ir::describe_node(n) + ": output " + std::to_string(i) + " is " +
                                runtime::describe_value(t) +
                                " but its type was inferred as " + out.type.to_string(), {}, n.id);
        values[n.outputs[i]] = std::move(ctx.outputs[i]);
      }
      for (ir::ValueId v : consumed[id])
        if (--uses[v] == 0) values[v].reset();
    }
    std::vector<Tensor> outs;
    for (ir::ValueId v : g.outputs()) {
      if (!values[v]) return make_error("graph output %" + std::to_string(v) + " was not computed");
      outs.push_back(*values[v]);
    }
    return outs;
  }

 private:
  const ops::OpRegistry& registry_;
};

}  // namespace

// Binds feeds to inputs by name, checking dtype, rank, known sizes and symbol consistency.
Expected<std::vector<Tensor>> bind_feeds(const ir::Graph& g, const Feeds& feeds) {
  std::vector<Tensor> bound;
  std::unordered_map<std::string, std::pair<int64_t, std::string>> symbols;  // symbol -> size, input
  std::string names;
  for (ir::ValueId v : g.inputs()) names += (names.empty() ? "" : ", ") + g.value(v).name;
  for (const auto& [name, t] : feeds) {
    bool found = false;
    for (ir::ValueId v : g.inputs()) found |= g.value(v).name == name;
    if (!found) return make_error("the graph has no input named '" + name + "' (inputs: " + names + ")");
  }
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    auto it = feeds.find(in.name);
    if (it == feeds.end()) return make_error("input '" + in.name + "' (" + in.type.to_string() + ") was not given");
    const Tensor& t = it->second;
    if (!in.type.accepts(t))
      return make_error("input '" + in.name + "' expects " + in.type.to_string() + " but was given " +
                        describe_value(t));
    if (in.type.rank_known && in.type.is_tensor()) {
      for (size_t d = 0; d < in.type.dims.size(); ++d) {
        const ir::Dim& dim = in.type.dims[d];
        if (!dim.is_symbolic()) continue;
        auto [pos, inserted] = symbols.emplace(dim.symbol, std::make_pair(t.shape()[d], in.name));
        if (!inserted && pos->second.first != t.shape()[d])
          return make_error("input '" + in.name + "' has " + dim.symbol + " = " + std::to_string(t.shape()[d]) +
                            " (dimension " + std::to_string(d) + ") but input '" + pos->second.second +
                            "' has " + dim.symbol + " = " + std::to_string(pos->second.first));
      }
    }
    bound.push_back(t);
  }
  return bound;
}

std::string describe_value(const Tensor& t) {
  if (t.is_tensor()) return std::string(dtype_name(t.dtype())) + shape_to_string(t.shape());
  std::string s = t.kind() == TypeKind::kSequence ? "seq(" : "opt(";
  for (size_t i = 0; i < t.items().size(); ++i) s += (i ? ", " : "") + describe_value(t.items()[i]);
  return s + ")";
}

Expected<std::vector<Tensor>> run_reference(const ir::Graph& graph, const ops::OpRegistry& registry,
                                            const Feeds& feeds) {
  ir::Graph g = graph;  // tensors share storage: cheap
  RETURN_IF_ERROR(ops::infer_types(g, registry));
  TRY(std::vector<Tensor> inputs, bind_feeds(g, feeds));
  Interpreter interp(registry);
  return interp.run(g, inputs, nullptr);
}

Expected<std::vector<Tensor>> run_nested_reference(const ir::Graph& graph, const ops::OpRegistry& registry,
                                                   const std::vector<Tensor>& inputs, const NamedTensors& scope) {
  Scope outer;
  for (const auto& [name, t] : scope) outer.by_name.emplace(name, t);
  Interpreter interp(registry);
  return interp.run(graph, inputs, &outer);
}

void nested_captures(const ir::Node& node, std::vector<std::string>& names) {
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind() == ir::AttrKind::kGraph) collect_captures(attr.g(), names);
}

Expected<std::vector<Tensor>> run_single_op_with_absent(const ops::OpRegistry& registry, const std::string& op,
                                                        const std::vector<const Tensor*>& inputs,
                                                        ir::Attributes attrs, int num_outputs) {
  ir::Graph g(op);
  std::vector<ir::ValueId> ins;
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    ins.push_back(g.add_input(name, ir::TensorType::of_value(*inputs[i])));
    feeds.emplace(name, *inputs[i]);
  }
  ir::NodeId n = g.add_node(op, ins, num_outputs, "", std::move(attrs));
  g.set_outputs(g.node(n).outputs);
  return run_reference(g, registry, feeds);
}

Expected<std::vector<Tensor>> run_single_op(const ops::OpRegistry& registry, const std::string& op,
                                            const std::vector<Tensor>& inputs, ir::Attributes attrs,
                                            int num_outputs) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  return run_single_op_with_absent(registry, op, ptrs, std::move(attrs), num_outputs);
}

Expected<std::vector<ir::TensorType>> infer_single_op(const ops::OpRegistry& registry, const std::string& op,
                                                      const std::vector<const ir::TensorType*>& inputs,
                                                      ir::Attributes attrs, int num_outputs,
                                                      const std::vector<const Tensor*>& constants) {
  ir::Graph g(op);
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    const Tensor* c = i < constants.size() ? constants[i] : nullptr;
    if (c) ins.push_back(g.add_param(name, *c));
    else if (!inputs[i]) ins.push_back(ir::kNoValue);
    else ins.push_back(g.add_input(name, *inputs[i]));
  }
  ir::NodeId n = g.add_node(op, ins, num_outputs, "", std::move(attrs));
  g.set_outputs(g.node(n).outputs);
  RETURN_IF_ERROR(ops::infer_types(g, registry));
  std::vector<ir::TensorType> out;
  for (ir::ValueId v : g.node(n).outputs) out.push_back(g.value(v).type);
  return out;
}

}  // namespace tessera::runtime
