// The JSON graph format, reading side: JSON parsing, validation with JSON-pointer errors, name
// resolution (after all nodes are read, so cycles load and are left to ops::check_graph), the
// side .npz, and the type-string parser.
#include "formats/json_graph.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/data/rng.h"
#include "formats/file_io.h"
#include "formats/json_data.h"
#include "formats/npy.h"

namespace tessera::formats {
namespace {

using json_detail::Json;
using json_detail::pointer_token;

constexpr char kFormatName[] = "tessera-graph";
constexpr int64_t kFormatVersion = 1;
constexpr int kMaxGraphDepth = 32;
// Node ids may have gaps (ids are stable across passes), but an id far beyond the node count
// would make us allocate tombstones for nothing: ids stay below max(65536, 64 * nodes).
constexpr int64_t kMinNodeIdLimit = int64_t{1} << 16;
constexpr int64_t kNodeIdsPerNode = 64;

std::string excerpt(std::string_view s) {
  std::string out(s.substr(0, 60));
  return s.size() > 60 ? out + "..." : out;
}

std::string brief(const Json& j) {
  return excerpt(j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

enum class Kind { kString, kArray, kObject, kInteger };

bool has_kind(const Json& j, Kind k) {
  switch (k) {
    case Kind::kString: return j.is_string();
    case Kind::kArray: return j.is_array();
    case Kind::kObject: return j.is_object();
    case Kind::kInteger: return j.is_number_integer();
  }
  return false;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kString: return "a string";
    case Kind::kArray: return "an array";
    case Kind::kObject: return "an object";
    case Kind::kInteger: return "an integer";
  }
  return "";
}

std::string got(const Json& j) {
  return std::string(j.type_name()) + (j.is_object() || j.is_array() ? "" : " " + brief(j));
}

// Value names of one graph, and the enclosing graphs' (for captures).
struct Scope {
  std::unordered_map<std::string, ir::ValueId> values;
  std::unordered_map<std::string, std::string> defined_at;  // name -> JSON pointer
  const Scope* outer = nullptr;

  bool visible_outside(const std::string& name) const {
    for (const Scope* s = outer; s != nullptr; s = s->outer)
      if (s->values.count(name) != 0) return true;
    return false;
  }
};

struct NameType {
  std::string name;
  ir::TensorType type;
};

class Loader {
 public:
  Loader(std::string file, std::string base_dir)
      : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  Expected<ir::Graph> load(const Json& root) {
    if (!root.is_object()) return error("", "expected a JSON object at the top level, got " + got(root));
    TRY(const Json* format, member(root, "", "format", Kind::kString, true));
    if (format->get<std::string>() != kFormatName)
      return error("/format", "expected \"" + std::string(kFormatName) + "\", got " + brief(*format));
    TRY(const Json* version, member(root, "", "version", Kind::kInteger, true));
    if (version->is_number_unsigned() ? version->get<uint64_t>() != kFormatVersion
                                      : version->get<int64_t>() != kFormatVersion)
      return error("/version", "unsupported version " + brief(*version) + " (this build reads version " +
                                   std::to_string(kFormatVersion) + ")");
    TRY(const Json* weights, member(root, "", "weights_file", Kind::kString, false));
    if (weights != nullptr) {
      weights_file_ = weights->get<std::string>();
      if (weights_file_.empty()) return error("/weights_file", "the side file name is empty");
      collect_npz_keys(root);
    }
    return load_graph(root, "", nullptr, 0, "main");
  }

  // The graph plus "metadata" and "layout" (formats/document.h).
  Expected<GraphDocument> load_document(const Json& root) {
    GraphDocument doc;
    TRY(doc.graph, load(root));
    TRY(const Json* meta, member(root, "", "metadata", Kind::kObject, false));
    if (meta != nullptr) {
      RETURN_IF_ERROR(check_keys(*meta, "/metadata", {"producer", "engine_version", "created_unix_ms", "properties"}));
      TRY(const Json* producer, member(*meta, "/metadata", "producer", Kind::kString, false));
      TRY(const Json* version, member(*meta, "/metadata", "engine_version", Kind::kString, false));
      TRY(const Json* created, member(*meta, "/metadata", "created_unix_ms", Kind::kInteger, false));
      TRY(const Json* props, member(*meta, "/metadata", "properties", Kind::kObject, false));
      if (producer) doc.metadata.producer = producer->get<std::string>();
      if (version) doc.metadata.engine_version = version->get<std::string>();
      if (created) {
        if (created->is_number_unsigned() && created->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
          return error("/metadata/created_unix_ms", "out of range");
        doc.metadata.created_unix_ms = created->get<int64_t>();
      }
      if (props != nullptr) {
        for (auto it = props->cbegin(); it != props->cend(); ++it) {
          if (!it->is_string())
            return error("/metadata/properties/" + pointer_token(it.key()), "expected a string, got " + got(*it));
          doc.metadata.properties[it.key()] = it->get<std::string>();
        }
      }
    }
    doc.metadata.content_hash = graph_content_hash(doc.graph);
    TRY(const Json* layout, member(root, "", "layout", Kind::kObject, false));
    if (layout != nullptr) RETURN_IF_ERROR(load_layout(*layout, doc));
    return doc;
  }

 private:
  // "layout": {"positions": {"<node id>": [x, y], ...}, "groups": [{"name", "nodes", "collapsed"}]}
  Status load_layout(const Json& layout, GraphDocument& doc) {
    RETURN_IF_ERROR(check_keys(layout, "/layout", {"positions", "groups"}));
    TRY(const Json* positions, member(layout, "/layout", "positions", Kind::kObject, false));
    static const Json kNoPositions = Json::object();
    if (positions == nullptr) positions = &kNoPositions;
    for (auto it = positions->cbegin(); it != positions->cend(); ++it) {
      const std::string p = "/layout/positions/" + pointer_token(it.key());
      const std::string& key = it.key();
      if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos)
        return error(p, "expected a node id as the key, got \"" + excerpt(key) + "\"");
      const int id = std::stoi(key);
      if (!doc.graph.has_node(id)) return error(p, "the graph has no node " + key);
      const Json& xy = *it;
      if (!xy.is_array() || xy.size() != 2 || !xy[0].is_number() || !xy[1].is_number())
        return error(p, "expected [x, y], got " + got(xy));
      doc.layout.positions[id] = NodePosition{xy[0].get<double>(), xy[1].get<double>()};
    }
    TRY(const Json* groups, member(layout, "/layout", "groups", Kind::kArray, false));
    for (size_t k = 0; groups != nullptr && k < groups->size(); ++k) {
      const std::string p = "/layout/groups/" + std::to_string(k);
      const Json& gj = (*groups)[k];
      if (!gj.is_object()) return error(p, "expected a group object, got " + got(gj));
      RETURN_IF_ERROR(check_keys(gj, p, {"name", "nodes", "collapsed"}));
      TRY(const Json* name, member(gj, p, "name", Kind::kString, true));
      TRY(const Json* nodes, member(gj, p, "nodes", Kind::kArray, true));
      NodeGroup group;
      group.name = name->get<std::string>();
      for (size_t i = 0; i < nodes->size(); ++i) {
        const Json& n = (*nodes)[i];
        const std::string pn = p + "/nodes/" + std::to_string(i);
        if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > INT32_MAX ||
            !doc.graph.has_node(static_cast<int>(n.get<int64_t>())))
          return error(pn, "expected the id of a node of the graph, got " + got(n));
        group.nodes.push_back(static_cast<int>(n.get<int64_t>()));
      }
      auto c = gj.find("collapsed");
      if (c != gj.end()) {
        if (!c->is_boolean()) return error(p + "/collapsed", "expected true or false, got " + got(*c));
        group.collapsed = c->get<bool>();
      }
      doc.layout.groups.push_back(std::move(group));
    }
    return check_layout(doc.layout, doc.graph, file_ + ":/layout");
  }

  Error error(const std::string& ptr, std::string msg, int node = -1) const {
    return make_error(std::move(msg), ptr.empty() ? file_ : file_ + ":" + ptr, node);
  }
  // An error from json_detail, whose `where` is relative to `ptr`.
  Error relocate(const Error& e, const std::string& ptr, int node = -1) const {
    return error(ptr + e.where, e.message, node);
  }

  Expected<const Json*> member(const Json& obj, const std::string& ptr, const char* key, Kind kind,
                               bool required, int node = -1) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) return error(ptr, "missing field \"" + std::string(key) + "\"", node);
      return nullptr;
    }
    if (!has_kind(*it, kind))
      return error(ptr + "/" + key, std::string("expected ") + kind_name(kind) + ", got " + got(*it), node);
    return &*it;
  }

  // Fields not in `allowed` are errors (a typo would otherwise be ignored); keys starting with
  // '_' are comments.
  Status check_keys(const Json& obj, const std::string& ptr, std::initializer_list<const char*> allowed,
                    int node = -1) const {
    for (const auto& item : obj.items()) {
      const std::string& k = item.key();
      if (!k.empty() && k[0] == '_') continue;
      bool ok = false;
      std::string list;
      for (const char* a : allowed) {
        ok = ok || k == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!ok)
        return error(ptr + "/" + pointer_token(k), "unknown field \"" + excerpt(k) + "\" (expected " + list + ")", node);
    }
    return Status::ok();
  }

  Expected<ir::TensorType> read_type(const Json& obj, const std::string& ptr, int node = -1) const {
    TRY(const Json* type, member(obj, ptr, "type", Kind::kString, true, node));
    auto t = parse_tensor_type(type->get<std::string>());
    if (!t) return error(ptr + "/type", t.error().message, node);
    return t;
  }

  Expected<Shape> static_shape(const ir::TensorType& t, const std::string& ptr) const {
    if (!t.is_static())
      return error(ptr, "a constant's type must have known dimensions, got '" + t.to_string() + "'");
    return t.static_shape();
  }

  Expected<NameType> read_name_type(const Json& j, const std::string& ptr) const {
    if (!j.is_object()) return error(ptr, "expected an object with \"name\" and \"type\", got " + got(j));
    RETURN_IF_ERROR(check_keys(j, ptr, {"name", "type"}));
    TRY(const Json* name, member(j, ptr, "name", Kind::kString, true));
    TRY(ir::TensorType type, read_type(j, ptr));
    return NameType{name->get<std::string>(), std::move(type)};
  }

  Status define_name(Scope& scope, const std::string& name, ir::ValueId id, const std::string& ptr,
                     int node = -1) const {
    if (name.empty()) return error(ptr, "a value name must not be empty", node);
    auto [it, fresh] = scope.values.emplace(name, id);
    if (!fresh)
      return error(ptr, "duplicate value name '" + excerpt(name) + "' (first defined at " +
                            scope.defined_at[name] + ")", node);
    scope.defined_at[name] = ptr;
    return Status::ok();
  }

  // The side-file keys the params of every graph (nested ones too) name: only those members of the
  // .npz are inflated. An explicit stack: JSON nesting is not bounded here.
  void collect_npz_keys(const Json& root) {
    std::vector<const Json*> todo{&root};
    while (!todo.empty()) {
      const Json* j = todo.back();
      todo.pop_back();
      if (j->is_object()) {
        auto params = j->find("params");
        if (params != j->end() && params->is_array())
          for (const Json& p : *params)
            if (p.is_object())
              if (auto k = p.find("npz"); k != p.end() && k->is_string()) npz_keys_.insert(k->get<std::string>());
        for (const auto& item : j->items()) todo.push_back(&item.value());
      } else if (j->is_array()) {
        for (const Json& v : *j) todo.push_back(&v);
      }
    }
  }

  Expected<const std::map<std::string, Tensor>*> weights(const std::string& ref_ptr) {
    if (weights_) return &*weights_;
    if (weights_file_.empty())
      return error(ref_ptr, "the param refers to the side file, but the graph has no \"weights_file\"");
    auto m = read_npz(join_path(base_dir_, weights_file_), &npz_keys_);
    if (!m) return error("/weights_file", "cannot read the side file: " + m.error().to_string());
    weights_ = std::move(*m);
    return &*weights_;
  }

  // "init": {"uniform": B, "seed": S} draws element i as B * (2u - 1), u = (z >> 11) / 2^53 where z
  // is SplitMix64's output for the counter S + (i + 1) * golden (engine/data/rng.h), in double
  // precision, then rounds it to the param's type: the same bytes on every machine and in NumPy.
  // "init": {"constant": C} fills with C. For networks whose weights are not worth shipping.
  Expected<Tensor> read_param_init(const Json& init, const std::string& ptr, const ir::TensorType& type, const Shape& shape) {
    if (!is_float(type.dtype)) return error(ptr, "\"init\" makes floating-point params only, this one is " + type.to_string());
    if (!init.is_object() || !(init.contains("uniform") || init.contains("constant")))
      return error(ptr, "expected {\"uniform\": BOUND, \"seed\": SEED} or {\"constant\": VALUE}, got " + got(init));
    const bool uniform = init.contains("uniform");
    if (uniform) RETURN_IF_ERROR(check_keys(init, ptr, {"uniform", "seed"}));
    else RETURN_IF_ERROR(check_keys(init, ptr, {"constant"}));
    const Json& v = init.at(uniform ? "uniform" : "constant");
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      return error(ptr + (uniform ? "/uniform" : "/constant"), "expected a finite number, got " + got(v));
    const double x = v.get<double>();
    if (uniform && !(x > 0)) return error(ptr + "/uniform", "the bound must be positive, got " + got(v));
    uint64_t seed = 0;
    if (uniform && init.contains("seed")) {
      const Json& sj = init.at("seed");
      if (!sj.is_number_integer() || (!sj.is_number_unsigned() && sj.get<int64_t>() < 0))
        return error(ptr + "/seed", "expected a non-negative integer, got " + got(sj));
      seed = sj.get<uint64_t>();
    }
    auto t = Tensor::create(type.dtype, shape);
    if (!t) return error(ptr, t.error().message);
    for (int64_t i = 0; i < t->numel(); ++i) {
      if (!uniform) {
        t->set(i, x);
        continue;
      }
      const uint64_t z = data::Rng::mix(seed + static_cast<uint64_t>(i + 1) * data::Rng::kGolden);
      const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
      t->set(i, x * (2.0 * u - 1.0));
    }
    return std::move(*t);
  }

  Expected<Tensor> read_param_data(const Json& p, const std::string& ptr, const ir::TensorType& type) {
    TRY(Shape shape, static_shape(type, ptr + "/type"));
    auto data_it = p.find("data");
    TRY(const Json* npz, member(p, ptr, "npz", Kind::kString, false));
    if (auto init = p.find("init"); init != p.end()) {
      if (data_it != p.end() || npz != nullptr) return error(ptr, "a param has one of \"data\", \"npz\" and \"init\", not two");
      return read_param_init(*init, ptr + "/init", type, shape);
    }
    if (data_it != p.end() && npz != nullptr)
      return error(ptr, "a param has either \"data\" or \"npz\", not both");
    if (data_it != p.end()) {
      auto t = json_detail::tensor_from_json(*data_it, type.dtype, shape);
      if (!t) return relocate(t.error(), ptr + "/data");
      return t;
    }
    if (npz == nullptr)
      return error(ptr, "a param needs \"data\" (inline values), \"npz\" (a key of the side file) or \"init\" (drawn at load)");
    TRY(const auto* arrays, weights(ptr + "/npz"));
    const std::string key = npz->get<std::string>();
    auto it = arrays->find(key);
    if (it == arrays->end())
      return error(ptr + "/npz", "the side file " + weights_file_ + " has no array '" + excerpt(key) + "'");
    const Tensor& t = it->second;
    if (t.dtype() != type.dtype || t.shape() != shape)
      return error(ptr + "/npz", "the side file's array '" + excerpt(key) + "' is " +
                                     ir::TensorType::of(t.dtype(), t.shape()).to_string() +
                                     " but the param is declared " + type.to_string());
    return t;
  }

  Expected<std::vector<int64_t>> read_ints(const Json& arr, const std::string& ptr, int node) const {
    std::vector<int64_t> out;
    for (size_t k = 0; k < arr.size(); ++k) {
      const Json& e = arr[k];
      if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<uint64_t>() > INT64_MAX))
        return error(ptr + "/" + std::to_string(k), "expected an integer, got " + got(e), node);
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

  Expected<std::vector<double>> read_floats(const Json& arr, const std::string& ptr, int node) const {
    std::vector<double> out;
    for (size_t k = 0; k < arr.size(); ++k) {
      double v;
      if (!json_detail::json_to_float(arr[k], &v))
        return error(ptr + "/" + std::to_string(k), "expected a number, got " + got(arr[k]), node);
      out.push_back(v);
    }
    return out;
  }

  Expected<std::vector<std::string>> read_strings(const Json& arr, const std::string& ptr, int node) const {
    std::vector<std::string> out;
    for (size_t k = 0; k < arr.size(); ++k) {
      if (!arr[k].is_string())
        return error(ptr + "/" + std::to_string(k), "expected a string, got " + got(arr[k]), node);
      out.push_back(arr[k].get<std::string>());
    }
    return out;
  }

  // A list attribute: ints when every element is an integer (and for []), floats when every
  // element is a number, strings when every element is a string.
  Expected<ir::Attribute> read_list(const Json& arr, const std::string& ptr, int node) const {
    bool all_int = true, all_num = true, all_str = true;
    for (const Json& e : arr) {
      all_int = all_int && e.is_number_integer();
      all_num = all_num && e.is_number();
      all_str = all_str && e.is_string();
    }
    if (all_int) {
      TRY(std::vector<int64_t> v, read_ints(arr, ptr, node));
      return ir::Attribute(std::move(v));
    }
    if (all_num) {
      TRY(std::vector<double> v, read_floats(arr, ptr, node));
      return ir::Attribute(std::move(v));
    }
    if (all_str) {
      TRY(std::vector<std::string> v, read_strings(arr, ptr, node));
      return ir::Attribute(std::move(v));
    }
    return error(ptr, "a list attribute holds only numbers or only strings (for non-finite floats "
                      "write {\"floats\": [...]})", node);
  }

  Expected<ir::Attribute> read_attr(const Json& v, const std::string& ptr, const std::string& name,
                                    const Scope& scope, int depth, int node) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)
        return error(ptr, "integer " + brief(v) + " does not fit in 64 bits", node);
      return ir::Attribute(v.get<int64_t>());
    }
    if (v.is_number_float()) return ir::Attribute(v.get<double>());
    if (v.is_string()) return ir::Attribute(v.get<std::string>());
    if (v.is_array()) return read_list(v, ptr, node);
    if (!v.is_object())
      return error(ptr, "an attribute is a number, a string, a list or an object, got " + got(v) +
                            (v.is_boolean() ? " (write 0 or 1)" : ""), node);
    if (v.size() != 1)
      return error(ptr, "an attribute object has exactly one key: tensor, graph, int, float, "
                        "string, ints, floats or strings", node);
    const std::string key = v.begin().key();
    const Json& body = v.begin().value();
    const std::string p = ptr + "/" + pointer_token(key);
    if (key == "tensor") {
      if (!body.is_object()) return error(p, "expected an object with \"type\" and \"data\", got " + got(body), node);
      RETURN_IF_ERROR(check_keys(body, p, {"type", "data"}, node));
      TRY(ir::TensorType type, read_type(body, p, node));
      auto shape = static_shape(type, p + "/type");
      if (!shape) return Error{shape.error().message, shape.error().where, node};
      TRY(const Json* data, member(body, p, "data", Kind::kArray, true, node));
      auto t = json_detail::tensor_from_json(*data, type.dtype, *shape);
      if (!t) return relocate(t.error(), p + "/data", node);
      return ir::Attribute(std::move(*t));
    }
    if (key == "graph") {
      if (depth + 1 > kMaxGraphDepth)
        return error(p, "graphs are nested more than " + std::to_string(kMaxGraphDepth) + " deep", node);
      auto g = load_graph(body, p, &scope, depth + 1, name);
      if (!g) return Error{g.error().message, g.error().where, node};  // point at the outer node
      return ir::Attribute(std::move(*g));
    }
    if (key == "int") {
      if (!body.is_number_integer()) return error(p, "expected an integer, got " + got(body), node);
      return read_attr(body, p, name, scope, depth, node);
    }
    if (key == "float") {
      double f;
      if (!json_detail::json_to_float(body, &f)) return error(p, "expected a number, got " + got(body), node);
      return ir::Attribute(f);
    }
    if (key == "string") {
      if (!body.is_string()) return error(p, "expected a string, got " + got(body), node);
      return ir::Attribute(body.get<std::string>());
    }
    if (key == "ints" || key == "floats" || key == "strings") {
      if (!body.is_array()) return error(p, "expected an array, got " + got(body), node);
      if (key == "ints") {
        TRY(std::vector<int64_t> ints, read_ints(body, p, node));
        return ir::Attribute(std::move(ints));
      }
      if (key == "floats") {
        TRY(std::vector<double> floats, read_floats(body, p, node));
        return ir::Attribute(std::move(floats));
      }
      TRY(std::vector<std::string> strings, read_strings(body, p, node));
      return ir::Attribute(std::move(strings));
    }
    return error(p, "unknown attribute kind \"" + excerpt(key) + "\" (expected tensor, graph, int, "
                    "float, string, ints, floats or strings)", node);
  }

  Status load_values(ir::Graph& g, Scope& scope, const Json& j, const std::string& ptr, bool top) {
    TRY(const Json* inputs, member(j, ptr, "inputs", Kind::kArray, false));
    for (size_t i = 0; inputs != nullptr && i < inputs->size(); ++i) {
      const std::string p = ptr + "/inputs/" + std::to_string(i);
      TRY(NameType nt, read_name_type((*inputs)[i], p));
      RETURN_IF_ERROR(define_name(scope, nt.name, g.value_capacity(), p + "/name"));
      g.add_input(nt.name, nt.type);
    }
    TRY(const Json* params, member(j, ptr, "params", Kind::kArray, false));
    for (size_t i = 0; params != nullptr && i < params->size(); ++i) {
      const std::string p = ptr + "/params/" + std::to_string(i);
      const Json& item = (*params)[i];
      if (!item.is_object()) return error(p, "expected a param object, got " + got(item));
      RETURN_IF_ERROR(check_keys(item, p, {"name", "type", "data", "npz", "init"}));
      TRY(const Json* name, member(item, p, "name", Kind::kString, true));
      TRY(ir::TensorType type, read_type(item, p));
      TRY(Tensor data, read_param_data(item, p, type));
      RETURN_IF_ERROR(define_name(scope, name->get<std::string>(), g.value_capacity(), p + "/name"));
      g.add_param(name->get<std::string>(), std::move(data));
    }
    if (top) return Status::ok();
    TRY(const Json* captures, member(j, ptr, "captures", Kind::kArray, false));
    for (size_t i = 0; captures != nullptr && i < captures->size(); ++i) {
      const std::string p = ptr + "/captures/" + std::to_string(i);
      TRY(NameType nt, read_name_type((*captures)[i], p));
      if (!nt.name.empty() && !scope.visible_outside(nt.name))
        return error(p + "/name", "the capture '" + excerpt(nt.name) + "' names no value of an enclosing graph");
      RETURN_IF_ERROR(define_name(scope, nt.name, g.value_capacity(), p + "/name"));
      g.add_capture(nt.name, nt.type);
    }
    return Status::ok();
  }

  struct PendingNode {
    const Json* json;
    std::string ptr;
    ir::NodeId id;
  };

  // Phase 1: ids, ops, names and outputs of every node, so that inputs can name any of them.
  Expected<std::vector<PendingNode>> declare_nodes(ir::Graph& g, Scope& scope, const Json& nodes,
                                                   const std::string& ptr) {
    const int64_t id_limit =
        std::max<int64_t>(kMinNodeIdLimit, kNodeIdsPerNode * static_cast<int64_t>(nodes.size()));
    std::map<int64_t, std::string> id_at;
    std::vector<PendingNode> pending;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string p = ptr + "/nodes/" + std::to_string(i);
      const Json& n = nodes[i];
      if (!n.is_object()) return error(p, "expected a node object, got " + got(n));
      TRY(const Json* id_json, member(n, p, "id", Kind::kInteger, false));
      int64_t id = static_cast<int64_t>(i);
      if (id_json != nullptr) {
        const bool too_big = id_json->is_number_unsigned() && id_json->get<uint64_t>() > INT64_MAX;
        id = too_big ? id_limit : id_json->get<int64_t>();
        if (id < 0 || id >= id_limit)
          return error(p + "/id", "node id " + brief(*id_json) + " is out of range (0 to " +
                                      std::to_string(id_limit - 1) + " for a graph of " +
                                      std::to_string(nodes.size()) + " nodes)");
      }
      const int node = static_cast<int>(id);
      auto [it, fresh] = id_at.emplace(id, p);
      if (!fresh)
        return error(id_json ? p + "/id" : p,
                     "node id " + std::to_string(id) + (id_json ? "" : " (its index, as it has no \"id\")") +
                         " is already used by " + it->second, node);
      RETURN_IF_ERROR(check_keys(n, p, {"id", "op", "name", "inputs", "outputs", "attrs", "from", "origin"}, node));
      TRY(const Json* op, member(n, p, "op", Kind::kString, true, node));
      if (op->get<std::string>().empty()) return error(p + "/op", "the op name is empty", node);
      TRY(const Json* name, member(n, p, "name", Kind::kString, false, node));
      TRY(const Json* outputs, member(n, p, "outputs", Kind::kArray, true, node));
      ir::Node def;
      def.op = op->get<std::string>();
      def.name = name ? name->get<std::string>() : "";
      TRY(const Json* origin, member(n, p, "origin", Kind::kString, false, node));
      def.provenance.origin = origin ? origin->get<std::string>() : file_ + ":" + p;
      for (size_t k = 0; k < outputs->size(); ++k) {
        const std::string po = p + "/outputs/" + std::to_string(k);
        const Json& o = (*outputs)[k];
        if (!o.is_string()) return error(po, "expected a value name, got " + got(o), node);
        ir::Value v;
        v.name = o.get<std::string>();
        v.kind = ir::ValueKind::kNodeOutput;
        v.producer = node;
        v.producer_output = static_cast<int>(k);
        v.type = ir::TensorType::unranked(DType::kF32);
        const ir::ValueId vid = g.value_capacity();
        if (!v.name.empty()) RETURN_IF_ERROR(define_name(scope, v.name, vid, po, node));
        RETURN_IF_ERROR(g.define_value(vid, std::move(v)));
        def.outputs.push_back(vid);
      }
      Status st = g.define_node(node, std::move(def));
      if (!st) return error(p, st.error().message, node);
      pending.push_back({&n, p, node});
    }
    return pending;
  }

  // Phase 2: inputs by name, attributes, provenance.
  Status complete_node(ir::Graph& g, const Scope& scope, const PendingNode& pn, int depth) {
    const Json& n = *pn.json;
    const std::string& p = pn.ptr;
    const int node = pn.id;
    std::vector<ir::ValueId> inputs;
    TRY(const Json* ins, member(n, p, "inputs", Kind::kArray, false, node));
    for (size_t k = 0; ins != nullptr && k < ins->size(); ++k) {
      const std::string pi = p + "/inputs/" + std::to_string(k);
      const Json& in = (*ins)[k];
      if (!in.is_string()) return error(pi, "expected a value name (\"\" for an absent input), got " + got(in), node);
      const std::string name = in.get<std::string>();
      if (name.empty()) {
        inputs.push_back(ir::kNoValue);
        continue;
      }
      auto it = scope.values.find(name);
      if (it == scope.values.end())
        return error(pi, "undefined value '" + excerpt(name) + "'" +
                             (scope.visible_outside(name) ? " (list it in \"captures\" to use an enclosing graph's value)" : ""),
                     node);
      inputs.push_back(it->second);
    }
    ir::Attributes attrs;
    TRY(const Json* attrs_json, member(n, p, "attrs", Kind::kObject, false, node));
    if (attrs_json != nullptr) {
      for (const auto& item : attrs_json->items()) {
        const std::string pa = p + "/attrs/" + pointer_token(item.key());
        TRY(ir::Attribute a, read_attr(item.value(), pa, item.key(), scope, depth, node));
        attrs.insert_or_assign(item.key(), std::move(a));
      }
    }
    std::vector<ir::NodeId> from;
    TRY(const Json* from_json, member(n, p, "from", Kind::kArray, false, node));
    if (from_json != nullptr) {
      TRY(std::vector<int64_t> ids, read_ints(*from_json, p + "/from", node));
      for (size_t k = 0; k < ids.size(); ++k) {
        if (ids[k] < 0 || ids[k] > INT32_MAX)
          return error(p + "/from/" + std::to_string(k), "node id " + std::to_string(ids[k]) + " is out of range", node);
        from.push_back(static_cast<ir::NodeId>(ids[k]));
      }
    }
    ir::Node& def = g.node(node);
    def.inputs = std::move(inputs);
    def.attrs = std::move(attrs);
    def.provenance.from = std::move(from);
    return Status::ok();
  }

  Expected<ir::Graph> load_graph(const Json& j, const std::string& ptr, const Scope* outer, int depth,
                                 const std::string& default_name) {
    if (!j.is_object()) return error(ptr, "expected a graph object, got " + got(j));
    const bool top = depth == 0;
    if (top) {
      RETURN_IF_ERROR(check_keys(j, ptr, {"format", "version", "name", "inputs", "params", "weights_file", "nodes", "outputs",
                                          "metadata", "layout"}));
    } else {
      RETURN_IF_ERROR(check_keys(j, ptr, {"name", "inputs", "params", "captures", "nodes", "outputs"}));
    }
    TRY(const Json* name, member(j, ptr, "name", Kind::kString, false));
    ir::Graph g(name != nullptr ? name->get<std::string>() : default_name);
    Scope scope;
    scope.outer = outer;
    RETURN_IF_ERROR(load_values(g, scope, j, ptr, top));
    TRY(const Json* nodes, member(j, ptr, "nodes", Kind::kArray, false));
    if (nodes != nullptr) {
      TRY(std::vector<PendingNode> pending, declare_nodes(g, scope, *nodes, ptr));
      for (const PendingNode& pn : pending) RETURN_IF_ERROR(complete_node(g, scope, pn, depth));
    }
    TRY(const Json* outputs, member(j, ptr, "outputs", Kind::kArray, false));
    std::vector<ir::ValueId> outs;
    for (size_t k = 0; outputs != nullptr && k < outputs->size(); ++k) {
      const std::string po = ptr + "/outputs/" + std::to_string(k);
      const Json& o = (*outputs)[k];
      if (!o.is_string() || o.get<std::string>().empty())
        return error(po, "expected the name of a value, got " + got(o));
      auto it = scope.values.find(o.get<std::string>());
      if (it == scope.values.end()) return error(po, "undefined value '" + excerpt(o.get<std::string>()) + "'");
      outs.push_back(it->second);
    }
    g.set_outputs(std::move(outs));
    return g;
  }

  std::string file_;
  std::string base_dir_;
  std::string weights_file_;
  std::set<std::string> npz_keys_;
  std::optional<std::map<std::string, Tensor>> weights_;
};

// nlohmann reports "[json.exception.parse_error.101] parse error at line 3, column 5: <reason>".
Error syntax_error(const Json::parse_error& e, const std::string& where) {
  const std::string what = e.what();
  int line = 0, column = 0;
  const size_t at = what.find("at line ");
  if (at != std::string::npos && std::sscanf(what.c_str() + at, "at line %d, column %d", &line, &column) == 2) {
    const size_t colon = what.find(": ", at);
    const std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    return make_error("invalid JSON: " + reason, where + ":" + std::to_string(line) + ":" + std::to_string(column));
  }
  return make_error("invalid JSON: " + what + " (at byte " + std::to_string(e.byte) + ")", where);
}

}  // namespace

Expected<GraphDocument> parse_json_document(const std::string& text, const std::string& where,
                                            const std::string& base_dir) {
  try {
    Json root;
    try {
      root = Json::parse(text);
    } catch (const Json::parse_error& e) {
      return syntax_error(e, where);
    }
    return Loader(where, base_dir).load_document(root);
  } catch (const std::bad_alloc&) {
    return make_error("out of memory loading the graph", where);
  } catch (const std::exception& e) {
    return make_error(std::string("internal error loading the graph: ") + e.what(), where);
  }
}

Expected<ir::Graph> parse_json_graph(const std::string& text, const std::string& where,
                                     const std::string& base_dir) {
  TRY(GraphDocument doc, parse_json_document(text, where, base_dir));
  return std::move(doc.graph);
}

Expected<GraphDocument> load_json_document(const std::string& path) {
  TRY(std::string text, read_file(path));
  return parse_json_document(text, path, parent_dir(path));
}

Expected<ir::Graph> load_json_graph(const std::string& path) {
  TRY(GraphDocument doc, load_json_document(path));
  return std::move(doc.graph);
}

namespace {
Expected<ir::TensorType> parse_plain_tensor_type(std::string_view text);
}

Expected<ir::TensorType> parse_tensor_type(std::string_view text) {
  // seq(T) and opt(T) around a tensor type (opt(seq(T)) for an optional sequence).
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  const bool seq = t.substr(0, 4) == "seq(", opt = t.substr(0, 4) == "opt(";
  if (!seq && !opt) return parse_plain_tensor_type(text);
  if (t.back() != ')') return make_error("cannot parse type '" + excerpt(text) + "': expected ')' at the end");
  TRY(ir::TensorType inner, parse_tensor_type(t.substr(4, t.size() - 5)));
  if (seq && inner.is_tensor()) return inner.as(TypeKind::kSequence);
  if (opt && inner.is_tensor()) return inner.as(TypeKind::kOptional);
  if (opt && inner.kind == TypeKind::kSequence) return inner.as(TypeKind::kOptionalSequence);
  return make_error("cannot parse type '" + excerpt(text) + "': Tessera has sequences of tensors, optional tensors and optional sequences");
}

namespace {
Expected<ir::TensorType> parse_plain_tensor_type(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  auto skip = [&] {
    while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  auto fail = [&](const std::string& why) -> Error {
    return make_error("cannot parse type '" + excerpt(text) + "': " + why);
  };
  skip();
  const size_t start = i;
  while (i < n && std::isalnum(static_cast<unsigned char>(text[i]))) ++i;
  const std::string name(text.substr(start, i - start));
  if (name.empty()) return fail("expected a dtype such as f32");
  const std::optional<DType> dt = dtype_from_name(name);
  if (!dt)
    return make_error("unknown dtype '" + excerpt(name) + "' in type '" + excerpt(text) +
                      "' (known: f32 f16 bf16 f64 i8 u8 i16 u16 i32 u32 i64 u64 bool)");
  skip();
  if (i >= n || text[i] != '[') return fail("expected '[' after the dtype");
  ++i;
  skip();
  ir::TensorType t(*dt, {});
  if (i < n && text[i] == '*') {
    ++i;
    skip();
    if (i >= n || text[i] != ']') return fail("expected ']' after '*'");
    t = ir::TensorType::unranked(*dt);
  } else if (i < n && text[i] == ']') {
    // a scalar
  } else {
    for (;;) {
      skip();
      const char c = i < n ? text[i] : '\0';
      if (std::isdigit(static_cast<unsigned char>(c))) {
        int64_t v = 0;
        while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) {
          const int d = text[i] - '0';
          if (v > (INT64_MAX - d) / 10) return fail("dimension too large");
          v = v * 10 + d;
          ++i;
        }
        t.dims.push_back(ir::Dim::known(v));
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const size_t s = i;
        while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
        t.dims.push_back(ir::Dim::named(std::string(text.substr(s, i - s))));
      } else if (c == '?') {
        ++i;
        t.dims.push_back(ir::Dim::unknown());
      } else {
        return fail("expected a dimension (a size, a symbol or '?')");
      }
      skip();
      if (i < n && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < n && text[i] == ']') break;
      return fail("expected ',' or ']'");
    }
  }
  ++i;  // ']'
  skip();
  if (i != n) return fail("unexpected text after ']'");
  return t;
}
}  // namespace

}  // namespace tessera::formats
