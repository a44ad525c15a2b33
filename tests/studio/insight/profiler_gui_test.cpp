// The profiler panel on a real X server (xvfb-run, llvmpipe OpenGL): a LeNet run recorded by the
// Run panel opens as a timeline drawn by Dear ImGui inside the QOpenGLWidget; a mouse click on
// conv1's kernel span emits span_clicked with conv1's node id; errors (no database, a trace cut
// short, garbage) show as messages. Leaves profiler_gui.png in the build folder.
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <string>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "insight/timeline/view.h"
#include "studio/document/document.h"
#include "studio/insight/imgui_widget.h"
#include "studio/insight/profiler_panel.h"
#include "tests/studio/profiler_test_util.h"
#include "studio/panels/run_panel.h"

using namespace tessera;
using namespace tessera::studio;
using namespace profiler_test;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";

}  // namespace

class ProfilerGuiTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(QGuiApplication::platformName() == QStringLiteral("xcb"),
             "run under xvfb-run with QT_QPA_PLATFORM=xcb (offscreen cannot host OpenGL widgets)");
  }

  void click_on_a_span_selects_its_node() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("insight.db"));
    // A real recorded run: LeNet through the Run panel.
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    int64_t run = 0;
    {
      RunPanel panel(doc);
      panel.set_database_path(db);
      QSignalSpy done(&panel, &RunPanel::finished);
      QVERIFY(panel.run());
      QVERIFY(done.wait(60000));
      QVERIFY2(panel.recorded_run() > 0, qPrintable(panel.recording_note()));
      run = panel.recorded_run();
    }

    ProfilerPanel profiler;
    profiler.resize(1200, 700);
    profiler.show();
    QVERIFY(QTest::qWaitForWindowExposed(&profiler));
    profiler.set_database_path(db);
    QCOMPARE(profiler.run_list()->count(), 1);
    QSignalSpy loaded(&profiler, &ProfilerPanel::loaded);
    profiler.open_run(run);
    QVERIFY(loaded.wait(30000));
    QVERIFY2(profiler.message().isEmpty(), qPrintable(profiler.message()));
    QVERIFY2(profiler.title().contains(QStringLiteral("lenet")), qPrintable(profiler.title()));
    ImGuiWidget* gl = profiler.timeline_widget();
    QVERIFY2(wait_frames(gl, 3), "no frame drawn");
    QVERIFY2(gl->is_ready(), qPrintable(gl->failure()));

    // conv1's kernel span: found by search, zoomed onto, clicked with the mouse.
    const std::optional<QPoint> at = find_span(profiler, "conv1");
    QVERIFY2(at, "no conv1 span drawn wide enough to click");
    QSignalSpy clicked(&profiler, &ProfilerPanel::span_clicked);
    QVERIFY(click(gl, *at));
    QVERIFY(clicked.count() > 0 || clicked.wait(2000));
    const QList<QVariant> args = clicked.takeFirst();
    QCOMPARE(args.at(1).toString(), QStringLiteral("conv1"));
    // The node id is conv1's in the executed graph: the optimiser keeps the ids of the nodes it
    // does not replace, and conv1 (fused or not) keeps its name.
    QVERIFY(args.at(0).toInt() >= 0);

    // Issue 17, item 5: a press and release in one frame is a click too.
    QVERIFY(quick_click(gl, *at));
    QVERIFY(clicked.count() > 0 || clicked.wait(2000));
    QCOMPARE(clicked.takeFirst().at(1).toString(), QStringLiteral("conv1"));

    profiler.select_node(args.at(0).toInt());
    QVERIFY(wait_frames(gl, 2));
    const QImage shot = gl->grabFramebuffer();
    QVERIFY(!shot.isNull());
    QVERIFY(shot.save(QString::fromStdString(tessera::test::output_dir() + "/profiler_gui.png")));
  }

  // Issue 17, item 5: the header stops saying that the database does not exist once it does.
  void header_follows_the_database() {
    QTemporaryDir dir;
    ProfilerPanel profiler;
    profiler.resize(900, 500);
    profiler.show();
    QVERIFY(QTest::qWaitForWindowExposed(&profiler));
    const QString db = dir.filePath(QStringLiteral("later.db"));
    profiler.set_database_path(db);
    QVERIFY2(profiler.header_text().contains(QStringLiteral("does not exist")), qPrintable(profiler.header_text()));
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    RunPanel panel(doc);
    panel.set_database_path(db);
    QSignalSpy done(&panel, &RunPanel::finished);
    QVERIFY(panel.run());
    QVERIFY(done.wait(60000));
    profiler.refresh_runs();
    QCOMPARE(profiler.run_list()->count(), 1);
    QVERIFY2(!profiler.header_text().contains(QStringLiteral("does not exist")), qPrintable(profiler.header_text()));
    QVERIFY2(profiler.header_text().contains(QStringLiteral("1 run")), qPrintable(profiler.header_text()));
    // A second run: the count follows (it stayed at the first refresh's).
    QVERIFY(panel.run());
    QVERIFY(done.wait(60000));
    profiler.refresh_runs();
    QCOMPARE(profiler.run_list()->count(), 2);
    QVERIFY2(profiler.header_text().contains(QStringLiteral("2 run")), qPrintable(profiler.header_text()));
  }

  void errors_show_in_the_view() {
    QTemporaryDir dir;
    ProfilerPanel profiler;
    profiler.resize(900, 500);
    profiler.show();
    QVERIFY(QTest::qWaitForWindowExposed(&profiler));
    // No database: the list says so and nothing is created.
    const QString missing = dir.filePath(QStringLiteral("none.db"));
    profiler.set_database_path(missing);
    QCOMPARE(profiler.run_list()->count(), 0);
    QVERIFY(!QFile::exists(missing));
    QSignalSpy loaded(&profiler, &ProfilerPanel::loaded);
    profiler.open_run(1);
    QVERIFY(loaded.wait(10000));
    QVERIFY2(profiler.message().contains(QStringLiteral("none.db")), qPrintable(profiler.message()));
    QVERIFY(!QFile::exists(missing));

    // A Chrome trace cut short: the events before the cut, with a warning.
    const QString cut = dir.filePath(QStringLiteral("cut.json"));
    {
      QFile f(cut);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("{\"traceEvents\":[{\"name\":\"conv1\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":0,"
              "\"dur\":10,\"pid\":1,\"tid\":1},{\"name\":\"relu1\",\"cat\":\"kernel\",\"ph\":\"X\","
              "\"ts\":12,\"dur\":3,\"pid\":1,\"tid\":1},{\"name\":\"po");
    }
    profiler.open_trace(cut);
    QVERIFY(loaded.wait(10000));
    QVERIFY2(profiler.message().contains(QStringLiteral("cut short")), qPrintable(profiler.message()));
    QVERIFY(wait_frames(profiler.timeline_widget(), 2));

    // Garbage: an error, no timeline, no crash.
    const QString junk = dir.filePath(QStringLiteral("junk.json"));
    {
      QFile f(junk);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("\x01\x02 not json at all");
    }
    profiler.open_trace(junk);
    QVERIFY(loaded.wait(10000));
    QVERIFY2(profiler.message().contains(QStringLiteral("junk.json")), qPrintable(profiler.message()));
    QVERIFY(profiler.title().isEmpty());
    QVERIFY(wait_frames(profiler.timeline_widget(), 2));
  }

 private:
  ops::OpRegistry registry_ = ops::make_default_registry();
};

TESSERA_QTEST(ProfilerGuiTest)

#include "profiler_gui_test.moc"
