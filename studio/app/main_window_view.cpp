// The main window's canvas actions: File > Import ONNX / Export ONNX, View > Find, View > Theme,
// the Group actions (Ctrl+G, Ungroup, Collapse/Expand), and the icons of the main actions.
#include <QAction>
#include <QChart>
#include <QChartView>
#include <QActionGroup>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QPointer>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/common/guard.h"
#include "studio/app/main_window.h"
#include "studio/insight/runs_chart.h"
#include "studio/common/theme.h"

namespace tessera::studio {

namespace {

QAction* find_action(QMenu* menu, const QString& name) {
  for (QAction* a : menu->actions())
    if (a->objectName() == name) return a;
  return nullptr;
}

}  // namespace

void MainWindow::create_canvas_actions(QMenu* file, QMenu* view) {
  // File: Import / Export ONNX, before Quit.
  QAction* quit = find_action(file, QStringLiteral("action_quit"));
  auto* import = new QAction(tr("&Import ONNX\u2026"), this);
  import->setObjectName(QStringLiteral("action_import_onnx"));
  connect(import, &QAction::triggered, this,
          [this] { guarded(this, tr("Importing ONNX"), [&] { (void)import_onnx(); }); });
  auto* export_ = new QAction(tr("&Export ONNX\u2026"), this);
  export_->setObjectName(QStringLiteral("action_export_onnx"));
  connect(export_, &QAction::triggered, this,
          [this] { guarded(this, tr("Exporting ONNX"), [&] { (void)export_onnx(); }); });
  file->insertAction(quit, import);
  file->insertAction(quit, export_);
  file->insertSeparator(quit);

  // View: Find, Find Next (the view's own actions, so that their shortcuts work in the window).
  view->addSeparator();
  view->addAction(view_->find_action());
  QAction* find_next = view_->findChild<QAction*>(QStringLiteral("action_find_next"));
  if (find_next) view->addAction(find_next);
  for (QAction* a : view_->group_actions()) view->addAction(a);

  // View > Show Constant Nodes: constants are rows of their consumers unless this is checked.
  auto* constants = view->addAction(tr("Show &Constant Nodes"));
  constants->setObjectName(QStringLiteral("action_show_constants"));
  constants->setCheckable(true);
  constants->setChecked(!scene_->fold_constants());
  connect(constants, &QAction::toggled, this, [this](bool show) {
    guarded(this, tr("Showing constants"), [&] { scene_->set_fold_constants(!show); });
  });

  // View > Collapse Name Scopes / Expand All Scopes: "/layer1", "/layers.0" as one box each.
  auto* collapse = view->addAction(tr("Co&llapse Name Scopes"));
  collapse->setObjectName(QStringLiteral("action_collapse_scopes"));
  collapse->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  collapse->setToolTip(tr("One box per top-level name scope (/layer1, /layers.0, ...); double-click "
                          "a box to open it"));
  connect(collapse, &QAction::triggered, this, [this] {
    guarded(this, tr("Collapsing scopes"), [&] {
      scene_->collapse_scopes(1);
      if (scene_->collapsed_scopes().empty())
        show_refusal(tr("No name scope of 2 nodes or more: node names have no '/' scopes"));
    });
  });
  auto* patterns = view->addAction(tr("Collapse &Recognised Patterns"));
  patterns->setObjectName(QStringLiteral("action_collapse_patterns"));
  patterns->setToolTip(tr("One box per LayerNorm, GELU, Swish or HardSwish decomposition, as the "
                          "engine's fuse-patterns pass recognises them"));
  connect(patterns, &QAction::triggered, this, [this] {
    guarded(this, tr("Collapsing patterns"), [&] {
      statusBar()->showMessage(tr("Looking for patterns\u2026"));
      scene_->collapse_patterns_in_background([window = QPointer<MainWindow>(this)](int n) {
        if (!window) return;
        window->statusBar()->clearMessage();
        if (n < 0) return;  // the graph changed meanwhile
        if (n == 0) window->show_refusal(tr("No LayerNorm, GELU, Swish or HardSwish decomposition in this graph"));
        else window->statusBar()->showMessage(tr("%n pattern(s) collapsed; double-click one to open it", nullptr, n), 8000);
      });
    });
  });
  auto* expand = view->addAction(tr("Expand All &Scopes"));
  expand->setObjectName(QStringLiteral("action_expand_scopes"));
  connect(expand, &QAction::triggered, this,
          [this] { guarded(this, tr("Expanding scopes"), [&] { scene_->collapse_scopes(0); }); });

  // View > Arrange: lay the graph out again after hand-placed boxes and rewiring (one undo step
  // for the places forgotten).
  auto* arrange = view->addAction(tr("Arrang&e"));
  arrange->setObjectName(QStringLiteral("action_arrange"));
  arrange->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
  arrange->setToolTip(tr("Lay every box out again (Graphviz), forgetting where boxes were placed by hand"));
  connect(arrange, &QAction::triggered, this, [this] {
    guarded(this, tr("Arranging"), [&] {
      (void)document_.clear_positions();  // "nothing is placed by hand": arrange anyway
      scene_->arrange();
    });
  });

  // View > Theme.
  QMenu* themes = view->addMenu(tr("&Theme"));
  themes->setObjectName(QStringLiteral("menu_theme"));
  auto* group = new QActionGroup(this);
  for (style::Theme t : {style::Theme::kLight, style::Theme::kDark}) {
    QAction* a = themes->addAction(t == style::Theme::kLight ? tr("&Light") : tr("&Dark"));
    a->setObjectName(QStringLiteral("action_theme_") + theme_name(t));
    a->setCheckable(true);
    a->setChecked(style::current_theme() == t);
    group->addAction(a);
    connect(a, &QAction::triggered, this,
            [this, t] { guarded(this, tr("Changing the theme"), [&] { set_theme(t); }); });
  }

  // Icons of the main actions (resources/icons, listed in resources/README.md).
  const std::pair<const char*, const char*> icons[] = {{"action_new", "new"},
                                                       {"action_open", "open"},
                                                       {"action_save", "save"},
                                                       {"action_undo", "undo"},
                                                       {"action_redo", "redo"},
                                                       {"action_find", "find"},
                                                       {"action_import_onnx", "import"},
                                                       {"action_export_onnx", "export"},
                                                       {"action_group", "group"}};
  for (const auto& [name, icon] : icons)
    if (QAction* a = findChild<QAction*>(QLatin1String(name))) a->setIcon(action_icon(icon));
}

void MainWindow::set_theme(style::Theme theme) {
  apply_theme(theme);
  scene_->apply_theme();
  view_->viewport()->update();
  // Charts: the dashboard's (which redraws its curves) and the Train panel's.
  for (MetricChart* chart : findChildren<MetricChart*>()) chart->apply_theme();
  for (QChartView* view : findChildren<QChartView*>()) {
    if (qobject_cast<MetricChart*>(view->parentWidget())) continue;
    view->chart()->setTheme(theme == style::Theme::kDark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  }
  if (QAction* a = findChild<QAction*>(QStringLiteral("action_theme_") + theme_name(theme)))
    a->setChecked(true);
  if (!options_.settings_file.isEmpty())
    QSettings(options_.settings_file, QSettings::IniFormat)
        .setValue(QStringLiteral("view/theme"), theme_name(theme));
}

style::Theme MainWindow::theme() const {
  return style::current_theme();
}

Status MainWindow::import_onnx() {
  const QString path = open_dialog_
                           ? open_dialog_()
                           : QFileDialog::getOpenFileName(this, tr("Import ONNX"), last_dir_,
                                                          tr("ONNX (*.onnx);;All files (*)"));
  if (path.isEmpty()) return make_error("cancelled");
  if (!maybe_save()) return make_error("cancelled");
  Status st = open_file(path);
  if (!st) {
    show_open_error(path, st.error());
    return st;
  }
  statusBar()->showMessage(tr("Imported %1").arg(QFileInfo(path).fileName()), 5000);
  return st;
}

Status MainWindow::export_onnx() {
  QString path;
  if (save_as_dialog_) {
    path = save_as_dialog_();
  } else {
    QString start = last_dir_;
    if (!document_.path().empty())
      start = QFileInfo(QString::fromStdString(document_.path())).completeBaseName() +
              QStringLiteral(".onnx");
    path = QFileDialog::getSaveFileName(this, tr("Export ONNX"), start, tr("ONNX (*.onnx)"));
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".onnx");
  }
  if (path.isEmpty()) return make_error("cancelled");
  Status st = QFileInfo(path).suffix().compare(QLatin1String("onnx"), Qt::CaseInsensitive) == 0
                  ? document_.save_copy(path.toStdString())
                  : make_error(path.toStdString() + ": an ONNX export needs a .onnx file name");
  if (!st) {
    if (file_error_dialog_) {
      file_error_dialog_(path, st.error());
    } else {
      QMessageBox box(QMessageBox::Warning, tr("Cannot export %1").arg(QFileInfo(path).fileName()),
                      tr("Could not export the graph to\n%1").arg(path), QMessageBox::Ok, this);
      box.setInformativeText(QString::fromStdString(st.error().to_string()));
      box.exec();
    }
    return st;
  }
  statusBar()->showMessage(tr("Exported %1").arg(QFileInfo(path).fileName()), 5000);
  return st;
}

}  // namespace tessera::studio
