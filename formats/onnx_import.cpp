// ONNX model import: model checks (IR version, opsets), graphs and nested graphs, value types,
// initializers, attribute conversion by kind, node emission with provenance, the unsupported-op
// report and the final type inference. Per-op rewrites live in onnx_import_rules.cpp, tensor
// decoding in onnx_import_tensor.cpp.
#include "formats/onnx_import.h"

#include <onnx/defs/schema.h>

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <functional>
#include <new>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "engine/core/file_kind.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "formats/file_io.h"
#include "formats/onnx_import_internal.h"

namespace tessera::formats {
namespace onnx_internal {

// ---- GraphBuilder ----

Expected<ir::ValueId> GraphBuilder::resolve(const std::string& name) {
  auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  if (parent_ == nullptr) return make_error("'" + name + "' is not defined");
  TRY(ir::ValueId outer, parent_->resolve(name));
  auto type = parent_->known_type(outer);
  ir::ValueId v = graph_.add_capture(name, type ? *type : ir::TensorType::unranked(DType::kF32));
  if (!type) untyped_captures_.insert(v);
  names_[name] = v;
  return v;
}

ir::ValueId GraphBuilder::add_constant(const std::string& hint, Tensor t) {
  return graph_.add_param(fresh_name(hint), std::move(t));
}

std::string GraphBuilder::fresh_name(const std::string& hint) {
  for (;;) {
    std::string name = hint + "__tessera" + std::to_string(fresh_counter_++);
    if (!names_.count(name) && !graph_.find_value(name)) return name;
  }
}

std::vector<ir::ValueId> GraphBuilder::add_helper_node(const std::string& op, std::vector<ir::ValueId> inputs,
                                                       int num_outputs, ir::Attributes attrs,
                                                       const std::string& origin) {
  ir::NodeId id = graph_.add_node(op, std::move(inputs), num_outputs, "", std::move(attrs));
  graph_.node(id).provenance.origin = origin;
  return graph_.node(id).outputs;
}

std::optional<ir::TensorType> GraphBuilder::known_type(ir::ValueId v) const {
  if (!graph_.has_value(v)) return std::nullopt;
  const ir::Value& val = graph_.value(v);
  switch (val.kind) {
    case ir::ValueKind::kInput:
    case ir::ValueKind::kParam: return val.type;
    case ir::ValueKind::kCapture:
      if (untyped_captures_.count(v)) return std::nullopt;
      return val.type;
    case ir::ValueKind::kNodeOutput: break;
  }
  if (graph_.has_node(val.producer)) {
    const ir::Node& p = graph_.node(val.producer);
    const ir::Attribute* a = p.attr("value");
    if (p.op == "Constant" && a && a->kind() == ir::AttrKind::kTensor)
      return ir::TensorType::of(a->t().dtype(), a->t().shape());
  }
  auto it = value_info_.find(val.name);
  if (it != value_info_.end()) return it->second;
  return std::nullopt;
}

std::optional<ir::TensorType> GraphBuilder::derived_type(ir::ValueId v) const {
  if (auto t = known_type(v)) return t;
  if (parent_ != nullptr) return std::nullopt;  // nested: the enclosing types are not known yet
  ir::Graph partial = graph_;
  partial.set_outputs({v});
  if (!ops::infer_types(partial, registry_).is_ok()) return std::nullopt;
  return partial.value(v).type;
}

ir::NodeId GraphBuilder::emit(const NodeImport& ni, const std::string& op, std::vector<ir::ValueId> inputs,
                              ir::Attributes attrs) {
  while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
  size_t nout = ni.outputs.size();
  while (nout > 1 && ni.outputs[nout - 1].empty()) --nout;
  ir::NodeId id = graph_.add_node(op, std::move(inputs), static_cast<int>(nout), ni.proto.name(), std::move(attrs));
  graph_.node(id).provenance.origin = ni.origin;
  for (size_t i = 0; i < nout; ++i) {
    const ir::ValueId v = graph_.node(id).outputs[i];
    if (ni.outputs[i].empty()) continue;
    graph_.set_value_name(v, ni.outputs[i]);
    names_[ni.outputs[i]] = v;
  }
  return id;
}

}  // namespace onnx_internal

namespace {

using namespace onnx_internal;

// State shared by the model's graph and every nested graph.
struct ImportContext {
  const ops::OpRegistry& registry;
  std::string base_dir;
  int64_t opset = 0;
  std::vector<std::string> unsupported;  // "Foo (node 'n3')"
  // The model message is the importer's own (import_model): each initializer's raw bytes become
  // its tensor's storage (no copy), so a model's weights are never held twice.
  bool release_initializers = false;
};

Expected<ir::Graph> import_graph(const onnx::GraphProto& gp, GraphBuilder* parent, ImportContext& ctx,
                                 const std::vector<std::optional<ir::TensorType>>& input_hints);

std::string quoted_or_index(const onnx::NodeProto& np, int index) {
  return np.name().empty() ? "#" + std::to_string(index) : "'" + np.name() + "'";
}

// TensorType of an ONNX type: a tensor, a sequence of tensors, an optional tensor or sequence;
// nullopt (and no error) when the type or its element type is left out.
Expected<std::optional<ir::TensorType>> onnx_type(const onnx::TypeProto& tp, const std::string& what, int depth = 0) {
  using TP = onnx::TypeProto;
  switch (tp.value_case()) {
    case TP::VALUE_NOT_SET: return std::optional<ir::TensorType>{};
    case TP::kSequenceType:
    case TP::kOptionalType: {
      const bool seq = tp.value_case() == TP::kSequenceType;
      const TP& elem = seq ? tp.sequence_type().elem_type() : tp.optional_type().elem_type();
      if (depth > 1 || (seq && elem.value_case() != TP::kTensorType) ||
          (!seq && elem.value_case() != TP::kTensorType && elem.value_case() != TP::kSequenceType))
        return make_error(what + " is a " + (seq ? "sequence" : "optional") +
                          " of something other than tensors; Tessera has sequences of tensors, optional tensors and optional sequences");
      TRY(std::optional<ir::TensorType> inner, onnx_type(elem, what, depth + 1));
      if (!inner) inner = ir::TensorType::unranked(DType::kF32);
      if (seq) return std::optional<ir::TensorType>(inner->as(TypeKind::kSequence));
      return std::optional<ir::TensorType>(
          inner->as(inner->is_tensor() ? TypeKind::kOptional : TypeKind::kOptionalSequence));
    }
    case TP::kTensorType: break;
    default:
      return make_error(what + " is " + (tp.value_case() == TP::kMapType ? "a map" : tp.value_case() == TP::kSparseTensorType ? "a sparse tensor" : "not a tensor") +
                        "; Tessera supports tensors, sequences and optionals");
  }
  const auto& tt = tp.tensor_type();
  if (!tt.has_elem_type() || tt.elem_type() == 0) return std::optional<ir::TensorType>{};
  auto dt = dtype_from_onnx(tt.elem_type());
  if (!dt) return make_error(what + " has element type " + onnx_dtype_name(tt.elem_type()) + ", which Tessera does not support");
  if (!tt.has_shape()) return std::optional<ir::TensorType>(ir::TensorType::unranked(*dt));
  std::vector<ir::Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) return make_error(what + " has negative dimension " + std::to_string(d.dim_value()));
      dims.push_back(ir::Dim::known(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.push_back(ir::Dim::named(d.dim_param()));
    } else {
      dims.push_back(ir::Dim::unknown());
    }
  }
  return std::optional<ir::TensorType>(ir::TensorType(*dt, std::move(dims)));
}

Expected<std::optional<ir::TensorType>> value_type(const onnx::ValueInfoProto& vi, const std::string& what) {
  if (!vi.has_type()) return std::optional<ir::TensorType>{};
  return onnx_type(vi.type(), what);
}

// The first opset in which ONNX defines op_type (its oldest schema).
int first_version(const std::string& op_type) {
  for (int v = 1; v <= 1000; ++v)
    if (const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op_type, v, onnx::ONNX_DOMAIN)) return s->since_version();
  return 0;
}

// The attribute kind, from `type` or (old writers leave it unset) from the field present.
onnx::AttributeProto::AttributeType attribute_kind(const onnx::AttributeProto& a) {
  using AP = onnx::AttributeProto;
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  return AP::UNDEFINED;
}

// Types the nested graph's inputs should have where the ONNX body leaves them untyped.
std::vector<std::optional<ir::TensorType>> body_hints(const NodeImport& ni, const std::string& attr) {
  std::vector<std::optional<ir::TensorType>> hints;
  auto type_of = [&](size_t i) -> std::optional<ir::TensorType> {
    if (i >= ni.inputs.size() || ni.inputs[i] == ir::kNoValue) return std::nullopt;
    return ni.builder.derived_type(ni.inputs[i]);
  };
  if (ni.proto.op_type() == "Loop" && attr == "body") {
    hints.push_back(ir::TensorType(DType::kI64, {}));
    hints.push_back(ir::TensorType(DType::kBool, {}));
    for (size_t i = 2; i < ni.inputs.size(); ++i) hints.push_back(type_of(i));
  } else if (ni.proto.op_type() == "Scan" && attr == "body") {
    for (size_t i = 0; i < ni.inputs.size(); ++i) {
      auto t = type_of(i);
      if (t) t = ir::TensorType::unranked(t->dtype);  // scan slices drop an axis: keep the dtype only
      hints.push_back(t);
    }
  }
  return hints;
}

Expected<ir::Attribute> convert_attribute(const onnx::AttributeProto& a, NodeImport& ni, ImportContext& ctx) {
  using AP = onnx::AttributeProto;
  const std::string what = ni.label + ": attribute '" + a.name() + "'";
  if (!a.ref_attr_name().empty()) return make_error(what + " refers to a function attribute, which is not supported");
  switch (attribute_kind(a)) {
    case AP::FLOAT: return ir::Attribute(static_cast<double>(a.f()));
    case AP::INT: return ir::Attribute(static_cast<int64_t>(a.i()));
    case AP::STRING: return ir::Attribute(a.s());
    case AP::FLOATS: return ir::Attribute(std::vector<double>(a.floats().begin(), a.floats().end()));
    case AP::INTS: return ir::Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AP::STRINGS: return ir::Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AP::TENSOR: {
      TRY(Tensor t, decode_tensor(a.t(), ctx.base_dir, what));
      return ir::Attribute(std::move(t));
    }
    case AP::TYPE_PROTO: {  // kept as the type's text (Optional's `type`)
      TRY(std::optional<ir::TensorType> t, onnx_type(a.tp(), what));
      if (!t) return make_error(what + " has no element type");
      return ir::Attribute(t->to_string());
    }
    case AP::GRAPH: {
      auto g = import_graph(a.g(), &ni.builder, ctx, body_hints(ni, a.name()));
      if (!g) return make_error(what + ": " + g.error().message);
      return ir::Attribute(std::move(g).value());
    }
    default:
      return make_error(what + " has kind " + AP::AttributeType_Name(attribute_kind(a)) + ", which Tessera does not support");
  }
}

// Where the registry declares a string but ONNX stores an int, the int is a TensorProto.DataType
// (Cast's `to`, EyeLike's `dtype`, ...): translate it to the dtype's name.
Status adapt_attributes(NodeImport& ni, const ops::OpDef& def) {
  for (auto& [key, attr] : ni.attrs) {
    const ops::AttrSpec* spec = def.find_attr(key);
    if (spec == nullptr || spec->kind != ir::AttrKind::kString || attr.kind() != ir::AttrKind::kInt) continue;
    auto dt = dtype_from_onnx(static_cast<int32_t>(attr.i()));
    if (!dt)
      return make_error(ni.label + ": attribute '" + key + "' names element type " +
                        onnx_dtype_name(static_cast<int32_t>(attr.i())) + ", which Tessera does not support");
    attr = ir::Attribute(std::string(dtype_name(*dt)));
  }
  return Status::ok();
}

// The node against ONNX's own schema of its op in the model's opset (what onnx.checker checks per
// node): the op exists in that opset and is not deprecated there, input and output counts,
// required, unknown and mistyped attributes. Ops ONNX does not know are left to the registry.
Status check_schema(const onnx::NodeProto& np, const std::string& label, int64_t opset) {
  const int version = static_cast<int>(std::min<int64_t>(opset, std::numeric_limits<int>::max()));
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(np.op_type(), version, onnx::ONNX_DOMAIN);
  if (schema == nullptr) {
    const onnx::OpSchema* any = onnx::OpSchemaRegistry::Schema(np.op_type(), onnx::ONNX_DOMAIN);
    if (any == nullptr) return Status::ok();
    return make_error(label + ": " + np.op_type() + " is not in opset " + std::to_string(opset) +
                      " (the model's); it first appears in opset " + std::to_string(first_version(np.op_type())));
  }
  // Flags ONNX defines as 0 or 1: another value reads as true to a kernel testing non-zero and as
  // false to ONNX's shape inference testing == 1, so the model means two things.
  static const std::set<std::string> kFlags = {
      "keepdims", "select_last_index", "transA", "transB", "ceil_mode", "count_include_pad", "exclusive",
      "reverse", "center_point_box", "noop_with_empty_axes", "allowzero", "largest", "sorted", "storage_order",
      "linear_before_reset", "input_forget", "detect_negative", "detect_positive", "training_mode", "fmod"};
  for (const auto& a : np.attribute())
    if (a.type() == onnx::AttributeProto::INT && kFlags.count(a.name()) && a.i() != 0 && a.i() != 1)
      return make_error(label + ": attribute '" + a.name() + "' is " + std::to_string(a.i()) + "; ONNX defines it as 0 or 1");
  if (schema->Deprecated())
    return make_error(label + ": " + np.op_type() + " is deprecated in opset " + std::to_string(opset) + " (the model's) and has no definition there");
  try {
    schema->Verify(np);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    return make_error(label + ": does not match ONNX's definition of " + np.op_type() + " in opset " + std::to_string(opset) + ": " + why);
  }
  return Status::ok();
}

Status import_node(const onnx::NodeProto& np, int index, GraphBuilder& b, ImportContext& ctx) {
  const std::string label = np.op_type() + " (node " + quoted_or_index(np, index) + ")";
  NodeImport ni{np, ctx.opset, np.op_type(), label, {}, {}, {}, b, "", false};
  ni.origin = "onnx:" + (np.name().empty() ? np.op_type() + "#" + std::to_string(index) : np.name());
  for (const std::string& in : np.input()) {
    if (in.empty()) {
      ni.inputs.push_back(ir::kNoValue);
      continue;
    }
    auto v = b.resolve(in);
    if (!v) return make_error(label + ": input " + v.error().message);
    ni.inputs.push_back(*v);
  }
  ni.outputs.assign(np.output().begin(), np.output().end());
  if (ni.outputs.empty()) return make_error(label + ": has no outputs");

  const bool default_domain = np.domain().empty() || np.domain() == "ai.onnx";
  if (!default_domain) {
    ctx.unsupported.push_back(np.domain() + "." + label);
    b.emit(ni, np.op_type(), ni.inputs, {});  // keeps later nodes' inputs resolvable
    return Status::ok();
  }
  RETURN_IF_ERROR(check_schema(np, label, ctx.opset));
  for (const auto& a : np.attribute()) {
    if (ni.attrs.count(a.name())) return make_error(label + ": attribute '" + a.name() + "' is given twice");
    TRY(ir::Attribute attr, convert_attribute(a, ni, ctx));
    ni.attrs.emplace(a.name(), std::move(attr));
  }
  ni.op = renamed_op(np.op_type());
  const ops::OpDef* def = ctx.registry.find(ni.op);
  if (def == nullptr) {
    ctx.unsupported.push_back(label);
    b.emit(ni, np.op_type(), ni.inputs, {});
    return Status::ok();
  }
  if (ni.opset < 7) RETURN_IF_ERROR(legacy_rule(ni));
  auto rule = node_rules().find(np.op_type());
  if (rule != node_rules().end()) RETURN_IF_ERROR(rule->second(ni));
  if (ni.emitted) return Status::ok();
  def = ctx.registry.find(ni.op);
  if (def == nullptr) {  // a rule chose an op the registry lacks
    ctx.unsupported.push_back(label);
    b.emit(ni, np.op_type(), ni.inputs, {});
    return Status::ok();
  }
  RETURN_IF_ERROR(adapt_attributes(ni, *def));
  b.emit(ni, ni.op, ni.inputs, std::move(ni.attrs));
  return Status::ok();
}

// The order to import a graph's nodes in: each node after the nodes that define its inputs
// (and the inputs of the graphs nested in it), file order where that holds. ONNX requires sorted
// nodes, but ONNX Runtime sorts them itself and tools write unsorted files (its float16
// converter appended a Cast that the first Conv reads). A cycle keeps file order (the importer
// then names the input that is not defined).
std::vector<int> import_order(const onnx::GraphProto& gp) {
  const int n = gp.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& o : gp.node(i).output())
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<int>> users(static_cast<size_t>(n));
  std::vector<int> pending(static_cast<size_t>(n), 0);
  bool sorted = true;
  for (int i = 0; i < n; ++i) {
    std::set<int> deps;
    std::function<void(const onnx::NodeProto&, int)> uses = [&](const onnx::NodeProto& np, int depth) {
      for (const std::string& in : np.input())
        if (auto it = producer.find(in); it != producer.end() && it->second != i) deps.insert(it->second);
      if (depth >= 32) return;  // the importer refuses deeper nesting
      for (const auto& a : np.attribute()) {
        if (a.has_g())
          for (const auto& inner : a.g().node()) uses(inner, depth + 1);
        for (const auto& g : a.graphs())
          for (const auto& inner : g.node()) uses(inner, depth + 1);
      }
    };
    uses(gp.node(i), 0);
    for (int d : deps) {
      users[static_cast<size_t>(d)].push_back(i);
      sorted &= d < i;
    }
    pending[static_cast<size_t>(i)] = static_cast<int>(deps.size());
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  if (sorted) {
    for (int i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // file order among the ready
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(u)] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {  // a cycle
    order.clear();
    for (int i = 0; i < n; ++i) order.push_back(i);
  }
  return order;
}

Expected<ir::Graph> import_graph(const onnx::GraphProto& gp, GraphBuilder* parent, ImportContext& ctx,
                                 const std::vector<std::optional<ir::TensorType>>& input_hints) {
  ir::Graph graph(gp.name().empty() ? "main" : gp.name());
  GraphBuilder b(graph, parent, ctx.base_dir, ctx.registry);
  const std::string where = parent ? "graph '" + gp.name() + "'" : "the model's graph";
  for (const auto& vi : gp.value_info()) {
    auto t = value_type(vi, "value '" + vi.name() + "'");
    if (t && *t) b.value_info()[vi.name()] = **t;
  }
  std::set<std::string> initializer_names;
  for (const auto& init : gp.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty()) return make_error(where + ": an initializer has no name");
    if (!initializer_names.insert(init.name()).second) return make_error(where + ": two initializers are named '" + init.name() + "'");
    // The model's own message is mutable (ImportContext::release_initializers): its raw bytes
    // become the tensor's storage.
    TRY(Tensor t, decode_tensor(init, ctx.base_dir, what,
                                ctx.release_initializers ? &const_cast<onnx::TensorProto&>(init) : nullptr));
    b.bind(init.name(), graph.add_param(init.name(), std::move(t)));
  }
  if (gp.sparse_initializer_size() > 0) return make_error(where + ": sparse initializers are not supported");
  int input_index = 0;
  for (const auto& vi : gp.input()) {
    const size_t i = static_cast<size_t>(input_index++);
    if (initializer_names.count(vi.name())) continue;  // an initializer (IR < 4 lists them as inputs)
    const std::string what = "input '" + vi.name() + "'";
    if (vi.name().empty()) return make_error(where + ": input " + std::to_string(i) + " has no name");
    if (b.defines(vi.name())) return make_error(where + ": two inputs are named '" + vi.name() + "'");
    TRY(std::optional<ir::TensorType> type, value_type(vi, what));
    if (!type && i < input_hints.size()) type = input_hints[i];
    if (!type) return make_error(where + ": " + what + " has no tensor type and none can be derived");
    b.bind(vi.name(), graph.add_input(vi.name(), *type));
  }
  for (int index : import_order(gp)) {
    const onnx::NodeProto& np = gp.node(index);
    // ONNX graphs are in single static assignment form: a name defined twice (by two nodes, or
    // by a node and an input or initializer) would bind its consumers by file order.
    for (const std::string& out : np.output())
      if (!out.empty() && b.defines(out))
        return make_error(where + ": node " + std::to_string(index) + " ('" + np.name() + "', " + np.op_type() +
                          ") defines '" + out + "', which is already defined (ONNX graphs define each name once)");
    Status st = import_node(np, index, b, ctx);
    if (!st.is_ok()) return make_error(where + ": " + st.error().message);
  }
  std::vector<ir::ValueId> outputs;
  for (const auto& vi : gp.output()) {
    auto v = b.resolve(vi.name());
    if (!v) return make_error(where + ": output " + v.error().message);
    outputs.push_back(*v);
  }
  graph.set_outputs(std::move(outputs));
  return graph;
}

Expected<int64_t> default_opset(const onnx::ModelProto& model) {
  std::string listed;
  std::map<std::string, int64_t> seen;
  for (const auto& op : model.opset_import())
    if (auto [it, fresh] = seen.emplace(op.domain(), op.version()); !fresh)
      return make_error("opset_import lists the domain '" + op.domain() + "' twice (versions " + std::to_string(it->second) + " and " +
                        std::to_string(op.version()) + ")");
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      if (op.version() < kMinOpset || op.version() > kMaxOpset)
        return make_error("default-domain opset " + std::to_string(op.version()) + " is not supported (Tessera imports opsets " +
                          std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
      return op.version();
    }
    listed += (listed.empty() ? "" : ", ") + op.domain() + " " + std::to_string(op.version());
  }
  return make_error("the model imports no default-domain opset (opset_import: " + (listed.empty() ? "empty" : listed) + ")");
}

// Why a declared type cannot describe the inferred one ("" when it can): element types differ,
// ranks differ, or a dimension both know differs. Symbols and unknowns match anything.
std::string type_conflict(const ir::TensorType& declared, const ir::TensorType& inferred) {
  if (declared.dtype != inferred.dtype) return "element type";
  if (!declared.rank_known || !inferred.rank_known) return "";
  if (declared.rank() != inferred.rank()) return "rank";
  for (int i = 0; i < declared.rank(); ++i) {
    const ir::Dim &d = declared.dims[static_cast<size_t>(i)], &n = inferred.dims[static_cast<size_t>(i)];
    if (d.is_known() && n.is_known() && d.size != n.size) return "dimension " + std::to_string(i);
  }
  return "";
}

// The types the model declares for its outputs and intermediate values (value_info) against what
// the nodes produce: a model that says f32[3] where its node makes f32[2] is wrong, and which of
// the two a reader believes would be a guess (onnx.checker refuses such a model too).
Status check_declared_types(const onnx::GraphProto& gp, const ir::Graph& g) {
  auto check = [&](const onnx::ValueInfoProto& vi, const char* kind) -> Status {
    auto declared = value_type(vi, std::string(kind) + " '" + vi.name() + "'");
    if (!declared) return declared.error();
    if (!*declared) return Status::ok();
    auto v = g.find_value(vi.name());
    if (!v) return Status::ok();  // value_info of a name no node defines: ONNX tolerates it
    const ir::Value& val = g.value(*v);
    const std::string why = type_conflict(**declared, val.type);
    if (why.empty()) return Status::ok();
    std::string by = val.kind == ir::ValueKind::kNodeOutput ? " by " + ir::describe_node(g.node(val.producer)) : "";
    return make_error(std::string(kind) + " '" + vi.name() + "' is declared " + (*declared)->to_string() + " but is computed as " +
                      val.type.to_string() + by + " (the " + why + " differs)");
  };
  for (const auto& vi : gp.output()) RETURN_IF_ERROR(check(vi, "output"));
  for (const auto& vi : gp.value_info()) RETURN_IF_ERROR(check(vi, "value"));
  return Status::ok();
}

// ONNX's name of a dtype in type constraints: "tensor(float)".
std::string onnx_type_string(DType dt) {
  for (int32_t code = 1; code <= 16; ++code)
    if (dtype_from_onnx(code) == dt) {
      std::string name = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return "tensor(" + name + ")";
    }
  return "";
}

// The element types of each node's inputs and outputs, once inferred, against the type
// constraints of its ONNX schema: each value's type is one the constraint allows, and values
// sharing a constraint (Add's A and B: T) share a type.
Status check_type_constraints(const onnx::GraphProto& gp, const ir::Graph& g,
                              int64_t opset) {
  const int version = static_cast<int>(std::min<int64_t>(opset, std::numeric_limits<int>::max()));
  int index = 0;
  for (const auto& np : gp.node()) {
    const std::string label = np.op_type() + " (node " + quoted_or_index(np, index++) + ")";
    if (!(np.domain().empty() || np.domain() == "ai.onnx")) continue;
    // PyTorch's opset-6 exports hold int64 Constants, which Constant-1 does not list (ONNX's own
    // test data has three such models); the type is the tensor's, stated in the file.
    if (np.op_type() == "Constant" && np.output_size() == 1)
      if (auto v = g.find_value(np.output(0)); v && g.value(*v).type.dtype == DType::kI64) continue;
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(np.op_type(), version, onnx::ONNX_DOMAIN);
    if (schema == nullptr) continue;
    std::map<std::string, std::pair<std::string, std::string>> bound;  // type_str -> first type, and whose
    auto check = [&](const std::vector<onnx::OpSchema::FormalParameter>& formals,
                     const google::protobuf::RepeatedPtrField<std::string>& names, const char* kind) -> Status {
      for (int i = 0; i < names.size(); ++i) {
        if (formals.empty() || names[i].empty()) continue;
        const auto& formal = formals[std::min<size_t>(static_cast<size_t>(i), formals.size() - 1)];
        if (static_cast<size_t>(i) >= formals.size() && formal.GetOption() != onnx::OpSchema::Variadic) continue;
        auto v = g.find_value(names[i]);
        if (!v) continue;
        const ir::TensorType& type = g.value(*v).type;
        std::string ts = onnx_type_string(type.dtype);  // "tensor(float)", then the kind around it
        if (type.kind == TypeKind::kSequence || type.kind == TypeKind::kOptionalSequence) ts = "seq(" + ts + ")";
        if (type.kind == TypeKind::kOptional || type.kind == TypeKind::kOptionalSequence) ts = "optional(" + ts + ")";
        bool allowed = false;
        for (const auto* t : formal.GetTypes()) allowed |= *t == ts;
        const std::string who = std::string(kind) + " " + std::to_string(i) + " ('" + names[i] + "')";
        if (!allowed)
          return make_error(label + ": " + who + " is " + (type.is_tensor() ? std::string(dtype_name(type.dtype)) : type.to_string()) +
                            ", which " + np.op_type() + " in opset " +
                            std::to_string(opset) + " does not accept there (type " + formal.GetTypeStr() + ")");
        // A heterogeneous variadic (Loop's V, SequenceMap's outputs) binds no type across places.
        if (formal.GetOption() == onnx::OpSchema::Variadic && !formal.GetIsHomogeneous()) continue;
        auto [it, fresh] = bound.emplace(formal.GetTypeStr(), std::make_pair(ts, who));
        if (!fresh && it->second.first != ts && formal.GetTypes().size() > 1)
          return make_error(label + ": " + it->second.second + " and " + who + " must have the same type (" + formal.GetTypeStr() +
                            ") but are " + it->second.first + " and " + ts);
      }
      return Status::ok();
    };
    RETURN_IF_ERROR(check(schema->inputs(), np.input(), "input"));
    RETURN_IF_ERROR(check(schema->outputs(), np.output(), "output"));
  }
  return Status::ok();
}

// Both checks above on the model's graph and on every graph nested in its nodes' attributes (If
// branches, Loop and Scan bodies), each against the graph the importer made of it: the node that
// defines the ONNX node's first output, and its attribute of the same name.
Status check_graph_types(const onnx::GraphProto& gp, const ir::Graph& g, int64_t opset, int depth = 0) {
  RETURN_IF_ERROR(check_declared_types(gp, g));
  RETURN_IF_ERROR(check_type_constraints(gp, g, opset));
  if (depth >= 32) return Status::ok();  // the importer refuses deeper nesting
  for (const auto& np : gp.node()) {
    if (np.output_size() == 0) continue;
    auto v = g.find_value(np.output(0));
    if (!v || g.value(*v).kind != ir::ValueKind::kNodeOutput) continue;
    const ir::Node& n = g.node(g.value(*v).producer);
    for (const auto& a : np.attribute()) {
      if (!a.has_g()) continue;
      const ir::Attribute* mine = n.attr(a.name());
      if (mine == nullptr || mine->kind() != ir::AttrKind::kGraph) continue;
      Status st = check_graph_types(a.g(), mine->g(), opset, depth + 1);
      if (!st.is_ok()) return make_error(np.op_type() + " '" + np.name() + "', graph '" + a.name() + "': " + st.error().message);
    }
  }
  return Status::ok();
}

// Adds the ONNX origin of the node an inference error names.
Error with_origin(const ir::Graph& g, Error e) {
  if (e.node >= 0 && g.has_node(e.node) && !g.node(e.node).provenance.origin.empty())
    e.message += " [" + g.node(e.node).provenance.origin + "]";
  return e;
}

// `model` is parsed and the importer's own: its initializers' bytes are freed as they are read.
Expected<ir::Graph> import_model(onnx::ModelProto& model, const std::string& where, const std::string& base_dir,
                                 const ops::OpRegistry& registry, const OnnxImportOptions& options) {
  // IR version 3 introduced opset_import; ONNX 1.12 writes up to 8.
  constexpr int64_t kMinIr = 3, kMaxIr = 8;
  if (model.ir_version() < kMinIr || model.ir_version() > kMaxIr)
    return make_error("ir_version " + std::to_string(model.ir_version()) + " is not supported (Tessera reads " +
                          std::to_string(kMinIr) + " to " + std::to_string(kMaxIr) + ")", where);
  if (!model.has_graph()) return make_error("the model has no graph", where);
  if (model.ir_version() < 4) {  // before IR 4, every initializer is also a graph input
    std::set<std::string> inputs;
    for (const auto& vi : model.graph().input()) inputs.insert(vi.name());
    for (const auto& init : model.graph().initializer())
      if (!inputs.count(init.name()))
        return make_error("initializer '" + init.name() + "' is not a graph input, which IR version " +
                              std::to_string(model.ir_version()) + " requires (from IR version 4 on it need not be)",
                          where);
  }
  auto opset = default_opset(model);
  if (!opset) return make_error(opset.error().message, where);
  ImportContext ctx{registry, base_dir, *opset, {}};
  ctx.release_initializers = true;
  auto graph = import_graph(model.graph(), nullptr, ctx, {});
  if (!graph) return make_error(graph.error().message, where);
  if (!ctx.unsupported.empty()) {
    std::string list;
    for (const std::string& s : ctx.unsupported) list += (list.empty() ? "" : ", ") + s;
    return make_error("unsupported ops: " + list, where);
  }
  if (options.infer_types) {
    Status st = ops::infer_types(*graph, registry);
    if (!st.is_ok()) {
      Error e = with_origin(*graph, st.error());
      e.where = where;
      return e;
    }
    st = check_graph_types(model.graph(), *graph, *opset);
    if (!st.is_ok()) return make_error(st.error().message, where);
  }
  return graph;
}

}  // namespace

namespace {

const char* const kNotOnnx = "not a valid ONNX model (truncated or corrupt protobuf)";
const char* const kEmpty = "the file is empty (0 bytes), not an ONNX model";

// Runs f() with the importer's memory and library errors as values.
template <class F>
Expected<ir::Graph> guarded_import(const std::string& where, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return make_error("out of memory while importing the model", where);
  } catch (const std::exception& e) {
    return make_error(std::string("import failed: ") + e.what(), where);
  }
}

}  // namespace

Expected<ir::Graph> import_onnx_bytes(const std::string& bytes, const std::string& name_for_errors,
                                      const std::string& base_dir, const ops::OpRegistry& registry,
                                      const OnnxImportOptions& options) {
  return guarded_import(name_for_errors, [&]() -> Expected<ir::Graph> {
    if (bytes.empty()) return make_error(kEmpty, name_for_errors);
    onnx::ModelProto model;
    if (!model.ParseFromString(bytes)) return make_error(kNotOnnx, name_for_errors);
    return import_model(model, name_for_errors, base_dir, registry, options);
  });
}

// Parsed straight from the file: no copy of its bytes beside the message (with the message and the
// tensors, reading a model held three times its weights at the peak: ViT-B/16's 346 MB file peaked
// at 1,040 MB of resident memory in `tessera info`).
Expected<ir::Graph> import_onnx_file(const std::string& path, const ops::OpRegistry& registry,
                                     const OnnxImportOptions& options) {
  RETURN_IF_ERROR(require_regular_file(path));  // a FIFO would block, /dev/zero never end
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(std::string("cannot open for reading: ") + std::strerror(errno), path);
  google::protobuf::io::FileInputStream in(fd);
  in.SetCloseOnDelete(true);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size == 0) return make_error(kEmpty, path);
  return guarded_import(path, [&]() -> Expected<ir::Graph> {
    onnx::ModelProto model;
    const bool parsed = model.ParseFromZeroCopyStream(&in);
    if (in.GetErrno() != 0) return make_error(std::string("read error: ") + std::strerror(in.GetErrno()), path);
    if (!parsed) return make_error(kNotOnnx, path);
    return import_model(model, path, parent_dir(path), registry, options);
  });
}

}  // namespace tessera::formats
