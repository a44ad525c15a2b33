// Tests of studio/graphviz_layout.cpp: dot's positions for small graphs checked against geometry
// worked out by hand (ranks, gaps, a chain on one axis), and the properties every result must have
// (no overlapping boxes, every edge of an acyclic graph going down, curves starting at the source
// box's bottom and ending at the target box's top, everything inside the bounding size), plus
// cycles, bad edges and calls from several threads at once.
#include <QTest>
#include <cmath>
#include <thread>
#include <vector>

#include "tests/studio/qtest_main.h"
#include "studio/canvas/graphviz_layout.h"

using tessera::Expected;
using tessera::studio::GraphvizLayout;
using tessera::studio::GraphvizLayoutOptions;
using tessera::studio::Layout;
using tessera::studio::LayoutBox;
using tessera::studio::LayoutEdge;
using tessera::studio::LayoutPoint;

namespace {

constexpr double kTol = 1.0;  // dot rounds coordinates to whole points

Layout layout_of(const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges,
                 GraphvizLayoutOptions options = {}) {
  Expected<Layout> l = GraphvizLayout(options).compute(boxes, edges);
  if (!l) qFatal("Graphviz failed: %s", l.error().to_string().c_str());
  return std::move(l).value();
}

double cx(const Layout& l, const std::vector<LayoutBox>& b, int i) {
  return l.positions[i].x + b[i].width / 2;
}

bool overlap(const Layout& l, const std::vector<LayoutBox>& b, int i, int j) {
  const LayoutPoint& p = l.positions[i];
  const LayoutPoint& q = l.positions[j];
  return p.x < q.x + b[j].width && q.x < p.x + b[i].width && p.y < q.y + b[j].height &&
         q.y < p.y + b[i].height;
}

bool near(LayoutPoint a, LayoutPoint b, double tol) {
  return std::hypot(a.x - b.x, a.y - b.y) <= tol;
}

// Checks what every layout of an acyclic graph must satisfy; returns an empty string when it does.
QString check_properties(const Layout& l, const std::vector<LayoutBox>& b,
                         const std::vector<LayoutEdge>& edges) {
  const int n = static_cast<int>(b.size());
  if (static_cast<int>(l.positions.size()) != n) return "positions";
  if (l.routes.size() != edges.size() || l.splines.size() != edges.size()) return "routes";
  for (int i = 0; i < n; ++i) {
    if (l.positions[i].x < -kTol || l.positions[i].y < -kTol ||
        l.positions[i].x + b[i].width > l.width + kTol ||
        l.positions[i].y + b[i].height > l.height + kTol)
      return QString("box %1 outside the bounding size").arg(i);
    for (int j = i + 1; j < n; ++j)
      if (overlap(l, b, i, j)) return QString("boxes %1 and %2 overlap").arg(i).arg(j);
  }
  for (size_t k = 0; k < edges.size(); ++k) {
    const int f = edges[k].from, t = edges[k].to;
    if (l.positions[f].y + b[f].height > l.positions[t].y)
      return QString("edge %1 does not go down").arg(k);
    const std::vector<LayoutPoint>& s = l.splines[k];
    if (s.size() < 4 || (s.size() - 1) % 3 != 0) return QString("edge %1: not a Bezier").arg(k);
    const LayoutPoint bottom{cx(l, b, f), l.positions[f].y + b[f].height};
    const LayoutPoint top{cx(l, b, t), l.positions[t].y};
    if (!near(s.front(), bottom, 2)) return QString("edge %1 does not start at its source").arg(k);
    if (!near(s.back(), top, 2)) return QString("edge %1 does not end at its target").arg(k);
  }
  return {};
}

// A ResNet-like chain: box i feeds i + 1, and every third box also feeds box i + 3 (skip).
void resnet(int n, std::vector<LayoutBox>* boxes, std::vector<LayoutEdge>* edges) {
  for (int i = 0; i < n; ++i) boxes->push_back({80.0 + 10 * (i % 4), 30.0 + 8 * (i % 3)});
  for (int i = 0; i + 1 < n; ++i) edges->push_back({i, i + 1});
  for (int i = 0; i + 3 < n; i += 3) edges->push_back({i, i + 3});
}

}  // namespace

class GraphvizLayoutTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void empty_graph() {
    const Layout l = layout_of({}, {});
    QVERIFY(l.positions.empty());
    QCOMPARE(l.width, 0.0);
    QCOMPARE(l.height, 0.0);
  }

  void chain_lines_up_with_the_rank_gap() {
    // Gaps of 36 points between ranks: y = 0, 20 + 36, 56 + 30 + 36.
    const std::vector<LayoutBox> b = {{100, 20}, {60, 30}, {140, 20}};
    const std::vector<LayoutEdge> e = {{0, 1}, {1, 2}};
    const Layout l = layout_of(b, e);
    QCOMPARE(check_properties(l, b, e), QString());
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 2}));
    QVERIFY(std::abs(l.positions[0].y - 0) <= kTol);
    QVERIFY(std::abs(l.positions[1].y - 56) <= kTol);
    QVERIFY(std::abs(l.positions[2].y - 122) <= kTol);
    QVERIFY(std::abs(l.height - 142) <= kTol);
    QVERIFY(std::abs(cx(l, b, 0) - 70) <= kTol);  // one axis, the widest box from x = 0
    QVERIFY(std::abs(cx(l, b, 1) - 70) <= kTol);
    QVERIFY(std::abs(cx(l, b, 2) - 70) <= kTol);
    QVERIFY(std::abs(l.width - 140) <= kTol);
    QVERIFY(l.routes[0].empty());  // one Bezier piece between neighbouring ranks
  }

  void options_set_the_gaps() {
    GraphvizLayoutOptions o;
    o.rank_gap = 100;
    o.node_gap = 50;
    const std::vector<LayoutBox> b(3, LayoutBox{60, 20});
    const std::vector<LayoutEdge> e = {{0, 1}, {0, 2}};
    const Layout l = layout_of(b, e, o);
    QCOMPARE(check_properties(l, b, e), QString());
    QVERIFY(std::abs(l.positions[1].y - 120) <= kTol);  // 20 + 100
    // Rank 1 holds two boxes 50 apart: 60 + 50 + 60 wide.
    QVERIFY(std::abs(std::abs(l.positions[2].x - l.positions[1].x) - 110) <= kTol);
    QVERIFY(std::abs(l.width - 170) <= kTol);
  }

  void diamond_has_no_overlap_and_goes_down() {
    const std::vector<LayoutBox> b(4, LayoutBox{100, 20});
    const std::vector<LayoutEdge> e = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
    const Layout l = layout_of(b, e);
    QCOMPARE(check_properties(l, b, e), QString());
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 1, 2}));
    QVERIFY(std::abs(l.positions[1].y - l.positions[2].y) <= kTol);  // one rank
    // Symmetric: the top and bottom boxes centred over the pair.
    const double mid = (cx(l, b, 1) + cx(l, b, 2)) / 2;
    QVERIFY(std::abs(cx(l, b, 0) - mid) <= kTol);
    QVERIFY(std::abs(cx(l, b, 3) - mid) <= kTol);
  }

  void long_edge_is_routed_around_the_box_between() {
    const std::vector<LayoutBox> b(3, LayoutBox{100, 20});
    const std::vector<LayoutEdge> e = {{0, 1}, {1, 2}, {0, 2}};
    const Layout l = layout_of(b, e);
    QCOMPARE(check_properties(l, b, e), QString());
    // Sample the curve of 0 -> 2: no point inside box 1.
    const std::vector<LayoutPoint>& s = l.splines[2];
    for (size_t i = 0; i + 3 < s.size(); i += 3) {
      for (double t = 0; t <= 1.0; t += 0.05) {
        const double u = 1 - t;
        const double x = u * u * u * s[i].x + 3 * u * u * t * s[i + 1].x +
                         3 * u * t * t * s[i + 2].x + t * t * t * s[i + 3].x;
        const double y = u * u * u * s[i].y + 3 * u * u * t * s[i + 1].y +
                         3 * u * t * t * s[i + 2].y + t * t * t * s[i + 3].y;
        QVERIFY2(!(x > l.positions[1].x && x < l.positions[1].x + 100 && y > l.positions[1].y &&
                   y < l.positions[1].y + 20),
                 "the long edge crosses the box between its ends");
      }
    }
    // Routes are the joints of the Bezier pieces, on the curve.
    for (size_t j = 0; j < l.routes[2].size(); ++j) QVERIFY(near(l.routes[2][j], s[3 * (j + 1)], 0));
  }

  void resnet_like_graph_keeps_its_properties() {
    std::vector<LayoutBox> b;
    std::vector<LayoutEdge> e;
    resnet(61, &b, &e);
    const Layout l = layout_of(b, e);
    QCOMPARE(check_properties(l, b, e), QString());
    QCOMPARE(l.layers[60], 60);  // the chain sets the ranks
  }

  void polyline_routes_keep_the_properties() {
    std::vector<LayoutBox> b;
    std::vector<LayoutEdge> e;
    resnet(31, &b, &e);
    GraphvizLayoutOptions o;
    o.curved = false;
    const Layout l = layout_of(b, e, o);
    QCOMPARE(check_properties(l, b, e), QString());
  }

  void fast_placement_keeps_the_properties_and_one_axis() {
    std::vector<LayoutBox> b;
    std::vector<LayoutEdge> e;
    resnet(31, &b, &e);
    GraphvizLayoutOptions o;
    o.fast_above = 10;  // 31 boxes: fast
    const Layout l = layout_of(b, e, o);
    QCOMPARE(check_properties(l, b, e), QString());
    for (int i = 1; i < 31; ++i) QVERIFY(std::abs(cx(l, b, i) - cx(l, b, 0)) <= kTol);
  }

  void parallel_edges_get_a_curve_each() {
    const std::vector<LayoutBox> b(2, LayoutBox{60, 20});
    const std::vector<LayoutEdge> e = {{0, 1}, {0, 1}};  // Add(x, x)
    const Layout l = layout_of(b, e);
    QCOMPARE(check_properties(l, b, e), QString());
  }

  void cycles_and_bad_edges_do_not_fail() {
    const std::vector<LayoutBox> b(3, LayoutBox{50, 10});
    const std::vector<LayoutEdge> e = {{0, 1}, {1, 2}, {2, 1}, {1, 1}, {-1, 2}, {0, 99}};
    const Layout l = layout_of(b, e);
    QCOMPARE(static_cast<int>(l.routes.size()), 6);
    QCOMPARE(static_cast<int>(l.splines.size()), 6);
    for (int k : {3, 4, 5}) QVERIFY(l.splines[k].empty());  // left out
    for (int i = 0; i < 3; ++i)
      for (int j = i + 1; j < 3; ++j) QVERIFY(!overlap(l, b, i, j));
    // The back edge 2 -> 1 points up, and its curve still runs from box 2 to box 1.
    QVERIFY(l.positions[2].y > l.positions[1].y);
    const std::vector<LayoutPoint>& back = l.splines[2];
    QVERIFY(!back.empty());
    const LayoutPoint c2{cx(l, b, 2), l.positions[2].y + 5}, c1{cx(l, b, 1), l.positions[1].y + 5};
    QVERIFY(std::hypot(back.front().x - c2.x, back.front().y - c2.y) <
            std::hypot(back.front().x - c1.x, back.front().y - c1.y));
  }

  void calls_from_several_threads_are_serialised() {
    std::vector<LayoutBox> b;
    std::vector<LayoutEdge> e;
    resnet(40, &b, &e);
    const Layout expected = layout_of(b, e);
    std::vector<Layout> results(4);
    std::vector<bool> ok(4, false);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        Expected<Layout> l = GraphvizLayout().compute(b, e);
        ok[t] = l.has_value();
        if (ok[t]) results[t] = *l;
      });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < 4; ++t) {
      QVERIFY(ok[t]);
      for (size_t i = 0; i < b.size(); ++i) {  // deterministic, so equal to the serial result
        QCOMPARE(results[t].positions[i].x, expected.positions[i].x);
        QCOMPARE(results[t].positions[i].y, expected.positions[i].y);
      }
    }
  }
};

TESSERA_QTEST(GraphvizLayoutTest)
#include "graphviz_layout_test.moc"
