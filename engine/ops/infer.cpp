// Schema checks and whole-graph type inference.
#include "engine/ops/infer.h"

#include <cstdio>

#include "engine/ir/limits.h"
#include "engine/ir/verifier.h"
#include "engine/ops/helpers.h"

namespace tessera::ops {

namespace {

Error at_node(const ir::Node& n, const std::string& msg) {
  return make_error(ir::describe_node(n) + ": " + msg, {}, n.id);
}

// Adds the node's identity to an error coming from an op's function, unless already there.
Error attach_node(const ir::Node& n, Error e) {
  if (e.node < 0) {
    e.node = n.id;
    e.message = ir::describe_node(n) + ": " + e.message;
  }
  return e;
}

// Sets the type of output `i` of `n` after checking it against the limits (engine/ir/limits.h).
Status set_output_type(ir::Graph& graph, const ir::Node& n, size_t i, const ir::TensorType& t) {
  if (std::string why = ir::limits_violation(t); !why.empty())
    return at_node(n, "output " + std::to_string(i) + " ('" + graph.value(n.outputs[i]).name + "'): " + why);
  graph.value(n.outputs[i]).type = t;
  return Status::ok();
}

// The node's work (OpDef::flops over its static types) within ir::kMaxNodeFlops.
Status check_work(const ir::Node& n, const OpDef& def, const InferContext& ctx, const std::vector<ir::TensorType>& out) {
  if (!def.flops) return Status::ok();
  for (const ir::TensorType& t : out)
    if (t.is_tensor() && !t.is_static()) return Status::ok();
  const double flops = def.flops(ctx, out);
  if (flops > ir::kMaxNodeFlops) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3g", flops);
    return at_node(n, std::string("needs ") + text + " FLOPs a run, over the limit of 2^50 (" +
                          "days of CPU): its sizes, pads or window are out of proportion");
  }
  return Status::ok();
}

// Inputs that are sequences or optionals, for an op that takes tensors only.
Status check_input_kinds(const ir::Node& n, const OpDef& def, const InferContext& ctx) {
  if (def.takes_sequences) return Status::ok();
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i] && !ctx.inputs[i]->is_tensor()) {
      const std::string port = def.inputs.empty() ? std::to_string(i)
                                                  : "'" + def.inputs[std::min(i, def.inputs.size() - 1)].name + "'";
      return at_node(n, "input " + port + " is " + ctx.inputs[i]->to_string() + "; " + n.op + " takes tensors only");
    }
  return Status::ok();
}

}  // namespace

Status check_node(const ir::Node& n, const OpRegistry& registry) {
  const OpDef* def = registry.find(n.op);
  if (!def) return at_node(n, "unknown op '" + n.op + "'");
  const int nin = static_cast<int>(n.inputs.size());
  const int nout = static_cast<int>(n.outputs.size());
  auto range = [](int lo, int hi) {
    if (hi == INT32_MAX) return "at least " + std::to_string(lo);
    if (lo == hi) return std::to_string(lo);
    return std::to_string(lo) + " to " + std::to_string(hi);
  };
  if (nin < def->min_inputs() || nin > def->max_inputs())
    return at_node(n, "takes " + range(def->min_inputs(), def->max_inputs()) + " inputs, got " + std::to_string(nin));
  if (nout < def->min_outputs() || nout > def->max_outputs())
    return at_node(n, "has " + range(def->min_outputs(), def->max_outputs()) + " outputs, got " + std::to_string(nout));
  for (int i = 0; i < nin; ++i) {
    const PortSpec& port = def->inputs[std::min<size_t>(static_cast<size_t>(i), def->inputs.size() - 1)];
    if (n.inputs[i] == ir::kNoValue && !port.optional)
      return at_node(n, "required input " + std::to_string(i) + " ('" + port.name + "') is missing");
  }
  for (const auto& [key, attr] : n.attrs) {
    const AttrSpec* spec = def->find_attr(key);
    // "layout" is the physical layout the optimiser chose for the node's outputs (backend/kernel.h):
    // allowed on every op, a string.
    if (!spec && key == "layout") {
      if (attr.kind() != AttrKind::kString) return at_node(n, "attribute 'layout' must be a string");
      continue;
    }
    if (!spec) return at_node(n, "unknown attribute '" + key + "' for op " + n.op);
    bool ok = attr.kind() == spec->kind;
    // An empty list is written without element type: accept it for any list kind.
    if (!ok && (spec->kind == AttrKind::kInts || spec->kind == AttrKind::kFloats || spec->kind == AttrKind::kStrings)) {
      ok = (attr.kind() == AttrKind::kInts && attr.ints().empty()) ||
           (attr.kind() == AttrKind::kFloats && attr.floats().empty()) ||
           (attr.kind() == AttrKind::kStrings && attr.strings().empty());
    }
    if (!ok)
      return at_node(n, "attribute '" + key + "' must be " + std::string(ir::attr_kind_name(spec->kind)) +
                            ", got " + std::string(ir::attr_kind_name(attr.kind())));
  }
  for (const AttrSpec& spec : def->attrs)
    if (spec.required && !n.attr(spec.name)) return at_node(n, "required attribute '" + spec.name + "' is missing");
  if (def->verify) {
    Status st = def->verify(n, *def);
    if (!st.is_ok()) return attach_node(n, st.error());
  }
  return Status::ok();
}

Status check_graph(const ir::Graph& graph, const OpRegistry& registry) {
  RETURN_IF_ERROR(ir::verify(graph));
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& n = graph.node(id);
    RETURN_IF_ERROR(check_node(n, registry));
    for (const auto& [key, attr] : n.attrs) {
      if (attr.kind() != AttrKind::kGraph) continue;
      Status st = check_graph(attr.g(), registry);
      if (!st.is_ok()) {
        Error e = st.error();
        e.message = ir::describe_node(n) + ": in graph attribute '" + key + "': " + e.message;
        e.node = n.id;
        return e;
      }
    }
  }
  return Status::ok();
}

const Tensor* constant_value(const ir::Graph& graph, ir::ValueId v) {
  if (!graph.has_value(v)) return nullptr;
  const ir::Value& val = graph.value(v);
  if (val.kind == ir::ValueKind::kParam) return graph.param_data(v);
  if (val.kind == ir::ValueKind::kNodeOutput && graph.has_node(val.producer)) {
    const ir::Node& p = graph.node(val.producer);
    if (p.op == "Constant") {
      const ir::Attribute* a = p.attr("value");
      if (a && a->kind() == AttrKind::kTensor) return &a->t();
    }
  }
  return nullptr;
}

Status infer_node(ir::Graph& graph, ir::NodeId id, const OpRegistry& registry) {
  ir::Node& n = graph.node(id);
  RETURN_IF_ERROR(check_node(n, registry));
  const OpDef* def = registry.find(n.op);
  if (!def->infer) return at_node(n, "op " + n.op + " has no type inference");
  InferContext ctx{n, *def, {}, {}};
  for (ir::ValueId v : n.inputs) {
    ctx.inputs.push_back(v == ir::kNoValue ? nullptr : &graph.value(v).type);
    ctx.constants.push_back(v == ir::kNoValue ? nullptr : constant_value(graph, v));
  }
  RETURN_IF_ERROR(check_input_kinds(n, *def, ctx));
  auto types = def->infer(ctx);
  if (!types) return attach_node(n, types.error());
  if (types->size() < n.outputs.size())
    return at_node(n, "type inference produced " + std::to_string(types->size()) + " types for " +
                          std::to_string(n.outputs.size()) + " outputs");
  for (size_t i = 0; i < n.outputs.size(); ++i) RETURN_IF_ERROR(set_output_type(graph, n, i, (*types)[i]));
  return check_work(n, *def, ctx, *types);
}

namespace {

Status infer_graph(ir::Graph& graph, const OpRegistry& registry, const Scope& outer) {
  for (ir::ValueId c : graph.captures()) {
    auto it = outer.find(graph.value(c).name);
    if (it == outer.end())
      return make_error("capture '" + graph.value(c).name + "' names no value of an enclosing graph");
    graph.value(c).type = it->second;
  }
  for (const auto* values : {&graph.inputs(), &graph.params()})
    for (ir::ValueId v : *values)
      if (std::string why = ir::limits_violation(graph.value(v).type); !why.empty())
        return make_error("'" + graph.value(v).name + "': " + why);
  TRY(std::vector<ir::NodeId> order, graph.topological_order());
  // Nested graphs see the named values defined before their node, here and in enclosing graphs.
  Scope scope = outer;
  auto publish = [&](ir::ValueId v) {
    if (!graph.value(v).name.empty()) scope[graph.value(v).name] = graph.value(v).type;
  };
  for (ir::ValueId v : graph.captures()) publish(v);
  for (ir::ValueId v : graph.inputs()) publish(v);
  for (ir::ValueId v : graph.params()) publish(v);
  for (ir::NodeId id : order) {
    ir::Node& n = graph.node(id);
    const OpDef* def = registry.find(n.op);
    for (auto& [key, attr] : n.attrs) {
      if (attr.kind() != AttrKind::kGraph) continue;
      Status st = infer_graph(attr.g(), registry, scope);
      if (!st.is_ok()) {
        Error e = st.error();
        e.message = ir::describe_node(n) + ": in graph attribute '" + key + "': " + e.message;
        e.node = n.id;
        return e;
      }
    }
    InferContext ctx{n, *def, {}, {}};
    for (ir::ValueId v : n.inputs) {
      ctx.inputs.push_back(v == ir::kNoValue ? nullptr : &graph.value(v).type);
      ctx.constants.push_back(v == ir::kNoValue ? nullptr : constant_value(graph, v));
    }
    if (!def->infer) return at_node(n, "op " + n.op + " has no type inference");
    RETURN_IF_ERROR(check_input_kinds(n, *def, ctx));
    auto types = def->infer(ctx);
    if (!types) return attach_node(n, types.error());
    if (types->size() < n.outputs.size())
      return at_node(n, "type inference produced " + std::to_string(types->size()) + " types for " +
                            std::to_string(n.outputs.size()) + " outputs");
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      RETURN_IF_ERROR(set_output_type(graph, n, i, (*types)[i]));
      publish(n.outputs[i]);
    }
    RETURN_IF_ERROR(check_work(n, *def, ctx, *types));
  }
  return Status::ok();
}

}  // namespace

Status infer_types(ir::Graph& graph, const OpRegistry& registry, const Scope& outer) {
  RETURN_IF_ERROR(check_graph(graph, registry));
  return infer_graph(graph, registry, outer);
}

}  // namespace tessera::ops
