// The Train panel: the form, the worker thread around train::Trainer, throttled progress, the
// charts, recording to the insight store, and putting the trained weights into the document.
#include "studio/panels/train_panel.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QValueAxis>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>

#include "engine/data/fingerprint.h"
#include "engine/ir/text.h"
#include "formats/dataset_path.h"
#include "insight/recorder.h"
#include "studio/panels/device_choice.h"
#include "studio/document/document.h"
#include "studio/document/edit_commands.h"
#include "studio/common/guard.h"
#include "studio/common/theme.h"

namespace tessera::studio {
namespace {

namespace fs = std::filesystem;
using SourcePtr = std::shared_ptr<const data::Source>;

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

QString clock_text(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return QStringLiteral("--:--");
  const long s = static_cast<long>(seconds + 0.5);
  return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

std::map<std::string, std::string> hyperparams(const TrainSettings& s, double momentum) {
  return {{"epochs", std::to_string(s.epochs)},
          {"batch", std::to_string(s.batch)},
          {"lr", num(s.lr)},
          {"schedule", "constant"},
          {"optimizer", s.optimizer},
          {"momentum", num(momentum)},
          {"loss", "softmax-cross-entropy"},
          {"output", "first"},
          {"threads", std::to_string(s.threads)},
          {"device", s.device},
          {"data", s.data}};
}

QChartView* make_chart(const QString& title, QLineSeries** series, QWidget* parent) {
  auto* chart = new QChart();
  if (style::current_theme() == style::Theme::kDark) chart->setTheme(QChart::ChartThemeDark);
  // A dock is narrow: the axis title goes into the chart's, margins are small and the step axis
  // has 4 ticks (5 of them elided to "..." at 300 px).
  chart->setTitle(QObject::tr("%1 by step").arg(title));
  chart->setMargins(QMargins(2, 2, 2, 2));
  chart->legend()->hide();
  *series = new QLineSeries(chart);
  chart->addSeries(*series);
  auto* x = new QValueAxis(chart);
  auto* y = new QValueAxis(chart);
  x->setLabelFormat(QStringLiteral("%d"));
  x->setTickCount(4);
  y->setTickCount(3);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  (*series)->attachAxis(x);
  (*series)->attachAxis(y);
  auto* view = new QChartView(chart, parent);
  view->setMinimumHeight(160);
  return view;
}

// Extends the series' axes to its points.
void fit_axes(QLineSeries* series) {
  const auto axes = series->attachedAxes();
  if (axes.size() < 2 || series->count() == 0) return;
  double x_max = 1, y_min = series->at(0).y(), y_max = y_min;
  for (int i = 0; i < series->count(); ++i) {
    const QPointF p = series->at(i);
    x_max = std::max(x_max, p.x());
    y_min = std::min(y_min, p.y());
    y_max = std::max(y_max, p.y());
  }
  if (y_max <= y_min) y_max = y_min + 1;
  for (QAbstractAxis* a : axes) {
    if (a->orientation() == Qt::Horizontal)
      a->setRange(0.0, x_max);
    else
      a->setRange(std::min(0.0, y_min), y_max * 1.05);
  }
}

}  // namespace

TrainPanel::TrainPanel(Document& document, QWidget* parent) : QWidget(parent), document_(document) {
  setObjectName(QStringLiteral("train_panel"));
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout();
  auto* data_row = new QHBoxLayout();
  data_ = new QLineEdit(this);
  data_->setPlaceholderText(tr("IDX folder, image folder, .npz or .csv"));
  auto* browse = new QPushButton(tr("..."), this);
  data_row->addWidget(data_, 1);
  data_row->addWidget(browse);
  form->addRow(tr("Data"), data_row);
  epochs_ = new QSpinBox(this);
  epochs_->setRange(1, 100000);
  form->addRow(tr("Epochs"), epochs_);
  batch_ = new QSpinBox(this);
  batch_->setRange(1, 1 << 20);
  batch_->setValue(64);
  form->addRow(tr("Batch"), batch_);
  lr_ = new QDoubleSpinBox(this);
  lr_->setDecimals(6);
  lr_->setRange(0, 100);
  lr_->setSingleStep(0.001);
  lr_->setValue(0.01);
  form->addRow(tr("Learning rate"), lr_);
  optimizer_ = new QComboBox(this);
  optimizer_->addItems({"sgd", "momentum", "adam", "adamw"});
  form->addRow(tr("Optimizer"), optimizer_);
  momentum_ = new QDoubleSpinBox(this);
  momentum_->setRange(-1, 1);
  momentum_->setDecimals(3);
  momentum_->setValue(-1);
  momentum_->setSpecialValueText(tr("default"));
  form->addRow(tr("Momentum"), momentum_);
  seed_ = new QSpinBox(this);
  seed_->setRange(0, 1 << 30);
  form->addRow(tr("Seed"), seed_);
  threads_ = new QSpinBox(this);
  threads_->setRange(1, 256);
  form->addRow(tr("Threads"), threads_);
  device_ = make_device_choice(this);
  form->addRow(tr("Device"), device_);
  layout->addLayout(form);

  auto* buttons = new QHBoxLayout();
  start_button_ = new QPushButton(tr("Start"), this);
  stop_button_ = new QPushButton(tr("Stop"), this);
  use_button_ = new QPushButton(tr("Use trained weights"), this);
  buttons->addWidget(start_button_);
  buttons->addWidget(stop_button_);
  buttons->addWidget(use_button_);
  layout->addLayout(buttons);
  bar_ = new QProgressBar(this);
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  layout->addWidget(bar_);
  progress_label_ = new QLabel(this);
  layout->addWidget(progress_label_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  recording_ = new QLabel(this);
  recording_->setWordWrap(true);
  layout->addWidget(recording_);
  loss_view_ = make_chart(tr("Loss"), &loss_series_, this);
  accuracy_view_ = make_chart(tr("Accuracy"), &accuracy_series_, this);
  layout->addWidget(loss_view_, 1);
  layout->addWidget(accuracy_view_, 1);

  connect(browse, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Train"), [&] {
      const QString dir =
          QFileDialog::getExistingDirectory(this, tr("Data set folder (or Cancel to pick a file)"));
      QString path = dir;
      if (path.isEmpty())
        path = QFileDialog::getOpenFileName(this, tr("Data set file"), QString(),
                                            tr("Data sets (*.npz *.csv)"));
      if (!path.isEmpty()) data_->setText(path);
    });
  });
  connect(start_button_, &QPushButton::clicked, this,
          [this] { guarded(this, tr("Train"), [&] { (void)start(); }); });
  connect(stop_button_, &QPushButton::clicked, this, [this] { stop(); });
  connect(use_button_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Use trained weights"), [&] {
      if (Status st = use_trained_weights(); !st) status_->setText(qs(st.error().to_string()));
    });
  });
  update_buttons();
}

TrainPanel::~TrainPanel() {
  stop_.store(true);
  join();
}

void TrainPanel::join() {
  if (worker_.joinable()) worker_.join();
}

void TrainPanel::set_settings(const TrainSettings& s) {
  data_->setText(qs(s.data));
  epochs_->setValue(static_cast<int>(s.epochs));
  batch_->setValue(static_cast<int>(s.batch));
  lr_->setValue(s.lr);
  optimizer_->setCurrentText(qs(s.optimizer));
  momentum_->setValue(s.momentum);
  seed_->setValue(static_cast<int>(s.seed));
  threads_->setValue(s.threads);
  if (int i = device_->findData(qs(s.device)); i >= 0) device_->setCurrentIndex(i);
}

TrainSettings TrainPanel::settings() const {
  TrainSettings s;
  s.data = data_->text().toStdString();
  s.epochs = epochs_->value();
  s.batch = batch_->value();
  s.lr = lr_->value();
  s.optimizer = optimizer_->currentText().toStdString();
  s.momentum = momentum_->value();
  s.seed = static_cast<uint64_t>(seed_->value());
  s.threads = threads_->value();
  s.device = device_choice(device_);
  return s;
}

void TrainPanel::update_buttons() {
  start_button_->setEnabled(!running_);
  stop_button_->setEnabled(running_);
  use_button_->setEnabled(!running_ && trained_ != nullptr);
}

Status TrainPanel::start() {
  auto refuse = [this](Error e) {
    status_->setText(tr("Cannot train: %1").arg(qs(e.to_string())));
    return Status(std::move(e));
  };
  if (running_) return refuse(make_error("training is already running"));
  if (const auto& err = document_.inference_error()) return refuse(*err);
  if (document_.graph().outputs().empty()) return refuse(make_error("the graph has no outputs"));
  const TrainSettings s = settings();
  if (s.data.empty()) return refuse(make_error("no data set chosen"));
  std::error_code ec;
  if (!fs::exists(s.data, ec)) return refuse(make_error("no such file or directory", s.data));

  train::TrainConfig cfg;
  auto opt = autodiff::parse_optimizer(s.optimizer);
  if (!opt) return refuse(opt.error());
  cfg.spec.optimizer.kind = *opt;
  cfg.spec.optimizer.momentum =
      s.momentum >= 0 ? s.momentum : (s.optimizer == "momentum" ? 0.9 : 0.0);
  cfg.spec.optimizer.weight_decay = *opt == autodiff::OptimizerKind::kAdamW ? 0.01 : 0.0;
  if (cfg.spec.optimizer.kind != autodiff::OptimizerKind::kSgd &&
      cfg.spec.optimizer.momentum != 0.0)
    return refuse(make_error("momentum applies to sgd/momentum, not " + s.optimizer));
  cfg.epochs = s.epochs;
  cfg.lr = s.lr;
  cfg.threads = s.threads;
  cfg.device = s.device;
  cfg.seed = s.seed;
  cfg.batch_size = s.batch;

  join();
  stop_.store(false);
  running_ = true;
  result_.reset();
  trained_.reset();
  error_.clear();
  progress_updates_ = 0;
  total_epochs_ = s.epochs;
  loss_series_->clear();
  accuracy_series_->clear();
  bar_->setValue(0);
  progress_label_->clear();
  recording_->clear();
  has_test_split_.store(false);
  status_->setText(tr("Training..."));
  update_buttons();

  ir::Graph graph = document_.graph();
  const ops::OpRegistry& registry = document_.registry();
  const std::string db = database_path_.toStdString();
  auto post_recording = [this](QString text) {
    QMetaObject::invokeMethod(
        this, [this, text] { recording_->setText(text); }, Qt::QueuedConnection);
  };
  worker_ = std::thread([this, graph = std::move(graph), &registry, s, cfg, db, file = document_.path(),
                         post_recording]() mutable {
    std::optional<train::TrainResult> result;
    std::shared_ptr<ir::Graph> trained;
    std::string error;
    try {
      int channels = 1;
      if (!graph.inputs().empty()) {
        const ir::TensorType& t = graph.value(graph.inputs()[0]).type;
        if (t.rank() == 4 && t.dims[1].is_known()) channels = static_cast<int>(t.dims[1].size);
      }
      auto train_src = formats::open_dataset_split(s.data, "train", channels);
      auto test_src =
          train_src ? formats::open_dataset_split(s.data, "test", channels) : Expected<SourcePtr>(SourcePtr());
      if (!train_src)
        error = train_src.error().to_string();
      else if (!test_src)
        error = test_src.error().to_string();
      else {
        std::unique_ptr<insight::Recorder> rec;
        if (!db.empty()) {
          auto r = insight::Recorder::open(db);
          Expected<int64_t> id = r ? Expected<int64_t>(int64_t{0}) : Expected<int64_t>(r.error());
          if (r) {
            insight::RunInfo info;
            info.name = insight::run_name(graph.name(), file);
            if (info.name.empty()) info.name = "studio";
            // Two runs of one graph told apart in the dashboard by what was chosen.
            info.name += " " + s.optimizer + " lr " + num(s.lr) + " b" + std::to_string(s.batch);
            info.kind = "train";
            info.command = "tessera-studio train " + s.data;
            info.graph_name = graph.name();
            info.seed = s.seed;
            info.hyperparams = hyperparams(s, cfg.spec.optimizer.momentum);
            id = (*r)->start_run(info);
            if (id) rec = std::move(*r);
          }
          if (!rec) {
            post_recording(
                tr("Not recorded (training anyway): %1").arg(qs(id.error().to_string())));
          } else {
            // Checkpoints beside the database, one folder per run (lineage, "Open graph" with the
            // trained weights, `tessera train --resume`).
            const std::filesystem::path dbp(db);
            const std::filesystem::path dir = dbp.parent_path() /
                                              (dbp.stem().string() + "-checkpoints") /
                                              ("run-" + std::to_string(*id));
            std::error_code ec;
            std::filesystem::create_directories(dir, ec);
            if (ec) {
              post_recording(tr("Recording run %1 in %2; no checkpoints: cannot create %3: %4")
                                 .arg(*id)
                                 .arg(qs(db), qs(dir.string()), qs(ec.message())));
            } else {
              cfg.checkpoint_dir = dir.string();
              post_recording(tr("Recording run %1 in %2; checkpoints in %3")
                                 .arg(*id)
                                 .arg(qs(db), qs(cfg.checkpoint_dir)));
            }
          }
        }
        if (rec) {
          rec->log_graph_structure(graph, "input");
          if (auto fp = data::fingerprint(**train_src))
            rec->log_dataset("train", *fp, s.data, (*train_src)->size());
          if (*test_src)
            if (auto fp = data::fingerprint(**test_src))
              rec->log_dataset("test", *fp, s.data, (*test_src)->size());
          cfg.metrics = rec.get();
          cfg.trace = rec.get();  // stage spans and the kernels of sampled steps, as `tessera train`
        }
        data::LoaderOptions lo;
        lo.batch_size = s.batch;
        lo.shuffle = true;
        lo.seed = s.seed;
        lo.workers = 1;
        data::DataLoader train_loader(*train_src, {}, lo);
        data::LoaderOptions to = lo;
        to.shuffle = false;
        to.batch_size = std::max<int64_t>(s.batch, 256);
        std::unique_ptr<data::DataLoader> test_loader;
        if (*test_src)
          test_loader = std::make_unique<data::DataLoader>(*test_src, data::Transforms{}, to);
        has_test_split_.store(test_loader != nullptr);

        train::Trainer trainer(graph, registry, cfg);
        train::TrainCallbacks cb;
        cb.stop = &stop_;
        cb.on_checkpoint = [&](const std::string& path) {
          if (!rec) return;
          auto sum = insight::file_checksum(path);
          rec->log_checkpoint(path, trainer.global_step(), sum ? *sum : std::string("unreadable"));
        };
        TrainProgress pending;
        auto last_post = std::chrono::steady_clock::now() - std::chrono::seconds(1);
        cb.on_step = [&](const train::StepInfo& info) {
          pending.last = info;
          pending.loss.emplace_back(info.step, info.loss);
          pending.accuracy.emplace_back(info.step, info.accuracy);
          const auto now = std::chrono::steady_clock::now();
          if (info.batch != info.batches &&
              now - last_post < std::chrono::milliseconds(kProgressIntervalMs))
            return;
          last_post = now;
          QMetaObject::invokeMethod(
              this, [this, p = std::move(pending)] { on_progress(p); }, Qt::QueuedConnection);
          pending = TrainProgress{};
        };
        auto r = trainer.fit(train_loader, test_loader.get(), cb);
        if (!pending.loss.empty())
          QMetaObject::invokeMethod(
              this, [this, p = std::move(pending)] { on_progress(p); }, Qt::QueuedConnection);
        if (!r)
          error = r.error().to_string();
        else {
          result = *r;
          trained = std::make_shared<ir::Graph>(trainer.trained_graph());
        }
        if (rec) {
          // (The test accuracy is a metric, test/accuracy, logged by the trainer: not a
          // hyper-parameter.)
          const insight::RunStatus status = !error.empty() ? insight::RunStatus::kFailed
                                            : result && result->stopped && stop_.load()
                                                ? insight::RunStatus::kStopped
                                                : insight::RunStatus::kFinished;
          Status st = rec->finish_run(status, error);
          if (!st) post_recording(tr("Recording failed: %1").arg(qs(st.error().to_string())));
          else  // (it said "Recording run N..." after the run had ended)
            post_recording(tr("Recorded run %1 (%2) in %3%4")
                               .arg(rec->run_id())
                               .arg(qs(std::string(insight::run_status_name(status))), qs(db),
                                    cfg.checkpoint_dir.empty() ? QString()
                                                               : tr("; checkpoints in %1").arg(qs(cfg.checkpoint_dir))));
        }
      }
    } catch (const std::exception& e) {
      error = std::string("unexpected exception: ") + e.what();
    } catch (...) {
      error = "unexpected exception";
    }
    const bool by_user = stop_.load();
    QMetaObject::invokeMethod(
        this,
        [this, result = std::move(result), trained = std::move(trained), error = std::move(error),
         by_user]() mutable {
          on_finished(std::move(result), std::move(trained), std::move(error), by_user);
        },
        Qt::QueuedConnection);
  });
  return Status::ok();
}

void TrainPanel::stop() {
  if (!running_) return;
  stop_.store(true);
  status_->setText(tr("Stopping after this step..."));
}

void TrainPanel::on_progress(const TrainProgress& p) {
  ++progress_updates_;
  for (const auto& [step, loss] : p.loss) loss_series_->append(static_cast<double>(step), loss);
  for (const auto& [step, acc] : p.accuracy)
    accuracy_series_->append(static_cast<double>(step), acc);
  fit_axes(loss_series_);
  fit_axes(accuracy_series_);
  const train::StepInfo& s = p.last;
  const double done = (static_cast<double>(s.epoch) +
                       static_cast<double>(s.batch) / std::max<int64_t>(1, s.batches)) /
                      static_cast<double>(std::max<int64_t>(1, total_epochs_));
  bar_->setValue(static_cast<int>(1000 * std::min(1.0, done)));
  progress_label_->setText(
      tr("epoch %1/%2  step %3  batch %4/%5  loss %6  acc %7%  %8 img/s  ETA %9")
          .arg(s.epoch + 1)
          .arg(total_epochs_)
          .arg(s.step)
          .arg(s.batch)
          .arg(s.batches)
          .arg(s.loss, 0, 'f', 4)
          .arg(100 * s.accuracy, 0, 'f', 1)
          .arg(s.images_per_s, 0, 'f', 0)
          .arg(clock_text(s.eta_s)));
  Q_EMIT progress(s.step, s.loss);
}

void TrainPanel::on_finished(std::optional<train::TrainResult> result,
                             std::shared_ptr<ir::Graph> trained, std::string error,
                             bool stopped_by_user) {
  join();
  running_ = false;
  result_ = std::move(result);
  trained_ = std::move(trained);
  error_ = qs(error);
  if (!error.empty())
    status_->setText(tr("Training failed: %1").arg(error_));
  else {
    QString text = stopped_by_user ? tr("Stopped at step %1.").arg(result_->steps)
                                   : tr("Finished: %1 steps.").arg(result_->steps);
    if (result_->test_accuracy >= 0)
      text += tr(" Test accuracy %1%.").arg(100 * result_->test_accuracy, 0, 'f', 2);
    else if (has_test_split_.load())
      text += tr(" Not evaluated on the test split (stopped before an epoch ended).");
    else
      text += tr(" No test split.");
    text += tr(" Train loss %1.").arg(result_->train_loss, 0, 'f', 4);
    status_->setText(text);
    if (!stopped_by_user) bar_->setValue(bar_->maximum());
  }
  update_buttons();
  Q_EMIT finished(error.empty());
}

Status TrainPanel::use_trained_weights() {
  if (running_) return make_error("training is still running");
  if (!trained_) return make_error("nothing trained yet");
  const ir::Graph& g = document_.graph();
  std::map<std::string, const Tensor*> by_name;
  for (ir::ValueId p : trained_->params())
    if (const Tensor* t = trained_->param_data(p)) by_name[trained_->value(p).name] = t;
  Trial trial(document_.state());
  int replaced = 0;
  for (ir::ValueId p : g.params()) {
    const std::string& name = g.value(p).name;
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    const Tensor* old = g.param_data(p);
    if (old && (old->dtype() != it->second->dtype() || old->shape() != it->second->shape()))
      return make_error("param '" + name + "' is now " + std::string(dtype_name(old->dtype())) +
                        shape_to_string(old->shape()) + ", the trained one " +
                        std::string(dtype_name(it->second->dtype())) +
                        shape_to_string(it->second->shape()));
    (void)trial.value(p);  // records the param as touched, so the patch carries its data
    trial.graph().set_param_data(p, it->second->clone());
    ++replaced;
  }
  if (replaced == 0) return make_error("no param of the document matches the trained graph's");
  // The document has no "set param data" edit: this is one EditCommand whose patches replace the
  // params' data (kind kAddParam only decides merging: it never merges).
  Edit edit;
  edit.kind = EditKind::kAddParam;
  edit.text = "Use trained weights";
  edit.change = trial.finish();
  document_.undo_stack().push(new EditCommand(document_, std::move(edit)));
  status_->setText(
      tr("Trained weights put into %n param(s) (Edit > Undo takes them back).", nullptr, replaced));
  return Status::ok();
}

QString TrainPanel::status_text() const {
  return status_->text();
}
QString TrainPanel::recording_text() const {
  return recording_->text();
}
QString TrainPanel::progress_text() const {
  return progress_label_->text();
}
int TrainPanel::loss_points() const {
  return loss_series_->count();
}
int TrainPanel::accuracy_points() const {
  return accuracy_series_->count();
}

}  // namespace tessera::studio
