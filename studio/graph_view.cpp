// The graph canvas's view: zoom, pan, fit, overview, and a hint while nothing is open.
#include "studio/graph_view.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "studio/canvas_style.h"
#include "studio/document.h"
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
  QGraphicsView::mousePressEvent(event);
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
  if (!id) emit edit_refused(tr("Cannot add %1: %2").arg(op, QString::fromStdString(id.error().message)));
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
