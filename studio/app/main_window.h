// The studio's main window: the graph canvas in the middle, the op palette docked on the left and
// the inspector of the selected node on the right, File, Edit and View menus, and a status bar
// with the file name, node count, parameter count and the outcome of type inference; refused
// edits show there for a while.
//
// Files (main_window_files.cpp): New, Open, Save, Save As, Recent Files; a "Save changes?" prompt
// before the document is replaced or the window closes while it is modified; autosave of a
// modified document to a folder, offered back when its file is opened again; window geometry,
// docks, recent files and the last folder kept in a settings file. Prompts go through replaceable
// hooks so that tests answer them without a modal loop.
//
// Run (main_window_run.cpp): the Run and Train docks (studio/run_panel.h, studio/train_panel.h)
// and the Run menu (Run F5).
//
// Usage (main.cpp):
//   Document doc(registry);
//   MainWindow window(doc, MainWindowOptions::persistent());
//   if (Status st = window.open_file(path); !st) window.show_open_error(path, st.error());
//   else window.offer_restore();
//   window.show();
#pragma once

#include <QList>
#include <QMainWindow>
#include <QString>
#include <QStringList>
#include <functional>

#include "engine/core/status.h"
#include "studio/common/canvas_style.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QTabWidget;
class QTimer;

namespace tessera::studio {

class Document;
class GraphScene;
class GraphView;
class Inspector;
class Palette;
class GraphDiffView;
class PassStepperPanel;
class ProfilerPanel;
class RunsDashboard;
class RunPanel;
class TrainPanel;
class ValueView;

struct MainWindowOptions {
  // INI file for window geometry and docks, recent files and the last folder; empty: nothing is
  // read or written (tests). persistent() uses QSettings("Tessera", "tessera-studio")'s file.
  QString settings_file;
  // Folder for autosaves; empty: no autosave.
  QString autosave_dir;
  int autosave_interval_ms = 60000;
  // The insight database the Run and Train panels record runs in and the runs dashboard reads;
  // empty: nothing is recorded. main() fills it (--db, else insight::default_database_path).
  QString insight_database;
  // A window showing a nested graph of another (an If branch): the graph only, no Run menu, no
  // Run/Train docks and no Runs/Passes/Profile tabs (they act on the whole model).
  bool nested_view = false;
  // What the app uses: the settings above and AppDataLocation/autosave, every 60 s.
  static MainWindowOptions persistent();
};

// The answer to "Save changes to X?".
enum class SaveChoice { kSave, kDiscard, kCancel };

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int kMaxRecentFiles = 8;

  // `document` must outlive the window.
  explicit MainWindow(Document& document, QWidget* parent = nullptr);
  MainWindow(Document& document, MainWindowOptions options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens PATH in the document (no prompt). The error, naming the file, is returned rather than
  // shown, so that the caller picks a dialog (interactive) or stderr (--screenshot). On success
  // PATH goes to the top of the recent files.
  Status open_file(const QString& path);
  // What File › Open, Recent Files and the command line do: open_file() with the reading, type
  // inference and counting on a worker thread (Document::load_in_background), so the window keeps
  // responding; an error shows in a dialog, a success goes to the recent files and offers a newer
  // autosave back. Opening another file before it ends supersedes it.
  void open_in_background(const QString& path);
  // 1200x760, or the screen's available size when that is smaller (a 1280x720 screen).
  QSize first_size() const;
  // A modal message box naming PATH and the error.
  void show_open_error(const QString& path, const Error& error);

  // ---- files ----
  // Asks "Save changes to X?" when the document is modified (through the save prompt hook):
  // true when the caller may go on (saved, discarded, or nothing to save), false on Cancel or
  // when the save failed.
  bool maybe_save();
  // New: maybe_save(), then an empty document. False when cancelled.
  bool new_document();
  // Writes the canvas's box positions into the document (set_positions, one undo step, only for
  // boxes whose place differs from the document's), saves to PATH (format by extension), removes
  // the autosave, adds PATH to the recent files.
  Status save_to(const QString& path);
  QStringList recent_files() const { return recent_; }

  // ---- autosave ----
  // Where the current document autosaves: <dir>/<name>-<hash of its absolute path>.tsr; empty
  // without an autosave folder.
  QString autosave_path() const;
  QString autosave_path_for(const QString& file) const;
  // Writes the autosave now (the timer does this when the document is modified).
  Status autosave_now();
  // When an autosave of the current file exists and is newer than the file, asks (restore hook)
  // and on yes replaces the document with it (modified, same path). True when restored.
  bool offer_restore();

  // ---- hooks, for tests: replace the modal dialogs ----
  void set_save_prompt(std::function<SaveChoice(const QString& file_name)> prompt) {
    save_prompt_ = std::move(prompt);
  }
  void set_restore_prompt(std::function<bool(const QString& file_name)> prompt) {
    restore_prompt_ = std::move(prompt);
  }
  // Picks a path for Save As (default: a file dialog); empty cancels.
  void set_save_as_dialog(std::function<QString()> dialog) { save_as_dialog_ = std::move(dialog); }
  // Picks a file for File > Open and File > Import ONNX (default: a file dialog); empty cancels.
  // (Save As and Export ONNX both ask set_save_as_dialog's hook.)
  void set_open_dialog(std::function<QString()> dialog) { open_dialog_ = std::move(dialog); }
  // Shows a file error (default: a modal message box naming the file and the reason): opening,
  // importing and exporting report through it.
  void set_file_error_dialog(std::function<void(const QString& path, const Error& error)> dialog) {
    file_error_dialog_ = std::move(dialog);
  }

  // ---- canvas menus (main_window_view.cpp) ----
  // File > Import ONNX...: like Open, for .onnx files. File > Export ONNX...: writes the graph
  // (no layout) to a .onnx path; the document keeps its own path and modified state. Errors go
  // to the file error dialog and are returned.
  Status import_onnx();
  Status export_onnx();
  // View > Theme: the widgets' palette and the canvas colours; kept in the settings file.
  void set_theme(style::Theme theme);
  style::Theme theme() const;

  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  Palette* palette() const { return palette_; }
  Inspector* inspector() const { return inspector_; }
  RunPanel* run_panel() const { return run_panel_; }
  TrainPanel* train_panel() const { return train_panel_; }
  QTabWidget* tabs() const { return tabs_; }  // Graph, Runs, Passes, Profile, Graph Diff
  // Shows the tab of a view (view(), runs_dashboard(), pass_stepper(), profiler(), graph_diff()).
  void show_tab(QWidget* page);
  int tab_index(QWidget* page) const;
  ProfilerPanel* profiler() const { return profiler_; }
  RunsDashboard* runs_dashboard() const { return runs_; }
  // `message` with the engine's ids replaced by names ("Conv 'conv1' (#3)" -> "Conv 'conv1'",
  // "%12" -> "'x'" when the value has a name).
  QString readable_message(const QString& message) const;
  // A refusal in the status bar, readable and whole (labels make room; the tooltip holds the
  // text when it still does not fit).
  void show_refusal(const QString& message);
  const QString& last_refusal() const { return last_refusal_; }  // as shown, for tests
  PassStepperPanel* pass_stepper() const { return stepper_; }
  GraphDiffView* graph_diff() const { return diff_; }
  QDockWidget* run_dock() const { return run_dock_; }
  QDockWidget* train_dock() const { return train_dock_; }
  QDockWidget* value_dock() const { return value_dock_; }
  ValueView* value_view() const { return value_view_; }
  // Shows value `v` of the last run in the Value dock (false, with the reason there, when the run
  // kept no such value).
  bool show_value(int32_t v);  // v: an ir::ValueId (int32_t; the IR headers stay out of here)
  // Opens the graph held in attribute `attribute` of node `node` (If's then_branch, Loop's body)
  // in a window of its own, titled by where it lives ("main \u203a If 'cond' \u203a then_branch");
  // it can open its own nested graphs. A view: edits there are not written back. nullptr when the
  // node has no such graph.
  MainWindow* open_subgraph(int32_t node, const QString& attribute);
  void set_title_hint(const QString& hint) { title_hint_ = hint; refresh(); }
  // What the title calls the document: its file name, or the title hint of an untitled one.
  QString display_name() const;
  QDockWidget* palette_dock() const { return palette_dock_; }
  QDockWidget* inspector_dock() const { return inspector_dock_; }
  QMenu* recent_menu() const { return recent_menu_; }

 protected:
  void closeEvent(QCloseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  // The docks of the editor (palette, inspector, run, train, value) give way on the insight tabs
  // and come back with the canvas; and they never take more than 45 % of the window's width.
  void on_tab_changed();
  void restore_editor_docks();
  void fit_docks();
  QList<QDockWidget*> hidden_for_tab_;
  bool fit_docks_pending_ = false;

 private:
  void create_menus();
  void create_edit_menu();
  void create_canvas_actions(QMenu* file, QMenu* view);  // main_window_view.cpp
  void create_docks();
  void create_run_and_train();  // main_window_run.cpp: the Run and Train docks, the Run menu
  void create_insight_views();  // main_window_insight.cpp: the Runs, Passes and Profile tabs
  void select_executed_node(int32_t node, const QString& name);
  void add_tab(QWidget* page, const QString& title);
  void open_with_dialog();
  void open_interactive(const QString& path);
  bool save();     // to the document's path, else Save As
  bool save_as();  // asks for a path
  void refresh();  // title and status bar from the document
  // Edit menu
  void delete_selection();
  void copy_selection();
  void cut_selection();
  void paste();
  // Files
  void add_recent(const QString& path);
  void rebuild_recent_menu();
  void remove_autosave(const QString& file);
  void load_settings();
  void save_settings();
  void sync_positions();

  Document& document_;
  MainWindowOptions options_;
  GraphScene* scene_;
  GraphView* view_;
  Palette* palette_ = nullptr;
  Inspector* inspector_ = nullptr;
  QDockWidget* palette_dock_ = nullptr;
  QDockWidget* inspector_dock_ = nullptr;
  RunPanel* run_panel_ = nullptr;
  TrainPanel* train_panel_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  ProfilerPanel* profiler_ = nullptr;
  RunsDashboard* runs_ = nullptr;
  PassStepperPanel* stepper_ = nullptr;
  GraphDiffView* diff_ = nullptr;  // two runs' graphs, from the dashboard
  QDockWidget* run_dock_ = nullptr;
  QDockWidget* train_dock_ = nullptr;
  QDockWidget* value_dock_ = nullptr;
  ValueView* value_view_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QString last_refusal_;
  QString opening_;  // the file being read in the background (open_in_background), or empty
  QString title_hint_;  // the title of an untitled document (a nested graph's place)
  QTimer* autosave_timer_ = nullptr;
  QLabel* file_label_;
  QLabel* nodes_label_;
  QLabel* params_label_;
  QLabel* flops_label_;
  QLabel* types_label_;
  QLabel* layout_label_;
  QList<QWidget*> graph_status_;  // the labels above and their separators: hidden when empty
  QString last_dir_;
  QStringList recent_;
  int paste_count_ = 0;  // pastes since the last copy: each lands a step further
  std::function<SaveChoice(const QString&)> save_prompt_;
  std::function<bool(const QString&)> restore_prompt_;
  std::function<QString()> save_as_dialog_;
  std::function<QString()> open_dialog_;
  std::function<void(const QString&, const Error&)> file_error_dialog_;
};

}  // namespace tessera::studio
