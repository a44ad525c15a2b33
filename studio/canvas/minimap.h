// The canvas's minimap: a small overview of the whole graph in a corner of the view, with the
// part the view shows drawn as a rectangle; pressing or dragging in it centres the view there.
// It paints a picture of the scene, made again only after the scene changed (rebuilt, edited,
// laid out), and the rectangle on every scroll or zoom.
//
// Usage (graph_view.cpp):
//   minimap_ = new Minimap(view);   // a child of the view, placed by the view in its corner
//   minimap_->invalidate();         // after the scene changed
#pragma once

#include <QPixmap>
#include <QPointF>
#include <QRectF>
#include <QWidget>

class QGraphicsView;

namespace tessera::studio {

class Minimap : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kWidth = 180;
  static constexpr int kHeight = 140;

  // `view` must be the parent; the minimap observes its scene and scroll bars.
  explicit Minimap(QGraphicsView* view);

  // The scene changed: the picture is made again on the next paint.
  void invalidate();
  // The scene point shown at widget point `p`, and the widget rectangle of scene rect `r` (the
  // scene's rectangle fills the minimap, aspect kept, centred).
  QPointF to_scene(QPointF p) const;
  QRectF to_map(const QRectF& r) const;
  // The part of the scene the view shows, in widget coordinates (the drawn rectangle).
  QRectF visible_rect() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  double scale() const;    // widget pixels per scene unit
  QPointF offset() const;  // widget position of the scene rect's top-left

  QGraphicsView* view_;
  QPixmap picture_;
  bool dirty_ = true;
};

}  // namespace tessera::studio
