// The window's Run side: the Run and Train docks (studio/run_panel.h, studio/train_panel.h) and
// the Run menu (Run F5, the two docks' toggles).
#include "studio/app/main_window.h"

#include "engine/stages/session.h"

#include <QAction>
#include <QDir>
#include <QScrollArea>
#include <QScrollBar>
#include <QLabel>
#include <QDockWidget>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QTimer>

#include "insight/database.h"
#include "studio/document/document.h"
#include "studio/common/guard.h"
#include "studio/panels/run_panel.h"
#include "studio/panels/train_panel.h"
#include "studio/canvas/graph_view.h"
#include "studio/panels/value_view.h"

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
  // In a scroll area: the form and its two charts are taller than a 1280x720 window's dock, which
  // forced the window to 843 px; status lines wrap instead of widening the dock while training.
  auto* train_scroll = new QScrollArea(this);
  train_scroll->setWidgetResizable(true);
  train_scroll->setFrameShape(QFrame::NoFrame);
  train_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  train_scroll->setWidget(train_panel_);
  for (QLabel* l : train_panel_->findChildren<QLabel*>()) l->setWordWrap(true);
  // As wide as the form needs (its buttons were clipped at the right edge), scrolling only down.
  train_scroll->setMinimumWidth(train_panel_->minimumSizeHint().width() +
                                train_scroll->verticalScrollBar()->sizeHint().width());
  train_dock_->setWidget(train_scroll);
  addDockWidget(Qt::RightDockWidgetArea, train_dock_);
  tabifyDockWidget(run_dock_, train_dock_);
  run_dock_->hide();
  train_dock_->hide();

  // Values: a click on an edge after a run shows that value's tensor.
  value_view_ = new ValueView(this);
  value_dock_ = new QDockWidget(tr("Value"), this);
  value_dock_->setObjectName(QStringLiteral("value_dock"));
  value_dock_->setWidget(value_view_);
  addDockWidget(Qt::RightDockWidgetArea, value_dock_);
  tabifyDockWidget(run_dock_, value_dock_);
  value_dock_->hide();
  connect(view_, &GraphView::value_clicked, this,
          [this](ir::ValueId v) { guarded(this, tr("Showing the value"), [&] { (void)show_value(v); }); });
  // Another graph: nothing of the last one's values (or notes about them) stays in the dock.
  connect(&document_, &Document::graph_reset, value_view_,
          [this] { guarded(this, tr("Showing the value"), [&] { value_view_->clear(); }); });
  connect(run_panel_, &RunPanel::values_changed, this, [this] {
    guarded(this, tr("Showing the value"), [&] {
      if (value_view_->has_value() && run_panel_->value_count() == 0)
        value_view_->clear(tr("The graph changed since the run: run it again to inspect its values."));
    });
  });

  // A Run, Train or Value dock shown under the inspector gets most of the height: the Train form
  // was a strip under "No node selected".
  for (QDockWidget* dock : {run_dock_, train_dock_, value_dock_})
    connect(dock, &QDockWidget::visibilityChanged, this, [this, dock](bool visible) {
      if (!visible || dock->isFloating() || !inspector_dock_ || !inspector_dock_->isVisible() ||
          inspector_dock_->isFloating() || dockWidgetArea(dock) != dockWidgetArea(inspector_dock_))
        return;
      const int room = inspector_dock_->height() + dock->height();
      QTimer::singleShot(0, this, [this, dock, room] {
        guarded(this, tr("Showing the panel"), [&] {
          resizeDocks({inspector_dock_, dock}, {room * 3 / 10, room * 7 / 10}, Qt::Vertical);
        });
      });
    });

  train_panel_->set_database_path(options_.insight_database);
  run_panel_->set_database_path(options_.insight_database);

  QMenu* menu = menuBar()->addMenu(tr("&Run"));
  menu->setObjectName(QStringLiteral("run_menu"));
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
  QAction* show_value = value_dock_->toggleViewAction();
  show_value->setText(tr("&Value Panel"));
  menu->addAction(show_value);
}

bool MainWindow::show_value(ir::ValueId v) {
  if (document_.is_empty() || !document_.graph().has_value(v)) return false;
  const std::string& name = document_.graph().value(v).name;
  const QString label = QString::fromStdString(name.empty() ? "%" + std::to_string(v) : name);
  value_dock_->show();
  value_dock_->raise();
  if (const Tensor* t = run_panel_->value(v)) {
    value_view_->set_value(label, *t);
    return true;
  }
  value_view_->clear(run_panel_->value_count() == 0
                         ? tr("No value of '%1' yet: run the graph (F5) with \"Keep every value\" ticked.").arg(label)
                         : tr("'%1' was not kept by the last run.").arg(label));
  return false;
}

}  // namespace tessera::studio
