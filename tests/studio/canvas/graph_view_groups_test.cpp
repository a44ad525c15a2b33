// Tests of the group actions (studio/graph_view_groups.cpp) and the scene's drawing of groups
// (studio/graph_scene_groups.cpp) on LeNet in a real window: Ctrl+G groups the selection under
// the name typed (prompt hook) and a frame with that name surrounds the boxes; Ctrl+E collapses
// it into one box whose ports are the edges crossing its border (the edges inside hidden, the
// crossing ones ending at the box, labelled with their types); a double-click on that box expands
// it; Ctrl+Shift+G ungroups; a name in use is refused with the reason in the status bar.
#include <QAction>
#include <QStatusBar>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/app/main_window.h"

using tessera::ir::NodeId;
using tessera::ir::ValueId;
using tessera::studio::CanvasItemType;
using tessera::studio::Document;
using tessera::studio::EdgeItem;
using tessera::studio::GraphScene;
using tessera::studio::GroupBoxItem;
using tessera::studio::GroupFrameItem;
using tessera::studio::MainWindow;

namespace {

const QString kLenet = QString::fromStdString(tessera::test::source_dir() + "/samples/lenet.json");

NodeId by_name(const Document& doc, const char* name) {
  for (NodeId id : doc.graph().node_ids())
    if (doc.graph().node(id).name == name) return id;
  return -1;
}

// The visible edges carrying `value`.
std::vector<EdgeItem*> visible_edges(const GraphScene& scene, ValueId value) {
  std::vector<EdgeItem*> out;
  for (QGraphicsItem* item : scene.items())
    if (item->type() == static_cast<int>(CanvasItemType::kEdge) && item->isVisible() &&
        static_cast<EdgeItem*>(item)->value_id() == value)
      out.push_back(static_cast<EdgeItem*>(item));
  return out;
}

}  // namespace

class GraphViewGroupsTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void group_collapse_expand_ungroup() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet.toStdString()).is_ok());
    MainWindow w(doc);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    GraphScene* scene = w.scene();
    QStringList answers = {QStringLiteral("block1")};
    w.view()->set_text_prompt([&](const QString&, const QString&, const QString&) {
      return answers.isEmpty() ? QString() : answers.takeFirst();
    });
    const NodeId conv1 = by_name(doc, "conv1"), relu1 = by_name(doc, "relu1"),
                 pool1 = by_name(doc, "pool1"), conv2 = by_name(doc, "conv2");
    scene->select_nodes({conv1, relu1, pool1});

    QTest::keyClick(&w, Qt::Key_G, Qt::ControlModifier);
    QCOMPARE(doc.layout().groups.size(), size_t{1});
    QCOMPARE(doc.layout().groups[0].name, std::string("block1"));
    QCOMPARE(doc.layout().groups[0].nodes.size(), size_t{3});
    QVERIFY(!doc.layout().groups[0].collapsed);
    scene->flush_update();
    GroupFrameItem* frame = scene->group_frame(QStringLiteral("block1"));
    QVERIFY(frame);
    for (NodeId id : {conv1, relu1, pool1})
      QVERIFY(frame->frame().contains(
          scene->node_item(id)->sceneBoundingRect().adjusted(4, 4, -4, -4)));
    QVERIFY(!frame->frame().intersects(scene->node_item(conv2)->sceneBoundingRect()));
    QVERIFY(!scene->group_box(QStringLiteral("block1")));

    // Collapse: one box with one input (x) and one output (pool1's value, to conv2).
    scene->select_nodes({relu1});
    QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier);
    QVERIFY(doc.layout().groups[0].collapsed);
    scene->flush_update();
    GroupBoxItem* box = scene->group_box(QStringLiteral("block1"));
    QVERIFY(box);
    QVERIFY(!scene->group_frame(QStringLiteral("block1")));
    QCOMPARE(box->num_input_ports(), 1);
    QCOMPARE(box->num_output_ports(), 1);
    for (NodeId id : {conv1, relu1, pool1}) QVERIFY(!scene->node_item(id)->isVisible());
    QVERIFY(scene->node_item(conv2)->isVisible());
    const auto& g = doc.graph();
    QVERIFY(visible_edges(*scene, g.node(conv1).outputs[0]).empty());  // inside the group
    QVERIFY(visible_edges(*scene, g.node(relu1).outputs[0]).empty());
    const auto in = visible_edges(*scene, g.inputs()[0]);
    QCOMPARE(in.size(), size_t{1});
    QCOMPARE(in[0]->target_box(), static_cast<const tessera::studio::BoxItem*>(box));
    const auto out = visible_edges(*scene, g.node(pool1).outputs[0]);
    QCOMPARE(out.size(), size_t{1});
    QCOMPARE(out[0]->target_box(),
             static_cast<const tessera::studio::BoxItem*>(scene->node_item(conv2)));
    QVERIFY(out[0]->label() && out[0]->label()->isVisible());
    QCOMPARE(out[0]->label()->text(), QStringLiteral("f32[N, 6, 14, 14]"));
    // The hidden nodes' ports take no connections.
    QVERIFY(!scene->input_port_at(scene->input_port_position(relu1, 0), 6));

    // A double-click on the box expands it.
    w.view()->centerOn(box);
    const QPoint at = w.view()->mapFromScene(box->sceneBoundingRect().center());
    QTest::mouseDClick(w.view()->viewport(), Qt::LeftButton, {}, at);
    QVERIFY(!doc.layout().groups[0].collapsed);
    scene->flush_update();
    QVERIFY(scene->group_frame(QStringLiteral("block1")));
    QVERIFY(scene->node_item(relu1)->isVisible());
    QCOMPARE(visible_edges(*scene, g.node(conv1).outputs[0]).size(), size_t{1});

    // A second group of that name is refused; Ctrl+Shift+G ungroups; undo brings it back.
    answers = {QStringLiteral("block1")};
    scene->select_nodes({conv2});
    QTest::keyClick(&w, Qt::Key_G, Qt::ControlModifier);
    QCOMPARE(doc.layout().groups.size(), size_t{1});
    QVERIFY2(w.statusBar()->currentMessage().startsWith(QStringLiteral("Cannot group")),
             qPrintable(w.statusBar()->currentMessage()));
    scene->select_nodes({pool1});
    QTest::keyClick(&w, Qt::Key_G, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(doc.layout().groups.empty());
    scene->flush_update();
    QVERIFY(!scene->group_frame(QStringLiteral("block1")));
    doc.undo_stack().undo();
    scene->flush_update();
    QVERIFY(scene->group_frame(QStringLiteral("block1")));
  }
};

TESSERA_QTEST(GraphViewGroupsTest)
#include "graph_view_groups_test.moc"
