// The runs dashboard as a person uses it, on a real X server (xvfb-run; see studio/CMakeLists.txt):
// click a row, Ctrl+click a second, read the compare table and curves; type a filter; drag nothing,
// but move the smoothing slider and tick "Log y" with the keyboard and mouse; click a run in the
// lineage tree; click "Diff graphs". Leaves runs_dashboard_gui.png in the build folder.
#include <QApplication>
#include <QCheckBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QTest>
#include <cmath>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "tests/studio/runs_test_util.h"
#include "studio/insight/runs_chart.h"
#include "studio/insight/runs_compare.h"
#include "studio/insight/runs_dashboard.h"
#include "studio/insight/runs_lineage.h"
#include "studio/insight/runs_model.h"

using tessera::studio::RunsDashboard;

namespace {

runs_test::RunSpec spec(const std::string& name, double lr, const char* optimizer) {
  runs_test::RunSpec s;
  s.name = name;
  s.hyperparams = {{"lr", QString::number(lr).toStdString()}, {"optimizer", optimizer}, {"batch", "64"}};
  for (int i = 1; i <= 100; ++i) {
    s.metrics.emplace_back("train/loss", i, 2.3 * std::exp(-lr * i) + (i % 10 == 0 ? 0.0 : 0.05));
    s.metrics.emplace_back("train/accuracy", i, 1 - std::exp(-lr * i));
  }
  s.graph_body = runs_test::mlp_body();
  return s;
}

// The centre of the table row showing run `id`.
QPoint row_centre(QTableView* table, int64_t id) {
  for (int r = 0; r < table->model()->rowCount(); ++r) {
    const QModelIndex i = table->model()->index(r, tessera::studio::RunsTableModel::kNameColumn);
    if (i.data(tessera::studio::RunsTableModel::kRunIdRole).toLongLong() == id) return table->visualRect(i).center();
  }
  return {};
}

}  // namespace

class RunsDashboardGuiTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void comparesTwoRunsByMouseAndKeyboard() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string db = dir.filePath(QStringLiteral("gui.db")).toStdString();
    QCOMPARE(runs_test::record_run(db, spec("mlp", 0.05, "sgd")), 1);
    QCOMPARE(runs_test::record_run(db, spec("mlp", 0.1, "adam")), 2);
    auto crashed = spec("lenet", 0.02, "sgd");
    crashed.status = tessera::insight::RunStatus::kCrashed;
    QCOMPARE(runs_test::record_run(db, crashed), 3);

    RunsDashboard dash;
    dash.resize(1280, 800);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    QVERIFY(dash.open_database(QString::fromStdString(db)).is_ok());
    QTableView* table = dash.table();
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, row_centre(table, 1));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::ControlModifier, row_centre(table, 2));
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{2, 1}));
    QVERIFY(dash.compare_table()->differing_keys().contains(QStringLiteral("lr")));
    QVERIFY(dash.compare_table()->differing_keys().contains(QStringLiteral("optimizer")));
    QVERIFY(!dash.compare_table()->differing_keys().contains(QStringLiteral("batch")));
    QCOMPARE(dash.chart()->drawn_points(1).size(), size_t{100});

    // Smoothing by keyboard on the slider, log y by mouse.
    auto* slider = dash.chart()->findChild<QSlider*>();
    QVERIFY(slider);
    slider->setFocus();
    QTest::keyClick(slider, Qt::Key_PageUp);  // +10
    QTest::keyClick(slider, Qt::Key_PageUp);
    QCOMPARE(dash.chart()->smoothing(), 0.2);
    auto* log = dash.chart()->findChild<QCheckBox*>();
    QVERIFY(log);
    QTest::mouseClick(log, Qt::LeftButton, {}, QPoint(8, log->height() / 2));
    QVERIFY(dash.chart()->log_y());
    QTest::qWait(100);  // what the event loop does before a person looks
    QVERIFY(dash.grab().save(QString::fromStdString(tessera::test::output_dir() + "/runs_dashboard_gui.png")));

    // Diff by mouse.
    QSignalSpy diff(&dash, &RunsDashboard::diff_graphs_requested);
    QVERIFY(dash.diff_button()->isEnabled());
    QTest::mouseClick(dash.diff_button(), Qt::LeftButton);
    QCOMPARE(diff.count(), 1);

    // Typing a filter.
    QTest::keyClicks(dash.search_box(), QStringLiteral("status:crashed"));
    QCOMPARE(dash.proxy()->rowCount(), 1);
    dash.search_box()->clear();

    // A click on run 3 in the lineage tree selects it in the table.
    dash.tabs()->setCurrentWidget(dash.lineage_view());
    QTreeWidgetItem* item = dash.lineage_view()->item_for_run(3);
    QVERIFY(item);
    dash.lineage_view()->scrollToItem(item);
    QTest::mouseClick(dash.lineage_view()->viewport(), Qt::LeftButton, {},
                      dash.lineage_view()->visualItemRect(item).center());
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{3}));
  }
};

TESSERA_QTEST(RunsDashboardGuiTest)
#include "runs_dashboard_gui_test.moc"
