// The graph canvas's view: zoom, pan, fit, overview, and a hint while nothing is open.
#include "studio/canvas/graph_view.h"

#include <QContextMenuEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QGraphicsLineItem>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QMouseEvent>
#include <QUndoStack>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "studio/common/canvas_style.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/common/guard.h"
#include "studio/canvas/minimap.h"
#include "studio/document/clipboard.h"
#include "studio/document/weights.h"

namespace tessera::studio {

GraphView::GraphView(GraphScene* scene, QWidget* parent)
    : QGraphicsView(scene, parent), graph_scene_(scene) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing |
                 QPainter::SmoothPixmapTransform);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
  setFrameShape(QFrame::NoFrame);
  // The canvas has no edge: a drag on empty canvas pans past the graph in any direction, as in
  // Netron (a graph smaller than the window could not be moved at all). Where the view is, the
  // minimap shows, so there are no scroll bars.
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  connect(scene, &QGraphicsScene::sceneRectChanged, this,
          [this] { guarded(this, tr("Showing the graph"), [&] { update_pan_room(); }); });
  connect(scene, &GraphScene::rebuilt, this,
          [this] { guarded(this, tr("Showing the graph"), [&] { on_scene_rebuilt(); }); });
  minimap_ = new Minimap(this);
  connect(scene, &GraphScene::updated, minimap_, &Minimap::invalidate);
  connect(scene, &GraphScene::updated, this, [this] {
    guarded(this, tr("Showing the graph"), [&] {
      if (place_added_.node != ir::kNoNode) keep_added_in_place();
    });
  });
  connect(scene, &GraphScene::rebuilt, minimap_, &Minimap::invalidate);
  connect(scene, &GraphScene::layout_changed, minimap_, &Minimap::invalidate);
  // Nothing to overview while nothing is open (the hint shows instead).
  auto show_minimap = [this] { place_overlays(); };  // shown when there is a graph and room
  connect(scene, &GraphScene::rebuilt, minimap_, show_minimap);
  connect(scene, &GraphScene::updated, minimap_, show_minimap);
  show_minimap();
  create_search();
  create_group_actions();
  place_overlays();
  // The Graphviz layout arrives later and moves the boxes: show the whole of it again unless the
  // user has zoomed or panned since; then keep the box they look at where it was on the screen.
  connect(scene, &GraphScene::layout_about_to_change, this,
          [this] { guarded(this, tr("Showing the graph"), [&] { remember_layout_anchor(); }); });
  connect(scene, &GraphScene::layout_changed, this, [this] {
    guarded(this, tr("Showing the graph"), [&] {
      const QGraphicsItem* anchor = layout_anchor_;
      layout_anchor_ = nullptr;
      if (focus_after_layout_ != ir::kNoNode) {  // an expanded scope or a revealed node
        centre_on_node(focus_after_layout_);
        focus_after_layout_ = ir::kNoNode;
        return;
      }
      if (follow_ != Follow::kNone) {
        follow();
        return;
      }
      layout_anchor_ = anchor;
      restore_layout_anchor();
      layout_anchor_ = nullptr;
    });
  });
}

void GraphView::remember_layout_anchor() {
  layout_anchor_ = nullptr;
  const QRect port = viewport()->rect();
  const QRectF visible = mapToScene(port).boundingRect();
  const QPointF centre = visible.center();
  double best = 0;
  for (const QGraphicsItem* item : scene()->selectedItems()) {  // a selected box on screen first
    if (is_box_item(item) && item->isVisible() && visible.intersects(item->sceneBoundingRect())) {
      layout_anchor_ = item;
      break;
    }
  }
  if (!layout_anchor_) {  // else the box nearest the middle of the view
    for (const QGraphicsItem* item : scene()->items(visible, Qt::IntersectsItemBoundingRect)) {
      if (!is_box_item(item) || !item->isVisible()) continue;
      const QPointF d = item->sceneBoundingRect().center() - centre;
      const double dist = d.x() * d.x() + d.y() * d.y();
      if (!layout_anchor_ || dist < best) {
        layout_anchor_ = item;
        best = dist;
      }
    }
  }
  if (layout_anchor_) layout_anchor_at_ = mapFromScene(layout_anchor_->sceneBoundingRect().center());
}

void GraphView::restore_layout_anchor() {
  if (!layout_anchor_) return;
  // Scroll by the difference between where the box is now on the screen and where it was.
  const QPoint now = mapFromScene(layout_anchor_->sceneBoundingRect().center());
  const QPoint delta = now - layout_anchor_at_;
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + delta.x());
  verticalScrollBar()->setValue(verticalScrollBar()->value() + delta.y());
}

double GraphView::zoom() const {
  return transform().m11();
}

void GraphView::update_pan_room() {
  const QRectF graph = graph_scene_->sceneRect();
  if (graph.isEmpty()) {
    setSceneRect(QRectF());
    return;
  }
  // Room to pan the graph's edge to the window's far edge on every side.
  const double w = viewport()->width() / zoom(), h = viewport()->height() / zoom();
  setSceneRect(graph.adjusted(-w, -h, w, h));
}

void GraphView::set_zoom(double zoom) {
  // Never below what shows the whole graph (a deep network needs less than kMinZoom to fit).
  double lowest = kMinZoom;
  const QRectF target = graph_scene_ ? graph_scene_->sceneRect() : QRectF();
  const QSize port = viewport()->size() - QSize(4, 4);
  if (!target.isEmpty() && !port.isEmpty())
    lowest = std::min(lowest, std::min(port.width() / target.width(), port.height() / target.height()));
  zoom = std::clamp(zoom, lowest, kMaxZoom);
  if (zoom < this->zoom()) {  // more room first, so the point under the cursor can stay put
    const double w = viewport()->width() / zoom, h = viewport()->height() / zoom;
    if (!target.isEmpty()) setSceneRect(target.adjusted(-w, -h, w, h));
  }
  setTransform(QTransform::fromScale(zoom, zoom));
  update_pan_room();
  if (minimap_) minimap_->update();
}

namespace {

// The zoom at which `target` just fits `port`, at most `max_zoom`.
double fitting_zoom(const QRectF& target, const QSize& port, double max_zoom) {
  return std::min({port.width() / target.width(), port.height() / target.height(), max_zoom});
}

}  // namespace

void GraphView::fit() {
  follow_ = Follow::kFit;  // and again after resizes (the scroll bars going away is one)
  fit_now();
}

void GraphView::follow() {
  if (follow_ == Follow::kOverview) overview();
  else if (follow_ == Follow::kFit) fit_now();
}

void GraphView::fit_now() {
  // The scene rect is the graph plus a margin: fitting it into the viewport less two pixels a
  // side (what scrolling in whole pixels may cost, at any zoom) leaves no scroll bars.
  const QRectF target = graph_scene_->sceneRect();
  const QSize port = viewport()->size() - QSize(4, 4);
  if (graph_scene_->graph_rect().isEmpty() || port.isEmpty()) return;
  set_zoom(fitting_zoom(target, port, kMaxFitZoom));
  centerOn(target.center());
}

void GraphView::overview() {
  const QRectF target = graph_scene_->sceneRect();
  const QSize port = viewport()->size();
  if (graph_scene_->graph_rect().isEmpty() || port.isEmpty()) return;
  if (fitting_zoom(target, port, kMaxFitZoom) >= kReadableZoom) {
    fit_now();
    return;
  }
  set_zoom(kReadableZoom);
  const double visible_width = port.width() / kReadableZoom;
  const double visible_height = port.height() / kReadableZoom;
  // The graph's start, not the middle of its bounding box: a wide graph (branches, a layout
  // drifting sideways) would otherwise open on empty space. Of the boxes in the first screenful,
  // show as many whole ones as fit across, the topmost (the first input) among them if it can be.
  const QRectF band(target.left(), target.top(), target.width(), visible_height);
  std::vector<QRectF> boxes;
  std::optional<QRectF> input;  // the first graph input, where a reader starts
  for (const QGraphicsItem* item : graph_scene_->items(band, Qt::IntersectsItemBoundingRect)) {
    if (!item->isVisible() || !is_box_item(item)) continue;
    boxes.push_back(item->sceneBoundingRect());
    if (item->type() == static_cast<int>(CanvasItemType::kTerminal)) {
      const auto* t = static_cast<const TerminalItem*>(item);
      if (t->kind() == TerminalItem::Kind::kInput && (!input || t->sceneBoundingRect().top() < input->top()))
        input = t->sceneBoundingRect();
    }
  }
  double x = target.center().x();
  if (!boxes.empty()) {
    // The window must hold the first input when it is in the first screenful (a side graph of
    // constants, such as Swin-T's attention masks, may have more boxes up there); else the
    // topmost box when it can.
    QRectF top = input ? *input : *std::min_element(boxes.begin(), boxes.end(), [](const QRectF& a, const QRectF& b) {
      return a.top() != b.top() ? a.top() < b.top() : a.left() < b.left();
    });
    if (input) {
      // The boxes right under the input (what it feeds first) whole too: Swin-T's opened with its
      // first Conv cut at the left edge.
      QRectF start = top;
      const ir::Graph& g = graph_scene_->document().graph();
      if (!g.inputs().empty()) {
        const ir::ValueId first = g.inputs().front();
        for (ir::NodeId id : g.node_ids()) {
          const std::vector<ir::ValueId>& ins = g.node(id).inputs;
          if (std::find(ins.begin(), ins.end(), first) == ins.end()) continue;
          const NodeItem* item = graph_scene_->node_item(id);
          if (item && item->isVisible() && item->sceneBoundingRect().top() < target.top() + visible_height)
            start = start.united(item->sceneBoundingRect());
        }
      }
      if (start.width() <= visible_width - 16) top = start;
    }
    int best = -1;
    bool best_has_top = false;
    for (const QRectF& anchor : boxes) {  // windows starting at a box's left edge
      const double left = anchor.left() - 8;
      int count = 0;
      for (const QRectF& r : boxes) count += r.left() >= left && r.right() <= left + visible_width;
      const bool has_top = top.left() >= left && top.right() <= left + visible_width;
      if (input && !has_top) continue;
      if (count > best || (count == best && has_top && !best_has_top)) {
        best = count;
        best_has_top = has_top;
        x = left + visible_width / 2;
      }
    }
    if (input && best < 0) x = input->center().x();
    QRectF all;
    for (const QRectF& r : boxes) all = all.united(r);
    if (all.width() <= visible_width) x = all.center().x();
  }
  centerOn(x, target.top() + visible_height / 2);
}

void GraphView::zoom_in() {
  follow_ = Follow::kNone;
  set_zoom(zoom() * 1.25);
}

void GraphView::zoom_out() {
  follow_ = Follow::kNone;
  set_zoom(zoom() / 1.25);
}

void GraphView::reset_zoom() {
  follow_ = Follow::kNone;
  set_zoom(1.0);
}

void GraphView::on_scene_rebuilt() {
  if (place_added_.node != ir::kNoNode) {  // an op dropped on an empty canvas: no overview
    keep_added_in_place();
    return;
  }
  follow_ = Follow::kOverview;
  overview();
}

void GraphView::keep_added_in_place() {
  const AddedPlace added = place_added_;
  place_added_ = AddedPlace{};
  NodeItem* item = graph_scene_->node_item(added.node);
  if (!item) return;
  // The scene rect grew or moved with the new box: scroll so it is where it was dropped.
  const QPoint now = mapFromScene(item->pos());
  const QPoint delta = now - added.at;
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + delta.x());
  verticalScrollBar()->setValue(verticalScrollBar()->value() + delta.y());
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  follow_ = Follow::kNone;
  set_zoom(zoom() * std::pow(1.15, steps));  // AnchorUnderMouse keeps the point under the cursor
  event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  follow_ = Follow::kNone;  // a drag pans: the user now owns the viewport
  gesture_ = Gesture::kNone;
  press_at_ = event->position().toPoint();
  const bool left = event->button() == Qt::LeftButton;
  if (left && document_) {
    const QPointF p = mapToScene(event->position().toPoint());
    if (std::optional<PortRef> port = graph_scene_->output_port_at(p, port_radius())) {
      gesture_ = Gesture::kConnect;
      wire_value_ = port->value;
      wire_start_ = port->centre;
      drop_wire();
      wire_ = new QGraphicsLineItem(QLineF(wire_start_, p));
      wire_->setPen(QPen(style::colours().muted_text, 1.5, Qt::DashLine));
      wire_->setZValue(10);
      graph_scene_->addItem(wire_);
      event->accept();
      return;
    }
    bool on_node = false;
    for (QGraphicsItem* item : items(event->position().toPoint()))
      if (item->type() == static_cast<int>(CanvasItemType::kNode)) on_node = true;
    if ((event->modifiers() & Qt::ShiftModifier) && !on_node) {
      gesture_ = Gesture::kRubberBand;
      setDragMode(QGraphicsView::RubberBandDrag);
    }
  }
  QGraphicsView::mousePressEvent(event);
  if (left && document_ && gesture_ == Gesture::kNone) {
    move_start_.clear();
    for (ir::NodeId id : graph_scene_->selected_node_ids())
      if (NodeItem* item = graph_scene_->node_item(id)) move_start_[id] = item->pos();
    if (!move_start_.empty()) gesture_ = Gesture::kMove;
  }
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  if (gesture_ == Gesture::kConnect) {
    if (wire_) wire_->setLine(QLineF(wire_start_, mapToScene(event->position().toPoint())));
    event->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(event);
  if (gesture_ == Gesture::kMove) graph_scene_->refresh_edges();
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  const Gesture gesture = gesture_;
  gesture_ = Gesture::kNone;
  if (gesture == Gesture::kConnect) {
    guarded(this, tr("Connecting"),
            [&] { finish_connect(mapToScene(event->position().toPoint())); });
    event->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(event);
  // A click on a box (a node, a scope) is not a click on the edge behind it.
  const QList<QGraphicsItem*> under = items(event->position().toPoint());
  const bool on_box = std::any_of(under.begin(), under.end(), is_box_item);
  // (kMove too: a press on empty canvas while nodes are selected is taken as a possible move.)
  if ((gesture == Gesture::kNone || gesture == Gesture::kMove) && !on_box && event->button() == Qt::LeftButton &&
      (event->position().toPoint() - press_at_).manhattanLength() <= 3) {
    const ir::ValueId v = graph_scene_->value_at(mapToScene(event->position().toPoint()), 4 / zoom());
    if (v != ir::kNoValue) Q_EMIT value_clicked(v);
  }
  if (gesture == Gesture::kMove) guarded(this, tr("Moving"), [&] { finish_move(); });
  if (gesture == Gesture::kRubberBand) setDragMode(QGraphicsView::ScrollHandDrag);
}

double GraphView::port_radius() const {
  return std::max(6.0, 8.0 / zoom());
}

void GraphView::drop_wire() {
  // The scene deletes every item when it rebuilds; the line is only ours while it is still there.
  if (wire_ && graph_scene_->items().contains(wire_)) {
    graph_scene_->removeItem(wire_);
    delete wire_;
  }
  wire_ = nullptr;
}

void GraphView::finish_connect(QPointF scene_pos) {
  drop_wire();
  if (!document_ || wire_value_ == ir::kNoValue) return;
  const std::optional<PortRef> target = graph_scene_->input_port_at(scene_pos, port_radius());
  if (!target) return;  // a line that ends nowhere does nothing
  const Status st = document_->connect(wire_value_, target->node, target->input);
  if (!st)
    Q_EMIT edit_refused(tr("Cannot connect: %1").arg(QString::fromStdString(st.error().message)));
}

void GraphView::finish_move() {
  if (!document_ || move_start_.empty()) return;
  const auto& [first, start] = *move_start_.begin();
  const NodeItem* first_item = graph_scene_->node_item(first);
  if (!first_item) return;
  const QPointF delta = first_item->pos() - start;
  if (delta.manhattanLength() < 0.5) return;
  std::vector<ir::NodeId> ids;
  std::map<ir::NodeId, NodePosition> unplaced;  // set where they were first, in the same step
  for (const auto& [id, p] : move_start_) {
    ids.push_back(id);
    if (!document_->position(id)) unplaced[id] = NodePosition{p.x(), p.y()};
  }
  move_start_.clear();
  QUndoStack& stack = document_->undo_stack();
  const int before = stack.count();
  document_->begin_macro(ids.size() == 1 ? tr("Move node") : tr("Move %1 nodes").arg(ids.size()));
  Status st = unplaced.empty() ? Status::ok() : document_->set_positions(unplaced);
  if (st) st = document_->move_nodes(ids, delta.x(), delta.y());
  document_->end_macro();
  if (!st) {
    if (stack.count() > before) stack.undo();  // nothing half done stays
    Q_EMIT edit_refused(tr("Cannot move: %1").arg(QString::fromStdString(st.error().message)));
  }
  graph_scene_->schedule_update();  // boxes to the document's places (also after a refusal)
}

std::optional<PortRef> GraphView::disconnect_target_at(QPoint pos) const {
  const QPointF p = mapToScene(pos);
  if (std::optional<PortRef> port = graph_scene_->input_port_at(p, port_radius());
      port && port->value != ir::kNoValue)
    return port;
  return graph_scene_->edge_target_at(p);
}

Status GraphView::disconnect_at(QPoint pos) {
  if (!document_) return make_error("the canvas has no document to edit");
  const std::optional<PortRef> target = disconnect_target_at(pos);
  if (!target) return make_error("nothing to disconnect there");
  Status st = document_->disconnect(target->node, target->input);
  if (!st)
    Q_EMIT edit_refused(tr("Cannot disconnect: %1").arg(QString::fromStdString(st.error().message)));
  return st;
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
  if (document_ && !disconnect_target_at(event->pos())) {
    // On a node: create what its absent inputs need.
    const NodeItem* node = nullptr;
    for (QGraphicsItem* item : items(event->pos()))
      if (item->type() == static_cast<int>(CanvasItemType::kNode))
        node = static_cast<const NodeItem*>(item);
    if (node && document_->graph().has_node(node->node_id())) {
      const ir::NodeId id = node->node_id();
      // The menu acts on this node: it becomes the selection (the inspector shows it), unless it
      // is already part of a selection.
      if (!graph_scene_->selected_node_ids().contains(id)) graph_scene_->select_nodes({id});
      QMenu menu(this);
      const ir::Node& n = document_->graph().node(id);
      const ops::OpDef* def = document_->op_def(id);
      const size_t count = def ? def->inputs.size() : n.inputs.size();
      for (size_t i = 0; i < count; ++i) {
        if (i < n.inputs.size() && n.inputs[i] != ir::kNoValue) continue;
        const QString port =
            def ? QString::fromStdString(def->inputs[i].name) : QString::number(i);
        const int index = static_cast<int>(i);
        connect(menu.addAction(tr("Add Input to %1\u2026").arg(port)), &QAction::triggered, this,
                [this, id, index] {
                  guarded(this, tr("Adding an input"), [&] { (void)add_graph_input(id, index); });
                });
        connect(menu.addAction(tr("Add Weight to %1\u2026").arg(port)), &QAction::triggered, this,
                [this, id, index] {
                  guarded(this, tr("Adding a weight"), [&] { (void)add_weight(id, index); });
                });
      }
      // Nested graphs: one entry per graph attribute.
      for (const auto& [key, attr] : n.attrs) {
        if (attr.kind() != ir::AttrKind::kGraph) continue;
        const QString name = QString::fromStdString(key);
        connect(menu.addAction(tr("Open Graph '%1' (%2 nodes)").arg(name).arg(attr.g().num_nodes())),
                &QAction::triggered, this, [this, id, name] { Q_EMIT open_subgraph_requested(id, name); });
      }
      const std::vector<ir::ValueId>& outputs = document_->graph().outputs();
      for (ir::ValueId v : n.outputs) {
        if (std::find(outputs.begin(), outputs.end(), v) != outputs.end()) continue;
        connect(menu.addAction(tr("Make %1 a Graph Output")
                                   .arg(QString::fromStdString(document_->graph().value(v).name))),
                &QAction::triggered, this, [this, v] {
                  guarded(this, tr("Adding an output"), [&] {
                    if (Status st = document_->add_output(v); !st)
                      Q_EMIT edit_refused(tr("Cannot add the output: %1")
                                            .arg(QString::fromStdString(st.error().message)));
                  });
                });
      }
      // The node itself: rename (asks the name) and delete (the selection it is part of).
      if (!menu.isEmpty()) menu.addSeparator();
      connect(menu.addAction(tr("Rename\u2026")), &QAction::triggered, this, [this, id] {
        guarded(this, tr("Renaming"), [&] {
          if (!document_->graph().has_node(id)) return;
          const QString name = ask(tr("Rename"), tr("New name of the node:"),
                                   QString::fromStdString(document_->graph().node(id).name));
          if (name.trimmed().isEmpty()) return;
          if (Status st = document_->rename_node(id, name.trimmed().toStdString()); !st)
            Q_EMIT edit_refused(tr("Cannot rename: %1").arg(QString::fromStdString(st.error().message)));
        });
      });
      const QList<ir::NodeId> selection = graph_scene_->selected_node_ids();
      connect(menu.addAction(selection.size() > 1 ? tr("Delete %1 Nodes").arg(selection.size()) : tr("Delete")),
              &QAction::triggered, this, [this, selection] {
                guarded(this, tr("Deleting"), [&] {
                  if (Status st = document_->remove_nodes({selection.begin(), selection.end()}); !st)
                    Q_EMIT edit_refused(tr("Cannot delete: %1").arg(QString::fromStdString(st.error().message)));
                });
              });
      menu.exec(event->globalPos());
      event->accept();
      return;
    }
  }
  if (!document_ || !disconnect_target_at(event->pos())) {
    QGraphicsView::contextMenuEvent(event);
    return;
  }
  QMenu menu(this);
  QAction* disconnect = menu.addAction(tr("Disconnect"));
  const QPoint at = event->pos();
  if (menu.exec(event->globalPos()) == disconnect)
    guarded(this, tr("Disconnecting"), [&] { (void)disconnect_at(at); });
  event->accept();
}

// ---- creating inputs and weights ----

namespace {

// "N, 1, 28, 28" (brackets optional): numbers are sizes, identifiers symbolic dimensions.
Expected<std::vector<ir::Dim>> parse_dims(const QString& text) {
  QString t = text.trimmed();
  if (t.startsWith(QLatin1Char('['))) t.remove(0, 1);
  if (t.endsWith(QLatin1Char(']'))) t.chop(1);
  std::vector<ir::Dim> dims;
  if (t.trimmed().isEmpty()) return dims;
  for (const QString& raw : t.split(QLatin1Char(','))) {
    const QString item = raw.trimmed();
    bool ok = false;
    const qlonglong n = item.toLongLong(&ok);
    if (ok && n >= 0) {
      dims.push_back(ir::Dim::known(n));
    } else if (!item.isEmpty() && (item[0].isLetter() || item[0] == QLatin1Char('_'))) {
      dims.push_back(ir::Dim::named(item.toStdString()));
    } else {
      return make_error("'" + item.toStdString() + "' is not a size or a dimension name");
    }
  }
  return dims;
}

// The fan_in of a weight of `shape` for input `input` of node `n` (studio/weights.h).
int64_t weight_fan_in(const ir::Graph& g, const ir::Node& n, int input, const Shape& shape) {
  const bool gemm = n.op == "Gemm";
  auto of_weight = [&](const Shape& w) -> int64_t {
    if (gemm && w.size() == 2) {
      auto it = n.attrs.find("transB");
      const bool trans = it != n.attrs.end() && it->second.kind() == ir::AttrKind::kInt &&
                         it->second.i() != 0;
      return trans ? w[1] : w[0];
    }
    return fan_in_of(w);
  };
  if (shape.size() == 1 && input != 1 && n.inputs.size() > 1 && g.has_value(n.inputs[1])) {
    const ir::TensorType& w = g.value(n.inputs[1]).type;
    if (w.is_static()) {
      Shape ws;
      for (const ir::Dim& d : w.dims) ws.push_back(d.size);
      return std::max<int64_t>(1, of_weight(ws));
    }
  }
  return std::max<int64_t>(1, of_weight(shape));
}

}  // namespace

QString GraphView::ask(const QString& title, const QString& label, const QString& initial) {
  if (text_prompt_) return text_prompt_(title, label, initial);
  return QInputDialog::getText(this, title, label, QLineEdit::Normal, initial);
}

Expected<ir::ValueId> GraphView::add_and_connect(
    const QString& what, ir::NodeId node, int input,
    const std::function<Expected<ir::ValueId>()>& make) {
  QUndoStack& stack = document_->undo_stack();
  const int before = stack.count();
  document_->begin_macro(what);
  Expected<ir::ValueId> value = make();
  Status st = value ? document_->connect(value.value(), node, input) : value.status();
  document_->end_macro();
  if (!st) {
    if (stack.count() > before) stack.undo();  // nothing half done stays
    Q_EMIT edit_refused(tr("Cannot add: %1").arg(QString::fromStdString(st.error().message)));
    return st.error();
  }
  return value;
}

Expected<ir::ValueId> GraphView::add_graph_input(ir::NodeId node, int input) {
  if (!document_) return make_error("the canvas has no document to edit");
  if (!document_->graph().has_node(node)) return make_error("no such node");
  const QString name = ask(tr("Add input"), tr("Name of the graph input:"), QStringLiteral("x"));
  if (name.trimmed().isEmpty()) return make_error("cancelled");
  const QString shape =
      ask(tr("Add input"), tr("Shape of %1 (f32), e.g. N, 1, 28, 28:").arg(name), QString());
  if (shape.trimmed().isEmpty()) return make_error("cancelled");
  Expected<std::vector<ir::Dim>> dims = parse_dims(shape);
  if (!dims) {
    Q_EMIT edit_refused(tr("Cannot add: %1").arg(QString::fromStdString(dims.error().message)));
    return dims.error();
  }
  NodePosition at{};
  if (NodeItem* item = graph_scene_->node_item(node))
    at = NodePosition{item->pos().x(), item->pos().y() - 80};
  return add_and_connect(tr("Add input %1").arg(name), node, input, [&] {
    return document_->add_input(name.trimmed().toStdString(),
                                ir::TensorType(DType::kF32, dims.value()), at);
  });
}

Expected<ir::ValueId> GraphView::add_weight(ir::NodeId node, int input) {
  if (!document_) return make_error("the canvas has no document to edit");
  if (!document_->graph().has_node(node)) return make_error("no such node");
  const ir::Node& n = document_->graph().node(node);
  const ops::OpDef* def = document_->op_def(node);
  const std::string port = def && input < static_cast<int>(def->inputs.size())
                               ? def->inputs[input].name
                               : std::to_string(input);
  const std::string name = (n.name.empty() ? "n" + std::to_string(node) : n.name) + "." + port;
  // Pre-filled with what the graph says (a Conv bias: its weight's output channels).
  QString suggested;
  if (std::optional<tessera::Shape> s = suggested_weight_shape(document_->graph(), n, input)) {
    QStringList dims;
    for (int64_t d : *s) dims << QString::number(d);
    suggested = dims.join(QStringLiteral(", "));
  }
  const QString text =
      ask(tr("Add weight"), tr("Shape of %1, e.g. 6, 1, 5, 5:").arg(QString::fromStdString(name)),
          suggested);
  if (text.trimmed().isEmpty()) return make_error("cancelled");
  Expected<std::vector<ir::Dim>> dims = parse_dims(text);
  tessera::Shape shape;
  if (dims)
    for (const ir::Dim& d : dims.value()) shape.push_back(d.size);
  Status st = dims ? Status::ok() : dims.status();
  for (int64_t d : shape)
    if (st && d < 0) st = make_error("a weight's shape takes sizes only");
  const int64_t fan_in = weight_fan_in(document_->graph(), n, input, shape);
  // Seeds in creation order: the same clicks give the same weights.
  const uint64_t seed = static_cast<uint64_t>(document_->graph().params().size()) + 1;
  Expected<Tensor> data =
      st ? make_weight(shape, WeightInit::kUniform, fan_in, seed) : Expected<Tensor>(st.error());
  if (!data) {
    Q_EMIT edit_refused(tr("Cannot add: %1").arg(QString::fromStdString(data.error().message)));
    return data.error();
  }
  return add_and_connect(tr("Add weight %1").arg(QString::fromStdString(name)), node, input,
                         [&] { return document_->add_param(name, data.value()); });
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  update_pan_room();
  place_overlays();
  follow();
}

bool GraphView::sketching() const {
  return graph_scene_->box_count() >= GraphScene::kSketchMinBoxes && zoom() < GraphScene::kSketchZoom;
}

void GraphView::paintEvent(QPaintEvent* event) {
  if (!sketching()) {
    QGraphicsView::paintEvent(event);
    return;
  }
  guarded(this, tr("Drawing the graph"), [&] {
    QPainter painter(viewport());
    painter.fillRect(event->rect(), style::colours().background);
    painter.setTransform(viewportTransform());
    const QRectF visible = mapToScene(event->rect()).boundingRect().adjusted(-2, -2, 2, 2);
    graph_scene_->paint_sketch(painter, visible);
  });
}

void GraphView::drawForeground(QPainter* painter, const QRectF& rect) {
  QGraphicsView::drawForeground(painter, rect);
  if (!graph_scene_->document().is_empty()) return;
  painter->save();
  painter->resetTransform();
  painter->setPen(style::colours().muted_text);
  painter->setFont(style::canvas_font(15));
  painter->drawText(viewport()->rect(), Qt::AlignCenter, empty_hint());
  painter->restore();
}

QString GraphView::empty_hint() const {
  return tr("Open a graph (.onnx, .tsr, .json or .tir) with File \u203a Open\u2026  (Ctrl+O)\n\n"
                       "or build one: drag ops from the Palette onto the canvas (or double-click them),\n"
                       "then right-click a node to add its graph input, its weights and its output,\n"
                       "and drag from an output port (bottom) to an input port (top) to connect.");
}

void GraphView::set_document(Document* document) {
  document_ = document;
  setAcceptDrops(document_ != nullptr);
  viewport()->setAcceptDrops(document_ != nullptr);
}

Expected<ir::NodeId> GraphView::add_op(const QString& op, QPointF scene_pos) {
  if (!document_) return make_error("the canvas has no document to edit");
  follow_ = Follow::kNone;  // the user is editing: the view stays where it is
  // An empty name makes the document pick "conv1", "conv2", ...
  const QPoint at = mapFromScene(scene_pos);
  Expected<ir::NodeId> id =
      document_->add_node(op.toStdString(), {}, NodePosition{scene_pos.x(), scene_pos.y()});
  if (id) place_added_ = AddedPlace{*id, at};  // kept there when the scene shows it
  if (!id)
    Q_EMIT edit_refused(tr("Cannot add %1: %2").arg(op, QString::fromStdString(id.error().message)));
  return id;
}

Expected<ir::NodeId> GraphView::add_op_at_centre(const QString& op) {
  // Ops added one after another land in a cascade, not on top of each other.
  // Never on another box (a node, a graph input or output): where a new box would cover one,
  // it moves down and right.
  QPointF at = mapToScene(viewport()->rect().center());
  for (int tries = 0; tries < 50; ++tries) {
    bool taken = false;
    for (QGraphicsItem* item : graph_scene_->items(QRectF(at, QSizeF(140, 50))))
      if (is_box_item(item) && item->isVisible()) taken = true;
    if (!taken) break;
    at += QPointF(40, 40);
  }
  return add_op(op, at);
}

Expected<ir::NodeId> GraphView::drop_op(const QMimeData* data, QPointF scene_pos) {
  const QString mime = QString::fromLatin1(kOpMimeType);
  if (!data || !data->hasFormat(mime)) return make_error("the dropped data is not an op");
  return add_op(QString::fromUtf8(data->data(mime)), scene_pos);
}

void GraphView::dragEnterEvent(QDragEnterEvent* event) {
  if (document_ && event->mimeData()->hasFormat(QString::fromLatin1(kOpMimeType))) {
    event->setDropAction(Qt::CopyAction);
    event->accept();
  } else {
    event->ignore();
  }
}

void GraphView::dragMoveEvent(QDragMoveEvent* event) {
  if (document_ && event->mimeData()->hasFormat(QString::fromLatin1(kOpMimeType))) {
    event->setDropAction(Qt::CopyAction);
    event->accept();
  } else {
    event->ignore();
  }
}

void GraphView::dropEvent(QDropEvent* event) {
  guarded(this, tr("Adding an op"), [&] {
    const QPointF at = mapToScene(event->position().toPoint());
    if (drop_op(event->mimeData(), at)) {
      event->setDropAction(Qt::CopyAction);
      event->accept();
    } else {
      event->ignore();
    }
  });
}

}  // namespace tessera::studio
