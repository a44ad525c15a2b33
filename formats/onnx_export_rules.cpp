// Per-node export rules. libonnx's schema registry says which ops exist at the target opset and
// which attributes and inputs they take there; everything else is generic:
//
//   op missing at the opset          refused: "not an ONNX op" / "needs opset N"
//   attribute missing at the opset   dropped when it holds the value the op had before it existed
//                                    (the default of the first schema with it: Reshape allowzero=0,
//                                    BatchNormalization training_mode=0); else refused "needs opset N"
//   attribute ONNX never had         dropped when it holds the registry default or is neutral
//                                    (AveragePool dilations all 1, noop_with_empty_axes=0); else refused
//   input/output beyond the schema   refused when present ("needs opset N" or a Tessera extension:
//                                    Pad's axes, Dropout's rng_offset)
//   attribute kinds                  as the schema declares them; dtype names -> DataType ints (Cast
//                                    `to`, EyeLike `dtype`: the importer's rule reversed)
//   absent attributes                written from the registry default where ONNX requires one or
//                                    its default differs
//   Shape start/end below opset 15   Shape, then Slice(starts, ends, axes=[0]) (the same clamping)
//   RoiAlign below opset 16          coordinate_transformation_mode output_half_pixel dropped (what
//                                    RoiAlign-10 did); half_pixel refused
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "formats/json_graph.h"
#include "formats/onnx_export_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "formats/onnx_export_rules.cpp assumes a little-endian host (ONNX raw_data is little-endian)"
#endif

namespace tessera::formats::onnx_export_internal {
namespace {

using AP = onnx::AttributeProto;
using TP = onnx::TensorProto;

std::string type_name(AP::AttributeType t) { return AP::AttributeType_Name(t); }

// The first opset in (from, kMaxExportOpset] whose schema of `op` satisfies `has`; 0 when none.
template <class Pred>
int first_opset_with(const std::string& op, int from, Pred has) {
  for (int v = from + 1; v <= kMaxExportOpset; ++v) {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, v, "");
    if (s != nullptr && has(*s)) return v;
  }
  return 0;
}

std::string port_name(const ops::OpDef* def, bool input, size_t i) {
  if (def == nullptr) return "";
  const auto& ports = input ? def->inputs : def->outputs;
  return i < ports.size() ? " '" + ports[i].name + "'" : "";
}

// Inputs and outputs the node uses that the schema at `opset` does not have.
void check_ports(NodeOut& out, const onnx::OpSchema& schema, int opset) {
  const std::string& op = out.node.op;
  for (int pass = 0; pass < 2; ++pass) {
    const bool input = pass == 0;
    const auto& names = input ? out.inputs : out.outputs;
    const int max = input ? schema.max_input() : schema.max_output();
    for (size_t i = static_cast<size_t>(std::max(max, 0)); i < names.size(); ++i) {
      if (names[i].empty()) continue;
      const std::string what = std::string(input ? "input " : "output ") + std::to_string(i) + port_name(out.def, input, i);
      const int since = first_opset_with(op, opset, [&](const onnx::OpSchema& s) {
        return static_cast<int>(i) < (input ? s.max_input() : s.max_output());
      });
      out.reasons.push_back(since ? what + " needs opset " + std::to_string(since)
                                  : what + " is a Tessera extension, not in ONNX opsets up to 17");
    }
  }
}

bool all_ones(const ir::Attribute& a) {
  if (a.kind() != ir::AttrKind::kInts) return false;
  return std::all_of(a.ints().begin(), a.ints().end(), [](int64_t v) { return v == 1; });
}

// True when `a` holds the registry's default for `key` (so leaving it out changes nothing).
bool is_registry_default(const ops::OpDef* def, const std::string& key, const ir::Attribute& a) {
  if (def == nullptr) return false;
  const ops::AttrSpec* spec = def->find_attr(key);
  if (spec == nullptr || !spec->default_value) return false;
  AP x, y;
  return attribute_to_proto(a, AP::UNDEFINED, &x).is_ok() &&
         attribute_to_proto(*spec->default_value, AP::UNDEFINED, &y).is_ok() && same_attribute_value(x, y);
}

// An attribute the schema at `opset` lacks: fine to leave out, or the reason it is not.
std::optional<std::string> missing_attribute(const NodeOut& out, int opset, const std::string& key,
                                             const ir::Attribute& a) {
  const std::string& op = out.node.op;
  const int since = first_opset_with(op, opset, [&](const onnx::OpSchema& s) { return s.attributes().count(key) != 0; });
  if (since) {
    const AP& dflt = onnx::OpSchemaRegistry::Schema(op, since, "")->attributes().at(key).default_value;
    AP mine;
    if (dflt.type() != AP::UNDEFINED && attribute_to_proto(a, dflt.type(), &mine).is_ok() && same_attribute_value(mine, dflt))
      return std::nullopt;  // the value the op had before the attribute existed
    return "attribute '" + key + "' needs opset " + std::to_string(since);
  }
  if (is_registry_default(out.def, key, a)) return std::nullopt;
  if (key == "dilations" && all_ones(a)) return std::nullopt;
  return "attribute '" + key + "' is a Tessera extension, not in ONNX opsets up to 17";
}

// Attributes whose Tessera name differs from ONNX's: the recurrent ops' `layout` is `batch_first`
// (Tessera's `layout` is the physical layout the optimiser picks; the importer renames it).
bool is_recurrent(const std::string& op) { return op == "RNN" || op == "LSTM" || op == "GRU"; }
std::string onnx_attribute_name(const std::string& op, const std::string& key) {
  return is_recurrent(op) && key == "batch_first" ? "layout" : key;
}
std::string tessera_attribute_name(const std::string& op, const std::string& key) {
  return is_recurrent(op) && key == "layout" ? "batch_first" : key;
}

void write_attributes(NodeOut& out, const onnx::OpSchema& schema, int opset, const std::set<std::string>& handled,
                      onnx::NodeProto* np, const ExportSubgraph& export_subgraph) {
  const auto& specs = schema.attributes();
  for (const auto& [tkey, attr] : out.node.attrs) {
    if (handled.count(tkey)) continue;
    const std::string key = onnx_attribute_name(out.node.op, tkey);
    auto it = specs.find(key);
    if (it == specs.end()) {
      if (auto why = missing_attribute(out, opset, key, attr)) out.reasons.push_back(*why);
      continue;
    }
    AP* ap = np->add_attribute();
    ap->set_name(key);
    if (attr.kind() == ir::AttrKind::kGraph) {
      if (it->second.type != AP::GRAPH) {
        out.reasons.push_back("attribute '" + key + "' is a graph; ONNX's schema wants " + type_name(it->second.type));
        continue;
      }
      ap->set_type(AP::GRAPH);
      export_subgraph(attr.g(), ap->mutable_g());
      continue;
    }
    Status st = attribute_to_proto(attr, it->second.type, ap);
    if (!st.is_ok()) out.reasons.push_back("attribute '" + key + "' " + st.error().message);
  }
  // Absent attributes: ONNX requires them, or its default is not the registry's.
  for (const auto& [key, spec] : specs) {
    const std::string tkey = tessera_attribute_name(out.node.op, key);
    if (out.node.attrs.count(tkey) || handled.count(key)) continue;
    const ops::AttrSpec* mine = out.def ? out.def->find_attr(tkey) : nullptr;
    if (mine == nullptr || !mine->default_value) {
      if (spec.required) out.reasons.push_back("required attribute '" + key + "' is missing");
      continue;
    }
    AP ap;
    if (!attribute_to_proto(*mine->default_value, spec.type, &ap).is_ok()) continue;
    if (!spec.required && same_attribute_value(ap, spec.default_value)) continue;
    ap.set_name(key);
    *np->add_attribute() = std::move(ap);
  }
}

int64_t int_attr(const ir::Node& n, const std::string& key, int64_t dflt) {
  const ir::Attribute* a = n.attr(key);
  return a && a->kind() == ir::AttrKind::kInt ? a->i() : dflt;
}

// Shape-15's start/end below opset 15: Shape, then Slice over the 1-D shape (Slice clamps and
// wraps negative indices exactly as Shape-15 does).
void rewrite_shape(NodeOut& out, onnx::NodeProto& np, NodeSink& sink) {
  const ir::Node& n = out.node;
  const int64_t start = int_attr(n, "start", 0);
  const bool has_end = n.attr("end") != nullptr;
  if (start == 0 && !has_end) return;
  const int64_t end = int_attr(n, "end", std::numeric_limits<int64_t>::max());
  const std::string base = n.name.empty() ? "shape" : n.name;
  const std::string full = sink.names.fresh(base + ".full");
  auto add_i64 = [&](const std::string& what, int64_t v) {
    const std::string name = sink.names.fresh(base + "." + what);
    tensor_to_proto(Tensor::from_vector<int64_t>({1}, {v}), name, sink.graph->add_initializer());
    return name;
  };
  const std::string starts = add_i64("starts", start), ends = add_i64("ends", end), axes = add_i64("axes", 0);
  onnx::NodeProto* slice = sink.graph->add_node();
  slice->set_op_type("Slice");
  if (!n.name.empty()) slice->set_name(n.name + ".slice");
  for (const std::string& s : {full, starts, ends, axes}) slice->add_input(s);
  slice->add_output(out.outputs.empty() ? "" : out.outputs[0]);
  np.set_output(0, full);
}

}  // namespace

int32_t onnx_dtype(DType dt) {
  switch (dt) {
    case DType::kF32: return TP::FLOAT;
    case DType::kF16: return TP::FLOAT16;
    case DType::kBF16: return TP::BFLOAT16;
    case DType::kF64: return TP::DOUBLE;
    case DType::kI8: return TP::INT8;
    case DType::kU8: return TP::UINT8;
    case DType::kI32: return TP::INT32;
    case DType::kI64: return TP::INT64;
    case DType::kBool: return TP::BOOL;
    case DType::kI16: return TP::INT16;
    case DType::kU16: return TP::UINT16;
    case DType::kU32: return TP::UINT32;
    case DType::kU64: return TP::UINT64;
    case DType::kString: return TP::STRING;
  }
  return TP::UNDEFINED;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* out) {
  out->set_name(name);
  out->set_data_type(onnx_dtype(t.dtype()));
  for (int64_t d : t.shape()) out->add_dims(d);
  if (t.dtype() == DType::kString) {  // ONNX keeps strings in string_data
    for (int64_t i = 0; i < t.numel(); ++i) out->add_string_data(t.string_at(i));
    return;
  }
  const Tensor c = t.contiguous();
  out->set_raw_data(std::string(static_cast<const char*>(c.raw_data()), c.nbytes()));
}

namespace {
void tensor_type_to_proto(const ir::TensorType& t, onnx::TypeProto* tp) {
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(onnx_dtype(t.dtype));
  if (!t.rank_known) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : t.dims) {
    auto* dim = shape->add_dim();
    if (d.is_known()) dim->set_dim_value(d.size);
    else if (d.is_symbolic()) dim->set_dim_param(d.symbol);
  }
}
}  // namespace

void type_to_proto(const ir::TensorType& t, onnx::TypeProto* tp) {
  const ir::TensorType elem = t.as(TypeKind::kTensor);
  switch (t.kind) {
    case TypeKind::kTensor: return tensor_type_to_proto(t, tp);
    case TypeKind::kSequence: return tensor_type_to_proto(elem, tp->mutable_sequence_type()->mutable_elem_type());
    case TypeKind::kOptional: return tensor_type_to_proto(elem, tp->mutable_optional_type()->mutable_elem_type());
    case TypeKind::kOptionalSequence:
      return tensor_type_to_proto(
          elem, tp->mutable_optional_type()->mutable_elem_type()->mutable_sequence_type()->mutable_elem_type());
  }
}

Status attribute_to_proto(const ir::Attribute& attr, AP::AttributeType want, AP* out) {
  using K = ir::AttrKind;
  const K k = attr.kind();
  if (want == AP::UNDEFINED) {
    static const AP::AttributeType kOwn[] = {AP::INT, AP::FLOAT, AP::STRING, AP::TENSOR,
                                             AP::GRAPH, AP::INTS, AP::FLOATS, AP::STRINGS};
    want = kOwn[static_cast<int>(k)];
  }
  auto mismatch = [&]() {
    return make_error("is " + std::string(ir::attr_kind_name(k)) + "; ONNX's schema wants " + type_name(want));
  };
  out->set_type(want);
  switch (want) {
    case AP::INT:
      if (k == K::kInt) {
        out->set_i(attr.i());
      } else if (k == K::kString) {  // a dtype name where ONNX stores a TensorProto.DataType
        auto dt = dtype_from_name(attr.s());
        if (!dt) return make_error("is the string '" + attr.s() + "', which names no element type; ONNX wants a data type int");
        out->set_i(onnx_dtype(*dt));
      } else {
        return mismatch();
      }
      return Status::ok();
    case AP::FLOAT:
      if (k == K::kFloat) out->set_f(static_cast<float>(attr.f()));
      else if (k == K::kInt) out->set_f(static_cast<float>(attr.i()));
      else return mismatch();
      return Status::ok();
    case AP::STRING:
      if (k != K::kString) return mismatch();
      out->set_s(attr.s());
      return Status::ok();
    case AP::TENSOR:
      if (k != K::kTensor) return mismatch();
      tensor_to_proto(attr.t(), "", out->mutable_t());
      return Status::ok();
    case AP::TYPE_PROTO: {  // a type written as text ("seq(f32[*])", Optional's `type`)
      if (k != K::kString) return mismatch();
      auto t = parse_tensor_type(attr.s());
      if (!t) return make_error(t.error().message);
      type_to_proto(*t, out->mutable_tp());
      return Status::ok();
    }
    case AP::INTS:
      if (k == K::kInts) {
        for (int64_t v : attr.ints()) out->add_ints(v);
      } else if (!((k == K::kFloats && attr.floats().empty()) || (k == K::kStrings && attr.strings().empty()))) {
        return mismatch();
      }
      return Status::ok();
    case AP::FLOATS:
      if (k == K::kFloats) {
        for (double v : attr.floats()) out->add_floats(static_cast<float>(v));
      } else if (k == K::kInts) {
        for (int64_t v : attr.ints()) out->add_floats(static_cast<float>(v));
      } else if (!(k == K::kStrings && attr.strings().empty())) {
        return mismatch();
      }
      return Status::ok();
    case AP::STRINGS:
      if (k == K::kStrings) {
        for (const std::string& s : attr.strings()) out->add_strings(s);
      } else if (!((k == K::kInts && attr.ints().empty()) || (k == K::kFloats && attr.floats().empty()))) {
        return mismatch();
      }
      return Status::ok();
    default:
      return mismatch();
  }
}

bool same_attribute_value(const AP& a, const AP& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case AP::INT: return a.i() == b.i();
    case AP::FLOAT: return a.f() == b.f() || (std::isnan(a.f()) && std::isnan(b.f()));
    case AP::STRING: return a.s() == b.s();
    case AP::INTS: return std::equal(a.ints().begin(), a.ints().end(), b.ints().begin(), b.ints().end());
    case AP::FLOATS: return std::equal(a.floats().begin(), a.floats().end(), b.floats().begin(), b.floats().end());
    case AP::STRINGS: return std::equal(a.strings().begin(), a.strings().end(), b.strings().begin(), b.strings().end());
    default: return false;
  }
}

const onnx::OpSchema* find_schema(const std::string& op, int opset, std::string& why) {
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, opset, "");
  if (s == nullptr) {
    const int since = first_opset_with(op, opset, [](const onnx::OpSchema&) { return true; });
    why = since ? "needs opset " + std::to_string(since) : "not an ONNX op";
    return nullptr;
  }
  if (s->Deprecated()) {
    why = "deprecated since opset " + std::to_string(s->since_version());
    return nullptr;
  }
  return s;
}

void write_node(NodeOut& out, const onnx::OpSchema& schema, int opset, NodeSink& sink,
                const ExportSubgraph& export_subgraph) {
  const ir::Node& n = out.node;
  while (!out.inputs.empty() && out.inputs.back().empty()) out.inputs.pop_back();
  while (out.outputs.size() > 1 && out.outputs.back().empty()) out.outputs.pop_back();
  check_ports(out, schema, opset);
  onnx::NodeProto np;
  np.set_op_type(n.op);
  if (!n.name.empty()) np.set_name(n.name);
  for (const std::string& s : out.inputs) np.add_input(s);
  for (const std::string& s : out.outputs) np.add_output(s);
  std::set<std::string> handled;
  const bool shape_rewrite = n.op == "Shape" && opset < 15;
  if (shape_rewrite) handled = {"start", "end"};
  // RoiAlign before opset 16 had no coordinate_transformation_mode and worked as output_half_pixel
  // (the importer's rule reversed); half_pixel needs 16.
  if (n.op == "RoiAlign" && opset < 16) {
    handled.insert("coordinate_transformation_mode");
    const ir::Attribute* m = n.attr("coordinate_transformation_mode");
    if (!m || m->kind() != ir::AttrKind::kString || m->s() != "output_half_pixel")
      out.reasons.push_back("RoiAlign with half_pixel coordinates needs opset 16");
  }
  write_attributes(out, schema, opset, handled, &np, export_subgraph);
  if (!out.reasons.empty()) return;
  onnx::NodeProto* placed = sink.graph->add_node();
  *placed = std::move(np);
  if (shape_rewrite) rewrite_shape(out, *placed, sink);
}

}  // namespace tessera::formats::onnx_export_internal
