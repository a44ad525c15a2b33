// The studio's main window: the graph canvas in the middle, the op palette docked on the left and
// the inspector of the selected node on the right, File and View menus (View toggles the docks),
// and a status bar with the file name, node count, parameter count and the outcome of type
// inference; refused edits show there for a while.
//
// Usage (main.cpp):
//   Document doc(registry);
//   MainWindow window(doc);
//   if (Status st = window.open_file(path); !st) window.show_open_error(path, st.error());
//   window.show();
#pragma once

#include <QList>
#include <QMainWindow>
#include <QString>

#include "engine/core/status.h"

class QDockWidget;
class QLabel;

namespace tessera::studio {

class Document;
class GraphScene;
class GraphView;
class Inspector;
class Palette;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // `document` must outlive the window.
  explicit MainWindow(Document& document, QWidget* parent = nullptr);

  // Opens PATH in the document. The error, naming the file, is returned rather than shown, so
  // that the caller picks a dialog (interactive) or stderr (--screenshot).
  Status open_file(const QString& path);
  // A modal message box naming PATH and the error.
  void show_open_error(const QString& path, const Error& error);

  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  Palette* palette() const { return palette_; }
  Inspector* inspector() const { return inspector_; }
  QDockWidget* palette_dock() const { return palette_dock_; }
  QDockWidget* inspector_dock() const { return inspector_dock_; }

 private:
  void create_menus();
  void create_docks();
  void show_refusal(const QString& message);
  void open_with_dialog();
  void refresh();  // title and status bar from the document

  Document& document_;
  GraphScene* scene_;
  GraphView* view_;
  Palette* palette_ = nullptr;
  Inspector* inspector_ = nullptr;
  QDockWidget* palette_dock_ = nullptr;
  QDockWidget* inspector_dock_ = nullptr;
  QLabel* file_label_;
  QLabel* nodes_label_;
  QLabel* params_label_;
  QLabel* types_label_;
  QLabel* layout_label_;
  QList<QWidget*> graph_status_;  // the labels above and their separators: hidden when empty
  QString last_dir_;
};

}  // namespace tessera::studio
