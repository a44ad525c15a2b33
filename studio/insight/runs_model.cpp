// The runs dashboard's table model and its sorting, filtering proxy (runs_model.h).
#include "studio/insight/runs_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QFont>
#include <algorithm>
#include <cmath>
#include <set>

namespace tessera::studio {
namespace {

std::optional<double> to_number(const QString& s) {
  bool ok = false;
  const double v = s.trimmed().toDouble(&ok);
  if (!ok || !std::isfinite(v)) return std::nullopt;
  return v;
}

QString number_text(double v) { return QString::number(v, 'g', 6); }

int64_t run_end_ns(const insight::RunRecord& r, int64_t now_ns) {
  if (r.ended_ns > 0) return r.ended_ns;
  if (r.status == "running") return std::max(now_ns, r.heartbeat_ns);
  return r.heartbeat_ns;
}

}  // namespace

QColor run_status_colour(const QString& status) {
  if (status == QLatin1String("running")) return QColor(0x1f, 0x6f, 0xd1);
  if (status == QLatin1String("finished")) return QColor(0x2e, 0x8b, 0x3e);
  if (status == QLatin1String("failed")) return QColor(0xc6, 0x28, 0x28);
  if (status == QLatin1String("crashed")) return QColor(0xd9, 0x6c, 0x00);
  if (status == QLatin1String("stopped")) return QColor(0x8a, 0x6d, 0x00);
  return QColor(0x70, 0x70, 0x70);
}

QString duration_text(double seconds) {
  if (seconds < 0) seconds = 0;
  const int s = static_cast<int>(seconds);
  if (seconds < 60) return QString::number(seconds, 'f', 1) + QLatin1Char('s');
  if (seconds < 3600) return QStringLiteral("%1m%2s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1h%2m").arg(s / 3600).arg((s / 60) % 60, 2, 10, QLatin1Char('0'));
}

RunsTableModel::RunsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsTableModel::set_runs(std::vector<insight::RunSummary> runs, int64_t now_ns) {
  name_counts_.clear();
  for (const auto& r : runs) ++name_counts_[r.run.name];
  std::set<std::string> keys, metrics;
  for (const auto& r : runs) {
    for (const auto& [k, v] : r.hyperparams) keys.insert(k);
    for (const auto& m : r.metrics) metrics.insert(m.name);
  }
  std::vector<std::string> new_keys(keys.begin(), keys.end()), new_metrics(metrics.begin(), metrics.end());
  bool prefix = runs.size() >= runs_.size() && new_keys == keys_ && new_metrics == metrics_;
  for (size_t i = 0; prefix && i < runs_.size(); ++i) prefix = runs_[i].run.id == runs[i].run.id;
  now_ns_ = now_ns;
  if (!prefix) {
    beginResetModel();
    runs_ = std::move(runs);
    keys_ = std::move(new_keys);
    metrics_ = std::move(new_metrics);
    endResetModel();
    return;
  }
  const size_t old_rows = runs_.size();
  for (size_t i = 0; i < old_rows; ++i) runs_[i] = std::move(runs[i]);
  if (old_rows > 0) Q_EMIT dataChanged(index(0, 0), index(static_cast<int>(old_rows) - 1, columnCount() - 1));
  if (runs.size() > old_rows) {
    beginInsertRows({}, static_cast<int>(old_rows), static_cast<int>(runs.size()) - 1);
    for (size_t i = old_rows; i < runs.size(); ++i) runs_.push_back(std::move(runs[i]));
    endInsertRows();
  }
}

const insight::RunSummary* RunsTableModel::run_at(int row) const {
  return row >= 0 && row < static_cast<int>(runs_.size()) ? &runs_[static_cast<size_t>(row)] : nullptr;
}

int RunsTableModel::row_of(int64_t run) const {
  // Ids ascend: binary search.
  auto it = std::lower_bound(runs_.begin(), runs_.end(), run,
                             [](const insight::RunSummary& r, int64_t id) { return r.run.id < id; });
  return it != runs_.end() && it->run.id == run ? static_cast<int>(it - runs_.begin()) : -1;
}

int RunsTableModel::hyperparam_column(const std::string& key) const {
  auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  return it != keys_.end() && *it == key ? kFixedColumns + static_cast<int>(it - keys_.begin()) : -1;
}

int RunsTableModel::metric_column(const std::string& name) const {
  auto it = std::lower_bound(metrics_.begin(), metrics_.end(), name);
  return it != metrics_.end() && *it == name
             ? kFixedColumns + static_cast<int>(keys_.size()) + static_cast<int>(it - metrics_.begin())
             : -1;
}

const insight::MetricSummary* RunsTableModel::metric(const insight::RunSummary& r, const std::string& name) const {
  for (const auto& m : r.metrics)
    if (m.name == name) return &m;
  return nullptr;
}

std::optional<QString> RunsTableModel::field(int row, const QString& key_text) const {
  const insight::RunSummary* r = run_at(row);
  if (!r) return std::nullopt;
  const QString k = key_text.toLower();
  if (k == QLatin1String("id")) return display(*r, kIdColumn);
  if (k == QLatin1String("name")) return display(*r, kNameColumn);
  if (k == QLatin1String("kind")) return display(*r, kKindColumn);
  if (k == QLatin1String("status")) return display(*r, kStatusColumn);
  if (k == QLatin1String("graph")) return display(*r, kGraphColumn);
  const std::string key = key_text.toStdString();
  if (auto it = r->hyperparams.find(key); it != r->hyperparams.end()) return QString::fromStdString(it->second);
  if (const auto* m = metric(*r, key)) return number_text(m->final_value);
  // A metric by its last path component, when one metric name ends so.
  const std::string suffix = "/" + key;
  const insight::MetricSummary* found = nullptr;
  for (const auto& m : r->metrics) {
    if (m.name.size() > suffix.size() && m.name.compare(m.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      if (found) return std::nullopt;  // ambiguous
      found = &m;
    }
  }
  if (found) return number_text(found->final_value);
  return std::nullopt;
}

int RunsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int RunsTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kFixedColumns + static_cast<int>(keys_.size() + metrics_.size());
}

QString RunsTableModel::display(const insight::RunSummary& r, int column) const {
  switch (column) {
    case kIdColumn: return QString::number(r.run.id);
    case kNameColumn: {  // two runs of one name: the id tells them apart
      const QString name = QString::fromStdString(r.run.name);
      auto it = name_counts_.find(r.run.name);
      return it != name_counts_.end() && it->second > 1 ? QStringLiteral("%1 #%2").arg(name).arg(r.run.id) : name;
    }
    case kKindColumn: return QString::fromStdString(r.run.kind);
    case kStatusColumn: return QString::fromStdString(r.run.status);
    case kGraphColumn: {
      QString g = QString::fromStdString(r.run.graph_name);
      if (!r.graph_hash.empty()) g += QLatin1Char(' ') + QString::fromStdString(r.graph_hash.substr(0, 8));
      return g;
    }
    case kStartedColumn:
      return r.run.started_ns > 0
                 ? QDateTime::fromMSecsSinceEpoch(r.run.started_ns / 1'000'000).toString(QStringLiteral("yyyy-MM-dd hh:mm:ss"))
                 : QStringLiteral("-");
    case kDurationColumn: {
      const int64_t end = run_end_ns(r.run, now_ns_);
      if (end <= 0 || r.run.started_ns <= 0) return QStringLiteral("-");
      return duration_text(static_cast<double>(end - r.run.started_ns) / 1e9);
    }
    default: break;
  }
  const int k = column - kFixedColumns;
  if (k >= 0 && k < static_cast<int>(keys_.size())) {
    auto it = r.hyperparams.find(keys_[static_cast<size_t>(k)]);
    return it == r.hyperparams.end() ? QString() : QString::fromStdString(it->second);
  }
  const int m = k - static_cast<int>(keys_.size());
  if (m >= 0 && m < static_cast<int>(metrics_.size())) {
    const auto* s = metric(r, metrics_[static_cast<size_t>(m)]);
    return s ? number_text(s->final_value) : QString();
  }
  return {};
}

QVariant RunsTableModel::sort_value(const insight::RunSummary& r, int column) const {
  switch (column) {
    case kIdColumn: return static_cast<double>(r.run.id);
    case kStartedColumn: return static_cast<double>(r.run.started_ns);
    case kDurationColumn: {
      const int64_t end = run_end_ns(r.run, now_ns_);
      return end > 0 && r.run.started_ns > 0 ? QVariant(static_cast<double>(end - r.run.started_ns)) : QVariant();
    }
    default: break;
  }
  const int m = column - kFixedColumns - static_cast<int>(keys_.size());
  if (m >= 0 && m < static_cast<int>(metrics_.size())) {
    const auto* s = metric(r, metrics_[static_cast<size_t>(m)]);
    return s ? QVariant(s->final_value) : QVariant();
  }
  const QString text = display(r, column);
  if (text.isEmpty() && column >= kFixedColumns) return {};
  if (column >= kFixedColumns)
    if (auto v = to_number(text)) return *v;
  return text;
}

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  const insight::RunSummary* r = index.isValid() ? run_at(index.row()) : nullptr;
  if (!r) return {};
  const int c = index.column();
  switch (role) {
    case Qt::DisplayRole: return display(*r, c);
    case kSortRole: return sort_value(*r, c);
    case kRunIdRole: return static_cast<qint64>(r->run.id);
    case Qt::ForegroundRole:
      if (c == kStatusColumn) return QBrush(run_status_colour(display(*r, c)));
      return {};
    case Qt::FontRole:
      if (c == kStatusColumn) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::TextAlignmentRole:
      if (c == kIdColumn || c == kDurationColumn || c >= kFixedColumns + static_cast<int>(keys_.size()))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case Qt::ToolTipRole:
      if (c == kStatusColumn && !r->run.error.empty()) return QString::fromStdString(r->run.error);
      if (c == kNameColumn) return QString::fromStdString(r->run.command);
      return {};
    default: return {};
  }
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  static const char* const kFixed[] = {"id", "name", "kind", "status", "graph", "started", "duration"};
  if (section >= 0 && section < kFixedColumns) return tr(kFixed[section]);
  const int k = section - kFixedColumns;
  if (k >= 0 && k < static_cast<int>(keys_.size())) return QString::fromStdString(keys_[static_cast<size_t>(k)]);
  const int m = k - static_cast<int>(keys_.size());
  if (m >= 0 && m < static_cast<int>(metrics_.size())) return QString::fromStdString(metrics_[static_cast<size_t>(m)]);
  return {};
}

RunsFilterProxy::RunsFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(RunsTableModel::kSortRole);
  setDynamicSortFilter(true);
}

void RunsFilterProxy::set_query(const QString& query) {
  query_ = query;
  terms_.clear();
  // Longest operators first so that ">=" is not read as ">".
  static const std::pair<const char*, Term::Op> kOps[] = {
      {">=", Term::Op::kGe}, {"<=", Term::Op::kLe}, {"!=", Term::Op::kNe}, {">", Term::Op::kGt},
      {"<", Term::Op::kLt},  {"=", Term::Op::kEq},  {":", Term::Op::kContains}};
  for (const QString& word : query.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    Term t;
    t.value = word;
    int best = -1;
    for (const auto& [text, op] : kOps) {
      const int at = word.indexOf(QLatin1String(text));
      // The earliest operator wins ("a=b>c" is a=("b>c")); at 0 or at the end it is plain text.
      if (at > 0 && at + static_cast<int>(qstrlen(text)) < word.size() && (best < 0 || at < best)) {
        best = at;
        t.op = op;
        t.key = word.left(at);
        t.value = word.mid(at + static_cast<int>(qstrlen(text)));
      }
    }
    terms_.push_back(std::move(t));
  }
  invalidateFilter();
}

bool RunsFilterProxy::matches(const RunsTableModel& model, int row, const Term& t) const {
  if (t.op == Term::Op::kText) {
    for (int c = 0; c < model.columnCount(); ++c)
      if (model.data(model.index(row, c)).toString().contains(t.value, Qt::CaseInsensitive)) return true;
    return false;
  }
  const std::optional<QString> field = model.field(row, t.key);
  if (!field) return false;
  if (t.op == Term::Op::kContains) return field->contains(t.value, Qt::CaseInsensitive);
  const auto a = to_number(*field), b = to_number(t.value);
  if (t.op == Term::Op::kEq || t.op == Term::Op::kNe) {
    const bool eq = a && b ? *a == *b : field->compare(t.value, Qt::CaseInsensitive) == 0;
    return t.op == Term::Op::kEq ? eq : !eq;
  }
  if (!a || !b) return false;
  switch (t.op) {
    case Term::Op::kGt: return *a > *b;
    case Term::Op::kLt: return *a < *b;
    case Term::Op::kGe: return *a >= *b;
    case Term::Op::kLe: return *a <= *b;
    default: return false;
  }
}

bool RunsFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  if (source_parent.isValid() || terms_.empty()) return true;
  const auto* model = qobject_cast<const RunsTableModel*>(sourceModel());
  if (!model) return true;
  for (const Term& t : terms_)
    if (!matches(*model, source_row, t)) return false;
  return true;
}

bool RunsFilterProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(sortRole()), b = right.data(sortRole());
  // Absent values sort after present ones in ascending order.
  if (!a.isValid() || !b.isValid()) return a.isValid() && !b.isValid();
  const bool an = a.typeId() == QMetaType::Double, bn = b.typeId() == QMetaType::Double;
  if (an && bn) return a.toDouble() < b.toDouble();
  if (an != bn) return an;  // numbers before text
  return QString::compare(a.toString(), b.toString(), Qt::CaseInsensitive) < 0;
}

}  // namespace tessera::studio
