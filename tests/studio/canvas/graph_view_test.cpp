// Tests of canvas editing in studio/graph_view.cpp (with the scene's port and edge look-ups in
// studio/graph_scene.cpp), driven through real mouse events on the view's viewport: connecting by
// dragging between ports (refusals in the status bar, the temporary line gone), a line ending
// nowhere, moving boxes as one undo step (placed and unplaced ones), rubber-band selection with
// Shift and panning without, Disconnect on a port or an edge.
#include <QAction>
#include <QApplication>
#include <QGraphicsLineItem>
#include <QMouseEvent>
#include <QStatusBar>
#include <QUndoStack>
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
using tessera::studio::Document;
using tessera::studio::GraphScene;
using tessera::studio::GraphView;
using tessera::studio::MainWindow;
using tessera::studio::NodeItem;

namespace {

const QString kLenet = QString::fromStdString(tessera::test::source_dir() + "/samples/lenet.json");

// A move with the left button held (QTest's mouseMove does not say which buttons are down).
void move_to(QWidget* w, QPoint to, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QMouseEvent ev(QEvent::MouseMove, QPointF(to), QPointF(w->mapToGlobal(to)), Qt::NoButton,
                 Qt::LeftButton, mods);
  QApplication::sendEvent(w, &ev);
}

// Press at `from`, move there in steps, release at `to`.
void drag(QWidget* w, QPoint from, QPoint to, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QTest::mousePress(w, Qt::LeftButton, mods, from);
  for (int i = 1; i <= 5; ++i) move_to(w, from + (to - from) * i / 5, mods);
  QTest::mouseRelease(w, Qt::LeftButton, mods, to);
}

QAction* action(const MainWindow& w, const char* name) {
  return w.findChild<QAction*>(QLatin1String(name));
}

int wire_count(const GraphScene& scene) {
  int n = 0;
  for (QGraphicsItem* item : scene.items())
    if (dynamic_cast<QGraphicsLineItem*>(item)) ++n;
  return n;
}

}  // namespace

class GraphViewTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

  // Two Relu boxes, a above b, shown in a window at 100 % zoom.
  struct Fixture {
    Document doc;
    MainWindow window;
    NodeId a = -1, b = -1;
    explicit Fixture(const tessera::ops::OpRegistry& r) : doc(r), window(doc) {}
    GraphView* view() { return window.view(); }
    QWidget* port() { return window.view()->viewport(); }
    QPoint at(QPointF scene_pos) { return view()->mapFromScene(scene_pos); }
  };

  std::unique_ptr<Fixture> two_relus() {
    auto f = std::make_unique<Fixture>(registry_);
    f->window.resize(1000, 700);
    f->window.show();
    if (!QTest::qWaitForWindowExposed(&f->window)) return nullptr;
    f->a = f->doc.add_node("Relu", "a", {0, 0}).value();
    f->b = f->doc.add_node("Relu", "b", {0, 200}).value();
    f->window.scene()->flush_update();
    f->view()->reset_zoom();
    f->view()->centerOn(40, 120);
    return f;
  }

 private Q_SLOTS:
  void connect_by_dragging_between_ports() {
    auto f = two_relus();
    QVERIFY(f);
    GraphScene* scene = f->window.scene();
    const QPointF out_a = scene->node_item(f->a)->output_port(0);
    const QPointF in_b = scene->input_port_position(f->b, 0);
    QVERIFY(!in_b.isNull());  // an absent required input still has a port
    drag(f->port(), f->at(out_a), f->at(in_b));
    QCOMPARE(f->doc.graph().node(f->b).inputs.size(), size_t{1});
    QCOMPARE(f->doc.graph().node(f->b).inputs[0], f->doc.graph().node(f->a).outputs[0]);
    QCOMPARE(f->doc.undo_stack().count(), 3);  // two adds, one connect
    QCOMPARE(wire_count(*scene), 0);
  }

  void refused_connection_shows_the_reason() {
    auto f = two_relus();
    QVERIFY(f);
    QVERIFY(f->doc.connect(f->doc.graph().node(f->a).outputs[0], f->b, 0).is_ok());
    GraphScene* scene = f->window.scene();
    scene->flush_update();
    // b's output back into a's input would close a cycle: refused, nothing changes.
    const QPointF out_b = scene->node_item(f->b)->output_port(0);
    const QPointF in_a = scene->input_port_position(f->a, 0);
    QTest::mousePress(f->port(), Qt::LeftButton, {}, f->at(out_b));
    move_to(f->port(), f->at(in_a));
    QCOMPARE(wire_count(*scene), 1);  // the temporary line while dragging
    QTest::mouseRelease(f->port(), Qt::LeftButton, {}, f->at(in_a));
    QCOMPARE(wire_count(*scene), 0);
    QCOMPARE(f->doc.undo_stack().count(), 3);
    QVERIFY(f->doc.graph().node(f->a).inputs.empty());
    const QString message = f->window.statusBar()->currentMessage();
    QVERIFY2(message.startsWith(QStringLiteral("Cannot connect")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("cycle")), qPrintable(message));
  }

  void a_line_ending_nowhere_does_nothing() {
    auto f = two_relus();
    QVERIFY(f);
    const QPointF out_a = f->window.scene()->node_item(f->a)->output_port(0);
    drag(f->port(), f->at(out_a), f->at(out_a + QPointF(300, 60)));
    QCOMPARE(f->doc.undo_stack().count(), 2);
    QCOMPARE(wire_count(*f->window.scene()), 0);
    QVERIFY(f->window.statusBar()->currentMessage().isEmpty());
  }

  void moving_a_box_is_one_undo_step() {
    auto f = two_relus();
    QVERIFY(f);
    NodeItem* item = f->window.scene()->node_item(f->a);
    const QPointF centre = item->mapToScene(item->boundingRect().center());
    drag(f->port(), f->at(centre), f->at(centre) + QPoint(120, 50));
    // At 100 % zoom a screen pixel is a scene pixel.
    QCOMPARE(f->doc.position(f->a)->x, 120.0);
    QCOMPARE(f->doc.position(f->a)->y, 50.0);
    QCOMPARE(f->doc.position(f->b)->y, 200.0);  // not selected, not moved
    QCOMPARE(f->doc.undo_stack().count(), 3);
    QVERIFY(action(f->window, "action_undo")->text().contains(QStringLiteral("Move")));
    action(f->window, "action_undo")->trigger();
    QCOMPARE(f->doc.position(f->a)->x, 0.0);
    QCOMPARE(f->doc.position(f->a)->y, 0.0);
    f->window.scene()->flush_update();
    QCOMPARE(f->window.scene()->node_item(f->a)->pos(), QPointF(0, 0));
  }

  void moving_an_unplaced_box_is_one_undo_step_too() {
    Document doc(registry_);
    MainWindow window(doc);
    window.resize(1000, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.open_file(kLenet).is_ok());
    QVERIFY(doc.layout().positions.empty());  // laid out by the canvas, not by the file
    window.view()->reset_zoom();
    const NodeId first = doc.graph().node_ids().front();
    NodeItem* item = window.scene()->node_item(first);
    const QPointF start = item->pos();
    window.view()->centerOn(item);
    const QPointF centre = item->mapToScene(item->boundingRect().center());
    const QPoint from = window.view()->mapFromScene(centre);
    drag(window.view()->viewport(), from, from + QPoint(-70, 30));
    QCOMPARE(doc.undo_stack().count(), 1);
    QCOMPARE(doc.position(first)->x, start.x() - 70);
    QCOMPARE(doc.position(first)->y, start.y() + 30);
    doc.undo_stack().undo();
    QVERIFY(!doc.position(first));
    window.scene()->flush_update();
    QCOMPARE(window.scene()->node_item(first)->pos(), start);  // back where the layout put it
  }

  void shift_drag_selects_with_a_rubber_band_and_plain_drag_pans() {
    auto f = two_relus();
    QVERIFY(f);
    const QRectF both = f->window.scene()->node_item(f->a)->sceneBoundingRect().united(
        f->window.scene()->node_item(f->b)->sceneBoundingRect());
    const QPoint from = f->at(both.topLeft() - QPointF(30, 30));
    const QPoint to = f->at(both.bottomRight() + QPointF(30, 30));
    drag(f->port(), from, to, Qt::ShiftModifier);
    QCOMPARE(f->window.scene()->selected_node_ids(), (QList<NodeId>{f->a, f->b}));
    QCOMPARE(f->view()->dragMode(), QGraphicsView::ScrollHandDrag);
    // Without Shift the same drag pans and selects nothing new.
    f->window.scene()->select_nodes({});
    drag(f->port(), from, to);
    QVERIFY(f->window.scene()->selected_node_ids().isEmpty());
    QCOMPARE(f->doc.undo_stack().count(), 2);
  }

  void disconnect_on_an_edge_or_its_port() {
    auto f = two_relus();
    QVERIFY(f);
    const tessera::ir::ValueId out_a = f->doc.graph().node(f->a).outputs[0];
    QVERIFY(f->doc.connect(out_a, f->b, 0).is_ok());
    f->window.scene()->flush_update();
    const QPointF in_b = f->window.scene()->input_port_position(f->b, 0);
    const QPoint on_port = f->at(in_b);
    QVERIFY(f->view()->disconnect_target_at(on_port));
    QVERIFY(f->view()->disconnect_at(on_port).is_ok());
    QVERIFY(f->doc.graph().node(f->b).inputs.empty());
    f->doc.undo_stack().undo();
    f->window.scene()->flush_update();
    // Halfway along the edge (a straight drop from a's output to b's input).
    const QPointF mid = (f->window.scene()->node_item(f->a)->output_port(0) + in_b) / 2;
    const auto target = f->view()->disconnect_target_at(f->at(mid));
    QVERIFY(target);
    QCOMPARE(target->node, f->b);
    QCOMPARE(target->input, 0);
    QVERIFY(f->view()->disconnect_at(f->at(mid)).is_ok());
    QVERIFY(f->doc.graph().node(f->b).inputs.empty());
    // Nothing there now (once the canvas has caught up).
    f->window.scene()->flush_update();
    QVERIFY(!f->view()->disconnect_target_at(f->at(mid)));
    QVERIFY(!f->view()->disconnect_at(f->at(mid)).is_ok());
  }
};

TESSERA_QTEST(GraphViewTest)
#include "graph_view_test.moc"
