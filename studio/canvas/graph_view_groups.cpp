// The graph view's group actions: Group (Ctrl+G), Ungroup, Collapse/Expand Group.
#include <QAction>
#include <QMouseEvent>
#include <algorithm>
#include <set>

#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/common/guard.h"

namespace tessera::studio {

void GraphView::create_group_actions() {
  auto add = [this](const QString& text, const char* name, QKeySequence key,
                    std::function<void()> body) {
    auto* a = new QAction(text, this);
    a->setObjectName(QLatin1String(name));
    a->setShortcut(key);
    connect(a, &QAction::triggered, this, [this, text, body] { guarded(this, text, body); });
    addAction(a);
    group_actions_ << a;
  };
  add(tr("&Group\u2026"), "action_group", QKeySequence(Qt::CTRL | Qt::Key_G), [this] {
    if (graph_scene_->selected_node_ids().isEmpty()) return;
    int n = static_cast<int>(graph_scene_->document().layout().groups.size()) + 1;
    const QString name = ask(tr("Group"), tr("Name of the group:"), tr("group%1").arg(n));
    if (!name.trimmed().isEmpty()) (void)group_selection(name.trimmed());
  });
  add(tr("&Ungroup"), "action_ungroup", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_G),
      [this] { (void)ungroup_selection(); });
  add(tr("Collapse/E&xpand Group"), "action_collapse_group", QKeySequence(Qt::CTRL | Qt::Key_E),
      [this] { (void)toggle_collapsed_selection(); });
}

std::vector<std::string> GraphView::selected_groups() const {
  std::vector<std::string> out;
  const QList<ir::NodeId> selected = graph_scene_->selected_node_ids();
  const std::set<ir::NodeId> ids(selected.begin(), selected.end());
  for (const formats::NodeGroup& g : graph_scene_->document().layout().groups)
    if (std::any_of(g.nodes.begin(), g.nodes.end(), [&](ir::NodeId id) { return ids.count(id); }))
      out.push_back(g.name);
  for (const QString& name : graph_scene_->selected_group_boxes()) {
    const std::string n = name.toStdString();
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

namespace {

Status refused(GraphView* view, const QString& what, Status st) {
  if (!st) Q_EMIT view->edit_refused(what.arg(QString::fromStdString(st.error().message)));
  return st;
}

}  // namespace

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  // A double-click on a collapsed scope's box expands it in place (a view state).
  for (QGraphicsItem* item : items(event->position().toPoint())) {
    if (item->type() != static_cast<int>(CanvasItemType::kScopeBox)) continue;
    const QString scope = static_cast<ScopeBoxItem*>(item)->name();
    guarded(this, tr("Expanding the scope"), [&] { expand_scope(scope); });
    event->accept();
    return;
  }
  // A double-click on a node holding a nested graph (If, Loop, Scan) opens its first one.
  if (document_)
    for (QGraphicsItem* item : items(event->position().toPoint())) {
      if (item->type() != static_cast<int>(CanvasItemType::kNode)) continue;
      const ir::NodeId id = static_cast<NodeItem*>(item)->node_id();
      if (!document_->graph().has_node(id)) break;
      // then_branch before else_branch (the attributes are in name order), else the first.
      const ir::Node& n = document_->graph().node(id);
      std::string chosen;
      for (const auto& [key, attr] : n.attrs)
        if (attr.kind() == ir::AttrKind::kGraph && (chosen.empty() || key == "then_branch")) chosen = key;
      if (!chosen.empty()) {
        Q_EMIT open_subgraph_requested(id, QString::fromStdString(chosen));
        event->accept();
        return;
      }
      break;
    }
  // A double-click on a collapsed group's box expands it.
  if (document_) {
    for (QGraphicsItem* item : items(event->position().toPoint())) {
      if (item->type() != static_cast<int>(CanvasItemType::kGroupBox)) continue;
      const std::string name = static_cast<GroupBoxItem*>(item)->name().toStdString();
      guarded(this, tr("Expanding the group"), [&] {
        (void)refused(this, tr("Cannot expand: %1"), document_->set_group_collapsed(name, false));
      });
      event->accept();
      return;
    }
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

Status GraphView::group_selection(const QString& name) {
  if (!document_) return make_error("the canvas has no document to edit");
  const QList<ir::NodeId> ids = graph_scene_->selected_node_ids();
  if (ids.isEmpty()) return make_error("no node selected");
  // Boxes the document does not place yet get their place first, so the frame fits them.
  std::map<ir::NodeId, NodePosition> unplaced;
  for (ir::NodeId id : ids)
    if (!document_->position(id))
      if (NodeItem* item = graph_scene_->node_item(id))
        unplaced[id] = NodePosition{item->pos().x(), item->pos().y()};
  document_->begin_macro(tr("Group %1").arg(name));
  Status st = unplaced.empty() ? Status::ok() : document_->set_positions(unplaced);
  if (st) st = document_->group({ids.begin(), ids.end()}, name.toStdString());
  document_->end_macro();
  if (!st && !unplaced.empty()) document_->undo_stack().undo();
  return refused(this, tr("Cannot group: %1"), st);
}

Status GraphView::ungroup_selection() {
  if (!document_) return make_error("the canvas has no document to edit");
  const std::vector<std::string> groups = selected_groups();
  if (groups.empty()) return make_error("no selected node is in a group");
  Status st = Status::ok();
  for (const std::string& g : groups)
    if (st) st = document_->ungroup(g);
  return refused(this, tr("Cannot ungroup: %1"), st);
}

Status GraphView::toggle_collapsed_selection() {
  if (!document_) return make_error("the canvas has no document to edit");
  const std::vector<std::string> groups = selected_groups();
  if (groups.empty()) return make_error("no selected node is in a group");
  Status st = Status::ok();
  const std::vector<formats::NodeGroup> all = document_->layout().groups;  // edits change it
  for (const formats::NodeGroup& g : all)
    if (st && std::find(groups.begin(), groups.end(), g.name) != groups.end())
      st = document_->set_group_collapsed(g.name, !g.collapsed);
  return refused(this, tr("Cannot collapse: %1"), st);
}

}  // namespace tessera::studio
