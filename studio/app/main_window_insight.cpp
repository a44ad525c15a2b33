// The window's insight views, as tabs beside the canvas: Runs (the dashboard over the insight
// database), Passes (the pass stepper on the open graph) and Profile (the timeline of a recorded
// run), and the Insight menu. A click on a kernel span selects its node on the canvas and in the
// optimised graph; "Open graph" in the dashboard opens a run's graph as a new document; "Diff
// graphs" shows two runs' graphs in the stepper's diff view.
#include <QAction>
#include <QMenu>
#include <QFrame>
#include <QMenuBar>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabWidget>

#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/insight/graph_diff_view.h"
#include "studio/canvas/graph_view.h"
#include "studio/common/guard.h"
#include "studio/app/main_window.h"
#include "studio/insight/pass_stepper_panel.h"
#include "studio/insight/profiler_panel.h"
#include "studio/panels/run_panel.h"
#include "studio/insight/runs_dashboard.h"
#include "studio/panels/train_panel.h"

namespace tessera::studio {

void MainWindow::create_insight_views() {
  runs_ = new RunsDashboard;
  runs_->setObjectName(QStringLiteral("runs_dashboard"));
  add_tab(runs_, tr("Runs"));
  stepper_ = new PassStepperPanel(document_.registry());
  stepper_->setObjectName(QStringLiteral("pass_stepper"));
  add_tab(stepper_, tr("Passes"));
  stepper_->set_graph_source(
      [this]() -> const ir::Graph* { return document_.is_empty() ? nullptr : &document_.graph(); });
  profiler_ = new ProfilerPanel;
  profiler_->setObjectName(QStringLiteral("profiler"));
  add_tab(profiler_, tr("Profile"));
  diff_ = new GraphDiffView;
  diff_->setObjectName(QStringLiteral("run_graph_diff"));
  add_tab(diff_, tr("Graph Diff"));
  tabs_->setTabVisible(tab_index(diff_), false);  // until two runs' graphs are compared
  if (!options_.insight_database.isEmpty()) (void)runs_->open_database(options_.insight_database);
  profiler_->set_database_path(options_.insight_database);

  QMenu* menu = menuBar()->addMenu(tr("&Insight"));
  menu->setObjectName(QStringLiteral("insight_menu"));
  auto add = [&](const QString& text, const char* name, QKeySequence keys, auto&& slot) {
    QAction* a = menu->addAction(text);
    a->setObjectName(QLatin1String(name));
    a->setShortcut(keys);
    connect(a, &QAction::triggered, this, [this, text, slot] { guarded(this, text, [&] { slot(); }); });
    return a;
  };
  add(tr("&Graph"), "action_graph_tab", QKeySequence(Qt::CTRL | Qt::Key_1), [this] { show_tab(view_); });
  add(tr("&Runs Dashboard"), "action_runs", QKeySequence(Qt::CTRL | Qt::Key_2), [this] {
    if (!options_.insight_database.isEmpty()) (void)runs_->open_database(options_.insight_database);
    show_tab(runs_);
  });
  add(tr("Step Through &Optimisation"), "action_step_passes", QKeySequence(Qt::CTRL | Qt::Key_3), [this] {
    stepper_->set_graph(document_.graph());
    stepper_->compile();
    show_tab(stepper_);
  });
  add(tr("&Profile"), "action_profile", QKeySequence(Qt::CTRL | Qt::Key_4), [this] {
    profiler_->refresh_runs();
    show_tab(profiler_);
  });
  add(tr("Profile the &Last Run"), "action_profile_last", QKeySequence(), [this] {
    profiler_->refresh_runs();
    if (run_panel_->recorded_run() > 0) profiler_->open_run(run_panel_->recorded_run());
    show_tab(profiler_);
  });
  // A run just recorded shows up in the lists; the profile opens when asked.
  connect(run_panel_, &RunPanel::finished, this, [this] {
    guarded(this, tr("Insight"), [&] {
      profiler_->refresh_runs();
      runs_->poll();
    });
  });

  connect(profiler_, &ProfilerPanel::span_clicked, this,
          [this](int32_t node, const QString& name, const QString&) {
            guarded(this, tr("Selecting the span's node"), [&] {
              select_executed_node(node, name);
              // In the optimised graph: the stepper's last snapshot, when it shows this graph.
              const int last = static_cast<int>(stepper_->model().snapshots().size()) - 1;
              if (last >= 0) {
                stepper_->select_snapshot(last);
                stepper_->diff_view()->focus_node(GraphDiffView::Side::kAfter, node);
              }
            });
          });
  connect(stepper_, &PassStepperPanel::node_activated, this, [this](int32_t node) {
    guarded(this, tr("Selecting the node"), [&] {
      QString name;
      if (auto g = stepper_->model().snapshot_graph(stepper_->selected_snapshot()); g && g->has_node(node))
        name = QString::fromStdString(g->node(node).name);
      select_executed_node(node, name);
      show_tab(view_);
    });
  });
  connect(runs_, &RunsDashboard::open_graph_requested, this,
          [this](formats::GraphDocument graph, const QString& title) {
            guarded(this, tr("Opening the run's graph"), [&] {
              if (!maybe_save()) return;
              const auto& props = graph.metadata.properties;
              QString weights = tr("no checkpoint of the run is on disk: its weights are inputs");
              if (auto it = props.find("insight.checkpoint"); it != props.end())
                weights = tr("weights of step %1 from %2")
                              .arg(QString::fromStdString(props.at("insight.checkpoint_step")),
                                   QString::fromStdString(it->second));
              else if (auto e = props.find("insight.checkpoint_error"); e != props.end())
                weights = tr("its checkpoint does not fit: %1").arg(QString::fromStdString(e->second));
              document_.open(std::move(graph));
              show_tab(view_);
              statusBar()->showMessage(tr("Opened %1 (unsaved; %2)").arg(title, weights), 15000);
            });
          });
  connect(runs_, &RunsDashboard::diff_graphs_requested, this,
          [this](formats::GraphDocument a, formats::GraphDocument b, const QString& title, const QString& a_label,
                 const QString& b_label) {
            guarded(this, tr("Comparing graphs"), [&] {
              diff_->set_side_titles(a_label, b_label);
              diff_->set_graphs(std::move(a), std::move(b), {}, DiffMatch::kByName);
              tabs_->setTabVisible(tab_index(diff_), true);
              tabs_->setTabText(tab_index(diff_), title);
              show_tab(diff_);
            });
          });
}

// Each insight view sits in a scroll area: the window keeps the minimum size of the canvas
// alone, and a view wider than the window scrolls instead of widening it.
void MainWindow::add_tab(QWidget* page, const QString& title) {
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(page);
  tabs_->addTab(scroll, title);
}

int MainWindow::tab_index(QWidget* page) const {
  for (int i = 0; i < tabs_->count(); ++i) {
    QWidget* tab = tabs_->widget(i);
    if (tab == page) return i;
    if (auto* scroll = qobject_cast<QScrollArea*>(tab); scroll && scroll->widget() == page) return i;
  }
  return -1;
}

void MainWindow::show_tab(QWidget* page) {
  if (int i = tab_index(page); i >= 0) tabs_->setCurrentIndex(i);
}

// A node of the executed (optimised) graph on the canvas: the same id when the optimiser kept the
// node (its name agrees), else the document's node of that name (a fused node keeps the name of
// the node it replaced).
void MainWindow::select_executed_node(int32_t node, const QString& name) {
  const ir::Graph& g = document_.graph();
  QList<ir::NodeId> ids;
  if (node >= 0 && g.has_node(node) && QString::fromStdString(g.node(node).name) == name) ids << node;
  if (ids.isEmpty() && !name.isEmpty())
    for (ir::NodeId id : g.node_ids())
      if (QString::fromStdString(g.node(id).name) == name) ids << id;
  if (ids.isEmpty()) {
    statusBar()->showMessage(tr("Span '%1' (node #%2 of the executed graph) has no node in this document")
                                 .arg(name)
                                 .arg(node),
                             8000);
    return;
  }
  view_->reveal_nodes(ids);
  statusBar()->showMessage(tr("Selected '%1' (node #%2 of the executed graph)").arg(name).arg(node), 8000);
}

}  // namespace tessera::studio
