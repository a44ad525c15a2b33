// Tests of studio/document.cpp and of the scene observing it: loading JSON and IR text files,
// inferred types, errors that name the file, inference failures on a node (and past it, in other
// branches), incomplete nodes, layout and input positions from the file, one item per node.
// Edits are tested in document_edit_test.cpp.
// Expected values are worked out by hand from samples/lenet.json (LeNet-5 on 1x28x28 inputs).
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <string>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"

using tessera::Status;
using tessera::studio::CanvasItemType;
using tessera::studio::Document;
using tessera::studio::EdgeLabelItem;
using tessera::studio::GraphScene;
using tessera::studio::NodeItem;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";
const std::string kBroken = tessera::test::source_dir() + "/tests/studio/data/broken.json";

// Two inputs whose shapes cannot be added: inference stops at node #1.
const char kBadShapeTir[] = R"(graph "bad" {
  input %0 "x" : f32[N, 16]
  input %1 "y" : f32[N, 8]
  #0 "act" = Relu(%0) -> (%2 "a" : f32[N, 16])
  #1 "mix" = Add(%2, %1) -> (%3 "m" : f32[N, 16])
  #2 "out" = Tanh(%3) -> (%4 "o" : f32[N, 16])
  output %4
}
)";

// Two branches from x: "mix" fails (f32[N, 16] + f32[N, 8]), "act" is typed all the same; "pool"
// has no kernel_shape: incomplete, not failed.
const char kTwoBranchesTir[] = R"(graph "two" {
  input %0 "x" : f32[N, 16]
  input %1 "y" : f32[N, 8]
  #0 "mix" = Add(%0, %1) -> (%2 "m" : f32[*])
  #1 "after" = Tanh(%2) -> (%3 "t" : f32[*])
  #2 "act" = Relu(%0) -> (%4 "a" : f32[*])
  #3 "pool" = MaxPool(%4) -> (%5 "p" : f32[*])
  output %3, %4
}
)";

// A JSON graph with a layout and the studio's input positions in a metadata property (a JSON text
// in a JSON string: escaped quotes, kept out of raw strings, which moc misreads).
const std::string kLaidOutJson = std::string(R"({
  "format": "tessera-graph", "version": 1, "name": "laid",
  "inputs": [{"name": "x", "type": "f32[2, 3]"}],
  "nodes": [
    {"op": "Relu", "name": "a", "inputs": ["x"], "outputs": ["ya"]},
    {"op": "Tanh", "name": "b", "inputs": ["ya"], "outputs": ["yb"]}
  ],
  "outputs": ["yb"],
  "metadata": {"producer": "hand", "properties": {"tessera-studio.value_positions": )") +
                                 "\"{\\\"x\\\":[5,-40]}\"" + R"(, "k": "v"}},
  "layout": {"positions": {"0": [10, 20], "1": [10.5, 90]},
             "groups": [{"name": "pair", "nodes": [0, 1], "collapsed": true}]}
}
)";

const char kTinyTir[] = R"(graph "tiny" {
  input %0 "x" : f32[2, 3]
  #0 "act" = Relu(%0) -> (%1 "y" : f32[*])
  output %1
}
)";

int count_items(const GraphScene& scene, CanvasItemType type) {
  int n = 0;
  for (const QGraphicsItem* item : scene.items())
    if (item->type() == static_cast<int>(type)) ++n;
  return n;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

class DocumentTest : public QObject {
  Q_OBJECT

 private:
  // Writes `text` to NAME in the test's temporary directory and returns the path.
  std::string write_file(const QString& name, const QByteArray& text) {
    const QString path = dir_.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
      qFatal("cannot write %s", qPrintable(path));
    return path.toStdString();
  }

  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();
  QTemporaryDir dir_;

 private Q_SLOTS:
  void starts_empty() {
    Document doc(registry_);
    QVERIFY(doc.is_empty());
    QCOMPARE(doc.graph().num_nodes(), 0);
    QCOMPARE(doc.parameter_count(), int64_t{0});
  }

  void loads_lenet_with_inferred_types() {
    Document doc(registry_);
    QSignalSpy reset(&doc, &Document::graph_reset);
    const Status st = doc.load(kLenet);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QCOMPARE(reset.count(), 1);
    QCOMPARE(doc.file_name(), QStringLiteral("lenet.json"));
    // conv1, relu1, pool1, conv2, relu2, pool2, flatten, fc1, relu3, fc2, relu4, fc3.
    QCOMPARE(doc.graph().num_nodes(), 12);
    QVERIFY(!doc.inference_error().has_value());
    const auto& g = doc.graph();
    QCOMPARE(static_cast<int>(g.outputs().size()), 1);
    QVERIFY(doc.is_typed(g.outputs()[0]));
    QCOMPARE(g.value(g.outputs()[0]).type.to_string(), std::string("f32[N, 10]"));
    // 28x28, 5x5 kernel, pads 2 -> 28; pool 2 -> 14; 5x5 kernel, no pad -> 10; pool 2 -> 5.
    QCOMPARE(g.value(*g.find_value("c1")).type.to_string(), std::string("f32[N, 6, 28, 28]"));
    QCOMPARE(g.value(*g.find_value("p2")).type.to_string(), std::string("f32[N, 16, 5, 5]"));
    QCOMPARE(g.value(*g.find_value("f")).type.to_string(), std::string("f32[N, 400]"));
  }

  void counts_lenet_parameters() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    // conv1 6*1*5*5+6, conv2 16*6*5*5+16, fc1 400*120+120, fc2 120*84+84, fc3 84*10+10.
    QCOMPARE(doc.parameter_count(), int64_t{156 + 2416 + 48120 + 10164 + 850});
  }

  void broken_file_names_the_file_and_keeps_the_document() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    QSignalSpy reset(&doc, &Document::graph_reset);
    const Status st = doc.load(kBroken);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.to_string(), kBroken), st.to_string().c_str());
    QCOMPARE(reset.count(), 0);
    QCOMPARE(doc.path(), kLenet);
    QCOMPARE(doc.graph().num_nodes(), 12);
  }

  void foreign_files_are_rejected_naming_the_file() {
    Document doc(registry_);
    const std::string png = write_file("picture.png", QByteArray("\x89PNG\r\n\x1a\n", 8));
    Status st = doc.load(png);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.to_string(), png), st.to_string().c_str());
    const std::string not_graph = write_file("settings.json", "{\"theme\": \"dark\"}\n");
    st = doc.load(not_graph);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.to_string(), not_graph), st.to_string().c_str());
    const std::string missing = dir_.filePath("missing.json").toStdString();
    st = doc.load(missing);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.to_string(), missing), st.to_string().c_str());
    QVERIFY(doc.is_empty());
  }

  void loads_ir_text() {
    Document doc(registry_);
    const std::string path = write_file("tiny.tir", kTinyTir);
    const Status st = doc.load(path);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QCOMPARE(doc.graph().num_nodes(), 1);
    // The file's f32[*] is replaced by the inferred type.
    QCOMPARE(doc.graph().value(1).type.to_string(), std::string("f32[2, 3]"));
  }

  void inference_failure_marks_the_node_and_untypes_what_follows() {
    Document doc(registry_);
    const std::string path = write_file("bad_shape.tir", kBadShapeTir);
    const Status st = doc.load(path);
    QVERIFY2(st.is_ok(), st.to_string().c_str());  // opens, so the user can see the problem
    QVERIFY(doc.inference_error().has_value());
    QCOMPARE(doc.inference_error()->node, 1);
    QVERIFY(contains(doc.inference_error()->to_string(), path));
    QVERIFY(doc.node_error(0) == nullptr);
    QVERIFY(doc.node_error(1) != nullptr);
    QVERIFY(doc.node_error(2) == nullptr);
    QVERIFY(doc.is_typed(0) && doc.is_typed(1));  // inputs
    QVERIFY(doc.is_typed(2));                     // Relu ran before the failure
    QVERIFY(!doc.is_typed(3));
    QVERIFY(!doc.is_typed(4));

    GraphScene scene(doc);
    QVERIFY(!scene.node_item(0)->content().failed);
    QVERIFY(scene.node_item(1)->content().failed);
    QVERIFY(scene.node_item(1)->toolTip().contains(QStringLiteral("broadcast")));
    // Only the typed values get labels: x, y and a.
    QCOMPARE(count_items(scene, CanvasItemType::kEdgeLabel), 3);
  }

  void inference_goes_on_past_a_failing_branch() {
    Document doc(registry_);
    const std::string path = write_file("two.tir", kTwoBranchesTir);
    QVERIFY(doc.load(path).is_ok());
    QVERIFY(doc.inference_error().has_value());
    QCOMPARE(doc.inference_error()->node, 0);  // mix comes first in topological order
    QVERIFY(doc.node_error(0) != nullptr && !doc.is_incomplete(0));
    QVERIFY(doc.node_error(1) == nullptr);  // waits for mix: no problem of its own, no type
    QVERIFY(!doc.is_typed(3));
    QCOMPARE(doc.graph().value(3).type.to_string(), std::string("f32[*]"));
    QVERIFY(doc.is_typed(4));  // the other branch
    QCOMPARE(doc.graph().value(4).type.to_string(), std::string("f32[N, 16]"));
    QVERIFY(doc.is_incomplete(3));
    QVERIFY(contains(doc.node_error(3)->to_string(),
                     "MaxPool 'pool' (#3): required attribute 'kernel_shape' is missing"));
    QVERIFY(!doc.is_typed(5));
  }

  void loads_layout_and_value_positions() {
    Document doc(registry_);
    const std::string path = write_file("laid.json", QByteArray::fromStdString(kLaidOutJson));
    const Status st = doc.load(path);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QVERIFY(doc.position(0) == (tessera::formats::NodePosition{10, 20}));
    QVERIFY(doc.position(1) == (tessera::formats::NodePosition{10.5, 90}));
    QCOMPARE(doc.layout().groups.size(), size_t{1});
    QVERIFY(doc.layout().groups[0] == (tessera::formats::NodeGroup{"pair", {0, 1}, true}));
    QVERIFY(doc.value_position(0) == (tessera::formats::NodePosition{5, -40}));
    // The studio's property is read into the document, the others stay metadata.
    QCOMPARE(doc.metadata().producer, std::string("hand"));
    QCOMPARE(doc.metadata().properties.size(), size_t{1});
    QCOMPARE(doc.metadata().properties.at("k"), std::string("v"));
    QVERIFY(!doc.is_modified());
    QCOMPARE(doc.undo_stack().count(), 0);
  }

  void scene_has_one_item_per_node() {
    Document doc(registry_);
    GraphScene scene(doc);
    QCOMPARE(count_items(scene, CanvasItemType::kNode), 0);
    QSignalSpy rebuilt(&scene, &GraphScene::rebuilt);
    QVERIFY(doc.load(kLenet).is_ok());
    QCOMPARE(rebuilt.count(), 1);
    QCOMPARE(count_items(scene, CanvasItemType::kNode), 12);
    QCOMPARE(scene.node_item_count(), 12);
    QCOMPARE(count_items(scene, CanvasItemType::kTerminal), 2);  // input x, output logits
    QCOMPARE(count_items(scene, CanvasItemType::kEdge), 13);     // x -> 11 links -> logits
    for (tessera::ir::NodeId id : doc.graph().node_ids())
      QCOMPARE(scene.node_item(id)->content().op.toStdString(), doc.graph().node(id).op);
  }

  void scene_shows_types_and_weights() {
    Document doc(registry_);
    GraphScene scene(doc);
    QVERIFY(doc.load(kLenet).is_ok());
    QStringList labels;
    for (const QGraphicsItem* item : scene.items())
      if (item->type() == static_cast<int>(CanvasItemType::kEdgeLabel))
        labels << static_cast<const EdgeLabelItem*>(item)->text();
    QCOMPARE(labels.size(), 13);  // one per value: x, c1, r1, ..., logits
    QVERIFY(labels.contains(QStringLiteral("f32[N, 1, 28, 28]")));
    QVERIFY(labels.contains(QStringLiteral("f32[N, 10]")));
    const NodeItem* conv1 = scene.node_item(0);
    QCOMPARE(conv1->content().name, QStringLiteral("conv1"));
    QCOMPARE(conv1->content().data_inputs, 1);  // x; the weights are rows
    QCOMPARE(static_cast<int>(conv1->content().params.size()), 2);
    QCOMPARE(conv1->content().params[0].port, QStringLiteral("W"));
    QCOMPARE(conv1->content().params[0].type, QStringLiteral("f32[6, 1, 5, 5]"));
    QCOMPARE(conv1->content().params[1].type, QStringLiteral("f32[6]"));
    // A chain: every node sits below the one feeding it.
    for (tessera::ir::NodeId id = 1; id < 12; ++id)
      QVERIFY(scene.node_item(id)->y() > scene.node_item(id - 1)->y());
  }
};

TESSERA_QTEST(DocumentTest)
#include "document_test.moc"
