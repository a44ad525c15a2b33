// The Run panel: input rows, the worker that runs the graph through a Session, the outputs table.
#include "studio/panels/run_panel.h"

#include "engine/stages/session.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <random>
#include <set>

#include "formats/npy.h"
#include "insight/recorder.h"
#include "studio/panels/device_choice.h"
#include "studio/document/document.h"
#include "studio/common/guard.h"

namespace tessera::studio {
namespace {

constexpr int kFirstValues = 6;  // values shown per output

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

std::string type_text(DType dt, const Shape& shape) {
  return std::string(dtype_name(dt)) + shape_to_string(shape);
}

// The symbolic dims of the graph's inputs, in order of first appearance.
std::vector<std::string> symbols_of(const ir::Graph& g) {
  std::vector<std::string> out;
  for (ir::ValueId v : g.inputs())
    for (const ir::Dim& d : g.value(v).type.dims)
      if (d.is_symbolic() && std::find(out.begin(), out.end(), d.symbol) == out.end())
        out.push_back(d.symbol);
  return out;
}

QString number(double v) {
  return QString::number(v, 'g', 6);
}

}  // namespace

Tensor random_input(DType dtype, const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t bits = rng();
    if (is_float(dtype))
      t.set(i, static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);
    else if (dtype == DType::kBool)
      t.set(i, static_cast<double>(bits >> 63));
    else
      t.set(i, static_cast<double>(bits % 10));
  }
  return t;
}

Status check_feed(const std::string& name, const ir::TensorType& type, const Tensor& t) {
  const std::string head = "input '" + name + "' is " + type.to_string() + "; the file has " +
                           type_text(t.dtype(), t.shape()) + ": ";
  if (t.dtype() != type.dtype)
    return make_error(head + "dtype " + std::string(dtype_name(t.dtype())) + ", not " +
                      std::string(dtype_name(type.dtype)));
  if (!type.rank_known) return Status::ok();
  if (static_cast<size_t>(type.rank()) != t.shape().size())
    return make_error(head + "rank " + std::to_string(t.shape().size()) + ", not " +
                      std::to_string(type.rank()));
  for (size_t i = 0; i < t.shape().size(); ++i) {
    const ir::Dim& d = type.dims[i];
    if (d.is_known() && d.size != t.shape()[i])
      return make_error(head + "dim " + std::to_string(i) + " is " + std::to_string(t.shape()[i]) +
                        ", not " + std::to_string(d.size));
  }
  return Status::ok();
}

Expected<runtime::Feeds> make_run_feeds(const ir::Graph& graph,
                                        const std::map<std::string, InputFeed>& feeds,
                                        const std::map<std::string, int64_t>& dims) {
  runtime::Feeds out;
  for (ir::ValueId v : graph.inputs()) {
    const ir::Value& in = graph.value(v);
    auto it = feeds.find(in.name);
    const InputFeed feed = it == feeds.end() ? InputFeed{} : it->second;
    if (feed.from_file) {
      TRY(Tensor t, formats::read_npy(feed.path));
      RETURN_IF_ERROR(check_feed(in.name, in.type, t));
      out.emplace(in.name, std::move(t));
      continue;
    }
    if (!in.type.rank_known)
      return make_error("input '" + in.name + "' has unknown rank: feed it from a .npy file");
    Shape shape;
    for (const ir::Dim& d : in.type.dims) {
      if (d.is_known())
        shape.push_back(d.size);
      else {
        auto s = dims.find(d.symbol);
        shape.push_back(s == dims.end() ? 1 : s->second);
      }
    }
    TRY(int64_t numel, checked_numel(shape, in.type.dtype));
    if (numel > (int64_t{1} << 30))
      return make_error("input '" + in.name + "' of shape " + shape_to_string(shape) +
                        " is too large to make up");
    out.emplace(in.name, random_input(in.type.dtype, shape, feed.seed));
  }
  return out;
}

RunPanel::RunPanel(Document& document, QWidget* parent) : QWidget(parent), document_(document) {
  setObjectName(QStringLiteral("run_panel"));
  auto* layout = new QVBoxLayout(this);
  inputs_widget_ = new QWidget(this);
  inputs_box_ = new QVBoxLayout(inputs_widget_);
  inputs_box_->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(inputs_widget_);
  run_button_ = new QPushButton(tr("Run (F5)"), this);
  run_button_->setObjectName(QStringLiteral("run_button"));
  layout->addWidget(run_button_);
  keep_values_ = new QCheckBox(tr("Keep every value"), this);  // short: the dock stays narrow
  keep_values_->setChecked(true);
  keep_values_->setToolTip(tr("Click an edge after a run to inspect its value. Runs the graph a second "
                              "time, unrecorded, with every edge's value as an output, and keeps them in memory"));
  layout->addWidget(keep_values_);
  auto* device_row = new QHBoxLayout();
  device_row->addWidget(new QLabel(tr("Device"), this));
  device_ = make_device_choice(this);
  device_row->addWidget(device_, 1);
  layout->addLayout(device_row);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  table_ = new QTableWidget(0, 8, this);
  table_->setHorizontalHeaderLabels({tr("output"), tr("type"), tr("shape"), tr("min"), tr("max"),
                                     tr("mean"), tr("first values"), tr("save")});
  table_->horizontalHeader()->setStretchLastSection(false);
  // Save as .npy right after the output's name: as the last column it sat past the right edge of
  // a 320 px dock.
  table_->horizontalHeader()->moveSection(7, 1);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  layout->addWidget(table_, 1);

  connect(run_button_, &QPushButton::clicked, this,
          [this] { guarded(this, tr("Run"), [&] { run(); }); });
  auto rebuild = [this] { guarded(this, tr("Run panel"), [&] { rebuild_inputs(); }); };
  // Another graph opened: the previous graph's outputs are not this one's (a run still going
  // belongs to the old graph: its result is dropped when it arrives).
  // Any change of the graph: the kept values no longer describe it.
  auto forget_values = [this] {
    if (values_.empty()) return;
    values_.clear();
    Q_EMIT values_changed();
  };
  connect(&document_, &Document::node_added, this, forget_values);
  connect(&document_, &Document::node_removed, this, forget_values);
  connect(&document_, &Document::node_changed, this, forget_values);
  connect(&document_, &Document::edges_changed, this, forget_values);
  connect(&document_, &Document::terminals_changed, this, forget_values);
  connect(&document_, &Document::value_changed, this, forget_values);
  connect(&document_, &Document::graph_reset, this, [this, forget_values] {
    guarded(this, tr("Run panel"), [&] {
      forget_values();
      ++generation_;
      outputs_.clear();
      output_names_.clear();
      error_.clear();
      recorded_run_ = 0;
      recording_note_.clear();
      table_->setRowCount(0);
      if (!running_.load()) status_->setText(tr("Ready"));
    });
  });
  connect(&document_, &Document::graph_reset, this, rebuild);
  connect(&document_, &Document::terminals_changed, this, rebuild);
  connect(&document_, &Document::types_changed, this, rebuild);
  connect(&document_, &Document::value_changed, this, rebuild);
  // Every edit, undo and redo: Run follows whether the graph can run now.
  // The outputs shown are then those of the graph before the edit: said in the status line.
  connect(&document_, &Document::changed, this, [this] {
    guarded(this, tr("Run panel"), [&] {
      if (!outputs_.empty()) outputs_stale_ = true;
      update_enabled();
    });
  });
  rebuild_inputs();
}

RunPanel::~RunPanel() {
  join();
}

void RunPanel::join() {
  if (worker_.joinable()) worker_.join();
}

bool RunPanel::can_run() const {
  return !document_.inference_error() && !document_.graph().outputs().empty() && !running_.load();
}

void RunPanel::update_enabled() {
  run_button_->setEnabled(can_run());
  if (running_.load())
    status_->setText(tr("Running..."));
  else if (const auto& err = document_.inference_error())
    status_->setText(tr("Cannot run: %1").arg(qs(err->message)));  // (to_string repeats the node)
  else if (document_.graph().outputs().empty())
    status_->setText(tr("Cannot run: the graph has no outputs"));
  else if (!error_.isEmpty())
    status_->setText(tr("Error: %1").arg(error_));
  else if (!outputs_.empty())
    status_->setText(tr("Ran: %n output(s)", nullptr, static_cast<int>(outputs_.size())) +
                     (outputs_stale_ ? tr(" (of the graph before the last edit: run again)") : QString()) +
                     (recording_note_.isEmpty() ? QString() : QStringLiteral("\n") + recording_note_));
  else
    status_->setText(tr("Ready"));
}

void RunPanel::rebuild_inputs() {
  while (QLayoutItem* item = inputs_box_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  feed_labels_.clear();
  dim_boxes_.clear();
  const ir::Graph& g = document_.graph();
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    const std::string name = in.name;
    // The name and type on a line of their own: side by side with the buttons they made the
    // dock (and so the right dock area) 450 px wide, and the Runs tab then overflowed.
    auto* title = new QLabel(qs(name + " : " + in.type.to_string()), inputs_widget_);
    title->setWordWrap(true);
    inputs_box_->addWidget(title);
    auto* row = new QWidget(inputs_widget_);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    auto* seed = new QSpinBox(row);
    seed->setRange(0, 1 << 30);
    seed->setPrefix(tr("seed "));
    seed->setValue(static_cast<int>(feeds_[name].seed));
    auto* random = new QPushButton(tr("Random"), row);
    auto* file = new QPushButton(tr("File..."), row);
    h->addWidget(seed, 1);
    h->addWidget(random);
    h->addWidget(file);
    auto* label = new QLabel(row);
    label->setWordWrap(true);
    feed_labels_[name] = label;
    inputs_box_->addWidget(row);
    inputs_box_->addWidget(label);
    const QString qname = qs(name);
    connect(random, &QPushButton::clicked, this, [this, qname, seed] {
      guarded(this, tr("Run"),
              [&] { set_input_random(qname, static_cast<uint64_t>(seed->value())); });
    });
    connect(seed, qOverload<int>(&QSpinBox::valueChanged), this, [this, qname](int s) {
      guarded(this, tr("Run"), [&] {
        if (!feeds_[qname.toStdString()].from_file)
          set_input_random(qname, static_cast<uint64_t>(s));
      });
    });
    connect(file, &QPushButton::clicked, this, [this, qname] {
      guarded(this, tr("Run"), [&] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Feed %1 from").arg(qname),
                                                          QString(), tr("NumPy arrays (*.npy)"));
        if (!path.isEmpty()) (void)set_input_file(qname, path);
      });
    });
    const InputFeed& f = feeds_[name];
    label->setText(f.from_file ? tr("from %1").arg(QFileInfo(qs(f.path)).fileName())
                               : tr("random (seed %1)").arg(f.seed));
  }
  for (const std::string& sym : symbols_of(g)) {
    auto* row = new QWidget(inputs_widget_);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(new QLabel(tr("size of %1").arg(qs(sym)), row), 1);
    auto* size = new QSpinBox(row);
    size->setRange(0, 1 << 20);
    size->setValue(static_cast<int>(dims_.count(sym) ? dims_[sym] : 1));
    dim_boxes_[sym] = size;
    h->addWidget(size);
    inputs_box_->addWidget(row);
    const QString qsym = qs(sym);
    connect(size, qOverload<int>(&QSpinBox::valueChanged), this,
            [this, qsym](int n) { set_dim(qsym, n); });
  }
  update_enabled();
}

Status RunPanel::set_input_file(const QString& name, const QString& path) {
  const std::string n = name.toStdString();
  const ir::Graph& g = document_.graph();
  const ir::Value* input = nullptr;
  for (ir::ValueId v : g.inputs())
    if (g.value(v).name == n) input = &g.value(v);
  Status st = Status::ok();
  if (!input)
    st = make_error("the graph has no input '" + n + "'");
  else {
    auto t = formats::read_npy(path.toStdString());
    st = t ? check_feed(n, input->type, *t) : Status(t.error());
  }
  QLabel* label = feed_labels_.count(n) ? feed_labels_[n] : nullptr;
  if (!st) {
    if (label)
      label->setText(
          tr("%1 refused: %2").arg(QFileInfo(path).fileName(), qs(st.error().to_string())));
    return st;
  }
  feeds_[n] = InputFeed{true, path.toStdString(), feeds_[n].seed};
  if (label) label->setText(tr("from %1").arg(QFileInfo(path).fileName()));
  // The file's sizes are the symbolic dims' sizes now ("size of N" shows 4 for a batch of 4).
  if (auto t = formats::read_npy(path.toStdString())) {
    const auto& dims = input->type.dims;
    for (size_t i = 0; i < dims.size() && i < t->shape().size(); ++i) {
      if (!dims[i].is_symbolic()) continue;
      dims_[dims[i].symbol] = t->shape()[i];
      if (auto box = dim_boxes_.find(dims[i].symbol); box != dim_boxes_.end()) {
        const QSignalBlocker quiet(box->second);
        box->second->setValue(static_cast<int>(t->shape()[i]));
      }
    }
  }
  return st;
}

void RunPanel::set_input_random(const QString& name, uint64_t seed) {
  const std::string n = name.toStdString();
  feeds_[n] = InputFeed{false, {}, seed};
  if (feed_labels_.count(n)) feed_labels_[n]->setText(tr("random (seed %1)").arg(seed));
}

void RunPanel::set_dim(const QString& symbol, int64_t size) {
  dims_[symbol.toStdString()] = size;
}

bool RunPanel::run() {
  if (!can_run()) {
    update_enabled();
    return false;
  }
  join();  // the previous worker has posted its result already
  ir::Graph graph = document_.graph();
  const ops::OpRegistry& registry = document_.registry();
  running_.store(true);
  outputs_.clear();
  output_names_.clear();
  error_.clear();
  table_->setRowCount(0);
  update_enabled();
  recorded_run_ = 0;
  recording_note_.clear();
  worker_ = std::thread(
      [this, graph = std::move(graph), &registry, feeds = feeds_, dims = dims_, generation = generation_,
       keep = keep_values_->isChecked(), device = device_choice(device_),
       db = database_path_.toStdString(), file = document_.path()]() mutable {
        std::vector<Tensor> outs;
        std::vector<std::string> names;
        std::map<ir::ValueId, Tensor> values;
        std::string error, note;
        int64_t run_id = 0;
        try {
          for (ir::ValueId v : graph.outputs()) names.push_back(graph.value(v).name);
          auto fed = make_run_feeds(graph, feeds, dims);
          if (!fed)
            error = fed.error().to_string();
          else {
            std::unique_ptr<insight::Recorder> rec;
            if (!db.empty()) {
              insight::RunInfo info;
              info.name = insight::run_name(graph.name(), file);
              if (info.name.empty()) info.name = "studio";
              info.kind = "run";
              info.command = "tessera-studio run " + file;
              info.graph_name = graph.name();
              info.engine_version = TESSERA_VERSION;
              for (const auto& [symbol, size] : dims) info.hyperparams["dim." + symbol] = std::to_string(size);
              auto r = insight::Recorder::open(db);
              Expected<int64_t> id = r ? (*r)->start_run(info) : Expected<int64_t>(r.error());
              if (id) {
                rec = std::move(*r);
                run_id = *id;
                rec->log_graph_structure(graph, "input");
              } else {
                note = "Not recorded: " + id.error().to_string();
              }
            }
            // The values for the canvas: every node output read by a node or the graph, as outputs
            // of a copy (fusion then keeps them), run after the recorded run.
            std::vector<ir::ValueId> wanted;
            ir::Graph all = keep ? graph : ir::Graph();
            if (keep) {
              std::set<ir::ValueId> read(graph.outputs().begin(), graph.outputs().end());
              for (ir::NodeId id : graph.node_ids())
                for (ir::ValueId v : graph.node(id).inputs) read.insert(v);
              for (ir::NodeId id : graph.node_ids())
                for (ir::ValueId v : graph.node(id).outputs)
                  if (read.count(v)) wanted.push_back(v);
              all.set_outputs(wanted);
            }
            stages::SessionOptions options;
            options.device = device;
            options.trace = rec.get();
            options.snapshots = rec.get();
            stages::Session session(std::move(graph), registry, options);
            auto r = session.run(*fed);
            if (!r)
              error = r.error().to_string();
            else
              outs = std::move(*r);
            if (r && keep && !wanted.empty()) {
              stages::Session every(std::move(all), registry, stages::SessionOptions{});
              if (auto v = every.run(*fed); v && v->size() == wanted.size())
                for (size_t i = 0; i < wanted.size(); ++i) values[wanted[i]] = std::move((*v)[i]);
              else if (!v)
                note = "Values not kept: " + v.error().to_string();
            }
            if (rec) {
              Status st = rec->finish_run(error.empty() ? insight::RunStatus::kFinished : insight::RunStatus::kFailed,
                                          error);
              note = st ? "Recorded as run " + std::to_string(run_id) + " in " + db
                        : "Recording failed: " + st.error().to_string();
              if (!st) run_id = 0;
            }
          }
        } catch (const std::exception& e) {
          error = std::string("unexpected exception: ") + e.what();
        } catch (...) {
          error = "unexpected exception";
        }
        // Delivered on the UI thread; dropped if the panel is gone (its destructor joins us first).
        QMetaObject::invokeMethod(
            this,
            [this, outs = std::move(outs), names = std::move(names), error = std::move(error),
             note = std::move(note), run_id, generation, values = std::move(values)]() mutable {
              running_.store(false);
              if (generation != generation_) {  // the document changed while it ran
                guarded(this, tr("Run"), [&] { update_enabled(); });
                Q_EMIT finished();
                return;
              }
              recorded_run_ = run_id;
              values_ = std::move(values);
              Q_EMIT values_changed();
              recording_note_ = qs(note);
              outputs_ = std::move(outs);
              outputs_stale_ = false;
              output_names_ = std::move(names);
              error_ = qs(error);
              running_.store(false);
              guarded(this, tr("Run"), [&] { show_results(); });
              Q_EMIT finished();
            },
            Qt::QueuedConnection);
      });
  return true;
}

void RunPanel::show_results() {
  table_->setRowCount(static_cast<int>(outputs_.size()));
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Tensor& t = outputs_[i];
    const int row = static_cast<int>(i);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    QStringList first;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double x = t.get(k);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
      if (k < kFirstValues) first << number(x);
    }
    if (t.numel() > kFirstValues) first << QStringLiteral("...");
    const bool empty = t.numel() == 0;
    const QStringList cells = {
        qs(i < output_names_.size() ? output_names_[i] : "output" + std::to_string(i)),
        qs(std::string(dtype_name(t.dtype()))),
        qs(shape_to_string(t.shape())),
        empty ? QString("-") : number(lo),
        empty ? QString("-") : number(hi),
        empty ? QString("-") : number(sum / static_cast<double>(t.numel())),
        first.join(QStringLiteral(", "))};
    for (int c = 0; c < cells.size(); ++c) table_->setItem(row, c, new QTableWidgetItem(cells[c]));
    auto* save = new QPushButton(tr("Save .npy..."), table_);
    save->setToolTip(tr("Save this output as a NumPy array"));
    connect(save, &QPushButton::clicked, this, [this, row] {
      guarded(this, tr("Save output"), [&] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save output"),
                                                          table_->item(row, 0)->text() + ".npy",
                                                          tr("NumPy arrays (*.npy)"));
        if (path.isEmpty()) return;
        if (Status st = save_output(row, path); !st)
          status_->setText(tr("Error: %1").arg(qs(st.error().to_string())));
      });
    });
    table_->setCellWidget(row, 7, save);
  }
  table_->resizeColumnsToContents();
  update_enabled();
}

Status RunPanel::save_output(int index, const QString& path) {
  if (index < 0 || static_cast<size_t>(index) >= outputs_.size())
    return make_error("no output " + std::to_string(index));
  return formats::write_npy(path.toStdString(), outputs_[static_cast<size_t>(index)]);
}

const Tensor* RunPanel::value(ir::ValueId v) const {
  auto it = values_.find(v);
  return it == values_.end() ? nullptr : &it->second;
}

QString RunPanel::status_text() const {
  return status_->text();
}

}  // namespace tessera::studio
