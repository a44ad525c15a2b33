// The studio's document: loading a graph file, inference results, and the graph_reset signal.
#include "studio/document.h"

#include <QFileInfo>

#include "engine/ops/infer.h"
#include "formats/graph_file.h"

namespace tessera::studio {

namespace {

// Readers name the file in Error.where; make sure the message does even when one forgets.
Error naming_file(Error e, const std::string& path) {
  if (e.to_string().find(path) == std::string::npos) return e.within(path);
  return e;
}

}  // namespace

Expected<LoadedGraph> load_graph(const std::string& path, const ops::OpRegistry& registry) {
  Expected<ir::Graph> read = formats::load_graph_file(path);
  if (!read) return naming_file(read.error(), path);
  LoadedGraph out{std::move(read).value(), path, std::nullopt, {}};
  ir::Graph& graph = out.graph;
  out.typed.assign(static_cast<size_t>(graph.value_capacity()), false);
  for (const auto* list : {&graph.inputs(), &graph.params(), &graph.captures()})
    for (ir::ValueId v : *list)
      if (graph.has_value(v)) out.typed[v] = true;

  // Structural and schema problems first: then no node output has a type yet.
  if (Status checked = ops::check_graph(graph, registry); !checked) {
    out.inference_error = naming_file(checked.error(), path);
    return out;
  }
  const Status inferred = ops::infer_types(graph, registry);
  // infer_types visits the nodes in graph.topological_order() and stops at the first failure, so
  // the nodes before the failing one (in that order) have their types and the rest do not.
  const ir::NodeId failed = inferred ? ir::kNoNode : inferred.error().node;
  if (!inferred && failed == ir::kNoNode) {
    out.inference_error = naming_file(inferred.error(), path);
    return out;
  }
  Expected<std::vector<ir::NodeId>> order = graph.topological_order();
  if (order) {
    for (ir::NodeId id : *order) {
      if (id == failed) break;
      for (ir::ValueId v : graph.node(id).outputs) out.typed[v] = true;
    }
  }
  if (!inferred) out.inference_error = naming_file(inferred.error(), path);
  return out;
}

Document::Document(const ops::OpRegistry& registry, QObject* parent)
    : QObject(parent), registry_(registry) {}

Status Document::load(const std::string& path) {
  TRY(LoadedGraph loaded, load_graph(path, registry_));
  graph_ = std::move(loaded.graph);
  path_ = std::move(loaded.path);
  inference_error_ = std::move(loaded.inference_error);
  typed_ = std::move(loaded.typed);
  node_errors_.clear();
  if (inference_error_ && graph_.has_node(inference_error_->node))
    node_errors_.emplace(inference_error_->node, *inference_error_);
  emit graph_reset();
  return Status::ok();
}

QString Document::file_name() const {
  return QFileInfo(QString::fromStdString(path_)).fileName();
}

const ops::OpDef* Document::op_def(ir::NodeId id) const {
  if (!graph_.has_node(id)) return nullptr;
  return registry_.find(graph_.node(id).op);
}

const Error* Document::node_error(ir::NodeId id) const {
  auto it = node_errors_.find(id);
  return it == node_errors_.end() ? nullptr : &it->second;
}

bool Document::is_typed(ir::ValueId id) const {
  return id >= 0 && id < static_cast<ir::ValueId>(typed_.size()) && typed_[id];
}

int64_t Document::parameter_count() const {
  int64_t total = 0;
  for (ir::ValueId v : graph_.params())
    if (const Tensor* t = graph_.param_data(v)) total += t->numel();
  return total;
}

}  // namespace tessera::studio
