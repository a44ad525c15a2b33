// A graph as a file holds it: the IR graph plus what the file carries around it (metadata and the
// studio's layout). The native .tsr format and the JSON form carry all of it; ONNX and the IR text
// form carry the graph only (load gives empty metadata and layout).
//
// Usage:
//   TRY(formats::GraphDocument doc, formats::load_document("lenet.tsr"));
//   doc.layout.positions[3] = {120.0, 40.0};
//   RETURN_IF_ERROR(formats::save_document(doc, "lenet.json"));   // same graph, metadata, layout
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::formats {

struct NodePosition {
  double x = 0;
  double y = 0;
  bool operator==(const NodePosition& o) const { return x == o.x && y == o.y; }
};

struct NodeGroup {
  std::string name;
  std::vector<ir::NodeId> nodes;
  bool collapsed = false;
  bool operator==(const NodeGroup& o) const {
    return name == o.name && nodes == o.nodes && collapsed == o.collapsed;
  }
};

// Positions and groups refer to nodes of the top-level graph by id.
struct Layout {
  std::map<ir::NodeId, NodePosition> positions;
  std::vector<NodeGroup> groups;
  bool empty() const { return positions.empty() && groups.empty(); }
  bool operator==(const Layout& o) const { return positions == o.positions && groups == o.groups; }
};

struct Metadata {
  std::string producer;        // who wrote the file ("tessera convert", "tessera-studio")
  std::string engine_version;  // the writer's TESSERA_VERSION
  std::string content_hash;    // ir::structural_hash of the graph, 16 hex digits
  int64_t created_unix_ms = 0;
  std::map<std::string, std::string> properties;
  bool operator==(const Metadata& o) const {
    return producer == o.producer && engine_version == o.engine_version && content_hash == o.content_hash &&
           created_unix_ms == o.created_unix_ms && properties == o.properties;
  }
};

struct GraphDocument {
  ir::Graph graph;
  Metadata metadata;
  Layout layout;
};

// 16 lowercase hex digits, zero-padded: how formats print hashes and checksums.
std::string hex16(uint64_t v);

// hex16 of ir::structural_hash(graph): what Metadata::content_hash holds.
std::string graph_content_hash(const ir::Graph& graph);

// Checks that every position and group names a live node of the top-level graph.
Status check_layout(const Layout& layout, const ir::Graph& graph, const std::string& where);

// By extension: .tsr and .json keep metadata and layout; .onnx and .tir keep the graph only.
Expected<GraphDocument> load_document(const std::string& path);
Status save_document(const GraphDocument& doc, const std::string& path);
// load_document, then every type inferred (ops::infer_types); an error points at the node's place
// in the file when the loader recorded it (a JSON pointer), else names the file.
Expected<GraphDocument> load_typed_document(const std::string& path, const ops::OpRegistry& registry);

}  // namespace tessera::formats
