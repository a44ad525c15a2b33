// The Profile tab's run list follows the database (issue 40, item 8): a run recorded while the
// tab was hidden is listed when it is shown again, without pressing Refresh.
#include <QComboBox>
#include <QTemporaryDir>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "tests/studio/runs_test_util.h"
#include "studio/insight/profiler_panel.h"

using tessera::studio::ProfilerPanel;

class ProfilerPanelTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void run_list_follows_the_database_when_shown() {
    QTemporaryDir dir;
    const std::string db = dir.filePath(QStringLiteral("runs.db")).toStdString();
    runs_test::RunSpec spec;
    QCOMPARE(runs_test::record_run(db, spec), 1);
    ProfilerPanel panel;
    panel.set_database_path(QString::fromStdString(db));
    panel.show();
    QCOMPARE(panel.run_list()->count(), 1);
    panel.hide();
    spec.name = "second";
    QCOMPARE(runs_test::record_run(db, spec), 2);
    QCOMPARE(panel.run_list()->count(), 1);
    panel.show();
    QCOMPARE(panel.run_list()->count(), 2);
    QVERIFY(panel.run_list()->itemText(0).contains(QStringLiteral("second")) ||
            panel.run_list()->itemText(1).contains(QStringLiteral("second")));
    // Shown with nothing open, it opened the newest run by itself (it said "No run open").
    QTRY_VERIFY(!panel.is_loading());
    QVERIFY2(panel.title().contains(QStringLiteral("run 1")) || panel.title().contains(QStringLiteral("run 2")) ||
                 !panel.message().startsWith(QStringLiteral("No run open")),
             qPrintable(panel.title() + " / " + panel.message()));
  }
};

TESSERA_QTEST(ProfilerPanelTest)
#include "profiler_panel_test.moc"
