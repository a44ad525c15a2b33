// The JSON graph format, writing side: unique value names, inline or side-file params,
// attributes in the forms the reader maps back to the same kinds, atomic writes.
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "engine/core/strings.h"
#include "formats/file_io.h"
#include "formats/json_data.h"
#include "formats/json_graph.h"
#include "formats/npy.h"

namespace tessera::formats {
namespace {

using json_detail::Json;

constexpr char kFormatName[] = "tessera-graph";
constexpr int kFormatVersion = 1;

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

Json floats_json(const std::vector<double>& v) {
  Json arr = Json::array();
  for (double x : v) arr.push_back(json_detail::float_to_json(x, DType::kF64));
  return arr;
}

class Saver {
 public:
  Saver(const JsonSaveOptions& options, std::string path) : options_(options), path_(std::move(path)) {}

  // `ptr` is the graph's JSON pointer in the file being written ("" for the top level): an origin
  // that is the node's own place in this file is left out (the loader gives it back).
  Expected<Json> graph_json(const ir::Graph& g, bool top, const std::string& ptr = "") {
    TRY(auto names, assign_names(g));
    auto name_of = [&](ir::ValueId v) -> Expected<std::string> {
      if (!g.has_value(v)) return make_error("refers to value %" + std::to_string(v) + ", which does not exist");
      return names.at(v);
    };
    Json j = Json::object();
    if (top) {
      j["format"] = kFormatName;
      j["version"] = kFormatVersion;
    }
    j["name"] = g.name();
    Json inputs = Json::array();
    for (ir::ValueId v : g.inputs())
      inputs.push_back(Json{{"name", names.at(v)}, {"type", g.value(v).type.to_string()}});
    j["inputs"] = std::move(inputs);
    Json params = Json::array();
    for (ir::ValueId v : g.params()) {
      const Tensor* data = g.param_data(v);
      if (data == nullptr) return error("param '" + names.at(v) + "' has no data");
      Json p = Json::object();
      p["name"] = names.at(v);
      p["type"] = ir::TensorType::of(data->dtype(), data->shape()).to_string();
      if (options_.inline_limit >= 0 && data->numel() > options_.inline_limit &&
          data->dtype() != DType::kBF16) {
        const std::string key = unique_key(names.at(v));
        p["npz"] = key;
        weights_.emplace(key, *data);
      } else {
        p["data"] = json_detail::tensor_data_to_json(*data);
      }
      params.push_back(std::move(p));
    }
    if (top || !params.empty()) j["params"] = std::move(params);
    if (top) j["weights_file"] = nullptr;  // placeholder keeps the field's place; set or erased later
    if (!top && !g.captures().empty()) {
      Json captures = Json::array();
      for (ir::ValueId v : g.captures())
        captures.push_back(Json{{"name", names.at(v)}, {"type", g.value(v).type.to_string()}});
      j["captures"] = std::move(captures);
    }
    Json nodes = Json::array();
    int index = 0;
    for (ir::NodeId id : g.node_ids()) {
      const ir::Node& n = g.node(id);
      Json node = Json::object();
      const std::string node_ptr = ptr + "/nodes/" + std::to_string(index);
      if (id != index) node["id"] = id;
      ++index;
      node["op"] = n.op;
      if (!n.name.empty()) node["name"] = n.name;
      Json ins = Json::array();
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] == ir::kNoValue) {
          ins.push_back("");
          continue;
        }
        auto nm = name_of(n.inputs[k]);
        if (!nm) return error("node #" + std::to_string(id) + " input " + std::to_string(k) + " " + nm.error().message, id);
        ins.push_back(*nm);
      }
      node["inputs"] = std::move(ins);
      Json outs = Json::array();
      for (ir::ValueId v : n.outputs) outs.push_back(names.count(v) ? names.at(v) : "");
      node["outputs"] = std::move(outs);
      if (!n.attrs.empty()) {
        Json attrs = Json::object();
        for (const auto& [key, a] : n.attrs) {
          auto aj = attr_json(a, node_ptr + "/attrs/" + key);
          if (!aj) return Error{"node #" + std::to_string(id) + " attribute '" + key + "': " + aj.error().message, path_, id};
          attrs[key] = std::move(*aj);
        }
        node["attrs"] = std::move(attrs);
      }
      if (!n.provenance.from.empty()) node["from"] = n.provenance.from;
      const std::string& origin = n.provenance.origin;
      const std::string own = ":" + node_ptr;
      const bool own_place = origin.size() >= own.size() && origin.compare(origin.size() - own.size(), own.size(), own) == 0;
      if (!own_place) node["origin"] = origin;  // "" too: the loader would put its place there
      nodes.push_back(std::move(node));
    }
    j["nodes"] = std::move(nodes);
    Json outputs = Json::array();
    for (size_t k = 0; k < g.outputs().size(); ++k) {
      auto nm = name_of(g.outputs()[k]);
      if (!nm) return error("graph output " + std::to_string(k) + " " + nm.error().message);
      outputs.push_back(*nm);
    }
    j["outputs"] = std::move(outputs);
    return j;
  }

  const std::map<std::string, Tensor>& weights() const { return weights_; }

 private:
  Error error(const std::string& msg, int node = -1) const { return make_error(msg, path_, node); }

  // JSON names for the graph's values: the value's own name when it is non-empty and not taken
  // yet; otherwise a fresh one. Captures keep their names (they are resolved by name). Unnamed
  // node outputs that nothing uses stay unnamed ("").
  Expected<std::unordered_map<ir::ValueId, std::string>> assign_names(const ir::Graph& g) const {
    std::unordered_map<ir::ValueId, std::string> names;
    std::set<std::string> taken;
    for (ir::ValueId v : g.captures()) {
      const std::string& n = g.value(v).name;
      if (n.empty() || !taken.insert(n).second)
        return error("capture %" + std::to_string(v) + " needs a unique, non-empty name (captures are resolved by name)");
      names[v] = n;
    }
    std::vector<ir::ValueId> unnamed;
    for (ir::ValueId v = 0; v < g.value_capacity(); ++v) {
      if (!g.has_value(v) || names.count(v)) continue;
      const std::string& n = g.value(v).name;
      if (!n.empty() && taken.insert(n).second) {
        names[v] = n;
      } else {
        unnamed.push_back(v);
      }
    }
    std::set<ir::ValueId> used(g.outputs().begin(), g.outputs().end());
    for (ir::NodeId id : g.node_ids())
      for (ir::ValueId v : g.node(id).inputs) used.insert(v);
    for (ir::ValueId v : unnamed) {
      const ir::Value& val = g.value(v);
      if (val.name.empty() && val.kind == ir::ValueKind::kNodeOutput && used.count(v) == 0) {
        names[v] = "";
        continue;
      }
      std::string base = (val.name.empty() ? "v" : val.name) + "_" + std::to_string(v);
      std::string n = base;
      for (int k = 2; taken.count(n) != 0; ++k) n = base + "_" + std::to_string(k);
      taken.insert(n);
      names[v] = n;
    }
    return names;
  }

  std::string unique_key(const std::string& name) {
    std::string key = name.empty() ? "param" : name;
    for (int k = 2; weights_.count(key) != 0; ++k) key = name + "#" + std::to_string(k);
    return key;
  }

  Expected<Json> attr_json(const ir::Attribute& a, const std::string& ptr) {
    switch (a.kind()) {
      case ir::AttrKind::kInt: return Json(a.i());
      case ir::AttrKind::kFloat:
        if (!std::isfinite(a.f())) return Json{{"float", json_detail::float_to_json(a.f(), DType::kF64)}};
        return Json(a.f());
      case ir::AttrKind::kString: return Json(a.s());
      case ir::AttrKind::kInts: return Json(a.ints());
      case ir::AttrKind::kFloats:
        if (a.floats().empty() || !all_finite(a.floats())) return Json{{"floats", floats_json(a.floats())}};
        return floats_json(a.floats());
      case ir::AttrKind::kStrings:
        if (a.strings().empty()) return Json{{"strings", Json::array()}};
        return Json(a.strings());
      case ir::AttrKind::kTensor: {
        const Tensor& t = a.t();
        Json body = Json::object();
        body["type"] = ir::TensorType::of(t.dtype(), t.shape()).to_string();
        body["data"] = json_detail::tensor_data_to_json(t);
        return Json{{"tensor", std::move(body)}};
      }
      case ir::AttrKind::kGraph: {
        TRY(Json g, graph_json(a.g(), false, ptr + "/graph"));
        return Json{{"graph", std::move(g)}};
      }
    }
    return make_error("unknown attribute kind");
  }

  const JsonSaveOptions& options_;
  std::string path_;
  std::map<std::string, Tensor> weights_;
};

std::string side_file_path(const std::string& path) {
  const std::string ext = ".json";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    return path.substr(0, path.size() - ext.size()) + ".npz";
  return path + ".npz";
}

Json metadata_json(const Metadata& m) {
  Json j = Json::object();
  if (!m.producer.empty()) j["producer"] = m.producer;
  if (!m.engine_version.empty()) j["engine_version"] = m.engine_version;
  if (m.created_unix_ms != 0) j["created_unix_ms"] = m.created_unix_ms;
  if (!m.properties.empty()) j["properties"] = m.properties;
  return j;
}

Json layout_json(const Layout& l) {
  Json j = Json::object();
  if (!l.positions.empty()) {
    Json pos = Json::object();
    for (const auto& [id, p] : l.positions)
      pos[std::to_string(id)] = Json::array({json_detail::float_to_json(p.x, DType::kF64),
                                             json_detail::float_to_json(p.y, DType::kF64)});
    j["positions"] = std::move(pos);
  }
  if (!l.groups.empty()) {
    Json groups = Json::array();
    for (const NodeGroup& g : l.groups) groups.push_back(Json{{"name", g.name}, {"nodes", g.nodes}, {"collapsed", g.collapsed}});
    j["groups"] = std::move(groups);
  }
  return j;
}

// Every string of the document (names, attributes, string tensors) is UTF-8, or the file is not
// written: JSON text cannot hold other bytes, and nlohmann's writer would turn them into U+FFFD.
Status check_utf8(const Json& j, const std::string& pointer) {
  if (j.is_string()) {
    if (!is_valid_utf8(j.get_ref<const std::string&>()))
      return make_error("a string that is not valid UTF-8 (JSON text cannot hold its bytes; .tsr and .tir keep them)",
                        pointer.empty() ? "/" : pointer);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) RETURN_IF_ERROR(check_utf8(j[i], pointer + "/" + std::to_string(i)));
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!is_valid_utf8(it.key()))
        return make_error("a key that is not valid UTF-8 (JSON text cannot hold its bytes)", pointer.empty() ? "/" : pointer);
      RETURN_IF_ERROR(check_utf8(it.value(), pointer + "/" + it.key()));
    }
  }
  return Status::ok();
}

Status save_json(const ir::Graph& graph, const Metadata* meta, const Layout* layout, const std::string& path,
                 const JsonSaveOptions& options) {
  try {
    Saver saver(options, path);
    TRY(Json root, saver.graph_json(graph, true));
    if (meta != nullptr) {
      Json m = metadata_json(*meta);
      if (!m.empty()) root["metadata"] = std::move(m);
    }
    if (layout != nullptr && !layout->empty()) {
      RETURN_IF_ERROR(check_layout(*layout, graph, path));
      root["layout"] = layout_json(*layout);
    }
    if (Status st = check_utf8(root, ""); !st.is_ok()) {
      Error e = st.error();
      return make_error(e.message, path + ":" + e.where);
    }
    if (saver.weights().empty()) {
      root.erase("weights_file");
    } else {
      const std::string npz = side_file_path(path);
      root["weights_file"] = base_name(npz);
      RETURN_IF_ERROR(write_npz(npz, saver.weights(), options.compress_weights));
    }
    return write_file_atomic(path, json_detail::dump_pretty(root));
  } catch (const std::bad_alloc&) {
    return make_error("out of memory saving the graph", path);
  } catch (const std::exception& e) {
    return make_error(std::string("internal error saving the graph: ") + e.what(), path);
  }
}

}  // namespace

Status save_json_graph(const ir::Graph& graph, const std::string& path, const JsonSaveOptions& options) {
  return save_json(graph, nullptr, nullptr, path, options);
}

Status save_json_document(const GraphDocument& doc, const std::string& path, const JsonSaveOptions& options) {
  return save_json(doc.graph, &doc.metadata, &doc.layout, path, options);
}

}  // namespace tessera::formats
