// Tests of studio/graph_scene.cpp's placement: the layered layout at once, then the refined
// (Graphviz) layout from the worker; the fallback when refinement fails; the size limit above which
// only the layered layout is used; known positions that no layout moves; a reload while a layout
// is pending. Graphs are ResNet-like chains written as IR text.
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QTest>
#include <atomic>
#include <memory>
#include <string>

#include "tests/studio/qtest_main.h"
#include "tests/studio/canvas_test_util.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/common/canvas_style.h"

using tessera::Expected;
using tessera::make_error;
using tessera::studio::Document;
using tessera::studio::GraphScene;
using tessera::studio::Layout;
using tessera::studio::LayoutBox;
using tessera::studio::LayoutEdge;
using tessera::studio::LayoutFunction;
using tessera::studio::NodeItem;
using tessera::studio::SceneLayoutOptions;

namespace {

// x -> Relu -> Relu -> Add(skip) -> Relu -> Relu -> Add(skip) ...: node i (value %(i + 1)) adds
// the output of node i - 2 when i % 3 == 2. Boxes: the input (0), nodes (1..n), the output (n + 1).
QByteArray resnet_tir(int n) {
  QByteArray t = "graph \"res\" {\n  input %0 \"x\" : f32[N, 16]\n";
  for (int i = 0; i < n; ++i) {
    const QByteArray out = "%" + QByteArray::number(i + 1);
    if (i % 3 == 2)
      t += "  #" + QByteArray::number(i) + " = Add(%" + QByteArray::number(i) + ", %" +
           QByteArray::number(i - 1) + ") -> (" + out + " : f32[N, 16])\n";
    else
      t += "  #" + QByteArray::number(i) + " = Relu(%" + QByteArray::number(i) + ") -> (" + out +
           " : f32[N, 16])\n";
  }
  t += "  output %" + QByteArray::number(n) + "\n}\n";
  return t;
}

// A refined layout that is easy to recognise: box b at (10 b, 100 b).
LayoutFunction scripted(std::shared_ptr<std::atomic<int>> calls) {
  return [calls](const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges) {
    ++*calls;
    Layout l;
    for (size_t b = 0; b < boxes.size(); ++b) l.positions.push_back({10.0 * b, 100.0 * b});
    l.routes.resize(edges.size());
    return Expected<Layout>(l);
  };
}

bool boxes_overlap(const GraphScene& scene, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (scene.node_item(i)->sceneBoundingRect().intersects(scene.node_item(j)->sceneBoundingRect()))
        return true;
  return false;
}

}  // namespace

class GraphSceneTest : public QObject {
  Q_OBJECT

 private:
  std::string write_graph(const QString& name, int n) {
    const QString path = dir_.filePath(name);
    QFile f(path);
    const QByteArray text = resnet_tir(n);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
      qFatal("cannot write %s", qPrintable(path));
    return path.toStdString();
  }

  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();
  QTemporaryDir dir_;

 private Q_SLOTS:
  void cleanup() { QVERIFY(tessera::studio::layout_thread_pool()->waitForDone(30000)); }

  void layered_at_once_then_the_refined_layout() {
    auto calls = std::make_shared<std::atomic<int>>(0);
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{scripted(calls), 2000});
    QSignalSpy changed(&scene, &GraphScene::layout_changed);
    QVERIFY(doc.load(write_graph("a.tir", 6)).is_ok());
    // Right after loading: the layered layout (a chain: every node on one vertical axis, rows
    // going down), and the refinement pending.
    QVERIFY(scene.is_refining());
    QCOMPARE(scene.layout_note(), QStringLiteral("laying out with Graphviz..."));
    QVERIFY(scene.node_item(0)->pos().y() < scene.node_item(1)->pos().y());
    QVERIFY(scene.node_item(1)->pos() != QPointF(20, 200));
    QVERIFY(changed.wait(10000));
    QCOMPARE(changed.count(), 1);
    QCOMPARE(calls->load(), 1);
    for (int i = 0; i < 6; ++i)  // node i is box i + 1
      QCOMPARE(scene.node_item(i)->pos(), QPointF(10.0 * (i + 1), 100.0 * (i + 1)));
    QCOMPARE(scene.layout_note(), QStringLiteral("Graphviz layout"));
    QVERIFY(!scene.is_refining());
    QVERIFY(scene.sceneRect().contains(scene.node_item(5)->sceneBoundingRect()));
  }

  void graphviz_places_a_real_graph_without_overlaps() {
    Document doc(registry_);
    GraphScene scene(doc);  // the default: Graphviz
    QSignalSpy changed(&scene, &GraphScene::layout_changed);
    QVERIFY(doc.load(write_graph("b.tir", 12)).is_ok());
    QVERIFY(changed.wait(10000));
    QCOMPARE(scene.layout_note(), QStringLiteral("Graphviz layout"));
    QVERIFY(!boxes_overlap(scene, 12));
    for (int i = 1; i < 12; ++i)  // a chain: every node below the one before it
      QVERIFY(scene.node_item(i - 1)->pos().y() + scene.node_item(i - 1)->boundingRect().height() <
              scene.node_item(i)->pos().y());
  }

  void failed_refinement_keeps_the_layered_layout() {
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{
                              [](const std::vector<LayoutBox>&, const std::vector<LayoutEdge>&) {
                                return Expected<Layout>(make_error("dot crashed"));
                              },
                              2000});
    QSignalSpy note(&scene, &GraphScene::layout_note_changed);
    QSignalSpy changed(&scene, &GraphScene::layout_changed);
    QVERIFY(doc.load(write_graph("c.tir", 6)).is_ok());
    const std::map<tessera::ir::NodeId, QPointF> layered = scene.node_positions();
    QTRY_VERIFY(scene.layout_note().contains(QStringLiteral("dot crashed")));
    QCOMPARE(scene.layout_note(), QStringLiteral("layered layout (Graphviz failed: dot crashed)"));
    QCOMPARE(changed.count(), 0);
    QVERIFY(scene.node_positions() == layered);
    QVERIFY(!note.isEmpty());
  }

  void big_graphs_keep_the_layered_layout() {
    auto calls = std::make_shared<std::atomic<int>>(0);
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{scripted(calls), 7});
    QVERIFY(doc.load(write_graph("d.tir", 6)).is_ok());  // 8 boxes: input, 6 nodes, output
    QVERIFY(!scene.is_refining());
    QCOMPARE(scene.layout_note(),
             QStringLiteral("layered layout (8 boxes: above the Graphviz limit of 7)"));
    QTest::qWait(50);
    QCOMPARE(calls->load(), 0);
  }

  // Issue 17, large graphs: 3,000 nodes zoomed out are drawn as the sketch (a rectangle per box,
  // lines for edges) and the picture is not empty; zoomed in, the items draw themselves.
  void big_graphs_zoomed_out_draw_a_sketch() {
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{{}, 5000});
    QVERIFY(doc.load(write_graph("big.tir", 3000)).is_ok());
    tessera::studio::GraphView view(&scene);
    view.resize(640, 480);
    view.show();
    view.fit();
    QVERIFY(view.zoom() < GraphScene::kSketchZoom);
    QVERIFY(view.sketching());
    const double ink = canvas_test::ink_share(view);
    QVERIFY2(ink > 0.0005, qPrintable(QString::number(ink)));
    view.reset_zoom();  // Actual Size
    QVERIFY(!view.sketching());
  }

  void known_positions_stay_put() {
    auto calls = std::make_shared<std::atomic<int>>(0);
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{scripted(calls), 2000});
    scene.set_known_positions({{2, QPointF(500, 700)}, {99, QPointF(1, 1)}});  // 99: no such node
    QSignalSpy changed(&scene, &GraphScene::layout_changed);
    QVERIFY(doc.load(write_graph("e.tir", 6)).is_ok());
    QCOMPARE(scene.node_item(2)->pos(), QPointF(500, 700));
    QVERIFY(changed.wait(10000));
    QCOMPARE(scene.node_item(2)->pos(), QPointF(500, 700));  // not moved by the layout
    QCOMPARE(scene.node_item(3)->pos(), QPointF(40, 400));   // the others are (box 4)
    QCOMPARE(scene.node_positions().at(2), QPointF(500, 700));
    QCOMPARE(static_cast<int>(scene.node_positions().size()), 6);
  }

  // Issue 17, item 1: an in-place rebuild (a theme switch, a move undone) of one graph must not
  // pin the boxes of the next graph opened, which has no layout of its own.
  void positions_do_not_leak_into_the_next_file() {
    auto calls = std::make_shared<std::atomic<int>>(0);
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{scripted(calls), 2000});
    QSignalSpy changed(&scene, &GraphScene::layout_changed);
    QVERIFY(doc.load(write_graph("big.tir", 9)).is_ok());
    QVERIFY(changed.wait(10000));
    scene.apply_theme();  // an in-place rebuild pins every box where it is
    scene.flush_update();
    QVERIFY(doc.load(write_graph("small.tir", 4)).is_ok());
    QVERIFY(scene.layout_note() != QStringLiteral("saved positions"));
    QVERIFY(scene.is_refining());
    QVERIFY(changed.wait(10000));
    for (int i = 0; i < 4; ++i)  // box i + 1 at the scripted layout's place
      QCOMPARE(scene.node_item(i)->pos(), QPointF(10.0 * (i + 1), 100.0 * (i + 1)));
  }

  void all_positions_known_means_no_layout_job() {
    auto calls = std::make_shared<std::atomic<int>>(0);
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{scripted(calls), 2000});
    std::map<tessera::ir::NodeId, QPointF> known;
    for (int i = 0; i < 3; ++i) known[i] = QPointF(0, 200.0 * i);
    scene.set_known_positions(known);
    QVERIFY(doc.load(write_graph("f.tir", 3)).is_ok());
    QVERIFY(!scene.is_refining());
    QCOMPARE(scene.layout_note(), QStringLiteral("saved positions"));
    QVERIFY(scene.node_positions() == known);
    // The graph input goes just above node 0 (at y = 0), the output just below node 2 (at 400).
    int terminals = 0;
    for (QGraphicsItem* item : scene.items()) {
      if (item->type() != static_cast<int>(tessera::studio::CanvasItemType::kTerminal)) continue;
      auto* t = static_cast<tessera::studio::TerminalItem*>(item);
      if (t->kind() == tessera::studio::TerminalItem::Kind::kInput)
        QVERIFY(t->pos().y() + t->size().height() < 0);
      else
        QVERIFY(t->pos().y() > 400 + scene.node_item(2)->size().height());
      ++terminals;
    }
    QCOMPARE(terminals, 2);
    QTest::qWait(50);
    QCOMPARE(calls->load(), 0);
  }

  void reload_while_refining_applies_only_the_new_graph() {
    auto calls = std::make_shared<std::atomic<int>>(0);
    Document doc(registry_);
    GraphScene scene(doc, SceneLayoutOptions{scripted(calls), 2000});
    QSignalSpy changed(&scene, &GraphScene::layout_changed);
    QVERIFY(doc.load(write_graph("g.tir", 9)).is_ok());
    QVERIFY(doc.load(write_graph("h.tir", 4)).is_ok());  // before the first layout arrives
    QVERIFY(changed.wait(10000));
    QVERIFY(tessera::studio::layout_thread_pool()->waitForDone(10000));
    QCoreApplication::processEvents();
    QCOMPARE(changed.count(), 1);
    QCOMPARE(scene.node_item_count(), 4);
    QCOMPARE(scene.node_item(3)->pos(), QPointF(40, 400));
  }

  void destroying_the_scene_while_refining_is_safe() {
    Document doc(registry_);
    auto* scene = new GraphScene(doc);
    QVERIFY(doc.load(write_graph("i.tir", 60)).is_ok());
    QVERIFY(scene->is_refining());
    delete scene;
    QVERIFY(tessera::studio::layout_thread_pool()->waitForDone(30000));
    QCoreApplication::processEvents();
  }
};

TESSERA_QTEST(GraphSceneTest)
#include "graph_scene_test.moc"
