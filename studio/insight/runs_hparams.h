// The dashboard's HParams view: hyper-parameters against a metric in parallel coordinates, as
// TensorBoard's HParams and MindInsight's lineage show a sweep. One vertical axis per
// hyper-parameter whose value differs between the runs shown (numbers on a linear axis, or a log
// one when all are positive and span more than 100x; other values evenly spaced in sorted order),
// then the chosen metric's final value; one polyline per run, coloured from blue (lowest metric)
// to red (highest); selected runs drawn thick, the others thin. A click near a line selects its
// run (run_clicked); hovering names it.
//
//   HParamsView view;
//   view.set_runs(summaries, {3, 7});        // what the table shows; the selected ids
//   view.set_metric("test/accuracy");        // default: a loss, else the first metric
//   view.axes();                             // {"lr", "optimizer", "test/accuracy"}
#pragma once

#include <QPointF>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "insight/runs_query.h"

class QComboBox;

namespace tessera::studio {

class HParamsView : public QWidget {
  Q_OBJECT

 public:
  explicit HParamsView(QWidget* parent = nullptr);

  // The runs to draw (copied) and which of them are selected.
  void set_runs(const std::vector<insight::RunSummary>& runs, const std::set<int64_t>& selected);
  // Only which runs are selected (thick lines): no copy of the runs, no new layout.
  void set_selected(const std::set<int64_t>& selected);
  void set_metric(const QString& metric);
  QString metric() const { return metric_; }
  QStringList metric_names() const;
  // The metric shown until the user picks one (see runs_hparams.cpp).
  QString default_metric(const QStringList& names) const;
  // The axes drawn, left to right (the varying hyper-parameters, then the metric).
  const QStringList& axes() const { return axes_; }
  // Where run `id`'s line crosses each axis, in widget coordinates (empty when it is not drawn:
  // a run without the metric).
  std::vector<QPointF> line(int64_t id) const;
  int64_t run_at(QPointF p) const;  // the run whose line passes within 5 px; -1: none

 Q_SIGNALS:
  void run_clicked(qint64 id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;  // tooltips

 private:
  void layout_lines();
  QRectF plot_rect() const;

  std::vector<insight::RunSummary> runs_;
  std::set<int64_t> selected_;
  QString metric_;
  QStringList axes_;
  std::map<int64_t, std::vector<QPointF>> lines_;
  std::map<int64_t, double> metric_of_;
  double metric_lo_ = 0, metric_hi_ = 0;
  std::vector<QStringList> ticks_;  // per axis: labels at the bottom and top (and categories)
  QComboBox* metric_box_ = nullptr;
  bool updating_ = false;
  bool user_picked_ = false;  // the metric was chosen (set_metric): kept while the runs have it
};

}  // namespace tessera::studio
