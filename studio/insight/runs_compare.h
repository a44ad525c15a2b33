// The runs dashboard's compare table: the selected runs side by side (a column per run), one row
// per run field, hyper-parameter and metric summary (final and best), with the rows whose values
// differ between the runs highlighted, as `tessera runs compare` marks them with '*'.
//
//   RunsCompareTable table;
//   table.set_runs({&summary3, &summary4}, {{3, summarize_metrics(points3)}, {4, ...}});
//   table.differing_keys();   // {"lr", "train/loss (final)", ...}
#pragma once

#include <QStringList>
#include <QTableWidget>
#include <cstdint>
#include <map>
#include <vector>

#include "insight/runs_query.h"

namespace tessera::studio {

class RunsCompareTable : public QTableWidget {
  Q_OBJECT

 public:
  explicit RunsCompareTable(QWidget* parent = nullptr);

  // `runs` are borrowed for the call only. `full` holds, per run, the summaries with best values
  // (summarize_metrics over all points); a run absent from it shows the final values of its
  // RunSummary and "-" as best.
  void set_runs(const std::vector<const insight::RunSummary*>& runs,
                const std::map<int64_t, std::vector<insight::MetricSummary>>& full);

  // The keys (first column) of the highlighted rows, top to bottom.
  QStringList differing_keys() const;
  // The keys of every row, top to bottom.
  QStringList keys() const;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void fit_columns();
  std::vector<int> natural_widths_;  // by column, as resizeColumnsToContents made them
};

}  // namespace tessera::studio
