// Tests of studio/runs_chart.cpp: TensorBoard's debiased EMA against hand-computed values, the log
// axis with zeros and negative values (left out, counted in the note, no crash), x by step or by
// relative wall time, the metric picker, and the note for runs that recorded no metrics.
#include <QChart>
#include <QTest>
#include <QValueAxis>
#include <QXYSeries>
#include <cmath>
#include <limits>

#include "tests/studio/qtest_main.h"
#include "studio/insight/runs_chart.h"

using tessera::insight::MetricPoint;
using tessera::studio::ChartXAxis;
using tessera::studio::MetricChart;
using tessera::studio::ema_smooth;

namespace {

std::vector<MetricPoint> points(const std::string& name, const std::vector<double>& values, int64_t t0 = 0) {
  std::vector<MetricPoint> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back({name, static_cast<int64_t>(i + 1), 0, t0 + static_cast<int64_t>(i) * 500'000'000, values[i]});
  return out;
}

}  // namespace

class RunsChartTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void emaMatchesHandComputedValues() {
    // w = 0.5 on 1, 2, 3:
    //   last 0.5,   debias 1 - 0.5   = 0.5   -> 1
    //   last 1.25,  debias 1 - 0.25  = 0.75  -> 1.6666667
    //   last 2.125, debias 1 - 0.125 = 0.875 -> 2.4285714
    const auto s = ema_smooth({1, 2, 3}, 0.5);
    QCOMPARE(s.size(), size_t{3});
    QVERIFY(std::abs(s[0] - 1.0) < 1e-12);
    QVERIFY(std::abs(s[1] - 5.0 / 3.0) < 1e-12);
    QVERIFY(std::abs(s[2] - 17.0 / 7.0) < 1e-12);
    // w = 0.9 on a constant: debiasing keeps it exactly (an undebiased EMA would start at 0.1 * c).
    for (double v : ema_smooth({4, 4, 4, 4}, 0.9)) QVERIFY(std::abs(v - 4.0) < 1e-12);
    // w = 0: the values themselves.
    QCOMPARE(ema_smooth({3, -1, 7}, 0.0), (std::vector<double>{3, -1, 7}));
    // A NaN passes through and does not poison what follows: 1, NaN, 3 with w = 0.5 -> 1, NaN, 2.3333333
    // (the NaN is skipped: the second finite value is averaged as n = 2: (0.25 + 1.5) / 0.75).
    const auto n = ema_smooth({1, std::numeric_limits<double>::quiet_NaN(), 3}, 0.5);
    QVERIFY(std::isnan(n[1]));
    QVERIFY(std::abs(n[2] - 1.75 / 0.75) < 1e-12);
  }

  void logAxisLeavesOutNonPositiveValuesWithANote() {
    MetricChart chart;
    chart.set_series({{1, points("loss", {0, 1, 10, -1, 100})}}, {{1, "run 1"}});
    QCOMPARE(chart.drawn_points(1).size(), size_t{5});
    QVERIFY(chart.note().isEmpty());
    chart.set_log_y(true);
    const auto drawn = chart.drawn_points(1);
    QCOMPARE(drawn.size(), size_t{3});
    QCOMPARE(drawn[0], QPointF(2, 1));
    QCOMPARE(drawn[2], QPointF(5, 100));
    QVERIFY2(chart.note().contains(QStringLiteral("2 value(s) <= 0")), qPrintable(chart.note()));
    // Every value non-positive: nothing drawn, still no crash, the note says so.
    chart.set_series({{1, points("loss", {0, -2, 0})}}, {{1, "run 1"}});
    QCOMPARE(chart.drawn_points(1).size(), size_t{0});
    QVERIFY(chart.note().contains(QStringLiteral("3 value(s)")));
    chart.set_log_y(false);
    QCOMPARE(chart.drawn_points(1).size(), size_t{3});
  }

  void smoothingDrawsTheRawCurveBehindTheSmoothedOne() {
    MetricChart chart;
    chart.set_series({{1, points("loss", {1, 2, 3})}, {2, points("loss", {2, 2, 2})}}, {{1, "a"}, {2, "b"}});
    QCOMPARE(chart.curve_count(), 2);
    chart.set_smoothing(0.5);
    QCOMPARE(chart.curve_count(), 4);
    const auto d = chart.drawn_points(1);
    QVERIFY(std::abs(d[1].y() - 5.0 / 3.0) < 1e-9);
    QCOMPARE(chart.smoothing(), 0.5);
  }

  void xByRelativeWallTime() {
    MetricChart chart;
    chart.set_series({{1, points("loss", {1, 2, 3}, 1'700'000'000'000'000'000)}}, {{1, "a"}});
    QCOMPARE(chart.drawn_points(1)[2].x(), 3.0);  // step
    chart.set_x_axis(ChartXAxis::kRelativeWallSeconds);
    QCOMPARE(chart.drawn_points(1)[0].x(), 0.0);
    QCOMPARE(chart.drawn_points(1)[2].x(), 1.0);  // 2 x 0.5 s after the first value
  }

  void pickerListsMetricsAndPrefersALoss() {
    MetricChart chart;
    auto p = points("train/accuracy", {0.1, 0.5});
    auto l = points("train/loss", {2, 1});
    p.insert(p.end(), l.begin(), l.end());
    chart.set_series({{1, p}}, {{1, "a"}});
    QCOMPARE(chart.metric_names(), (QStringList{"train/accuracy", "train/loss"}));
    QCOMPARE(chart.metric(), QStringLiteral("train/loss"));
    chart.set_metric(QStringLiteral("train/accuracy"));
    QCOMPARE(chart.drawn_points(1)[1].y(), 0.5);
    // The choice survives new data.
    chart.set_series({{1, p}}, {{1, "a"}});
    QCOMPARE(chart.metric(), QStringLiteral("train/accuracy"));
  }

  // Issue 17, item 4: a metric with one value per run (test/loss after a 1-epoch run) is drawn
  // as a marker inside the frame, and the default metric is the loss with the most values.
  void singlePointMetricsAreMarkedAndTheDenseLossIsTheDefault() {
    MetricChart chart;
    auto p = points("test/loss", {0.65});
    auto l = points("train/loss", {2, 1.5, 1.2, 1.0});
    p.insert(p.end(), l.begin(), l.end());
    chart.set_series({{1, p}}, {{1, "a"}});
    QCOMPARE(chart.metric(), QStringLiteral("train/loss"));
    chart.set_metric(QStringLiteral("test/loss"));
    QCOMPARE(chart.curve_count(), 1);
    auto* line = qobject_cast<QXYSeries*>(chart.chart()->series().front());
    QVERIFY(line);
    QVERIFY(line->pointsVisible());
    QCOMPARE(line->count(), 1);
    auto* x = qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Horizontal).front());
    QVERIFY(x->min() < 1 && x->max() > 1);  // the point (step 1) is not on the frame
    // A dense curve is a plain line.
    chart.set_metric(QStringLiteral("train/loss"));
    chart.set_series({{1, points("train/loss", std::vector<double>(100, 1.0))}}, {{1, "a"}});
    QVERIFY(!qobject_cast<QXYSeries*>(chart.chart()->series().front())->pointsVisible());
  }

  void runsWithoutMetricsAreNamedInTheNote() {
    MetricChart chart;
    chart.set_series({{1, points("loss", {1})}}, {{1, "a"}, {7, "b"}});
    QVERIFY2(chart.note().contains(QStringLiteral("run 7 recorded no metrics")), qPrintable(chart.note()));
    chart.set_series({}, {});
    QVERIFY(chart.note().contains(QStringLiteral("select runs")));
  }
};

TESSERA_QTEST(RunsChartTest)
#include "runs_chart_test.moc"
