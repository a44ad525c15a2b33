// The runs dashboard's lineage tree (runs_lineage.h).
#include "studio/insight/runs_lineage.h"

#include <QHeaderView>
#include <QSignalBlocker>
#include <QTreeWidgetItemIterator>
#include <functional>
#include <map>
#include <set>

#include "studio/insight/runs_model.h"

namespace tessera::studio {
namespace {

QString short_hash(const std::string& h) { return QString::fromStdString(h.substr(0, 8)); }

// A text that changes when anything the tree shows changes.
std::string signature(const insight::LineageGraph& g) {
  std::string s;
  for (const auto& x : g.graphs) s += x.hash + ";";
  for (const auto& r : g.runs) s += std::to_string(r.id) + r.name + r.status + r.graph_hash + ";";
  for (const auto& c : g.checkpoints) s += std::to_string(c.id) + ";";
  for (const auto& e : g.edges) s += e.kind + std::to_string(e.from_run) + "," + std::to_string(e.checkpoint) + e.checkpoint_path + e.from_graph + e.to_graph + ";";
  return s;
}

}  // namespace

RunsLineageView::RunsLineageView(QWidget* parent) : QTreeWidget(parent) {
  setColumnCount(2);
  setHeaderLabels({tr("graph / run / checkpoint"), tr("details")});
  header()->setStretchLastSection(true);
  setUniformRowHeights(true);
  connect(this, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item, int) {
    const QVariant id = item ? item->data(0, kRunIdRole) : QVariant();
    if (id.isValid()) Q_EMIT run_activated(id.toLongLong());
  });
}

void RunsLineageView::set_lineage(const insight::LineageGraph& g) {
  std::string sig = signature(g);
  if (sig == signature_ && topLevelItemCount() > 0) return;
  signature_ = std::move(sig);
  clear();

  std::map<int64_t, const insight::LineageGraph::Run*> runs;
  for (const auto& r : g.runs) runs[r.id] = &r;
  std::map<int64_t, std::vector<const insight::CheckpointRecord*>> checkpoints_of;  // by run
  for (const auto& c : g.checkpoints) checkpoints_of[c.run].push_back(&c);
  std::map<int64_t, std::vector<const insight::LineageGraph::Edge*>> continued_from;  // by checkpoint id
  std::map<int64_t, const insight::LineageGraph::Edge*> parent_edge;                  // by run
  std::map<std::string, std::string> derived_from;                                    // graph -> graph
  for (const auto& e : g.edges) {
    if (!e.from_graph.empty()) {
      derived_from[e.to_graph] = e.from_graph;
      continue;
    }
    if (e.checkpoint > 0) continued_from[e.checkpoint].push_back(&e);
    parent_edge.emplace(e.from_run, &e);
  }

  std::set<int64_t> placed;
  std::function<void(QTreeWidgetItem*, int64_t, const QString&)> add_run = [&](QTreeWidgetItem* parent, int64_t id,
                                                                               const QString& how) {
    auto it = runs.find(id);
    if (it == runs.end() || !placed.insert(id).second) return;
    const auto& r = *it->second;
    auto* item = new QTreeWidgetItem(parent);
    item->setText(0, tr("run %1 %2").arg(id).arg(QString::fromStdString(r.name)));
    item->setText(1, how.isEmpty() ? QString::fromStdString(r.status) : how + QStringLiteral(", ") + QString::fromStdString(r.status));
    item->setForeground(1, run_status_colour(QString::fromStdString(r.status)));
    item->setData(0, kRunIdRole, static_cast<qint64>(id));
    item->setToolTip(0, tr("Click to select run %1 in the table").arg(id));
    for (const insight::CheckpointRecord* c : checkpoints_of[id]) {
      auto* ck = new QTreeWidgetItem(item);
      ck->setText(0, tr("checkpoint step %1").arg(c->step));
      ck->setText(1, QString::fromStdString(c->path));
      ck->setToolTip(1, QString::fromStdString(c->path + " (" + c->checksum + ")"));
      for (const auto* e : continued_from[c->id])
        add_run(ck, e->from_run, QString::fromStdString(e->kind == "resumed_from" ? "resumed" : e->kind == "fine_tuned_from" ? "fine-tuned" : e->kind));
    }
  };
  // A run with a parent edge to a recorded checkpoint appears under that checkpoint; the others
  // under their graph (an unrecorded checkpoint path is said in the details).
  auto is_continuation = [&](int64_t id) {
    auto it = parent_edge.find(id);
    return it != parent_edge.end() && it->second->checkpoint > 0;
  };
  std::set<std::string> known_graphs;
  auto add_graph = [&](const std::string& hash, const QString& name) {
    auto* item = new QTreeWidgetItem(this);
    item->setText(0, tr("graph %1 %2").arg(name, short_hash(hash)));
    if (auto d = derived_from.find(hash); d != derived_from.end())
      item->setText(1, tr("derived from %1").arg(short_hash(d->second)));
    QFont f = item->font(0);
    f.setBold(true);
    item->setFont(0, f);
    for (const auto& r : g.runs) {
      if (r.graph_hash != hash || is_continuation(r.id)) continue;
      QString how;
      if (auto pe = parent_edge.find(r.id); pe != parent_edge.end() && !pe->second->checkpoint_path.empty())
        how = tr("resumed from %1 (not recorded)").arg(QString::fromStdString(pe->second->checkpoint_path));
      add_run(item, r.id, how);
    }
  };
  for (const auto& gr : g.graphs) {
    known_graphs.insert(gr.hash);
    add_graph(gr.hash, QString::fromStdString(gr.name));
  }
  bool orphans = false;
  for (const auto& r : g.runs)
    if (!known_graphs.count(r.graph_hash) && !is_continuation(r.id)) orphans = true;
  if (orphans) {
    auto* item = new QTreeWidgetItem(this);
    item->setText(0, tr("no recorded graph"));
    for (const auto& r : g.runs)
      if (!known_graphs.count(r.graph_hash) && !is_continuation(r.id)) add_run(item, r.id, {});
  }
  // Continuations whose parent chain never reached a placed run (a cycle): still listed.
  for (const auto& r : g.runs)
    if (!placed.count(r.id)) {
      auto* item = new QTreeWidgetItem(this);
      item->setText(0, tr("unplaced"));
      add_run(item, r.id, {});
    }
  expandAll();
  resizeColumnToContents(0);
}

QTreeWidgetItem* RunsLineageView::item_for_run(int64_t id) const {
  for (QTreeWidgetItemIterator it(const_cast<RunsLineageView*>(this)); *it; ++it)
    if ((*it)->data(0, kRunIdRole).toLongLong() == id && (*it)->data(0, kRunIdRole).isValid()) return *it;
  return nullptr;
}

void RunsLineageView::mark_runs(const std::vector<int64_t>& runs) {
  const QSignalBlocker block(this);
  clearSelection();
  QTreeWidgetItem* first = nullptr;
  for (int64_t id : runs)
    if (QTreeWidgetItem* item = item_for_run(id)) {
      item->setSelected(true);
      if (!first) first = item;
    }
  if (first) scrollToItem(first);
}

}  // namespace tessera::studio
