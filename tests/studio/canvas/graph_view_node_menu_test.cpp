// Tests of the node menu's edits in studio/graph_view.cpp (GraphView::add_graph_input,
// add_weight), headless: names, shapes and the symbolic batch dimension; initial weights inside
// PyTorch's bound 1/sqrt(fan_in) with fan_in taken from the shape (Conv), from the node's weight
// (a bias) and from Gemm's layout with and without transB; each is one undo step; a shape that
// does not parse, a cancelled prompt and a refused connection change nothing.
#include <QSignalSpy>
#include <QUndoStack>
#include <QTest>
#include <cmath>

#include "tests/studio/qtest_main.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"

using tessera::ir::NodeId;
using tessera::ir::ValueId;
using tessera::studio::Document;
using tessera::studio::GraphScene;
using tessera::studio::GraphView;

namespace {

// The largest |value| of a param.
double max_abs(const Document& doc, ValueId v) {
  const tessera::Tensor* t = doc.graph().param_data(v);
  if (!t) return -1;
  double m = 0;
  for (int64_t i = 0; i < t->numel(); ++i) m = std::max(m, std::abs(double(t->data<float>()[i])));
  return m;
}

}  // namespace

class GraphViewNodeMenuTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

  struct Fixture {
    Document doc;
    GraphScene scene;
    GraphView view;
    QStringList answers;
    explicit Fixture(const tessera::ops::OpRegistry& r) : doc(r), scene(doc), view(&scene) {
      view.set_document(&doc);
      view.set_text_prompt([this](const QString&, const QString&, const QString&) {
        return answers.isEmpty() ? QString() : answers.takeFirst();
      });
    }
  };

 private Q_SLOTS:
  void input_then_conv_weights() {
    Fixture f(registry_);
    const NodeId conv = f.doc.add_node("Conv", "conv1", {0, 100}).value();
    f.answers = {"x", "N, 1, 28, 28"};
    const auto x = f.view.add_graph_input(conv, 0);
    QVERIFY(x);
    QCOMPARE(f.doc.graph().value(x.value()).name, std::string("x"));
    QCOMPARE(QString::fromStdString(f.doc.graph().value(x.value()).type.to_string()),
             QStringLiteral("f32[N, 1, 28, 28]"));
    QCOMPARE(f.doc.graph().node(conv).inputs[0], x.value());
    QCOMPARE(f.doc.undo_stack().count(), 2);  // the node, then input + connect as one step

    f.answers = {"6, 1, 5, 5"};
    const auto w = f.view.add_weight(conv, 1);
    QVERIFY(w);
    QCOMPARE(f.doc.graph().value(w.value()).name, std::string("conv1.W"));
    // fan_in 1 * 5 * 5 = 25: |w| <= 0.2, and 150 draws come near it.
    QVERIFY(max_abs(f.doc, w.value()) <= 0.2);
    QVERIFY(max_abs(f.doc, w.value()) > 0.15);
    f.answers = {"[6]"};
    const auto b = f.view.add_weight(conv, 2);
    QVERIFY(b);
    QCOMPARE(f.doc.graph().value(b.value()).name, std::string("conv1.B"));
    QVERIFY(max_abs(f.doc, b.value()) <= 0.2);  // the weight's fan_in, not 6
    QVERIFY(max_abs(f.doc, b.value()) > 0);
    QCOMPARE(f.doc.undo_stack().count(), 4);
    QVERIFY(!f.doc.node_error(conv));
    QCOMPARE(QString::fromStdString(
                 f.doc.graph().value(f.doc.graph().node(conv).outputs[0]).type.to_string()),
             QStringLiteral("f32[N, 6, 24, 24]"));
    f.doc.undo_stack().undo();
    QCOMPARE(f.doc.graph().params().size(), size_t{1});
  }

  void gemm_fan_in_follows_trans_b() {
    Fixture f(registry_);
    const NodeId g1 = f.doc.add_node("Gemm", "plain", {0, 0}).value();
    const NodeId g2 = f.doc.add_node("Gemm", "trans", {0, 200}, {{"transB", int64_t{1}}}).value();
    f.answers = {"400, 100", "100, 400"};
    const auto w1 = f.view.add_weight(g1, 1);  // [K, N]: fan_in 400
    const auto w2 = f.view.add_weight(g2, 1);  // [N, K] with transB: fan_in 400
    QVERIFY(w1 && w2);
    QVERIFY(max_abs(f.doc, w1.value()) <= 0.05);
    QVERIFY(max_abs(f.doc, w2.value()) <= 0.05);
    QVERIFY(max_abs(f.doc, w1.value()) > 0.04);
    f.answers = {"100"};
    const auto c = f.view.add_weight(g2, 2);
    QVERIFY(c);
    QVERIFY(max_abs(f.doc, c.value()) <= 0.05);
  }

  void refusals_change_nothing() {
    Fixture f(registry_);
    const NodeId conv = f.doc.add_node("Conv", "conv1", {0, 0}).value();
    QSignalSpy refused(&f.view, &GraphView::edit_refused);
    const int count = f.doc.undo_stack().count();
    f.answers = {"6, x-1"};
    QVERIFY(!f.view.add_weight(conv, 1));  // a weight's shape takes sizes only
    QCOMPARE(refused.count(), 1);
    f.answers = {};
    QVERIFY(!f.view.add_weight(conv, 1));  // cancelled: no message
    QCOMPARE(refused.count(), 1);
    f.answers = {"x", "N, 1, 2 8"};
    QVERIFY(!f.view.add_graph_input(conv, 0));
    QCOMPARE(refused.count(), 2);
    // x is [N, 3, 8, 8]; a weight for 1 channel makes Conv fail: the whole step is undone.
    f.answers = {"x", "N, 3, 8, 8"};
    QVERIFY(f.view.add_graph_input(conv, 0));
    const int with_input = f.doc.undo_stack().index();
    f.answers = {"4, 1, 3, 3"};
    QVERIFY(!f.view.add_weight(conv, 1));
    QCOMPARE(refused.count(), 3);
    QVERIFY(refused.last().at(0).toString().startsWith(QStringLiteral("Cannot add")));
    QCOMPARE(f.doc.undo_stack().index(), with_input);  // the half-done step undone
    QVERIFY(f.doc.graph().params().empty());
    QCOMPARE(with_input, count + 1);
  }
};

TESSERA_QTEST(GraphViewNodeMenuTest)
#include "graph_view_node_menu_test.moc"
