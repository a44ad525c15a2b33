// The HParams view (runs_hparams.h): parallel coordinates of hyper-parameters and a metric.
#include "studio/insight/runs_hparams.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLineF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>
#include <tuple>
#include <cmath>

#include "studio/common/canvas_style.h"
#include "studio/common/guard.h"

namespace tessera::studio {

namespace {

constexpr double kTop = 44, kBottom = 30, kSide = 46;  // room for the picker, labels and ticks

bool as_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

QColor ramp(double t) {  // blue (0) .. red (1)
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromHsvF(0.66 * (1 - t), 0.75, 0.85);
}

QString short_number(double v) { return QString::number(v, 'g', 3); }

}  // namespace

HParamsView::HParamsView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* row = new QHBoxLayout();
  row->addWidget(new QLabel(tr("Metric"), this));
  metric_box_ = new QComboBox(this);
  metric_box_->setMinimumContentsLength(12);
  metric_box_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  row->addWidget(metric_box_, 1);
  layout->addLayout(row);
  layout->addStretch(1);
  setMinimumSize(200, 180);
  setMouseTracking(true);
  connect(metric_box_, &QComboBox::currentTextChanged, this, [this](const QString& m) {
    if (!updating_ && !m.isEmpty()) guarded(this, tr("HParams"), [&] { set_metric(m); });
  });
}

QStringList HParamsView::metric_names() const {
  std::set<QString> names;
  for (const auto& r : runs_)
    for (const auto& m : r.metrics) names.insert(QString::fromStdString(m.name));
  return QStringList(names.begin(), names.end());
}

void HParamsView::set_runs(const std::vector<insight::RunSummary>& runs, const std::set<int64_t>& selected) {
  runs_ = runs;
  selected_ = selected;
  const QStringList names = metric_names();
  // Until the user picks a metric, the default follows the runs (a metric chosen while one run
  // was listed, with nothing to compare, stayed after more arrived).
  if (!user_picked_ || !names.contains(metric_)) metric_ = default_metric(names);
  updating_ = true;
  metric_box_->clear();
  metric_box_->addItems(names);
  metric_box_->setCurrentText(metric_);
  updating_ = false;
  layout_lines();
  update();
}

QString HParamsView::default_metric(const QStringList& names) const {
  // What a sweep is judged by: a metric whose final values differ between the runs (the last
  // batch's train/accuracy is often 1.0 in every run: one colour, nothing to read), a test metric
  // before a training one, an accuracy before a loss, then the widest spread.
  QString best;
  std::tuple<bool, bool, bool, double> best_key{false, false, false, -1.0};
  for (const QString& n : names) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& r : runs_)
      for (const auto& m : r.metrics)
        if (QString::fromStdString(m.name) == n && std::isfinite(m.final_value)) {
          lo = std::min(lo, m.final_value);
          hi = std::max(hi, m.final_value);
        }
    const double spread = hi > lo ? hi - lo : 0.0;
    const std::tuple<bool, bool, bool, double> key{spread > 0, n.contains(QLatin1String("test")),
                                                   n.contains(QLatin1String("accuracy")), spread};
    if (best.isEmpty() || key > best_key) {
      best = n;
      best_key = key;
    }
  }
  return best;
}

void HParamsView::set_selected(const std::set<int64_t>& selected) {
  selected_ = selected;
  update();
}

void HParamsView::set_metric(const QString& metric) {
  metric_ = metric;
  user_picked_ = true;
  updating_ = true;
  metric_box_->setCurrentText(metric);
  updating_ = false;
  layout_lines();
  update();
}

QRectF HParamsView::plot_rect() const {
  return QRectF(kSide, kTop, std::max(10.0, width() - 2 * kSide), std::max(10.0, height() - kTop - kBottom));
}

void HParamsView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  layout_lines();
}

void HParamsView::layout_lines() {
  axes_.clear();
  lines_.clear();
  metric_of_.clear();
  ticks_.clear();
  const std::string metric = metric_.toStdString();
  std::vector<const insight::RunSummary*> drawn;
  for (const auto& r : runs_)
    for (const auto& m : r.metrics)
      if (m.name == metric && std::isfinite(m.final_value)) {
        drawn.push_back(&r);
        metric_of_[r.run.id] = m.final_value;
      }
  if (drawn.empty()) return;

  // The axes: hyper-parameters with at least two distinct values among the runs drawn.
  std::map<std::string, std::set<std::string>> values;
  for (const auto* r : drawn)
    for (const auto& [k, v] : r->hyperparams) values[k].insert(v);
  struct Axis {
    std::string key;
    bool numeric = true, log = false;
    double lo = 0, hi = 0;
    std::vector<std::string> categories;
  };
  std::vector<Axis> axes;
  for (const auto& [key, set] : values) {
    bool differs = set.size() > 1;
    for (const auto* r : drawn) differs = differs || !r->hyperparams.count(key);
    if (!differs) continue;
    Axis a;
    a.key = key;
    bool first = true;
    for (const std::string& v : set) {
      double x = 0;
      if (!as_number(v, &x)) {
        a.numeric = false;
        break;
      }
      a.lo = first ? x : std::min(a.lo, x);
      a.hi = first ? x : std::max(a.hi, x);
      first = false;
    }
    if (a.numeric) a.log = a.lo > 0 && a.hi / a.lo > 100;
    else a.categories.assign(set.begin(), set.end());
    axes.push_back(std::move(a));
  }
  metric_lo_ = metric_hi_ = metric_of_.begin()->second;
  for (const auto& [id, v] : metric_of_) metric_lo_ = std::min(metric_lo_, v), metric_hi_ = std::max(metric_hi_, v);

  const QRectF plot = plot_rect();
  const int n = static_cast<int>(axes.size()) + 1;
  auto axis_x = [&](int i) { return n == 1 ? plot.center().x() : plot.left() + plot.width() * i / (n - 1); };
  // 0 at the bottom of the plot, 1 at the top.
  auto to_y = [&](double t) { return plot.bottom() - std::clamp(t, 0.0, 1.0) * plot.height(); };
  for (const Axis& a : axes) {
    axes_ << QString::fromStdString(a.key);
    if (a.numeric) ticks_.push_back({short_number(a.lo), short_number(a.hi)});
    else {
      QStringList cats;
      for (const auto& c : a.categories) cats << QString::fromStdString(c);
      ticks_.push_back(cats);
    }
  }
  axes_ << metric_;
  ticks_.push_back({short_number(metric_lo_), short_number(metric_hi_)});
  for (const auto* r : drawn) {
    std::vector<QPointF> pts;
    for (size_t i = 0; i < axes.size(); ++i) {
      const Axis& a = axes[i];
      auto it = r->hyperparams.find(a.key);
      double t = -0.04;  // absent: just below the axis
      if (it != r->hyperparams.end()) {
        double x = 0;
        if (a.numeric && as_number(it->second, &x))
          t = a.hi > a.lo ? (a.log ? std::log(x / a.lo) / std::log(a.hi / a.lo) : (x - a.lo) / (a.hi - a.lo)) : 0.5;
        else if (!a.numeric) {
          const auto pos = std::find(a.categories.begin(), a.categories.end(), it->second) - a.categories.begin();
          t = a.categories.size() > 1 ? static_cast<double>(pos) / static_cast<double>(a.categories.size() - 1) : 0.5;
        }
      }
      pts.emplace_back(axis_x(static_cast<int>(i)), to_y(t));
    }
    const double m = metric_of_[r->run.id];
    pts.emplace_back(axis_x(n - 1), to_y(metric_hi_ > metric_lo_ ? (m - metric_lo_) / (metric_hi_ - metric_lo_) : 0.5));
    lines_[r->run.id] = std::move(pts);
  }
}

std::vector<QPointF> HParamsView::line(int64_t id) const {
  auto it = lines_.find(id);
  return it == lines_.end() ? std::vector<QPointF>() : it->second;
}

int64_t HParamsView::run_at(QPointF p) const {
  int64_t best = -1;
  double best_d = 5;
  for (const auto& [id, pts] : lines_)
    for (size_t i = 0; i + 1 < pts.size(); ++i) {
      const QLineF seg(pts[i], pts[i + 1]);
      const QPointF d = seg.p2() - seg.p1();
      const double len2 = d.x() * d.x() + d.y() * d.y();
      double t = len2 > 0 ? ((p.x() - seg.x1()) * d.x() + (p.y() - seg.y1()) * d.y()) / len2 : 0;
      t = std::clamp(t, 0.0, 1.0);
      const double dist = QLineF(p, seg.pointAt(t)).length();
      if (dist < best_d) best_d = dist, best = id;
    }
  return best;
}

void HParamsView::paintEvent(QPaintEvent*) {
  guarded(this, tr("HParams"), [&] {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().base());
    const QRectF plot = plot_rect();
    if (lines_.empty()) {
      p.setPen(palette().text().color());
      p.drawText(plot, Qt::AlignCenter | Qt::TextWordWrap,
                 runs_.empty() ? tr("No runs") : tr("No run recorded %1").arg(metric_.isEmpty() ? tr("a metric") : metric_));
      return;
    }
    const int n = static_cast<int>(axes_.size());
    // Lines: the others thin and faint, then the selected thick on top.
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& [id, pts] : lines_) {
        const bool sel = selected_.count(id) > 0;
        if (sel != (pass == 1)) continue;
        const double m = metric_of_[id];
        QColor c = ramp(metric_hi_ > metric_lo_ ? (m - metric_lo_) / (metric_hi_ - metric_lo_) : 0.5);
        if (!sel && !selected_.empty()) c.setAlpha(90);
        p.setPen(QPen(c, sel ? 3 : 1.3));
        p.drawPolyline(pts.data(), static_cast<int>(pts.size()));
      }
    // Axes with their names (top) and ends or categories.
    const QFontMetrics fm(font());
    // A tick's text on a patch of the background, so the lines under it do not cross it.
    auto label = [&](const QRectF& box, int align, const QString& text) {
      QRectF r = fm.boundingRect(box.toRect(), align, text);
      QColor back = palette().base().color();
      back.setAlpha(220);
      p.fillRect(r.adjusted(-2, 0, 2, 0), back);
      p.drawText(box, align, text);
    };
    for (int i = 0; i < n; ++i) {
      const double x = n == 1 ? plot.center().x() : plot.left() + plot.width() * i / (n - 1);
      p.setPen(QPen(palette().text().color(), 1));
      p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
      if (i == n - 1) {  // the metric's axis is its colour scale: blue at the low end, red at the high
        const int steps = 32;
        for (int k = 0; k < steps; ++k) {
          const double y0 = plot.bottom() - plot.height() * k / steps, y1 = plot.bottom() - plot.height() * (k + 1) / steps;
          p.fillRect(QRectF(x - 3, y1, 6, y0 - y1), ramp((k + 0.5) / steps));
        }
      }
      const QString name = fm.elidedText(axes_[i], Qt::ElideMiddle, static_cast<int>(std::max(40.0, plot.width() / std::max(1, n - 1))));
      p.drawText(QRectF(x - 60, plot.top() - 18, 120, 16), Qt::AlignCenter, name);
      const QStringList& t = ticks_[static_cast<size_t>(i)];
      p.setPen(palette().placeholderText().color());
      if (t.size() == 2 && i == n - 1) {  // the metric: low at the bottom, high at the top
        p.drawText(QRectF(x - 60, plot.bottom() + 2, 120, 14), Qt::AlignCenter, t[0]);
        label(QRectF(x + 6, plot.top(), 60, 14), Qt::AlignLeft, t[1]);
      } else if (!t.isEmpty()) {  // numbers: low and high; categories: each at its place
        for (int k = 0; k < t.size(); ++k) {
          const double y = t.size() == 1 ? plot.center().y() : plot.bottom() - plot.height() * k / (t.size() - 1);
          label(QRectF(x + 6, y - 7, 80, 14), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(t[k], Qt::ElideRight, 80));
        }
      }
    }
  });
}

void HParamsView::mousePressEvent(QMouseEvent* event) {
  const int64_t id = run_at(event->position());
  if (id >= 0) Q_EMIT run_clicked(id);
  QWidget::mousePressEvent(event);
}

bool HParamsView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int64_t id = run_at(help->pos());
    if (id < 0) {
      QToolTip::hideText();
      return true;
    }
    QString text;
    for (const auto& r : runs_)
      if (r.run.id == id) {
        text = tr("run %1 %2: %3 = %4").arg(id).arg(QString::fromStdString(r.run.name), metric_).arg(metric_of_[id], 0, 'g', 5);
        for (const QString& a : axes_)
          if (auto it = r.hyperparams.find(a.toStdString()); it != r.hyperparams.end())
            text += QStringLiteral("\n%1 = %2").arg(a, QString::fromStdString(it->second));
      }
    QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(event);
}

}  // namespace tessera::studio
