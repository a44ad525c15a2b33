// Tests of the canvas search (studio/graph_view_search.cpp) and the minimap (studio/minimap.cpp)
// on LeNet in a real window: Ctrl+F shows the field, typing selects and centres the first node
// whose name or op matches (case-insensitive), Enter and F3 go on (wrapping), a miss selects
// nothing, Escape hides the field; the minimap shows once a graph is open, its frame is the
// visible part and a click there moves the view.
#include <QAction>
#include <QApplication>
#include <QLineEdit>
#include <QScrollBar>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/app/main_window.h"
#include "studio/canvas/minimap.h"

using tessera::ir::NodeId;
using tessera::studio::Document;
using tessera::studio::GraphView;
using tessera::studio::MainWindow;
using tessera::studio::Minimap;

namespace {

const QString kLenet = QString::fromStdString(tessera::test::source_dir() + "/samples/lenet.json");

}  // namespace

class GraphViewSearchTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

  QStringList names(const Document& doc, const QList<NodeId>& ids) {
    QStringList out;
    for (NodeId id : ids) out << QString::fromStdString(doc.graph().node(id).name);
    return out;
  }

  QString selected(MainWindow& w, const Document& doc) {
    return names(doc, w.scene()->selected_node_ids()).join(QLatin1Char(','));
  }

  // The scene point at the centre of the view.
  QPointF centre(GraphView* view) { return view->mapToScene(view->viewport()->rect().center()); }

 private Q_SLOTS:
  void finds_by_name_or_op_case_insensitively() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet.toStdString()).is_ok());
    MainWindow w(doc);
    GraphView* view = w.view();
    QCOMPARE(names(doc, view->find_nodes(QStringLiteral("RELU"))),
             QStringList({"relu1", "relu2", "relu3", "relu4"}));
    // "pool" matches the names pool1, pool2 (op MaxPool too); "gemm" only the ops of fc1..fc3.
    QCOMPARE(names(doc, view->find_nodes(QStringLiteral("pool"))), QStringList({"pool1", "pool2"}));
    QCOMPARE(names(doc, view->find_nodes(QStringLiteral("gemm"))),
             QStringList({"fc1", "fc2", "fc3"}));
    QCOMPARE(names(doc, view->find_nodes(QStringLiteral("fc2"))), QStringList({"fc2"}));
    QVERIFY(view->find_nodes(QStringLiteral("softmax")).isEmpty());
    QVERIFY(view->find_nodes(QStringLiteral("  ")).isEmpty());
  }

  void ctrl_f_typing_enter_and_f3() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet.toStdString()).is_ok());
    MainWindow w(doc);
    w.resize(1200, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    GraphView* view = w.view();
    view->reset_zoom();
    QVERIFY(!view->search_field()->isVisible());
    QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(view->search_field()->isVisible());
    QTRY_VERIFY(view->search_field()->hasFocus());

    QTest::keyClicks(view->search_field(), QStringLiteral("Relu"));
    QCOMPARE(selected(w, doc), QStringLiteral("relu1"));
    auto near = [&](const QString& name) {
      NodeId id = -1;
      for (NodeId n : doc.graph().node_ids())
        if (doc.graph().node(n).name == name.toStdString()) id = n;
      // Centred, unless the scroll bar stops at an end of the graph; visible in any case.
      const QRectF box = w.scene()->node_item(id)->sceneBoundingRect();
      const QRectF shown = view->mapToScene(view->viewport()->rect()).boundingRect();
      if (!shown.contains(box)) return false;
      const QScrollBar* bar = view->verticalScrollBar();
      if (bar->value() == bar->minimum() || bar->value() == bar->maximum()) return true;
      return std::abs(centre(view).y() - box.center().y()) < 2;
    };
    QVERIFY(near(QStringLiteral("relu1")));
    QTest::keyClick(view->search_field(), Qt::Key_Return);
    QCOMPARE(selected(w, doc), QStringLiteral("relu2"));
    QVERIFY(near(QStringLiteral("relu2")));
    QTest::keyClick(&w, Qt::Key_F3);
    QCOMPARE(selected(w, doc), QStringLiteral("relu3"));
    QVERIFY(near(QStringLiteral("relu3")));
    QTest::keyClick(view->search_field(), Qt::Key_Return);
    QTest::keyClick(view->search_field(), Qt::Key_Return);  // past relu4: back to relu1
    QCOMPARE(selected(w, doc), QStringLiteral("relu1"));

    // A miss: nothing found, the field says so, the selection stays.
    QTest::keyClicks(view->search_field(), QStringLiteral("zzz"));
    QCOMPARE(view->find_next(), tessera::ir::kNoNode);
    QVERIFY(!view->search_field()->styleSheet().isEmpty());
    QCOMPARE(selected(w, doc), QStringLiteral("relu1"));

    QTest::keyClick(view->search_field(), Qt::Key_Escape);
    QVERIFY(!view->search_field()->isVisible());
  }

  void minimap_shows_the_visible_part_and_moves_the_view() {
    Document doc(registry_);
    MainWindow w(doc);
    w.resize(1200, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    GraphView* view = w.view();
    Minimap* map = view->minimap();
    QVERIFY(!map->isVisible());  // nothing open
    QVERIFY(doc.load(kLenet.toStdString()).is_ok());
    QVERIFY(map->isVisible());
    // In the view's bottom-right corner.
    const QRect port = view->viewport()->geometry();
    QVERIFY(port.contains(map->geometry()));
    QVERIFY(map->geometry().right() > port.center().x());
    QVERIFY(map->geometry().bottom() > port.center().y());

    view->reset_zoom();
    // The graph's rect (the view's own has room around it to pan).
    const QRectF scene = view->scene()->sceneRect();
    view->centerOn(scene.center().x(), scene.top() + view->viewport()->height() / 2.0 / view->zoom());
    // The whole scene fits the map (aspect kept), the frame is the visible part, at the top.
    const QRectF whole = map->to_map(scene);
    QVERIFY(QRectF(map->rect()).adjusted(-0.5, -0.5, 0.5, 0.5).contains(whole));
    QRectF frame = map->visible_rect();
    const QRectF shown = view->mapToScene(view->viewport()->rect()).boundingRect() & scene;
    QVERIFY(std::abs(frame.height() / whole.height() - shown.height() / scene.height()) < 1e-6);
    QVERIFY(std::abs(frame.top() - whole.top()) < 1.0);
    QVERIFY(shown.height() < scene.height() * 0.9);  // LeNet is taller than the view at 100 %

    // A click near the bottom of the map shows the bottom of the graph.
    const QPoint bottom = whole.center().toPoint() + QPoint(0, int(whole.height() / 2) - 3);
    const QPointF target = map->to_scene(bottom);
    QTest::mouseClick(map, Qt::LeftButton, {}, bottom);
    QVERIFY(view->verticalScrollBar()->value() > view->verticalScrollBar()->minimum());
    const QRectF after = view->mapToScene(view->viewport()->rect()).boundingRect();
    QVERIFY(after.contains(target));
    frame = map->visible_rect();
    QVERIFY(std::abs(frame.bottom() - whole.bottom()) < 2.0);  // scrolled to the end
  }
};

TESSERA_QTEST(GraphViewSearchTest)
#include "graph_view_search_test.moc"
