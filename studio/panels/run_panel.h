// The Run panel: runs the document's graph once through stages::Session (as `tessera run` does)
// on a worker thread and shows every output (name, type, shape, min/max/mean, the first values),
// each of which can be saved as .npy.
//
// Inputs: one row per graph input with its type; each is fed either random values (the same
// mt19937_64 draws as `tessera run --seed N`: floats uniform in [-1, 1), integers in [0, 10),
// bools 0/1) or a chosen .npy file, checked against the input's type when chosen (dtype, rank and
// every known dim; a symbolic dim takes the file's size). Each symbolic dim has a size field
// (default 1) used by random inputs.
//
// Recording: with a database path set, each run is recorded in the insight store (kind "run":
// the graph's structure, every kernel span and pass snapshot), so the profiler and the pass
// stepper can open it; the panel says which run it was, or why it was not recorded (the run
// goes on).
//
// Errors (inference, a bad feed, a kernel error) are shown in the panel. While the graph has an
// inference error the Run button is disabled and the reason shown.
//
// Usage:
//   RunPanel panel(document);
//   panel.set_input_file("x", "x.npy");   // Status: refused with the reason (also shown)
//   panel.set_dim("N", 4);
//   panel.run();                           // returns at once; finished() when done
//   ... panel.outputs(), panel.error_text()
#pragma once

#include <QString>
#include <QWidget>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/runtime/interpreter.h"

class QCheckBox;
class QComboBox;
class QSpinBox;
class QLabel;
class QPushButton;
class QTableWidget;
class QVBoxLayout;
class QGridLayout;

namespace tessera::studio {

class Document;

// How one graph input is fed.
struct InputFeed {
  bool from_file = false;
  std::string path;   // the .npy file when from_file
  uint64_t seed = 0;  // the random stream otherwise
};

// The same random tensor as `tessera run` (cli/commands.cpp): floats uniform in [-1, 1) from the
// top 53 bits of each mt19937_64 draw, integers draw % 10, bools the top bit.
Tensor random_input(DType dtype, const Shape& shape, uint64_t seed);

// Checks a tensor read for input `name` of type `type`: dtype, rank, known dims. The error says
// what differs ("input 'x' is f32[N, 1, 28, 28]; the file has f32[2, 3]: rank 2, not 4").
Status check_feed(const std::string& name, const ir::TensorType& type, const Tensor& t);

// The feeds for `graph`: each input from its InputFeed (missing: random, seed 0); symbolic dims of
// random inputs from `dims` (missing: 1). Files are read and checked.
Expected<runtime::Feeds> make_run_feeds(const ir::Graph& graph,
                                        const std::map<std::string, InputFeed>& feeds,
                                        const std::map<std::string, int64_t>& dims);

class RunPanel : public QWidget {
  Q_OBJECT

 public:
  // `document` outlives the panel. The panel rebuilds its input rows when the graph changes.
  explicit RunPanel(Document& document, QWidget* parent = nullptr);
  // Waits for a run in progress (its results are dropped).
  ~RunPanel() override;

  // Feeds input NAME from a .npy file: read and checked now; refused (unchanged, the reason shown
  // beside the input and returned) when unreadable or not of the input's type.
  Status set_input_file(const QString& name, const QString& path);
  void set_input_random(const QString& name, uint64_t seed);
  void set_dim(const QString& symbol, int64_t size);
  // The insight database to record runs in (insight::default_database_path); empty: no recording.
  void set_database_path(const QString& path) { database_path_ = path; }
  // The run id of the last recorded run (0: not recorded) and what the panel said about it.
  int64_t recorded_run() const { return recorded_run_; }
  const QString& recording_note() const { return recording_note_; }

  // Starts a run on a worker thread; false (and the reason shown) when one is running or the
  // graph cannot run (an inference error, no outputs).
  bool run();
  bool is_running() const { return worker_.joinable() && running_.load(); }
  bool can_run() const;

  // The last run's outputs (empty after a failure) and its error ("" on success).
  const std::vector<Tensor>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  const QString& error_text() const { return error_; }
  // What the panel shows: the state line (disabled reason, running, error) and the outputs table.
  QString status_text() const;
  QTableWidget* outputs_table() const { return table_; }
  QPushButton* run_button() const { return run_button_; }
  // Writes output I to PATH (.npy); the error names the file.
  Status save_output(int index, const QString& path);

  // Every value the canvas draws as an edge, kept from the last run when "Keep every value" is
  // ticked (the default): the graph is run a second time, unrecorded, with each of them as an
  // output, so that a click on an edge shows its tensor. Forgotten when the graph changes.
  QCheckBox* keep_values_box() const { return keep_values_; }
  const Tensor* value(ir::ValueId v) const;
  size_t value_count() const { return values_.size(); }

 Q_SIGNALS:
  // A run ended (check error_text()).
  void finished();
  // The kept values changed (a run ended, or they were forgotten).
  void values_changed();

 private:
  void rebuild_inputs();
  void update_enabled();
  void show_results();
  void join();

  Document& document_;
  std::map<std::string, InputFeed> feeds_;
  std::map<std::string, int64_t> dims_;
  bool outputs_stale_ = false;  // the graph was edited since the outputs shown were computed
  std::map<std::string, QSpinBox*> dim_boxes_;  // the "size of N" fields, by symbol
  std::map<std::string, QLabel*> feed_labels_;  // per input: what feeds it, or the refusal
  QVBoxLayout* inputs_box_ = nullptr;
  QWidget* inputs_widget_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QTableWidget* table_ = nullptr;
  std::thread worker_;
  std::atomic<bool> running_{false};
  std::vector<Tensor> outputs_;
  uint64_t generation_ = 0;  // counts documents opened; a run's result is shown for its own only
  std::vector<std::string> output_names_;
  std::map<ir::ValueId, Tensor> values_;
  QCheckBox* keep_values_ = nullptr;
  QComboBox* device_ = nullptr;  // where the graph runs (auto, cpu, cuda:N)
  QString error_;
  QString database_path_;
  int64_t recorded_run_ = 0;
  QString recording_note_;
};

}  // namespace tessera::studio
