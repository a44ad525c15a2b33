// The studio's profiler: the timeline of a recorded run (every kernel span per thread and device,
// folded when narrower than a few pixels; search; op statistics; memory over time), drawn by the
// insight timeline view (insight/timeline/view.h) with Dear ImGui inside a QOpenGLWidget. The
// same view runs in the standalone `tessera-insight` viewer.
//
// Runs come from the insight database (the Run and Train panels record there), or from a Chrome
// trace file. Loading runs on a worker thread; errors (no database, a run without spans, a trace
// cut short) show in the view as a message. A click on a kernel span emits span_clicked with the
// node id in the executed (optimised) graph; the window selects it and the nodes it came from.
//
// Usage:
//   ProfilerPanel panel;
//   panel.set_database_path(db);          // fills the run list
//   panel.open_run(run_id);               // async: loaded() when done
//   connect(&panel, &ProfilerPanel::span_clicked, ...);
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

class QComboBox;
class QTimer;
class QLabel;
class QPushButton;
class QVBoxLayout;

#include "engine/core/status.h"

namespace tessera::insight::timeline {
class TimelineView;
struct Loaded;
}

namespace tessera::studio {

class ImGuiWidget;

class ProfilerPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ProfilerPanel(QWidget* parent = nullptr);
  ~ProfilerPanel() override;  // waits for a load in progress

  // The database whose runs the run list offers; re-reads the list (runs with spans first).
  void set_database_path(const QString& path);
  void refresh_runs();
  // Loads a run of the database, or a Chrome trace file, on a worker thread; loaded() follows.
  void open_run(int64_t run);
  void open_trace(const QString& path);
  bool is_loading() const { return loading_; }

  // Highlights the spans of `node` (a node id of the executed graph; -1: none).
  void select_node(int32_t node);

  // What the panel shows: the title of what is loaded, or the message instead of the timeline.
  const QString& title() const { return title_; }
  const QString& message() const { return message_; }
  QString header_text() const;  // the line above the timeline
  // The GL widget: made on first show, never on the offscreen platform (nullptr until then).
  ImGuiWidget* timeline_widget() const { return widget_; }
  insight::timeline::TimelineView* view() const { return view_.get(); }
  QComboBox* run_list() const { return runs_; }

 Q_SIGNALS:
  void loaded();
  // A span was clicked: its node id in the executed graph (-1 for stage/pass spans), name and op.
  void span_clicked(int32_t node, const QString& name, const QString& op);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  // Runs `load` on the worker thread, then finish_load on the UI thread.
  void start_load(std::function<Expected<insight::timeline::Loaded>()> load);
  void finish_load(Expected<insight::timeline::Loaded> result);
  void join();

  QString db_path_;
  QComboBox* runs_ = nullptr;
  QTimer* poll_ = nullptr;  // re-reads the run list while shown
  QPushButton* open_trace_ = nullptr;
  QLabel* header_ = nullptr;
  bool header_about_database_ = false;  // the header tells of the database, not of a timeline
  ImGuiWidget* widget_ = nullptr;
  QLabel* no_gl_ = nullptr;     // instead of widget_ on the offscreen platform
  QVBoxLayout* body_ = nullptr;
  std::shared_ptr<insight::timeline::TimelineView> view_;
  QString title_, message_;
  bool loading_ = false;
  std::thread worker_;
};

}  // namespace tessera::studio
