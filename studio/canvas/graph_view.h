// The graph canvas's view: zoom with the wheel (around the cursor), pan by dragging, fit.
// After a graph is opened it shows an overview (and keeps doing so as the window resizes) until
// the user zooms or pans: the whole graph when it fits at a readable zoom, else the top of the
// graph at that zoom, with scroll bars telling that there is more.
// Ops dropped from the palette (mime type kOpMimeType, studio/document/clipboard.h) are added to the document
// where they are dropped, once set_document() gave the view a document to edit.
#pragma once

#include <QGraphicsView>
#include <QPointF>
#include <QString>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

class QAction;
class QGraphicsLineItem;
class QLineEdit;
class QMimeData;

namespace tessera::studio {

class Document;
class GraphScene;
class Minimap;
struct PortRef;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);

  double zoom() const;  // 1.0 = one scene pixel per screen pixel

  // Selects the nodes and scrolls to the first (at a readable zoom at least): the canvas follows
  // a click in the profiler, the pass stepper or a search.
  void reveal_nodes(const QList<ir::NodeId>& ids);
  // Expands a collapsed name scope in place and shows its first node (double-click on its box).
  void expand_scope(const QString& scope);
  // Scrolls to the node's box at a readable zoom at least (nothing when it has no box).
  void centre_on_node(ir::NodeId id);
  // Shows the whole graph, but never magnified past kMaxFitZoom (a three-node graph stays at a
  // natural size), and keeps doing so on resizes until the user zooms or pans.
  void fit();
  // The whole graph when that needs no zoom below kReadableZoom, else its top at kReadableZoom.
  void overview();
  void zoom_in();
  void zoom_out();
  void reset_zoom();  // 100 %

  // The document that drops and add_op() edit (the scene's own; must outlive the view). Without
  // one the view accepts no drops.
  void set_document(Document* document);
  // What the empty canvas says: how to open a graph, and how to build one.
  QString empty_hint() const;
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

  // Creating what a node input needs (the right-click menu on a node lists its absent inputs):
  // add_graph_input asks for a name and a shape ("N, 1, 28, 28": numbers and symbolic names),
  // adds an f32 graph input above the node and connects it; add_weight asks for a shape
  // ("6, 1, 5, 5"), adds a param named "<node>.<port>" with PyTorch's default initial values
  // (studio/weights.h: fan_in from the shape; a rank-1 bias takes the fan_in of the node's
  // weight at input 1; Gemm's B honours transB) and connects it. Each is one undo step. The
  // questions go through the text prompt (tests replace it; default QInputDialog); an empty
  // answer cancels (an error "cancelled"). A refusal is also emitted as edit_refused().
  Expected<ir::ValueId> add_graph_input(ir::NodeId node, int input);
  Expected<ir::ValueId> add_weight(ir::NodeId node, int input);
  // (title, label, initial text) -> the answer; empty cancels.
  using TextPrompt = std::function<QString(const QString&, const QString&, const QString&)>;
  void set_text_prompt(TextPrompt prompt) { text_prompt_ = std::move(prompt); }

  // ---- search (graph_view_search.cpp) ----
  // A search field in the view's top-right corner, shown by Ctrl+F (find_action(), for the View
  // menu): typing selects and centres the first node whose name or op contains the text
  // (case-insensitive); Enter or F3 goes to the next match (wrapping round); Escape hides it.
  QAction* find_action() const { return find_action_; }
  QLineEdit* search_field() const { return search_field_; }
  void show_search();
  // The nodes whose name or op contains `text` (case-insensitive), in topological order (id
  // order for a graph with a cycle); none for empty text.
  QList<ir::NodeId> find_nodes(const QString& text) const;
  // Selects and centres the first match of the field's text (from_start) or the one after the
  // current; the node shown, or kNoNode when nothing matches (the field turns red).
  ir::NodeId find_next(bool from_start = false);
  // ---- groups (graph_view_groups.cpp) ----
  // Group... (Ctrl+G) asks a name (text prompt) and groups the selected nodes
  // (Document::group); Ungroup (Ctrl+Shift+G) and Collapse/Expand Group (Ctrl+E) act on the groups
  // holding a selected node (Document::ungroup, set_group_collapsed). Refusals are returned and
  // emitted as edit_refused().
  QList<QAction*> group_actions() const { return group_actions_; }
  Status group_selection(const QString& name);
  Status ungroup_selection();
  Status toggle_collapsed_selection();
  // The overview in the bottom-right corner (studio/minimap.h).
  Minimap* minimap() const { return minimap_; }

  static constexpr double kMinZoom = 0.05;
  static constexpr double kMaxZoom = 8.0;
  static constexpr double kMaxFitZoom = 1.25;
  static constexpr double kReadableZoom = 0.75;  // smallest zoom at which labels stay legible

 Q_SIGNALS:
  // An edit asked for here was refused; the text says why (for the status bar).
  void edit_refused(const QString& message);
  // A click (no drag) on an edge: the value it carries (the Value dock shows it after a run).
  void value_clicked(ir::ValueId value);
  // The user asked to open a nested graph (If's branches, Loop's and Scan's bodies): the node and
  // the attribute holding it (the node's menu, or a double-click on the node).
  void open_subgraph_requested(ir::NodeId node, const QString& attribute);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;  // graph_view_groups.cpp
  void contextMenuEvent(QContextMenuEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  // A big graph zoomed out is drawn as the scene's sketch (GraphScene::paint_sketch).
  void paintEvent(QPaintEvent* event) override;

 public:
  // Whether the view draws the sketch now (a big graph below GraphScene::kSketchZoom).
  bool sketching() const;

 protected:
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

  void create_search();
  void create_group_actions();
  std::vector<std::string> selected_groups() const;  // groups holding a selected node
  void place_overlays();  // the search field and the minimap in their corners
  QString ask(const QString& title, const QString& label, const QString& initial);
  // Adds the value made by `make` and connects it to (node, input), as one undo step.
  Expected<ir::ValueId> add_and_connect(const QString& what, ir::NodeId node, int input,
                                        const std::function<Expected<ir::ValueId>()>& make);

  enum class Gesture { kNone, kConnect, kMove, kRubberBand };
  Gesture gesture_ = Gesture::kNone;
  QPoint press_at_;  // where the left button went down (a click on an edge is a press without a drag)
  ir::ValueId wire_value_ = ir::kNoValue;
  QPointF wire_start_;
  QGraphicsLineItem* wire_ = nullptr;         // the temporary line while connecting (scene-owned)
  std::map<ir::NodeId, QPointF> move_start_;  // selected boxes' places when a drag began

  GraphScene* graph_scene_;
  Document* document_ = nullptr;
  // What the view keeps doing on resizes and new layouts until the user zooms or pans: the
  // overview of a graph just opened, or the fit the user asked for (F).
  enum class Follow { kNone, kOverview, kFit };
  Follow follow_ = Follow::kOverview;
  ir::NodeId focus_after_layout_ = ir::kNoNode;  // centred on when the refined layout arrives
  // What the user looks at when the refined layout lands: a box and where its centre was in the
  // viewport; the view scrolls so that it is there again.
  const QGraphicsItem* layout_anchor_ = nullptr;
  QPoint layout_anchor_at_;
  // A node just added by a drop or a double-click, and the viewport point it was put at.
  struct AddedPlace {
    ir::NodeId node = ir::kNoNode;
    QPoint at;
  };
  AddedPlace place_added_;
  void keep_added_in_place();
  void remember_layout_anchor();
  void update_pan_room();  // the view's scene rect: the graph plus a window on every side
  void restore_layout_anchor();
  void follow();
  void fit_now();
  TextPrompt text_prompt_;
  QAction* find_action_ = nullptr;
  QAction* find_next_action_ = nullptr;
  QLineEdit* search_field_ = nullptr;
  int search_index_ = -1;  // the match shown, in find_nodes(text)
  Minimap* minimap_ = nullptr;
  QList<QAction*> group_actions_;
};

}  // namespace tessera::studio
