// The runs dashboard's metric chart (runs_chart.h).
#include "studio/insight/runs_chart.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QSlider>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "studio/common/guard.h"
#include "studio/common/theme.h"

namespace tessera::studio {
namespace {

// Ten distinguishable colours (Tableau 10), by run id: a run keeps its colour whatever else is
// selected and in every chart (it changed with the selection).
QColor run_colour(size_t i) {
  static const QRgb kColours[] = {0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                  0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
  return QColor::fromRgb(kColours[i % 10]);
}

// A range around [lo, hi] on round ticks (1, 2 or 5 x 10^k apart, 5 to 10 ticks): tighter than
// QValueAxis::applyNiceNumbers, which keeps the tick count and so may double the range.
std::tuple<double, double, int> nice_range(double lo, double hi) {
  const double raw = (hi - lo) / 8;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double f : {1.0, 2.0, 5.0})
    if (f * mag >= raw) {
      step = f * mag;
      break;
    }
  const double a = std::floor(lo / step) * step, b = std::ceil(hi / step) * step;
  return {a, b, static_cast<int>(std::lround((b - a) / step)) + 1};
}

}  // namespace

std::vector<double> ema_smooth(const std::vector<double>& values, double weight) {
  std::vector<double> out;
  out.reserve(values.size());
  double last = 0;
  int n = 0;
  for (double v : values) {
    if (!std::isfinite(v) || weight <= 0) {
      out.push_back(v);
      continue;
    }
    last = last * weight + (1 - weight) * v;
    ++n;
    const double debias = 1 - std::pow(weight, n);
    out.push_back(last / debias);
  }
  return out;
}

std::vector<QPointF> log_drawable(const std::vector<QPointF>& points, int* dropped) {
  std::vector<QPointF> out;
  out.reserve(points.size());
  int n = 0;
  for (const QPointF& p : points) {
    if (p.y() > 0 && std::isfinite(p.y()) && std::isfinite(p.x())) out.push_back(p);
    else ++n;
  }
  if (dropped) *dropped = n;
  return out;
}

MetricChart::MetricChart(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  // Two rows, so that the chart fits a narrow pane (a 1280x720 window with both docks open): the
  // metric, then how it is drawn.
  controls_ = new QWidget(this);
  auto* rows = new QVBoxLayout(controls_);
  rows->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(controls_);
  auto* controls = new QHBoxLayout();
  metric_box_ = new QComboBox(this);
  metric_box_->setMinimumContentsLength(12);
  metric_box_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  metric_box_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  controls->addWidget(new QLabel(tr("Metric"), this));
  controls->addWidget(metric_box_, 1);
  rows->addLayout(controls);
  auto* drawing = new QHBoxLayout();
  drawing->addWidget(new QLabel(tr("Smoothing"), this));
  smoothing_slider_ = new QSlider(Qt::Horizontal, this);
  smoothing_slider_->setRange(0, 99);
  smoothing_slider_->setMinimumWidth(80);  // a handle with room to drag
  smoothing_slider_->setMaximumWidth(200);
  smoothing_slider_->setToolTip(tr("TensorBoard's debiased exponential moving average; the raw curve stays behind it"));
  drawing->addWidget(smoothing_slider_, 1);
  smoothing_label_ = new QLabel(QStringLiteral("0.00"), this);
  smoothing_label_->setMinimumWidth(smoothing_label_->fontMetrics().horizontalAdvance(QStringLiteral("0.00")) + 4);
  drawing->addWidget(smoothing_label_);
  drawing->addSpacing(8);
  log_box_ = new QCheckBox(tr("Log y"), this);
  drawing->addWidget(log_box_);
  drawing->addSpacing(8);
  drawing->addWidget(new QLabel(tr("x"), this));
  x_box_ = new QComboBox(this);
  x_box_->addItem(tr("step"));
  x_box_->addItem(tr("wall time (s)"));
  x_box_->setToolTip(tr("step, or seconds from each run's start"));
  drawing->addWidget(x_box_);
  drawing->addStretch(1);
  rows->addLayout(drawing);

  chart_ = new QChart();
  chart_->legend()->setAlignment(Qt::AlignRight);
  x_axis_item_ = new QValueAxis(chart_);
  y_linear_ = new QValueAxis(chart_);
  y_linear_->setLabelFormat(QStringLiteral("%.4g"));
  y_log_ = new QLogValueAxis(chart_);
  y_log_->setBase(10);
  y_log_->setLabelFormat(QStringLiteral("%g"));
  chart_->addAxis(x_axis_item_, Qt::AlignBottom);
  chart_->addAxis(y_linear_, Qt::AlignLeft);
  chart_->addAxis(y_log_, Qt::AlignLeft);
  chart_->setMargins(QMargins(4, 4, 4, 4));
  if (style::current_theme() == style::Theme::kDark) chart_->setTheme(QChart::ChartThemeDark);
  view_ = new QChartView(chart_, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumHeight(200);
  layout->addWidget(view_, 1);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #a05a00;"));
  note_->hide();
  layout->addWidget(note_);

  connect(metric_box_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
    if (!updating_ && !name.isEmpty()) guarded(this, tr("Metric"), [&] { set_metric(name); });
  });
  connect(smoothing_slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!updating_) guarded(this, tr("Smoothing"), [&] { set_smoothing(v / 100.0); });
  });
  connect(log_box_, &QCheckBox::toggled, this, [this](bool on) {
    if (!updating_) guarded(this, tr("Log y"), [&] { set_log_y(on); });
  });
  connect(x_box_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!updating_)
      guarded(this, tr("x axis"), [&] { set_x_axis(i == 1 ? ChartXAxis::kRelativeWallSeconds : ChartXAxis::kStep); });
  });
  rebuild();
}

QStringList MetricChart::metric_names() const {
  std::set<std::string> names;
  for (const auto& [run, points] : series_)
    for (const auto& p : points) names.insert(p.name);
  QStringList out;
  for (const auto& n : names) out << QString::fromStdString(n);
  return out;
}

void MetricChart::set_series(std::map<int64_t, std::vector<insight::MetricPoint>> series,
                             std::map<int64_t, QString> labels, const QString& metric) {
  series_ = std::move(series);
  labels_ = std::move(labels);
  const QStringList names = metric_names();
  if (!metric.isEmpty() && names.contains(metric)) metric_ = metric;
  if (!names.contains(metric_)) {
    // Prefer a loss, what one looks at first, and of the losses the one with the most values (the
    // training loss by step, not the test loss recorded once per epoch).
    std::map<QString, size_t> counts;
    for (const auto& [run, points] : series_)
      for (const auto& p : points) ++counts[QString::fromStdString(p.name)];
    metric_ = QString();
    size_t best = 0;
    for (int pass = 0; pass < 2 && metric_.isEmpty(); ++pass)
      for (const QString& n : names) {
        if (pass == 0 && !n.contains(QLatin1String("loss"))) continue;
        if (metric_.isEmpty() || counts[n] > best) {
          metric_ = n;
          best = counts[n];
        }
      }
  }
  updating_ = true;
  metric_box_->clear();
  metric_box_->addItems(names);
  metric_box_->setCurrentText(metric_);
  updating_ = false;
  rebuild();
}

void MetricChart::set_metric(const QString& name) {
  if (name == metric_) return;
  metric_ = name;
  updating_ = true;
  metric_box_->setCurrentText(name);
  updating_ = false;
  rebuild();
  Q_EMIT metric_changed(name);
}

void MetricChart::set_smoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.99);
  updating_ = true;
  smoothing_slider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  updating_ = false;
  smoothing_label_->setText(QString::number(smoothing_, 'f', 2));
  rebuild();
}

void MetricChart::set_log_y(bool on) {
  log_y_ = on;
  updating_ = true;
  log_box_->setChecked(on);
  updating_ = false;
  rebuild();
}

void MetricChart::set_x_axis(ChartXAxis x) {
  x_axis_ = x;
  updating_ = true;
  x_box_->setCurrentIndex(x == ChartXAxis::kStep ? 0 : 1);
  updating_ = false;
  rebuild();
}

int MetricChart::curve_count() const { return static_cast<int>(chart_->series().size()); }

std::vector<QPointF> MetricChart::drawn_points(int64_t run) const {
  auto it = drawn_.find(run);
  return it == drawn_.end() ? std::vector<QPointF>() : it->second;
}

QString MetricChart::note() const { return note_->text(); }

QString MetricChart::chart_title() const { return chart_->title(); }

bool MetricChart::y_numbers_shown() const {
  return log_y_ ? y_log_->labelsVisible() : y_linear_->labelsVisible();
}

void MetricChart::set_compact(bool compact) {
  controls_->setVisible(!compact);
  // A tile: small axis numbers and thin margins, so the numbers fit instead of showing "…".
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.8));
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(x_axis_item_), static_cast<QAbstractAxis*>(y_linear_),
                              static_cast<QAbstractAxis*>(y_log_)}) {
    axis->setLabelsFont(compact ? small : font());
    axis->setTitleVisible(!compact);
  }
  chart_->setMargins(compact ? QMargins(2, 2, 2, 2) : QMargins(20, 20, 20, 20));
  view_->setMinimumHeight(compact ? 150 : 200);
  chart_->legend()->setVisible(!compact && !labels_.empty());
  chart_->setTitle(compact ? metric_ : QString());
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(y_linear_), static_cast<QAbstractAxis*>(y_log_)})
    axis->setLabelsVisible(!compact);
  compact_ = compact;
}

void MetricChart::apply_theme() {
  chart_->setTheme(style::current_theme() == style::Theme::kDark ? QChart::ChartThemeDark
                                                                  : QChart::ChartThemeLight);
  chart_->setMargins(QMargins(4, 4, 4, 4));
  rebuild();  // the theme reset the curves' pens
}

void MetricChart::rebuild() {
  // The points first, then the axes' ranges, then the series: Qt Charts recomputes a series'
  // geometry on every range change of an attached axis, so series added last are laid out once.
  struct Curve {
    std::vector<QPointF> points;
    QColor colour;
    QString label;
    bool faint = false;
  };
  std::vector<Curve> curves;
  drawn_.clear();
  QStringList notes;
  const std::string metric = metric_.toStdString();
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  bool any = false;
  int dropped_total = 0;
  for (const auto& [run, label] : labels_) {
    const QColor c = run_colour(static_cast<size_t>(std::max<int64_t>(run, 1) - 1));
    auto sit = series_.find(run);
    if (sit == series_.end()) {
      notes << tr("run %1 recorded no metrics").arg(run);
      continue;
    }
    const auto& points = sit->second;
    int64_t t0 = 0;
    for (size_t i = 0; i < points.size(); ++i)
      if (i == 0 || points[i].wall_ns < t0) t0 = points[i].wall_ns;
    std::vector<double> values, xs;
    for (const auto& p : points) {
      if (p.name != metric) continue;
      values.push_back(p.value);
      xs.push_back(x_axis_ == ChartXAxis::kStep ? static_cast<double>(p.step) : static_cast<double>(p.wall_ns - t0) / 1e9);
    }
    if (values.empty()) {
      notes << tr("run %1 recorded no %2").arg(run).arg(metric_);
      continue;
    }
    const std::vector<double> smooth = ema_smooth(values, smoothing_);
    std::vector<QPointF> raw_points, smooth_points;
    raw_points.reserve(values.size());
    smooth_points.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      raw_points.emplace_back(xs[i], values[i]);
      smooth_points.emplace_back(xs[i], smooth[i]);
    }
    if (log_y_) {
      int dropped = 0;
      raw_points = log_drawable(raw_points, &dropped);
      smooth_points = log_drawable(smooth_points, nullptr);
      dropped_total += dropped;
    }
    const bool smoothed = smoothing_ > 0;
    for (const auto* pts : {&raw_points, &smooth_points})
      for (const QPointF& p : *pts) {
        if (!std::isfinite(p.y()) || !std::isfinite(p.x())) continue;
        if (!any) {
          x_min = x_max = p.x();
          y_min = y_max = p.y();
          any = true;
        }
        x_min = std::min(x_min, p.x());
        x_max = std::max(x_max, p.x());
        y_min = std::min(y_min, p.y());
        y_max = std::max(y_max, p.y());
      }
    drawn_[run] = smoothed ? smooth_points : raw_points;
    if (smoothed) curves.push_back({std::move(raw_points), c, label, true});
    curves.push_back({smoothed ? std::move(smooth_points) : std::move(raw_points), c, label, false});
  }
  if (dropped_total > 0)
    notes << tr("log scale: %n value(s) <= 0 not shown", nullptr, dropped_total);
  if (labels_.empty()) notes << tr("select runs in the table to compare their curves");

  // The axes stay (removing an axis from a shown chart can leave its drawing behind until the
  // event loop deletes it): the unused y axis is hidden.
  chart_->removeAllSeries();
  QValueAxis* x = x_axis_item_;
  x->setTitleText(x_axis_ == ChartXAxis::kStep ? tr("step") : tr("seconds from the run's first value"));
  // Ranges: round ticks around the points; a log axis needs positive bounds.
  if (!any) {
    x_min = 0, x_max = 1;
    y_min = log_y_ ? 0.1 : 0, y_max = 1;
  }
  if (x_max <= x_min) {  // one x value: in the middle, not on the frame
    x_min -= 1;
    x_max += 1;
  }
  x->setTickCount(compact_ ? 3 : 5);  // a tile's axis has room for three numbers, not "…"
  x->setLabelFormat(QStringLiteral("%g"));
  x->setRange(x_min, x_max);
  x->applyNiceNumbers();  // 0, 50, 100 rather than 1, 75.8, 150.5
  if (x_axis_ == ChartXAxis::kStep && x->max() - x->min() >= x->tickCount() - 1) x->setLabelFormat(QStringLiteral("%d"));
  QAbstractAxis* y_axis = nullptr;
  if (log_y_) {
    y_log_->setRange(y_min / 1.2, y_max * 1.2);
    y_axis = y_log_;
  } else {
    // A flat curve gets room around it.
    const double pad = y_max > y_min ? 0.0 : std::max(1e-6, std::abs(y_max) * 0.05 + 0.5);
    const auto [lo, hi, ticks] = nice_range(y_min - pad, y_max + pad);
    y_linear_->setRange(lo, hi);
    y_linear_->setTickCount(ticks);
    y_axis = y_linear_;
  }
  y_linear_->setVisible(!log_y_);
  y_log_->setVisible(log_y_);
  y_axis->setTitleText(compact_ ? QString() : metric_);  // a tile's title names it already
  for (const Curve& curve : curves) {
    // Added and attached while empty, filled last: Qt Charts strokes a series' whole path (its
    // hover shape) on addSeries and on each attachAxis, which cost 3x the time with the points in.
    auto* s = new QLineSeries(chart_);
    QPen pen(curve.faint ? QColor(curve.colour.red(), curve.colour.green(), curve.colour.blue(), 70) : curve.colour);
    pen.setWidthF(curve.faint ? 1.0 : 2.0);
    s->setPen(pen);
    s->setName(curve.label);
    chart_->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y_axis);
    if (curve.faint)
      for (QLegendMarker* m : chart_->legend()->markers(s)) m->setVisible(false);
    // A sparse metric (one value per epoch, a single test loss) gets a marker per value: a line
    // through one point draws nothing.
    if (!curve.faint && curve.points.size() <= kMarkedPoints) {
      s->setPointsVisible(true);
      s->setMarkerSize(7);
    }
    s->replace(QList<QPointF>(curve.points.begin(), curve.points.end()));
  }
  chart_->legend()->setVisible(!compact_ && !labels_.empty());
  // A tile has no room for the y axis's numbers (Qt Charts elided them all to "…"): its title
  // gives the range of the values instead, and the axis keeps its grid lines.
  y_axis->setLabelsVisible(!compact_);
  if (compact_)
    chart_->setTitle(any ? QStringLiteral("%1  %2 \u2013 %3").arg(metric_, QString::number(y_min, 'g', 4),
                                                                QString::number(y_max, 'g', 4))
                         : metric_);
  note_->setText(notes.join(QLatin1String("; ")));
  note_->setVisible(!notes.isEmpty());
}

}  // namespace tessera::studio
