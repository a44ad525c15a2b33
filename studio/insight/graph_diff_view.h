// GraphDiffView: two graphs side by side in one scene (before on the left, after on the right,
// so zoom and scroll move both), each node a box coloured by the diff (graph_diff.h): added
// green, removed red, changed amber, unchanged grey; dashed lines from every added or changed
// node to the before nodes it came from (provenance); a legend with the counts ("+3 -5 ~2").
// Optional marks on the after graph's nodes (a badge, its colour and a tooltip line) carry
// overlays such as the placement. Boxes drop their text when zoomed far out, so ResNet-50 (about
// 500 nodes a side) stays fluid. Reused by the runs dashboard for two runs' graphs (kByName).
//
// Usage:
//   GraphDiffView view;
//   view.set_graphs({before_graph}, {after_graph}, snapshot.provenance);
//   view.counts_text();   // "+1 -3 ~1"
//   connect(&view, &GraphDiffView::node_activated, ...);   // double-click on a box
#pragma once

#include <QColor>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "formats/document.h"
#include "studio/insight/graph_diff.h"

class QGraphicsRectItem;
class QGraphicsScene;
class QGraphicsView;
class QLabel;

namespace tessera::studio {

// An overlay mark on one node: a badge (short text on `colour`) and a line added to its tooltip.
struct NodeMark {
  QColor colour;
  QString badge;    // "cpu", "cuda:0"; empty: no badge
  QString tooltip;  // "on cpu: no CUDA kernel for Loop"
};

class GraphDiffView : public QWidget {
  Q_OBJECT

 public:
  enum class Side { kBefore, kAfter };

  explicit GraphDiffView(QWidget* parent = nullptr);

  // Shows the diff of `before` -> `after`; `provenance` maps after nodes to the nodes they came
  // from (observe::Snapshot::provenance). Keeps the marks set for the after graph.
  void set_graphs(formats::GraphDocument before, formats::GraphDocument after,
                  std::vector<std::pair<int32_t, std::vector<int32_t>>> provenance = {},
                  DiffMatch match = DiffMatch::kById);
  // Marks on the after graph's nodes, by id; an empty map removes them. Redraws at once, keeping
  // zoom and scroll; `redraw` false only keeps them for the next set_graphs.
  void set_after_marks(std::map<ir::NodeId, NodeMark> marks, bool redraw = true);
  void clear();
  // What the two sides are called above their graphs ("before" and "after" by default; the runs
  // dashboard names the two runs). Used by the next set_graphs.
  void set_side_titles(const QString& before, const QString& after);
  QString side_title(Side side) const { return side == Side::kBefore ? before_title_ : after_title_; }

  const GraphDiff& diff() const { return diff_; }
  QString counts_text() const { return QString::fromStdString(diff_.summary()); }
  // The box of node `id` on `side` (scene coordinates; empty when it has none), its fill colour.
  QRectF node_rect(Side side, ir::NodeId id) const;
  QColor node_fill(Side side, ir::NodeId id) const;
  QString node_tooltip(Side side, ir::NodeId id) const;
  int link_count() const { return link_count_; }  // provenance lines drawn
  QGraphicsScene* scene() const { return scene_; }
  QGraphicsView* view() const { return view_; }
  QLabel* legend() const { return legend_; }
  void fit();
  // Forgets the user's zoom and place (a new compilation) and shows the overview: both graphs
  // whole when readable, else at half size around the first node added (else changed, else
  // removed), or their tops when nothing changed.
  void reset_view();
  void overview();
  // Outlines node `id` of one side and centres the view on it (false: no such box); any earlier
  // focus outline goes.
  bool focus_node(Side side, ir::NodeId id);

  static QColor status_colour(GraphDiff::Status s);

 Q_SIGNALS:
  // A box was double-clicked: its node id in the after graph (after) or the before graph.
  void node_activated(int32_t node, bool after);

 private:
  void rebuild();
  // What differs between a changed node and its match ("kernel_shape: 5, 5 -> 3, 3").
  QString change_text(Side side, ir::NodeId id) const;
  QString before_title_ = QStringLiteral("before"), after_title_ = QStringLiteral("after");
  // Lays out and draws one graph with its left edge at x = `left`; returns its width.
  double draw_graph(Side side, double left);

  formats::GraphDocument before_, after_;
  double before_height_ = 0;  // of the before side's layout (the after side is stretched to it)
  ProvenanceList provenance_;
  GraphDiff diff_;
  std::map<ir::NodeId, NodeMark> marks_;
  std::map<ir::NodeId, QRectF> rects_[2];
  std::map<ir::NodeId, QColor> fills_[2];
  std::map<ir::NodeId, QString> tooltips_[2];
  int link_count_ = 0;
  QGraphicsScene* scene_;
  QGraphicsView* view_;
  QLabel* legend_;
  QGraphicsRectItem* focus_ = nullptr;  // the focus_node outline (owned by the scene)
};

}  // namespace tessera::studio
