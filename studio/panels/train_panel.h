// The Train panel: trains the document's graph with the engine's Trainer (engine/train/trainer.h)
// on a worker thread, as `tessera train` does, with a progress bar and live loss and accuracy
// charts (Qt Charts), Start and Stop, the test accuracy at the end and "Use trained weights".
//
// Data: an MNIST-style IDX folder (/usr/share/datasets/fashion-mnist), a folder of class folders
// (DIR/train/<class>/*.png, with DIR/test optional), a .npz with "x"/"labels" (and optional
// "x_test"/"labels_test") or a .csv, as `tessera train --data` accepts.
//
// Threads: the Trainer, its loaders and the insight recorder live on the worker thread. Progress
// reaches the UI through queued calls, at most one per kProgressIntervalMs (and at every epoch
// end), each carrying the steps since the last one, so the charts get every step while the UI
// thread handles about ten updates a second. Stop sets the trainer's stop flag
// (TrainCallbacks::stop): training ends cleanly after the current step. Destroying the panel
// stops and joins the worker.
//
// Recording: when a database path is set, the run is recorded in the insight store (kind "train",
// the graph's name, hyper-parameters, the graph and data sets, metrics by step); when the
// recorder cannot start, the panel says so and trains anyway.
//
// Usage:
//   TrainPanel panel(document);
//   panel.set_database_path(db);               // empty: not recorded
//   TrainSettings s;  s.data = "mnist.npz";  s.epochs = 2;
//   panel.set_settings(s);
//   if (Status st = panel.start(); !st) ...     // finished(ok) later
//   panel.use_trained_weights();                // one undo step in the document
#pragma once

#include <QString>
#include <QWidget>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/train/trainer.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QLineSeries;
class QChartView;

namespace tessera::studio {

class Document;

struct TrainSettings {
  std::string data;  // dataset path (see above)
  int64_t epochs = 1, batch = 64;
  double lr = 0.01;
  std::string optimizer = "sgd";  // sgd | momentum | adam | adamw
  double momentum = -1;           // -1: the optimizer's default (0.9 for momentum, else 0)
  uint64_t seed = 0;
  int threads = 1;
  std::string device = "auto";    // auto | cpu | cuda:N
};

// One progress update as the UI sees it.
struct TrainProgress {
  train::StepInfo last;                          // the latest step
  std::vector<std::pair<int64_t, double>> loss;  // (step, loss) since the previous update
  std::vector<std::pair<int64_t, double>> accuracy;
};

class TrainPanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kProgressIntervalMs = 100;

  // `document` outlives the panel.
  explicit TrainPanel(Document& document, QWidget* parent = nullptr);
  // Stops a run in progress and waits for it.
  ~TrainPanel() override;

  // The insight database to record runs in (insight::default_database_path); empty: no recording.
  void set_database_path(const QString& path) { database_path_ = path; }
  void set_settings(const TrainSettings& s);
  TrainSettings settings() const;  // from the form

  // Opens the data set and starts training a copy of the document's graph on a worker thread.
  // Refused (reason returned and shown): already running, an inference error, bad settings, a data
  // set that cannot be opened.
  Status start();
  // Asks the trainer to stop after the current step (finished() follows).
  void stop();
  bool is_running() const { return running_; }

  // Replaces the document's params by the trained weights (same names and types) as one undoable
  // step "Use trained weights". Refused when there is no trained graph or the document's params
  // no longer match it.
  Status use_trained_weights();

  // What the panel shows, for tests.
  QString status_text() const;
  QString recording_text() const;
  // The progress line: "epoch E/N  step S  batch B/BS  loss L  acc A%  I img/s  ETA m:ss".
  QString progress_text() const;
  int progress_updates() const { return progress_updates_; }
  int loss_points() const;
  int accuracy_points() const;
  const std::optional<train::TrainResult>& result() const { return result_; }
  const ir::Graph* trained_graph() const { return trained_.get(); }  // nullptr before a success
  const QString& error_text() const { return error_; }
  QPushButton* start_button() const { return start_button_; }
  QPushButton* stop_button() const { return stop_button_; }
  QPushButton* use_weights_button() const { return use_button_; }

 Q_SIGNALS:
  void progress(int64_t step, double loss);
  // Training ended: ok false on an error (error_text()) ; result() holds the outcome otherwise.
  void finished(bool ok);

 private:
  void on_progress(const TrainProgress& p);
  void on_finished(std::optional<train::TrainResult> result, std::shared_ptr<ir::Graph> trained,
                   std::string error, bool stopped_by_user);
  void update_buttons();
  void join();

  Document& document_;
  QString database_path_;
  QLineEdit* data_ = nullptr;
  QSpinBox* epochs_ = nullptr;
  QSpinBox* batch_ = nullptr;
  QDoubleSpinBox* lr_ = nullptr;
  QComboBox* optimizer_ = nullptr;
  QDoubleSpinBox* momentum_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* threads_ = nullptr;
  QComboBox* device_ = nullptr;
  QPushButton* start_button_ = nullptr;
  QPushButton* stop_button_ = nullptr;
  QPushButton* use_button_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* progress_label_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* recording_ = nullptr;
  QLineSeries* loss_series_ = nullptr;
  QLineSeries* accuracy_series_ = nullptr;
  QChartView* loss_view_ = nullptr;
  QChartView* accuracy_view_ = nullptr;

  std::thread worker_;
  std::atomic<bool> has_test_split_{false};  // set by the worker before training
  std::atomic<bool> stop_{false};
  bool running_ = false;
  int progress_updates_ = 0;
  int64_t total_epochs_ = 1;
  std::optional<train::TrainResult> result_;
  std::shared_ptr<ir::Graph> trained_;
  QString error_;
};

}  // namespace tessera::studio
