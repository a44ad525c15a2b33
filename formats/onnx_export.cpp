// ONNX model export: type inference on a copy, model-wide value names, graphs and nested graphs
// (captures become references to enclosing names), inputs/outputs with types, params as
// initializers, the one error listing every node that cannot be written, and ONNX's checker.
// Per-node rules (schemas, attributes, rewrites) live in onnx_export_rules.cpp.
#include "formats/onnx_export.h"

#include <onnx/checker.h>

#include <exception>
#include <new>

#include "engine/ops/infer.h"
#include "formats/file_io.h"
#include "formats/onnx_export_internal.h"

namespace tessera::formats {
namespace onnx_export_internal {

std::string ModelNames::unique(const std::string& base, bool avoid_reserved) {
  std::string name = base;
  for (int k = 2; used_.count(name) || (avoid_reserved && reserved_.count(name)); ++k)
    name = base + "__" + std::to_string(k);
  used_.insert(name);
  return name;
}

std::string ModelNames::define(const std::string& name, ir::ValueId id) {
  if (name.empty()) return unique("v_" + std::to_string(id), true);
  if (!used_.count(name)) {
    used_.insert(name);
    return name;
  }
  return unique(name, true);
}

std::string ModelNames::fresh(const std::string& hint) { return unique(hint, true); }

}  // namespace onnx_export_internal

namespace {

using namespace onnx_export_internal;

// The ONNX names of one graph's values, and the enclosing graph's (captures resolve there).
struct Scope {
  const ir::Graph& graph;
  const Scope* parent;
  std::vector<std::string> names;  // by ValueId; "" until defined
};

struct ExportContext {
  const ops::OpRegistry& registry;
  int opset;
  ModelNames names;
  std::vector<std::string> refused;  // "SGDUpdate (node #5, not an ONNX op)"
  int first_refused_node = -1;       // a top-level node id, for Error::node
  bool typed = true;                 // type inference succeeded (else its error is reported)
};

void reserve_names(const ir::Graph& g, ModelNames& names) {
  for (int v = 0; v < g.value_capacity(); ++v)
    if (g.has_value(v) && !g.value(v).name.empty()) names.reserve(g.value(v).name);
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph) reserve_names(attr.g(), names);
}

// The ONNX name a capture refers to: the value of that name in the nearest enclosing graph (the
// interpreter resolves captures the same way).
std::optional<std::string> resolve_capture(const std::string& name, const Scope* outer) {
  for (const Scope* s = outer; s != nullptr; s = s->parent) {
    auto v = s->graph.find_value(name);
    if (v && !s->names[static_cast<size_t>(*v)].empty()) return s->names[static_cast<size_t>(*v)];
  }
  return std::nullopt;
}

void set_type(const ir::TensorType& t, onnx::ValueInfoProto* vi) { type_to_proto(t, vi->mutable_type()); }

std::string node_label(const ir::Node& n, const ir::Graph& g, bool nested) {
  std::string s = n.op + " (node " + (n.name.empty() ? "#" + std::to_string(n.id) : "'" + n.name + "'");
  if (nested) s += " in graph '" + g.name() + "'";
  return s;
}

// May the exporter leave output `i` of `schema` unnamed (ONNX: an optional output not wanted)?
bool output_may_be_omitted(const onnx::OpSchema& schema, size_t i) {
  const auto& formal = schema.outputs();
  if (i >= formal.size()) return !formal.empty() && formal.back().GetOption() != onnx::OpSchema::Variadic;
  return formal[i].GetOption() == onnx::OpSchema::Optional;
}

Status export_graph(const ir::Graph& g, const Scope* outer, onnx::GraphProto* gp, ExportContext& ctx);

void export_node(const ir::Node& n, Scope& scope, const std::vector<bool>& used, onnx::GraphProto* gp,
                 ExportContext& ctx) {
  const ir::Graph& g = scope.graph;
  const bool nested = scope.parent != nullptr;
  NodeOut out{n, ctx.registry.find(n.op), {}, {}, {}};
  for (ir::ValueId v : n.inputs) out.inputs.push_back(v == ir::kNoValue ? "" : scope.names[static_cast<size_t>(v)]);
  std::string why;
  const onnx::OpSchema* schema = out.def ? find_schema(n.op, ctx.opset, why) : nullptr;
  if (out.def == nullptr) why = "not in the op registry";
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const ir::ValueId v = n.outputs[i];
    const ir::Value& val = g.value(v);
    const bool omit = schema && val.name.empty() && !used[static_cast<size_t>(v)] && output_may_be_omitted(*schema, i);
    scope.names[static_cast<size_t>(v)] = ctx.names.define(val.name, v);
    out.outputs.push_back(omit ? "" : scope.names[static_cast<size_t>(v)]);
  }
  if (schema != nullptr) {
    NodeSink sink{gp, ctx.names};
    write_node(out, *schema, ctx.opset, sink, [&](const ir::Graph& sub, onnx::GraphProto* sub_gp) {
      Status st = export_graph(sub, &scope, sub_gp, ctx);
      if (!st.is_ok()) out.reasons.push_back("graph '" + sub.name() + "': " + st.error().message);
    });
  } else {
    out.reasons.push_back(why);
  }
  if (out.reasons.empty()) return;
  std::string reasons;
  for (const std::string& r : out.reasons) reasons += ", " + r;
  ctx.refused.push_back(node_label(n, g, nested) + reasons + ")");
  if (!nested && ctx.first_refused_node < 0) ctx.first_refused_node = n.id;
}

// Writes `g` into `gp`. Refused nodes go to ctx.refused; the returned error is for graphs that
// cannot be walked at all (a cycle, a capture nothing defines).
Status export_graph(const ir::Graph& g, const Scope* outer, onnx::GraphProto* gp, ExportContext& ctx) {
  Scope scope{g, outer, std::vector<std::string>(static_cast<size_t>(g.value_capacity()))};
  gp->set_name(g.name());
  auto name_of = [&](ir::ValueId v) -> std::string& { return scope.names[static_cast<size_t>(v)]; };
  for (ir::ValueId c : g.captures()) {
    auto target = resolve_capture(g.value(c).name, outer);
    if (!target) return make_error("captures '" + g.value(c).name + "', which no enclosing graph defines");
    name_of(c) = *target;
  }
  // ONNX needs at least the rank of the model's tensor inputs and outputs (a sequence's elements and
  // nested graphs may omit shapes).
  auto check_rank = [&](ir::ValueId v, const char* what) {
    if (outer == nullptr && ctx.typed && g.value(v).type.is_tensor() && !g.value(v).type.rank_known)
      ctx.refused.push_back(std::string(what) + " '" + name_of(v) + "' (rank unknown after type inference; " +
                            "ONNX needs the rank of every model input and output)");
  };
  for (ir::ValueId v : g.inputs()) {
    name_of(v) = ctx.names.define(g.value(v).name, v);
    check_rank(v, "input");
    onnx::ValueInfoProto* vi = gp->add_input();
    vi->set_name(name_of(v));
    set_type(g.value(v).type, vi);
  }
  for (ir::ValueId p : g.params()) {
    if (!g.has_value(p)) continue;
    name_of(p) = ctx.names.define(g.value(p).name, p);
    const Tensor* data = g.param_data(p);
    if (data == nullptr) return make_error("param '" + g.value(p).name + "' has no data");
    tensor_to_proto(*data, name_of(p), gp->add_initializer());
  }
  TRY(std::vector<ir::NodeId> order, g.topological_order());
  std::vector<bool> used(static_cast<size_t>(g.value_capacity()), false);
  for (ir::NodeId id : order)
    for (ir::ValueId v : g.node(id).inputs)
      if (v != ir::kNoValue) used[static_cast<size_t>(v)] = true;
  for (ir::ValueId v : g.outputs()) used[static_cast<size_t>(v)] = true;
  for (ir::NodeId id : order) export_node(g.node(id), scope, used, gp, ctx);

  // Outputs. A capture (an enclosing graph's name) or a value listed twice goes through an
  // Identity so that every output of this graph is a name of its own.
  std::set<ir::ValueId> seen;
  for (ir::ValueId v : g.outputs()) {
    check_rank(v, "output");
    std::string name = name_of(v);
    if (name.empty()) return make_error("output %" + std::to_string(v) + " is not defined in graph '" + g.name() + "'");
    if (g.value(v).kind == ir::ValueKind::kCapture || !seen.insert(v).second) {
      const std::string copy = ctx.names.fresh(g.value(v).name.empty() ? "output" : g.value(v).name);
      onnx::NodeProto* id = gp->add_node();
      id->set_op_type("Identity");
      id->add_input(name);
      id->add_output(copy);
      name = copy;
    }
    onnx::ValueInfoProto* vi = gp->add_output();
    vi->set_name(name);
    set_type(g.value(v).type, vi);
  }
  return Status::ok();
}

Expected<std::string> export_model(const ir::Graph& graph, const ops::OpRegistry& registry,
                                   const OnnxExportOptions& options) {
  if (options.opset < kMinExportOpset || options.opset > kMaxExportOpset)
    return make_error("ONNX export writes opsets " + std::to_string(kMinExportOpset) + " to " +
                      std::to_string(kMaxExportOpset) + ", not " + std::to_string(options.opset));
  // Types for the inputs and outputs: inferred on a copy (params share storage, so it is cheap).
  ir::Graph typed = graph;
  const Status inferred = ops::infer_types(typed, registry);

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name(options.producer_name);
  if (!options.producer_version.empty()) model.set_producer_version(options.producer_version);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);

  ExportContext ctx{registry, options.opset, {}, {}, -1, inferred.is_ok()};
  reserve_names(typed, ctx.names);
  Status walked = export_graph(typed, nullptr, model.mutable_graph(), ctx);
  if (!ctx.refused.empty()) {
    std::string list;
    for (const std::string& s : ctx.refused) list += (list.empty() ? "" : ", ") + s;
    return make_error("not exportable to ONNX opset " + std::to_string(options.opset) + ": " + list, "",
                      ctx.first_refused_node);
  }
  if (!walked.is_ok()) return walked.error();
  if (!inferred.is_ok()) {
    Error e = inferred.error();
    e.message = "type inference before export failed: " + e.message;
    return e;
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return make_error(std::string("ONNX's checker rejected the exported model (a Tessera bug; please report it): ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return make_error("the model does not serialize (protobuf limits a model to 2 GiB; external data is not supported)");
  return bytes;
}

}  // namespace

Expected<std::string> export_onnx_bytes(const ir::Graph& graph, const ops::OpRegistry& registry,
                                        const OnnxExportOptions& options) {
  try {
    return export_model(graph, registry, options);
  } catch (const std::bad_alloc&) {
    return make_error("out of memory while exporting the model");
  } catch (const std::exception& e) {
    return make_error(std::string("ONNX export failed: ") + e.what());
  }
}

Status export_onnx_file(const ir::Graph& graph, const std::string& path, const ops::OpRegistry& registry,
                        const OnnxExportOptions& options) {
  auto bytes = export_onnx_bytes(graph, registry, options);
  if (!bytes) {
    Error e = bytes.error();
    e.where = path;
    return e;
  }
  return write_file_atomic(path, *bytes);
}

}  // namespace tessera::formats
