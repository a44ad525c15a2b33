// The walk-through of the insight tabs in one window, as a user does it, on a real X server
// (xvfb-run, llvmpipe): train LeNet twice on Fashion-MNIST through the Train panel (two learning
// rates, stopped after 60 steps), compare the two runs in the Runs tab, step through LeNet's
// optimisation in the Passes tab, run it (Run > Run), open its profile (Insight > Profile the
// Last Run) and click conv1's span: the canvas selects conv1 and the Passes tab outlines the fused
// node in the optimised graph. Saves a screenshot of each tab in the build folder
// (main_window_{runs,passes,profile}.png). Skipped (77 is the ctest skip code) without
// dataset-fashion-mnist.
#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/stages/session.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/ops/op_def.h"
#include "insight/database.h"
#include "insight/query.h"
#include "insight/timeline/view.h"
#include "studio/document/document.h"
#include "studio/insight/graph_diff_view.h"
#include "studio/canvas/graph_scene.h"
#include "studio/insight/imgui_widget.h"
#include "studio/app/main_window.h"
#include "studio/insight/pass_stepper_model.h"
#include "studio/insight/pass_stepper_panel.h"
#include "studio/insight/profiler_panel.h"
#include "tests/studio/profiler_test_util.h"
#include "studio/panels/run_panel.h"
#include "studio/insight/runs_compare.h"
#include "studio/insight/runs_dashboard.h"
#include "studio/panels/train_panel.h"

using namespace tessera;
using namespace tessera::studio;
using namespace profiler_test;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";
const char* kFashion = "/usr/share/datasets/fashion-mnist";

QAction* action(MainWindow& w, const char* name) { return w.findChild<QAction*>(QLatin1String(name)); }

void save(MainWindow& w, const char* file) {
  QApplication::processEvents();
  const QString path = QString::fromStdString(tessera::test::output_dir() + "/") + QLatin1String(file);
  QVERIFY2(w.grab().save(path), qPrintable(path));
}

}  // namespace

class MainWindowInsightGuiTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(QGuiApplication::platformName() == QStringLiteral("xcb"),
             "run under xvfb-run with QT_QPA_PLATFORM=xcb (offscreen cannot host OpenGL widgets)");
    if (!QFile::exists(QLatin1String(kFashion) + QStringLiteral("/train-images-idx3-ubyte.gz")))
      QSKIP("dataset-fashion-mnist is not installed");
  }

  void walk_through_the_insight_tabs() {
    QTemporaryDir dir;
    MainWindowOptions options;
    options.insight_database = dir.filePath(QStringLiteral("insight.db"));
    Document doc(registry_);
    MainWindow window(doc, options);
    window.resize(1400, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.open_file(QString::fromStdString(kLenet)).is_ok());

    // 1. Two training runs, lr 0.01 and 0.05, each stopped after 60 steps.
    for (double lr : {0.01, 0.05}) {
      TrainPanel* train = window.train_panel();
      TrainSettings s;
      s.data = kFashion;
      s.lr = lr;
      s.optimizer = "momentum";
      train->set_settings(s);
      QSignalSpy done(train, &TrainPanel::finished);
      QSignalSpy progress(train, &TrainPanel::progress);
      const Status started = train->start();
      QVERIFY2(started.is_ok(), started.is_ok() ? "" : started.error().to_string().c_str());
      QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty() && progress.last().at(0).toLongLong() >= 60, 60000);
      train->stop();
      QVERIFY(done.count() > 0 || done.wait(30000));
    }

    // 2. The Runs tab compares them: the learning rate differs.
    QVERIFY(action(window, "action_runs"));
    action(window, "action_runs")->trigger();
    RunsDashboard* runs = window.runs_dashboard();
    QVERIFY(runs->refresh().is_ok());
    auto db = insight::Database::open(options.insight_database.toStdString());
    QVERIFY(db.has_value());
    auto listed = insight::list_runs(*db);
    QVERIFY(listed.has_value());
    QCOMPARE(listed->size(), size_t{2});
    runs->select_runs({(*listed)[0].id, (*listed)[1].id});
    QTRY_COMPARE(runs->selected_runs().size(), size_t{2});
    QCOMPARE(window.tabs()->currentIndex(), window.tab_index(runs));
    save(window, "main_window_runs.png");

    // 3. The Passes tab: LeNet's optimisation, pass by pass.
    PassStepperPanel* stepper = window.pass_stepper();
    QSignalSpy compiled(&stepper->model(), &PassStepperModel::finished);
    action(window, "action_step_passes")->trigger();
    QVERIFY(compiled.wait(60000));
    QVERIFY(compiled.first().at(0).toBool());
    QVERIFY(stepper->model().snapshots().size() >= 4);  // prepare, split, optimise/fuse, ...
    stepper->select_snapshot(2);                          // the fuse pass
    save(window, "main_window_passes.png");

    // 4. Run > Run records a run; Insight > Profile the Last Run opens its timeline.
    QSignalSpy ran(window.run_panel(), &RunPanel::finished);
    action(window, "run_action")->trigger();
    QVERIFY(ran.wait(60000));
    QVERIFY2(window.run_panel()->recorded_run() > 0, qPrintable(window.run_panel()->recording_note()));
    ProfilerPanel* profiler = window.profiler();
    QSignalSpy loaded(profiler, &ProfilerPanel::loaded);
    action(window, "action_profile_last")->trigger();
    QVERIFY(loaded.wait(30000));
    QVERIFY2(profiler->message().isEmpty(), qPrintable(profiler->message()));
    ImGuiWidget* gl = profiler->timeline_widget();
    QVERIFY(gl);
    QVERIFY(wait_frames(gl, 3));
    QVERIFY2(gl->is_ready(), qPrintable(gl->failure()));

    // 5. A click on conv1's span selects conv1 on the canvas and outlines it in the optimised
    // graph (the stepper's last snapshot).
    const std::optional<QPoint> at = find_span(*profiler, "conv1");
    QVERIFY2(at, "no conv1 span drawn wide enough to click");
    QSignalSpy clicked(profiler, &ProfilerPanel::span_clicked);
    QVERIFY(click(gl, *at));
    QVERIFY(clicked.count() > 0 || clicked.wait(2000));
    QApplication::processEvents();
    save(window, "main_window_profile.png");
    ir::NodeId conv1 = ir::kNoNode;
    for (ir::NodeId id : doc.graph().node_ids())
      if (doc.graph().node(id).name == "conv1") conv1 = id;
    QCOMPARE(window.scene()->selected_node_ids(), QList<ir::NodeId>{conv1});
    const int32_t executed = clicked.first().at(0).toInt();
    QVERIFY(!window.pass_stepper()->diff_view()->node_rect(GraphDiffView::Side::kAfter, executed).isNull());
  }

 private:
  ops::OpRegistry registry_ = ops::make_default_registry();
};

TESSERA_QTEST(MainWindowInsightGuiTest)

#include "main_window_insight_gui_test.moc"
