// The runs dashboard's metric chart: one metric's curves of several runs overlaid (Qt Charts), with
// a metric picker, TensorBoard's debiased exponential moving average as smoothing (the raw curve
// stays behind it, faint), a logarithmic y axis (values <= 0 cannot be drawn there: they are left
// out and a note says how many), and x by step or by wall time relative to each run's start.
//
//   MetricChart chart;
//   chart.set_series(*insight::load_metric_series(db, {3, 4}), {{3, "run 3 lenet"}, {4, "run 4 lenet"}});
//   chart.set_metric("train/loss");  chart.set_smoothing(0.6);  chart.set_log_y(true);
#pragma once

#include <QPointF>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <map>
#include <vector>

#include "insight/query.h"

class QCheckBox;
class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLogValueAxis;
class QSlider;
class QValueAxis;

namespace tessera::studio {

// TensorBoard's smoothing: last = last * w + (1 - w) * v, divided by the debias factor 1 - w^n
// (n: finite values seen), so the first points are not pulled towards 0. Non-finite values pass
// through unchanged and do not enter the average. `weight` in [0, 1); 0 returns the values.
std::vector<double> ema_smooth(const std::vector<double>& values, double weight);

// The points drawable on a log axis (y > 0 and finite); `dropped` counts the others.
std::vector<QPointF> log_drawable(const std::vector<QPointF>& points, int* dropped);

enum class ChartXAxis { kStep, kRelativeWallSeconds };

class MetricChart : public QWidget {
  Q_OBJECT

 public:
  explicit MetricChart(QWidget* parent = nullptr);

  // The runs' points (all metrics, as load_metric_series gives them) and a legend label per run
  // (runs absent from `series` but present in `labels` recorded no metrics: the note says so). The
  // metric choice, smoothing, axis settings are kept when the chosen metric still exists.
  // `metric`, when given and recorded, is shown (one redraw, as the small multiples need).
  void set_series(std::map<int64_t, std::vector<insight::MetricPoint>> series, std::map<int64_t, QString> labels,
                  const QString& metric = {});
  void set_metric(const QString& name);
  void set_smoothing(double weight);  // [0, 0.99]
  void set_log_y(bool on);
  void set_x_axis(ChartXAxis x);

  QString metric() const { return metric_; }
  QStringList metric_names() const;
  double smoothing() const { return smoothing_; }
  bool log_y() const { return log_y_; }
  // What the chart shows, for tests: curves drawn (raw and smoothed), points of a run's curve as
  // drawn (the smoothed one when smoothing is on), the note under the chart.
  int curve_count() const;
  // The chart's title (a tile's: its metric and the range of its values) and whether the y axis
  // shows its numbers (not in a tile, where they did not fit).
  QString chart_title() const;
  bool y_numbers_shown() const;
  std::vector<QPointF> drawn_points(int64_t run) const;
  QString note() const;
  QChart* chart() const { return chart_; }
  // Curves of at most this many values show a marker at each value (a sparse metric, such as a
  // test loss per epoch, would otherwise be an invisible line through one point).
  static constexpr size_t kMarkedPoints = 30;
  // The chart's colours follow style::current_theme() (dark charts in the dark theme).
  void apply_theme();
  // Compact: no controls, no legend, the metric as the title (the dashboard's small multiples).
  void set_compact(bool compact);

 Q_SIGNALS:
  void metric_changed(const QString& name);

 private:
  void rebuild();
  QWidget* controls_ = nullptr;
  bool compact_ = false;

  std::map<int64_t, std::vector<insight::MetricPoint>> series_;
  std::map<int64_t, QString> labels_;
  std::map<int64_t, std::vector<QPointF>> drawn_;
  QString metric_;
  double smoothing_ = 0;
  bool log_y_ = false;
  ChartXAxis x_axis_ = ChartXAxis::kStep;

  QComboBox* metric_box_ = nullptr;
  QSlider* smoothing_slider_ = nullptr;
  QLabel* smoothing_label_ = nullptr;
  QCheckBox* log_box_ = nullptr;
  QComboBox* x_box_ = nullptr;
  QChart* chart_ = nullptr;
  QValueAxis* x_axis_item_ = nullptr;
  QValueAxis* y_linear_ = nullptr;
  QLogValueAxis* y_log_ = nullptr;
  QChartView* view_ = nullptr;
  QLabel* note_ = nullptr;
  bool updating_ = false;
};

}  // namespace tessera::studio
