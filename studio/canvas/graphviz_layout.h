// Graphviz's `dot` layered layout behind the same pure types as LayeredLayout (graph_layout.h):
// boxes with sizes and edges in, top-left positions, ranks, edge routes and splines out. No Qt and
// no IR; Graphviz (Debian's libgvc/libcgraph 2.42) is linked privately, so no Graphviz header
// leaks to users of this one.
//
// Usage:
//   std::vector<LayoutBox> boxes = {{120, 40}, {160, 60}};   // width, height (scene pixels = points)
//   std::vector<LayoutEdge> edges = {{0, 1}};                // box 0 feeds box 1
//   Expected<Layout> layout = GraphvizLayout().compute(boxes, edges);
//   if (!layout) layout = LayeredLayout().compute(boxes, edges);   // the fallback
//   layout->positions[1];                                    // top-left corner of box 1
//
// Threads: Graphviz keeps global state and is not thread-safe. Every call into it from this file
// holds one process-wide mutex, so compute() may be called from any thread (calls run one at a
// time). The mutex is the only global here, and it exists because the library's state is global.
#pragma once

#include <vector>

#include "engine/core/status.h"
#include "studio/canvas/graph_layout.h"

namespace tessera::studio {

struct GraphvizLayoutOptions {
  double rank_gap = 36;  // points between the bottom of one rank and the top of the next (ranksep)
  double node_gap = 40;  // points between neighbouring boxes of one rank (nodesep)
  // Curved edge routes (splines=spline); false routes edges as polylines (splines=polyline),
  // which is faster on big graphs. Either way `splines` holds Bezier control points.
  bool curved = true;
  // Above this many boxes dot skips the network-simplex iterations of its x placement
  // (nslimit=0), which dominate its time on big graphs (2,000 boxes: 5 s -> 0.5 s). Boxes still
  // never overlap and chains stay on one axis, but branches are balanced less well.
  int fast_above = 500;
};

// dot with rankdir=TB; each box a fixed-size rectangle of its own size in points (1 scene pixel
// = 1 point, so boxes never overlap), edges leaving a box at its bottom centre and entering the
// next at its top centre. Cycles are broken by dot (a back edge points up); self-loops and edges
// with out-of-range ends are left out (empty route and spline). The result follows Layout's
// conventions: y grows downwards, the bounding box starts at (0, 0), `layers` holds dot's ranks.
// Errors (dot failing, Graphviz not finding its `dot` plugin) are returned, never thrown.
// Deterministic for equal inputs.
class GraphvizLayout {
 public:
  explicit GraphvizLayout(GraphvizLayoutOptions options = {}) : options_(options) {}
  Expected<Layout> compute(const std::vector<LayoutBox>& boxes,
                           const std::vector<LayoutEdge>& edges) const;

 private:
  GraphvizLayoutOptions options_;
};

}  // namespace tessera::studio
