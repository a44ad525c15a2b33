// Tests of studio/inspector.cpp: parsing and formatting of attribute fields, the empty state, the
// form made from Conv's schema, setting, refusing, resetting and undoing attributes through it,
// renaming, the ports with their types, and following the scene's selection in the window.
#include <QGraphicsItem>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>
#include <cmath>
#include <string>
#include <vector>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ir/text.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/panels/inspector.h"
#include "studio/app/main_window.h"

using tessera::Expected;
using tessera::Status;
using tessera::ir::AttrKind;
using tessera::ir::Attribute;
using tessera::ir::NodeId;
using tessera::studio::Document;
using tessera::studio::format_attribute;
using tessera::studio::Inspector;
using tessera::studio::MainWindow;
using tessera::studio::parse_attribute;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";

NodeId find_node(const Document& doc, const std::string& name) {
  for (NodeId id : doc.graph().node_ids())
    if (doc.graph().node(id).name == name) return id;
  return tessera::ir::kNoNode;
}

}  // namespace

class InspectorTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void parses_fields_by_kind() {
    Expected<Attribute> ints = parse_attribute(AttrKind::kInts, QStringLiteral("3, 3"));
    QVERIFY(ints.has_value());
    QCOMPARE(ints->ints(), (std::vector<int64_t>{3, 3}));
    QCOMPARE(parse_attribute(AttrKind::kInts, QStringLiteral("[1,-2, 30]"))->ints(),
             (std::vector<int64_t>{1, -2, 30}));
    QVERIFY(parse_attribute(AttrKind::kInts, QString())->ints().empty());
    Expected<Attribute> bad = parse_attribute(AttrKind::kInts, QStringLiteral("3, x"));
    QVERIFY(!bad.has_value());
    QCOMPARE(bad.error().message, std::string("'x' is not an integer"));
    QVERIFY(!parse_attribute(AttrKind::kInt, QStringLiteral("3.5")).has_value());
    QVERIFY(!parse_attribute(AttrKind::kInt, QStringLiteral("99999999999999999999")).has_value());
    QCOMPARE(parse_attribute(AttrKind::kInt, QStringLiteral(" -7 "))->i(), int64_t{-7});
    QCOMPARE(parse_attribute(AttrKind::kFloat, QStringLiteral("-1e-3"))->f(), -0.001);
    QVERIFY(std::isinf(parse_attribute(AttrKind::kFloat, QStringLiteral("inf"))->f()));
    QVERIFY(parse_attribute(AttrKind::kFloat, QStringLiteral("-inf"))->f() < 0);
    QVERIFY(std::isnan(parse_attribute(AttrKind::kFloat, QStringLiteral("nan"))->f()));
    QVERIFY(!parse_attribute(AttrKind::kFloat, QStringLiteral("1.5x")).has_value());
    QCOMPARE(parse_attribute(AttrKind::kFloats, QStringLiteral("0.5, inf"))->floats().size(),
             size_t{2});
    QCOMPARE(parse_attribute(AttrKind::kString, QStringLiteral("SAME_UPPER"))->s(),
             std::string("SAME_UPPER"));
    QVERIFY(!parse_attribute(AttrKind::kTensor, QStringLiteral("1")).has_value());
  }

  void formats_fields() {
    QCOMPARE(format_attribute(Attribute(std::vector<int64_t>{1, 2, 3})), QStringLiteral("1, 2, 3"));
    QCOMPARE(format_attribute(Attribute(int64_t{4})), QStringLiteral("4"));
    QCOMPARE(format_attribute(Attribute(0.25)), QStringLiteral("0.25"));
    QCOMPARE(format_attribute(Attribute(INFINITY)), QStringLiteral("inf"));
    QCOMPARE(format_attribute(Attribute(std::vector<double>{-INFINITY, 1.5})),
             QStringLiteral("-inf, 1.5"));
    QCOMPARE(format_attribute(Attribute("NOTSET")), QStringLiteral("NOTSET"));
  }

  void empty_state() {
    Document doc(registry_);
    Inspector inspector(doc);
    QCOMPARE(inspector.title(), QStringLiteral("No node selected"));
    QVERIFY(inspector.attribute_names().isEmpty());
    QVERIFY(!inspector.name_field());
    inspector.show_node(42);  // no such node
    QCOMPARE(inspector.title(), QStringLiteral("No node selected"));
    QVERIFY(!inspector.apply_name(QStringLiteral("x")).is_ok());
  }

  void conv_form_from_the_schema() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    Inspector inspector(doc);
    const NodeId conv = find_node(doc, "conv1");
    inspector.show_node(conv);
    QCOMPARE(inspector.title(), QStringLiteral("Conv"));
    QStringList expected;
    for (const auto& spec : registry_.find("Conv")->attrs) expected << QString::fromStdString(spec.name);
    QCOMPARE(inspector.attribute_names(), expected);
    for (const char* key : {"kernel_shape", "pads", "strides", "dilations", "group"})
      QVERIFY2(expected.contains(QLatin1String(key)), key);
    QCOMPARE(inspector.name_field()->text(), QStringLiteral("conv1"));
    QCOMPARE(inspector.attribute_field(QStringLiteral("kernel_shape"))->text(), QStringLiteral("5, 5"));
    QCOMPARE(inspector.attribute_field(QStringLiteral("pads"))->text(), QStringLiteral("2, 2, 2, 2"));
    // Absent: empty, the default as placeholder.
    QCOMPARE(inspector.attribute_field(QStringLiteral("group"))->text(), QString());
    QCOMPARE(inspector.attribute_field(QStringLiteral("group"))->placeholderText(), QStringLiteral("1"));
    // Ports with their types: X from the graph input, W and B params, Y the output.
    const QStringList ports = inspector.port_lines();
    QCOMPARE(ports.size(), 4);
    QVERIFY2(ports[0].contains(QStringLiteral("X: x : f32[")), qPrintable(ports.join('|')));
    QVERIFY(ports[1].contains(QStringLiteral("W: conv1.w : f32[6, 1, 5, 5]")));
    QVERIFY(ports[3].contains(QStringLiteral("Y: ")));
    QVERIFY(ports[3].contains(QStringLiteral("f32[N, 6, 28, 28]")));
    // Cost for one sample: weights 6*1*5*5 + 6; FLOPs 2 * (6*28*28 outputs) * (1*5*5) + the bias
    // add per output.
    QCOMPARE(inspector.cost_text(),
             QStringLiteral("156 parameters \u00b7 239,904 FLOPs per sample"));
    // A problem elsewhere (conv2 lost its input) leaves conv1's FLOPs known; conv2's and those of
    // the nodes after it, whose types are unknown, are unknown.
    QVERIFY(doc.disconnect(find_node(doc, "conv2"), 0).is_ok());
    QVERIFY(doc.inference_error().has_value());
    inspector.show_node(conv);
    QCOMPARE(inspector.cost_text(), QStringLiteral("156 parameters \u00b7 239,904 FLOPs per sample"));
    inspector.show_node(find_node(doc, "conv2"));
    QVERIFY2(inspector.cost_text().contains(QStringLiteral("FLOPs unknown")), qPrintable(inspector.cost_text()));
  }

  void set_attribute_through_the_field_and_undo() {
    Document doc(registry_);
    Expected<NodeId> conv = doc.add_node("Conv", "c", {0, 0});
    QVERIFY(conv.has_value());
    Inspector inspector(doc);
    inspector.show_node(*conv);
    QLineEdit* field = inspector.attribute_field(QStringLiteral("kernel_shape"));
    QVERIFY(field);
    const std::string before = tessera::ir::print_graph(doc.graph());
    field->setFocus();
    field->setText(QStringLiteral("3, 3"));
    QTest::keyClick(field, Qt::Key_Return);  // editingFinished -> set_attribute
    const tessera::ir::Attribute* ks = doc.graph().node(*conv).attr("kernel_shape");
    QVERIFY(ks);
    QCOMPARE(ks->ints(), (std::vector<int64_t>{3, 3}));
    QVERIFY(tessera::ir::print_graph(doc.graph()) != before);
    QCOMPARE(inspector.attribute_error(QStringLiteral("kernel_shape")), QString());
    doc.undo_stack().undo();
    QCOMPARE(tessera::ir::print_graph(doc.graph()), before);
    QCOMPARE(inspector.attribute_field(QStringLiteral("kernel_shape"))->text(), QString());
    doc.undo_stack().redo();
    QCOMPARE(inspector.attribute_field(QStringLiteral("kernel_shape"))->text(), QStringLiteral("3, 3"));
    // Reset clears it; an empty field does too.
    QVERIFY(inspector.reset_attribute(QStringLiteral("kernel_shape")).is_ok());
    QVERIFY(!doc.graph().node(*conv).attr("kernel_shape"));
    QVERIFY(inspector.apply_attribute(QStringLiteral("group"), QStringLiteral("2")).is_ok());
    QCOMPARE(doc.graph().node(*conv).attr("group")->i(), int64_t{2});
    QVERIFY(inspector.apply_attribute(QStringLiteral("group"), QString()).is_ok());
    QVERIFY(!doc.graph().node(*conv).attr("group"));
  }

  void refusals_show_under_the_field_and_revert() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    Inspector inspector(doc);
    QSignalSpy refused(&inspector, &Inspector::edit_refused);
    const NodeId conv = find_node(doc, "conv1");
    inspector.show_node(conv);
    const std::string before = tessera::ir::print_graph(doc.graph());
    const QString key = QStringLiteral("kernel_shape");
    // Wrong syntax.
    Status st = inspector.apply_attribute(key, QStringLiteral("3, x"));
    QVERIFY(!st.is_ok());
    QCOMPARE(inspector.attribute_error(key), QStringLiteral("'x' is not an integer"));
    QCOMPARE(inspector.attribute_field(key)->text(), QStringLiteral("5, 5"));
    QCOMPARE(tessera::ir::print_graph(doc.graph()), before);
    QCOMPARE(doc.undo_stack().count(), 0);
    QCOMPARE(refused.count(), 1);
    QCOMPARE(refused.last().at(0).toString(), QStringLiteral("kernel_shape: 'x' is not an integer"));
    // Parses, but the document refuses: W is 5x5, so inference fails at conv1.
    st = inspector.apply_attribute(key, QStringLiteral("3, 3"));
    QVERIFY(!st.is_ok());
    QCOMPARE(inspector.attribute_error(key), QString::fromStdString(st.error().message));
    QVERIFY(!inspector.attribute_error(key).isEmpty());
    QCOMPARE(inspector.attribute_field(key)->text(), QStringLiteral("5, 5"));
    QCOMPARE(tessera::ir::print_graph(doc.graph()), before);
    QCOMPARE(doc.undo_stack().count(), 0);
    QCOMPARE(refused.count(), 2);
    // A good edit clears the message.
    QVERIFY(inspector.apply_attribute(key, QStringLiteral("5,5")).is_ok());
    QCOMPARE(inspector.attribute_error(key), QString());
    QCOMPARE(doc.undo_stack().count(), 0);  // the same value: no edit
    QCOMPARE(inspector.attribute_field(key)->text(), QStringLiteral("5, 5"));
  }

  void renaming() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    Inspector inspector(doc);
    const NodeId conv = find_node(doc, "conv1");
    inspector.show_node(conv);
    QVERIFY(inspector.apply_name(QStringLiteral("stem")).is_ok());
    QCOMPARE(doc.graph().node(conv).name, std::string("stem"));
    QCOMPARE(inspector.name_field()->text(), QStringLiteral("stem"));
    Status st = inspector.apply_name(QStringLiteral("conv2"));  // taken
    QVERIFY(!st.is_ok());
    QVERIFY(!inspector.name_error().isEmpty());
    QCOMPARE(doc.graph().node(conv).name, std::string("stem"));
    QCOMPARE(inspector.name_field()->text(), QStringLiteral("stem"));
    doc.undo_stack().undo();
    QCOMPARE(inspector.name_field()->text(), QStringLiteral("conv1"));
  }

  void removal_empties_and_follows_selection_in_the_window() {
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(window.open_file(QString::fromStdString(kLenet)).is_ok());
    const NodeId conv = find_node(doc, "conv2");
    window.scene()->select_nodes({conv});
    QCOMPARE(window.scene()->selected_node_ids(), QList<NodeId>{conv});
    QCOMPARE(window.inspector()->node(), conv);
    QCOMPARE(window.inspector()->title(), QStringLiteral("Conv"));
    auto halos = [&](NodeId id) {
      int n = 0;
      for (const QGraphicsItem* child : window.scene()->node_item(id)->childItems())
        n += child->data(0).toString() == QStringLiteral("selection-mark") ? 1 : 0;
      return n;
    };
    QCOMPARE(halos(conv), 1);
    QCOMPARE(halos(find_node(doc, "conv1")), 0);
    // An edit rebuilds the scene in place and keeps the selection.
    QVERIFY(window.inspector()->apply_name(QStringLiteral("c2")).is_ok());
    window.scene()->flush_update();
    QCOMPARE(window.scene()->selected_node_ids(), QList<NodeId>{conv});
    QCOMPARE(halos(conv), 1);
    QCOMPARE(window.inspector()->name_field()->text(), QStringLiteral("c2"));
    QVERIFY(doc.remove_nodes({conv}).is_ok());
    QCOMPARE(window.inspector()->title(), QStringLiteral("No node selected"));
    window.scene()->flush_update();
    QVERIFY(window.scene()->selected_node_ids().isEmpty());
    doc.undo_stack().undo();  // the node is back; the inspector stays empty until selected
    window.scene()->flush_update();
    QCOMPARE(window.scene()->node_item_count(), 12);
    window.scene()->select_nodes({conv, find_node(doc, "conv1")});
    QCOMPARE(window.inspector()->title(), QStringLiteral("No node selected"));  // two selected
  }
};

TESSERA_QTEST(InspectorTest)
#include "inspector_test.moc"
