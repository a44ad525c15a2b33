// The studio's document: the one graph being shown, the file it came from, and what type inference
// said about it. It is the model of model/view (as QtNodes' AbstractGraphModel): the canvas and
// every later panel observe it through its signals and never keep their own copy of the graph.
// It runs headless, so tests drive it without a window. (Later issues add the layout, selection
// and an undo stack of edit commands here.)
//
// Usage:
//   ops::OpRegistry registry = ops::make_default_registry();
//   Document doc(registry);                        // the registry outlives the document
//   Status st = doc.load("samples/lenet.json");    // emits graph_reset() on success
//   if (!st) report(st.to_string());               // the message names the file
//   doc.graph().value(doc.graph().outputs()[0]).type.to_string();   // "f32[N, 10]"
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::studio {

// A graph read from a file with its types inferred as far as inference got.
struct LoadedGraph {
  ir::Graph graph;
  std::string path;
  // Why inference stopped, when it did. A graph whose inference fails still opens (that is when a
  // user most needs to see it); the node named by the error is drawn in red.
  std::optional<Error> inference_error;
  // By ValueId: the value's type is known (declared input or param, or inferred output). Outputs
  // of nodes that inference did not reach keep a meaningless default type and are false here.
  std::vector<bool> typed;
};

// Reads PATH (.json or .tir, by extension), then checks the graph against the registry and infers
// its types. Fails only when the file cannot be read or parsed; the error then names the file.
Expected<LoadedGraph> load_graph(const std::string& path, const ops::OpRegistry& registry);

class Document : public QObject {
  Q_OBJECT

 public:
  explicit Document(const ops::OpRegistry& registry, QObject* parent = nullptr);

  // Replaces the graph with the file's. On failure the document keeps what it had, emits nothing
  // and returns an error whose text names the file.
  Status load(const std::string& path);

  bool is_empty() const { return path_.empty(); }
  const ir::Graph& graph() const { return graph_; }
  const std::string& path() const { return path_; }  // as given to load(); empty when none
  QString file_name() const;                         // the last path component
  const ops::OpRegistry& registry() const { return registry_; }
  const ops::OpDef* op_def(ir::NodeId id) const;  // nullptr for an unknown op

  // Inference: the error that stopped it (absent when every node was typed), the error that
  // concerns node `id` (nullptr when none), and whether value `id` has a known type.
  const std::optional<Error>& inference_error() const { return inference_error_; }
  const Error* node_error(ir::NodeId id) const;
  bool is_typed(ir::ValueId id) const;

  // Number of weight elements: the sum of the element counts of the graph's params.
  int64_t parameter_count() const;

 signals:
  // The whole graph was replaced (a file was opened): observers rebuild from scratch.
  void graph_reset();

 private:
  const ops::OpRegistry& registry_;
  ir::Graph graph_;
  std::string path_;
  std::optional<Error> inference_error_;
  std::map<ir::NodeId, Error> node_errors_;
  std::vector<bool> typed_;
};

}  // namespace tessera::studio
