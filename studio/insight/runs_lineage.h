// The runs dashboard's lineage view: a tree of the whole database's history. Graph versions at the
// top (a graph derived from another says so), under each graph the runs that started from it, under
// each run its checkpoints, and under a checkpoint the runs resumed or fine-tuned from it, and so on.
// Clicking a run emits run_activated (the dashboard selects it in the table).
//
//   RunsLineageView view;
//   view.set_lineage(*insight::load_lineage(db));
//   connect(&view, &RunsLineageView::run_activated, ...);
#pragma once

#include <QTreeWidget>
#include <cstdint>
#include <string>

#include "insight/runs_query.h"

namespace tessera::studio {

class RunsLineageView : public QTreeWidget {
  Q_OBJECT

 public:
  // data(0, kRunIdRole) of a run's item: its id (qint64); absent on other items.
  static constexpr int kRunIdRole = Qt::UserRole + 1;

  explicit RunsLineageView(QWidget* parent = nullptr);

  // Rebuilds the tree (everything expanded) unless the lineage is the same as last time, so that
  // the live poll does not collapse what the user folded.
  void set_lineage(const insight::LineageGraph& lineage);
  // The item of run `id` (the first, where a run appears twice); nullptr when absent.
  QTreeWidgetItem* item_for_run(int64_t id) const;
  // Selects and shows the items of these runs (no signal).
  void mark_runs(const std::vector<int64_t>& runs);

 Q_SIGNALS:
  void run_activated(qint64 run);

 private:
  std::string signature_;
};

}  // namespace tessera::studio
