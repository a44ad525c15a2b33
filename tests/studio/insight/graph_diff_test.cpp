// Tests of studio/graph_diff.cpp on hand-built graphs: a fusion (added, removed, changed by
// input, provenance links, ids the before graph lacks dropped), an attribute change, swapped
// inputs, an unchanged copy, and matching by name across graphs whose ids differ.
#include <QGraphicsView>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "engine/ir/graph.h"
#include "studio/insight/graph_diff.h"
#include "studio/insight/graph_diff_view.h"

using tessera::DType;
using tessera::Tensor;
using tessera::ir::Dim;
using tessera::ir::Graph;
using tessera::ir::NodeId;
using tessera::ir::TensorType;
using tessera::ir::ValueId;
using tessera::studio::diff_graphs;
using tessera::studio::DiffMatch;
using tessera::studio::GraphDiff;

namespace {

using Ids = std::vector<NodeId>;

// x -> #0 Conv(x, w) -> #1 Relu -> #2 Flatten -> output
Graph conv_relu_flatten() {
  Graph g("g");
  ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::known(1), Dim::known(1), Dim::known(4), Dim::known(4)}));
  ValueId w = g.add_param("w", Tensor(DType::kF32, {2, 1, 3, 3}));
  NodeId conv = g.add_node("Conv", {x, w}, 1, "conv", {{"kernel_shape", std::vector<int64_t>{3, 3}}});
  NodeId relu = g.add_node("Relu", {g.node(conv).outputs[0]}, 1, "relu");
  NodeId flat = g.add_node("Flatten", {g.node(relu).outputs[0]}, 1, "flat", {{"axis", int64_t{1}}});
  g.set_outputs({g.node(flat).outputs[0]});
  return g;
}

}  // namespace

class GraphDiffTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void identical_graphs_have_an_empty_diff() {
    Graph g = conv_relu_flatten();
    GraphDiff d = diff_graphs(g, g);
    QVERIFY(d.empty());
    QCOMPARE(d.summary(), std::string("+0 -0 ~0"));
    QCOMPARE(d.matched.size(), size_t{3});
  }

  void fusion_adds_removes_changes_and_links() {
    Graph before = conv_relu_flatten();
    Graph after = before;
    // fuse #0 + #1 into #3 FusedConv, as the fuse pass does
    NodeId fused = after.add_node("FusedConv", after.node(0).inputs, 1, "conv",
                                  {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"activation", "Relu"}});
    after.node(fused).provenance.from = {0, 1};
    after.replace_all_uses(after.node(1).outputs[0], after.node(fused).outputs[0]);
    after.remove_node(1);
    after.remove_node(0);
    QCOMPARE(fused, NodeId{3});
    // #7 is no node of the before graph: dropped from the links. #2 (unchanged id) carries a
    // provenance too, but it is only changed, so it keeps its (absent) link.
    GraphDiff d = diff_graphs(before, after, {{3, {0, 1, 7}}});
    QCOMPARE(d.added, Ids({3}));
    QCOMPARE(d.removed, Ids({0, 1}));
    QCOMPARE(d.changed, Ids({2}));  // its input now comes from the new node
    QCOMPARE(d.summary(), std::string("+1 -2 ~1"));
    QCOMPARE(d.links.size(), size_t{1});
    QCOMPARE(d.links[0].first, NodeId{3});
    QCOMPARE(d.links[0].second, Ids({0, 1}));
    QVERIFY(d.after_status(3) == GraphDiff::Status::kAdded);
    QVERIFY(d.after_status(2) == GraphDiff::Status::kChanged);
    QVERIFY(d.before_status(0) == GraphDiff::Status::kRemoved);
    QVERIFY(d.before_status(2) == GraphDiff::Status::kChanged);
  }

  void links_only_for_added_or_changed_nodes() {
    Graph g = conv_relu_flatten();
    GraphDiff d = diff_graphs(g, g, {{2, {0}}});
    QVERIFY(d.links.empty());
  }

  void attribute_change_is_a_change() {
    Graph before = conv_relu_flatten();
    Graph after = before;
    after.node(2).attrs.insert_or_assign("axis", int64_t{0});
    GraphDiff d = diff_graphs(before, after);
    QCOMPARE(d.changed, Ids({2}));
    QVERIFY(d.added.empty() && d.removed.empty());
    Graph after2 = before;
    after2.node(0).attrs.insert_or_assign("kernel_shape", std::vector<int64_t>{3, 1});
    QCOMPARE(diff_graphs(before, after2).changed, Ids({0}));
    Graph after3 = before;
    after3.node(0).attrs.insert_or_assign("pads", std::vector<int64_t>{1, 1, 1, 1});  // an added attribute
    QCOMPARE(diff_graphs(before, after3).changed, Ids({0}));
  }

  void op_change_and_swapped_inputs_are_changes() {
    Graph before = conv_relu_flatten();
    Graph after = before;
    after.node(1).op = "Sigmoid";
    QCOMPARE(diff_graphs(before, after).changed, Ids({1}));
    Graph swapped = before;
    std::swap(swapped.node(0).inputs[0], swapped.node(0).inputs[1]);
    QCOMPARE(diff_graphs(before, swapped).changed, Ids({0}));
  }

  void matching_by_name_ignores_ids() {
    // Graph A: a (Relu) -> b (Sigmoid). Graph B: an extra node first, so a and b get other ids.
    Graph a("a");
    ValueId x = a.add_input("x", TensorType(DType::kF32, {Dim::known(4)}));
    NodeId ra = a.add_node("Relu", {x}, 1, "a");
    NodeId sb = a.add_node("Sigmoid", {a.node(ra).outputs[0]}, 1, "b");
    a.set_outputs({a.node(sb).outputs[0]});
    Graph b("b");
    ValueId y = b.add_input("x", TensorType(DType::kF32, {Dim::known(4)}));
    NodeId extra = b.add_node("Tanh", {y}, 1, "extra");
    NodeId rb = b.add_node("Relu", {y}, 1, "a");
    NodeId sb2 = b.add_node("Sigmoid", {b.node(rb).outputs[0]}, 1, "b");
    b.set_outputs({b.node(sb2).outputs[0], b.node(extra).outputs[0]});
    QCOMPARE(rb, NodeId{1});

    GraphDiff by_name = diff_graphs(a, b, {}, DiffMatch::kByName);
    QCOMPARE(by_name.added, Ids({extra}));
    QVERIFY(by_name.removed.empty());
    QVERIFY(by_name.changed.empty());  // b's input comes from a in both
    QCOMPARE(by_name.matched.at(rb), ra);
    QCOMPARE(by_name.summary(), std::string("+1 -0 ~0"));

    // By id the same pair looks different: #0 Relu vs Tanh, #1 Sigmoid vs Relu, #2 new.
    GraphDiff by_id = diff_graphs(a, b);
    QCOMPARE(by_id.added, Ids({2}));
    QCOMPARE(by_id.changed, Ids({0, 1}));
  }

  // Issue 40, item 7: a stage's diff links a node to the nodes it came from across the stage's
  // passes: Relu (#1) and Flatten (#2) became a made-up #3 in one pass, #3 and Conv (#0) a
  // FusedConv (#4) in the next; traced back, #4 comes from #0, #1 and #2.
  void provenance_is_traced_across_passes() {
    Graph before = conv_relu_flatten();
    const tessera::studio::ProvenanceList earlier = {{3, {1, 2}}};
    const tessera::studio::ProvenanceList after = {{4, {0, 3}}, {5, {2}}};
    const auto traced = tessera::studio::trace_provenance(after, earlier, before);
    QCOMPARE(traced.size(), size_t{2});
    QCOMPARE(traced[0].first, 4);
    QCOMPARE(traced[0].second, (std::vector<int32_t>{0, 1, 2}));
    QCOMPARE(traced[1].second, (std::vector<int32_t>{2}));
    // A cycle in the lists (a malformed snapshot) ends; unknown sources are kept for the diff to drop.
    const auto odd = tessera::studio::trace_provenance({{7, {8}}}, {{8, {7, 99}}}, before);
    QCOMPARE(odd[0].second, (std::vector<int32_t>{7, 99}));
  }

  // Issue 40: a changed node's tooltip says what changed (it said "changed (op, attributes or
  // inputs)" and nothing else), on both sides.
  void changed_nodes_say_what_changed() {
    Graph before = conv_relu_flatten();
    Graph after = before;
    after.node(0).attrs.insert_or_assign("kernel_shape", tessera::ir::Attribute(std::vector<int64_t>{5, 5}));
    tessera::studio::GraphDiffView view;
    view.set_side_titles(QStringLiteral("run 1: lenet"), QStringLiteral("run 2: lenet"));
    view.set_graphs({before, {}, {}}, {after, {}, {}});
    using Side = tessera::studio::GraphDiffView::Side;
    const QString tip = view.node_tooltip(Side::kAfter, 0);
    QVERIFY2(tip.contains(QStringLiteral("kernel_shape: 3, 3 \u2192 5, 5")), qPrintable(tip));
    QVERIFY(view.node_tooltip(Side::kBefore, 0).contains(QStringLiteral("kernel_shape: 3, 3 \u2192 5, 5")));
    QCOMPARE(view.side_title(Side::kBefore), QStringLiteral("run 1: lenet"));
  }

  // Issue 40, item 7: stepping to a snapshot whose change is far down a tall graph keeps both
  // columns in view (centring on the after box cut the before column off at the left).
  void a_tall_diff_opens_with_both_columns() {
    Graph before("tall");
    ValueId v = before.add_input("x", TensorType(DType::kF32, {Dim::known(1), Dim::known(8)}));
    for (int i = 0; i < 60; ++i) v = before.node(before.add_node("Relu", {v}, 1, "relu" + std::to_string(i))).outputs[0];
    before.set_outputs({v});
    Graph after = before;
    after.node(50).op = "Sigmoid";  // changed, far down
    tessera::studio::GraphDiffView view;
    view.resize(1000, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.set_graphs({before, {}, {}}, {after, {}, {}});
    using Side = tessera::studio::GraphDiffView::Side;
    const QRectF shown = view.view()->mapToScene(view.view()->viewport()->rect()).boundingRect();
    const QRectF was = view.node_rect(Side::kBefore, 50), now = view.node_rect(Side::kAfter, 50);
    QVERIFY2(shown.left() <= was.left() && now.right() <= shown.right() && shown.contains(now.center()),
             qPrintable(QStringLiteral("shown x %1..%2 y %5..%6, before box x %3, after box right %4, y %7; %8")
                            .arg(shown.left()).arg(shown.right()).arg(was.left()).arg(now.right())
                            .arg(shown.top()).arg(shown.bottom()).arg(now.center().y())
                            .arg(QString::fromStdString(view.diff().summary()))));
  }
};

TESSERA_QTEST(GraphDiffTest)
#include "graph_diff_test.moc"
