// The runs dashboard's compare table (runs_compare.h).
#include "studio/insight/runs_compare.h"

#include <QBrush>
#include <QFont>
#include <QHeaderView>
#include <algorithm>
#include <set>

namespace tessera::studio {
namespace {

const QColor kDiffers(255, 236, 179);  // amber, readable in both themes' text colours

QString number(double v) { return QString::number(v, 'g', 6); }

}  // namespace

RunsCompareTable::RunsCompareTable(QWidget* parent) : QTableWidget(parent) {
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionMode(QAbstractItemView::NoSelection);
  verticalHeader()->hide();
  verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  horizontalHeader()->setStretchLastSection(true);
  setTextElideMode(Qt::ElideMiddle);  // paths keep their start and their end
  setAlternatingRowColors(false);
  setWordWrap(false);
}

void RunsCompareTable::set_runs(const std::vector<const insight::RunSummary*>& runs,
                                const std::map<int64_t, std::vector<insight::MetricSummary>>& full) {
  clear();
  std::vector<std::pair<QString, std::vector<QString>>> rows;
  auto add = [&](const QString& key, auto get) {
    std::vector<QString> v;
    for (const insight::RunSummary* r : runs) v.push_back(get(*r));
    rows.emplace_back(key, std::move(v));
  };
  add(tr("name"), [](const insight::RunSummary& r) { return QString::fromStdString(r.run.name); });
  add(tr("status"), [](const insight::RunSummary& r) { return QString::fromStdString(r.run.status); });
  add(tr("graph"), [](const insight::RunSummary& r) {
    return QString::fromStdString(r.run.graph_name + (r.graph_hash.empty() ? "" : " " + r.graph_hash.substr(0, 8)));
  });
  add(tr("seed"), [](const insight::RunSummary& r) { return QString::number(r.run.seed); });
  std::set<std::string> keys, names;
  for (const insight::RunSummary* r : runs) {
    for (const auto& [k, v] : r->hyperparams) keys.insert(k);
    for (const auto& m : r->metrics) names.insert(m.name);
    if (auto it = full.find(r->run.id); it != full.end())
      for (const auto& m : it->second) names.insert(m.name);
  }
  for (const std::string& k : keys)
    add(QString::fromStdString(k), [&](const insight::RunSummary& r) {
      auto it = r.hyperparams.find(k);
      return it == r.hyperparams.end() ? QStringLiteral("-") : QString::fromStdString(it->second);
    });
  for (const std::string& n : names) {
    for (const bool best : {false, true}) {
      add(QString::fromStdString(n) + (best ? tr(" (best)") : tr(" (final)")), [&](const insight::RunSummary& r) {
        if (auto it = full.find(r.run.id); it != full.end()) {
          for (const auto& m : it->second)
            if (m.name == n) return number(best ? m.best_value : m.final_value);
          return QStringLiteral("-");
        }
        if (best) return QStringLiteral("-");
        for (const auto& m : r.metrics)
          if (m.name == n) return number(m.final_value);
        return QStringLiteral("-");
      });
    }
  }
  setColumnCount(static_cast<int>(runs.size()) + 1);
  setRowCount(static_cast<int>(rows.size()));
  QStringList headers{tr("")};
  for (const insight::RunSummary* r : runs) headers << tr("run %1").arg(r->run.id);
  setHorizontalHeaderLabels(headers);
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const auto& [key, values] = rows[static_cast<size_t>(i)];
    const bool differs = std::any_of(values.begin(), values.end(), [&](const QString& x) { return x != values[0]; });
    auto* k = new QTableWidgetItem(key);
    k->setData(Qt::UserRole, differs);
    if (differs) {
      QFont f = k->font();
      f.setBold(true);
      k->setFont(f);
    }
    setItem(i, 0, k);
    for (size_t c = 0; c < values.size(); ++c) {
      auto* item = new QTableWidgetItem(values[c]);
      item->setToolTip(values[c]);  // the whole text where the column elides it
      if (differs) {
        item->setBackground(kDiffers);
        item->setForeground(QBrush(Qt::black));
      }
      setItem(i, static_cast<int>(c) + 1, item);
    }
    if (differs) {
      k->setBackground(kDiffers);
      k->setForeground(QBrush(Qt::black));
    }
  }
  resizeColumnsToContents();
  natural_widths_.clear();
  for (int c = 0; c < columnCount(); ++c) natural_widths_.push_back(columnWidth(c));
  fit_columns();
}

void RunsCompareTable::fit_columns() {
  // Every run's column on screen: when the contents are wider than the table, the key column
  // takes at most 40 % and the runs share the rest (long values elided, whole in the tooltip).
  const int n = static_cast<int>(natural_widths_.size());
  if (n < 2) return;
  const int room = viewport()->width();
  int natural = 0;
  for (int w : natural_widths_) natural += w;
  if (natural <= room) {
    for (int c = 0; c < n; ++c) setColumnWidth(c, natural_widths_[static_cast<size_t>(c)]);
    return;
  }
  const int key = std::min(natural_widths_[0], std::max(60, room * 2 / 5));
  setColumnWidth(0, key);
  const int each = std::max(48, (room - key) / (n - 1));
  for (int c = 1; c < n; ++c) setColumnWidth(c, std::min(natural_widths_[static_cast<size_t>(c)], each));
}

void RunsCompareTable::resizeEvent(QResizeEvent* event) {
  QTableWidget::resizeEvent(event);
  fit_columns();
}

QStringList RunsCompareTable::differing_keys() const {
  QStringList out;
  for (int i = 0; i < rowCount(); ++i)
    if (item(i, 0) && item(i, 0)->data(Qt::UserRole).toBool()) out << item(i, 0)->text();
  return out;
}

QStringList RunsCompareTable::keys() const {
  QStringList out;
  for (int i = 0; i < rowCount(); ++i)
    if (item(i, 0)) out << item(i, 0)->text();
  return out;
}

}  // namespace tessera::studio
