// GraphDocument helpers and load/save of documents by extension.
#include "formats/document.h"

#include <cstdio>
#include <set>

#include "engine/ir/hash.h"
#include "engine/ops/infer.h"
#include "formats/graph_file.h"
#include "formats/json_graph.h"
#include "formats/tsr.h"

namespace tessera::formats {
namespace {

bool has_extension(const std::string& path, const std::string& ext) {
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

}  // namespace

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string graph_content_hash(const ir::Graph& graph) { return hex16(ir::structural_hash(graph)); }

Status check_layout(const Layout& layout, const ir::Graph& graph, const std::string& where) {
  for (const auto& [id, pos] : layout.positions) {
    if (!graph.has_node(id))
      return make_error("layout: a position for node #" + std::to_string(id) + ", which the graph does not have", where);
  }
  std::set<std::string> names;
  for (const NodeGroup& g : layout.groups) {
    if (!names.insert(g.name).second) return make_error("layout: two groups named '" + g.name + "'", where);
    for (ir::NodeId id : g.nodes)
      if (!graph.has_node(id))
        return make_error("layout: group '" + g.name + "' lists node #" + std::to_string(id) +
                              ", which the graph does not have",
                          where);
  }
  return Status::ok();
}

Expected<GraphDocument> load_document(const std::string& path) {
  if (has_extension(path, ".tsr")) return read_tsr(path);
  if (has_extension(path, ".json")) return load_json_document(path);
  GraphDocument doc;
  TRY(doc.graph, load_graph_file(path));
  return doc;
}

Status save_document(const GraphDocument& doc, const std::string& path) {
  if (has_extension(path, ".tsr")) return write_tsr(doc, path);
  if (has_extension(path, ".json")) return save_json_document(doc, path);
  RETURN_IF_ERROR(check_layout(doc.layout, doc.graph, path));
  return save_graph_file(doc.graph, path);
}

Expected<GraphDocument> load_typed_document(const std::string& path, const ops::OpRegistry& registry) {
  TRY(GraphDocument doc, load_document(path));
  ir::Graph& g = doc.graph;
  Status st = ops::infer_types(g, registry);
  if (st.is_ok()) return doc;
  Error e = st.error();
  // Point at the node's place in the file (a JSON pointer, say) when the loader recorded it. An
  // origin in another file (a .tsr converted from a .json keeps the .json's places) is told after
  // the message: the error names the file read.
  if (g.has_node(e.node) && !g.node(e.node).provenance.origin.empty()) {
    const std::string& origin = g.node(e.node).provenance.origin;
    if (origin.rfind(path + ":", 0) == 0) {
      e.where = origin;
      return e;
    }
    if (e.message.find(origin) == std::string::npos) e.message += " [from " + origin + "]";
  }
  return e.within(path);
}

}  // namespace tessera::formats
