// The graph canvas's scene: observes a Document and mirrors its graph as items (a box per node,
// a small box per graph input and output, an edge per use of a value). It never changes the
// document; it rebuilds when the document says the graph changed (an exception while rebuilding
// is reported and leaves an empty scene).
//
// Placement, in two steps so that opening never waits for Graphviz: the items appear at once at
// the fast LayeredLayout, then a LayoutJob lays the graph out again with Graphviz off the UI
// thread and the boxes move there when it finishes (layout_changed()). Graphs of more than
// `refine_max_boxes` boxes keep the layered layout (dot takes too long on them), as does a graph
// on which Graphviz fails; layout_note() says which happened. Nodes with a known position (saved
// with the document) stay where they are.
//
// Usage:
//   Document doc(registry);
//   GraphScene scene(doc);            // follows doc from now on
//   doc.load("samples/lenet.json");   // scene rebuilds, then emits rebuilt()
//   scene.node_item(3)->content().op; // "Conv"
//   // ... later, on the event loop: layout_changed(), the boxes are at Graphviz's positions
#pragma once

#include <QGraphicsScene>
#include <functional>
#include <QLineF>
#include <QRgb>
#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "engine/ir/graph.h"
#include "studio/canvas/layout_job.h"

namespace tessera::studio {

class BoxItem;
class Document;
class EdgeItem;
class GroupBoxItem;
class GroupFrameItem;
class NodeItem;
class ScopeBoxItem;
class TerminalItem;

// A port on the canvas: an output port (the value it carries; `node` is kNoNode for a graph
// input) or a node's input port (`node`, `input` index, and `value` when connected).
struct PortRef {
  ir::ValueId value = ir::kNoValue;
  ir::NodeId node = ir::kNoNode;
  int input = -1;
  QPointF centre;  // scene coordinates
};

struct SceneLayoutOptions {
  // The second, better layout, run on a worker thread after the layered one is shown; an empty
  // function keeps the layered layout.
  LayoutFunction refine = graphviz_layout_function();
  // Above this many boxes (nodes plus graph inputs and outputs) the layered layout is kept: dot
  // needs about 0.3 s for 1,000 boxes, 3.4 s for 4,000 and 20 s or more for 10,000 on this
  // project's 2-core machines (studio/README.md, Benchmark).
  int refine_max_boxes = 5000;
  // dot's work grows with the rows its edges cross (a virtual node each): above this many boxes
  // plus crossed rows (by the layered layout) the layered layout is kept. Measured on a 2-core
  // AMD EPYC: ViT-B/16 1,663 (0.9 s), ConvNeXt-Tiny 1,043; DenseNet-121 23,393 and Swin-T 21,304
  // (both over a minute). Whatever passes is still stopped at `graphviz_layout_function`'s budget.
  int64_t refine_max_work = 8000;
};

// The nodes the canvas folds into their consumers (see set_fold_constants): Constant nodes without
// inputs, and Identity nodes of a weight (exporters share an initializer through them).
std::set<ir::NodeId> foldable_constants(const ir::Graph& g);
// The scopes a node name lies in, outermost first: "/a/b/Conv" -> "/a", "/a/b"; "conv1" -> none.
std::vector<QString> name_scopes(const std::string& node_name);

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  // `document` must outlive the scene.
  explicit GraphScene(const Document& document, QObject* parent = nullptr);
  GraphScene(const Document& document, SceneLayoutOptions options, QObject* parent = nullptr);
  ~GraphScene() override;

  const Document& document() const { return document_; }
  NodeItem* node_item(ir::NodeId id) const;  // nullptr when the node has no item
  int node_item_count() const { return static_cast<int>(node_items_.size()); }
  // The rectangle holding every item (empty for an empty document).
  QRectF graph_rect() const { return graph_rect_; }

  // Top-left corners (scene coordinates) of nodes whose place is already known, e.g. saved with
  // the document. At the next full rebuild (the next graph loaded) those nodes are put there and
  // never moved by a layout; later graphs are not affected. Ids the graph lacks are ignored. Graph inputs and outputs next to such a node are put
  // just above or below it.
  void set_known_positions(std::map<ir::NodeId, QPointF> positions);
  // Where every node box is now (top-left corners), to be saved with the document.
  std::map<ir::NodeId, QPointF> node_positions() const;

  // Constants drawn inside their consumers (the default, as Netron does): a Constant node with no
  // input, or an Identity of a weight, consumed by nodes and not a graph output, gets no box; each
  // consumer shows it as a row (a Constant's values when it has at most 8 elements, "= [1, -1]",
  // else the type). Off: a box each.
  // Changing it rebuilds and lays the graph out again.
  void set_fold_constants(bool fold);
  bool fold_constants() const { return fold_constants_; }
  bool is_folded(ir::NodeId id) const { return folded_.count(id) > 0; }

  // Name scopes ("/layer1/layer1.0/conv1/Conv" is in "/layer1", "/layer1/layer1.0" and
  // "/layer1/layer1.0/conv1"), as ONNX exporters name nodes. A collapsed scope is drawn as one
  // box (ScopeBoxItem) laid out in place of its nodes; a node is hidden in the outermost collapsed
  // scope it belongs to. A view state: the document does not change. Each call rebuilds and lays
  // the graph out again.
  // Every scope of the graph with its node count (constants folded away are not counted).
  std::map<QString, int> scopes() const;
  // Collapses every scope `depth` levels deep (1: "/layer1") that holds at least 2 nodes, after
  // expanding all; 0 expands all.
  void collapse_scopes(int depth);
  // Expands a collapsed scope in place: its nodes appear, its sub-scopes of 2 nodes or more stay
  // collapsed (one level at a time, as Netron does).
  void expand_scope(const QString& scope);
  // Expands whatever scopes hide node `id` (the profiler or a search reveals it); false when none.
  bool expand_to(ir::NodeId id);
  const std::set<QString>& collapsed_scopes() const { return collapsed_scopes_; }
  // The pattern box a node was collapsed into ("LayerNormalization 3"), or "".
  QString pattern_of(ir::NodeId id) const {
    auto it = pattern_of_.find(id);
    return it == pattern_of_.end() ? QString() : it->second;
  }
  // Recognised patterns (the engine's fuse-patterns pass run on a copy: LayerNormalization, Gelu,
  // Swish, HardSwish decompositions) collapsed to one box each, named "LayerNormalization 1", ...;
  // opened like scopes. Returns how many were found; 0 leaves the scene as it is.
  int collapse_patterns();
  // The same with the recogniser on a worker thread (the window keeps responding); `done` gets the
  // count on the UI thread, or -1 when the graph changed meanwhile (nothing applied).
  void collapse_patterns_in_background(std::function<void(int)> done);
  // Lays every box out again (the layered layout, then Graphviz), dropping the places boxes kept
  // through edits; boxes the document places stay (Document::clear_positions forgets those).
  void arrange();
  ScopeBoxItem* scope_box(const QString& scope) const;

  // What placed the items, for the status bar: "Graphviz layout", "laying out with Graphviz...",
  // "layered layout (12,000 boxes: above the Graphviz limit of 2,000)", ...
  const QString& layout_note() const { return layout_note_; }
  bool is_refining() const { return job_->is_running(); }  // a Graphviz layout is pending

  // Node boxes are selectable; the ids of the selected ones (id order), and selecting by id.
  QList<ir::NodeId> selected_node_ids() const;
  void select_nodes(const QList<ir::NodeId>& ids);

  // Edits (node added, removed or changed, edges or terminals changed) rebuild the items on the
  // next turn of the event loop, once per batch of signals, keeping every box where it is (the
  // document's positions, else the box's current place) and the selection; update_pending() says
  // one is due and flush_update() does it now (tests). A reset or load rebuilds at once.
  bool update_pending() const { return update_pending_; }
  void flush_update();

  // The canvas theme changed (style::set_current_theme): the background now, the items (edge
  // pens are set when they are made) rebuilt in place on the next turn of the event loop.
  void apply_theme();

  // Groups (the document's layout groups, graph_scene_groups.cpp): an expanded group is a frame
  // with its name around its nodes' boxes; a collapsed one is one box (GroupBoxItem) in place of
  // its nodes, which are hidden with the edges between them, and the edges that cross its border
  // end at its ports. nullptr when there is no such group drawn that way.
  GroupFrameItem* group_frame(const QString& name) const;
  GroupBoxItem* group_box(const QString& name) const;
  // The names of the selected collapsed group boxes.
  QStringList selected_group_boxes() const;

  // ---- a sketch of big graphs ----
  // Drawing a 100,000-node graph's 333,000 items at a zoom where boxes are a few pixels took 2.5 s
  // a frame. Below kSketchZoom, a graph of kSketchMinBoxes boxes or more is drawn as a sketch
  // instead: a filled rectangle per box in its colour (a pixel when smaller than one), a straight
  // line per edge longer than 3 pixels, no text (the view and the minimap use it).
  static constexpr int kSketchMinBoxes = 2000;
  static constexpr double kSketchZoom = 0.3;
  int box_count() const { return static_cast<int>(boxes_.size()); }
  // Paints the part `visible` (scene coordinates) onto `painter`, whose transform maps scene to
  // device coordinates (a uniform scale and a translation).
  void paint_sketch(QPainter& painter, const QRectF& visible) const;

  // ---- for the view's editing ----
  // Redraws every edge from its boxes' current places (while boxes are dragged).
  void refresh_edges();
  // Rebuilds in place on the next turn of the event loop (as after an edit).
  void schedule_update();
  // The output port (of a node or graph input) / node input port within `radius` of `p`.
  std::optional<PortRef> output_port_at(QPointF p, double radius) const;
  std::optional<PortRef> input_port_at(QPointF p, double radius) const;
  // The node input that the edge drawn at `p` ends in (edges into graph outputs are skipped).
  std::optional<PortRef> edge_target_at(QPointF p) const;
  // The value of the edge drawn within `radius` of `p` (kNoValue: none), for a click on an edge.
  ir::ValueId value_at(QPointF p, double radius) const;
  // Where node input `input`'s port is drawn (scene coordinates); (0, 0) when it has none.
  QPointF input_port_position(ir::NodeId node, int input) const;

 Q_SIGNALS:
  // Emitted after the items were rebuilt for a new graph (views refit).
  void rebuilt();
  // The boxes moved to the refined (Graphviz) layout of the current graph.
  // Just before the refined layout moves the boxes (the view remembers what it shows).
  void layout_about_to_change();
  void layout_changed();
  void layout_note_changed(const QString& note);
  // The items were rebuilt after an edit, in place (views keep their zoom and scroll).
  void updated();
  // The selected nodes changed (by the user, or because a selected node went away).
  void node_selection_changed(QList<ir::NodeId> ids);

 private:
  struct Edge {  // one drawn edge: a value from an output port to an input port
    ir::ValueId value;
    int from_box, from_slot, to_box, to_slot;
  };

  // `in_place`: after an edit; every node is pinned at the document's position or its current
  // one, and rebuilt() is not emitted (updated() is).
  void rebuild(bool in_place = false);
  void on_selection_changed();
  // A halo behind each selected node box (a child item, so it goes with its box).
  void update_selection_marks();
  // Moves the boxes that are not pinned to `layout` and redraws the edges through its routes.
  void apply_layout(const Layout& layout);
  void place_terminals_by_pinned_neighbours();
  void start_refinement();
  // Draws the groups anew over the current boxes (after every rebuild and layout).
  void draw_groups();
  void clear_groups();
  void set_note(const QString& note);
  int64_t layout_work_ = 0;
  quint64 graph_generation_ = 0;  // bumped by every graph change (background results check it)
  int apply_patterns(const std::vector<std::pair<std::string, std::vector<ir::NodeId>>>& found);  // boxes plus the rows the layered layout's edges cross

  const Document& document_;
  SceneLayoutOptions options_;
  LayoutJob* job_;  // a child of the scene
  std::map<ir::NodeId, QPointF> known_positions_;
  bool fold_constants_ = true;
  std::set<ir::NodeId> folded_;  // Constant nodes drawn as rows of their consumers
  std::set<QString> collapsed_scopes_;
  std::map<QString, ScopeBoxItem*> scope_boxes_;  // drawn this rebuild
  std::map<QString, std::vector<ir::ValueId>> scope_inputs_;  // by scope box: the value per port
  std::map<QString, QPointF> scope_positions_;     // where the layouts put the scope boxes
  QString collapsed_scope_of(const std::string& node_name) const;
  std::map<ir::NodeId, QString> pattern_of_;  // node -> its pattern's box name
  // The current graph's items (owned by the scene), by box index as given to the layout.
  std::vector<BoxItem*> boxes_;
  std::vector<bool> pinned_;  // by box: at a known position
  std::vector<Edge> edges_;
  std::vector<EdgeItem*> edge_items_;  // by edge
  std::map<ir::NodeId, NodeItem*> node_items_;
  std::vector<QGraphicsItem*> group_items_;  // frames, group boxes and their edges
  std::vector<EdgeItem*> group_edges_;       // edges ending at a group box
  QRectF graph_rect_;
  QString layout_note_;
  // Where the layouts put the nodes that the document does not place (an undone drag of such a
  // node puts it back there).
  std::map<ir::NodeId, QPointF> auto_positions_;
  struct Sketch {
    std::vector<QRectF> boxes;
    std::vector<QRgb> colours;
    std::vector<QLineF> edges;
  };
  const Sketch& sketch() const;  // made again after every rebuild, layout or move
  mutable Sketch sketch_;
  mutable bool sketch_dirty_ = true;
  bool update_pending_ = false;
  bool rebuilding_ = false;  // selection changes while rebuilding are not reported
  QList<ir::NodeId> last_selection_;
};

}  // namespace tessera::studio
