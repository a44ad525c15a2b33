// The graph canvas's view: zoom with the wheel (around the cursor), pan by dragging, fit.
// After a graph is opened it shows an overview (and keeps doing so as the window resizes) until
// the user zooms or pans: the whole graph when it fits at a readable zoom, else the top of the
// graph at that zoom, with scroll bars telling that there is more.
#pragma once

#include <QGraphicsView>

namespace tessera::studio {

class GraphScene;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);

  double zoom() const;  // 1.0 = one scene pixel per screen pixel

  // Shows the whole graph, but never magnified past kMaxFitZoom (a three-node graph stays at a
  // natural size).
  void fit();
  // The whole graph when that needs no zoom below kReadableZoom, else its top at kReadableZoom.
  void overview();
  void zoom_in();
  void zoom_out();
  void reset_zoom();  // 100 %

  static constexpr double kMinZoom = 0.05;
  static constexpr double kMaxZoom = 8.0;
  static constexpr double kMaxFitZoom = 1.25;
  static constexpr double kReadableZoom = 0.75;  // smallest zoom at which labels stay legible

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;

 private:
  void set_zoom(double zoom);
  void on_scene_rebuilt();

  GraphScene* graph_scene_;
  bool auto_fit_ = true;  // refit on resize until the user zooms or pans
};

}  // namespace tessera::studio
