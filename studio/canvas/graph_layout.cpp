// Layered (longest-path) layout; the algorithm is described in graph_layout.h.
#include "studio/canvas/graph_layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

namespace tessera::studio {

namespace {

struct Adjacency {
  std::vector<std::vector<int>> preds, succs;
};

Adjacency build_adjacency(int n, const std::vector<LayoutEdge>& edges) {
  Adjacency adj;
  adj.preds.resize(static_cast<size_t>(n));
  adj.succs.resize(static_cast<size_t>(n));
  for (const LayoutEdge& e : edges) {
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n || e.from == e.to) continue;
    adj.succs[static_cast<size_t>(e.from)].push_back(e.to);
    adj.preds[static_cast<size_t>(e.to)].push_back(e.from);
  }
  return adj;
}

// Longest path from the sources, then sources pulled down to just above their first consumer.
std::vector<int> assign_layers(int n, const Adjacency& adj) {
  std::vector<int> indegree(static_cast<size_t>(n)), layer(static_cast<size_t>(n), -1);
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // smallest index first
  for (int i = 0; i < n; ++i) {
    indegree[i] = static_cast<int>(adj.preds[i].size());
    if (indegree[i] == 0) ready.push(i);
  }
  int max_layer = -1;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    int l = 0;
    for (int p : adj.preds[i]) l = std::max(l, layer[p] + 1);
    layer[i] = l;
    max_layer = std::max(max_layer, l);
    for (int s : adj.succs[i])
      if (--indegree[s] == 0) ready.push(s);
  }
  for (int i = 0; i < n; ++i)
    if (layer[i] < 0) layer[i] = max_layer + 1;  // on (or behind) a cycle: one row below the rest
  for (int i = 0; i < n; ++i) {
    if (!adj.preds[i].empty() || adj.succs[i].empty()) continue;
    int first_use = std::numeric_limits<int>::max();
    for (int s : adj.succs[i]) first_use = std::min(first_use, layer[s]);
    layer[i] = std::max(layer[i], first_use - 1);
  }
  // No row is left empty: row 0 keeps every source that feeds row 1, and every other row r keeps
  // the boxes whose longest path passes through row r - 1.
  return layer;
}

// Boxes plus lanes: node i < n is box i, node i >= n is a lane of a long edge.
struct Extended {
  std::vector<double> width;
  std::vector<int> layer;
  std::vector<std::vector<int>> preds;
  std::vector<std::vector<int>> lanes_of_edge;  // by edge: its lane nodes, top to bottom
  bool is_lane(int i, int n) const { return i >= n; }
};

Extended add_lanes(const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges,
                   const std::vector<int>& layers) {
  const int n = static_cast<int>(boxes.size());
  Extended x;
  for (const LayoutBox& b : boxes) x.width.push_back(b.width);
  x.layer = layers;
  x.preds.resize(static_cast<size_t>(n));
  x.lanes_of_edge.resize(edges.size());
  for (size_t k = 0; k < edges.size(); ++k) {
    const LayoutEdge& e = edges[k];
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n || e.from == e.to) continue;
    int prev = e.from;
    for (int l = layers[e.from] + 1; l < layers[e.to]; ++l) {
      const int lane = static_cast<int>(x.width.size());
      x.width.push_back(0);
      x.layer.push_back(l);
      x.preds.push_back({prev});
      x.lanes_of_edge[k].push_back(lane);
      prev = lane;
    }
    x.preds[e.to].push_back(prev);  // a back edge (cycle) has prev == from: ignored when placing
  }
  return x;
}

}  // namespace

Layout LayeredLayout::compute(const std::vector<LayoutBox>& boxes,
                              const std::vector<LayoutEdge>& edges) const {
  const int n = static_cast<int>(boxes.size());
  Layout out;
  out.routes.resize(edges.size());
  if (n == 0) return out;
  out.layers = assign_layers(n, build_adjacency(n, edges));
  const Extended ext = add_lanes(boxes, edges, out.layers);
  const int total = static_cast<int>(ext.width.size());
  const int rows = *std::max_element(out.layers.begin(), out.layers.end()) + 1;
  std::vector<std::vector<int>> members(static_cast<size_t>(rows));
  for (int i = 0; i < total; ++i) members[ext.layer[i]].push_back(i);
  auto gap = [&](int a, int b) {
    return ext.is_lane(a, n) || ext.is_lane(b, n) ? options_.lane_gap : options_.box_gap;
  };

  std::vector<double> center(static_cast<size_t>(total), 0.0);
  std::vector<bool> placed(static_cast<size_t>(total), false);
  for (std::vector<int>& row : members) {
    if (row.empty()) continue;  // cannot happen (see assign_layers); cheap to be sure
    // Wanted centre: the mean centre of the predecessors already placed (rows above).
    std::vector<double> want(static_cast<size_t>(total), 0.0);
    std::vector<bool> has_want(static_cast<size_t>(total), false);
    for (int i : row) {
      double sum = 0;
      int count = 0;
      for (int p : ext.preds[i]) {
        if (!placed[p]) continue;
        sum += center[p];
        ++count;
      }
      if (count > 0) {
        want[i] = sum / count;
        has_want[i] = true;
      }
    }
    std::stable_sort(row.begin(), row.end(), [&](int a, int b) -> bool {
      if (has_want[a] != has_want[b]) return has_want[a];
      return has_want[a] && want[a] < want[b];
    });
    double right = 0;  // right edge of the previous box in the row
    int prev = -1;
    double push = 0;
    int wanting = 0;
    for (int i : row) {
      const double half = ext.width[i] / 2;
      const double packed = prev < 0 ? half : right + gap(prev, i) + half;
      const double target = has_want[i] ? want[i] : packed;
      center[i] = prev < 0 ? target : std::max(target, packed);
      if (has_want[i]) {
        push += center[i] - target;
        ++wanting;
      }
      right = center[i] + half;
      prev = i;
    }
    double shift = 0;
    if (wanting > 0) {
      shift = -push / wanting;
    } else {  // nothing above to line up with: centre the row on x = 0
      const double left = center[row.front()] - ext.width[row.front()] / 2;
      shift = -(left + right) / 2;
    }
    for (int i : row) {
      center[i] += shift;
      placed[i] = true;
    }
  }

  // Rows: height of the tallest box; the gap below a row grows when an edge leaving it bends.
  std::vector<double> row_height(static_cast<size_t>(rows), 0.0);
  for (int i = 0; i < n; ++i)
    row_height[out.layers[i]] = std::max(row_height[out.layers[i]], boxes[i].height);
  std::vector<bool> bent(static_cast<size_t>(rows), false);
  for (int i = 0; i < total; ++i)
    for (int p : ext.preds[i])
      if (ext.layer[p] + 1 == ext.layer[i] && std::abs(center[p] - center[i]) > 1)
        bent[ext.layer[p]] = true;
  std::vector<double> row_top(static_cast<size_t>(rows), 0.0);
  for (int r = 1; r < rows; ++r)
    row_top[r] = row_top[r - 1] + row_height[r - 1] +
                 (bent[r - 1] ? options_.bent_layer_gap : options_.layer_gap);

  double min_left = std::numeric_limits<double>::max();
  for (int i = 0; i < total; ++i) min_left = std::min(min_left, center[i] - ext.width[i] / 2);
  out.positions.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int r = out.layers[i];
    out.positions[i].x = center[i] - boxes[i].width / 2 - min_left;
    out.positions[i].y = row_top[r] + (row_height[r] - boxes[i].height) / 2;
    out.width = std::max(out.width, out.positions[i].x + boxes[i].width);
  }
  for (size_t k = 0; k < edges.size(); ++k) {
    for (int lane : ext.lanes_of_edge[k]) {
      const double x = center[lane] - min_left;
      const int r = ext.layer[lane];
      out.routes[k].push_back({x, row_top[r]});
      out.routes[k].push_back({x, row_top[r] + row_height[r]});
      out.width = std::max(out.width, x);
    }
  }
  out.height = row_top[rows - 1] + row_height[rows - 1];
  return out;
}

}  // namespace tessera::studio
