// Tests of studio/pass_stepper_model.cpp and studio/pass_stepper_panel.cpp (with
// insight/snapshot_query.cpp): LeNet and the MLP compiled headless, every snapshot kept (the
// sequence `tessera passes` prints), the fuse pass's provenance and diffs counted by hand from the
// dumped IR, placement and memory plan (arena sizes as `tessera passes` reports them), the worker
// thread, a graph that does not type, a run's snapshots read back from the insight store, a
// snapshot whose IR no longer parses, the panel (list, diff colours, overlay, a screenshot), and,
// when build/zoo/resnet50.onnx exists (tests/zoo/make_zoo.py makes it), ResNet-50's compile and
// step-through times.
// engine/stages/session.h first: Qt's `slots` macro would break engine/stages/compile.h.
#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/stages/session.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QCheckBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QGraphicsView>
#include <QTest>
#include <algorithm>
#include <string>

#include "engine/ir/text.h"
#include "formats/document.h"
#include "insight/recorder.h"
#include "studio/insight/graph_diff.h"
#include "studio/insight/graph_diff_view.h"
#include "studio/insight/memory_plan_chart.h"
#include "studio/insight/pass_stepper_model.h"
#include "studio/insight/pass_stepper_panel.h"

using tessera::ir::Graph;
using tessera::ir::NodeId;
using tessera::observe::Snapshot;
using tessera::studio::diff_graphs;
using tessera::studio::GraphDiff;
using tessera::studio::GraphDiffView;
using tessera::studio::PassStepperModel;
using tessera::studio::PassStepperPanel;
namespace insight = tessera::insight;
namespace ops = tessera::ops;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";
const std::string kMlp = tessera::test::source_dir() + "/samples/mlp.json";
const std::string kResnet = tessera::test::source_dir() + "/build/zoo/resnet50.onnx";

const char kBadShapeTir[] = R"(graph "bad" {
  input %0 "x" : f32[N, 16]
  input %1 "y" : f32[N, 8]
  #0 "mix" = Add(%0, %1) -> (%2 "m" : f32[N, 16])
  output %2
}
)";

Graph load(const std::string& path) {
  auto doc = tessera::formats::load_document(path);
  if (!doc) qFatal("cannot load %s: %s", path.c_str(), doc.error().to_string().c_str());
  return std::move(doc->graph);
}

std::vector<std::string> stage_pass(const std::vector<Snapshot>& snaps) {
  std::vector<std::string> out;
  for (const Snapshot& s : snaps) out.push_back(s.pass.empty() ? s.stage : s.stage + "/" + s.pass);
  return out;
}

GraphDiff diff_of(const PassStepperModel& m, int index) {
  auto before = m.snapshot_graph(index - 1);
  auto after = m.snapshot_graph(index);
  if (!before || !after) qFatal("snapshot does not parse");
  return diff_graphs(*before, *after, m.snapshots()[static_cast<size_t>(index)].provenance);
}

using Prov = std::vector<std::pair<int32_t, std::vector<int32_t>>>;
using Ids = std::vector<NodeId>;

// Records run with these snapshots into DB; returns its id.
int64_t record_run(const std::string& db, const std::string& engine_version, const std::vector<Snapshot>& snaps) {
  auto rec = insight::Recorder::open(db);
  if (!rec) qFatal("%s", rec.error().to_string().c_str());
  insight::RunInfo info;
  info.kind = "passes";
  info.name = "lenet";
  info.graph_name = "lenet";
  info.command = "test";
  info.engine_version = engine_version;
  auto run = (*rec)->start_run(info);
  if (!run) qFatal("%s", run.error().to_string().c_str());
  for (const Snapshot& s : snaps) (*rec)->on_snapshot(s);
  if (!(*rec)->finish_run(insight::RunStatus::kFinished)) qFatal("finish_run failed");
  return *run;
}

}  // namespace

class PassStepperTest : public QObject {
  Q_OBJECT

 public:
  PassStepperTest() : registry_(ops::make_default_registry()) {}

 private Q_SLOTS:
  void lenet_keeps_every_snapshot() {
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    QSignalSpy done(&m, &PassStepperModel::finished);
    QVERIFY2(m.compile_now().is_ok(), qPrintable(m.message()));
    QCOMPARE(done.count(), 1);
    QCOMPARE(done[0][0].toBool(), true);
    QVERIFY(m.message().isEmpty());
    // `tessera passes samples/lenet.json --dump`: 000-prepare 001-split 002-optimise-fuse
    // 003-optimise-layout 004-optimise.
    const std::vector<std::string> expected = {"prepare", "split", "optimise/fuse", "optimise/layout", "optimise"};
    QCOMPARE(stage_pass(m.snapshots()), expected);
    for (int i = 0; i < static_cast<int>(m.snapshots().size()); ++i) QCOMPARE(m.snapshots()[i].index, i);
    // As many as the passes that changed the graph plus the three stages that print a graph,
    // counted on a compilation of our own.
    const tessera::backend::DeviceSet devices = tessera::backend::DeviceSet::standard(false);
    auto c = tessera::stages::compile_all(load(kLenet), registry_, {{"x", {1, 1, 28, 28}}}, {}, devices, false);
    QVERIFY(static_cast<bool>(c));
    size_t changed = 0;
    for (const auto& p : c->context->passes) changed += p.changed;
    QCOMPARE(m.snapshots().size(), changed + 3);
    QCOMPARE(m.snapshots()[2].nodes_before, 12);
    QCOMPARE(m.snapshots()[2].nodes_after, 8);
    QVERIFY(m.compile_ns() > 0);
  }

  void lenet_fuse_provenance_and_diffs() {
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    QVERIFY(m.compile_now().is_ok());
    const Snapshot& fuse = m.snapshots()[2];
    QCOMPARE(fuse.pass, std::string("fuse"));
    // From the dumped IR: #12 conv1 from [#0, #1], #13 conv2 from [#3, #4], #14 fc1 from [#7, #8],
    // #15 fc2 from [#9, #10].
    const Prov expected = {{12, {0, 1}}, {13, {3, 4}}, {14, {7, 8}}, {15, {9, 10}}};
    QCOMPARE(fuse.provenance, expected);
    // split -> fuse: 4 fused nodes added, the 8 they replace removed; pool1 (#2), pool2 (#5) and
    // fc3 (#11) now read a fused node's output; flatten (#6) still reads pool2.
    GraphDiff d = diff_of(m, 2);
    QCOMPARE(d.added, Ids({12, 13, 14, 15}));
    QCOMPARE(d.removed, Ids({0, 1, 3, 4, 7, 8, 9, 10}));
    QCOMPARE(d.changed, Ids({2, 5, 11}));
    QCOMPARE(d.summary(), std::string("+4 -8 ~3"));
    QCOMPARE(d.links.size(), size_t{4});
    // fuse -> layout: a Reorder (#16, from pool2 #5) added; conv2 and pool2 get layout = "nhwc"
    // (conv1's 6 channels and pool1 stay plain), flatten reads the Reorder.
    GraphDiff l = diff_of(m, 3);
    QCOMPARE(l.added, Ids({16}));
    QVERIFY(l.removed.empty());
    QCOMPARE(l.changed, Ids({5, 6, 13}));
    QCOMPARE(l.links.size(), size_t{1});
    QCOMPARE(l.links[0].second, Ids({5}));
    // The stage snapshot after the last pass shows the same graph.
    QVERIFY(diff_of(m, 4).empty());
  }

  void lenet_placement_and_memory() {
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    QVERIFY(m.compile_now().is_ok());
    auto g = m.snapshot_graph(4);
    QVERIFY(static_cast<bool>(g));
    QCOMPARE(m.placement().preferred, std::string("cpu"));
    for (NodeId id : g->node_ids()) QCOMPARE(m.placement().device(id), std::string("cpu"));
    QVERIFY(m.placement().fallback_reason.empty());
    QCOMPARE(m.placement().device(9999), std::string());
    // `tessera passes`: 9 steps, arena 24128 bytes, lifetime lower bound 24128.
    QCOMPARE(m.memory().size(), size_t{1});
    QCOMPARE(m.memory()[0].device, std::string("cpu"));
    QCOMPARE(m.memory()[0].num_steps, 9);
    QCOMPARE(m.memory()[0].plan.arena_bytes, size_t{24128});
    QCOMPARE(m.memory()[0].plan.lower_bound_bytes, size_t{24128});
    QCOMPARE(m.memory()[0].plan.offsets.size(), m.memory()[0].requests.size());
  }

  void mlp_fuse_diff() {
    PassStepperModel m(registry_);
    m.set_graph(load(kMlp));
    QVERIFY(m.compile_now().is_ok());
    const std::vector<std::string> expected = {"prepare", "split", "optimise/fuse", "optimise"};
    QCOMPARE(stage_pass(m.snapshots()), expected);
    // fc1 (#1) + relu1 (#2) -> FusedGemm #4; fc2 (#3) reads it.
    GraphDiff d = diff_of(m, 2);
    QCOMPARE(d.summary(), std::string("+1 -2 ~1"));
    QCOMPARE(d.added, Ids({4}));
    QCOMPARE(d.removed, Ids({1, 2}));
    QCOMPARE(d.changed, Ids({3}));
    QCOMPARE(d.links.size(), size_t{1});
    QCOMPARE(d.links[0].second, Ids({1, 2}));
    QCOMPARE(m.memory()[0].plan.arena_bytes, size_t{1280});  // `tessera passes samples/mlp.json`: the Flatten is a view
  }

  // The training step over 4 ranks, as `tessera passes samples/lenet.json --train --world-size 4`
  // prints it: the split stage's snapshot adds one AllReduceStart / AllReduceWait pair for LeNet's
  // one bucket of 246,824 bytes (61,706 weights); inference and one rank have none. The panel's
  // "Training step" box and ranks recompile what is shown.
  void training_step_shows_the_allreduce_buckets() {
    auto allreduce_nodes = [](const PassStepperModel& m) {  // in the last snapshot
      auto last = m.snapshot_graph(static_cast<int>(m.snapshots().size()) - 1);
      if (!last) qFatal("last snapshot does not parse");
      size_t n = 0;
      for (NodeId id : last->node_ids()) n += last->node(id).op.rfind("AllReduce", 0) == 0;
      return n;
    };
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    m.set_mode({true, 4});
    QVERIFY2(m.compile_now().is_ok(), qPrintable(m.message()));
    QVERIFY(m.source().contains("training step") && m.source().contains("4 ranks"));
    const std::vector<std::string> names = stage_pass(m.snapshots());
    const auto split = std::find(names.begin(), names.end(), "split");
    QVERIFY(split != names.end() && split != names.begin());
    const int at = static_cast<int>(split - names.begin());
    GraphDiff d = diff_of(m, at);
    auto after = m.snapshot_graph(at);
    QVERIFY(static_cast<bool>(after));
    int starts = 0, waits = 0;
    for (NodeId id : d.added) {
      const tessera::ir::Node& n = after->node(id);
      if (n.op == "AllReduceStart") {
        ++starts;
        QCOMPARE(n.attr("bucket")->i(), int64_t{0});
        QCOMPARE(n.attr("bytes")->i(), int64_t{246824});
        QCOMPARE(n.attr("world_size")->i(), int64_t{4});
      }
      waits += n.op == "AllReduceWait";
    }
    QCOMPARE(starts, 1);
    QCOMPARE(waits, 1);
    QCOMPARE(d.summary(), std::string("+2 -0 ~") + std::to_string(d.changed.size()));
    QCOMPARE(allreduce_nodes(m), size_t{2});  // still there after the optimiser

    m.set_mode({true, 1});
    QVERIFY(m.compile_now().is_ok());
    QCOMPARE(allreduce_nodes(m), size_t{0});
    m.set_mode({});
    QVERIFY(m.compile_now().is_ok());
    QCOMPARE(allreduce_nodes(m), size_t{0});
    QCOMPARE(stage_pass(m.snapshots()).front(), std::string("prepare"));

    // The panel: ticking the box and setting the ranks recompiles the shown graph.
    PassStepperPanel panel(registry_);
    panel.set_graph(load(kLenet), {});
    QSignalSpy done(&panel.model(), &PassStepperModel::finished);
    QVERIFY(panel.compile());
    QVERIFY(done.wait(30000));
    QVERIFY(!panel.ranks_box()->isEnabled());
    panel.training_box()->setChecked(true);
    QVERIFY(done.wait(30000));
    QVERIFY(panel.ranks_box()->isEnabled());
    QVERIFY(panel.model().mode().training);
    if (panel.model().is_busy()) QVERIFY(done.wait(30000));
    panel.ranks_box()->setValue(2);
    QVERIFY(done.wait(30000));
    QCOMPARE(panel.model().mode().world_size, 2);
    QCOMPARE(allreduce_nodes(panel.model()), size_t{2});
    QVERIFY2(panel.status_label()->text().contains("2 ranks"), qPrintable(panel.status_label()->text()));
    // The split snapshot of this 170-node graph opens around its first added node (an all-reduce).
    panel.resize(1280, 700);
    panel.show();  // (the diff is a tab's page: laid out once shown)
    QCoreApplication::processEvents();
    panel.diff_view()->reset_view();
    panel.select_snapshot(at);
    GraphDiffView* v = panel.diff_view();
    QVERIFY(!v->diff().added.empty());
    const NodeId first = v->diff().added.front();
    const QRectF shown = v->view()->mapToScene(v->view()->viewport()->rect()).boundingRect();
    QVERIFY(shown.contains(v->node_rect(GraphDiffView::Side::kAfter, first).center()));
    // Its tooltip gives the bucket and its bytes.
    const QString tip = v->node_tooltip(GraphDiffView::Side::kAfter, first);
    QVERIFY2(tip.contains("AllReduceStart") && tip.contains("bytes = 246824") && tip.contains("bucket = 0"),
             qPrintable(tip));
  }

  void symbolic_dims_default_and_settable() {
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    auto s = m.input_shapes();
    QVERIFY(static_cast<bool>(s));
    QCOMPARE(s->at("x"), tessera::Shape({1, 1, 28, 28}));
    m.set_symbolic_default(4);
    QCOMPARE(m.input_shapes()->at("x"), tessera::Shape({4, 1, 28, 28}));
    m.set_graph(load(kLenet), {{"x", {2, 1, 28, 28}}});
    QCOMPARE(m.input_shapes()->at("x"), tessera::Shape({2, 1, 28, 28}));
    QVERIFY(m.compile_now().is_ok());
    auto g = m.snapshot_graph(0);
    QVERIFY(ir_text_has(m.snapshots()[0].ir_text, "f32[2, 1, 28, 28]"));
  }

  void strips_param_data() {
    const std::string text =
        "graph \"g\" {\n  input %0 \"x\" : f32[2]\n  param %1 \"w\" : f32[2] = tensor<f32[2]> [1.5, 2.5]\n"
        "  #0 \"add\" = Add(%0, %1) -> (%2 \"y\" : f32[2])\n  output %2\n}\n";
    const std::string expected =
        "graph \"g\" {\n  input %0 \"x\" : f32[2]\n  input %1 \"w\" : f32[2]\n"
        "  #0 \"add\" = Add(%0, %1) -> (%2 \"y\" : f32[2])\n  output %2\n}\n";
    QCOMPARE(tessera::studio::strip_param_data(text), expected);
    auto g = tessera::ir::parse_graph(expected);
    QVERIFY(static_cast<bool>(g));
    QVERIFY(g->value(1).kind == tessera::ir::ValueKind::kInput);
    QCOMPARE(g->node(0).inputs, std::vector<tessera::ir::ValueId>({0, 1}));
    // The compiled snapshots hold no weight data: LeNet's 61,706 weights would be ~600 KB of text.
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    QVERIFY(m.compile_now().is_ok());
    for (const Snapshot& s : m.snapshots()) {
      QVERIFY(!ir_text_has(s.ir_text, "tensor<"));
      QVERIFY(s.ir_text.size() < 8000);
    }
  }

  void compiles_on_a_worker_thread() {
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    QSignalSpy started(&m, &PassStepperModel::started);
    QSignalSpy done(&m, &PassStepperModel::finished);
    QVERIFY(m.compile());
    QCOMPARE(started.count(), 1);
    QVERIFY(m.is_busy());
    QVERIFY(!m.compile());  // the result is delivered on this thread: still busy until then
    QVERIFY(done.wait(30000));
    QCOMPARE(done[0][0].toBool(), true);
    QVERIFY(!m.is_busy());
    QCOMPARE(m.snapshots().size(), size_t{5});
  }

  void destroying_the_model_while_compiling_never_waits() {
    auto* m = new PassStepperModel(registry_);
    m->set_graph(load(kLenet));
    QVERIFY(m->compile());
    QElapsedTimer t;
    t.start();
    delete m;  // the worker goes on with its own copies; its result is dropped
    QVERIFY(t.elapsed() < 50);
    QTest::qWait(2000);  // LeNet compiles in about 0.1 s: the result arrives for no one
  }

  void a_graph_that_does_not_type_is_a_message() {
    PassStepperModel m(registry_);
    auto g = tessera::ir::parse_graph(kBadShapeTir, "bad.tir");
    QVERIFY(static_cast<bool>(g));
    m.set_graph(std::move(*g));
    QSignalSpy done(&m, &PassStepperModel::finished);
    tessera::Status st = m.compile_now();
    QVERIFY(!st.is_ok());
    QCOMPARE(done.count(), 1);
    QCOMPARE(done[0][0].toBool(), false);
    QVERIFY2(m.message().contains("mix") || m.message().contains("#0"), qPrintable(m.message()));
    QVERIFY(m.memory().empty());
    // The same through the worker.
    QVERIFY(m.compile());
    m.wait();
    QVERIFY(!m.message().isEmpty());
    // An input shape of the wrong rank.
    m.set_graph(load(kLenet), {{"x", {1, 28, 28}}});
    QVERIFY(!m.compile_now().is_ok());
    QVERIFY(!m.message().isEmpty());
  }

  void loads_a_recorded_run() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("insight.db").toStdString();
    PassStepperModel m(registry_);
    m.set_graph(load(kLenet));
    QVERIFY(m.compile_now().is_ok());
    const std::vector<Snapshot> compiled = m.snapshots();
    const int64_t run = record_run(db, TESSERA_VERSION, compiled);

    PassStepperModel loaded(registry_);
    QVERIFY2(loaded.load_run(db, run).is_ok(), qPrintable(loaded.message()));
    QCOMPARE(loaded.run(), run);
    QCOMPARE(stage_pass(loaded.snapshots()), stage_pass(compiled));
    QCOMPARE(loaded.snapshots()[2].provenance, compiled[2].provenance);
    QCOMPARE(loaded.snapshots()[2].duration_ns, compiled[2].duration_ns);
    QCOMPARE(loaded.snapshots()[2].hash, compiled[2].hash);
    QCOMPARE(loaded.snapshots()[0].diagnostics, compiled[0].diagnostics);
    QCOMPARE(diff_of(loaded, 2).summary(), std::string("+4 -8 ~3"));
    QVERIFY(loaded.source().contains(QString("run %1").arg(run)));
    QVERIFY(loaded.memory().empty());  // the store keeps no plan

    QVERIFY(!loaded.load_run(db, run + 100).is_ok());
    QVERIFY2(loaded.message().contains(QString("no run %1").arg(run + 100)), qPrintable(loaded.message()));
  }

  void corrupt_snapshot_names_run_snapshot_and_versions() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("insight.db").toStdString();
    Snapshot good;
    good.stage = "prepare";
    good.index = 0;
    good.ir_text = "graph \"g\" {\n  input %0 \"x\" : f32[2]\n  output %0\n}\n";
    Snapshot bad = good;
    bad.stage = "optimise";
    bad.pass = "fuse";
    bad.index = 1;
    bad.ir_text = "graph \"g\" {\n  input %0 \"x\" : f32[2]\n  #0 = Frobnicate<<%0>>\n}\n";  // an older grammar
    const int64_t run = record_run(db, "0.0.1-old", {good, bad});

    PassStepperModel m(registry_);
    QVERIFY(m.load_run(db, run).is_ok());
    QVERIFY(static_cast<bool>(m.snapshot_graph(0)));
    auto g = m.snapshot_graph(1);
    QVERIFY(!g);
    const std::string msg = g.error().to_string();
    QVERIFY2(msg.find("run " + std::to_string(run)) != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("snapshot 1 (optimise/fuse)") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("0.0.1-old") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find(TESSERA_VERSION) != std::string::npos, msg.c_str());

    PassStepperPanel panel(registry_);
    QVERIFY(panel.load_run(db, run).is_ok());
    QCOMPARE(panel.snapshot_table()->rowCount(), 2);
    QCOMPARE(panel.selected_snapshot(), 1);  // the last one is shown first
    QVERIFY2(panel.error_text().contains("0.0.1-old"), qPrintable(panel.error_text()));
    QVERIFY(panel.status_label()->text().contains("0.0.1-old"));
    panel.select_snapshot(0);
    QVERIFY(panel.error_text().isEmpty());
    QCOMPARE(panel.diff_view()->counts_text(), QString("+0 -0 ~0"));  // an input-only graph
  }

  void panel_shows_diff_overlay_and_memory() {
    PassStepperPanel panel(registry_);
    panel.resize(1500, 850);
    panel.set_graph(load(kLenet), {});
    QSignalSpy done(&panel.model(), &PassStepperModel::finished);
    QVERIFY(panel.compile());
    QVERIFY(done.wait(30000));
    QCOMPARE(panel.snapshot_table()->rowCount(), 5);
    QCOMPARE(panel.slider()->maximum(), 4);
    QCOMPARE(panel.selected_snapshot(), 4);
    QCOMPARE(panel.memory_chart()->current_device(), 0);

    panel.slider()->setValue(2);  // scrubbing selects
    QCOMPARE(panel.selected_snapshot(), 2);
    QCOMPARE(panel.snapshot_table()->currentRow(), 2);
    GraphDiffView* v = panel.diff_view();
    QCOMPARE(v->counts_text(), QString("+4 -8 ~3"));
    QCOMPARE(v->link_count(), 8);  // two per fused pair
    using Side = GraphDiffView::Side;
    QCOMPARE(v->node_fill(Side::kAfter, 12), GraphDiffView::status_colour(GraphDiff::Status::kAdded));
    QCOMPARE(v->node_fill(Side::kBefore, 0), GraphDiffView::status_colour(GraphDiff::Status::kRemoved));
    QCOMPARE(v->node_fill(Side::kBefore, 2), GraphDiffView::status_colour(GraphDiff::Status::kChanged));
    QCOMPARE(v->node_fill(Side::kAfter, 6), GraphDiffView::status_colour(GraphDiff::Status::kSame));
    QVERIFY(v->node_rect(Side::kAfter, 12).left() > v->node_rect(Side::kBefore, 0).right());  // side by side
    QVERIFY(v->node_rect(Side::kAfter, 0).isNull());
    QVERIFY(v->legend()->text().contains("+4 -8 ~3"));

    QVERIFY(!v->node_tooltip(Side::kAfter, 12).contains("on cpu"));
    panel.set_placement_overlay(true);
    QVERIFY2(v->node_tooltip(Side::kAfter, 12).contains("on cpu"), qPrintable(v->node_tooltip(Side::kAfter, 12)));
    panel.select_snapshot(0);  // prepare: not placed yet
    QVERIFY(!v->node_tooltip(Side::kAfter, 0).contains("on cpu"));
    // Against the graph as given (params there, inputs in the kept snapshot): prepare changed no node.
    QCOMPARE(v->counts_text(), QString("+0 -0 ~0"));
    panel.snapshot_table()->setCurrentCell(3, 0);  // picking a row selects
    QCOMPARE(panel.selected_snapshot(), 3);
    QCOMPARE(v->counts_text(), QString("+1 -0 ~3"));

    QSignalSpy activated(&panel, &PassStepperPanel::node_activated);
    Q_EMIT v->node_activated(16, true);
    Q_EMIT v->node_activated(3, false);  // a before box: not a node of the shown graph
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated[0][0].toInt(), 16);

    // Issue 17, item 7: the provenance of a fused box names the nodes it came from; a stage's
    // own row is diffed against the graph the stage started from, so its diff agrees with its
    // node counts (LeNet's optimise stage: 12 -> 9 nodes).
    panel.select_snapshot(2);
    // Both columns equally tall: the fused after side (fewer nodes) is stretched to the before.
    {
      double before_bottom = 0, after_bottom = 0;
      for (tessera::ir::NodeId id : v->diff().removed) before_bottom = std::max(before_bottom, v->node_rect(Side::kBefore, id).bottom());
      for (tessera::ir::NodeId id = 0; id < 64; ++id) {
        before_bottom = std::max(before_bottom, v->node_rect(Side::kBefore, id).bottom());
        after_bottom = std::max(after_bottom, v->node_rect(Side::kAfter, id).bottom());
      }
      QVERIFY2(std::abs(before_bottom - after_bottom) < 2, qPrintable(QStringLiteral("%1 vs %2").arg(before_bottom).arg(after_bottom)));
    }
    QVERIFY2(v->node_tooltip(Side::kAfter, 12).contains(QStringLiteral("from conv1 (Conv)")),
             qPrintable(v->node_tooltip(Side::kAfter, 12)));
    panel.select_snapshot(4);
    const auto& stage = panel.model().snapshots()[4];
    QVERIFY(stage.pass.empty());
    const auto& d = v->diff();
    const int added = static_cast<int>(d.added.size()), removed = static_cast<int>(d.removed.size());
    QCOMPARE(added - removed, stage.nodes_after - stage.nodes_before);
    QVERIFY(added > 0);

    // The zoom and place the user chose stay while stepping through snapshots.
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTest::mousePress(v->view()->viewport(), Qt::LeftButton, {}, QPoint(5, 5));
    QTest::mouseRelease(v->view()->viewport(), Qt::LeftButton, {}, QPoint(5, 5));
    v->view()->setTransform(QTransform::fromScale(0.33, 0.33));
    panel.select_snapshot(3);
    QCOMPARE(v->view()->transform().m11(), 0.33);

    panel.select_snapshot(2);
    v->fit();
    const QString png = QCoreApplication::applicationDirPath() + "/pass_stepper_lenet.png";
    QVERIFY(panel.grab().save(png));
    qInfo("screenshot: %s", qPrintable(png));
  }

  void resnet50_compile_and_step_through() {
    // A figure, not a check. Snapshots print the graph without its weights (`= elided`): with
    // them, ResNet-50's 8 snapshots were 370 MB of text each and this took 207 s; now 0.2 s.
    if (!QFile::exists(QString::fromStdString(kResnet))) QSKIP("build/zoo/resnet50.onnx is absent");
    PassStepperPanel panel(registry_);
    panel.resize(1500, 850);
    panel.set_graph(load(kResnet), {});
    QElapsedTimer t;
    t.start();
    QSignalSpy done(&panel.model(), &PassStepperModel::finished);
    QVERIFY(panel.compile());
    QVERIFY(done.wait(300000));
    const qint64 compile_ms = t.elapsed();
    QVERIFY2(done[0][0].toBool(), qPrintable(panel.model().message()));
    t.restart();
    const int n = static_cast<int>(panel.model().snapshots().size());
    for (int i = 0; i < n; ++i) {
      panel.select_snapshot(i);
      QVERIFY2(panel.error_text().isEmpty(), qPrintable(panel.error_text()));
    }
    qInfo("ResNet-50: compile + snapshots %lld ms; %d snapshots stepped through in %lld ms (%.0f ms each)",
          static_cast<long long>(compile_ms), n, static_cast<long long>(t.elapsed()),
          n ? static_cast<double>(t.elapsed()) / n : 0.0);
  }

 private:
  static bool ir_text_has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
  ops::OpRegistry registry_;
};

TESSERA_QTEST(PassStepperTest)
#include "pass_stepper_test.moc"
