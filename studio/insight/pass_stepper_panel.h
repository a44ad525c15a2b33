// The pass stepper panel: scrub through a compilation's snapshots (a table and a slider: index,
// stage, pass, time, changed, node counts), see what each pass did as a diff against the previous
// snapshot (GraphDiffView: added, removed, changed nodes and provenance lines), overlay the
// placement (a device badge per node, the fallback reason in its tooltip) and read the memory
// plan of each device (MemoryPlanChart). The data lives in a PassStepperModel; this widget only
// shows it.
//
// Usage:
//   PassStepperPanel panel(registry);            // the registry outlives the panel
//   panel.set_graph(doc.graph(), {{"x", {1, 1, 28, 28}}});
//   panel.compile();                             // on a worker thread; the list fills when done
//   connect(&panel, &PassStepperPanel::node_activated, ...);   // double-click on an after box
//   panel.load_run(db_path, 12);                 // or: a recorded run's snapshots
#pragma once

#include <QWidget>
#include <functional>
#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "studio/insight/graph_diff_view.h"
#include "studio/insight/pass_stepper_model.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QSlider;
class QTabWidget;
class QSpinBox;
class QTableWidget;

namespace tessera::studio {

class MemoryPlanChart;

class PassStepperPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PassStepperPanel(const ops::OpRegistry& registry, QWidget* parent = nullptr);
  ~PassStepperPanel() override;

  // The graph that compile() compiles, and its input shapes (missing ones: declared dims, symbolic
  // ones 1). Shows nothing new until compile().
  void set_graph(const ir::Graph& graph, StepperShapes shapes = {});
  // Compiles on a worker thread (false while one runs); the panel fills when it finishes.
  bool compile();
  // Where the Compile button takes its graph from (the window's document): the graph is read
  // when the button is pressed. nullptr from the source: nothing to compile, said in the panel.
  void set_graph_source(std::function<const ir::Graph*()> source) { source_ = std::move(source); }
  // Shows the snapshots of run `run` in the insight database `db_path`; the error is also shown.
  Status load_run(const std::string& db_path, int64_t run);

  // Shows snapshot `index` (diffed against the previous one; the first against the input graph).
  void select_snapshot(int index);
  int selected_snapshot() const { return selected_; }
  void set_placement_overlay(bool on);
  bool placement_overlay() const;

  PassStepperModel& model() { return *model_; }
  GraphDiffView* diff_view() const { return diff_; }
  MemoryPlanChart* memory_chart() const { return chart_; }
  QTabWidget* views() const { return views_; }
  QTableWidget* snapshot_table() const { return table_; }
  QSlider* slider() const { return slider_; }
  QLabel* status_label() const { return status_; }
  // The last problem shown ("" when none): a failed compilation, a snapshot that does not parse.
  const QString& error_text() const { return error_; }
  QPushButton* compile_button() const { return compile_button_; }
  // "Training step" and its "ranks": what Compile compiles (StepperMode); changing either
  // recompiles the graph when one was compiled.
  QCheckBox* training_box() const { return training_; }
  QSpinBox* ranks_box() const { return ranks_; }

 Q_SIGNALS:
  // A node of the shown (after) graph was double-clicked.
  void node_activated(int32_t node);

 private:
  void on_finished(bool ok);
  void fill_table();
  void show_status();
  std::map<ir::NodeId, NodeMark> placement_marks(const ir::Graph& graph) const;

  PassStepperModel* model_;
  QLabel* status_;
  QTableWidget* table_;
  QSlider* slider_;
  QCheckBox* overlay_;
  QPushButton* compile_button_;
  QCheckBox* training_;
  QSpinBox* ranks_;
  std::function<const ir::Graph*()> source_;
  GraphDiffView* diff_;
  MemoryPlanChart* chart_;
  QTabWidget* views_ = nullptr;  // Diff | Memory plan
  int selected_ = -1;
  QString error_;
  bool selecting_ = false;  // table and slider follow select_snapshot without re-entering it
};

// A stable colour per device name ("cpu" blue, "cpu:test" teal, CUDA green, others by hash).
QColor device_colour(const std::string& device);

}  // namespace tessera::studio
