// Tests of studio/graph_layout.cpp: rows by longest path, centring, lanes for long edges, sources
// pulled down, cycles and bad edges tolerated. Expected coordinates are worked out by hand from
// the default options (straight gap 28, bent gap 60, box gap 40, lane gap 20).
#include <QTest>
#include <cmath>
#include <vector>

#include "tests/studio/qtest_main.h"
#include "studio/canvas/graph_layout.h"

using tessera::studio::LayeredLayout;
using tessera::studio::Layout;
using tessera::studio::LayoutBox;
using tessera::studio::LayoutEdge;

namespace {

double center_x(const Layout& l, const std::vector<LayoutBox>& boxes, int i) {
  return l.positions[i].x + boxes[i].width / 2;
}

}  // namespace

class GraphLayoutTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void empty_graph() {
    const Layout l = LayeredLayout().compute({}, {});
    QVERIFY(l.positions.empty());
    QCOMPARE(l.width, 0.0);
    QCOMPARE(l.height, 0.0);
  }

  void chain_lines_up_on_one_axis() {
    const std::vector<LayoutBox> boxes = {{100, 20}, {60, 30}, {140, 20}};
    const Layout l = LayeredLayout().compute(boxes, {{0, 1}, {1, 2}});
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 2}));
    QCOMPARE(center_x(l, boxes, 0), 70.0);  // the widest box starts at x = 0
    QCOMPARE(center_x(l, boxes, 1), 70.0);
    QCOMPARE(center_x(l, boxes, 2), 70.0);
    QCOMPARE(l.positions[0].y, 0.0);
    QCOMPARE(l.positions[1].y, 20.0 + 28.0);  // straight edges: the short gap
    QCOMPARE(l.positions[2].y, 20.0 + 28.0 + 30.0 + 28.0);
    QCOMPARE(l.width, 140.0);
    QCOMPARE(l.height, 126.0);
  }

  void diamond_is_symmetric() {
    const std::vector<LayoutBox> boxes(4, LayoutBox{100, 20});
    const Layout l = LayeredLayout().compute(boxes, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 1, 2}));
    QCOMPARE(l.positions[1].x, 0.0);
    QCOMPARE(l.positions[2].x, 140.0);  // 100 wide + 40 gap
    QCOMPARE(l.positions[0].x, 70.0);   // centred above the pair
    QCOMPARE(l.positions[3].x, 70.0);
    QCOMPARE(l.positions[1].y, 80.0);  // bent edges: 20 + 60
    QCOMPARE(l.positions[3].y, 160.0);
    QCOMPARE(l.width, 240.0);
  }

  void long_edge_gets_a_lane_beside_the_boxes() {
    const std::vector<LayoutBox> boxes(3, LayoutBox{100, 20});
    const Layout l = LayeredLayout().compute(boxes, {{0, 1}, {1, 2}, {0, 2}});
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 2}));
    // Row 1 holds box 1 and the lane of edge 0 -> 2, 50 + 20 apart, balanced around box 0.
    QCOMPARE(l.positions[1].x, 0.0);
    QCOMPARE(l.positions[0].x, 35.0);
    QCOMPARE(l.positions[2].x, 35.0);
    QVERIFY(l.routes[0].empty());
    QVERIFY(l.routes[1].empty());
    QCOMPARE(static_cast<int>(l.routes[2].size()), 2);
    QCOMPARE(l.routes[2][0].x, 120.0);
    QCOMPARE(l.routes[2][0].y, 80.0);   // top of row 1
    QCOMPARE(l.routes[2][1].y, 100.0);  // bottom of row 1
    // The lane does not cross box 1.
    QVERIFY(l.routes[2][0].x > l.positions[1].x + boxes[1].width);
  }

  void late_input_is_pulled_down_to_its_consumer() {
    const std::vector<LayoutBox> boxes(5, LayoutBox{80, 20});
    const Layout l = LayeredLayout().compute(boxes, {{0, 1}, {1, 2}, {2, 3}, {4, 3}});
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 2, 3, 2}));
  }

  void cycles_and_bad_edges_do_not_break_the_layout() {
    const std::vector<LayoutBox> boxes(3, LayoutBox{50, 10});
    const Layout l =
        LayeredLayout().compute(boxes, {{0, 1}, {1, 2}, {2, 1}, {1, 1}, {-1, 2}, {0, 99}});
    QCOMPARE(l.layers, (std::vector<int>{0, 1, 1}));  // 1 and 2 are on a cycle: below the rest
    QCOMPARE(static_cast<int>(l.routes.size()), 6);
    for (const auto& p : l.positions) QVERIFY(std::isfinite(p.x) && std::isfinite(p.y));
    // The two boxes of one row do not overlap.
    QVERIFY(std::abs(l.positions[1].x - l.positions[2].x) >= 50.0);
  }

  void a_graph_that_is_only_a_cycle_starts_at_the_top() {
    const std::vector<LayoutBox> boxes(2, LayoutBox{50, 10});
    const Layout l = LayeredLayout().compute(boxes, {{0, 1}, {1, 0}});
    QCOMPARE(l.layers, (std::vector<int>{0, 0}));
    QCOMPARE(l.positions[0].y, 0.0);
    QCOMPARE(l.height, 10.0);
  }
};

TESSERA_QTEST(GraphLayoutTest)
#include "graph_layout_test.moc"
