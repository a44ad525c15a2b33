// Tests of studio/runs_model.cpp over a real insight database of three runs with different
// hyper-parameters: rows and columns (the union of keys and metrics), numeric sorting where string
// sorting would differ, the filter language (text, key:text, key=value, comparisons, metric by its
// last path component), status colours, and in-place updates that keep the rows (no reset).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "insight/runs_query.h"
#include "tests/studio/runs_test_util.h"
#include "studio/insight/runs_model.h"

using tessera::insight::Database;
using tessera::insight::RunStatus;
using tessera::studio::RunsFilterProxy;
using tessera::studio::RunsTableModel;

class RunsModelTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string db_path_;

  std::vector<tessera::insight::RunSummary> load() {
    auto db = Database::open(db_path_);
    if (!db) return {};
    auto runs = tessera::insight::load_run_summaries(*db);
    return runs ? std::move(*runs) : std::vector<tessera::insight::RunSummary>{};
  }
  // The run ids of the proxy's rows, top to bottom.
  static std::vector<int64_t> ids(const RunsFilterProxy& p) {
    std::vector<int64_t> out;
    for (int r = 0; r < p.rowCount(); ++r) out.push_back(p.index(r, 0).data(RunsTableModel::kRunIdRole).toLongLong());
    return out;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_path_ = dir_.filePath(QStringLiteral("insight.db")).toStdString();
    runs_test::RunSpec a;
    a.hyperparams = {{"lr", "0.1"}, {"batch", "64"}, {"optimizer", "sgd"}};
    a.metrics = {{"train/loss", 1, 2.0}, {"train/loss", 2, 1.5}, {"train/accuracy", 1, 0.5}, {"train/accuracy", 2, 0.9}};
    runs_test::RunSpec b;
    b.name = "lenet";
    b.hyperparams = {{"lr", "0.01"}, {"batch", "32"}, {"optimizer", "adam"}};
    b.metrics = {{"train/loss", 1, 1.0}, {"train/loss", 2, 0.5}, {"train/accuracy", 2, 0.7}};
    runs_test::RunSpec c;
    c.hyperparams = {{"lr", "1e-3"}, {"batch", "128"}, {"warmup", "10"}};
    c.metrics = {{"train/loss", 3, 3.0}, {"test/accuracy", 3, 0.85}};
    c.status = RunStatus::kCrashed;
    QCOMPARE(runs_test::record_run(db_path_, a), 1);
    QCOMPARE(runs_test::record_run(db_path_, b), 2);
    QCOMPARE(runs_test::record_run(db_path_, c), 3);
  }

  void summariesHoldFinalValuesAtTheLastStep() {
    const auto runs = load();
    QCOMPARE(runs.size(), size_t{3});
    QCOMPARE(runs[0].run.id, int64_t{1});
    QCOMPARE(runs[0].hyperparams.at("optimizer"), std::string("sgd"));
    QCOMPARE(runs[0].metrics.size(), size_t{2});  // by name: train/accuracy, train/loss
    QCOMPARE(runs[0].metrics[0].name, std::string("train/accuracy"));
    QCOMPARE(runs[0].metrics[0].final_value, 0.9);
    QCOMPARE(runs[0].metrics[1].final_value, 1.5);
    QCOMPARE(runs[0].metrics[1].final_step, int64_t{2});
    QCOMPARE(runs[2].run.status, std::string("crashed"));
    QCOMPARE(runs[2].metrics[0].name, std::string("test/accuracy"));
  }

  void rowsAndColumnsAreTheUnionOverRuns() {
    RunsTableModel m;
    m.set_runs(load(), 0);
    QCOMPARE(m.rowCount(), 3);
    // 7 fixed + batch, lr, optimizer, warmup + test/accuracy, train/accuracy, train/loss.
    QCOMPARE(m.columnCount(), 14);
    QCOMPARE(m.headerData(RunsTableModel::kStatusColumn, Qt::Horizontal).toString(), QStringLiteral("status"));
    QCOMPARE(m.headerData(7, Qt::Horizontal).toString(), QStringLiteral("batch"));
    QCOMPARE(m.headerData(10, Qt::Horizontal).toString(), QStringLiteral("warmup"));
    QCOMPARE(m.headerData(13, Qt::Horizontal).toString(), QStringLiteral("train/loss"));
    QCOMPARE(m.index(1, m.hyperparam_column("optimizer")).data().toString(), QStringLiteral("adam"));
    QCOMPARE(m.index(0, m.metric_column("train/loss")).data().toString(), QStringLiteral("1.5"));
    QCOMPARE(m.index(2, m.hyperparam_column("optimizer")).data().toString(), QString());  // absent
    QCOMPARE(m.index(1, RunsTableModel::kNameColumn).data().toString(), QStringLiteral("lenet"));
    QCOMPARE(m.index(2, RunsTableModel::kStatusColumn).data(Qt::ForegroundRole).value<QBrush>().color(),
             tessera::studio::run_status_colour(QStringLiteral("crashed")));
    QVERIFY(tessera::studio::run_status_colour(QStringLiteral("crashed")) !=
            tessera::studio::run_status_colour(QStringLiteral("finished")));
  }

  void sortsNumericallyWhereValuesAreNumbers() {
    RunsTableModel m;
    m.set_runs(load(), 0);
    RunsFilterProxy p;
    p.setSourceModel(&m);
    // As strings "0.01" < "0.1" < "1e-3"; as numbers 1e-3 < 0.01 < 0.1.
    p.sort(m.hyperparam_column("lr"), Qt::AscendingOrder);
    QCOMPARE(ids(p), (std::vector<int64_t>{3, 2, 1}));
    // As strings "128" < "32" < "64".
    p.sort(m.hyperparam_column("batch"), Qt::AscendingOrder);
    QCOMPARE(ids(p), (std::vector<int64_t>{2, 1, 3}));
    p.sort(m.hyperparam_column("batch"), Qt::DescendingOrder);
    QCOMPARE(ids(p), (std::vector<int64_t>{3, 1, 2}));
    // Absent values after present ones (ascending).
    p.sort(m.hyperparam_column("warmup"), Qt::AscendingOrder);
    QCOMPARE(ids(p).front(), int64_t{3});
    p.sort(m.metric_column("train/loss"), Qt::AscendingOrder);
    QCOMPARE(ids(p), (std::vector<int64_t>{2, 1, 3}));  // 0.5, 1.5, 3
    p.sort(RunsTableModel::kIdColumn, Qt::DescendingOrder);
    QCOMPARE(ids(p), (std::vector<int64_t>{3, 2, 1}));
  }

  void filtersByTextFieldsAndComparisons() {
    RunsTableModel m;
    m.set_runs(load(), 0);
    RunsFilterProxy p;
    p.setSourceModel(&m);
    p.sort(RunsTableModel::kIdColumn, Qt::AscendingOrder);
    const std::pair<const char*, std::vector<int64_t>> cases[] = {
        {"", {1, 2, 3}},
        {"ADAM", {2}},                       // plain substring, any cell, any case
        {"lr=0.01", {2}},
        {"lr=1e-2", {2}},                    // numerically equal
        {"lr=0.001", {3}},
        {"lr!=0.01", {1, 3}},
        {"status:crashed", {3}},
        {"status:fin", {1, 2}},
        {"name:len", {2}},
        {"accuracy>0.8", {1, 3}},            // by the last component: train/accuracy 0.9, test/accuracy 0.85
        {"train/accuracy>=0.7", {1, 2}},
        {"train/loss<1", {2}},
        {"batch>32 batch<=128", {1, 3}},     // all terms hold
        {"optimizer:s", {1}},
        {"warmup>5", {3}},
        {"lr>abc", {}},                      // not a number: nothing compares
        {"nosuchkey=1", {}},
        {"=x", {}},                          // operator at the start: plain text "=x"
    };
    for (const auto& [query, expected] : cases) {
      p.set_query(QString::fromLatin1(query));
      if (ids(p) != expected) QFAIL(qPrintable(QStringLiteral("query '%1'").arg(QLatin1String(query))));
    }
  }

  void metricByLastComponentMatchesEachRunsOwnMetric() {
    RunsTableModel m;
    m.set_runs(load(), 0);
    // Run 3 has only test/accuracy: "accuracy" names it there (0.85).
    QCOMPARE(m.field(2, QStringLiteral("accuracy")).value_or(QString()), QStringLiteral("0.85"));
    QCOMPARE(m.field(0, QStringLiteral("accuracy")).value_or(QString()), QStringLiteral("0.9"));
    QVERIFY(!m.field(0, QStringLiteral("nosuch")).has_value());
  }

  void updatesInPlaceAndInsertsNewRunsWithoutReset() {
    RunsTableModel m;
    auto runs = load();
    std::vector<tessera::insight::RunSummary> first(runs.begin(), runs.begin() + 2);
    m.set_runs(first, 0);
    QSignalSpy reset(&m, &QAbstractItemModel::modelReset);
    QSignalSpy inserted(&m, &QAbstractItemModel::rowsInserted);
    QSignalSpy changed(&m, &QAbstractItemModel::dataChanged);
    first[0].run.status = "running";
    m.set_runs(first, 0);
    QCOMPARE(reset.count(), 0);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(m.index(0, RunsTableModel::kStatusColumn).data().toString(), QStringLiteral("running"));
    // Run 3 brings a new key (warmup): the columns change, so the model resets.
    m.set_runs(runs, 0);
    QCOMPARE(reset.count(), 1);
    QCOMPARE(m.rowCount(), 3);
    // Same columns, one more run: inserted.
    auto more = runs;
    more.push_back(runs[0]);
    more.back().run.id = 4;
    m.set_runs(more, 0);
    QCOMPARE(reset.count(), 1);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(m.row_of(4), 3);
  }

  void durationsReadLikeTheCommandLine() {
    QCOMPARE(tessera::studio::duration_text(12.34), QStringLiteral("12.3s"));
    QCOMPARE(tessera::studio::duration_text(245), QStringLiteral("4m05s"));
    QCOMPARE(tessera::studio::duration_text(7380), QStringLiteral("2h03m"));
  }
};

TESSERA_QTEST(RunsModelTest)
#include "runs_model_test.moc"
