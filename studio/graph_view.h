// The graph canvas's view: zoom with the wheel (around the cursor), pan by dragging, fit.
// After a graph is opened it shows an overview (and keeps doing so as the window resizes) until
// the user zooms or pans: the whole graph when it fits at a readable zoom, else the top of the
// graph at that zoom, with scroll bars telling that there is more.
// Ops dropped from the palette (mime type kOpMimeType, studio/palette.h) are added to the document
// where they are dropped, once set_document() gave the view a document to edit.
#pragma once

#include <QGraphicsView>
#include <QPointF>
#include <QString>
#include <map>
#include <optional>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

class QGraphicsLineItem;
class QMimeData;

namespace tessera::studio {

class Document;
class GraphScene;
struct PortRef;

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

  // The document that drops and add_op() edit (the scene's own; must outlive the view). Without
  // one the view accepts no drops.
  void set_document(Document* document);
  // Adds node `op` (named op1, op2, ... in lower case) with its top-left corner at `scene_pos`.
  // A refusal is returned and emitted as edit_refused().
  Expected<ir::NodeId> add_op(const QString& op, QPointF scene_pos);
  // The same at the centre of the viewport (the palette's double-click and Enter).
  Expected<ir::NodeId> add_op_at_centre(const QString& op);
  // What a drop does: the op named by `data` (kOpMimeType) added at `scene_pos`.
  Expected<ir::NodeId> drop_op(const QMimeData* data, QPointF scene_pos);

  // Editing on the canvas (with a document): dragging from an output port to an input port
  // connects them (Document::connect; a refusal is emitted as edit_refused()); dragging selected
  // boxes moves them, one undo step per drag (Document::move_nodes, after set_positions for boxes
  // the document did not place yet); Shift+drag on empty canvas selects with a rubber band;
  // a plain drag on empty canvas pans. Right-click on a connected input port or an edge offers
  // Disconnect.
  //
  // The node input that Disconnect at viewport point `pos` would clear, if any.
  std::optional<PortRef> disconnect_target_at(QPoint pos) const;
  // Disconnects it; an error when there is nothing to disconnect there or it is refused.
  Status disconnect_at(QPoint pos);

  static constexpr double kMinZoom = 0.05;
  static constexpr double kMaxZoom = 8.0;
  static constexpr double kMaxFitZoom = 1.25;
  static constexpr double kReadableZoom = 0.75;  // smallest zoom at which labels stay legible

 signals:
  // An edit asked for here was refused; the text says why (for the status bar).
  void edit_refused(const QString& message);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void set_zoom(double zoom);
  void on_scene_rebuilt();
  double port_radius() const;  // in scene units: about 8 screen pixels
  void finish_connect(QPointF scene_pos);
  void finish_move();
  void drop_wire();

  enum class Gesture { kNone, kConnect, kMove, kRubberBand };
  Gesture gesture_ = Gesture::kNone;
  ir::ValueId wire_value_ = ir::kNoValue;
  QPointF wire_start_;
  QGraphicsLineItem* wire_ = nullptr;         // the temporary line while connecting (scene-owned)
  std::map<ir::NodeId, QPointF> move_start_;  // selected boxes' places when a drag began

  GraphScene* graph_scene_;
  Document* document_ = nullptr;
  bool auto_fit_ = true;  // refit on resize until the user zooms or pans
};

}  // namespace tessera::studio
