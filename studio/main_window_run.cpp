// The window's Run side: the Run and Train docks (studio/run_panel.h, studio/train_panel.h) and
// the Run menu (Run F5, the two docks' toggles).
#include "studio/main_window.h"

#include "engine/stages/session.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>

#include "insight/database.h"
#include "studio/document.h"
#include "studio/guard.h"
#include "studio/run_panel.h"
#include "studio/train_panel.h"

namespace tessera::studio {

void MainWindow::create_run_and_train() {
  run_panel_ = new RunPanel(document_, this);
  run_dock_ = new QDockWidget(tr("Run"), this);
  run_dock_->setObjectName(QStringLiteral("run_dock"));
  run_dock_->setWidget(run_panel_);
  addDockWidget(Qt::RightDockWidgetArea, run_dock_);

  train_panel_ = new TrainPanel(document_, this);
  train_dock_ = new QDockWidget(tr("Train"), this);
  train_dock_->setObjectName(QStringLiteral("train_dock"));
  train_dock_->setWidget(train_panel_);
  addDockWidget(Qt::RightDockWidgetArea, train_dock_);
  tabifyDockWidget(run_dock_, train_dock_);
  run_dock_->hide();
  train_dock_->hide();

  train_panel_->set_database_path(options_.insight_database);
  run_panel_->set_database_path(options_.insight_database);

  QMenu* menu = menuBar()->addMenu(tr("&Run"));
  QAction* run = menu->addAction(tr("&Run"));
  run->setObjectName(QStringLiteral("run_action"));
  run->setShortcut(QKeySequence(Qt::Key_F5));
  connect(run, &QAction::triggered, this, [this] {
    guarded(this, tr("Run"), [&] {
      run_dock_->show();
      run_dock_->raise();
      run_panel_->run();
    });
  });
  menu->addSeparator();
  QAction* show_run = run_dock_->toggleViewAction();
  show_run->setText(tr("Run &Panel"));
  menu->addAction(show_run);
  QAction* show_train = train_dock_->toggleViewAction();
  show_train->setText(tr("&Train Panel"));
  menu->addAction(show_train);
}

}  // namespace tessera::studio
