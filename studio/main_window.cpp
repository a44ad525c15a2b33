// The studio's main window: menus, canvas, status bar.
#include "studio/main_window.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QKeySequence>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

#include "studio/document.h"
#include "studio/graph_scene.h"
#include "studio/graph_view.h"
#include "studio/guard.h"
#include "studio/inspector.h"
#include "studio/palette.h"

namespace tessera::studio {

MainWindow::MainWindow(Document& document, QWidget* parent)
    : QMainWindow(parent), document_(document) {
  scene_ = new GraphScene(document_, this);
  view_ = new GraphView(scene_, this);
  setCentralWidget(view_);

  file_label_ = new QLabel(this);
  nodes_label_ = new QLabel(this);
  params_label_ = new QLabel(this);
  types_label_ = new QLabel(this);
  layout_label_ = new QLabel(this);
  statusBar()->addWidget(file_label_, 1);
  for (QLabel* label : {layout_label_, types_label_, nodes_label_, params_label_}) {
    label->setContentsMargins(10, 0, 10, 0);
    auto* separator = new QFrame(this);
    separator->setFrameShape(QFrame::VLine);
    separator->setFrameShadow(QFrame::Sunken);
    statusBar()->addPermanentWidget(separator);
    statusBar()->addPermanentWidget(label);
    graph_status_ << separator << label;
  }
  file_label_->setContentsMargins(6, 0, 6, 0);

  // Which layout is shown: "Graphviz layout", or the layered one and why.
  connect(scene_, &GraphScene::layout_note_changed, layout_label_, &QLabel::setText);
  layout_label_->setText(scene_->layout_note());

  create_docks();
  create_menus();
  connect(&document_, &Document::graph_reset, this,
          [this] { guarded(this, tr("Updating the window"), [&] { refresh(); }); });
  refresh();
}

void MainWindow::create_docks() {
  view_->set_document(&document_);
  connect(view_, &GraphView::edit_refused, this, &MainWindow::show_refusal);

  palette_ = new Palette(document_.registry(), this);
  palette_dock_ = new QDockWidget(tr("Palette"), this);
  palette_dock_->setObjectName(QStringLiteral("palette_dock"));
  palette_dock_->setWidget(palette_);
  addDockWidget(Qt::LeftDockWidgetArea, palette_dock_);
  connect(palette_, &Palette::op_activated, this, [this](const QString& op) {
    guarded(this, tr("Adding an op"), [&] { (void)view_->add_op_at_centre(op); });
  });

  inspector_ = new Inspector(document_, this);
  inspector_dock_ = new QDockWidget(tr("Inspector"), this);
  inspector_dock_->setObjectName(QStringLiteral("inspector_dock"));
  inspector_dock_->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspector_dock_);
  connect(scene_, &GraphScene::node_selection_changed, inspector_,
          [this](const QList<ir::NodeId>& ids) {
            guarded(this, tr("Showing the node"), [&] { inspector_->show_selection(ids); });
          });
  connect(inspector_, &Inspector::edit_refused, this, &MainWindow::show_refusal);
  resizeDocks({palette_dock_, inspector_dock_}, {220, 320}, Qt::Horizontal);
}

void MainWindow::show_refusal(const QString& message) {
  statusBar()->showMessage(message, 10000);
}

void MainWindow::create_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open\u2026"));
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this,
          [this] { guarded(this, tr("Opening a file"), [&] { open_with_dialog(); }); });
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* fit = view->addAction(tr("&Fit"));
  fit->setShortcut(QKeySequence(Qt::Key_F));
  connect(fit, &QAction::triggered, this,
          [this] { guarded(this, tr("Fit"), [&] { view_->fit(); }); });
  QAction* zoom_in = view->addAction(tr("Zoom &In"));
  zoom_in->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  connect(zoom_in, &QAction::triggered, this,
          [this] { guarded(this, tr("Zoom in"), [&] { view_->zoom_in(); }); });
  QAction* zoom_out = view->addAction(tr("Zoom &Out"));
  zoom_out->setShortcut(QKeySequence::ZoomOut);
  connect(zoom_out, &QAction::triggered, this,
          [this] { guarded(this, tr("Zoom out"), [&] { view_->zoom_out(); }); });
  QAction* actual = view->addAction(tr("&Actual Size"));
  actual->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  connect(actual, &QAction::triggered, this,
          [this] { guarded(this, tr("Actual size"), [&] { view_->reset_zoom(); }); });
  view->addSeparator();
  QAction* show_palette = palette_dock_->toggleViewAction();
  show_palette->setText(tr("&Palette"));
  view->addAction(show_palette);
  QAction* show_inspector = inspector_dock_->toggleViewAction();
  show_inspector->setText(tr("&Inspector"));
  view->addAction(show_inspector);
}

Status MainWindow::open_file(const QString& path) {
  last_dir_ = QFileInfo(path).absolutePath();
  return document_.load(path.toStdString());
}

void MainWindow::show_open_error(const QString& path, const Error& error) {
  QMessageBox box(QMessageBox::Warning, tr("Cannot open %1").arg(QFileInfo(path).fileName()),
                  tr("Could not open the graph file\n%1").arg(path), QMessageBox::Ok, this);
  box.setInformativeText(QString::fromStdString(error.to_string()));
  // Paths and parser messages are long: a wider box than Qt's default keeps them on few lines.
  // (The object names are QMessageBox's own, stable since Qt 4.)
  box.setStyleSheet(QStringLiteral(
      "QLabel#qt_msgbox_label, QLabel#qt_msgbox_informativelabel { min-width: 480px; }"));
  box.exec();
}

void MainWindow::open_with_dialog() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open graph"), last_dir_,
      tr("Tessera graphs (*.json *.tir);;JSON graphs (*.json);;IR text (*.tir);;All files (*)"));
  if (path.isEmpty()) return;
  if (Status st = open_file(path); !st) show_open_error(path, st.error());
}

void MainWindow::refresh() {
  const QString app = tr("Tessera Studio");
  if (document_.is_empty()) {
    setWindowTitle(app);
    file_label_->setText(tr("No graph open"));
    for (QWidget* w : graph_status_) w->hide();
    return;
  }
  for (QWidget* w : graph_status_) w->show();
  setWindowTitle(QStringLiteral("%1 \u2014 %2").arg(document_.file_name(), app));
  file_label_->setText(document_.file_name());
  file_label_->setToolTip(QString::fromStdString(document_.path()));
  const QLocale numbers(QLocale::English);  // digit grouping: "61,706"
  const int nodes = document_.graph().num_nodes();
  nodes_label_->setText(tr("%1 nodes").arg(numbers.toString(nodes)));
  params_label_->setText(
      tr("%1 parameters")
          .arg(numbers.toString(static_cast<qlonglong>(document_.parameter_count()))));
  if (const auto& error = document_.inference_error()) {
    types_label_->setText(error->node >= 0 ? tr("type inference failed at the red node")
                                           : tr("type inference failed"));
    types_label_->setStyleSheet(QStringLiteral("color: #d02121;"));
    types_label_->setToolTip(QString::fromStdString(error->to_string()));
  } else {
    types_label_->setText(tr("types inferred"));
    types_label_->setStyleSheet(QString());
    types_label_->setToolTip(QString());
  }
}

}  // namespace tessera::studio
