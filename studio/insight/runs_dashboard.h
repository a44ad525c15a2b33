// The runs dashboard: every run of an insight database in a sortable, filterable table (runs_model.h);
// selecting runs fills a compare area with their hyper-parameters side by side (runs_compare.h),
// their metric curves overlaid (runs_chart.h) and the database's lineage (runs_lineage.h). It asks
// for a run's recorded graph to be opened, or two runs' graphs diffed, through signals, and follows
// a run while it trains: a poll every kPollIntervalMs checks PRAGMA data_version on its kept
// connection and re-reads rows, statuses and curves when another process committed, keeping the
// selection and the scroll position.
//
// Errors never leave the view: a missing database, a corrupt or foreign file, a database locked
// by a writer and runs without metrics are said in the message line above the table (and returned
// by open_database); the poll retries a database that could not be read.
//
//   RunsDashboard dash;
//   connect(&dash, &RunsDashboard::open_graph_requested, window, [](GraphDocument doc, QString title) {...});
//   if (Status st = dash.open_database(path); !st) ...   // the message is shown in the view too
#pragma once

#include <QMetaType>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "formats/document.h"
#include "insight/database.h"
#include "insight/query.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QTabWidget;
class QTableView;
class QTimer;

namespace tessera::studio {

class HParamsView;
class MetricChart;
class RunsCompareTable;
class RunsFilterProxy;
class RunsLineageView;
class RunsTableModel;

class RunsDashboard : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kPollIntervalMs = 1000;
  // How long a read waits for a writer's lock before saying so (the UI thread must not freeze).
  static constexpr int kBusyTimeoutMs = 250;

  explicit RunsDashboard(QWidget* parent = nullptr);
  ~RunsDashboard() override;

  // Opens the database at `path` (never creating one: a missing file is reported) and shows its
  // runs; the poll starts. On error the view shows the message and keeps polling for the file.
  Status open_database(const QString& path);
  const QString& database_path() const { return path_; }
  // Re-reads the runs (and the curves and lineage of the selection) now.
  Status refresh();
  // The change check the timer runs: re-opens a database that could not be opened, refreshes when
  // another connection committed. Public for tests (instead of waiting for the timer).
  void poll();

  // The selected runs' ids, in the table's (sorted) order.
  std::vector<int64_t> selected_runs() const;
  void select_runs(const std::vector<int64_t>& runs);

  // Parses run `run`'s recorded graph and emits open_graph_requested (the error is shown too).
  Status open_graph(int64_t run);
  // Both runs' graphs, then diff_graphs_requested.
  Status diff_graphs(int64_t a, int64_t b);
  // The recorded graph of a run as a document (IR text parsed; params appear as graph inputs).
  Expected<formats::GraphDocument> graph_document(int64_t run);

  // What the view shows, for tests and the main window.
  QString message() const;
  RunsTableModel* model() const { return model_; }
  RunsFilterProxy* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QLineEdit* search_box() const { return search_; }
  RunsCompareTable* compare_table() const { return compare_; }
  MetricChart* chart() const { return chart_; }
  RunsLineageView* lineage_view() const { return lineage_; }
  QTabWidget* tabs() const { return tabs_; }
  // Right of the compare area: the curve, the small multiples (every metric of the selected runs,
  // a compact chart each) and the HParams view (every run shown in the table).
  QTabWidget* chart_tabs() const { return chart_tabs_; }
  const std::vector<MetricChart*>& small_multiples() const { return multiples_; }
  HParamsView* hparams_view() const { return hparams_; }
  QTimer* poll_timer() const { return timer_; }
  QPushButton* open_graph_button() const { return open_button_; }
  QPushButton* diff_button() const { return diff_button_; }

 Q_SIGNALS:
  void open_graph_requested(tessera::formats::GraphDocument document, QString title);
  // `a_label` and `b_label` name the two sides ("run 3: lenet adam lr 0.01").
  void diff_graphs_requested(tessera::formats::GraphDocument a, tessera::formats::GraphDocument b, QString title,
                             QString a_label, QString b_label);
  // The selection changed (ids in table order).
  void selection_changed(QList<qint64> runs);

 private:
  void show_message(const QString& text, bool error);
  void update_selection_views();
  void update_buttons();
  void update_count();
  Status reload_lineage();
  // What the compare area shows of these runs (status, hyper-parameters, last metric steps):
  // unchanged means nothing to redraw.
  std::string selection_signature(const std::vector<int64_t>& runs) const;

  QString path_;
  std::unique_ptr<insight::Database> db_;
  std::optional<int64_t> data_version_;
  QString error_;  // the last open or read error; cleared by a successful refresh

  RunsTableModel* model_ = nullptr;
  RunsFilterProxy* proxy_ = nullptr;
  QLineEdit* search_ = nullptr;
  QLabel* count_ = nullptr;
  QLabel* message_ = nullptr;
  QTableView* table_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  RunsCompareTable* compare_ = nullptr;
  MetricChart* chart_ = nullptr;
  QTabWidget* chart_tabs_ = nullptr;
  QWidget* multiples_box_ = nullptr;
  std::vector<MetricChart*> multiples_;
  HParamsView* hparams_ = nullptr;
  void update_multiples(const std::map<int64_t, std::vector<insight::MetricPoint>>& series,
                        const std::map<int64_t, QString>& labels);
  void update_hparams();
  RunsLineageView* lineage_ = nullptr;
  QPushButton* open_button_ = nullptr;
  QPushButton* diff_button_ = nullptr;
  QPushButton* refresh_button_ = nullptr;
  QTimer* timer_ = nullptr;
};

}  // namespace tessera::studio

Q_DECLARE_METATYPE(tessera::formats::GraphDocument)
