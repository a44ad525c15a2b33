// The pass stepper panel: snapshot list, diff, placement overlay and memory chart (see
// pass_stepper_panel.h).
// engine/stages/session.h comes before every Qt header: engine/stages/compile.h has a member named
// `slots`, which Qt defines as a macro.
#include "engine/stages/session.h"

#include "studio/insight/pass_stepper_panel.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <functional>

#include "studio/insight/graph_diff_view.h"
#include "studio/common/guard.h"
#include "studio/insight/memory_plan_chart.h"

namespace tessera::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString ms_text(int64_t ns) { return QString::number(static_cast<double>(ns) / 1e6, 'f', 3); }

}  // namespace

QColor device_colour(const std::string& device) {
  if (device == "cpu") return QColor(50, 100, 200);
  if (device == "cpu:test") return QColor(0, 140, 140);
  if (device.rfind("cuda", 0) == 0) return QColor(60, 150, 40);
  return QColor::fromHsv(static_cast<int>(std::hash<std::string>{}(device) % 360), 160, 180);
}

PassStepperPanel::PassStepperPanel(const ops::OpRegistry& registry, QWidget* parent)
    : QWidget(parent),
      model_(new PassStepperModel(registry, this)),
      status_(new QLabel(this)),
      table_(new QTableWidget(0, 6, this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      overlay_(new QCheckBox(tr("Placement overlay"), this)),
      compile_button_(new QPushButton(tr("Compile"), this)),
      training_(new QCheckBox(tr("Training step"), this)),
      ranks_(new QSpinBox(this)),
      diff_(new GraphDiffView(this)),
      chart_(new MemoryPlanChart(this)) {
  table_->setHorizontalHeaderLabels({tr("#"), tr("stage"), tr("pass"), tr("ms"), tr("changed"), tr("nodes")});
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  slider_->setRange(0, 0);
  slider_->setEnabled(false);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* controls = new QHBoxLayout;
  training_->setToolTip(
      tr("Compile the training step (loss, gradients, SGD updates) instead of inference, as `tessera passes "
         "--train` does"));
  ranks_->setRange(1, 1024);
  ranks_->setPrefix(tr("ranks "));
  ranks_->setEnabled(false);
  ranks_->setToolTip(tr("Data-parallel ranks: above 1 the split stage inserts the gradient all-reduce buckets"));
  controls->addWidget(compile_button_);
  controls->addWidget(training_);
  controls->addWidget(ranks_);
  controls->addWidget(overlay_);
  controls->addStretch(1);
  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addLayout(controls);
  left_layout->addWidget(status_);
  left_layout->addWidget(table_, 1);
  left_layout->addWidget(slider_);
  // The diff and the memory plan share the big side as tabs: under the table the plan was a
  // 440 x 180 px strip at 1280x720.
  views_ = new QTabWidget(this);
  views_->setDocumentMode(true);
  views_->addTab(diff_, tr("Diff"));
  views_->addTab(chart_, tr("Memory plan"));
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(views_);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({330, 900});  // the diff gets the room; the splitter gives it back
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);

  connect(model_, &PassStepperModel::started, this, [this] {
    compile_button_->setEnabled(false);
    status_->setText(tr("compiling..."));
  });
  connect(model_, &PassStepperModel::finished, this,
          [this](bool ok) { guarded(this, tr("Pass stepper"), [&] { on_finished(ok); }); });
  auto mode_changed = [this] {
    guarded(this, tr("Pass stepper"), [&] {
      ranks_->setEnabled(training_->isChecked());
      model_->set_mode({training_->isChecked(), ranks_->value()});
      // Recompile what is shown (not a recorded run's snapshots) with the new mode.
      if (model_->run() < 0 && !model_->snapshots().empty() && !model_->is_busy()) compile_button_->click();
    });
  };
  connect(training_, &QCheckBox::toggled, this, mode_changed);
  connect(ranks_, qOverload<int>(&QSpinBox::valueChanged), this, mode_changed);
  connect(compile_button_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Pass stepper"), [&] {
      if (source_) {
        const ir::Graph* g = source_();
        if (!g || g->num_nodes() == 0) {
          status_->setText(tr("No graph to compile: open or build one on the Graph tab."));
          return;
        }
        set_graph(*g);
      }
      compile();
    });
  });
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (!selecting_ && row >= 0) guarded(this, tr("Pass stepper"), [&] { select_snapshot(row); });
  });
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!selecting_) guarded(this, tr("Pass stepper"), [&] { select_snapshot(v); });
  });
  connect(overlay_, &QCheckBox::toggled, this,
          [this](bool on) { guarded(this, tr("Pass stepper"), [&] { set_placement_overlay(on); }); });
  connect(diff_, &GraphDiffView::node_activated, this, [this](int32_t node, bool after) {
    if (after) Q_EMIT node_activated(node);
  });
  show_status();
}

PassStepperPanel::~PassStepperPanel() = default;

void PassStepperPanel::set_graph(const ir::Graph& graph, StepperShapes shapes) {
  model_->set_graph(graph, std::move(shapes));
}

bool PassStepperPanel::compile() { return model_->compile(); }

Status PassStepperPanel::load_run(const std::string& db_path, int64_t run) { return model_->load_run(db_path, run); }

bool PassStepperPanel::placement_overlay() const { return overlay_->isChecked(); }

void PassStepperPanel::set_placement_overlay(bool on) {
  if (overlay_->isChecked() != on) {
    overlay_->setChecked(on);  // toggled() comes back here
    return;
  }
  if (selected_ < 0) return;
  auto g = model_->snapshot_graph(selected_);
  diff_->set_after_marks(on && g ? placement_marks(*g) : std::map<ir::NodeId, NodeMark>{});
}

std::map<ir::NodeId, NodeMark> PassStepperPanel::placement_marks(const ir::Graph& graph) const {
  std::map<ir::NodeId, NodeMark> marks;
  const StepperPlacement& pl = model_->placement();
  if (selected_ >= 0 && model_->snapshots()[static_cast<size_t>(selected_)].stage == "prepare") return marks;
  for (ir::NodeId id : graph.node_ids()) {
    const std::string& dev = pl.device(id);
    if (dev.empty()) continue;
    NodeMark m;
    m.colour = device_colour(dev);
    m.badge = qs(dev);
    m.tooltip = tr("on %1").arg(qs(dev));
    if (auto it = pl.fallback_reason.find(id); it != pl.fallback_reason.end())
      m.tooltip += tr(" (not %1: %2)").arg(qs(pl.preferred), qs(it->second));
    marks[id] = m;
  }
  return marks;
}

void PassStepperPanel::on_finished(bool) {
  compile_button_->setEnabled(true);
  error_ = model_->message();
  fill_table();
  chart_->set_plans(model_->memory());
  diff_->reset_view();  // a new compilation opens at its overview
  selected_ = -1;
  if (!model_->snapshots().empty())
    select_snapshot(static_cast<int>(model_->snapshots().size()) - 1);
  else
    diff_->clear();
  show_status();
}

void PassStepperPanel::fill_table() {
  const QSignalBlocker block_table(table_);
  const auto& snaps = model_->snapshots();
  table_->setRowCount(static_cast<int>(snaps.size()));
  for (int row = 0; row < static_cast<int>(snaps.size()); ++row) {
    const observe::Snapshot& s = snaps[static_cast<size_t>(row)];
    const QStringList cells = {QString::number(s.index),
                               qs(s.stage),
                               s.pass.empty() ? tr("(stage)") : qs(s.pass),
                               ms_text(s.duration_ns),
                               s.changed ? tr("yes") : tr("no"),
                               QString("%1 -> %2").arg(s.nodes_before).arg(s.nodes_after)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (!s.diagnostics.empty()) item->setToolTip(qs(s.diagnostics.front()));
      table_->setItem(row, c, item);
    }
  }
  const QSignalBlocker block_slider(slider_);
  slider_->setRange(0, std::max(0, static_cast<int>(snaps.size()) - 1));
  slider_->setEnabled(!snaps.empty());
}

void PassStepperPanel::select_snapshot(int index) {
  const auto& snaps = model_->snapshots();
  if (index < 0 || index >= static_cast<int>(snaps.size())) return;
  selected_ = index;
  selecting_ = true;
  table_->setCurrentCell(index, 0);
  slider_->setValue(index);
  selecting_ = false;
  error_.clear();
  auto after = model_->snapshot_graph(index);
  if (!after) {
    error_ = qs(after.error().to_string());
    diff_->clear();
    show_status();
    return;
  }
  ir::Graph before_graph("empty");
  // A stage's own row compares with the graph the stage started from (as its node counts do),
  // not with its last pass's: the passes of the stage are the rows just above it.
  int from = index - 1;
  if (snaps[static_cast<size_t>(index)].pass.empty())
    while (from >= 0 && !snaps[static_cast<size_t>(from)].pass.empty() &&
           snaps[static_cast<size_t>(from)].stage == snaps[static_cast<size_t>(index)].stage)
      --from;
  if (from >= 0) {
    auto before = model_->snapshot_graph(from);
    if (!before) {
      error_ = qs(before.error().to_string());
      diff_->clear();
      show_status();
      return;
    }
    before_graph = std::move(*before);
  } else if (model_->run() < 0) {
    before_graph = model_->graph();  // the graph as given, before prepare
  }
  std::map<ir::NodeId, NodeMark> marks;
  if (overlay_->isChecked()) marks = placement_marks(*after);
  diff_->set_after_marks(std::move(marks), /*redraw=*/false);
  // A stage's row spans several passes: its provenance traced back through them.
  ProvenanceList provenance = snaps[static_cast<size_t>(index)].provenance;
  if (from < index - 1) {
    ProvenanceList earlier;
    for (int k = std::max(0, from + 1); k < index; ++k)
      earlier.insert(earlier.end(), snaps[static_cast<size_t>(k)].provenance.begin(),
                     snaps[static_cast<size_t>(k)].provenance.end());
    provenance = trace_provenance(provenance, earlier, before_graph);
  }
  diff_->set_graphs({std::move(before_graph), {}, {}}, {std::move(*after), {}, {}}, std::move(provenance));
  show_status();
}

void PassStepperPanel::show_status() {
  QString text = model_->source();
  if (model_->compile_ns() > 0) text += tr(", %1 ms").arg(ms_text(model_->compile_ns()));
  if (!model_->snapshots().empty()) text += tr(", %1 snapshots").arg(model_->snapshots().size());
  if (selected_ >= 0 && selected_ < static_cast<int>(model_->snapshots().size())) {
    const observe::Snapshot& s = model_->snapshots()[static_cast<size_t>(selected_)];
    text += tr("<br>snapshot %1: %2%3, %4 (%5)")
                .arg(s.index)
                .arg(qs(s.stage), s.pass.empty() ? QString() : "/" + qs(s.pass))
                .arg(tr("%1 -> %2 nodes").arg(s.nodes_before).arg(s.nodes_after), diff_->counts_text());
  }
  if (text.isEmpty()) text = tr("No compilation yet: press Compile to step through the optimisation of the open graph.");
  if (!error_.isEmpty()) text += "<br><span style='color:#c02020'>" + error_.toHtmlEscaped() + "</span>";
  status_->setText(text);
}

}  // namespace tessera::studio
