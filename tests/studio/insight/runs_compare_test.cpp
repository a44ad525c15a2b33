// Tests of studio/runs_compare.cpp: rows (run fields, every hyper-parameter any run has, final and
// best of every metric), "-" for what a run lacks (and such a row differs), exactly the differing
// rows highlighted, best values from the full summaries, and no runs at all.
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "studio/insight/runs_compare.h"

using tessera::insight::MetricSummary;
using tessera::insight::RunSummary;
using tessera::studio::RunsCompareTable;

namespace {

RunSummary run(int64_t id, std::map<std::string, std::string> hp, std::vector<MetricSummary> metrics) {
  RunSummary r;
  r.run.id = id;
  r.run.name = "mlp";
  r.run.status = "finished";
  r.run.graph_name = "mlp";
  r.graph_hash = "0123456789abcdef";
  r.hyperparams = std::move(hp);
  r.metrics = std::move(metrics);
  return r;
}

}  // namespace

class RunsCompareTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void highlightsExactlyTheDifferingRows() {
    const RunSummary a = run(1, {{"lr", "0.1"}, {"batch", "64"}}, {{"loss", 0.5, 0.5, 10, 10, 0}});
    const RunSummary b = run(2, {{"lr", "0.1"}, {"batch", "32"}, {"warmup", "5"}}, {{"loss", 0.5, 0.5, 10, 10, 0}});
    RunsCompareTable t;
    // Same final loss; best values differ (from the full summaries).
    t.set_runs({&a, &b}, {{1, {{"loss", 0.5, 0.4, 10, 7, 10}}}, {2, {{"loss", 0.5, 0.3, 10, 4, 10}}}});
    QCOMPARE(t.keys(), (QStringList{"name", "status", "graph", "seed", "batch", "lr", "warmup", "loss (final)",
                                    "loss (best)"}));
    QCOMPARE(t.differing_keys(), (QStringList{"batch", "warmup", "loss (best)"}));
    QCOMPARE(t.columnCount(), 3);
    QCOMPARE(t.horizontalHeaderItem(2)->text(), QStringLiteral("run 2"));
    QCOMPARE(t.item(6, 1)->text(), QStringLiteral("-"));  // run 1 has no warmup
    QCOMPARE(t.item(8, 1)->text(), QStringLiteral("0.4"));
    QCOMPARE(t.item(8, 2)->text(), QStringLiteral("0.3"));
    QCOMPARE(t.item(2, 1)->text(), QStringLiteral("mlp 01234567"));
    // Highlighted cells have the highlight background; the others none.
    QVERIFY(t.item(4, 1)->background().style() != Qt::NoBrush);
    QCOMPARE(t.item(5, 1)->background().style(), Qt::NoBrush);
  }

  void withoutFullSummariesBestIsUnknown() {
    const RunSummary a = run(1, {}, {{"loss", 0.5, 0.5, 10, 10, 0}});
    RunsCompareTable t;
    t.set_runs({&a}, {});
    QCOMPARE(t.item(t.keys().indexOf(QStringLiteral("loss (final)")), 1)->text(), QStringLiteral("0.5"));
    QCOMPARE(t.item(t.keys().indexOf(QStringLiteral("loss (best)")), 1)->text(), QStringLiteral("-"));
    QVERIFY(t.differing_keys().isEmpty());  // one run differs from nothing
  }

  void noRuns() {
    RunsCompareTable t;
    t.set_runs({}, {});
    QCOMPARE(t.columnCount(), 1);
    QVERIFY(t.differing_keys().isEmpty());
  }
};

TESSERA_QTEST(RunsCompareTest)
#include "runs_compare_test.moc"
