// The studio's document: the graph being edited with its metadata and layout, the file it came
// from, what type inference says about it, and the undo stack of the edits made to it. It is the
// model of model/view (as QtNodes' AbstractGraphModel): the graph's ids are the model's ids, the
// canvas, palette and inspector observe it through its signals and change it only through its edit
// methods, and none of them keeps a copy of the graph. It runs headless, so tests drive it without
// a window.
//
// Every edit method validates first and either pushes one undo command (an EditCommand, see
// studio/edit_commands.h) or returns the reason it is refused, leaving the document, the stack and
// the signals untouched. After every do, undo and redo the document runs type inference on the
// whole graph, then emits the signals below (in this order: node_removed, node_added,
// node_changed, value_changed, edges_changed, terminals_changed, layout_changed, groups_changed,
// types_changed). Observers may query the document from any of them: it is already up to date.
//
// Usage:
//   ops::OpRegistry registry = ops::make_default_registry();
//   Document doc(registry);                        // the registry outlives the document
//   Status st = doc.load("samples/lenet.json");    // emits graph_reset() on success
//   if (!st) report(st.to_string());               // the message names the file
//   TRY(ir::NodeId relu, doc.add_node("Relu", "act", {40, 300}));
//   RETURN_IF_ERROR(doc.connect(doc.graph().outputs()[0], relu, 0));
//   doc.undo_stack().undo();                       // the edge goes, then the node
//   RETURN_IF_ERROR(doc.save("lenet.tsr"));        // .tsr and .json keep the layout
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QUndoStack>
#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/cost.h"
#include "engine/ops/op_def.h"
#include "studio/document/clipboard.h"
#include "studio/document/document_state.h"
#include "studio/document/edits.h"
#include "studio/document/type_analysis.h"

namespace tessera::studio {

class Document : public QObject {
  Q_OBJECT

 public:
  explicit Document(const ops::OpRegistry& registry, QObject* parent = nullptr);
  ~Document() override;

  // ---- files ----
  // Replaces the document with the file's (.tsr, .json, .tir or .onnx, by extension) and clears
  // the undo stack. On failure the document keeps what it had, emits nothing and returns an error
  // whose text names the file. A file that parses but fails type inference still opens.
  Status load(const std::string& path);
  // load() with the reading, type inference and counting on a worker thread, so the window keeps
  // responding: `done` is called on this object's thread with the outcome, after the document
  // changed (graph_reset). A later load_in_background() supersedes this one: its result is
  // dropped and `done` not called. While it runs the document stays as it was.
  void load_in_background(const std::string& path, std::function<void(const Status&)> done);
  bool is_loading() const;
  // Writes the document (by extension: .tsr and .json keep metadata and layout, .tir and .onnx
  // only the graph), then takes PATH as its path and marks the stack clean. Errors name the file.
  Status save(const std::string& path);
  // Replaces the document with a graph already in memory (a pass snapshot, the graph a run
  // recorded) and clears the undo stack; `path` may be empty (unnamed). Emits graph_reset().
  void open(formats::GraphDocument document, const std::string& path = {});
  // An empty, unnamed document; clears the undo stack; emits graph_reset().
  void reset();
  // Writes the document to PATH like save() but keeps its path and the undo stack's clean state
  // (autosaves). Errors name the file.
  Status save_copy(const std::string& path) const;
  // Opens an autosave (written by save_copy) in place of ORIGINAL_PATH: like load(autosave_path),
  // then the path is ORIGINAL_PATH and the document is modified (not yet saved there).
  Status recover(const std::string& autosave_path, const std::string& original_path);

  // For a nested graph shown on its own: the named values of its enclosing graphs and their types
  // (its captures and its own nested graphs' are typed from them). Set before open().
  void set_outer_scope(ops::Scope scope) { outer_ = std::move(scope); }
  const ops::Scope& outer_scope() const { return outer_; }
  // The named values visible to the graphs nested in node `id`: the outer scope and every typed
  // named value of this graph.
  ops::Scope scope_for_nested(ir::NodeId id) const;

  // No file and nothing built: no node, graph input or param.
  bool is_empty() const;
  bool is_modified() const { return !stack_.isClean(); }
  const ir::Graph& graph() const { return state_.graph(); }
  const DocumentState& state() const { return state_; }
  const formats::Layout& layout() const { return state_.layout(); }
  const formats::Metadata& metadata() const { return state_.file.metadata; }
  std::optional<NodePosition> position(ir::NodeId id) const;
  std::optional<NodePosition> value_position(ir::ValueId id) const;
  const std::string& path() const {
    return path_;
  }                           // as given to load() or save(); empty when none
  QString file_name() const;  // the last path component; "Untitled" when none
  const ops::OpRegistry& registry() const { return registry_; }
  const ops::OpDef* op_def(ir::NodeId id) const;  // nullptr for an unknown op
  // For the Edit menu (createUndoAction), the history view, macros. Push only EditCommands.
  QUndoStack& undo_stack() { return stack_; }

  // ---- inference ----
  // The first problem in topological order (named with the file when there is one), absent when
  // every node was typed; the problem of node `id` (a failure, or a required input or attribute
  // missing), nullptr when none; whether value `id` has a known type.
  const std::optional<Error>& inference_error() const { return inference_error_; }
  const Error* node_error(ir::NodeId id) const;
  bool is_incomplete(ir::NodeId id) const;  // its problem is only a missing input or attribute
  bool is_typed(ir::ValueId id) const;
  const TypeAnalysis& analysis() const { return analysis_; }

  // Number of weight elements (ops::weight_elements): params, floating-point Constant nodes, and
  // those of nested graphs (If branches).
  int64_t parameter_count() const;
  // Cost per node: the weight elements it reads (params among its inputs; a param shared by two
  // nodes counts for both), and its FLOPs for one sample (every symbolic dimension bound to 1, as
  // the total in cost()). While type inference fails somewhere, the nodes it typed keep their
  // FLOPs and the others have none (unknown).
  int64_t node_parameter_count(ir::NodeId id) const;
  std::optional<double> node_flops(ir::NodeId id) const;
  const ops::GraphCost* cost() const { return cost_ ? &*cost_ : nullptr; }

  // ---- edits: each pushes one undo command or returns why it is refused (studio/edits.h) ----
  Expected<ir::NodeId> add_node(const std::string& op, const std::string& name = {},
                                NodePosition position = {}, const ir::Attributes& attrs = {});
  Expected<ir::ValueId> add_input(const std::string& name, const ir::TensorType& type,
                                  NodePosition position = {});
  Expected<ir::ValueId> add_param(const std::string& name, const Tensor& data,
                                  NodePosition position = {});
  Status remove_value(ir::ValueId id);  // a graph input or param
  Status set_graph_outputs(const std::vector<ir::ValueId>& outputs);
  Status add_output(ir::ValueId value);     // appended; nothing to do when already an output
  Status remove_output(ir::ValueId value);  // refused when it is not an output
  Status remove_nodes(const std::vector<ir::NodeId>& ids);
  Status connect(ir::ValueId value, ir::NodeId node, int input_index);
  Status disconnect(ir::NodeId node, int input_index);
  Status set_attribute(ir::NodeId node, const std::string& key, const ir::Attribute& value);
  Status clear_attribute(ir::NodeId node, const std::string& key);
  Status rename_node(ir::NodeId node, const std::string& name);
  Status rename_value(ir::ValueId value, const std::string& name);
  Status move_nodes(const std::vector<ir::NodeId>& ids, double dx, double dy);
  Status set_positions(const std::map<ir::NodeId, NodePosition>& positions);
  // Forgets every saved place (one undo step, "Arrange"); the canvas then lays the graph out anew.
  Status clear_positions();
  Status set_value_position(ir::ValueId value, NodePosition position);
  Status group(const std::vector<ir::NodeId>& ids, const std::string& name);
  Status ungroup(const std::string& name);
  Status set_group_collapsed(const std::string& name, bool collapsed);
  // The selection as a clipboard payload (studio/clipboard.h), and pasting one: the new node ids.
  Expected<ClipboardPayload> copy(const std::vector<ir::NodeId>& ids) const;
  Expected<std::vector<ir::NodeId>> paste(const ClipboardPayload& payload, double dx, double dy);
  // Groups the edits made until end_macro() into one undo step ("Add conv layer").
  void begin_macro(const QString& text) { stack_.beginMacro(text); }
  void end_macro() { stack_.endMacro(); }

 Q_SIGNALS:
  // The whole document was replaced (a file was opened, reset()): observers rebuild from scratch.
  void graph_reset();
  void node_added(ir::NodeId id);
  void node_removed(ir::NodeId id);
  // Attributes, name, inputs or the inference problem of a node that stays changed.
  void node_changed(ir::NodeId id);
  // A graph input, param or node output that stays changed its name, data or position.
  void value_changed(ir::ValueId id);
  // Some node input or graph output now refers to another value (or to none).
  void edges_changed();
  // The graph input, param or output lists changed.
  void terminals_changed();
  // These nodes' positions changed (or were set or removed).
  void layout_changed(QList<ir::NodeId> ids);
  void groups_changed();
  // Some value's inferred type, or whether it is typed, changed.
  void types_changed();
  // After every edit, undo and redo, once its other signals are out: whatever the change was (the
  // status bar's counts and the inspector's ports follow it).
  void changed();
  // is_modified() changed (an edit after a save, undo back to the saved state, a save).
  void modified_changed(bool modified);
  // path() changed (save as).
  void path_changed();

 private:
  friend class EditCommand;
  // Writes a patch and updates inference and observers; EditCommand's redo and undo call it with
  // the patch to write (`to`) and the one it replaces (`from`, the same items).
  void apply_change(const StatePatch& to, const StatePatch& from);
  EditContext context() const { return EditContext{state_, registry_, analysis_, outer_}; }
  Status push(Expected<Edit> edit);
  void reanalyse();
  void emit_changes(const StatePatch& to, const StatePatch& from,
                    const std::map<ir::NodeId, NodeProblem>& problems,
                    const std::vector<std::optional<ir::TensorType>>& types);
  std::vector<std::optional<ir::TensorType>> inferred_types() const;
  void replace_state(DocumentState state, std::string path);
  struct Analysed;
  static Analysed analyse(ir::Graph& graph, const ops::OpRegistry& registry, const std::string& path,
                          const ops::Scope& outer = {});
  void take(Analysed analysed);
  struct Loader;
  std::shared_ptr<Loader> loader_;  // shared with the workers of load_in_background

  const ops::OpRegistry& registry_;
  DocumentState state_;
  std::string path_;
  TypeAnalysis analysis_;
  std::optional<Error> inference_error_;
  ops::Scope outer_;
  std::optional<ops::GraphCost> cost_;  // with inference failing: the typed nodes' FLOPs only
  QUndoStack stack_;  // after state_: destroyed first, its commands refer to this document
  QThreadPool load_pool_;  // last: destroyed first, waiting for load workers (they use registry_)
};

}  // namespace tessera::studio
