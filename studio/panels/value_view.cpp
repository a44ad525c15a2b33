// The value view (value_view.h): statistics, histogram, a heatmap of a 2-D slice, Save as .npy.
#include "studio/panels/value_view.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QPushButton>
#include <QSpinBox>
#include <QStringList>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine/runtime/interpreter.h"
#include "formats/npy.h"
#include "studio/common/canvas_style.h"
#include "studio/common/guard.h"

namespace tessera::studio {

namespace {

QString number(double x) { return QString::number(x, 'g', 6); }

// A diverging map for signed data (blue, white, red), a sequential one otherwise (dark to yellow).
QRgb colour_of(double t, bool diverging) {
  t = std::clamp(t, 0.0, 1.0);
  if (diverging) {
    if (t < 0.5) {
      const double u = t / 0.5;
      return qRgb(static_cast<int>(40 + 215 * u), static_cast<int>(80 + 175 * u), 255);
    }
    const double u = (t - 0.5) / 0.5;
    return qRgb(255, static_cast<int>(255 - 200 * u), static_cast<int>(255 - 215 * u));
  }
  return qRgb(static_cast<int>(30 + 225 * t), static_cast<int>(20 + 200 * t), static_cast<int>(90 + 20 * (1 - t)));
}

// Bars of the histogram with their axis: the range of the finite values under the bars, the
// highest count at the top. The counts and the range belong to the ValueView.
class HistogramWidget : public QWidget {
 public:
  HistogramWidget(const std::vector<int64_t>* counts, const ValueStats* stats, QWidget* parent)
      : QWidget(parent), counts_(counts), stats_(stats) {
    setMinimumSize(100, 80);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  }
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (counts_->empty()) return;
    const int text_h = fontMetrics().height();
    const QRectF bars(0, text_h, width(), std::max(10, height() - 2 * text_h - 2));
    const int64_t top = std::max<int64_t>(1, *std::max_element(counts_->begin(), counts_->end()));
    const double w = bars.width() / static_cast<double>(counts_->size());
    p.setPen(Qt::NoPen);
    p.setBrush(style::colours().accent);
    for (size_t i = 0; i < counts_->size(); ++i) {
      if ((*counts_)[i] == 0) continue;
      const double h = std::max(1.0, bars.height() * static_cast<double>((*counts_)[i]) / static_cast<double>(top));
      p.drawRect(QRectF(bars.left() + i * w, bars.bottom() - h, std::max(1.0, w - 1), h));
    }
    p.setPen(palette().text().color());
    const QStringList axis = labels();
    p.drawText(QRectF(2, 0, width() - 4, text_h), Qt::AlignLeft | Qt::AlignVCenter, axis[0]);
    const QRectF under(2, bars.bottom() + 2, width() - 4, text_h);
    p.drawText(under, Qt::AlignLeft | Qt::AlignVCenter, axis[1]);
    p.drawText(under, Qt::AlignHCenter | Qt::AlignVCenter, axis[2]);
    p.drawText(under, Qt::AlignRight | Qt::AlignVCenter, axis[3]);
  }
  // The highest bar's count, then the values at the left end, the middle and the right end.
  QStringList labels() const {
    if (counts_->empty() || stats_->finite == 0) return {QString(), QString(), QString(), QString()};
    const int64_t top = *std::max_element(counts_->begin(), counts_->end());
    const double lo = stats_->min, hi = stats_->max;
    return {QObject::tr("%1 values").arg(top), number(lo), number((lo + hi) / 2), number(hi)};
  }

 private:
  const std::vector<int64_t>* counts_;
  const ValueStats* stats_;
};

// The heatmap's colour scale: the map's colours from the lowest to the highest value of the
// slice, with those values (and 0 in the middle of a diverging one) under it.
class ColourBar : public QWidget {
 public:
  explicit ColourBar(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(fontMetrics().height() + 12);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  }
  void set_range(double lo, double hi, bool diverging, bool shown) {
    lo_ = lo, hi_ = hi, diverging_ = diverging, shown_ = shown;
    update();
  }
  QStringList labels() const {
    if (!shown_) return {};
    if (diverging_) {
      const double bound = std::max(std::abs(lo_), std::abs(hi_));
      return {number(-bound), QStringLiteral("0"), number(bound)};
    }
    return {number(lo_), number((lo_ + hi_) / 2), number(hi_)};
  }
  void paintEvent(QPaintEvent*) override {
    if (!shown_) return;
    QPainter p(this);
    const QRectF bar(2, 0, width() - 4, 10);
    for (int x = 0; x < static_cast<int>(bar.width()); ++x)
      p.fillRect(QRectF(bar.left() + x, bar.top(), 1, bar.height()),
                 QColor::fromRgb(colour_of(x / std::max(1.0, bar.width() - 1), diverging_)));
    p.setPen(palette().text().color());
    const QStringList l = labels();
    const QRectF under(2, bar.bottom() + 1, width() - 4, height() - bar.height() - 1);
    p.drawText(under, Qt::AlignLeft | Qt::AlignVCenter, l[0]);
    p.drawText(under, Qt::AlignHCenter | Qt::AlignVCenter, l[1]);
    p.drawText(under, Qt::AlignRight | Qt::AlignVCenter, l[2]);
  }

 private:
  double lo_ = 0, hi_ = 0;
  bool diverging_ = false, shown_ = false;
};

}  // namespace

ValueStats value_stats(const Tensor& t) {
  ValueStats s;
  s.count = t.numel();
  double sum = 0, sum2 = 0;
  bool first = true;
  for (double x : t.to_doubles()) {
    if (std::isnan(x)) {
      ++s.nans;
      continue;
    }
    if (std::isinf(x)) {
      ++s.infs;
      continue;
    }
    ++s.finite;
    s.zeros += x == 0;
    if (first) s.min = s.max = x, first = false;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    sum += x;
    sum2 += x * x;
  }
  if (s.finite > 0) {
    s.mean = sum / static_cast<double>(s.finite);
    s.stddev = std::sqrt(std::max(0.0, sum2 / static_cast<double>(s.finite) - s.mean * s.mean));
  }
  return s;
}

std::vector<int64_t> value_histogram(const Tensor& t, const ValueStats& stats, int bins) {
  std::vector<int64_t> counts(static_cast<size_t>(std::max(1, bins)), 0);
  const double span = stats.max - stats.min;
  for (double x : t.to_doubles()) {
    if (!std::isfinite(x)) continue;
    int b = span > 0 ? static_cast<int>((x - stats.min) / span * bins) : 0;
    b = std::clamp(b, 0, static_cast<int>(counts.size()) - 1);
    ++counts[static_cast<size_t>(b)];
  }
  return counts;
}

ValueView::ValueView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setTextFormat(Qt::RichText);
  layout->addWidget(summary_);
  layout->addWidget(new QLabel(tr("Histogram of the finite values"), this));
  histogram_view_ = new HistogramWidget(&histogram_, &stats_, this);
  layout->addWidget(histogram_view_);
  auto* slice_row = new QHBoxLayout();
  slice_label_ = new QLabel(tr("Slice"), this);
  slice_box_ = new QSpinBox(this);
  slice_box_->setMinimum(0);
  slice_row->addWidget(slice_label_);
  slice_row->addWidget(slice_box_);
  slice_row->addStretch(1);
  layout->addLayout(slice_row);
  heatmap_view_ = new QLabel(this);
  heatmap_view_->setMinimumSize(100, 80);
  heatmap_view_->setAlignment(Qt::AlignCenter);
  heatmap_view_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  layout->addWidget(heatmap_view_, 1);
  colour_bar_ = new ColourBar(this);
  layout->addWidget(colour_bar_);
  save_button_ = new QPushButton(tr("Save as .npy\u2026"), this);
  layout->addWidget(save_button_);
  connect(slice_box_, &QSpinBox::valueChanged, this,
          [this](int v) { guarded(this, tr("Value"), [&] { set_slice(v); }); });
  connect(save_button_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Saving the value"), [&] {
      QString base = name_;
      base.replace(QLatin1Char('/'), QLatin1Char('_'));
      const QString path = QFileDialog::getSaveFileName(this, tr("Save value"), base + QStringLiteral(".npy"),
                                                        tr("NumPy (*.npy)"));
      if (path.isEmpty()) return;
      if (Status st = save(path); !st)
        summary_->setText(summary_text() + QStringLiteral("<br><span style='color:#c62828'>%1</span>")
                                               .arg(QString::fromStdString(st.error().to_string()).toHtmlEscaped()));
    });
  });
  clear();
}

void ValueView::clear(const QString& note) {
  has_value_ = false;
  name_.clear();
  value_ = Tensor();
  stats_ = {};
  histogram_.clear();
  heatmap_ = QImage();
  slices_ = 0;
  summary_->setText(note.isEmpty() ? tr("Run the graph (Run panel, with \"Keep every value\"), then click an edge "
                                        "to see its value.")
                                   : note.toHtmlEscaped());
  heatmap_view_->clear();
  static_cast<ColourBar*>(colour_bar_)->set_range(0, 0, false, false);
  slice_box_->setVisible(false);
  slice_label_->setVisible(false);
  save_button_->setEnabled(false);
  histogram_view_->update();
}

void ValueView::set_value(const QString& name, const Tensor& value) {
  name_ = name;
  value_ = value.clone();
  has_value_ = true;
  stats_ = value_stats(value_);
  histogram_ = value_histogram(value_, stats_, kBins);
  slices_ = 1;
  for (int d = 0; d + 2 < value_.rank(); ++d) slices_ *= static_cast<int>(std::min<int64_t>(value_.dim(d), 1 << 20));
  if (value_.rank() == 0) slices_ = 0;
  slice_box_->blockSignals(true);
  slice_box_->setMaximum(std::max(0, slices_ - 1));
  slice_box_->setValue(0);
  slice_box_->blockSignals(false);
  slice_box_->setVisible(slices_ > 1);
  slice_label_->setVisible(slices_ > 1);
  slice_label_->setText(tr("Slice (of %1)").arg(slices_));
  save_button_->setEnabled(true);
  summary_->setText(summary_text());
  histogram_view_->update();
  draw_slice();
}

QString ValueView::summary_text() const {
  if (!has_value_) return summary_->text();  // the note: why nothing is shown
  const QLocale n(QLocale::English);
  if (!value_.is_tensor())  // a sequence or an optional: what it holds
    return QStringLiteral("<b>%1</b><br><tt>%2</tt>")
        .arg(name_.toHtmlEscaped(), QString::fromStdString(runtime::describe_value(value_)).toHtmlEscaped());
  if (value_.dtype() == DType::kString) {  // the first strings; no statistics
    QStringList shown;
    for (int64_t i = 0; i < std::min<int64_t>(value_.numel(), 8); ++i)
      shown << (QLatin1Char('"') + QString::fromStdString(value_.string_at(i)) + QLatin1Char('"')).toHtmlEscaped();
    if (value_.numel() > 8) shown << QStringLiteral("...");
    return QStringLiteral("<b>%1</b><br><tt>string%2</tt>, %3 elements<br>%4")
        .arg(name_.toHtmlEscaped(), QString::fromStdString(shape_to_string(value_.shape())),
             n.toString(static_cast<qlonglong>(value_.numel())), shown.join(QStringLiteral(", ")));
  }
  QString t = QStringLiteral("<b>%1</b><br><tt>%2%3</tt>, %4 elements")
                  .arg(name_.toHtmlEscaped(), QString::fromLatin1(dtype_name(value_.dtype()).data()),
                       QString::fromStdString(shape_to_string(value_.shape())), n.toString(static_cast<qlonglong>(stats_.count)));
  t += QStringLiteral("<br>min %1 &nbsp; max %2<br>mean %3 &nbsp; std %4")
           .arg(number(stats_.min), number(stats_.max), number(stats_.mean), number(stats_.stddev));
  t += QStringLiteral("<br>zeros %1 (%2%)").arg(n.toString(static_cast<qlonglong>(stats_.zeros)))
           .arg(stats_.count ? 100.0 * static_cast<double>(stats_.zeros) / static_cast<double>(stats_.count) : 0.0, 0, 'f', 1);
  if (stats_.nans || stats_.infs)
    t += QStringLiteral("<br><span style='color:#c62828'>NaN %1, infinite %2</span>")
             .arg(n.toString(static_cast<qlonglong>(stats_.nans)), n.toString(static_cast<qlonglong>(stats_.infs)));
  return t;
}

void ValueView::set_slice(int index) {
  if (!has_value_ || slices_ == 0) return;
  index = std::clamp(index, 0, slices_ - 1);
  if (slice_box_->value() != index) {
    slice_box_->blockSignals(true);
    slice_box_->setValue(index);
    slice_box_->blockSignals(false);
  }
  draw_slice();
}

void ValueView::draw_slice() {
  heatmap_ = QImage();
  static_cast<ColourBar*>(colour_bar_)->set_range(0, 0, false, false);
  if (!has_value_ || value_.rank() == 0 || value_.numel() == 0 || value_.dtype() == DType::kString) {
    heatmap_view_->clear();
    return;
  }
  const int64_t h = value_.rank() >= 2 ? value_.dim(value_.rank() - 2) : 1;
  const int64_t w = value_.dim(value_.rank() - 1);
  if (h > 4096 || w > 4096) {
    heatmap_view_->setText(tr("slice of %1 x %2: too large to draw").arg(h).arg(w));
    return;
  }
  const int64_t offset = static_cast<int64_t>(slice_box_->value()) * h * w;
  const std::vector<double> all = value_.to_doubles();
  double lo = 0, hi = 0;
  bool first = true;
  for (int64_t i = 0; i < h * w; ++i) {
    const double x = all[static_cast<size_t>(offset + i)];
    if (!std::isfinite(x)) continue;
    if (first) lo = hi = x, first = false;
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  const bool diverging = lo < 0 && hi > 0;
  const double bound = std::max(std::abs(lo), std::abs(hi));
  static_cast<ColourBar*>(colour_bar_)->set_range(lo, hi, diverging, !first);
  heatmap_ = QImage(static_cast<int>(w), static_cast<int>(h), QImage::Format_RGB32);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const double v = all[static_cast<size_t>(offset + y * w + x)];
      QRgb c = qRgb(255, 0, 255);  // NaN and infinities stand out
      if (std::isfinite(v))
        c = diverging ? colour_of(0.5 + v / (2 * bound), true) : colour_of(hi > lo ? (v - lo) / (hi - lo) : 0.5, false);
      heatmap_.setPixel(static_cast<int>(x), static_cast<int>(y), c);
    }
  const QSize room = heatmap_view_->size().expandedTo(QSize(100, 80));
  // A slice much longer than wide (one row of 768) fills the room rather than a 1-pixel line.
  const bool thin = h * 8 < w || w * 8 < h;
  heatmap_view_->setPixmap(QPixmap::fromImage(
      heatmap_.scaled(room, thin ? Qt::IgnoreAspectRatio : Qt::KeepAspectRatio, Qt::FastTransformation)));
  heatmap_view_->setToolTip(tr("%1 x %2, from %3 to %4%5")
                                .arg(h)
                                .arg(w)
                                .arg(number(lo), number(hi))
                                .arg(diverging ? tr(" (blue below 0, red above)") : QString()));
}

QStringList ValueView::histogram_axis() const { return static_cast<HistogramWidget*>(histogram_view_)->labels(); }

QStringList ValueView::colour_scale() const { return static_cast<ColourBar*>(colour_bar_)->labels(); }

Status ValueView::save(const QString& path) const {
  if (!has_value_) return make_error("no value to save", path.toStdString());
  return formats::write_npy(path.toStdString(), value_);
}

}  // namespace tessera::studio
