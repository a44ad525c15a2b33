// The graph canvas's view: zoom, pan, fit, overview, and a hint while nothing is open.
#include "studio/graph_view.h"

#include <QContextMenuEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QGraphicsLineItem>
#include <QMenu>
#include <QMimeData>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "studio/canvas_style.h"
#include "studio/document.h"
#include "studio/graph_items.h"
#include "studio/graph_scene.h"
#include "studio/guard.h"
#include "studio/palette.h"

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
  connect(scene, &GraphScene::rebuilt, this,
          [this] { guarded(this, tr("Showing the graph"), [&] { on_scene_rebuilt(); }); });
  // The Graphviz layout arrives later and moves the boxes: show the whole of it again unless the
  // user has zoomed or panned since.
  connect(scene, &GraphScene::layout_changed, this, [this] {
    guarded(this, tr("Showing the graph"), [&] {
      if (auto_fit_) overview();
    });
  });
}

double GraphView::zoom() const {
  return transform().m11();
}

void GraphView::set_zoom(double zoom) {
  zoom = std::clamp(zoom, kMinZoom, kMaxZoom);
  setTransform(QTransform::fromScale(zoom, zoom));
}

namespace {

// The zoom at which `target` just fits `port`, at most `max_zoom`.
double fitting_zoom(const QRectF& target, const QSize& port, double max_zoom) {
  return std::min({port.width() / target.width(), port.height() / target.height(), max_zoom});
}

}  // namespace

void GraphView::fit() {
  // The scene rect is the graph plus a margin: fitting it (plus the pixel that scrolling in whole
  // pixels may cost) leaves no scroll bars.
  const QRectF target = graph_scene_->sceneRect().adjusted(-2, -2, 2, 2);
  if (graph_scene_->graph_rect().isEmpty() || viewport()->size().isEmpty()) return;
  set_zoom(fitting_zoom(target, viewport()->size(), kMaxFitZoom));
  centerOn(target.center());
}

void GraphView::overview() {
  const QRectF target = graph_scene_->sceneRect();
  const QSize port = viewport()->size();
  if (graph_scene_->graph_rect().isEmpty() || port.isEmpty()) return;
  if (fitting_zoom(target, port, kMaxFitZoom) >= kReadableZoom) {
    fit();
    return;
  }
  set_zoom(kReadableZoom);
  const double visible_height = port.height() / kReadableZoom;
  centerOn(target.center().x(), target.top() + visible_height / 2);
}

void GraphView::zoom_in() {
  auto_fit_ = false;
  set_zoom(zoom() * 1.25);
}

void GraphView::zoom_out() {
  auto_fit_ = false;
  set_zoom(zoom() / 1.25);
}

void GraphView::reset_zoom() {
  auto_fit_ = false;
  set_zoom(1.0);
}

void GraphView::on_scene_rebuilt() {
  auto_fit_ = true;
  overview();
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  auto_fit_ = false;
  set_zoom(zoom() * std::pow(1.15, steps));  // AnchorUnderMouse keeps the point under the cursor
  event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  auto_fit_ = false;  // a drag pans: the user now owns the viewport
  gesture_ = Gesture::kNone;
  const bool left = event->button() == Qt::LeftButton;
  if (left && document_) {
    const QPointF p = mapToScene(event->position().toPoint());
    if (std::optional<PortRef> port = graph_scene_->output_port_at(p, port_radius())) {
      gesture_ = Gesture::kConnect;
      wire_value_ = port->value;
      wire_start_ = port->centre;
      drop_wire();
      wire_ = new QGraphicsLineItem(QLineF(wire_start_, p));
      wire_->setPen(QPen(style::kMutedText, 1.5, Qt::DashLine));
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
    emit edit_refused(tr("Cannot connect: %1").arg(QString::fromStdString(st.error().message)));
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
    emit edit_refused(tr("Cannot move: %1").arg(QString::fromStdString(st.error().message)));
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
    emit edit_refused(tr("Cannot disconnect: %1").arg(QString::fromStdString(st.error().message)));
  return st;
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
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

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (auto_fit_) overview();
}

void GraphView::drawForeground(QPainter* painter, const QRectF& rect) {
  QGraphicsView::drawForeground(painter, rect);
  if (!graph_scene_->document().is_empty()) return;
  painter->save();
  painter->resetTransform();
  painter->setPen(style::kMutedText);
  painter->setFont(style::canvas_font(15));
  painter->drawText(viewport()->rect(), Qt::AlignCenter,
                    tr("Open a graph (.json or .tir) with File \u203a Open\u2026  (Ctrl+O)"));
  painter->restore();
}

void GraphView::set_document(Document* document) {
  document_ = document;
  setAcceptDrops(document_ != nullptr);
  viewport()->setAcceptDrops(document_ != nullptr);
}

Expected<ir::NodeId> GraphView::add_op(const QString& op, QPointF scene_pos) {
  if (!document_) return make_error("the canvas has no document to edit");
  auto_fit_ = false;  // the user is editing: the view stays where it is
  // An empty name makes the document pick "conv1", "conv2", ...
  Expected<ir::NodeId> id =
      document_->add_node(op.toStdString(), {}, NodePosition{scene_pos.x(), scene_pos.y()});
  if (!id)
    emit edit_refused(tr("Cannot add %1: %2").arg(op, QString::fromStdString(id.error().message)));
  return id;
}

Expected<ir::NodeId> GraphView::add_op_at_centre(const QString& op) {
  return add_op(op, mapToScene(viewport()->rect().center()));
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
