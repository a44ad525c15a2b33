// The graph view's search field (Ctrl+F, Enter/F3 for the next match) and the placing of the
// overlays (search field, minimap) in the view's corners.
#include <QAction>
#include <QKeyEvent>
#include <QLineEdit>
#include <QScrollBar>
#include <set>

#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/common/guard.h"
#include "studio/canvas/minimap.h"

namespace tessera::studio {

namespace {

constexpr int kOverlayMargin = 10;  // pixels between an overlay and the view's edge

// Escape in the field hides it and gives the focus back to the canvas.
class SearchField : public QLineEdit {
 public:
  explicit SearchField(QWidget* parent) : QLineEdit(parent) {}

 protected:
  void keyPressEvent(QKeyEvent* event) override {
    if (event->key() == Qt::Key_Escape) {
      hide();
      if (parentWidget()) parentWidget()->setFocus();
      event->accept();
      return;
    }
    QLineEdit::keyPressEvent(event);
  }
};

}  // namespace

void GraphView::create_search() {
  search_field_ = new SearchField(this);
  search_field_->setObjectName(QStringLiteral("search_field"));
  search_field_->setPlaceholderText(tr("Find node by name or op"));
  search_field_->setClearButtonEnabled(true);
  search_field_->setFixedWidth(240);
  search_field_->hide();
  connect(search_field_, &QLineEdit::textChanged, this,
          [this] { guarded(this, tr("Finding"), [&] { (void)find_next(true); }); });
  connect(search_field_, &QLineEdit::returnPressed, this,
          [this] { guarded(this, tr("Finding"), [&] { (void)find_next(); }); });

  find_action_ = new QAction(tr("Fin&d\u2026"), this);
  find_action_->setObjectName(QStringLiteral("action_find"));
  find_action_->setShortcut(QKeySequence::Find);
  connect(find_action_, &QAction::triggered, this,
          [this] { guarded(this, tr("Finding"), [&] { show_search(); }); });
  addAction(find_action_);
  find_next_action_ = new QAction(tr("Find &Next"), this);
  find_next_action_->setObjectName(QStringLiteral("action_find_next"));
  find_next_action_->setShortcut(QKeySequence(Qt::Key_F3));
  connect(find_next_action_, &QAction::triggered, this,
          [this] { guarded(this, tr("Finding"), [&] { (void)find_next(); }); });
  addAction(find_next_action_);
}

void GraphView::place_overlays() {
  const QRect port = viewport()->geometry();
  if (search_field_) {
    search_field_->move(port.right() - search_field_->width() - kOverlayMargin,
                        port.top() + kOverlayMargin);
    search_field_->raise();
  }
  if (minimap_) {
    // A quarter of the canvas at most: on a small canvas (an 800x500 window with its docks) a
    // full-size minimap would hide most of the graph. Below 60 px across it is not shown.
    const int w = std::min(Minimap::kWidth, port.width() / 4);
    const int h = std::min(Minimap::kHeight, port.height() / 4);
    const bool room = w >= 60 && h >= 45;
    minimap_->setFixedSize(std::max(w, 1), std::max(h, 1));
    minimap_->setVisible(room && !graph_scene_->document().is_empty());
    minimap_->move(port.right() - minimap_->width() - kOverlayMargin,
                   port.bottom() - minimap_->height() - kOverlayMargin);
    minimap_->raise();
  }
}

void GraphView::show_search() {
  place_overlays();
  search_field_->show();
  search_field_->raise();
  search_field_->setFocus(Qt::ShortcutFocusReason);
  search_field_->selectAll();
}

QList<ir::NodeId> GraphView::find_nodes(const QString& text) const {
  QList<ir::NodeId> found;
  const QString needle = text.trimmed();
  if (needle.isEmpty()) return found;
  const ir::Graph& g = graph_scene_->document().graph();
  Expected<std::vector<ir::NodeId>> order = g.topological_order();
  const std::vector<ir::NodeId> ids = order ? order.value() : g.node_ids();
  for (ir::NodeId id : ids) {
    if (graph_scene_->is_folded(id)) continue;  // a row inside its consumer, no box of its own
    const ir::Node& n = g.node(id);
    if (QString::fromStdString(n.name).contains(needle, Qt::CaseInsensitive) ||
        QString::fromStdString(n.op).contains(needle, Qt::CaseInsensitive) ||
        graph_scene_->pattern_of(id).contains(needle, Qt::CaseInsensitive))  // "LayerNorm" finds its boxes
      found << id;
  }
  return found;
}

ir::NodeId GraphView::find_next(bool from_start) {
  const QList<ir::NodeId> found = find_nodes(search_field_->text());
  const bool miss = found.isEmpty() && !search_field_->text().trimmed().isEmpty();
  search_field_->setStyleSheet(miss ? QStringLiteral("QLineEdit { background: #f8d7d7; }")
                                    : QString());
  if (found.isEmpty()) {
    search_index_ = -1;
    return ir::kNoNode;
  }
  search_index_ = from_start ? 0 : (search_index_ + 1) % found.size();
  const ir::NodeId id = found[search_index_];
  reveal_nodes({id});
  return id;
}

void GraphView::reveal_nodes(const QList<ir::NodeId>& ids) {
  graph_scene_->flush_update();
  if (ids.isEmpty()) return;
  // A node inside a collapsed scope: the scope opens (and the layout that follows keeps it shown).
  if (!graph_scene_->node_item(ids.front()) && graph_scene_->expand_to(ids.front()) &&
      graph_scene_->is_refining())
    focus_after_layout_ = ids.front();
  graph_scene_->select_nodes(ids);
  centre_on_node(ids.front());
}

void GraphView::centre_on_node(ir::NodeId id) {
  NodeItem* item = graph_scene_->node_item(id);
  if (!item) return;
  follow_ = Follow::kNone;
  if (zoom() < kReadableZoom) set_zoom(kReadableZoom);  // readable, not a speck
  centerOn(item->sceneBoundingRect().center());
}

void GraphView::expand_scope(const QString& scope) {
  // The scope's first node (by name scope, or a pattern's member) is where the user looks: shown
  // once the scene is rebuilt and again when the refined layout moves it.
  ir::NodeId first = ir::kNoNode;
  const ir::Graph& g = graph_scene_->document().graph();
  Expected<std::vector<ir::NodeId>> order = g.topological_order();
  for (ir::NodeId id : order ? order.value() : g.node_ids())
    if (QString::fromStdString(g.node(id).name).startsWith(scope + QLatin1Char('/')) ||
        graph_scene_->pattern_of(id) == scope) {
      first = id;
      break;
    }
  graph_scene_->expand_scope(scope);
  if (first == ir::kNoNode) return;
  focus_after_layout_ = graph_scene_->is_refining() ? first : ir::kNoNode;
  centre_on_node(first);
}

}  // namespace tessera::studio
