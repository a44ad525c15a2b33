// The runs dashboard (runs_dashboard.h): the table, the compare area and the live poll.
#include "studio/insight/runs_dashboard.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>
#include <set>

#include "engine/ir/text.h"
#include "engine/train/checkpoint.h"
#include "insight/query.h"
#include "formats/json_graph.h"
#include "insight/runs_query.h"
#include "studio/common/guard.h"
#include "studio/insight/runs_chart.h"
#include "studio/insight/runs_compare.h"
#include "studio/insight/runs_hparams.h"
#include "studio/insight/runs_lineage.h"
#include "studio/insight/runs_model.h"

namespace tessera::studio {
namespace {

// At most this many runs are drawn and compared at once (the table's selection may be larger).
constexpr size_t kMaxCompared = 20;

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

RunsDashboard::RunsDashboard(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<formats::GraphDocument>();
  model_ = new RunsTableModel(this);
  proxy_ = new RunsFilterProxy(this);
  proxy_->setSourceModel(model_);

  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout();
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Filter runs: text, lr=0.01, status:crashed, accuracy>0.8"));
  search_->setClearButtonEnabled(true);
  bar->addWidget(search_, 1);
  count_ = new QLabel(this);
  bar->addWidget(count_);
  open_button_ = new QPushButton(tr("Open graph"), this);
  open_button_->setToolTip(tr("Open the graph the selected run trained (double-click a row does the same)"));
  diff_button_ = new QPushButton(tr("Diff graphs"), this);
  diff_button_->setToolTip(tr("Compare the graphs of the two selected runs"));
  refresh_button_ = new QPushButton(tr("Refresh"), this);
  bar->addWidget(open_button_);
  bar->addWidget(diff_button_);
  bar->addWidget(refresh_button_);
  layout->addLayout(bar);
  message_ = new QLabel(this);
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->hide();
  layout->addWidget(message_);

  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsTableModel::kIdColumn, Qt::DescendingOrder);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setHighlightSections(false);
  table_->setWordWrap(false);

  compare_ = new RunsCompareTable(this);
  lineage_ = new RunsLineageView(this);
  chart_ = new MetricChart(this);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(compare_, tr("Compare"));
  tabs_->addTab(lineage_, tr("Lineage"));
  chart_tabs_ = new QTabWidget(this);
  chart_tabs_->addTab(chart_, tr("Curves"));
  auto* multiples_scroll = new QScrollArea(this);
  multiples_scroll->setWidgetResizable(true);
  multiples_box_ = new QWidget(multiples_scroll);
  new QGridLayout(multiples_box_);
  multiples_scroll->setWidget(multiples_box_);
  chart_tabs_->addTab(multiples_scroll, tr("All Metrics"));
  hparams_ = new HParamsView(this);
  chart_tabs_->addTab(hparams_, tr("HParams"));
  auto* bottom = new QSplitter(Qt::Horizontal, this);
  bottom->addWidget(tabs_);
  bottom->addWidget(chart_tabs_);
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  bottom->setChildrenCollapsible(false);
  tabs_->setMinimumWidth(200);  // both tab titles and a key column with a value beside it
  bottom->setSizes({520, 760});  // room for the compare table's key column and two or three runs
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  layout->addWidget(split, 1);

  timer_ = new QTimer(this);
  timer_->setInterval(kPollIntervalMs);
  connect(timer_, &QTimer::timeout, this, [this] { guarded(this, tr("Runs"), [&] { poll(); }); });
  connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
    guarded(this, tr("Filter runs"), [&] {
      proxy_->set_query(text);
      update_count();
      update_hparams();
    });
  });
  connect(hparams_, &HParamsView::run_clicked, this,
          [this](qint64 run) { guarded(this, tr("HParams"), [&] { select_runs({run}); }); });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    guarded(this, tr("Runs"), [&] {
      update_selection_views();
      update_buttons();
      const auto ids = selected_runs();
      Q_EMIT selection_changed(QList<qint64>(ids.begin(), ids.end()));
    });
  });
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    guarded(this, tr("Open graph"), [&] { (void)open_graph(index.data(RunsTableModel::kRunIdRole).toLongLong()); });
  });
  connect(open_button_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Open graph"), [&] {
      const QModelIndex current = table_->currentIndex();
      const auto ids = selected_runs();
      if (ids.empty()) return;
      int64_t id = ids.front();
      if (current.isValid() && table_->selectionModel()->isRowSelected(current.row(), {}))
        id = current.data(RunsTableModel::kRunIdRole).toLongLong();
      (void)open_graph(id);
    });
  });
  connect(diff_button_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Diff graphs"), [&] {
      const auto ids = selected_runs();
      if (ids.size() == 2) (void)diff_graphs(std::min(ids[0], ids[1]), std::max(ids[0], ids[1]));
    });
  });
  connect(refresh_button_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Refresh"), [&] {
      if (db_) (void)refresh();
      else if (!path_.isEmpty()) (void)open_database(path_);
    });
  });
  connect(lineage_, &RunsLineageView::run_activated, this, [this](qint64 run) {
    guarded(this, tr("Lineage"), [&] {
      // The run may be hidden by the filter: clear it so that the row can be selected.
      if (model_->row_of(run) >= 0 && !proxy_->mapFromSource(model_->index(model_->row_of(run), 0)).isValid())
        search_->clear();
      select_runs({run});
    });
  });
  update_buttons();
  update_count();
  chart_->set_series({}, {});
}

RunsDashboard::~RunsDashboard() = default;

void RunsDashboard::show_message(const QString& text, bool error) {
  message_->setText(text);
  message_->setStyleSheet(error ? QStringLiteral("color: #b71c1c;") : QString());
  message_->setVisible(!text.isEmpty());
}

QString RunsDashboard::message() const { return message_->text(); }

Status RunsDashboard::open_database(const QString& path) {
  path_ = path;
  db_.reset();
  data_version_.reset();
  timer_->start();
  const bool uri = path.startsWith(QLatin1String("file:"));
  if (!uri && !QFileInfo::exists(path)) {
    model_->set_runs({}, insight::wall_ns());
    update_selection_views();
    update_count();
    error_ = tr("No runs yet: %1 does not exist. Train with the Train panel or `tessera train`.").arg(path);
    show_message(error_, false);
    return make_error(error_.toStdString(), path.toStdString());
  }
  insight::OpenOptions options;
  options.busy_timeout_ms = kBusyTimeoutMs;
  Expected<insight::Database> db = make_error("not opened");
  try {
    // Database::open never adds the insight tables to another program's database.
    db = insight::Database::open(path.toStdString(), options);
  } catch (const std::exception& e) {
    db = make_error(std::string("cannot open the database: ") + e.what(), path.toStdString());
  }
  if (!db) {
    error_ = qs(db.error().to_string());
    show_message(error_, true);
    return db.error();
  }
  db_ = std::make_unique<insight::Database>(std::move(*db));
  // Reads through a memory map and a larger page cache: the metric series of a few runs are a few
  // thousand random rows of a table that may hold millions. Failures only cost speed.
  (void)db_->exec("PRAGMA mmap_size=268435456; PRAGMA cache_size=-32768;");
  return refresh();
}

Status RunsDashboard::refresh() {
  if (!db_) return make_error("no database open", path_.toStdString());
  // The version first: a commit between it and the reads is seen by the next poll.
  auto version = insight::data_version(*db_);
  auto runs = version ? insight::load_run_summaries(*db_) : Expected<std::vector<insight::RunSummary>>(version.error());
  if (!runs) {
    data_version_.reset();  // the next poll tries again
    error_ = qs(runs.error().to_string());
    show_message(error_, true);
    return runs.error();
  }
  data_version_ = *version;
  const std::vector<int64_t> selected = selected_runs();
  const std::string before = selection_signature(selected);
  const int v_scroll = table_->verticalScrollBar()->value(), h_scroll = table_->horizontalScrollBar()->value();
  const bool was_empty = model_->rowCount() == 0;
  const bool empty = runs->empty();
  model_->set_runs(std::move(*runs), insight::wall_ns());
  if (was_empty && !empty) table_->resizeColumnsToContents();
  // Names grow as runs arrive ("lenet sgd lr 0.05 b32"): the name column follows, up to 320 px,
  // never narrower than the user made it (two runs read "lenet s…" alike).
  if (!empty) {
    const int before_width = table_->columnWidth(RunsTableModel::kNameColumn);
    table_->resizeColumnToContents(RunsTableModel::kNameColumn);
    table_->setColumnWidth(RunsTableModel::kNameColumn,
                           std::max(before_width, std::min(320, table_->columnWidth(RunsTableModel::kNameColumn))));
  }
  // A model reset (new columns) drops the selection: put it back, then the scroll position.
  // Curves and the compare table are read again only when the selected runs changed (a heartbeat
  // commits every second while a run trains; most commits touch other runs).
  if (selected_runs() != selected) select_runs(selected);
  else if (selection_signature(selected) != before) update_selection_views();
  table_->verticalScrollBar()->setValue(v_scroll);
  table_->horizontalScrollBar()->setValue(h_scroll);
  error_.clear();
  show_message(empty ? tr("No runs recorded in %1 yet. Train with the Train panel or `tessera train`.").arg(path_)
                     : QString(),
               false);
  update_count();
  update_buttons();
  update_hparams();
  return reload_lineage();
}

Status RunsDashboard::reload_lineage() {
  auto lineage = insight::load_lineage(*db_);
  if (!lineage) {
    show_message(qs(lineage.error().to_string()), true);
    return lineage.error();
  }
  lineage_->set_lineage(*lineage);
  lineage_->mark_runs(selected_runs());
  return Status::ok();
}

std::string RunsDashboard::selection_signature(const std::vector<int64_t>& runs) const {
  std::string sig;
  for (int64_t id : runs) {
    const insight::RunSummary* r = model_->run_at(model_->row_of(id));
    if (!r) continue;
    sig += std::to_string(id) + r->run.status + r->run.name + ";";
    for (const auto& [k, v] : r->hyperparams) sig += k + "=" + v + ";";
    for (const auto& m : r->metrics) sig += m.name + ":" + std::to_string(m.final_step) + ":" + std::to_string(m.final_value) + ";";
  }
  return sig;
}

void RunsDashboard::poll() {
  if (path_.isEmpty()) return;
  if (!db_) {
    if (path_.startsWith(QLatin1String("file:")) || QFileInfo::exists(path_)) (void)open_database(path_);
    return;
  }
  auto version = insight::data_version(*db_);
  if (!version) {
    show_message(qs(version.error().to_string()), true);
    return;
  }
  if (!data_version_ || *version != *data_version_) (void)refresh();
}

std::vector<int64_t> RunsDashboard::selected_runs() const {
  std::vector<int64_t> out;
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  std::vector<std::pair<int, int64_t>> by_row;
  for (const QModelIndex& i : rows) by_row.emplace_back(i.row(), i.data(RunsTableModel::kRunIdRole).toLongLong());
  std::sort(by_row.begin(), by_row.end());
  for (const auto& [row, id] : by_row) out.push_back(id);
  return out;
}

void RunsDashboard::select_runs(const std::vector<int64_t>& runs) {
  const std::vector<int64_t> before = selected_runs();
  QItemSelection selection;
  for (int64_t id : runs) {
    const int row = model_->row_of(id);
    if (row < 0) continue;
    const QModelIndex p = proxy_->mapFromSource(model_->index(row, 0));
    if (p.isValid()) selection.select(p, p);
  }
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  if (!selection.isEmpty()) {
    table_->selectionModel()->setCurrentIndex(selection.indexes().first(), QItemSelectionModel::NoUpdate);
    table_->scrollTo(selection.indexes().first());
  }
  // A changed selection has updated the views through selectionChanged; an unchanged one (a
  // refresh's new data for the same runs) is updated here.
  if (selected_runs() == before) update_selection_views();
}

void RunsDashboard::update_selection_views() {
  // Compared and drawn in id order (oldest first), whatever the table's sort.
  std::vector<int64_t> ids = selected_runs();
  std::sort(ids.begin(), ids.end());
  if (ids.size() > kMaxCompared) ids.resize(kMaxCompared);
  std::vector<const insight::RunSummary*> runs;
  std::map<int64_t, QString> labels;
  for (int64_t id : ids)
    if (const insight::RunSummary* r = model_->run_at(model_->row_of(id))) {
      runs.push_back(r);
      labels[id] = tr("run %1 %2").arg(id).arg(qs(r->run.name));
    }
  std::map<int64_t, std::vector<insight::MetricPoint>> series;
  std::map<int64_t, std::vector<insight::MetricSummary>> full;
  if (db_ && !ids.empty()) {
    auto loaded = insight::load_metric_series(*db_, ids);
    if (loaded) {
      series = std::move(*loaded);
      for (const auto& [id, points] : series) full[id] = insight::summarize_metrics(points);
    } else {
      show_message(qs(loaded.error().to_string()), true);
    }
  }
  compare_->set_runs(runs, full);
  update_multiples(series, labels);
  chart_->set_series(std::move(series), std::move(labels));
  lineage_->mark_runs(ids);
  const std::vector<int64_t> selected = selected_runs();  // all of them, not the 20 compared
  hparams_->set_selected(std::set<int64_t>(selected.begin(), selected.end()));
}

void RunsDashboard::update_multiples(const std::map<int64_t, std::vector<insight::MetricPoint>>& series,
                                     const std::map<int64_t, QString>& labels) {
  // A compact chart per metric the selected runs recorded, two columns, metric names in order.
  std::set<std::string> names;
  for (const auto& [run, points] : series)
    for (const auto& p : points) names.insert(p.name);
  auto* grid = static_cast<QGridLayout*>(multiples_box_->layout());
  while (multiples_.size() > names.size()) {
    delete multiples_.back();
    multiples_.pop_back();
  }
  while (multiples_.size() < names.size()) {
    auto* chart = new MetricChart(multiples_box_);
    chart->set_compact(true);
    const int i = static_cast<int>(multiples_.size());
    grid->addWidget(chart, i / 2, i % 2);
    multiples_.push_back(chart);
  }
  size_t i = 0;
  for (const std::string& name : names) multiples_[i++]->set_series(series, labels, QString::fromStdString(name));
}

void RunsDashboard::update_hparams() {
  // Every run the table shows (the filter applies), the selected ones thick.
  std::vector<insight::RunSummary> shown;
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const int64_t id = proxy_->index(r, RunsTableModel::kIdColumn).data(RunsTableModel::kRunIdRole).toLongLong();
    if (const insight::RunSummary* s = model_->run_at(model_->row_of(id))) shown.push_back(*s);
  }
  const std::vector<int64_t> selected = selected_runs();
  hparams_->set_runs(shown, std::set<int64_t>(selected.begin(), selected.end()));
}

void RunsDashboard::update_buttons() {
  const size_t n = selected_runs().size();
  open_button_->setEnabled(db_ && n >= 1);
  diff_button_->setEnabled(db_ && n == 2);
}

void RunsDashboard::update_count() {
  const int all = model_->rowCount(), shown = proxy_->rowCount();
  count_->setText(all == shown ? tr("%n run(s)", nullptr, all) : tr("%1 of %2 runs").arg(shown).arg(all));
}

Expected<formats::GraphDocument> RunsDashboard::graph_document(int64_t run) {
  if (!db_) return make_error("no database open", path_.toStdString());
  TRY(insight::RunGraph rg, insight::run_graph(*db_, run));
  const std::string where = "run " + std::to_string(run) + " graph " + rg.hash.substr(0, 8);
  formats::GraphDocument doc;
  try {
    if (rg.format == "json") {
      TRY(ir::Graph g, formats::parse_json_graph(rg.body, where, ""));
      doc.graph = std::move(g);
    } else {
      TRY(ir::Graph g, ir::parse_graph(rg.body, where));
      doc.graph = std::move(g);
    }
  } catch (const std::exception& e) {
    return make_error(std::string("cannot read the recorded graph: ") + e.what(), where);
  }
  doc.metadata.producer = "tessera insight";
  doc.metadata.content_hash = formats::graph_content_hash(doc.graph);
  doc.metadata.properties["insight.run"] = std::to_string(run);
  doc.metadata.properties["insight.graph_hash"] = rg.hash;
  doc.metadata.properties["insight.database"] = path_.toStdString();
  // The weights: the run's last checkpoint that is still on disk (the recorded graph holds them as
  // inputs). A checkpoint that does not fit the graph is reported, and the graph opens without it.
  if (auto details = insight::run_details(*db_, run)) {
    std::vector<insight::CheckpointRecord> cps = details->checkpoints;
    std::sort(cps.begin(), cps.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
    for (const insight::CheckpointRecord& cp : cps) {
      if (!QFileInfo::exists(qs(cp.path))) continue;
      // Refused as a whole (the graph unchanged) when it does not fit.
      if (Status st = train::apply_checkpoint(doc.graph, cp.path, /*inputs_become_params=*/true); st) {
        doc.metadata.content_hash = formats::graph_content_hash(doc.graph);
        doc.metadata.properties["insight.checkpoint"] = cp.path;
        doc.metadata.properties["insight.checkpoint_step"] = std::to_string(cp.step);
      } else {
        doc.metadata.properties["insight.checkpoint_error"] = st.error().to_string();
      }
      break;
    }
  }
  return doc;
}

Status RunsDashboard::open_graph(int64_t run) {
  auto doc = graph_document(run);
  if (!doc) {
    show_message(tr("Cannot open the graph of run %1: %2").arg(run).arg(qs(doc.error().to_string())), true);
    return doc.error();
  }
  const insight::RunSummary* r = model_->run_at(model_->row_of(run));
  const QString title = tr("run %1 %2").arg(run).arg(r ? qs(r->run.name) : QString());
  Q_EMIT open_graph_requested(std::move(*doc), title);
  return Status::ok();
}

Status RunsDashboard::diff_graphs(int64_t a, int64_t b) {
  auto da = graph_document(a);
  auto db = da ? graph_document(b) : Expected<formats::GraphDocument>(da.error());
  if (!da || !db) {
    const Error& e = !da ? da.error() : db.error();
    show_message(tr("Cannot diff the graphs of runs %1 and %2: %3").arg(a).arg(b).arg(qs(e.to_string())), true);
    return e;
  }
  auto label = [&](int64_t id) {
    const insight::RunSummary* r = model_->run_at(model_->row_of(id));
    return r ? tr("run %1: %2").arg(id).arg(qs(r->run.name)) : tr("run %1").arg(id);
  };
  Q_EMIT diff_graphs_requested(std::move(*da), std::move(*db), tr("run %1 vs run %2").arg(a).arg(b), label(a),
                               label(b));
  return Status::ok();
}

}  // namespace tessera::studio
