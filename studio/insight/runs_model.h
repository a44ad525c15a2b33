// The runs dashboard's table: RunsTableModel lists the runs of an insight database (one row per
// run; columns id, name, kind, status, graph, started, duration, then every hyper-parameter key and
// every metric's final value, the union over runs), and RunsFilterProxy sorts it (numerically where
// the values are numbers) and filters it with a small query language.
//
// Query: whitespace-separated terms, all of which must hold.
//   text            a substring (case-insensitive) of any cell of the row
//   key:text        a substring of the field `key` (status:crash, name:lenet, optimizer:adam)
//   key=value       the field equals value (numerically when both are numbers: lr=0.01 matches 1e-2)
//   key!=value
//   key>v key<v key>=v key<=v   numeric comparisons (accuracy>0.8)
// Fields: id, name, kind, status, graph, a hyper-parameter key or a metric name; a metric may be
// named by its last path component ("accuracy" for "train/accuracy") when that is unambiguous.
// A run without the field fails the term.
//
//   RunsTableModel model;  model.set_runs(std::move(*insight::load_run_summaries(db)));
//   RunsFilterProxy proxy;  proxy.setSourceModel(&model);  proxy.set_query("lr>=0.01 status:finished");
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QString>
#include <cstdint>
#include <optional>
#include <string>
#include <map>
#include <vector>

#include "insight/runs_query.h"

namespace tessera::studio {

class RunsTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kIdColumn, kNameColumn, kKindColumn, kStatusColumn, kGraphColumn, kStartedColumn,
                kDurationColumn, kFixedColumns };
  // data(): the value to sort by (double for numbers and times, else QString; invalid when absent).
  static constexpr int kSortRole = Qt::UserRole + 1;
  // data(): the run's id (qint64), any column.
  static constexpr int kRunIdRole = Qt::UserRole + 2;

  explicit RunsTableModel(QObject* parent = nullptr);

  // Replaces the runs (by id ascending, as load_run_summaries gives them). When the columns are the
  // same and the old ids are a prefix of the new ones, rows are updated in place (dataChanged) and
  // new runs inserted (rowsInserted), so views keep their selection and scroll; otherwise the model
  // resets. `now_ns` (wall clock) is the end of a running run's duration.
  void set_runs(std::vector<insight::RunSummary> runs, int64_t now_ns);

  const std::vector<insight::RunSummary>& runs() const { return runs_; }
  const insight::RunSummary* run_at(int row) const;
  int row_of(int64_t run) const;  // -1 when absent
  const std::vector<std::string>& hyperparam_keys() const { return keys_; }
  const std::vector<std::string>& metric_names() const { return metrics_; }
  // The column of a hyper-parameter key or a metric's final value; -1 when absent.
  int hyperparam_column(const std::string& key) const;
  int metric_column(const std::string& name) const;

  // The text of field `key` for a row (see the query language above); nullopt when the run lacks it.
  std::optional<QString> field(int row, const QString& key) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::map<std::string, int> name_counts_;  // runs per name
  QString display(const insight::RunSummary& r, int column) const;
  QVariant sort_value(const insight::RunSummary& r, int column) const;
  const insight::MetricSummary* metric(const insight::RunSummary& r, const std::string& name) const;

  std::vector<insight::RunSummary> runs_;
  std::vector<std::string> keys_, metrics_;  // sorted
  int64_t now_ns_ = 0;
};

// The colour a run status is shown in (running blue, finished green, failed red, crashed orange).
QColor run_status_colour(const QString& status);
// "12.3s", "4m05s", "2h03m" as `tessera runs list` writes durations.
QString duration_text(double seconds);

class RunsFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit RunsFilterProxy(QObject* parent = nullptr);
  // Sets the query (see the top of this file) and refilters.
  void set_query(const QString& query);
  const QString& query() const { return query_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  struct Term {
    enum class Op { kText, kContains, kEq, kNe, kGt, kLt, kGe, kLe } op = Op::kText;
    QString key, value;
  };
  bool matches(const RunsTableModel& model, int row, const Term& t) const;

  QString query_;
  std::vector<Term> terms_;
};

}  // namespace tessera::studio
