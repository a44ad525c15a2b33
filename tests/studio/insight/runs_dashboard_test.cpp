// Tests of studio/runs_dashboard.cpp (and insight/runs_query.cpp under it) with real databases
// written through insight::Recorder: a missing, a corrupt and a locked database said in the view;
// rows of the runs; compare highlighting exactly the differing rows; lineage of a resumed run; a
// run's graph body -> GraphDocument through open_graph_requested (and the error for a run without
// one); diff_graphs_requested; live updates through the poll (new run, new metric values, status)
// keeping the selection; and a screenshot of two runs compared (runs_dashboard.png in the build
// folder of this test).
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <QTabWidget>
#include <QTest>
#include <cmath>
#include <optional>
#include <sqlite3.h>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "insight/runs_query.h"
#include "tests/studio/runs_test_util.h"
#include "studio/insight/runs_chart.h"
#include "studio/insight/runs_compare.h"
#include "studio/insight/runs_dashboard.h"
#include "studio/insight/runs_hparams.h"
#include "studio/insight/runs_lineage.h"
#include "studio/insight/runs_chart.h"
#include "studio/insight/runs_model.h"

using tessera::formats::GraphDocument;
using tessera::insight::Database;
using tessera::insight::Recorder;
using tessera::studio::RunsDashboard;
using tessera::studio::RunsLineageView;

namespace {

// A falling, noisy loss and a rising accuracy, deterministic.
runs_test::RunSpec training_run(const std::string& name, double lr, int steps, double scale) {
  runs_test::RunSpec s;
  s.name = name;
  s.hyperparams = {{"lr", QString::number(lr).toStdString()}, {"batch", "64"}, {"epochs", "2"}, {"optimizer", "momentum"}};
  for (int i = 1; i <= steps; ++i) {
    const double noise = 0.15 * std::sin(i * 1.7) * std::cos(i * 0.31);
    s.metrics.emplace_back("train/loss", i, scale * 2.3 * std::exp(-lr * i * 0.8) + 0.1 + noise * scale);
    s.metrics.emplace_back("train/accuracy", i, std::min(1.0, 0.1 + 0.85 * (1 - std::exp(-lr * i)) + 0.03 * noise));
  }
  s.graph_body = runs_test::mlp_body();
  return s;
}

}  // namespace

class RunsDashboardTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;

  std::string path(const char* name) const { return dir_.filePath(QString::fromLatin1(name)).toStdString(); }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // Issue 17, "the dashboard for real sweeps": a compact chart per metric of the selected runs,
  // and the HParams view over every run shown: an axis per varying hyper-parameter (lr on a log
  // axis: 0.001 to 0.5), the metric last, a line per run, a click on a line selecting its run.
  void smallMultiplesAndParallelCoordinates() {
    const std::string p = path("sweep.db");
    int id = 0;
    for (double lr : {0.001, 0.01, 0.5}) {
      runs_test::RunSpec s = training_run("mlp", lr, 20, 1);
      s.metrics.emplace_back("test/accuracy", 20, lr == 0.01 ? 0.9 : 0.7);
      QCOMPARE(runs_test::record_run(p, s), ++id);
    }
    RunsDashboard dash;
    dash.resize(1000, 700);
    dash.show();
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    dash.select_runs({1, 2});
    QCOMPARE(static_cast<int>(dash.small_multiples().size()), 3);  // test/accuracy, train/accuracy, train/loss
    QCOMPARE(dash.small_multiples()[2]->metric(), QStringLiteral("train/loss"));
    QCOMPARE(dash.small_multiples()[2]->curve_count(), 2);
    // Issue 40, item 6: a tile's y numbers (all "…" in a tile) give way to the range in its title.
    QVERIFY(!dash.small_multiples()[0]->y_numbers_shown());
    QVERIFY2(dash.small_multiples()[0]->chart_title().startsWith(QStringLiteral("test/accuracy  0.7 \u2013 0.9")),
             qPrintable(dash.small_multiples()[0]->chart_title()));
    QVERIFY(dash.chart()->y_numbers_shown());  // the big chart keeps them

    tessera::studio::HParamsView* h = dash.hparams_view();
    dash.chart_tabs()->setCurrentWidget(h);
    QCoreApplication::processEvents();
    // It opens on the metric the runs differ by, a test one (not the last batch's train/accuracy).
    QCOMPARE(h->metric(), QStringLiteral("test/accuracy"));
    QCOMPARE(h->axes(), (QStringList{"lr", "test/accuracy"}));  // batch, epochs, optimizer do not vary
    const auto a = h->line(1), b = h->line(2), c = h->line(3);
    QCOMPARE(a.size(), size_t{2});
    QVERIFY(a[0].y() > b[0].y() && b[0].y() > c[0].y());  // lr up the axis
    // Log axis: 0.01 sits at log(10)/log(500) of the way from 0.001 to 0.5.
    const double frac = (a[0].y() - b[0].y()) / (a[0].y() - c[0].y());
    QVERIFY2(std::abs(frac - std::log(10.0) / std::log(500.0)) < 0.01, qPrintable(QString::number(frac)));
    QVERIFY(b[1].y() < a[1].y());  // the best accuracy on top
    QCOMPARE(a[1].y(), c[1].y());
    QSignalSpy selected(&dash, &RunsDashboard::selection_changed);
    const QPointF mid = (c[0] + c[1]) / 2;
    QCOMPARE(h->run_at(mid), int64_t{3});
    QTest::mouseClick(h, Qt::LeftButton, {}, mid.toPoint());
    QVERIFY(selected.count() > 0);
    QCOMPARE(dash.selected_runs(), std::vector<int64_t>{3});
  }

  void missingDatabaseIsSaidAndNotCreated() {
    RunsDashboard dash;
    const QString p = QString::fromStdString(path("nowhere/insight.db"));
    const auto st = dash.open_database(p);
    QVERIFY(!st.is_ok());
    QCOMPARE(dash.message(), QStringLiteral("No runs yet: %1 does not exist. Train with the Train panel or `tessera train`.").arg(p));
    QVERIFY(!QFile::exists(p));
    QCOMPARE(dash.model()->rowCount(), 0);
    // Once a run is recorded there, the poll opens it.
    QCOMPARE(runs_test::record_run(p.toStdString(), training_run("mlp", 0.1, 3, 1)), 1);
    dash.poll();
    QCOMPARE(dash.model()->rowCount(), 1);
    QVERIFY(dash.message().isEmpty());
  }

  void corruptDatabaseShowsDatabaseOpensMessage() {
    const QString p = QString::fromStdString(path("corrupt.db"));
    {
      QFile f(p);
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int i = 0; i < 200; ++i) f.write("this is not an SQLite database at all\n");
    }
    auto expected = Database::open(p.toStdString());
    QVERIFY(!expected);
    RunsDashboard dash;
    QVERIFY(!dash.open_database(p).is_ok());
    QCOMPARE(dash.message(), QString::fromStdString(expected.error().to_string()));
    QVERIFY(dash.message().contains(QStringLiteral("not a usable SQLite database")));
    dash.poll();  // still no crash, still the message
    QVERIFY(!dash.message().isEmpty());
  }

  void foreignSqliteDatabaseIsRefusedAndLeftAlone() {
    const std::string p = path("foreign.db");
    {
      sqlite3* raw = nullptr;
      QCOMPARE(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
      QCOMPARE(sqlite3_exec(raw, "CREATE TABLE photos(id INTEGER, path TEXT);", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(raw);
    }
    RunsDashboard dash;
    QVERIFY(!dash.open_database(QString::fromStdString(p)).is_ok());
    QVERIFY2(dash.message().contains(QStringLiteral("not an insight database")), qPrintable(dash.message()));
    QVERIFY(dash.message().contains(QStringLiteral("photos")));
    dash.poll();
    // No insight table was added.
    sqlite3* raw = nullptr;
    QCOMPARE(sqlite3_open_v2(p.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    QCOMPARE(sqlite3_prepare_v2(raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table';", -1, &st, nullptr), SQLITE_OK);
    QCOMPARE(sqlite3_step(st), SQLITE_ROW);
    QCOMPARE(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    sqlite3_close(raw);
  }

  void lockedDatabaseIsSaidQuicklyThenRead() {
    const std::string p = path("locked.db");
    QCOMPARE(runs_test::record_run(p, training_run("mlp", 0.1, 3, 1)), 1);
    std::optional<Database> writer;
    {
      auto w = Database::open(p);
      QVERIFY(w);
      writer.emplace(std::move(*w));
    }
    QVERIFY(writer->exec("PRAGMA locking_mode=EXCLUSIVE;").is_ok());
    QVERIFY(writer->exec("BEGIN EXCLUSIVE; UPDATE runs SET name = name; ").is_ok());
    RunsDashboard dash;
    QElapsedTimer t;
    t.start();
    QVERIFY(!dash.open_database(QString::fromStdString(p)).is_ok());
    QVERIFY2(t.elapsed() < 3000, "the UI thread waited too long for the lock");
    QVERIFY2(dash.message().contains(QStringLiteral("lock"), Qt::CaseInsensitive), qPrintable(dash.message()));
    QVERIFY(writer->exec("COMMIT;").is_ok());
    writer.reset();  // closing releases the exclusive lock
    dash.poll();
    QCOMPARE(dash.model()->rowCount(), 1);
  }

  void comparesRunsHighlightingExactlyTheDifferences() {
    const std::string p = path("compare.db");
    auto a = training_run("mlp", 0.1, 20, 1);
    auto b = training_run("mlp", 0.1, 20, 1);
    b.hyperparams["lr"] = "0.01";
    b.hyperparams["optimizer"] = "adam";
    // Only the loss differs; accuracy values are the same in both.
    for (auto& [name, step, value] : b.metrics)
      if (name == "train/loss") value *= 0.5;
    QCOMPARE(runs_test::record_run(p, a), 1);
    QCOMPARE(runs_test::record_run(p, b), 2);
    QCOMPARE(runs_test::record_run(p, training_run("other", 0.2, 5, 1)), 3);
    RunsDashboard dash;
    QSignalSpy selection(&dash, &RunsDashboard::selection_changed);
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    QCOMPARE(dash.model()->rowCount(), 3);
    dash.select_runs({1, 2});
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{2, 1}));  // table order: newest first
    QVERIFY(selection.count() >= 1);
    QCOMPARE(dash.compare_table()->differing_keys(),
             (QStringList{"lr", "optimizer", "train/loss (final)", "train/loss (best)"}));
    QVERIFY(dash.compare_table()->keys().contains(QStringLiteral("train/accuracy (best)")));
    // Best of a loss is its lowest value: check against the recorded points.
    double best = 1e9;
    for (const auto& [name, step, value] : a.metrics)
      if (name == "train/loss") best = std::min(best, value);
    const int row = static_cast<int>(dash.compare_table()->keys().indexOf(QStringLiteral("train/loss (best)")));
    QCOMPARE(dash.compare_table()->item(row, 1)->text(), QString::number(best, 'g', 6));  // column 1: run 1 (id order)
    // Curves of both runs, 20 points each.
    QCOMPARE(dash.chart()->metric(), QStringLiteral("train/loss"));
    QCOMPARE(dash.chart()->drawn_points(1).size(), size_t{20});
    QCOMPARE(dash.chart()->drawn_points(2).size(), size_t{20});
    QVERIFY(dash.diff_button()->isEnabled());
    // Filtering keeps working through the dashboard's box.
    dash.search_box()->setText(QStringLiteral("lr=0.01"));
    QCOMPARE(dash.proxy()->rowCount(), 1);
    dash.search_box()->clear();
    QCOMPARE(dash.proxy()->rowCount(), 3);
  }

  // Issue 40, item 6: the HParams view opens on a metric the runs differ by; a metric that is the
  // same in every run (the last batch's accuracy, 1.0) drew every line in one colour.
  void hparamsOpensOnAMetricWithSpread() {
    const std::string p = path("spread.db");
    int id = 0;
    for (double lr : {0.001, 0.01, 0.1}) {
      runs_test::RunSpec s;
      s.hyperparams = {{"lr", QString::number(lr).toStdString()}};
      s.metrics.emplace_back("batch_accuracy", 10, 1.0);
      s.metrics.emplace_back("eval_accuracy", 10, 0.5 + lr);
      s.metrics.emplace_back("loss", 10, 1.0 - lr);
      QCOMPARE(runs_test::record_run(p, s), ++id);
    }
    RunsDashboard dash;
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    QCOMPARE(dash.hparams_view()->metric(), QStringLiteral("eval_accuracy"));
    // A metric the user picks stays as runs arrive; until then the default follows the runs.
    const std::string q = path("spread_later.db");
    runs_test::RunSpec first;
    first.hyperparams = {{"lr", "0.1"}};
    first.metrics = {{"batch_accuracy", 10, 1.0}, {"eval_accuracy", 10, 0.6}};
    QCOMPARE(runs_test::record_run(q, first), 1);
    RunsDashboard later;
    QVERIFY(later.open_database(QString::fromStdString(q)).is_ok());
    QCOMPARE(later.hparams_view()->metric(), QStringLiteral("batch_accuracy"));  // one run: nothing differs yet
    runs_test::RunSpec second = first;
    second.hyperparams = {{"lr", "0.2"}};
    second.metrics = {{"batch_accuracy", 10, 1.0}, {"eval_accuracy", 10, 0.8}};
    QCOMPARE(runs_test::record_run(q, second), 2);
    QVERIFY(later.refresh().is_ok());
    QCOMPARE(later.hparams_view()->metric(), QStringLiteral("eval_accuracy"));
    later.hparams_view()->set_metric(QStringLiteral("batch_accuracy"));
    QCOMPARE(runs_test::record_run(q, second), 3);
    QVERIFY(later.refresh().is_ok());
    QCOMPARE(later.hparams_view()->metric(), QStringLiteral("batch_accuracy"));

    // Two runs of one name are told apart by their ids in the table.
    QCOMPARE(dash.proxy()->data(dash.proxy()->index(0, 1)).toString().left(5), QStringLiteral("mlp #"));
  }

  void opensAndDiffsRecordedGraphs() {
    const std::string p = path("graphs.db");
    QCOMPARE(runs_test::record_run(p, training_run("mlp", 0.1, 3, 1)), 1);
    QCOMPARE(runs_test::record_run(p, training_run("mlp", 0.2, 3, 1)), 2);
    runs_test::RunSpec bare;
    bare.name = "bare";
    QCOMPARE(runs_test::record_run(p, bare), 3);
    RunsDashboard dash;
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    QSignalSpy open(&dash, &RunsDashboard::open_graph_requested);
    QSignalSpy diff(&dash, &RunsDashboard::diff_graphs_requested);
    QVERIFY(dash.open_graph(1).is_ok());
    QCOMPARE(open.count(), 1);
    const auto doc = qvariant_cast<GraphDocument>(open.at(0).at(0));
    auto sample = tessera::formats::load_document(tessera::test::source_dir() + "/samples/mlp.json");
    QVERIFY(sample);
    QCOMPARE(doc.graph.num_nodes(), sample->graph.num_nodes());
    QCOMPARE(doc.graph.inputs().size(), sample->graph.inputs().size() + sample->graph.params().size());
    QCOMPARE(doc.metadata.properties.at("insight.run"), std::string("1"));
    QCOMPARE(open.at(0).at(1).toString(), QStringLiteral("run 1 mlp"));
    // No graph recorded: said, no signal.
    QVERIFY(!dash.open_graph(3).is_ok());
    QCOMPARE(open.count(), 1);
    QVERIFY2(dash.message().contains(QStringLiteral("run 3 recorded no graph")), qPrintable(dash.message()));
    // Diff through the button with two runs selected.
    dash.select_runs({1, 2});
    dash.diff_button()->click();
    QCOMPARE(diff.count(), 1);
    QCOMPARE(diff.at(0).at(2).toString(), QStringLiteral("run 1 vs run 2"));
    // The two sides are named by their runs, not "before" and "after".
    QCOMPARE(diff.at(0).at(3).toString(), QStringLiteral("run 1: mlp"));
    QVERIFY(diff.at(0).at(4).toString().startsWith(QStringLiteral("run 2: ")));
    QCOMPARE(qvariant_cast<GraphDocument>(diff.at(0).at(1)).graph.num_nodes(), sample->graph.num_nodes());
    // Runs without metrics are named under the chart.
    dash.select_runs({3});
    QVERIFY2(dash.chart()->note().contains(QStringLiteral("run 3 recorded no metrics")), qPrintable(dash.chart()->note()));
  }

  void lineageShowsAResumedRunUnderTheCheckpoint() {
    const std::string p = path("lineage.db");
    const std::string ck = path("lenet-step100.tsr");
    auto first = training_run("lenet", 0.1, 3, 1);
    first.checkpoints = {{ck, 100}};
    QCOMPARE(runs_test::record_run(p, first), 1);
    auto resumed = training_run("lenet", 0.1, 3, 1);
    resumed.resumed_from = ck;
    QCOMPARE(runs_test::record_run(p, resumed), 2);
    auto lost = training_run("lenet", 0.1, 3, 1);
    lost.resumed_from = "/nowhere/unrecorded.tsr";
    QCOMPARE(runs_test::record_run(p, lost), 3);
    RunsDashboard dash;
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    RunsLineageView* view = dash.lineage_view();
    QCOMPARE(view->topLevelItemCount(), 1);  // one graph version
    QTreeWidgetItem* graph = view->topLevelItem(0);
    QVERIFY(graph->text(0).startsWith(QStringLiteral("graph lenet ")));
    QTreeWidgetItem* run1 = view->item_for_run(1);
    QVERIFY(run1);
    QCOMPARE(run1->parent(), graph);
    QCOMPARE(run1->childCount(), 1);
    QTreeWidgetItem* checkpoint = run1->child(0);
    QCOMPARE(checkpoint->text(0), QStringLiteral("checkpoint step 100"));
    QTreeWidgetItem* run2 = view->item_for_run(2);
    QVERIFY(run2);
    QCOMPARE(run2->parent(), checkpoint);
    QVERIFY(run2->text(1).startsWith(QStringLiteral("resumed")));
    QTreeWidgetItem* run3 = view->item_for_run(3);
    QVERIFY(run3);
    QCOMPARE(run3->parent(), graph);
    QVERIFY(run3->text(1).contains(QStringLiteral("not recorded")));
    // Clicking a run in the tree selects it in the table.
    Q_EMIT view->itemClicked(run2, 0);
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{2}));
  }

  void liveUpdatesGrowRowsAndCurvesKeepingTheSelection() {
    const std::string p = path("live.db");
    QCOMPARE(runs_test::record_run(p, training_run("mlp", 0.1, 5, 1)), 1);
    RunsDashboard dash;
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    QVERIFY(dash.poll_timer()->isActive());
    QCOMPARE(dash.poll_timer()->interval(), RunsDashboard::kPollIntervalMs);
    QCOMPARE(dash.model()->rowCount(), 1);
    // A second connection (a training process) starts a run and logs a metric.
    auto rec = Recorder::open(p);
    QVERIFY(rec);
    tessera::insight::RunInfo info;
    info.name = "live";
    info.kind = "train";
    info.hyperparams = {{"lr", "0.1"}, {"batch", "64"}, {"epochs", "2"}, {"optimizer", "momentum"}};
    auto id = (*rec)->start_run(info);
    QVERIFY(id);
    (*rec)->on_metric("train/loss", 1, 0, 2.0);
    QVERIFY((*rec)->flush().is_ok());
    dash.poll();
    QCOMPARE(dash.model()->rowCount(), 2);
    QCOMPARE(dash.model()->index(dash.model()->row_of(*id), tessera::studio::RunsTableModel::kStatusColumn).data().toString(),
             QStringLiteral("running"));
    dash.select_runs({*id});
    QCOMPARE(dash.chart()->drawn_points(*id).size(), size_t{1});
    (*rec)->on_metric("train/loss", 2, 0, 1.5);
    (*rec)->on_metric("train/loss", 3, 0, 1.2);
    QVERIFY((*rec)->flush().is_ok());
    dash.poll();
    QCOMPARE(dash.chart()->drawn_points(*id).size(), size_t{3});
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{*id}));
    QVERIFY((*rec)->finish_run(tessera::insight::RunStatus::kFinished).is_ok());
    dash.poll();
    QCOMPARE(dash.model()->index(dash.model()->row_of(*id), tessera::studio::RunsTableModel::kStatusColumn).data().toString(),
             QStringLiteral("finished"));
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{*id}));
    // Nothing committed since: the poll reads nothing (the version is unchanged).
    QSignalSpy changed(dash.model(), &QAbstractItemModel::dataChanged);
    dash.poll();
    QCOMPARE(changed.count(), 0);
    // The timer itself polls: a new run appears within a couple of intervals.
    QCOMPARE(runs_test::record_run(p, training_run("late", 0.1, 2, 1)), *id + 1);
    QTRY_COMPARE_WITH_TIMEOUT(dash.model()->rowCount(), 3, 5000);
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{*id}));
    // A run with a new hyper-parameter adds a column: the model resets, the selection comes back.
    auto extra = training_run("extra", 0.1, 2, 1);
    extra.hyperparams["warmup"] = "100";
    QSignalSpy reset(dash.model(), &QAbstractItemModel::modelReset);
    QCOMPARE(runs_test::record_run(p, extra), *id + 2);
    dash.poll();
    QCOMPARE(reset.count(), 1);
    QCOMPARE(dash.model()->rowCount(), 4);
    QVERIFY(dash.model()->hyperparam_column("warmup") >= 0);
    QCOMPARE(dash.selected_runs(), (std::vector<int64_t>{*id}));
    QCOMPARE(dash.chart()->drawn_points(*id).size(), size_t{3});
  }

  void screenshotOfTwoRunsCompared() {
    const std::string p = path("screenshot.db");
    const std::string ck = path("lenet-step300.tsr");
    auto a = training_run("lenet", 0.02, 300, 1);
    a.checkpoints = {{ck, 300}};
    QCOMPARE(runs_test::record_run(p, a), 1);
    auto b = training_run("lenet", 0.05, 300, 0.8);
    b.hyperparams["optimizer"] = "adam";
    QCOMPARE(runs_test::record_run(p, b), 2);
    auto c = training_run("lenet", 0.02, 120, 1);
    c.resumed_from = ck;
    c.status = tessera::insight::RunStatus::kCrashed;
    QCOMPARE(runs_test::record_run(p, c), 3);
    QCOMPARE(runs_test::record_run(p, training_run("mlp", 0.1, 80, 1.2)), 4);
    RunsDashboard dash;
    dash.resize(1280, 800);
    dash.show();
    QVERIFY(dash.open_database(QString::fromStdString(p)).is_ok());
    dash.select_runs({1, 2});
    dash.chart()->set_smoothing(0.6);
    QApplication::processEvents();
    QTest::qWait(50);
    const QString out = QCoreApplication::applicationDirPath() + QStringLiteral("/runs_dashboard.png");
    QVERIFY(dash.grab().save(out));
    dash.tabs()->setCurrentIndex(1);
    QApplication::processEvents();
    QVERIFY(dash.grab().save(QCoreApplication::applicationDirPath() + QStringLiteral("/runs_dashboard_lineage.png")));
    qInfo("screenshots: %s (and _lineage)", qPrintable(out));
  }
};

TESSERA_QTEST(RunsDashboardTest)
#include "runs_dashboard_test.moc"
