// The value view (issue 17, "Values"): statistics and histogram worked out by hand, the heatmap of
// a chosen slice, Save as .npy read back; and the whole path in the window: LeNet run with "Keep
// every value", a mouse click on an edge shows that value's tensor in the Value dock, an edit
// forgets the values.
#include <QCheckBox>
#include <QDockWidget>
#include <QGraphicsView>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <limits>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "formats/npy.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/app/main_window.h"
#include "studio/panels/run_panel.h"
#include "studio/panels/value_view.h"

using tessera::DType;
using tessera::Tensor;
using tessera::studio::Document;
using tessera::studio::MainWindow;
using tessera::studio::ValueView;

class ValueViewTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void stats_and_histogram_by_hand() {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    const Tensor t = Tensor::from_doubles(DType::kF32, {5}, {-1, 0, 2, nan, inf});
    const auto s = tessera::studio::value_stats(t);
    QCOMPARE(s.count, int64_t{5});
    QCOMPARE(s.finite, int64_t{3});
    QCOMPARE(s.nans, int64_t{1});
    QCOMPARE(s.infs, int64_t{1});
    QCOMPARE(s.zeros, int64_t{1});
    QCOMPARE(s.min, -1.0);
    QCOMPARE(s.max, 2.0);
    QVERIFY(std::abs(s.mean - 1.0 / 3) < 1e-12);
    QVERIFY(std::abs(s.stddev - std::sqrt(5.0 / 3 - 1.0 / 9)) < 1e-12);
    // 3 bins over [-1, 2]: -1 in the first, 0 in the second, 2 (the top) in the last.
    QCOMPARE(tessera::studio::value_histogram(t, s, 3), (std::vector<int64_t>{1, 1, 1}));
  }

  void heatmap_slices_and_save() {
    std::vector<double> v(24);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
    const Tensor t = Tensor::from_doubles(DType::kF32, {2, 3, 4}, v);
    ValueView view;
    view.resize(300, 500);
    view.set_value(QStringLiteral("x"), t);
    QCOMPARE(view.slice_count(), 2);
    QCOMPARE(view.heatmap().size(), QSize(4, 3));
    const QRgb first = view.heatmap().pixel(0, 0), last = view.heatmap().pixel(3, 2);
    QVERIFY(first != last);  // 0 and 11: the two ends of the colour map
    view.set_slice(1);       // 12 .. 23: the same picture, scaled to its own range
    QCOMPARE(view.heatmap().pixel(0, 0), first);
    QVERIFY(view.summary_text().contains(QStringLiteral("f32[2, 3, 4]")));
    QVERIFY(view.summary_text().contains(QStringLiteral("max 23")));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("x.npy"));
    QVERIFY(view.save(path).is_ok());
    auto back = tessera::formats::read_npy(path.toStdString());
    QVERIFY(back.has_value());
    QCOMPARE(back->shape(), t.shape());
    QCOMPARE(back->get(23), 23.0);
    QVERIFY(!view.save(dir.filePath(QStringLiteral("no/such/folder/x.npy"))).is_ok());
    // Issue 40, item 8: the histogram has its axis values (the highest bar's count, the range
    // under the bars) and the heatmap its colour scale (slice 1: 12 to 23).
    QCOMPARE(view.histogram_axis(), (QStringList{"1 values", "0", "11.5", "23"}));
    QCOMPARE(view.colour_scale(), (QStringList{"12", "17.5", "23"}));
    const Tensor signed_t = Tensor::from_doubles(DType::kF32, {2, 2}, {-2, 1, 0.5, 1});
    view.set_value(QStringLiteral("s"), signed_t);
    QCOMPARE(view.colour_scale(), (QStringList{"-2", "0", "2"}));  // diverging around 0
    view.clear();
    QVERIFY(view.colour_scale().isEmpty());
  }

  void click_on_an_edge_after_a_run_shows_its_value() {
    Document doc(registry_);
    QVERIFY(doc.load(tessera::test::source_dir() + "/samples/lenet.json").is_ok());
    MainWindow w(doc, tessera::studio::MainWindowOptions{});
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    tessera::studio::RunPanel* panel = w.run_panel();
    QVERIFY(panel->keep_values_box()->isChecked());
    QSignalSpy done(panel, &tessera::studio::RunPanel::finished);
    QVERIFY(panel->run());
    QVERIFY(done.wait(60000));
    QVERIFY2(panel->error_text().isEmpty(), qPrintable(panel->error_text()));
    QVERIFY(panel->value_count() >= 10);  // every edge of LeNet's 12 nodes

    // conv1's output, clicked on the canvas with the mouse.
    tessera::ir::ValueId conv_out = tessera::ir::kNoValue;
    for (tessera::ir::NodeId id : doc.graph().node_ids())
      if (doc.graph().node(id).op == "Conv") {
        conv_out = doc.graph().node(id).outputs[0];
        break;
      }
    tessera::studio::EdgeItem* edge = nullptr;
    for (QGraphicsItem* item : w.scene()->items())
      if (item->type() == static_cast<int>(tessera::studio::CanvasItemType::kEdge) &&
          static_cast<tessera::studio::EdgeItem*>(item)->value_id() == conv_out)
        edge = static_cast<tessera::studio::EdgeItem*>(item);
    QVERIFY(edge);
    // A point of the curve a quarter along it (the type label sits at its start).
    const QPointF on_curve = edge->mapToScene(edge->path().pointAtPercent(0.6));
    w.view()->centerOn(on_curve);
    const QPoint at = w.view()->mapFromScene(on_curve);
    QSignalSpy clicked(w.view(), &tessera::studio::GraphView::value_clicked);
    // A click on a box is not a click on an edge (a scope's double-click opened the Value dock).
    auto* conv_box = w.scene()->node_item(doc.graph().value(conv_out).producer);
    w.view()->centerOn(conv_box);
    QTest::mouseClick(w.view()->viewport(), Qt::LeftButton, {},
                      w.view()->mapFromScene(conv_box->sceneBoundingRect().center()));
    QCOMPARE(clicked.count(), 0);
    w.view()->centerOn(on_curve);
    QTest::mouseClick(w.view()->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked[0][0].toInt(), conv_out);
    QVERIFY(w.value_dock()->isVisible());
    ValueView* view = w.value_view();
    QVERIFY(view->has_value());
    const Tensor* kept = panel->value(conv_out);
    QVERIFY(kept);
    QCOMPARE(kept->shape(), (tessera::Shape{1, 6, 28, 28}));
    QCOMPARE(view->stats().count, kept->numel());
    QCOMPARE(view->stats().max, tessera::studio::value_stats(*kept).max);
    QCOMPARE(view->slice_count(), 6);

    // An edit: the values describe another graph now, and are forgotten.
    QVERIFY(doc.rename_node(doc.graph().node_ids().front(), "renamed").is_ok());
    QCOMPARE(panel->value_count(), size_t{0});
    QVERIFY(!view->has_value());
    QVERIFY(view->summary_text().contains(QStringLiteral("changed since the run")));
    // Another file: the dock does not keep the last graph's note.
    QVERIFY(doc.load(tessera::test::source_dir() + "/samples/mlp.json").is_ok());
    QVERIFY2(!view->summary_text().contains(QStringLiteral("changed")), qPrintable(view->summary_text()));
  }
};

TESSERA_QTEST(ValueViewTest)
#include "value_view_test.moc"
