// The native .tsr format: IR <-> tessera::tsr::File (formats/tsr.proto), the side file of
// external weights, checksums, and the checks every count and offset passes before use.
#include "formats/tsr.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "engine/core/strings.h"
#include "engine/ir/limits.h"
#include "engine/ir/verifier.h"
#include "formats/file_io.h"
#include "formats/tsr.pb.h"

namespace tessera::formats {
namespace {

constexpr int kMaxGraphDepth = 32;

std::string str(int64_t v) { return std::to_string(v); }

uint64_t xxh3(const void* data, size_t size) { return XXH3_64bits(data, size); }

tsr::DType to_proto(DType t) { return static_cast<tsr::DType>(static_cast<int>(t) + 1); }

Expected<DType> from_proto(int t, const std::string& place) {
  if (t < 1 || t > kNumDTypes) return make_error(place + ": unknown dtype " + str(t));
  return static_cast<DType>(t - 1);
}

// ---------------------------------------------------------------- writing

struct Writer {
  const TsrSaveOptions& options;
  bool external = false;  // weights of at least external_min_bytes go to the side file
  std::string side;       // the side file's bytes

  void tensor(const Tensor& in, tsr::Tensor* out) {
    const Tensor t = in.is_contiguous() ? in : in.contiguous();
    out->set_dtype(to_proto(t.dtype()));
    for (int64_t d : t.shape()) out->add_shape(d);
    if (t.dtype() == DType::kString) {  // inline: each element as a u32 length and its bytes
      std::string enc;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const std::string& e = t.string_at(i);
        const uint32_t len = static_cast<uint32_t>(e.size());
        enc.append(reinterpret_cast<const char*>(&len), 4);
        enc += e;
      }
      out->set_xxh3(xxh3(enc.data(), enc.size()));
      out->set_data(std::move(enc));
      return;
    }
    const auto* bytes = static_cast<const char*>(t.raw_data());
    const size_t n = t.nbytes();
    out->set_xxh3(xxh3(bytes, n));
    if (external && static_cast<int64_t>(n) >= options.external_min_bytes) {
      side.resize((side.size() + 63) / 64 * 64, '\0');  // 64-byte aligned, so readers can map it
      out->set_external(true);
      out->set_external_offset(side.size());
      out->set_external_length(n);
      side.append(bytes, n);
    } else {
      out->set_data(bytes, n);
    }
  }

  void type(const ir::TensorType& t, tsr::TensorType* out) {
    out->set_dtype(to_proto(t.dtype));
    out->set_rank_known(t.rank_known);
    out->set_kind(static_cast<int32_t>(t.kind));
    for (const ir::Dim& d : t.dims) {
      tsr::Dim* pd = out->add_dims();
      if (d.is_known()) pd->set_size(d.size);
      else if (!d.symbol.empty()) pd->set_symbol(d.symbol);
    }
  }

  void value(const ir::Graph& g, ir::ValueId id, tsr::Value* out) {
    const ir::Value& v = g.value(id);
    out->set_id(id);
    out->set_name(v.name);
    type(v.type, out->mutable_type());
    switch (v.kind) {
      case ir::ValueKind::kInput: out->set_kind(tsr::INPUT); break;
      case ir::ValueKind::kParam: out->set_kind(tsr::PARAM); break;
      case ir::ValueKind::kCapture: out->set_kind(tsr::CAPTURE); break;
      case ir::ValueKind::kNodeOutput: out->set_kind(tsr::NODE_OUTPUT); break;
    }
    if (v.kind == ir::ValueKind::kParam) {
      if (const Tensor* data = g.param_data(id)) tensor(*data, out->mutable_data());
    }
  }

  void attribute(const std::string& name, const ir::Attribute& a, tsr::Attribute* out) {
    out->set_name(name);
    switch (a.kind()) {
      case ir::AttrKind::kInt: out->set_i(a.i()); break;
      case ir::AttrKind::kFloat: out->set_f(a.f()); break;
      case ir::AttrKind::kString: out->set_s(a.s()); break;
      case ir::AttrKind::kTensor: tensor(a.t(), out->mutable_t()); break;
      case ir::AttrKind::kGraph: graph(a.g(), out->mutable_g()); break;
      case ir::AttrKind::kInts:
        out->mutable_ints();  // set the oneof even for an empty list
        for (int64_t v : a.ints()) out->mutable_ints()->add_values(v);
        break;
      case ir::AttrKind::kFloats:
        out->mutable_floats();  // set the oneof even for an empty list
        for (double v : a.floats()) out->mutable_floats()->add_values(v);
        break;
      case ir::AttrKind::kStrings:
        out->mutable_strings();  // set the oneof even for an empty list
        for (const std::string& v : a.strings()) out->mutable_strings()->add_values(v);
        break;
    }
  }

  void graph(const ir::Graph& g, tsr::Graph* out) {
    out->set_name(g.name());
    for (const auto* list : {&g.inputs(), &g.params(), &g.captures()})
      for (ir::ValueId id : *list) value(g, id, out->add_values());
    for (ir::NodeId id : g.node_ids()) {
      const ir::Node& n = g.node(id);
      tsr::Node* pn = out->add_nodes();
      pn->set_id(id);
      pn->set_op(n.op);
      pn->set_name(n.name);
      for (ir::ValueId v : n.inputs) pn->add_inputs(v);
      for (ir::ValueId v : n.outputs) value(g, v, pn->add_outputs());
      for (const auto& [key, attr] : n.attrs) attribute(key, attr, pn->add_attributes());
      for (ir::NodeId f : n.provenance.from) pn->add_provenance_from(f);
      pn->set_provenance_origin(n.provenance.origin);
    }
    for (ir::ValueId v : g.outputs()) out->add_outputs(v);
  }
};

int64_t total_weight_bytes(const ir::Graph& g) {
  int64_t total = 0;
  for (ir::ValueId id : g.params())
    if (const Tensor* t = g.param_data(id)) total += static_cast<int64_t>(t->nbytes());
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs) {
      if (attr.kind() == ir::AttrKind::kTensor) total += static_cast<int64_t>(attr.t().nbytes());
      if (attr.kind() == ir::AttrKind::kGraph) total += total_weight_bytes(attr.g());
    }
  return total;
}

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Expected<std::string> serialize(const tsr::File& file, const std::string& where) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // same document, same bytes
    if (!file.SerializeToCodedStream(&coded))
      return make_error("the graph is too large for one protobuf message (2 GiB); save with external weights",
                        where);
  }
  return out;
}

// Does the graph (or a nested one) have a sequence or optional value? Those need version 2.
bool has_non_tensor_values(const ir::Graph& g) {
  for (ir::ValueId v = 0; v < g.value_capacity(); ++v)
    if (g.has_value(v) && !g.value(v).type.is_tensor()) return true;
  for (ir::NodeId id : g.node_ids())
    for (const auto& [name, attr] : g.node(id).attrs)
      if (attr.kind() == ir::AttrKind::kGraph && has_non_tensor_values(attr.g())) return true;
  return false;
}

Expected<std::string> encode(const GraphDocument& doc, const TsrSaveOptions& options, Writer& w,
                             const std::string& side_name, const std::string& where) {
  tsr::File file;
  file.set_format_version(has_non_tensor_values(doc.graph) ? 2 : 1);
  tsr::Metadata* m = file.mutable_metadata();
  m->set_producer(doc.metadata.producer.empty() ? options.producer : doc.metadata.producer);
  m->set_engine_version(doc.metadata.engine_version.empty() ? TESSERA_VERSION : doc.metadata.engine_version);
  m->set_content_hash(graph_content_hash(doc.graph));
  m->set_created_unix_ms(doc.metadata.created_unix_ms != 0   ? doc.metadata.created_unix_ms
                         : options.created_unix_ms >= 0 ? options.created_unix_ms
                                                        : now_unix_ms());
  for (const auto& [k, v] : doc.metadata.properties) {
    tsr::Property* p = m->add_properties();
    p->set_key(k);
    p->set_value(v);
  }
  w.graph(doc.graph, file.mutable_graph());
  if (!doc.layout.empty()) {
    tsr::Layout* l = file.mutable_layout();
    for (const auto& [id, p] : doc.layout.positions) {
      tsr::Position* pp = l->add_positions();
      pp->set_node(id);
      pp->set_x(p.x);
      pp->set_y(p.y);
    }
    for (const NodeGroup& g : doc.layout.groups) {
      tsr::Group* pg = l->add_groups();
      pg->set_name(g.name);
      for (ir::NodeId id : g.nodes) pg->add_nodes(id);
      pg->set_collapsed(g.collapsed);
    }
  }
  if (!w.side.empty()) file.set_external_data(side_name);
  return serialize(file, where);
}

// ---------------------------------------------------------------- reading

// The side file, read once on first use.
struct SideFile {
  std::string path;
  bool loaded = false;
  std::string bytes;
};

struct Reader {
  std::string where;
  std::string base_dir;
  std::string side_name;  // File.external_data
  SideFile side;
  int64_t budget = 0;     // values + nodes seen: bounds ids

  Error err(const std::string& place, const std::string& msg) const { return make_error(place + ": " + msg, where); }

  Status load_side(const std::string& place) {
    if (side.loaded) return Status::ok();
    if (side_name.empty()) return err(place, "the tensor is marked external but the file names no external data file");
    if (side_name.find('/') != std::string::npos || side_name == "." || side_name == "..")
      return err(place, "external data file '" + side_name + "' must be a plain file name next to the .tsr");
    side.path = join_path(base_dir, side_name);
    Expected<std::string> bytes = read_file(side.path);
    if (!bytes) return err(place, "cannot read the external data file: " + bytes.error().message + " (" + side.path + ")");
    side.bytes = std::move(*bytes);
    side.loaded = true;
    return Status::ok();
  }

  Expected<Tensor> tensor(const tsr::Tensor& pt, const std::string& place) {
    TRY(DType dt, from_proto(pt.dtype(), place));
    if (pt.shape_size() > ir::kMaxRank) return err(place, "rank " + str(pt.shape_size()) + " is over " + str(ir::kMaxRank));
    Shape shape(pt.shape().begin(), pt.shape().end());
    Expected<int64_t> numel = checked_numel(shape, dt);
    if (!numel) return err(place, numel.error().message);
    if (dt == DType::kString) return string_tensor(pt, shape, *numel, place);
    const uint64_t nbytes = static_cast<uint64_t>(*numel) * static_cast<uint64_t>(dtype_size(dt));
    const char* src = nullptr;
    if (pt.external()) {
      if (!pt.data().empty()) return err(place, "holds inline data and is marked external");
      RETURN_IF_ERROR(load_side(place));
      const uint64_t size = side.bytes.size();
      if (pt.external_length() != nbytes)
        return err(place, "external length " + std::to_string(pt.external_length()) + " bytes, but " +
                              shape_to_string(shape) + " of " + std::string(dtype_name(dt)) + " needs " +
                              std::to_string(nbytes));
      if (pt.external_offset() > size || nbytes > size - pt.external_offset())
        return err(place, "external bytes [" + std::to_string(pt.external_offset()) + ", +" + std::to_string(nbytes) +
                              ") lie past the end of " + side.path + " (" + std::to_string(size) + " bytes)");
      src = side.bytes.data() + pt.external_offset();
    } else {
      if (pt.data().size() != nbytes)
        return err(place, "holds " + std::to_string(pt.data().size()) + " bytes, but " + shape_to_string(shape) +
                              " of " + std::string(dtype_name(dt)) + " needs " + std::to_string(nbytes));
      src = pt.data().data();
    }
    const uint64_t sum = xxh3(src, nbytes);
    if (sum != pt.xxh3())
      return err(place, "checksum mismatch (stored " + hex16(pt.xxh3()) + ", computed " + hex16(sum) +
                            "): the weights are corrupt" + (pt.external() ? " in " + side.path : ""));
    TRY(Tensor t, Tensor::create(dt, shape));
    if (nbytes > 0) std::memcpy(t.raw_data(), src, nbytes);
    if (dt == DType::kBool) {
      auto* b = t.data<uint8_t>();
      for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
    }
    return t;
  }

  // A string tensor's inline data: per element a little-endian u32 length and that many bytes.
  Expected<Tensor> string_tensor(const tsr::Tensor& pt, const Shape& shape, int64_t numel, const std::string& place) {
    if (pt.external()) return err(place, "a string tensor cannot be external");
    const std::string& data = pt.data();
    const uint64_t sum = xxh3(data.data(), data.size());
    if (sum != pt.xxh3())
      return err(place, "checksum mismatch (stored " + hex16(pt.xxh3()) + ", computed " + hex16(sum) + "): the weights are corrupt");
    TRY(Tensor t, Tensor::create(DType::kString, shape));
    size_t at = 0;
    for (int64_t i = 0; i < numel; ++i) {
      uint32_t len = 0;
      if (data.size() - at < 4) return err(place, "string data ends inside element " + str(i));
      std::memcpy(&len, data.data() + at, 4);
      at += 4;
      if (data.size() - at < len) return err(place, "string element " + str(i) + " runs past the end of the data");
      t.data<uint64_t>()[i] = intern_string(std::string_view(data.data() + at, len));
      at += len;
    }
    if (at != data.size()) return err(place, str(data.size() - at) + " bytes after the last string element");
    return t;
  }

  Expected<ir::TensorType> type(const tsr::TensorType& pt, const std::string& place) {
    TRY(ir::TensorType t, element_type(pt, place));
    if (pt.kind() < 0 || pt.kind() > static_cast<int>(TypeKind::kOptionalSequence))
      return err(place, "unknown value kind " + str(pt.kind()));
    t.kind = static_cast<TypeKind>(pt.kind());
    return t;
  }

  Expected<ir::TensorType> element_type(const tsr::TensorType& pt, const std::string& place) {
    TRY(DType dt, from_proto(pt.dtype(), place));
    if (!pt.rank_known()) {
      if (pt.dims_size() != 0) return err(place, "unknown rank but " + str(pt.dims_size()) + " dims");
      return ir::TensorType::unranked(dt);
    }
    if (pt.dims_size() > ir::kMaxRank) return err(place, "rank " + str(pt.dims_size()) + " is over " + str(ir::kMaxRank));
    std::vector<ir::Dim> dims;
    for (const tsr::Dim& d : pt.dims()) {
      if (d.kind_case() == tsr::Dim::kSize) {
        if (d.size() < 0) return err(place, "negative dimension " + str(d.size()));
        dims.push_back(ir::Dim::known(d.size()));
      } else if (d.kind_case() == tsr::Dim::kSymbol) {
        if (d.symbol().empty()) return err(place, "empty dimension symbol");
        dims.push_back(ir::Dim::named(d.symbol()));
      } else {
        dims.push_back(ir::Dim::unknown());
      }
    }
    return ir::TensorType(dt, std::move(dims));
  }

  Status check_id(int64_t id, const std::string& place, const char* what) const {
    const int64_t cap = std::max<int64_t>(65536, 64 * budget);
    if (id < 0 || id >= cap)
      return err(place, std::string(what) + " id " + str(id) + " is out of range [0, " + str(cap) + ")");
    return Status::ok();
  }

  Expected<ir::Value> value(const tsr::Value& pv, const std::string& place) {
    RETURN_IF_ERROR(check_id(pv.id(), place, "value"));
    ir::Value v;
    v.name = pv.name();
    TRY(v.type, type(pv.type(), place + " type"));
    switch (pv.kind()) {
      case tsr::INPUT: v.kind = ir::ValueKind::kInput; break;
      case tsr::PARAM: v.kind = ir::ValueKind::kParam; break;
      case tsr::CAPTURE: v.kind = ir::ValueKind::kCapture; break;
      case tsr::NODE_OUTPUT: v.kind = ir::ValueKind::kNodeOutput; break;
      default: return err(place, "unknown value kind " + str(pv.kind()));
    }
    if (pv.has_data() != (v.kind == ir::ValueKind::kParam))
      return err(place, pv.has_data() ? "only params hold data" : "a param without data");
    return v;
  }

  Expected<ir::Attribute> attribute(const tsr::Attribute& pa, const std::string& place, int depth) {
    switch (pa.value_case()) {
      case tsr::Attribute::kI: return ir::Attribute(pa.i());
      case tsr::Attribute::kF: return ir::Attribute(pa.f());
      case tsr::Attribute::kS: return ir::Attribute(pa.s());
      case tsr::Attribute::kT: {
        TRY(Tensor t, tensor(pa.t(), place));
        return ir::Attribute(std::move(t));
      }
      case tsr::Attribute::kG: {
        TRY(ir::Graph g, graph(pa.g(), place + " graph", depth + 1));
        return ir::Attribute(std::move(g));
      }
      case tsr::Attribute::kInts:
        return ir::Attribute(std::vector<int64_t>(pa.ints().values().begin(), pa.ints().values().end()));
      case tsr::Attribute::kFloats:
        return ir::Attribute(std::vector<double>(pa.floats().values().begin(), pa.floats().values().end()));
      case tsr::Attribute::kStrings:
        return ir::Attribute(std::vector<std::string>(pa.strings().values().begin(), pa.strings().values().end()));
      case tsr::Attribute::VALUE_NOT_SET: break;
    }
    return err(place, "no value");
  }

  Expected<ir::Graph> graph(const tsr::Graph& pg, const std::string& place, int depth) {
    if (depth > kMaxGraphDepth) return err(place, "graphs nested more than " + str(kMaxGraphDepth) + " deep");
    budget += pg.values_size() + pg.nodes_size();
    for (const tsr::Node& n : pg.nodes()) budget += n.outputs_size();
    ir::Graph g(pg.name());
    for (int i = 0; i < pg.values_size(); ++i) {
      const tsr::Value& pv = pg.values(i);
      const std::string vplace = place + " value %" + str(pv.id()) + (pv.name().empty() ? "" : " '" + pv.name() + "'");
      TRY(ir::Value v, value(pv, vplace));
      if (v.kind == ir::ValueKind::kNodeOutput) return err(vplace, "a node output listed among the graph's values");
      const bool param = v.kind == ir::ValueKind::kParam;
      const ir::TensorType declared = v.type;
      Status st = g.define_value(pv.id(), std::move(v));
      if (!st.is_ok()) return err(vplace, st.error().message);
      if (param) {
        TRY(Tensor t, tensor(pv.data(), vplace + " data"));
        if (!declared.accepts(t.dtype(), t.shape()))
          return err(vplace, "declared " + declared.to_string() + " but holds " + t.summary(0));
        g.set_param_data(pv.id(), std::move(t));
      }
    }
    for (const tsr::Node& pn : pg.nodes()) {
      const std::string nplace = place + " node #" + str(pn.id()) + " " + pn.op() +
                                 (pn.name().empty() ? "" : " '" + pn.name() + "'");
      RETURN_IF_ERROR(check_id(pn.id(), nplace, "node"));
      if (pn.op().empty()) return err(nplace, "no op");
      ir::Node n;
      n.op = pn.op();
      n.name = pn.name();
      for (int32_t in : pn.inputs()) {
        if (in != ir::kNoValue) RETURN_IF_ERROR(check_id(in, nplace, "input value"));
        n.inputs.push_back(in);
      }
      for (const tsr::Attribute& pa : pn.attributes()) {
        TRY(ir::Attribute a, attribute(pa, nplace + " attribute '" + pa.name() + "'", depth));
        if (!n.attrs.emplace(pa.name(), std::move(a)).second)
          return err(nplace, "attribute '" + pa.name() + "' given twice");
      }
      for (int32_t f : pn.provenance_from()) {
        RETURN_IF_ERROR(check_id(f, nplace + " provenance", "node"));
        n.provenance.from.push_back(f);
      }
      n.provenance.origin = pn.provenance_origin();
      for (int i = 0; i < pn.outputs_size(); ++i) {
        const tsr::Value& pv = pn.outputs(i);
        const std::string vplace = nplace + " output " + str(i);
        TRY(ir::Value v, value(pv, vplace));
        if (v.kind != ir::ValueKind::kNodeOutput) return err(vplace, "a node output must have kind NODE_OUTPUT");
        v.producer = pn.id();
        v.producer_output = i;
        n.outputs.push_back(pv.id());
        Status st = g.define_value(pv.id(), std::move(v));
        if (!st.is_ok()) return err(vplace, st.error().message);
      }
      Status st = g.define_node(pn.id(), std::move(n));
      if (!st.is_ok()) return err(nplace, st.error().message);
    }
    std::vector<ir::ValueId> outs;
    for (int32_t v : pg.outputs()) {
      RETURN_IF_ERROR(check_id(v, place + " outputs", "value"));
      outs.push_back(v);
    }
    g.set_outputs(std::move(outs));
    return g;
  }
};

}  // namespace

Expected<GraphDocument> parse_tsr(const void* data, size_t size, const std::string& where, const std::string& base_dir) {
  if (size > static_cast<size_t>(INT32_MAX))
    return make_error("file of " + std::to_string(size) + " bytes is over protobuf's 2 GiB limit", where);
  tsr::File file;
  google::protobuf::io::ArrayInputStream stream(data, static_cast<int>(size));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetRecursionLimit(4 * kMaxGraphDepth + 16);
  if (!file.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return make_error("not a .tsr file: the protobuf message does not parse (truncated or corrupt)", where);
  if (file.format_version() == 0)
    return make_error("not a .tsr file: no format_version (field 1)", where);
  if (file.format_version() > kTsrFormatVersion)
    return make_error("format version " + std::to_string(file.format_version()) + " is newer than this reader (" +
                          std::to_string(kTsrFormatVersion) + "): open it with a newer tessera (or this is not a .tsr file)",
                      where);
  if (!file.has_graph()) return make_error("the file holds no graph", where);
  Reader r{where, base_dir, file.external_data(), {}, 0};
  GraphDocument doc;
  TRY(doc.graph, r.graph(file.graph(), "graph '" + file.graph().name() + "'", 0));
  Status verified = ir::verify(doc.graph);
  if (!verified.is_ok()) return make_error("invalid graph: " + verified.error().message, where);
  const tsr::Metadata& m = file.metadata();
  doc.metadata.producer = m.producer();
  doc.metadata.engine_version = m.engine_version();
  doc.metadata.created_unix_ms = m.created_unix_ms();
  for (const tsr::Property& p : m.properties()) doc.metadata.properties[p.key()] = p.value();
  doc.metadata.content_hash = graph_content_hash(doc.graph);
  if (!m.content_hash().empty() && m.content_hash() != doc.metadata.content_hash)
    return make_error("content hash mismatch: the file records " + m.content_hash() + " but its graph hashes to " +
                          doc.metadata.content_hash + " (the file was modified or is corrupt)",
                      where);
  for (const tsr::Position& p : file.layout().positions()) {
    if (!doc.layout.positions.emplace(p.node(), NodePosition{p.x(), p.y()}).second)
      return make_error("layout: node #" + std::to_string(p.node()) + " has two positions", where);
  }
  for (const tsr::Group& pg : file.layout().groups())
    doc.layout.groups.push_back({pg.name(), {pg.nodes().begin(), pg.nodes().end()}, pg.collapsed()});
  RETURN_IF_ERROR(check_layout(doc.layout, doc.graph, where));
  return doc;
}

Expected<GraphDocument> read_tsr(const std::string& path) {
  TRY(std::string bytes, read_file(path));
  return parse_tsr(bytes.data(), bytes.size(), path, parent_dir(path));
}

Expected<std::string> encode_tsr(const GraphDocument& doc, const TsrSaveOptions& options) {
  Writer w{options, false, {}};
  return encode(doc, options, w, "", "<memory>");
}

Status write_tsr(const GraphDocument& doc, const std::string& path, const TsrSaveOptions& options) {
  RETURN_IF_ERROR(check_layout(doc.layout, doc.graph, path));
  Writer w{options, false, {}};
  w.external = options.force_external || total_weight_bytes(doc.graph) > options.external_threshold_bytes;
  const std::string side_name = base_name(path) + ".data";
  TRY(std::string bytes, encode(doc, options, w, side_name, path));
  if (!w.side.empty()) RETURN_IF_ERROR(write_file_atomic(join_path(parent_dir(path), side_name), w.side));
  return write_file_atomic(path, bytes);
}

}  // namespace tessera::formats
