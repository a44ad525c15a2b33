// The window never freezes while it opens real models (issue 40, item 1): DenseNet-121 and then,
// at once, ResNet-18 are opened through File › Open's path while a 5 ms timer measures the longest
// gap between event-loop turns; and each zoo model's final layout (Graphviz, or the layered one
// when Graphviz runs past its budget) lands soon after opening. Skipped without build/zoo.
//
// The figures are printed (qInfo) and quoted in studio/README.md from a quiet machine: longest
// stall 23 ms, final layouts within 0.9 s. The checks only catch the freeze itself (seconds to
// minutes before), with room for a loaded 2-core CI machine: a test never fails on a timing a
// busy machine can miss.
#include <QElapsedTimer>
#include <QFile>
#include <QTest>
#include <QTimer>
#include <algorithm>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/app/main_window.h"
#include "studio/canvas/graph_scene.h"
#include "studio/document/document.h"

using tessera::studio::Document;
using tessera::studio::GraphScene;
using tessera::studio::MainWindow;
using tessera::studio::MainWindowOptions;

namespace {

QString zoo_path(const char* model) {
  return QString::fromStdString(tessera::test::source_dir() + "/build/zoo/") + QLatin1String(model) +
         QLatin1String(".onnx");
}

// The longest gap between two ticks of a 5 ms timer while it runs: how long input would wait.
class StallMeter : public QObject {
 public:
  StallMeter() {
    timer_.setInterval(5);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const qint64 now = clock_.elapsed();
      worst_ = std::max(worst_, now - last_);
      last_ = now;
    });
    clock_.start();
    timer_.start();
  }
  qint64 worst() const { return worst_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = 0;
  qint64 worst_ = 0;
};

}  // namespace

class OpenStallTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void opening_densenet_then_resnet_never_blocks_input() {
    const QString densenet = zoo_path("densenet121"), resnet = zoo_path("resnet18");
    if (!QFile::exists(densenet) || !QFile::exists(resnet))
      QSKIP("build/zoo is absent (tests/zoo/make_zoo.py makes it)");
    Document doc(registry_);
    MainWindow w(doc, MainWindowOptions{});
    w.resize(1280, 720);
    w.show();
    QCoreApplication::processEvents();
    StallMeter meter;
    QElapsedTimer clock;
    clock.start();
    qint64 open_densenet = 0, open_resnet = 0;
    // As File › Open does it: the second file chosen while the first is still being read.
    QTimer::singleShot(20, &w, [&] {
      QElapsedTimer t;
      t.start();
      w.open_in_background(densenet);
      open_densenet = std::max<qint64>(1, t.elapsed());
      QTimer::singleShot(10, &w, [&] {
        QElapsedTimer t2;
        t2.start();
        w.open_in_background(resnet);
        open_resnet = std::max<qint64>(1, t2.elapsed());
      });
    });
    QTRY_VERIFY_WITH_TIMEOUT(open_resnet > 0 && !doc.is_loading() && !w.scene()->is_refining(), 30000);
    const qint64 final_layout = clock.elapsed();
    QTest::qWait(300);  // input keeps flowing after the layout lands
    qInfo("File › Open of DenseNet-121 took %lld ms, of ResNet-18 %lld ms on the UI thread; ResNet-18's final layout "
          "(%s) %lld ms after the first open; longest event-loop stall %lld ms",
          static_cast<long long>(open_densenet), static_cast<long long>(open_resnet),
          qPrintable(w.scene()->layout_note()), static_cast<long long>(final_layout),
          static_cast<long long>(meter.worst()));
    QCOMPARE(doc.graph().num_nodes(), size_t{49});  // ResNet-18's nodes, not DenseNet's
    QVERIFY2(open_densenet < 500 && open_resnet < 500, "File › Open read the file on the UI thread");
    QVERIFY2(meter.worst() <= 1000, qPrintable(QString::number(meter.worst())));
  }

  void final_layout_lands_soon_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"densenet121", "swin_t", "inception_v3", "efficientnet_b0", "gpt", "unet"})
      QTest::newRow(m) << QString::fromLatin1(m);
  }

  void final_layout_lands_soon() {
    QFETCH(QString, model);
    const QString path = zoo_path(model.toLatin1().constData());
    if (!QFile::exists(path)) QSKIP("build/zoo is absent (tests/zoo/make_zoo.py makes it)");
    Document doc(registry_);
    MainWindow w(doc, MainWindowOptions{});
    w.resize(1280, 720);
    w.show();
    QCoreApplication::processEvents();
    StallMeter meter;
    QElapsedTimer clock;
    clock.start();
    w.open_in_background(path);
    const qint64 open = clock.elapsed();
    QTRY_VERIFY_WITH_TIMEOUT(!doc.is_loading() && !w.scene()->is_refining(), 30000);
    const qint64 final_layout = clock.elapsed();
    qInfo("%s: open %lld ms, final layout (%s) at %lld ms, longest stall after the open %lld ms",
          qPrintable(model), static_cast<long long>(open), qPrintable(w.scene()->layout_note()),
          static_cast<long long>(final_layout), static_cast<long long>(meter.worst()));
    QCOMPARE(QString::fromStdString(doc.path()), path);
    // DenseNet-121 and Swin-T: dot would take minutes; the layered layout is final at once.
    if (model == QLatin1String("densenet121") || model == QLatin1String("swin_t"))
      QVERIFY2(w.scene()->layout_note().contains(QStringLiteral("Graphviz would take minutes")),
               qPrintable(w.scene()->layout_note()));
    QVERIFY2(final_layout < 10000, qPrintable(QString::number(final_layout)));  // 3 s quiet
    // Swin-T's 3,775 boxes take about 190 ms to make on the UI thread (items and their text 95 ms,
    // edges 60 ms, labels 20 ms; AMD EPYC): the one stall over 100 ms left, once per open.
    QVERIFY2(meter.worst() <= 1000, qPrintable(QString::number(meter.worst())));
  }

  // Expand All then Collapse Recognised Patterns on Swin-T (no repaint for 55 s before: the
  // layouts they restart sat on Qt's global pool): each is one short stall, and the layout after
  // them lands at once.
  void expand_and_collapse_patterns_on_swin_t() {
    const QString path = zoo_path("swin_t");
    if (!QFile::exists(path)) QSKIP("build/zoo is absent (tests/zoo/make_zoo.py makes it)");
    Document doc(registry_);
    MainWindow w(doc, MainWindowOptions{});
    w.resize(1280, 720);
    w.show();
    QVERIFY(w.open_file(path).is_ok());
    QTRY_VERIFY_WITH_TIMEOUT(!w.scene()->is_refining(), 30000);
    StallMeter meter;
    QElapsedTimer clock;
    clock.start();
    qint64 expand = 0, collapse = 0;
    int found = 0;
    QElapsedTimer t;
    QTimer::singleShot(20, &w, [&] {
      t.start();
      w.scene()->collapse_scopes(0);
      expand = std::max<qint64>(1, t.restart());
      // As View › Collapse Recognised Patterns does it: the recogniser on a worker.
      w.scene()->collapse_patterns_in_background([&](int n) {
        found = n;
        collapse = std::max<qint64>(1, t.elapsed());
      });
    });
    QTRY_VERIFY_WITH_TIMEOUT(collapse > 0 && !w.scene()->is_refining(), 30000);
    QTest::qWait(100);
    qInfo("Swin-T: Expand All %lld ms, Collapse Recognised Patterns %lld ms (%d patterns), everything "
          "laid out after %lld ms; longest stall %lld ms",
          static_cast<long long>(expand), static_cast<long long>(collapse), found,
          static_cast<long long>(clock.elapsed()), static_cast<long long>(meter.worst()));
    QVERIFY(found > 0);
    QVERIFY2(meter.worst() < 3000, qPrintable(QString::number(meter.worst())));
    QVERIFY2(clock.elapsed() < 10000, qPrintable(QString::number(clock.elapsed())));
  }
};

TESSERA_QTEST(OpenStallTest)
#include "open_stall_test.moc"
