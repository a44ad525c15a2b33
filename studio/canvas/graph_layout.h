// Layered (longest-path) layout of a directed graph of boxes, drawn top to bottom. Pure geometry:
// no Qt and no IR. GraphvizLayout (graphviz_layout.h) fills the same types; this one is the fast
// first picture and the fallback when Graphviz fails or the graph is too big for it.
//
// Usage:
//   std::vector<LayoutBox> boxes = {{120, 40}, {160, 60}};   // width, height (scene pixels)
//   std::vector<LayoutEdge> edges = {{0, 1}};                // box 0 feeds box 1
//   Layout layout = LayeredLayout().compute(boxes, edges);
//   layout.positions[1];                                     // top-left corner of box 1
#pragma once

#include <vector>

namespace tessera::studio {

struct LayoutBox {
  double width = 0;
  double height = 0;
};

struct LayoutEdge {
  int from = 0;  // index into the boxes
  int to = 0;
  // How hard Graphviz pulls the edge short and straight (dot's `weight`): the scene gives the
  // main chain (an output into a node's first port) more, so it stays on one vertical axis.
  // LayeredLayout ignores it.
  int weight = 1;
};

struct LayoutPoint {
  double x = 0;
  double y = 0;
};

struct Layout {
  std::vector<LayoutPoint> positions;  // top-left corner of each box; the bounding box starts at 0
  std::vector<int> layers;             // row of each box, 0 at the top
  // By edge: the points a long edge passes through between its ends, two per row it crosses (at
  // the row's top and bottom, on a lane that no box occupies). Empty for an edge between adjacent
  // rows, and for ignored edges. (GraphvizLayout: the joints of the spline's Bezier pieces.)
  std::vector<std::vector<LayoutPoint>> routes;
  // By edge: the whole curve as cubic Bezier control points (1 + 3k points, from the source box's
  // bottom to the target box's top). Only GraphvizLayout fills it; empty otherwise.
  std::vector<std::vector<LayoutPoint>> splines;
  double width = 0;  // bounding size of all boxes and routes
  double height = 0;
};

struct LayeredLayoutOptions {
  double layer_gap = 28;       // vertical space between rows whose edges all run straight down
  double bent_layer_gap = 60;  // ... when some edge between them has to bend sideways
  double box_gap = 40;         // horizontal space between boxes of one row (edge labels sit beside)
  double lane_gap = 20;        // horizontal space next to the lane of a long edge
};

// Algorithm:
//  1. Rows by longest path from the sources (Kahn's order); a box that is only fed by nothing
//     (a graph input, a Constant) moves down to just above its first consumer, so a second input
//     used at the end of the network does not hang at the top with a long edge. Boxes on a cycle
//     (a broken file) go one row below everything else; the layout never fails.
//  2. An edge spanning k > 1 rows gets k - 1 zero-width "lanes", one in each row it crosses, so
//     that it is routed around the boxes instead of through them (Sugiyama's dummy nodes).
//  3. Order within a row by the mean x of the box's (or lane's) predecessors (one top-down
//     barycentre sweep), boxes without predecessors last.
//  4. x: each box wants to be centred under its predecessors; a left-to-right sweep pushes boxes
//     apart to keep `box_gap` (`lane_gap` beside a lane), then the row shifts back by the mean
//     push so it stays balanced. A chain therefore lines up on one vertical axis whatever the
//     widths of its boxes.
//  5. y: rows stacked with `layer_gap` between them (`bent_layer_gap` where an edge between the
//     two rows is not vertical), boxes centred vertically in their row.
// Edges with out-of-range ends and self-loops are ignored. Deterministic for equal inputs.
class LayeredLayout {
 public:
  explicit LayeredLayout(LayeredLayoutOptions options = {}) : options_(options) {}
  Layout compute(const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges) const;

 private:
  LayeredLayoutOptions options_;
};

}  // namespace tessera::studio
