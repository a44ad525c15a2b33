// The canvas's minimap: the whole scene in small, the visible area as a rectangle, click to go.
#include "studio/canvas/minimap.h"

#include <QGraphicsScene>
#include <QGraphicsView>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <algorithm>

#include "studio/common/canvas_style.h"
#include "studio/canvas/graph_scene.h"
#include "studio/common/guard.h"

namespace tessera::studio {

namespace {
constexpr double kInset = 4;  // free pixels around the picture
}  // namespace

Minimap::Minimap(QGraphicsView* view) : QWidget(view), view_(view) {
  setObjectName(QStringLiteral("minimap"));
  setFixedSize(kWidth, kHeight);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click to show that part of the graph"));
  auto repaint_frame = [this] { update(); };
  connect(view_->horizontalScrollBar(), &QScrollBar::valueChanged, this, repaint_frame);
  connect(view_->verticalScrollBar(), &QScrollBar::valueChanged, this, repaint_frame);
}

void Minimap::invalidate() {
  dirty_ = true;
  update();
}

double Minimap::scale() const {
  const QRectF scene = view_->scene()->sceneRect();
  if (scene.isEmpty()) return 1;
  return std::min((width() - 2 * kInset) / scene.width(), (height() - 2 * kInset) / scene.height());
}

QPointF Minimap::offset() const {
  const QRectF scene = view_->scene()->sceneRect();
  const double s = scale();
  return {(width() - scene.width() * s) / 2, (height() - scene.height() * s) / 2};
}

QPointF Minimap::to_scene(QPointF p) const {
  const double s = scale();
  return view_->scene()->sceneRect().topLeft() + (p - offset()) / s;
}

QRectF Minimap::to_map(const QRectF& r) const {
  const double s = scale();
  const QPointF o = offset() + (r.topLeft() - view_->scene()->sceneRect().topLeft()) * s;
  return {o, r.size() * s};
}

QRectF Minimap::visible_rect() const {
  const QRectF shown = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  return to_map(shown.intersected(view_->scene()->sceneRect()));
}

void Minimap::paintEvent(QPaintEvent*) {
  guarded(this, tr("Drawing the minimap"), [&] {
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing);
    QColor back = style::colours().background;
    painter.setPen(QPen(style::colours().box_border, 1));
    painter.setBrush(back);
    painter.drawRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5));
    if (!view_->scene() || view_->scene()->sceneRect().isEmpty()) return;
    const QRectF target = to_map(view_->scene()->sceneRect());
    if (dirty_ || picture_.size() != size() * devicePixelRatioF()) {
      picture_ = QPixmap(size() * devicePixelRatioF());
      picture_.setDevicePixelRatio(devicePixelRatioF());
      picture_.fill(Qt::transparent);
      QPainter p(&picture_);
      p.setRenderHint(QPainter::Antialiasing);
      auto* scene = qobject_cast<GraphScene*>(view_->scene());
      if (scene && scene->box_count() >= GraphScene::kSketchMinBoxes) {
        // A big graph in a minimap is a sketch: rendering its items took seconds.
        const QRectF source = view_->scene()->sceneRect();
        p.translate(target.topLeft());
        p.scale(target.width() / source.width(), target.height() / source.height());
        p.translate(-source.topLeft());
        scene->paint_sketch(p, source);
      } else {
        view_->scene()->render(&p, target, view_->scene()->sceneRect());
      }
      dirty_ = false;
    }
    painter.drawPixmap(0, 0, picture_);
    QColor frame = style::colours().accent;
    painter.setPen(QPen(frame, 1.5));
    frame.setAlpha(40);
    painter.setBrush(frame);
    painter.drawRect(visible_rect());
  });
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  guarded(this, tr("Moving the view"), [&] { view_->centerOn(to_scene(event->position())); });
  event->accept();
}

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton)
    guarded(this, tr("Moving the view"), [&] { view_->centerOn(to_scene(event->position())); });
  event->accept();
}

}  // namespace tessera::studio
