// The studio's main window: the graph canvas in the middle, File and View menus, and a status
// bar with the file name, node count, parameter count and the outcome of type inference.
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

class QLabel;

namespace tessera::studio {

class Document;
class GraphScene;
class GraphView;

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

 private:
  void create_menus();
  void open_with_dialog();
  void refresh();  // title and status bar from the document

  Document& document_;
  GraphScene* scene_;
  GraphView* view_;
  QLabel* file_label_;
  QLabel* nodes_label_;
  QLabel* params_label_;
  QLabel* types_label_;
  QLabel* layout_label_;
  QList<QWidget*> graph_status_;  // the labels above and their separators: hidden when empty
  QString last_dir_;
};

}  // namespace tessera::studio
