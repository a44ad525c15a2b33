// The memory plan chart: geometry, painting and tooltips (see memory_plan_chart.h).
#include "studio/insight/memory_plan_chart.h"

#include <cmath>

#include <QComboBox>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace tessera::studio {
namespace {

int last_step(const stages::BufferRequest& r, int num_steps) {
  if (r.pinned) return std::max(num_steps - 1, r.def_step);
  int last = r.def_step;
  for (int u : r.use_steps) last = std::max(last, u);
  return last;
}

QColor buffer_colour(int i) {
  return QColor::fromHsv((i * 47) % 360, 90, 230);
}

}  // namespace

QString format_bytes(size_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return QString("%1 B").arg(bytes);
  if (b < 1024.0 * 1024) return QString("%1 KiB").arg(b / 1024, 0, 'f', 1);
  if (b < 1024.0 * 1024 * 1024) return QString("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 2);
  return QString("%1 GiB").arg(b / (1024.0 * 1024 * 1024), 0, 'f', 2);
}

MemoryPlanChart::MemoryPlanChart(QWidget* parent) : QWidget(parent), selector_(new QComboBox(this)) {
  selector_->move(4, 4);
  selector_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(selector_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
    current_ = i;
    update();
  });
  setMinimumSize(240, 160);
  setMouseTracking(true);
}

void MemoryPlanChart::set_plans(std::vector<DeviceMemory> plans) {
  plans_ = std::move(plans);
  const QSignalBlocker block(selector_);
  selector_->clear();
  for (const DeviceMemory& d : plans_) selector_->addItem(QString::fromStdString(d.device));
  current_ = plans_.empty() ? -1 : 0;
  selector_->setCurrentIndex(current_);
  selector_->adjustSize();
  update();
}

void MemoryPlanChart::set_current_device(int index) {
  if (index < 0 || index >= static_cast<int>(plans_.size())) return;
  selector_->setCurrentIndex(index);  // emits, which sets current_
  current_ = index;
  update();
}

const DeviceMemory* MemoryPlanChart::current() const {
  return current_ >= 0 && current_ < static_cast<int>(plans_.size()) ? &plans_[static_cast<size_t>(current_)]
                                                                     : nullptr;
}

size_t MemoryPlanChart::y_max() const {
  const DeviceMemory* d = current();
  if (!d) return 1;
  size_t top = std::max(d->plan.arena_bytes, d->plan.lower_bound_bytes);
  for (size_t i = 0; i < d->requests.size() && i < d->plan.offsets.size(); ++i)
    top = std::max(top, d->plan.offsets[i] + d->requests[i].bytes);
  return std::max<size_t>(top, 1);
}

QRectF MemoryPlanChart::plot_rect() const {
  return QRectF(kMarginLeft, kMarginTop, std::max(1.0, width() - kMarginLeft - kMarginRight),
                std::max(1.0, height() - kMarginTop - kMarginBottom));
}

double MemoryPlanChart::y_of(size_t bytes) const {
  const QRectF p = plot_rect();
  return p.bottom() - p.height() * static_cast<double>(bytes) / static_cast<double>(y_max());
}

QRectF MemoryPlanChart::buffer_rect(int request) const {
  const DeviceMemory* d = current();
  if (!d || request < 0 || request >= static_cast<int>(d->requests.size()) ||
      request >= static_cast<int>(d->plan.offsets.size()))
    return {};
  const stages::BufferRequest& r = d->requests[static_cast<size_t>(request)];
  const QRectF p = plot_rect();
  const int steps = std::max({d->num_steps, r.def_step + 1, 1});
  const double step_w = p.width() / steps;
  const double x0 = p.left() + step_w * r.def_step;
  const double x1 = p.left() + step_w * (last_step(r, steps) + 1);
  const size_t off = d->plan.offsets[static_cast<size_t>(request)];
  return QRectF(QPointF(x0, y_of(off + r.bytes)), QPointF(x1, y_of(off)));
}

int MemoryPlanChart::buffer_at(QPointF pos) const {
  const DeviceMemory* d = current();
  if (!d) return -1;
  for (int i = static_cast<int>(d->requests.size()) - 1; i >= 0; --i)
    if (buffer_rect(i).contains(pos)) return i;
  return -1;
}

bool MemoryPlanChart::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int i = buffer_at(help->pos());
    if (i < 0) {
      QToolTip::hideText();
    } else {
      const DeviceMemory& d = *current();
      const stages::BufferRequest& r = d.requests[static_cast<size_t>(i)];
      QToolTip::showText(help->globalPos(),
                         tr("%1\n%2 at offset %3\nsteps %4 to %5%6")
                             .arg(QString::fromStdString(r.label.empty() ? "buffer " + std::to_string(i) : r.label))
                             .arg(format_bytes(r.bytes))
                             .arg(format_bytes(d.plan.offsets[static_cast<size_t>(i)]))
                             .arg(r.def_step)
                             .arg(last_step(r, d.num_steps))
                             .arg(r.pinned ? tr(" (pinned)") : QString()),
                         this);
    }
    return true;
  }
  return QWidget::event(e);
}

void MemoryPlanChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const DeviceMemory* d = current();
  p.setPen(palette().text().color());
  if (!d) {
    p.drawText(rect(), Qt::AlignCenter, tr("No memory plan (compile the graph)"));
    return;
  }
  const QRectF plot = plot_rect();
  p.setPen(palette().mid().color());
  p.drawRect(plot);
  // Buffers. Rectangles thinner than a pixel are still drawn one pixel high.
  p.setRenderHint(QPainter::Antialiasing, false);
  for (int i = 0; i < static_cast<int>(d->requests.size()); ++i) {
    QRectF r = buffer_rect(i);
    if (r.isEmpty() && r.width() <= 0) continue;
    if (r.height() < 1) r.setTop(r.bottom() - 1);
    p.fillRect(r, buffer_colour(i));
    p.setPen(QColor(60, 60, 60, 140));
    p.drawRect(r);
  }
  // Peak and lower bound.
  p.setRenderHint(QPainter::Antialiasing, true);
  // Two lines closer than a text line apart: the second's labels go below it, not over the first's.
  const int text_h = p.fontMetrics().height();
  auto hline = [&](size_t bytes, QColor colour, const QString& label, bool below) {
    const double y = y_of(bytes);
    p.setPen(QPen(colour, 1.5, Qt::DashLine));
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.setPen(colour);
    const double shift = below ? text_h : 0;
    p.drawText(QRectF(2, y - 9 + shift, kMarginLeft - 6, 18), Qt::AlignRight | Qt::AlignVCenter, format_bytes(bytes));
    p.drawText(QPointF(plot.right() - p.fontMetrics().horizontalAdvance(label) - 4, y - 4 + shift), label);
  };
  hline(d->plan.arena_bytes, QColor(200, 40, 40), tr("peak (arena) %1").arg(format_bytes(d->plan.arena_bytes)), false);
  if (d->plan.lower_bound_bytes != d->plan.arena_bytes)
    hline(d->plan.lower_bound_bytes, QColor(30, 120, 30), tr("lower bound %1").arg(format_bytes(d->plan.lower_bound_bytes)),
          std::abs(y_of(d->plan.lower_bound_bytes) - y_of(d->plan.arena_bytes)) < text_h + 2);
  p.setPen(palette().text().color());
  // The caption across the whole width (not the plot's alone), shortened to what fits: a narrow
  // pane must never cut its start off.
  const QRectF caption(2, plot.bottom() + 4, width() - 4, kMarginBottom - 4);
  QString text = tr("step (0 .. %1), %2 buffers, %3 without reuse")
                     .arg(std::max(0, d->num_steps - 1))
                     .arg(d->requests.size())
                     .arg(format_bytes(d->plan.total_bytes));
  if (p.fontMetrics().horizontalAdvance(text) > caption.width())
    text = tr("%1 steps, %2 buffers").arg(d->num_steps).arg(d->requests.size());
  p.drawText(caption, Qt::AlignHCenter | Qt::AlignTop,
             p.fontMetrics().elidedText(text, Qt::ElideRight, static_cast<int>(caption.width())));
  setToolTip(tr("step (0 .. %1), %2 buffers, %3 without reuse")
                 .arg(std::max(0, d->num_steps - 1))
                 .arg(d->requests.size())
                 .arg(format_bytes(d->plan.total_bytes)));
  p.drawText(QRectF(2, plot.bottom() - 9, kMarginLeft - 6, 18), Qt::AlignRight | Qt::AlignVCenter, "0");
}

}  // namespace tessera::studio
