// GraphvizLayout: builds a cgraph graph of fixed-size boxes, runs dot on it under the one Graphviz
// mutex, and reads positions, ranks and splines back (Graphviz's y-up points -> our y-down).
#include "studio/canvas/graphviz_layout.h"

#include <gvc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

namespace tessera::studio {

namespace {

// Graphviz keeps its state in globals (the error handler, the attribute dictionaries, dot's
// scratch data), so every use of it goes through this lock.
std::mutex& graphviz_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Graphviz's messages while the lock is held (agerr reports here instead of on stderr).
std::string* g_messages = nullptr;  // guarded by graphviz_mutex()

int collect_message(char* text) {
  if (g_messages && text) g_messages->append(text);
  return 0;
}

// Graphviz 2.42 takes `char*` for strings it only reads.
char* cs(const char* s) {
  return const_cast<char*>(s);
}

std::string inches(double points) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5f", std::max(points, 0.0) / 72.0);
  return buf;
}

struct ContextDeleter {
  void operator()(GVC_t* gvc) const { gvFreeContext(gvc); }
};
struct GraphDeleter {
  void operator()(Agraph_t* g) const { agclose(g); }
};
// Frees dot's layout data before the graph is closed (declared after the graph, so destroyed first).
struct LayoutGuard {
  GVC_t* gvc = nullptr;
  Agraph_t* graph = nullptr;
  ~LayoutGuard() {
    if (gvc && graph) gvFreeLayout(gvc, graph);
  }
};

bool valid_edge(const LayoutEdge& e, int n) {
  return e.from >= 0 && e.from < n && e.to >= 0 && e.to < n && e.from != e.to;
}

double distance2(pointf a, pointf b) {
  return (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
}

// Runs with the lock held and the message collector installed.
Expected<Layout> run_dot(const GraphvizLayoutOptions& options, const std::vector<LayoutBox>& boxes,
                         const std::vector<LayoutEdge>& edges, const std::string& messages) {
  const int n = static_cast<int>(boxes.size());
  std::unique_ptr<GVC_t, ContextDeleter> gvc(gvContext());
  if (!gvc) return make_error("Graphviz: cannot create a context", "graphviz");
  std::unique_ptr<Agraph_t, GraphDeleter> graph(agopen(cs("layout"), Agdirected, nullptr));
  if (!graph) return make_error("Graphviz: cannot create a graph", "graphviz");
  Agraph_t* g = graph.get();

  agattr(g, AGRAPH, cs("rankdir"), cs("TB"));
  agattr(g, AGRAPH, cs("ranksep"), cs(inches(options.rank_gap).c_str()));
  agattr(g, AGRAPH, cs("nodesep"), cs(inches(options.node_gap).c_str()));
  agattr(g, AGRAPH, cs("splines"), cs(options.curved ? "spline" : "polyline"));
  if (n > options.fast_above) agattr(g, AGRAPH, cs("nslimit"), cs("0"));
  agattr(g, AGNODE, cs("shape"), cs("box"));
  agattr(g, AGNODE, cs("fixedsize"), cs("true"));
  agattr(g, AGNODE, cs("label"), cs(""));
  agattr(g, AGNODE, cs("margin"), cs("0"));
  Agsym_t* width = agattr(g, AGNODE, cs("width"), cs("0.75"));
  Agsym_t* height = agattr(g, AGNODE, cs("height"), cs("0.5"));
  agattr(g, AGEDGE, cs("dir"), cs("none"));  // no arrow heads: splines end on the boxes
  agattr(g, AGEDGE, cs("tailport"), cs("s"));
  agattr(g, AGEDGE, cs("headport"), cs("n"));
  Agsym_t* weight = agattr(g, AGEDGE, cs("weight"), cs("1"));

  std::vector<Agnode_t*> nodes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::string name = "n" + std::to_string(i);
    nodes[i] = agnode(g, cs(name.c_str()), 1);
    agxset(nodes[i], width, cs(inches(boxes[i].width).c_str()));
    agxset(nodes[i], height, cs(inches(boxes[i].height).c_str()));
  }
  std::vector<Agedge_t*> gv_edges(edges.size(), nullptr);
  for (size_t k = 0; k < edges.size(); ++k) {
    if (!valid_edge(edges[k], n)) continue;
    const std::string name = "e" + std::to_string(k);  // named: parallel edges stay separate
    gv_edges[k] = agedge(g, nodes[edges[k].from], nodes[edges[k].to], cs(name.c_str()), 1);
    if (edges[k].weight != 1)
      agxset(gv_edges[k], weight, cs(std::to_string(std::max(0, edges[k].weight)).c_str()));
  }

  if (gvLayout(gvc.get(), g, "dot") != 0) {
    std::string why = messages.empty() ? "dot failed" : messages;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return make_error("Graphviz: " + why, "graphviz");
  }
  LayoutGuard guard{gvc.get(), g};

  const boxf bb = GD_bb(g);
  auto to_layout = [&](pointf p) { return LayoutPoint{p.x - bb.LL.x, bb.UR.y - p.y}; };
  Layout out;
  out.width = bb.UR.x - bb.LL.x;
  out.height = bb.UR.y - bb.LL.y;
  out.positions.resize(static_cast<size_t>(n));
  out.layers.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const LayoutPoint c = to_layout(ND_coord(nodes[i]));
    out.positions[i] = {c.x - boxes[i].width / 2, c.y - boxes[i].height / 2};
    out.layers[i] = ND_rank(nodes[i]);
  }
  out.routes.resize(edges.size());
  out.splines.resize(edges.size());
  for (size_t k = 0; k < edges.size(); ++k) {
    Agedge_t* e = gv_edges[k];
    if (!e || !ED_spl(e) || ED_spl(e)->size < 1) continue;
    const bezier& bz = ED_spl(e)->list[0];
    std::vector<LayoutPoint> points;
    for (int i = 0; i < bz.size; ++i) points.push_back(to_layout(bz.list[i]));
    // dot may hand back a reversed (back) edge's curve from head to tail: make it run from the
    // source box to the target box.
    if (bz.size > 0 && distance2(bz.list[0], ND_coord(agtail(e))) >
                           distance2(bz.list[0], ND_coord(aghead(e))))
      std::reverse(points.begin(), points.end());
    for (size_t i = 3; i + 1 < points.size(); i += 3) out.routes[k].push_back(points[i]);
    out.splines[k] = std::move(points);
  }
  if (!std::isfinite(out.width) || !std::isfinite(out.height))
    return make_error("Graphviz: the layout has no finite bounding box", "graphviz");
  return out;
}

}  // namespace

Expected<Layout> GraphvizLayout::compute(const std::vector<LayoutBox>& boxes,
                                         const std::vector<LayoutEdge>& edges) const {
  if (boxes.empty()) {
    Layout out;
    out.routes.resize(edges.size());
    out.splines.resize(edges.size());
    return out;
  }
  std::lock_guard<std::mutex> lock(graphviz_mutex());
  std::string messages;
  g_messages = &messages;
  const agusererrf previous = agseterrf(collect_message);
  Expected<Layout> result = make_error("Graphviz: not run", "graphviz");
  try {
    result = run_dot(options_, boxes, edges, messages);
  } catch (const std::exception& e) {  // bad_alloc from our vectors: never past this boundary
    result = make_error(std::string("Graphviz layout: ") + e.what(), "graphviz");
  }
  agseterrf(previous);
  g_messages = nullptr;
  return result;
}

}  // namespace tessera::studio
