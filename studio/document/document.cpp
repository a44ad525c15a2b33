// The studio's document: files, inference results, the edit methods and their change signals.
#include "studio/document/document.h"

#include <QDateTime>
#include <QFileInfo>
#include <QMetaObject>
#include <QThreadPool>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>

#include "engine/passes/passes.h"
#include "studio/document/edit_commands.h"

namespace tessera::studio {

namespace {

// Readers name the file in Error.where; make sure the message does even when one forgets.
Error naming_file(Error e, const std::string& path) {
  if (e.to_string().find(path) == std::string::npos) return e.within(path);
  return e;
}

// Value positions travel in a metadata property, by name: {"x": [10, 20], ...}.
std::string value_positions_json(const DocumentState& state) {
  QJsonObject o;
  for (const auto& [id, pos] : state.value_positions)
    if (state.graph().has_value(id))
      o.insert(QString::fromStdString(state.graph().value(id).name), QJsonArray{pos.x, pos.y});
  return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

// Takes the property out of the metadata; entries that name no input or param are dropped.
void read_value_positions(DocumentState& state) {
  auto& props = state.file.metadata.properties;
  auto it = props.find(kValuePositionsProperty);
  if (it == props.end()) return;
  const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(it->second)).object();
  props.erase(it);
  const ir::Graph& g = state.graph();
  for (const auto* list : {&g.inputs(), &g.params()}) {
    for (ir::ValueId v : *list) {
      const QJsonArray xy = o.value(QString::fromStdString(g.value(v).name)).toArray();
      if (xy.size() == 2)
        state.value_positions[v] = NodePosition{xy[0].toDouble(), xy[1].toDouble()};
    }
  }
}

template <class T>
bool differs(const std::optional<T>& a, const std::optional<T>& b) {
  return a.has_value() != b.has_value() || (a && !(*a == *b));
}

bool same_value(const ValueState& a, const ValueState& b) {
  return a.value.name == b.value.name && a.data.has_value() == b.data.has_value() &&
         (!a.data || a.data->raw_data() == b.data->raw_data() || a.data->equals(*b.data));
}

}  // namespace

// What load_in_background's workers share with the document: `owner` is cleared (under the mutex)
// when the document dies, so a worker posts its result only to a live one.
struct Document::Loader {
  std::mutex mutex;
  Document* owner = nullptr;     // guarded by mutex
  std::atomic<uint64_t> wanted{0};  // the request whose result is wanted; 0: none
  uint64_t last = 0;             // the latest request (UI thread only)
};

struct Document::Analysed {
  TypeAnalysis analysis;
  std::optional<Error> error;
  std::optional<ops::GraphCost> cost;
};

Document::Document(const ops::OpRegistry& registry, QObject* parent)
    : QObject(parent), registry_(registry), loader_(std::make_shared<Loader>()) {
  loader_->owner = this;
  load_pool_.setMaxThreadCount(2);
  QObject::connect(&stack_, &QUndoStack::cleanChanged, this,
                   [this](bool clean) { Q_EMIT modified_changed(!clean); });
  reanalyse();
}

Document::~Document() {
  loader_->wanted = 0;
  std::lock_guard<std::mutex> lock(loader_->mutex);
  loader_->owner = nullptr;
}

// ---- files ----

void Document::replace_state(DocumentState state, std::string path) {
  loader_->wanted = 0;  // a pending background load would overwrite this: drop it
  state_ = std::move(state);
  path_ = std::move(path);
  reanalyse();
  stack_.clear();  // may Q_EMIT modified_changed(false)
  Q_EMIT graph_reset();
}

Status Document::load(const std::string& path) {
  Expected<formats::GraphDocument> read = formats::load_document(path);
  if (!read) return naming_file(read.error(), path);
  DocumentState state;
  state.file = std::move(read).value();
  read_value_positions(state);
  replace_state(std::move(state), path);
  return Status::ok();
}

void Document::load_in_background(const std::string& path, std::function<void(const Status&)> done) {
  const uint64_t request = ++loader_->last;
  loader_->wanted = request;
  auto work = [loader = loader_, request, path, done = std::move(done), &registry = registry_]() noexcept {
    if (loader->wanted != request) return;  // superseded before it started
    // Everything but the swap happens here: the file read, inference, the counts.
    auto prepared = std::make_shared<std::pair<DocumentState, Analysed>>();
    Status outcome = Status::ok();
    try {
      Expected<formats::GraphDocument> read = formats::load_document(path);
      if (!read) {
        outcome = naming_file(read.error(), path);
      } else {
        prepared->first.file = std::move(read).value();
        read_value_positions(prepared->first);
        if (loader->wanted != request) return;
        prepared->second = analyse(prepared->first.graph(), registry, path);
      }
    } catch (const std::exception& e) {
      outcome = make_error(std::string("reading the file failed: ") + e.what()).within(path);
    } catch (...) {
      outcome = make_error("reading the file failed").within(path);
    }
    try {
      std::lock_guard<std::mutex> lock(loader->mutex);
      Document* owner = loader->owner;
      if (!owner || loader->wanted != request) return;
      QMetaObject::invokeMethod(
          owner,
          [owner, loader, request, path, prepared, outcome, done] {
            if (loader->wanted != request) return;  // superseded since it was posted
            loader->wanted = 0;
            if (outcome) {
              owner->state_ = std::move(prepared->first);
              owner->path_ = path;
              owner->take(std::move(prepared->second));
              owner->stack_.clear();
              Q_EMIT owner->graph_reset();
            }
            if (done) done(outcome);
          },
          Qt::QueuedConnection);
    } catch (...) {  // allocation failure while posting: the load is lost, the document unchanged
    }
  };
  load_pool_.start(std::move(work));
}

bool Document::is_loading() const { return loader_->wanted != 0; }

void Document::open(formats::GraphDocument document, const std::string& path) {
  DocumentState state;
  state.file = std::move(document);
  read_value_positions(state);
  replace_state(std::move(state), path);
}

Status Document::recover(const std::string& autosave_path, const std::string& original_path) {
  Expected<formats::GraphDocument> read = formats::load_document(autosave_path);
  if (!read) return naming_file(read.error(), autosave_path);
  DocumentState state;
  state.file = std::move(read).value();
  read_value_positions(state);
  replace_state(std::move(state), original_path);
  stack_.resetClean();  // not saved to original_path yet: modified
  return Status::ok();
}

Status Document::save_copy(const std::string& path) const {
  formats::GraphDocument out = state_.file;
  out.metadata.producer = "tessera-studio";
  out.metadata.engine_version = TESSERA_VERSION;
  if (!state_.value_positions.empty())
    out.metadata.properties[kValuePositionsProperty] = value_positions_json(state_);
  if (Status st = formats::save_document(out, path); !st) return naming_file(st.error(), path);
  return Status::ok();
}

Status Document::save(const std::string& path) {
  formats::GraphDocument out = state_.file;
  out.metadata.producer = "tessera-studio";
  out.metadata.engine_version = TESSERA_VERSION;
  if (out.metadata.created_unix_ms == 0)
    out.metadata.created_unix_ms = QDateTime::currentMSecsSinceEpoch();
  formats::Metadata kept = out.metadata;
  if (!state_.value_positions.empty())
    out.metadata.properties[kValuePositionsProperty] = value_positions_json(state_);
  if (Status st = formats::save_document(out, path); !st) return naming_file(st.error(), path);
  state_.file.metadata = std::move(kept);
  const bool renamed = path != path_;
  path_ = path;
  stack_.setClean();
  if (renamed) Q_EMIT path_changed();
  return Status::ok();
}

void Document::reset() {
  DocumentState empty;
  replace_state(std::move(empty), std::string());
}

bool Document::is_empty() const {
  const ir::Graph& g = graph();
  return path_.empty() && g.num_nodes() == 0 && g.inputs().empty() && g.params().empty();
}

std::optional<NodePosition> Document::position(ir::NodeId id) const {
  auto it = layout().positions.find(id);
  return it == layout().positions.end() ? std::nullopt : std::optional<NodePosition>(it->second);
}

std::optional<NodePosition> Document::value_position(ir::ValueId id) const {
  auto it = state_.value_positions.find(id);
  return it == state_.value_positions.end() ? std::nullopt
                                            : std::optional<NodePosition>(it->second);
}

QString Document::file_name() const {
  if (path_.empty()) return tr("Untitled");
  return QFileInfo(QString::fromStdString(path_)).fileName();
}

const ops::OpDef* Document::op_def(ir::NodeId id) const {
  if (!graph().has_node(id)) return nullptr;
  return registry_.find(graph().node(id).op);
}

// ---- inference ----

Document::Analysed Document::analyse(ir::Graph& graph, const ops::OpRegistry& registry,
                                     const std::string& path, const ops::Scope& outer) {
  Analysed out;
  out.analysis = analyse_types(graph, registry, outer);
  out.error = out.analysis.first_error;
  if (out.error && !path.empty()) out.error = naming_file(*out.error, path);
  if (!out.error && graph.captures().empty()) {  // (a nested graph's captures: counted below)
    if (Expected<ops::GraphCost> cost = passes::folded_graph_cost(graph, registry)) out.cost = std::move(cost).value();
    // With every input dimension known, folding gives the exact types of values the graph
    // computes its shapes for (Swin-T's attention showed f32[?, ?, ?]): the canvas shows those.
    // A symbolic batch was bound to 1 for the count, so those types are not the graph's.
    bool all_static = true;
    for (ir::ValueId v : graph.inputs()) all_static = all_static && graph.value(v).type.is_static();
    if (out.cost && all_static)
      for (const auto& [v, type] : out.cost->folded_types)
        if (graph.has_value(v)) graph.value(v).type = type;
  }
  if (!out.cost) {
    // Inference fails somewhere (an unconnected node while designing): the nodes it typed still
    // count, per sample (symbols bound to 1 on a copy, as the whole-graph cost does); the others
    // are unknown (absent from flops_by_node).
    ir::Graph bound = graph;
    for (ir::ValueId v : bound.inputs())
      for (ir::Dim& d : bound.value(v).type.dims)
        if (!d.is_known()) d = ir::Dim::known(1);
    const TypeAnalysis typed = analyse_types(bound, registry, outer);
    ops::GraphCost partial;
    partial.params = ops::weight_elements(graph);
    for (ir::NodeId id : bound.node_ids()) {
      const ir::Node& n = bound.node(id);
      ++partial.op_counts[n.op];
      const ops::OpDef* def = registry.find(n.op);
      if (!def || typed.problem(id)) continue;
      bool known = true;
      for (const auto* list : {&n.inputs, &n.outputs})
        for (ir::ValueId v : *list)
          if (v != ir::kNoValue &&
              (v < 0 || static_cast<size_t>(v) >= typed.typed.size() || !typed.typed[static_cast<size_t>(v)]))
            known = false;
      if (!known) continue;
      const double f = ops::node_flops(bound, id, *def);
      partial.flops += f;
      partial.flops_by_op[n.op] += f;
      partial.flops_by_node[id] = f;
    }
    out.cost = std::move(partial);
  }
  return out;
}

void Document::take(Analysed analysed) {
  analysis_ = std::move(analysed.analysis);
  inference_error_ = std::move(analysed.error);
  cost_ = std::move(analysed.cost);
}

void Document::reanalyse() { take(analyse(state_.graph(), registry_, path_, outer_)); }

ops::Scope Document::scope_for_nested(ir::NodeId) const {
  // ONNX names are unique in a model and a nested graph can only read values defined before its
  // node, so every typed named value of this graph stands for "what the node sees".
  ops::Scope scope = outer_;
  const ir::Graph& g = graph();
  for (ir::ValueId v = 0; v < static_cast<ir::ValueId>(analysis_.typed.size()); ++v)
    if (analysis_.typed[static_cast<size_t>(v)] && g.has_value(v) && !g.value(v).name.empty())
      scope[g.value(v).name] = g.value(v).type;
  return scope;
}

namespace {

// The weight elements a graph nested in a node reads: its own params and weight-like Constant
// nodes (ops::weight_elements), and the enclosing graph's params it captures by name (counted
// once per name in `seen`).
int64_t nested_weights(const ir::Graph& inner, const ir::Graph& outer, std::set<std::string>& seen, int depth) {
  int64_t n = ops::weight_elements(inner);
  auto captured = [&](const ir::Graph& graph) {
    for (ir::ValueId c : graph.captures()) {
      const std::string& name = graph.value(c).name;
      if (!seen.insert(name).second) continue;
      for (ir::ValueId p : outer.params())
        if (outer.value(p).name == name)
          if (const Tensor* t = outer.param_data(p)) n += t->numel();
    }
  };
  captured(inner);
  if (depth < 16)  // deeper graphs capture from `outer` too (names are unique in a model)
    for (ir::NodeId id : inner.node_ids())
      for (const auto& [key, attr] : inner.node(id).attrs)
        if (attr.kind() == ir::AttrKind::kGraph) captured(attr.g());
  return n;
}

}  // namespace

int64_t Document::node_parameter_count(ir::NodeId id) const {
  const ir::Graph& g = graph();
  if (!g.has_node(id)) return 0;
  int64_t total = 0;
  std::vector<ir::ValueId> seen;
  for (ir::ValueId v : g.node(id).inputs) {
    if (v == ir::kNoValue || std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
    seen.push_back(v);
    if (const Tensor* t = g.param_data(v)) {
      total += t->numel();
    } else if (const ir::NodeId p = g.value(v).producer; p != ir::kNoNode && g.node(p).op == "Constant") {
      // A weight written as a Constant node (paddle2onnx, OCR models): drawn as a row of this box.
      const ir::Attribute* value = g.node(p).attr("value");
      if (value && value->kind() == ir::AttrKind::kTensor && value->t().is_tensor() &&
          is_float(value->t().dtype()) && value->t().numel() > 1)
        total += value->t().numel();
    }
  }
  // If, Loop, Scan: the weights their graphs read.
  std::set<std::string> captured;
  for (const auto& [key, attr] : g.node(id).attrs)
    if (attr.kind() == ir::AttrKind::kGraph) total += nested_weights(attr.g(), g, captured, 0);
  return total;
}

std::optional<double> Document::node_flops(ir::NodeId id) const {
  if (!cost_) return std::nullopt;
  auto it = cost_->flops_by_node.find(id);
  if (it == cost_->flops_by_node.end()) return std::nullopt;
  return it->second;
}

const Error* Document::node_error(ir::NodeId id) const {
  const NodeProblem* p = analysis_.problem(id);
  return p ? &p->error : nullptr;
}

bool Document::is_incomplete(ir::NodeId id) const {
  const NodeProblem* p = analysis_.problem(id);
  return p && p->incomplete;
}

bool Document::is_typed(ir::ValueId id) const {
  return id >= 0 && id < static_cast<ir::ValueId>(analysis_.typed.size()) &&
         analysis_.typed[static_cast<size_t>(id)];
}

int64_t Document::parameter_count() const { return ops::weight_elements(graph()); }

std::vector<std::optional<ir::TensorType>> Document::inferred_types() const {
  std::vector<std::optional<ir::TensorType>> types(analysis_.typed.size());
  for (size_t v = 0; v < types.size(); ++v)
    if (analysis_.typed[v]) types[v] = graph().value(static_cast<ir::ValueId>(v)).type;
  return types;
}

// ---- edits ----

Status Document::push(Expected<Edit> edit) {
  if (!edit) return edit.error();
  if (edit->no_op) return Status::ok();
  stack_.push(new EditCommand(*this, std::move(edit).value()));
  return Status::ok();
}

Expected<ir::NodeId> Document::add_node(const std::string& op, const std::string& name,
                                        NodePosition position, const ir::Attributes& attrs) {
  TRY(Edit edit, plan_add_node(context(), op, name, position, attrs));
  const ir::NodeId id = edit.nodes.front();
  RETURN_IF_ERROR(push(std::move(edit)));
  return id;
}

Expected<ir::ValueId> Document::add_input(const std::string& name, const ir::TensorType& type,
                                          NodePosition position) {
  TRY(Edit edit, plan_add_input(context(), name, type, position));
  const ir::ValueId id = edit.value;
  RETURN_IF_ERROR(push(std::move(edit)));
  return id;
}

Expected<ir::ValueId> Document::add_param(const std::string& name, const Tensor& data,
                                          NodePosition position) {
  TRY(Edit edit, plan_add_param(context(), name, data, position));
  const ir::ValueId id = edit.value;
  RETURN_IF_ERROR(push(std::move(edit)));
  return id;
}

Status Document::remove_value(ir::ValueId id) {
  return push(plan_remove_value(context(), id));
}

Status Document::set_graph_outputs(const std::vector<ir::ValueId>& outputs) {
  if (outputs == graph().outputs()) return Status::ok();
  return push(plan_set_outputs(context(), outputs));
}

Status Document::add_output(ir::ValueId value) {
  std::vector<ir::ValueId> outputs = graph().outputs();
  if (std::find(outputs.begin(), outputs.end(), value) != outputs.end()) return Status::ok();
  outputs.push_back(value);
  return push(plan_set_outputs(context(), outputs));
}

Status Document::remove_output(ir::ValueId value) {
  std::vector<ir::ValueId> outputs = graph().outputs();
  auto it = std::find(outputs.begin(), outputs.end(), value);
  if (it == outputs.end())
    return make_error("value %" + std::to_string(value) + " is not a graph output");
  outputs.erase(it);
  return push(plan_set_outputs(context(), outputs));
}

Status Document::remove_nodes(const std::vector<ir::NodeId>& ids) {
  return push(plan_remove_nodes(context(), ids));
}

Status Document::connect(ir::ValueId value, ir::NodeId node, int input_index) {
  return push(plan_connect(context(), value, node, input_index));
}

Status Document::disconnect(ir::NodeId node, int input_index) {
  return push(plan_disconnect(context(), node, input_index));
}

Status Document::set_attribute(ir::NodeId node, const std::string& key,
                               const ir::Attribute& value) {
  return push(plan_set_attribute(context(), node, key, value));
}

Status Document::clear_attribute(ir::NodeId node, const std::string& key) {
  return push(plan_set_attribute(context(), node, key, std::nullopt));
}

Status Document::rename_node(ir::NodeId node, const std::string& name) {
  return push(plan_rename_node(context(), node, name));
}

Status Document::rename_value(ir::ValueId value, const std::string& name) {
  return push(plan_rename_value(context(), value, name));
}

Status Document::move_nodes(const std::vector<ir::NodeId>& ids, double dx, double dy) {
  return push(plan_move_nodes(context(), ids, dx, dy));
}

Status Document::clear_positions() { return push(plan_clear_positions(context())); }

Status Document::set_positions(const std::map<ir::NodeId, NodePosition>& positions) {
  return push(plan_set_positions(context(), positions));
}

Status Document::set_value_position(ir::ValueId value, NodePosition position) {
  return push(plan_set_value_position(context(), value, position));
}

Status Document::group(const std::vector<ir::NodeId>& ids, const std::string& name) {
  return push(plan_group(context(), ids, name));
}

Status Document::ungroup(const std::string& name) {
  return push(plan_ungroup(context(), name));
}

Status Document::set_group_collapsed(const std::string& name, bool collapsed) {
  return push(plan_set_group_collapsed(context(), name, collapsed));
}

Expected<ClipboardPayload> Document::copy(const std::vector<ir::NodeId>& ids) const {
  return copy_selection(state_, ids);
}

Expected<std::vector<ir::NodeId>> Document::paste(const ClipboardPayload& payload, double dx,
                                                  double dy) {
  TRY(Edit edit, plan_paste(context(), payload, dx, dy));
  std::vector<ir::NodeId> ids = edit.nodes;
  RETURN_IF_ERROR(push(std::move(edit)));
  return ids;
}

// ---- applying changes ----

void Document::apply_change(const StatePatch& to, const StatePatch& from) {
  const std::map<ir::NodeId, NodeProblem> problems = analysis_.problems;
  const std::vector<std::optional<ir::TensorType>> types = inferred_types();
  apply_patch(state_, to);
  reanalyse();
  emit_changes(to, from, problems, types);
  Q_EMIT changed();
}

void Document::emit_changes(const StatePatch& to, const StatePatch& from,
                            const std::map<ir::NodeId, NodeProblem>& problems,
                            const std::vector<std::optional<ir::TensorType>>& types) {
  std::vector<ir::NodeId> added, removed;
  std::set<ir::NodeId> changed;
  bool edges = false;
  for (const auto& [id, node] : to.nodes) {
    const std::optional<ir::Node>& was = from.nodes.at(id);
    if (node && !was)
      added.push_back(id);
    else if (!node && was)
      removed.push_back(id);
    else if (node && was) {
      changed.insert(id);
      edges = edges || node->inputs != was->inputs;
    }
  }
  edges = edges || !added.empty() || !removed.empty() || differs(to.outputs, from.outputs);
  const bool terminals = differs(to.inputs, from.inputs) || differs(to.params, from.params) ||
                         differs(to.outputs, from.outputs);
  edges = edges || terminals;
  std::set<ir::ValueId> values;
  for (const auto& [id, v] : to.values) {
    const std::optional<ValueState>& was = from.values.at(id);
    if (v && was && !same_value(*v, *was)) values.insert(id);
  }
  for (const auto& [id, pos] : to.value_positions)
    if (differs(pos, from.value_positions.at(id)) && graph().has_value(id)) values.insert(id);
  QList<ir::NodeId> moved;
  for (const auto& [id, pos] : to.positions)
    if (differs(pos, from.positions.at(id))) moved.append(id);
  // Nodes whose inference problem appeared, went or changed.
  std::set<ir::NodeId> ids;
  for (const auto& [id, p] : problems) ids.insert(id);
  for (const auto& [id, p] : analysis_.problems) ids.insert(id);
  for (ir::NodeId id : ids) {
    const NodeProblem* now = analysis_.problem(id);
    auto before = problems.find(id);
    const bool same = now && before != problems.end() &&
                      now->error.message == before->second.error.message &&
                      now->incomplete == before->second.incomplete;
    if (!same && graph().has_node(id) && std::find(added.begin(), added.end(), id) == added.end())
      changed.insert(id);
  }

  for (ir::NodeId id : removed) Q_EMIT node_removed(id);
  for (ir::NodeId id : added) Q_EMIT node_added(id);
  for (ir::NodeId id : changed) Q_EMIT node_changed(id);
  for (ir::ValueId id : values) Q_EMIT value_changed(id);
  if (edges) Q_EMIT edges_changed();
  if (terminals) Q_EMIT terminals_changed();
  if (!moved.isEmpty()) Q_EMIT layout_changed(moved);
  if (differs(to.groups, from.groups)) Q_EMIT groups_changed();
  if (inferred_types() != types) Q_EMIT types_changed();
}

}  // namespace tessera::studio
