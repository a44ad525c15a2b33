// The graph canvas's scene: building items from the document and placing them.
#include "studio/canvas/graph_scene.h"

#include <QGraphicsPathItem>
#include <QLineF>
#include <QLocale>
#include <QStringList>
#include <QPainter>
#include <QPainterPath>
#include <QPointer>
#include <QCoreApplication>
#include <QMetaObject>
#include <QTimer>
#include <QtGlobal>
#include <algorithm>
#include <set>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/ir/verifier.h"
#include "engine/passes/pass_manager.h"
#include "engine/passes/passes.h"
#include "studio/common/canvas_style.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_layout.h"
#include "studio/common/guard.h"

namespace tessera::studio {

namespace {

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}
QString html(const std::string& s) {
  return qstr(s).toHtmlEscaped();
}

// A node input drawn as a port with an edge; weights (params) are rows inside the box instead,
// and absent optional inputs are not drawn at all.
bool is_data_input(const ir::Graph& graph, ir::ValueId v) {
  if (v == ir::kNoValue) return false;
  return !graph.has_value(v) || graph.value(v).kind != ir::ValueKind::kParam;
}

std::string type_text(const Document& doc, ir::ValueId v) {
  if (!doc.graph().has_value(v)) return "(missing value)";
  return doc.is_typed(v) ? doc.graph().value(v).type.to_string() : "?";
}

std::string value_name(const ir::Graph& graph, ir::ValueId v) {
  if (graph.has_value(v) && !graph.value(v).name.empty()) return graph.value(v).name;
  return "%" + std::to_string(v);
}

// The schema's name for port i ("X", "W"); variadic ports are numbered ("inputs1").
std::string port_name(const std::vector<ops::PortSpec>& ports, size_t i, const char* fallback) {
  if (ports.empty()) return fallback + std::to_string(i);
  const size_t last = ports.size() - 1;
  const ops::PortSpec& spec = ports[std::min(i, last)];
  if (spec.variadic) return spec.name + std::to_string(i - std::min(i, last));
  if (i > last) return fallback + std::to_string(i);
  return spec.name;
}

QString node_tooltip(const Document& doc, const ir::Node& n, const ops::OpDef* def) {
  const ir::Graph& g = doc.graph();
  QString t = QStringLiteral("<b>%1</b> %2").arg(html(n.op), html(ir::describe_node(n)));
  if (def) {
    t += QStringLiteral("<br><i>%1</i>").arg(html(def->category));
    if (!def->doc.empty()) t += QStringLiteral(": %1").arg(html(def->doc));
  } else {
    t += QStringLiteral("<br><i>op not in the registry</i>");
  }
  auto list = [&](const char* title, const std::vector<ir::ValueId>& values,
                  const std::vector<ops::PortSpec>* ports, const char* fallback) {
    t += QStringLiteral("<br><b>%1</b>").arg(QLatin1String(title));
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string port =
          ports ? port_name(*ports, i, fallback) : fallback + std::to_string(i);
      if (values[i] == ir::kNoValue) {
        t += QStringLiteral("<br>&nbsp;&nbsp;%1: (absent)").arg(html(port));
        continue;
      }
      t += QStringLiteral("<br>&nbsp;&nbsp;%1: %2 <tt>%3</tt>")
               .arg(html(port), html(value_name(g, values[i])), html(type_text(doc, values[i])));
    }
  };
  list("inputs", n.inputs, def ? &def->inputs : nullptr, "in");
  list("outputs", n.outputs, def ? &def->outputs : nullptr, "out");
  const QLocale numbers(QLocale::English);
  if (int64_t params = doc.node_parameter_count(n.id); params > 0)
    t += QStringLiteral("<br><b>parameters</b> %1").arg(numbers.toString(static_cast<qlonglong>(params)));
  if (std::optional<double> flops = doc.node_flops(n.id))
    t += QStringLiteral("<br><b>FLOPs per sample</b> %1").arg(numbers.toString(static_cast<qlonglong>(*flops)));
  if (const Error* e = doc.node_error(n.id))
    t += QStringLiteral("<br><span style='color:#d02121'><b>error:</b> %1</span>")
             .arg(html(e->message));
  return t;
}

// 61706 -> "61.7k", 2.3e9 -> "2.3G": short enough for a box's cost row.
QString compact_number(double x) {
  const char* suffix[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (x >= 999.95 && i < 4) {
    x /= 1000;
    ++i;
  }
  return i == 0 ? QString::number(static_cast<qlonglong>(x + 0.5))
                : QString::number(x, 'f', x < 9.995 ? 2 : 1) + QLatin1String(suffix[i]);
}

// The cost row: weight elements read and FLOPs per sample (when inference succeeded).
QString cost_text(const Document& doc, ir::NodeId id) {
  QStringList parts;
  if (int64_t params = doc.node_parameter_count(id); params > 0)
    parts << QStringLiteral("%1 params").arg(compact_number(static_cast<double>(params)));
  if (std::optional<double> flops = doc.node_flops(id); flops && *flops > 0)
    parts << QStringLiteral("%1 FLOPs").arg(compact_number(*flops));
  return parts.join(QStringLiteral(" \u00b7 "));
}

// What a folded constant shows in its consumer's row: its values when there are few ("= [1, -1]",
// "= 6"), else its type.
QString constant_text(const Document& doc, const ir::Node& constant, ir::ValueId v) {
  const ir::Attribute* value = constant.attr("value");
  if (value && value->kind() == ir::AttrKind::kTensor && value->t().numel() <= 8) {
    const Tensor& t = value->t();
    QStringList parts;
    if (t.dtype() == DType::kString) {  // its elements are string ids: show the text
      for (const std::string& e : t.to_strings())
        parts << QLatin1Char('"') + QString::fromStdString(e.size() > 24 ? e.substr(0, 24) + "..." : e) + QLatin1Char('"');
    } else {
      for (double x : t.to_doubles()) {
        if (t.dtype() == DType::kBool) parts << (x != 0 ? QStringLiteral("true") : QStringLiteral("false"));
        else parts << QString::number(x, 'g', 6);
      }
    }
    const QString joined = parts.join(QStringLiteral(", "));
    return QStringLiteral("= ") + (t.shape().empty() ? joined : QLatin1Char('[') + joined + QLatin1Char(']'));
  }
  return qstr(type_text(doc, v));
}

NodeContent node_content(const Document& doc, const ir::Node& n,
                         const std::set<ir::NodeId>& folded) {
  const ir::Graph& g = doc.graph();
  const ops::OpDef* def = doc.registry().find(n.op);
  NodeContent c;
  c.op = qstr(n.op);
  c.name = qstr(n.name);
  c.colour = def ? style::category_colour(def->category) : style::unknown_op_colour();
  const size_t declared = def ? def->inputs.size() : 0;
  for (size_t i = 0; i < std::max(n.inputs.size(), declared); ++i) {
    const ir::ValueId v = i < n.inputs.size() ? n.inputs[i] : ir::kNoValue;
    // An absent input gets a port (to connect it) when its schema port is required.
    const bool required = def && i < declared && !def->inputs[i].optional;
    const ir::NodeId producer = v != ir::kNoValue && g.has_value(v) ? g.value(v).producer : ir::kNoNode;
    const bool from_folded = producer != ir::kNoNode && folded.count(producer) > 0;
    if (!from_folded && (is_data_input(g, v) || (v == ir::kNoValue && required))) {
      c.port_inputs.push_back(static_cast<int>(i));
      ++c.data_inputs;
    } else if (v != ir::kNoValue) {
      const std::string port = def ? port_name(def->inputs, i, "in") : "in" + std::to_string(i);
      c.params.push_back({qstr(port), from_folded ? constant_text(doc, g.node(producer), v)
                                                  : qstr(type_text(doc, v))});
    }
  }
  c.outputs = static_cast<int>(n.outputs.size());
  c.failed = doc.node_error(n.id) != nullptr;
  c.cost = cost_text(doc, n.id);
  c.tooltip = node_tooltip(doc, n, def);
  return c;
}

}  // namespace

std::set<ir::NodeId> foldable_constants(const ir::Graph& g) {
  std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  std::set<ir::ValueId> consumed;
  for (ir::NodeId id : g.node_ids())
    for (ir::ValueId v : g.node(id).inputs) consumed.insert(v);
  std::set<ir::NodeId> folded;
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    if (n.outputs.size() != 1 || outputs.count(n.outputs[0]) || !consumed.count(n.outputs[0])) continue;
    // A Constant, or an Identity of a weight (exporters share one initializer between layers
    // through Identity nodes: Swin-T and ViT have hundreds of them).
    const bool constant =
        n.op == "Constant" &&
        std::none_of(n.inputs.begin(), n.inputs.end(), [](ir::ValueId v) { return v != ir::kNoValue; });
    const bool weight_identity = n.op == "Identity" && n.inputs.size() == 1 && g.has_value(n.inputs[0]) &&
                                 g.value(n.inputs[0]).kind == ir::ValueKind::kParam;
    if (constant || weight_identity) folded.insert(id);
  }
  return folded;
}

std::vector<QString> name_scopes(const std::string& node_name) {
  std::vector<QString> parts;
  for (const QString& part : QString::fromStdString(node_name).split(QLatin1Char('/'), Qt::SkipEmptyParts))
    parts.push_back(part);
  std::vector<QString> out;
  QString scope;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    scope += QLatin1Char('/') + parts[i];
    out.push_back(scope);
  }
  return out;
}

namespace {

QString terminal_tooltip(const Document& doc, const char* what, ir::ValueId v) {
  return QStringLiteral("graph %1 <b>%2</b>: <tt>%3</tt>")
      .arg(QLatin1String(what), html(value_name(doc.graph(), v)), html(type_text(doc, v)));
}

const QColor kSelectionHalo{0x3b, 0x82, 0xf6, 150};  // behind a selected node box
constexpr double kMargin = 24;       // scene space around the graph (room to pan a little)
constexpr double kTerminalGap = 40;  // between a pinned node and a graph input/output beside it

QString thousands(int n) {
  QString s = QString::number(n);
  for (int i = s.size() - 3; i > 0; i -= 3) s.insert(i, QLatin1Char(','));
  return s;
}

}  // namespace

GraphScene::GraphScene(const Document& document, QObject* parent)
    : GraphScene(document, SceneLayoutOptions{}, parent) {}

GraphScene::GraphScene(const Document& document, SceneLayoutOptions options, QObject* parent)
    : QGraphicsScene(parent),
      document_(document),
      options_(std::move(options)),
      job_(new LayoutJob(options_.refine, this)) {
  setBackgroundBrush(style::colours().background);
  connect(&document_, &Document::graph_reset, this, [this] {
    ++graph_generation_;
    guarded(nullptr, tr("Drawing the graph"), [&] {
      collapsed_scopes_.clear();  // a new graph opens with its scopes expanded
      pattern_of_.clear();
      scope_positions_.clear();
      try {
        rebuild();
      } catch (...) {
        job_->cancel();
        node_items_.clear();  // first: clear() reports the selection, which reads node_items_
        scope_boxes_.clear();
        clear();  // never leave a half-built scene behind
        boxes_.clear();
        pinned_.clear();
        edges_.clear();
        edge_items_.clear();
        group_items_.clear();
        group_edges_.clear();
        throw;
      }
    });
  });
  // Edits: one in-place rebuild per batch of signals (an edit emits several).
  connect(&document_, &Document::node_added, this, [this] { schedule_update(); });
  connect(&document_, &Document::node_removed, this, [this] { schedule_update(); });
  connect(&document_, &Document::node_changed, this, [this] { schedule_update(); });
  connect(&document_, &Document::edges_changed, this, [this] { schedule_update(); });
  connect(&document_, &Document::terminals_changed, this, [this] { schedule_update(); });
  connect(&document_, &Document::types_changed, this, [this] { schedule_update(); });
  connect(&document_, &Document::layout_changed, this, [this] { schedule_update(); });
  connect(&document_, &Document::groups_changed, this, [this] { schedule_update(); });
  connect(this, &QGraphicsScene::selectionChanged, this, [this] {
    guarded(nullptr, tr("Selecting"), [&] { on_selection_changed(); });
  });
  connect(job_, &LayoutJob::finished, this, [this](quint64, const Layout& layout) {
    guarded(nullptr, tr("Laying the graph out"), [&] {
      if (layout.positions.size() != boxes_.size() || layout.routes.size() != edges_.size()) return;
      Q_EMIT layout_about_to_change();
      apply_layout(layout);
      draw_groups();
      set_note(tr("Graphviz layout"));
      Q_EMIT layout_changed();
    });
  });
  connect(job_, &LayoutJob::failed, this, [this](quint64, const QString& message) {
    guarded(nullptr, tr("Laying the graph out"), [&] {
      set_note(message.startsWith(QStringLiteral("Graphviz"))
                   ? tr("layered layout (%1)").arg(message)
                   : tr("layered layout (Graphviz failed: %1)").arg(message));
      qInfo("%s", qPrintable(layout_note_));
    });
  });
  rebuild();
}

GraphScene::~GraphScene() {
  // QGraphicsScene's destructor deletes the items after our members are gone: no selection
  // signal may reach on_selection_changed() then.
  rebuilding_ = true;
  disconnect(this, &QGraphicsScene::selectionChanged, this, nullptr);
  clear();
  node_items_.clear();
  scope_boxes_.clear();
  group_items_.clear();
  group_edges_.clear();
}

NodeItem* GraphScene::node_item(ir::NodeId id) const {
  auto it = node_items_.find(id);
  return it == node_items_.end() ? nullptr : it->second;
}

void GraphScene::set_known_positions(std::map<ir::NodeId, QPointF> positions) {
  known_positions_ = std::move(positions);
}

std::map<ir::NodeId, QPointF> GraphScene::node_positions() const {
  std::map<ir::NodeId, QPointF> out;
  for (const auto& [id, item] : node_items_) out[id] = item->pos();
  return out;
}

void GraphScene::set_fold_constants(bool fold) {
  if (fold == fold_constants_) return;
  fold_constants_ = fold;
  rebuild();  // boxes appear or go: the graph is laid out again
}

QString GraphScene::collapsed_scope_of(const std::string& node_name) const {
  for (const QString& scope : name_scopes(node_name))  // outermost first
    if (collapsed_scopes_.count(scope)) return scope;
  return {};
}

std::map<QString, int> GraphScene::scopes() const {
  std::map<QString, int> out;
  if (document_.is_empty()) return out;
  const ir::Graph& g = document_.graph();
  for (ir::NodeId id : g.node_ids()) {
    if (folded_.count(id)) continue;
    for (const QString& scope : name_scopes(g.node(id).name)) ++out[scope];
  }
  return out;
}

void GraphScene::collapse_scopes(int depth) {
  collapsed_scopes_.clear();
  pattern_of_.clear();
  scope_positions_.clear();
  if (depth > 0)
    for (const auto& [scope, count] : scopes())
      if (count >= 2 && scope.count(QLatin1Char('/')) == depth) collapsed_scopes_.insert(scope);
  rebuild();
}

void GraphScene::expand_scope(const QString& scope) {
  if (!collapsed_scopes_.erase(scope)) return;
  const int depth = static_cast<int>(scope.count(QLatin1Char('/')));
  for (const auto& [sub, count] : scopes())
    if (count >= 2 && sub.startsWith(scope + QLatin1Char('/')) && sub.count(QLatin1Char('/')) == depth + 1)
      collapsed_scopes_.insert(sub);
  scope_positions_.clear();
  rebuild();
}

bool GraphScene::expand_to(ir::NodeId id) {
  if (document_.is_empty() || !document_.graph().has_node(id)) return false;
  bool changed = false;
  if (auto p = pattern_of_.find(id); p != pattern_of_.end()) changed = collapsed_scopes_.erase(p->second) > 0;
  for (const QString& scope : name_scopes(document_.graph().node(id).name))
    changed = collapsed_scopes_.erase(scope) > 0 || changed;
  if (!changed) return false;
  scope_positions_.clear();
  rebuild();
  return true;
}

namespace {

// The patterns the engine's recogniser finds in `copy` (constants folded first: its patterns
// compare constant operands; then fuse-patterns): each fused node's op and the ids of the nodes
// it replaced. Pure: runs on any thread.
std::vector<std::pair<std::string, std::vector<ir::NodeId>>> recognise_patterns(ir::Graph copy,
                                                                                const ops::OpRegistry& registry) {
  passes::PassContext ctx{registry, {}};
  std::unique_ptr<passes::Pass> steps[] = {passes::make_constant_fold_pass(), passes::make_fuse_patterns_pass()};
  for (auto& pass : steps)
    if (!pass->run(copy, ctx)) return {};  // a graph the passes refuse: nothing recognised
  std::vector<std::pair<std::string, std::vector<ir::NodeId>>> out;
  for (ir::NodeId id : copy.node_ids()) {
    const ir::Node& fused = copy.node(id);
    if (fused.provenance.from.size() >= 2) out.emplace_back(fused.op, fused.provenance.from);
  }
  return out;
}

}  // namespace

int GraphScene::apply_patterns(const std::vector<std::pair<std::string, std::vector<ir::NodeId>>>& found_patterns) {
  const ir::Graph& g = document_.graph();
  std::map<std::string, int> counts;
  int found = 0;
  for (const auto& [op, from] : found_patterns) {
    std::vector<ir::NodeId> members;
    for (ir::NodeId f : from)
      if (g.has_node(f) && !folded_.count(f)) members.push_back(f);
    if (members.size() < 2) continue;
    const QString key = QStringLiteral("%1 %2").arg(QString::fromStdString(op)).arg(++counts[op]);
    for (ir::NodeId m : members) pattern_of_[m] = key;
    collapsed_scopes_.insert(key);
    ++found;
  }
  if (found) {
    scope_positions_.clear();
    rebuild();
  }
  return found;
}

int GraphScene::collapse_patterns() {
  if (document_.is_empty()) return 0;
  return apply_patterns(recognise_patterns(document_.graph(), document_.registry()));
}

void GraphScene::collapse_patterns_in_background(std::function<void(int)> done) {
  if (document_.is_empty()) {
    if (done) done(0);
    return;
  }
  // The recogniser folds constants on a copy: 435 ms on Swin-T, which blocked the window. The copy
  // shares the weights' storage; the result applies only to the graph it was computed for.
  const quint64 generation = graph_generation_;
  auto work = [scene = QPointer<GraphScene>(this), copy = document_.graph(), &registry = document_.registry(),
               generation, done = std::move(done)]() mutable noexcept {
    std::vector<std::pair<std::string, std::vector<ir::NodeId>>> found;
    try {
      found = recognise_patterns(std::move(copy), registry);
    } catch (...) {
    }
    QMetaObject::invokeMethod(
        qApp, [scene, generation, found = std::move(found), done = std::move(done)] {
          if (!scene || scene->graph_generation_ != generation) {  // another graph, or edited since
            if (done) done(-1);
            return;
          }
          int n = 0;
          guarded(nullptr, tr("Collapsing patterns"), [&] { n = scene->apply_patterns(found); });
          if (done) done(n);
        },
        Qt::QueuedConnection);
  };
  layout_thread_pool()->start(std::move(work));
}

void GraphScene::arrange() {
  update_pending_ = false;  // the full rebuild below replaces a pending in-place one
  auto_positions_.clear();
  known_positions_.clear();
  scope_positions_.clear();
  rebuild();
}

ScopeBoxItem* GraphScene::scope_box(const QString& scope) const {
  auto it = scope_boxes_.find(scope);
  return it == scope_boxes_.end() ? nullptr : it->second;
}

void GraphScene::set_note(const QString& note) {
  if (note == layout_note_) return;
  layout_note_ = note;
  Q_EMIT layout_note_changed(layout_note_);
}

QList<ir::NodeId> GraphScene::selected_node_ids() const {
  QList<ir::NodeId> ids;
  for (const auto& [id, item] : node_items_)
    if (item->isSelected()) ids << id;
  return ids;
}

void GraphScene::select_nodes(const QList<ir::NodeId>& ids) {
  clearSelection();
  for (ir::NodeId id : ids)
    if (NodeItem* item = node_item(id)) item->setSelected(true);
}

void GraphScene::update_selection_marks() {
  constexpr int kMarkKey = 0;
  const QString kMark = QStringLiteral("selection-mark");
  for (const auto& [id, item] : node_items_) {
    QGraphicsItem* mark = nullptr;
    for (QGraphicsItem* child : item->childItems())
      if (child->data(kMarkKey).toString() == kMark) mark = child;
    if (item->isSelected() && !mark) {
      QPainterPath path;
      path.addRoundedRect(item->boundingRect().adjusted(-4, -4, 4, 4), 8, 8);
      auto* halo = new QGraphicsPathItem(path, item);
      halo->setPen(Qt::NoPen);
      halo->setBrush(kSelectionHalo);
      halo->setFlag(QGraphicsItem::ItemStacksBehindParent);
      halo->setData(kMarkKey, kMark);
    } else if (!item->isSelected() && mark) {
      delete mark;
    }
  }
}

void GraphScene::on_selection_changed() {
  if (rebuilding_) return;
  update_selection_marks();
  const QList<ir::NodeId> ids = selected_node_ids();
  if (ids == last_selection_) return;
  last_selection_ = ids;
  Q_EMIT node_selection_changed(ids);
}

void GraphScene::apply_theme() {
  setBackgroundBrush(style::colours().background);
  schedule_update();
  update();
}

void GraphScene::schedule_update() {
  ++graph_generation_;
  if (update_pending_) return;
  update_pending_ = true;
  QTimer::singleShot(0, this, [this] {
    guarded(nullptr, tr("Drawing the graph"), [&] { flush_update(); });
  });
}

void GraphScene::flush_update() {
  if (!update_pending_) return;
  update_pending_ = false;
  const QList<ir::NodeId> selection = selected_node_ids();
  {
    struct Restore {
      bool& flag;
      ~Restore() { flag = false; }
    } restore{rebuilding_};
    rebuilding_ = true;
    rebuild(/*in_place=*/true);
    select_nodes(selection);  // ids the graph lost are skipped
  }
  on_selection_changed();
  Q_EMIT updated();
}

void GraphScene::rebuild(bool in_place) {
  job_->cancel();  // a pending layout belongs to the old graph
  // clear() below deletes selected items: no selection signal until the items are consistent.
  const bool was_rebuilding = rebuilding_;
  rebuilding_ = true;
  struct Restore {
    bool& flag;
    bool value;
    ~Restore() { flag = value; }
  } restore{rebuilding_, was_rebuilding};
  if (!in_place) {
    update_pending_ = false;  // the full rebuild covers any pending edit
    auto_positions_.clear();
  }
  // Where boxes are pinned in this rebuild. The positions given by set_known_positions() serve
  // the next full rebuild only: an in-place rebuild's places belong to the graph it rebuilt, and
  // must never pin the boxes of the next file opened (a graph without a layout of its own).
  std::map<ir::NodeId, QPointF> pinned_at;
  if (in_place) {
    // Nothing jumps: every box stays where it is now, unless the document places it.
    pinned_at = node_positions();
    // A node the document does not place goes back where the scene put it, not where a drag left
    // it (an undone move of a node that had no saved position).
    for (const auto& [id, p] : auto_positions_) pinned_at[id] = p;
  } else {
    pinned_at = std::move(known_positions_);
    known_positions_.clear();
  }
  // Positions saved with the document (.tsr / .json layout) are used as they are.
  for (const auto& [id, p] : document_.layout().positions) pinned_at[id] = QPointF(p.x, p.y);
  clear();
  node_items_.clear();
  boxes_.clear();
  pinned_.clear();
  edges_.clear();
  edge_items_.clear();
  group_items_.clear();
  group_edges_.clear();
  graph_rect_ = QRectF();
  sketch_dirty_ = true;
  if (document_.is_empty()) {
    setSceneRect(QRectF());
    set_note(QString());
    if (!in_place) {
      rebuilding_ = was_rebuilding;
      Q_EMIT rebuilt();
      on_selection_changed();
    }
    return;
  }
  const ir::Graph& g = document_.graph();
  // Every item goes into the scene as soon as it exists: the scene owns it from then on.
  auto add = [this](auto* item) {
    addItem(item);
    return item;
  };

  // Boxes: graph inputs, nodes (id order), graph outputs. `source` maps each drawn value to the
  // box and output port that define it.
  struct Source {
    int box, slot;
  };
  std::map<ir::ValueId, Source> source;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::ValueId v = g.inputs()[i];
    source[v] = {static_cast<int>(boxes_.size()), 0};
    boxes_.push_back(
        add(new TerminalItem(TerminalItem::Kind::kInput, static_cast<int>(i),
                             qstr(value_name(g, v)), terminal_tooltip(document_, "input", v))));
    pinned_.push_back(false);
  }
  folded_ = fold_constants_ ? foldable_constants(g) : std::set<ir::NodeId>{};
  scope_boxes_.clear();
  scope_inputs_.clear();
  std::map<QString, std::vector<ir::NodeId>> scope_members;  // collapsed scope -> its nodes
  std::vector<QString> scope_order;
  std::map<ir::NodeId, QString> member_scope;
  for (ir::NodeId id : g.node_ids()) {
    if (folded_.count(id)) continue;  // drawn as a row of each consumer
    const ir::Node& n = g.node(id);
    if (!collapsed_scopes_.empty()) {
      QString scope = collapsed_scope_of(n.name);
      if (scope.isEmpty())
        if (auto p = pattern_of_.find(id); p != pattern_of_.end() && collapsed_scopes_.count(p->second))
          scope = p->second;
      if (!scope.isEmpty()) {
        if (!scope_members.count(scope)) scope_order.push_back(scope);
        scope_members[scope].push_back(id);
        member_scope[id] = scope;
        continue;
      }
    }
    const int box = static_cast<int>(boxes_.size());
    auto* item = add(new NodeItem(id, node_content(document_, n, folded_)));
    item->setFlag(QGraphicsItem::ItemIsSelectable);
    item->setFlag(QGraphicsItem::ItemIsMovable);  // the view turns a drag into move_nodes
    node_items_[id] = item;
    boxes_.push_back(item);
    auto known = pinned_at.find(id);
    pinned_.push_back(known != pinned_at.end());
    if (pinned_.back()) item->setPos(known->second);
    for (size_t k = 0; k < n.outputs.size(); ++k) source[n.outputs[k]] = {box, static_cast<int>(k)};
  }
  // A box per collapsed scope: a port per value entering it, one per value leaving it (read by a
  // node outside or a graph output).
  if (!scope_order.empty()) {
    std::set<ir::ValueId> graph_outputs(g.outputs().begin(), g.outputs().end());
    std::map<ir::ValueId, std::set<QString>> read_outside;  // value -> scopes ("" : no scope) reading it
    for (ir::NodeId id : g.node_ids()) {
      if (folded_.count(id)) continue;
      auto ms = member_scope.find(id);
      const QString reader = ms == member_scope.end() ? QString() : ms->second;
      for (ir::ValueId v : g.node(id).inputs)
        if (v != ir::kNoValue) read_outside[v].insert(reader);
    }
    for (const QString& scope : scope_order) {
      std::vector<ir::ValueId> ins, outs;
      std::set<ir::ValueId> seen_in;
      for (ir::NodeId id : scope_members[scope]) {
        for (ir::ValueId v : g.node(id).inputs) {
          if (!is_data_input(g, v) || seen_in.count(v)) continue;
          const ir::NodeId producer = g.has_value(v) ? g.value(v).producer : ir::kNoNode;
          if (producer != ir::kNoNode && folded_.count(producer)) continue;
          auto ps = member_scope.find(producer);
          if (producer != ir::kNoNode && ps != member_scope.end() && ps->second == scope) continue;
          seen_in.insert(v);
          ins.push_back(v);
        }
        for (ir::ValueId v : g.node(id).outputs) {
          auto r = read_outside.find(v);
          bool leaves = graph_outputs.count(v) > 0;
          if (r != read_outside.end())
            for (const QString& reader : r->second) leaves = leaves || reader != scope;
          if (leaves) outs.push_back(v);
        }
      }
      const int box = static_cast<int>(boxes_.size());
      auto* item = add(new ScopeBoxItem(scope, static_cast<int>(scope_members[scope].size()),
                                        static_cast<int>(ins.size()), static_cast<int>(outs.size())));
      boxes_.push_back(item);
      auto known = scope_positions_.find(scope);
      pinned_.push_back(in_place && known != scope_positions_.end());
      if (pinned_.back()) item->setPos(known->second);
      for (size_t k = 0; k < outs.size(); ++k) source[outs[k]] = {box, static_cast<int>(k)};
      scope_boxes_[scope] = item;
      scope_inputs_[scope] = std::move(ins);
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::ValueId v = g.outputs()[i];
    boxes_.push_back(
        add(new TerminalItem(TerminalItem::Kind::kOutput, static_cast<int>(i),
                             qstr(value_name(g, v)), terminal_tooltip(document_, "output", v))));
    pinned_.push_back(false);
  }

  // Edges, now that every producer is known (node ids need not follow data order).
  for (size_t b = 0; b < boxes_.size(); ++b) {
    const int to_box = static_cast<int>(b);
    if (boxes_[b]->type() == static_cast<int>(CanvasItemType::kNode)) {
      const auto* item = static_cast<NodeItem*>(boxes_[b]);
      const ir::Node& n = g.node(item->node_id());
      const std::vector<int>& ports = item->content().port_inputs;
      for (size_t slot = 0; slot < ports.size(); ++slot) {
        const size_t index = static_cast<size_t>(ports[slot]);
        const ir::ValueId v = index < n.inputs.size() ? n.inputs[index] : ir::kNoValue;
        if (v == ir::kNoValue) continue;
        auto it = source.find(v);
        if (it != source.end())
          edges_.push_back({v, it->second.box, it->second.slot, to_box, static_cast<int>(slot)});
      }
    } else if (boxes_[b]->type() == static_cast<int>(CanvasItemType::kScopeBox)) {
      const auto* scope = static_cast<ScopeBoxItem*>(boxes_[b]);
      const std::vector<ir::ValueId>& ins = scope_inputs_[scope->name()];
      for (size_t slot = 0; slot < ins.size(); ++slot) {
        auto it = source.find(ins[slot]);
        if (it != source.end())
          edges_.push_back({ins[slot], it->second.box, it->second.slot, to_box, static_cast<int>(slot)});
      }
    } else {
      auto* terminal = static_cast<TerminalItem*>(boxes_[b]);
      if (terminal->kind() != TerminalItem::Kind::kOutput) continue;
      const ir::ValueId v = g.outputs()[static_cast<size_t>(terminal->index())];
      auto it = source.find(v);
      if (it != source.end()) edges_.push_back({v, it->second.box, it->second.slot, to_box, 0});
    }
  }
  edge_items_.assign(edges_.size(), nullptr);

  std::vector<LayoutBox> layout_boxes;
  for (const BoxItem* box : boxes_)
    layout_boxes.push_back({box->size().width(), box->size().height()});
  std::vector<LayoutEdge> layout_edges;
  for (const Edge& e : edges_) layout_edges.push_back({e.from_box, e.to_box});
  const Layout layered = LayeredLayout().compute(layout_boxes, layout_edges);
  // dot's work grows with its virtual nodes (one per rank an edge crosses): DenseNet's
  // concatenations of every earlier block make thousands of them from 440 boxes.
  layout_work_ = static_cast<int64_t>(layout_boxes.size());
  for (const LayoutEdge& e : layout_edges)
    if (e.from >= 0 && e.to >= 0 && static_cast<size_t>(e.from) < layered.layers.size() &&
        static_cast<size_t>(e.to) < layered.layers.size())
      layout_work_ += std::max(0, std::abs(layered.layers[e.to] - layered.layers[e.from]) - 1);
  apply_layout(layered);

  // One type label per value (at its source port, shared by all its uses).
  std::set<ir::ValueId> labelled;
  for (size_t k = 0; k < edges_.size(); ++k) {
    const ir::ValueId v = edges_[k].value;
    if (document_.is_typed(v) && labelled.insert(v).second)
      edge_items_[k]->set_label(add(new EdgeLabelItem(qstr(g.value(v).type.to_string()))));
  }
  draw_groups();
  graph_rect_ = itemsBoundingRect();
  setSceneRect(graph_rect_.adjusted(-kMargin, -kMargin, kMargin, kMargin));
  if (!in_place) {
    rebuilding_ = was_rebuilding;
    Q_EMIT rebuilt();
    on_selection_changed();  // a new graph: nothing selected
  }
  start_refinement();
}

const GraphScene::Sketch& GraphScene::sketch() const {
  if (!sketch_dirty_) return sketch_;
  sketch_ = Sketch{};
  sketch_.boxes.reserve(boxes_.size());
  for (const BoxItem* box : boxes_) {
    if (!box->isVisible()) continue;
    QColor c = style::colours().box_border;
    if (box->type() == static_cast<int>(CanvasItemType::kNode)) c = static_cast<const NodeItem*>(box)->content().colour;
    sketch_.boxes.push_back(QRectF(box->pos(), box->size()));
    sketch_.colours.push_back(c.rgb());
  }
  for (const EdgeItem* edge : edge_items_)
    if (edge && edge->isVisible()) {
      const QPainterPath& path = edge->path();
      if (path.elementCount() > 0)
        sketch_.edges.emplace_back(edge->mapToScene(path.pointAtPercent(0)), edge->mapToScene(path.pointAtPercent(1)));
    }
  sketch_dirty_ = false;
  return sketch_;
}

void GraphScene::paint_sketch(QPainter& painter, const QRectF& visible) const {
  const Sketch& s = sketch();
  const QTransform t = painter.transform();
  const double scale = t.m11();
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, false);
  // Edges first, under the boxes; those shorter than 3 pixels would only blur the boxes.
  QColor line = style::colours().muted_text;
  line.setAlpha(140);
  painter.setPen(QPen(line, 0));
  std::vector<QLineF> lines;
  for (const QLineF& e : s.edges) {
    if (e.length() * scale < 3) continue;
    if (std::max(e.y1(), e.y2()) < visible.top() || std::min(e.y1(), e.y2()) > visible.bottom() ||
        std::max(e.x1(), e.x2()) < visible.left() || std::min(e.x1(), e.x2()) > visible.right())
      continue;
    lines.push_back(e);
  }
  if (!lines.empty()) painter.drawLines(lines.data(), static_cast<int>(lines.size()));
  // Boxes: at least a device pixel each, in device coordinates (no per-box transform).
  painter.resetTransform();
  for (size_t i = 0; i < s.boxes.size(); ++i) {
    const QRectF& r = s.boxes[i];
    if (!r.intersects(visible)) continue;
    QRectF d = t.mapRect(r);
    if (d.width() < 1) d.setWidth(1);
    if (d.height() < 1) d.setHeight(1);
    painter.fillRect(d, QColor::fromRgb(s.colours[i]));
  }
  painter.restore();
}

void GraphScene::start_refinement() {
  const int count = static_cast<int>(boxes_.size());
  if (!options_.refine) {
    set_note(tr("layered layout"));
  } else if (!node_items_.empty() &&
             std::count(pinned_.begin(), pinned_.end(), true) ==
                 static_cast<std::ptrdiff_t>(node_items_.size())) {
    set_note(tr("saved positions"));
  } else if (count > options_.refine_max_boxes) {
    set_note(tr("layered layout (%1 boxes: above the Graphviz limit of %2)")
                 .arg(thousands(count), thousands(options_.refine_max_boxes)));
    qInfo("%s", qPrintable(layout_note_));
  } else if (layout_work_ > options_.refine_max_work) {
    set_note(tr("layered layout (many long edges: Graphviz would take minutes)"));
    qInfo("%s: %s boxes whose edges cross %s rows of the layered layout", qPrintable(layout_note_),
          qPrintable(thousands(count)), qPrintable(thousands(static_cast<int>(layout_work_ - count))));
  } else {
    std::vector<LayoutBox> layout_boxes;
    for (const BoxItem* box : boxes_)
      layout_boxes.push_back({box->size().width(), box->size().height()});
    std::vector<LayoutEdge> layout_edges;
    for (const Edge& e : edges_)  // the main chain (first output into a first port) straight
      layout_edges.push_back({e.from_box, e.to_box, e.from_slot == 0 && e.to_slot == 0 ? 8 : 1});
    job_->start(std::move(layout_boxes), std::move(layout_edges));
    set_note(tr("laying out with Graphviz..."));
  }
}

void GraphScene::apply_layout(const Layout& layout) {
  for (size_t b = 0; b < boxes_.size(); ++b)
    if (!pinned_[b]) boxes_[b]->setPos(layout.positions[b].x, layout.positions[b].y);
  if (std::find(pinned_.begin(), pinned_.end(), true) != pinned_.end())
    place_terminals_by_pinned_neighbours();
  // The edges are drawn anew through the new routes (an EdgeItem's route is fixed). All old ones
  // go first: QGraphicsScene renumbers its items on every addItem() after a removeItem(), so
  // alternating the two is quadratic (0.75 s for 2,700 edges).
  std::vector<EdgeLabelItem*> labels(edges_.size(), nullptr);
  for (size_t k = 0; k < edges_.size(); ++k) {
    if (EdgeItem* old = edge_items_[k]) {
      labels[k] = old->label();
      removeItem(old);
      delete old;
      edge_items_[k] = nullptr;
    }
  }
  for (size_t k = 0; k < edges_.size(); ++k) {
    const Edge& e = edges_[k];
    std::vector<QPointF> route;
    if (!pinned_[e.from_box] && !pinned_[e.to_box])  // a route only fits the layout's own places
      for (const LayoutPoint& p : layout.routes[k]) route.emplace_back(p.x, p.y);
    auto* edge = new EdgeItem(e.value, boxes_[e.from_box], e.from_slot, boxes_[e.to_box],
                              e.to_slot, std::move(route), document_.is_typed(e.value));
    addItem(edge);
    edge_items_[k] = edge;
    if (labels[k]) edge->set_label(labels[k]);
  }
  for (const auto& [id, item] : node_items_)
    if (!document_.position(id)) auto_positions_[id] = item->pos();
  for (const auto& [scope, item] : scope_boxes_) scope_positions_[scope] = item->pos();
  sketch_dirty_ = true;
  graph_rect_ = itemsBoundingRect();
  setSceneRect(graph_rect_.adjusted(-kMargin, -kMargin, kMargin, kMargin));
}

// A graph input goes just above the first pinned node it feeds, a graph output just below the
// pinned node that produces it, side by side when several share a neighbour.
void GraphScene::place_terminals_by_pinned_neighbours() {
  std::map<int, int> stacked;   // by neighbour box: terminals already put beside it
  std::set<const BoxItem*> placed;  // a terminal goes beside its first pinned neighbour only
  for (const Edge& e : edges_) {
    const bool input = !pinned_[e.from_box] && pinned_[e.to_box] &&
                       boxes_[e.from_box]->type() == static_cast<int>(CanvasItemType::kTerminal);
    const bool output = pinned_[e.from_box] && !pinned_[e.to_box] &&
                        boxes_[e.to_box]->type() == static_cast<int>(CanvasItemType::kTerminal);
    if (!input && !output) continue;
    BoxItem* terminal = boxes_[input ? e.from_box : e.to_box];
    const int neighbour = input ? e.to_box : e.from_box;
    if (!placed.insert(terminal).second) continue;
    const BoxItem* n = boxes_[neighbour];
    const QSizeF size = terminal->size();
    const int index = stacked[neighbour]++;
    const double x = (input ? n->input_port(e.to_slot) : n->output_port(e.from_slot)).x() -
                     size.width() / 2 + index * (size.width() + kTerminalGap / 2);
    const double y = input ? n->pos().y() - kTerminalGap - size.height()
                           : n->pos().y() + n->size().height() + kTerminalGap;
    terminal->setPos(x, y);
  }
}

// ---- canvas editing helpers ----

void GraphScene::refresh_edges() {
  sketch_dirty_ = true;
  for (EdgeItem* edge : edge_items_)
    if (edge) edge->update_geometry();
  for (EdgeItem* edge : group_edges_) edge->update_geometry();
  // The scene rect stays as it is until the drag ends (the edit's rebuild sets it): changing it
  // now would scroll the view under the mouse.
}

std::optional<PortRef> GraphScene::output_port_at(QPointF p, double radius) const {
  const ir::Graph& g = document_.graph();
  for (const BoxItem* box : boxes_) {
    if (!box->isVisible()) continue;  // in a collapsed group
    for (int slot = 0; slot < box->num_output_ports(); ++slot) {
      const QPointF c = box->output_port(slot);
      if (QLineF(c, p).length() > radius) continue;
      PortRef ref;
      ref.centre = c;
      if (box->type() == static_cast<int>(CanvasItemType::kNode)) {
        const ir::Node& n = g.node(static_cast<const NodeItem*>(box)->node_id());
        ref.node = n.id;
        ref.value = n.outputs[static_cast<size_t>(slot)];
      } else if (box->type() == static_cast<int>(CanvasItemType::kTerminal)) {
        const auto* t = static_cast<const TerminalItem*>(box);
        if (t->kind() != TerminalItem::Kind::kInput) continue;
        ref.value = g.inputs()[static_cast<size_t>(t->index())];
      } else {
        continue;  // a collapsed scope's port: a view, nothing to connect from
      }
      return ref;
    }
  }
  return std::nullopt;
}

std::optional<PortRef> GraphScene::input_port_at(QPointF p, double radius) const {
  for (const auto& [id, item] : node_items_) {
    if (!item->isVisible()) continue;  // in a collapsed group
    const std::vector<int>& ports = item->content().port_inputs;
    for (size_t slot = 0; slot < ports.size(); ++slot) {
      const QPointF c = item->input_port(static_cast<int>(slot));
      if (QLineF(c, p).length() > radius) continue;
      PortRef ref;
      ref.centre = c;
      ref.node = id;
      ref.input = ports[slot];
      const ir::Node& n = document_.graph().node(id);
      if (static_cast<size_t>(ref.input) < n.inputs.size())
        ref.value = n.inputs[static_cast<size_t>(ref.input)];
      return ref;
    }
  }
  return std::nullopt;
}

std::optional<PortRef> GraphScene::edge_target_at(QPointF p) const {
  for (QGraphicsItem* item : items(p)) {
    if (item->type() != static_cast<int>(CanvasItemType::kEdge)) continue;
    const auto* edge = static_cast<const EdgeItem*>(item);
    const BoxItem* to = edge->target_box();
    if (to->type() != static_cast<int>(CanvasItemType::kNode)) continue;  // a graph output
    const auto* node = static_cast<const NodeItem*>(to);
    const std::vector<int>& ports = node->content().port_inputs;
    if (edge->target_slot() < 0 || static_cast<size_t>(edge->target_slot()) >= ports.size())
      continue;
    PortRef ref;
    ref.node = node->node_id();
    ref.input = ports[static_cast<size_t>(edge->target_slot())];
    ref.value = edge->value_id();
    ref.centre = node->input_port(edge->target_slot());
    return ref;
  }
  return std::nullopt;
}

ir::ValueId GraphScene::value_at(QPointF p, double radius) const {
  const QRectF around(p - QPointF(radius, radius), QSizeF(2 * radius, 2 * radius));
  for (QGraphicsItem* item : items(around, Qt::IntersectsItemShape, Qt::DescendingOrder)) {
    if (!item->isVisible() || item->type() != static_cast<int>(CanvasItemType::kEdge)) continue;
    return static_cast<const EdgeItem*>(item)->value_id();
  }
  return ir::kNoValue;
}

QPointF GraphScene::input_port_position(ir::NodeId node, int input) const {
  const NodeItem* item = node_item(node);
  if (!item) return {};
  const std::vector<int>& ports = item->content().port_inputs;
  for (size_t slot = 0; slot < ports.size(); ++slot)
    if (ports[slot] == input) return item->input_port(static_cast<int>(slot));
  return {};
}

}  // namespace tessera::studio
