// Tests of the studio's edit commands (studio/document.h, edits.h, edit_commands.h, clipboard.h):
// every edit done, undone and redone (the graph's IR text and the layout compared with the state
// before and after), refusals that leave no trace and name the node and port, the change
// signals, move merging, the modified flag, LeNet-5 built by commands only (saved, reopened and
// undone back to nothing). Expected texts and numbers are worked out by hand.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ir/text.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/document/weights.h"

using tessera::Error;
using tessera::Expected;
using tessera::Status;
using tessera::Tensor;
using tessera::ir::Dim;
using tessera::ir::NodeId;
using tessera::ir::TensorType;
using tessera::ir::ValueId;
using tessera::studio::ClipboardPayload;
using tessera::studio::Document;
using tessera::studio::NodePosition;
using tessera::studio::WeightInit;
namespace ir = tessera::ir;
namespace formats = tessera::formats;
namespace studio = tessera::studio;
using tessera::DType;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";
const std::string kEmpty = "graph \"main\" {\n}\n";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TensorType f32(std::vector<Dim> dims) {
  return TensorType(DType::kF32, std::move(dims));
}

Tensor filled(tessera::Shape shape, float v) {
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v);
  return t;
}

// What undo must restore: the graph's text and the layout.
struct Snapshot {
  std::string text;
  formats::Layout layout;
  std::map<ValueId, NodePosition> value_positions;
};

Snapshot snap(const Document& doc) {
  return {ir::print_graph(doc.graph()), doc.layout(), doc.state().value_positions};
}

// The IR text with every "%id" replaced by "%name": equal for graphs that differ only in value
// numbering (the JSON form renumbers values).
std::string by_names(const ir::Graph& g) {
  const std::string text = ir::print_graph(g);
  std::string out;
  std::regex ref("%([0-9]+)");
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), ref), end; it != end; ++it) {
    out.append(last, text.cbegin() + it->position());
    out += "%" + g.value(std::stoi((*it)[1])).name;
    last = text.cbegin() + it->position() + it->length();
  }
  out.append(last, text.cend());
  return out;
}

struct Spies {
  explicit Spies(Document& d)
      : added(&d, &Document::node_added),
        removed(&d, &Document::node_removed),
        changed(&d, &Document::node_changed),
        values(&d, &Document::value_changed),
        edges(&d, &Document::edges_changed),
        terminals(&d, &Document::terminals_changed),
        layout(&d, &Document::layout_changed),
        groups(&d, &Document::groups_changed),
        types(&d, &Document::types_changed),
        reset(&d, &Document::graph_reset),
        modified(&d, &Document::modified_changed) {}
  int total() const {
    int n = 0;
    for (const QSignalSpy* s : {&added, &removed, &changed, &values, &edges, &terminals, &layout,
                                &groups, &types, &reset, &modified})
      n += static_cast<int>(s->count());
    return n;
  }
  QSignalSpy added, removed, changed, values, edges, terminals, layout, groups, types, reset,
      modified;
};

// Undo gives `before` back exactly; redo gives the state after the edit back exactly.
void check_undo_redo(Document& doc, const Snapshot& before) {
  const Snapshot after = snap(doc);
  doc.undo_stack().undo();
  QCOMPARE(snap(doc).text, before.text);
  QVERIFY(snap(doc).layout == before.layout);
  QVERIFY(snap(doc).value_positions == before.value_positions);
  doc.undo_stack().redo();
  QCOMPARE(snap(doc).text, after.text);
  QVERIFY(snap(doc).layout == after.layout);
  QVERIFY(snap(doc).value_positions == after.value_positions);
}

// The edit fails with a reason holding every needle, and changes nothing: graph, layout, stack,
// signals.
template <class F>
void check_refused(Document& doc, F edit, const std::vector<std::string>& needles) {
  const Snapshot before = snap(doc);
  const int count = doc.undo_stack().count(), index = doc.undo_stack().index();
  Spies spies(doc);
  const Status st = edit();
  QVERIFY2(!st.is_ok(), "the edit was not refused");
  if (qEnvironmentVariableIsSet("SHOW_REASONS")) qInfo("%s", st.to_string().c_str());
  for (const std::string& needle : needles)
    QVERIFY2(contains(st.to_string(), needle), (st.to_string() + " lacks: " + needle).c_str());
  QCOMPARE(spies.total(), 0);
  QCOMPARE(snap(doc).text, before.text);
  QVERIFY(snap(doc).layout == before.layout);
  QCOMPARE(doc.undo_stack().count(), count);
  QCOMPARE(doc.undo_stack().index(), index);
}

template <class T>
Status status_of(const Expected<T>& e) {
  return e.status();
}

// LeNet-5 by commands only: x f32[N, 1, 28, 28], Conv(6, 5x5, pads 2) + Relu + MaxPool(2),
// Conv(16, 5x5) + Relu + MaxPool(2), Flatten, Gemm 400->120, Relu, Gemm 120->84, Relu, Gemm 84->10.
// Each layer is one macro; weights are PyTorch-style uniform(+-1/sqrt(fan_in)).
Status build_lenet(Document& doc) {
  TRY(ValueId x,
      doc.add_input("x", f32({Dim::named("N"), Dim::known(1), Dim::known(28), Dim::known(28)}),
                    {0, -60}));
  double y = 0;
  uint64_t seed = 1;
  auto out = [&](NodeId id) { return doc.graph().node(id).outputs[0]; };
  auto params = [&](const std::string& name, tessera::Shape w_shape, int64_t fan_in,
                    int64_t bias) -> Expected<std::pair<ValueId, ValueId>> {
    TRY(Tensor w, studio::make_weight(w_shape, WeightInit::kUniform, fan_in, seed++));
    TRY(Tensor b, studio::make_weight({bias}, WeightInit::kUniform, fan_in, seed++));
    TRY(ValueId wv, doc.add_param(name + ".w", w));
    TRY(ValueId bv, doc.add_param(name + ".b", b));
    return std::make_pair(wv, bv);
  };
  auto layer = [&](const std::string& op, const std::string& name, ValueId in, ir::Attributes attrs,
                   std::optional<std::pair<ValueId, ValueId>> wb) -> Expected<ValueId> {
    TRY(NodeId id, doc.add_node(op, name, {0, y}, attrs));
    y += 80;
    RETURN_IF_ERROR(doc.connect(in, id, 0));
    if (wb) {
      RETURN_IF_ERROR(doc.connect(wb->first, id, 1));
      RETURN_IF_ERROR(doc.connect(wb->second, id, 2));
    }
    return out(id);
  };
  auto conv = [&](const std::string& name, ValueId in, int64_t oc, int64_t ic,
                  std::vector<int64_t> pads) -> Expected<ValueId> {
    doc.begin_macro(QString::fromStdString("Add " + name));
    Expected<std::pair<ValueId, ValueId>> wb = params(name, {oc, ic, 5, 5}, ic * 25, oc);
    Expected<ValueId> v =
        wb ? layer("Conv", name, in, {{"kernel_shape", std::vector<int64_t>{5, 5}}, {"pads", pads}},
                   *wb)
           : Expected<ValueId>(wb.error());
    doc.end_macro();
    return v;
  };
  auto gemm = [&](const std::string& name, ValueId in, int64_t k, int64_t n) -> Expected<ValueId> {
    doc.begin_macro(QString::fromStdString("Add " + name));
    Expected<std::pair<ValueId, ValueId>> wb =
        params(name, {k, n}, k, n);  // Gemm holds W as [K, N]
    Expected<ValueId> v = wb ? layer("Gemm", name, in, {}, *wb) : Expected<ValueId>(wb.error());
    doc.end_macro();
    return v;
  };
  const ir::Attributes pool{{"kernel_shape", std::vector<int64_t>{2, 2}},
                            {"strides", std::vector<int64_t>{2, 2}}};
  TRY(ValueId c1, conv("conv1", x, 6, 1, {2, 2, 2, 2}));
  TRY(ValueId r1, layer("Relu", "relu1", c1, {}, std::nullopt));
  TRY(ValueId p1, layer("MaxPool", "pool1", r1, pool, std::nullopt));
  TRY(ValueId c2, conv("conv2", p1, 16, 6, {0, 0, 0, 0}));
  TRY(ValueId r2, layer("Relu", "relu2", c2, {}, std::nullopt));
  TRY(ValueId p2, layer("MaxPool", "pool2", r2, pool, std::nullopt));
  TRY(ValueId f, layer("Flatten", "flatten", p2, {}, std::nullopt));
  TRY(ValueId h1, gemm("fc1", f, 400, 120));
  TRY(ValueId a1, layer("Relu", "relu3", h1, {}, std::nullopt));
  TRY(ValueId h2, gemm("fc2", a1, 120, 84));
  TRY(ValueId a2, layer("Relu", "relu4", h2, {}, std::nullopt));
  TRY(ValueId logits, gemm("fc3", a2, 84, 10));
  return doc.set_graph_outputs({logits});
}

}  // namespace

class DocumentEditTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();
  QTemporaryDir dir_;

  // x f32[N, 4] -> MatMul 'fc' (B not connected yet); w f32[4, 3] and bad f32[10, 3] are params.
  struct Mlp {
    ValueId x, w, bad;
    NodeId fc;
  };
  Mlp make_mlp(Document& doc) {
    Mlp m{};
    m.x = *doc.add_input("x", f32({Dim::named("N"), Dim::known(4)}), {0, 0});
    m.w = *doc.add_param("w", filled({4, 3}, 0.5f));
    m.bad = *doc.add_param("bad", filled({10, 3}, 0.f));
    m.fc = *doc.add_node("MatMul", "fc", {0, 100});
    if (!doc.connect(m.x, m.fc, 0).is_ok()) qFatal("connect x");
    return m;
  }

 private Q_SLOTS:
  void add_node_do_undo_redo() {
    Document doc(registry_);
    QCOMPARE(ir::print_graph(doc.graph()), kEmpty);
    const Snapshot before = snap(doc);
    Spies spies(doc);
    Expected<NodeId> id = doc.add_node("Relu", "act", {10, 20});
    QVERIFY2(id.has_value(), status_of(id).to_string().c_str());
    QCOMPARE(*id, 0);
    QCOMPARE(ir::print_graph(doc.graph()),
             std::string("graph \"main\" {\n  #0 \"act\" = Relu() -> (%0 \"act.y\" : f32[*]) "
                         "origin \"studio\"\n}\n"));
    QVERIFY(doc.position(0) == (NodePosition{10, 20}));
    QVERIFY(doc.is_incomplete(0));  // X is not connected: incomplete, not failed
    QVERIFY(contains(doc.node_error(0)->to_string(), "required input 0 ('X') is missing"));
    QCOMPARE(spies.added.count(), 1);
    QCOMPARE(spies.added.at(0).at(0).toInt(), 0);
    QCOMPARE(spies.layout.count(), 1);
    QCOMPARE(spies.layout.at(0).at(0).value<QList<NodeId>>(), QList<NodeId>{0});
    QCOMPARE(spies.removed.count(), 0);
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Add Relu 'act'"));
    check_undo_redo(doc, before);
    QCOMPARE(spies.removed.count(), 1);  // by the undo
    QCOMPARE(spies.added.count(), 2);    // and the redo
    // A name is picked when none is given; attributes are kept; ids are never reused.
    doc.undo_stack().undo();
    QCOMPARE(*doc.add_node("Relu"), 1);
    QCOMPARE(doc.graph().node(1).name, std::string("relu1"));
    NodeId flat = *doc.add_node("Flatten", {}, {}, {{"axis", 2}});
    QCOMPARE(doc.graph().node(flat).name, std::string("flatten1"));
    QCOMPARE(doc.graph().node(flat).attr("axis")->i(), int64_t{2});
    QCOMPARE(doc.graph().value(doc.graph().node(flat).outputs[0]).name,
             std::string("flatten1.output"));
  }

  void add_node_refusals() {
    Document doc(registry_);
    QVERIFY(doc.add_node("Relu", "act").has_value());
    check_refused(doc, [&] { return status_of(doc.add_node("Nope", "n")); }, {"unknown op 'Nope'"});
    check_refused(doc, [&] { return status_of(doc.add_node("Relu", "act")); },
                  {"'act' already exists"});
    check_refused(doc,
                  [&] {
                    return status_of(doc.add_node("Flatten", "f", {}, {{"axes", 1}}));
                  },
                  {"Flatten 'f'", "no attribute 'axes'"});
    check_refused(doc,
                  [&] {
                    return status_of(doc.add_node("Flatten", "f", {}, {{"axis", "one"}}));
                  },
                  {"Flatten 'f'", "'axis' must be int, got string"});
  }

  void inputs_params_and_outputs() {
    Document doc(registry_);
    Snapshot before = snap(doc);
    Spies spies(doc);
    const ValueId x = *doc.add_input("x", f32({Dim::named("N"), Dim::known(3)}), {5, 6});
    QCOMPARE(x, 0);
    QCOMPARE(spies.terminals.count(), 1);
    QVERIFY(doc.value_position(x) == (NodePosition{5, 6}));
    check_undo_redo(doc, before);
    before = snap(doc);
    const ValueId b = *doc.add_param("b", filled({3}, 1.5f));
    QCOMPARE(ir::print_graph(doc.graph()),
             std::string("graph \"main\" {\n  input %0 \"x\" : f32[N, 3]\n"
                         "  param %1 \"b\" : f32[3] = tensor<f32[3]> [1.5, 1.5, 1.5]\n}\n"));
    check_undo_redo(doc, before);
    const NodeId add = *doc.add_node("Add", "sum");
    QVERIFY(doc.connect(x, add, 0).is_ok());
    QVERIFY(doc.connect(b, add, 1).is_ok());
    const ValueId s = doc.graph().node(add).outputs[0];
    QCOMPARE(doc.graph().value(s).type.to_string(), std::string("f32[N, 3]"));
    before = snap(doc);
    QVERIFY(doc.add_output(s).is_ok());
    QCOMPARE(doc.graph().outputs(), std::vector<ValueId>{s});
    check_undo_redo(doc, before);
    QVERIFY(doc.add_output(x).is_ok());
    before = snap(doc);
    QVERIFY(doc.remove_output(s).is_ok());
    QCOMPARE(doc.graph().outputs(), std::vector<ValueId>{x});
    check_undo_redo(doc, before);
    check_refused(doc, [&] { return doc.remove_output(s); }, {"not a graph output"});
    check_refused(doc, [&] { return doc.set_graph_outputs({x, x}); }, {"listed twice"});
    check_refused(doc, [&] { return doc.set_graph_outputs({77}); }, {"no value %77"});
    check_refused(doc, [&] { return status_of(doc.add_input("b", f32({}))); },
                  {"'b' already exists"});
    check_refused(doc, [&] { return status_of(doc.add_param("", filled({1}, 0))); },
                  {"needs a name"});
    // Removing the first input keeps the others in order; undo puts it back first, uses restored.
    const ValueId z = *doc.add_input("z", f32({Dim::known(3)}));
    before = snap(doc);
    QVERIFY(doc.remove_value(x).is_ok());
    QCOMPARE(doc.graph().inputs(), std::vector<ValueId>{z});
    QCOMPARE(doc.graph().node(add).inputs, (std::vector<ValueId>{ir::kNoValue, b}));
    QVERIFY(doc.graph().outputs().empty());  // x was the output
    QVERIFY(doc.is_incomplete(add));
    check_undo_redo(doc, before);
    doc.undo_stack().undo();
    QCOMPARE(doc.graph().inputs(), (std::vector<ValueId>{x, z}));
    QCOMPARE(doc.graph().node(add).inputs, (std::vector<ValueId>{x, b}));
    check_refused(doc, [&] { return doc.remove_value(s); }, {"node output"});
  }

  void connect_checks_ports_types_and_cycles() {
    Document doc(registry_);
    Mlp m = make_mlp(doc);
    QVERIFY(doc.is_incomplete(m.fc));  // B missing
    // The wrong weight: inference fails at fc because of it. The reason names node, port, value.
    check_refused(doc, [&] { return doc.connect(m.bad, m.fc, 1); },
                  {"MatMul 'fc' (#0) input 1 ('B')", "'bad' : f32[10, 3]"});
    const Status refused = doc.connect(m.bad, m.fc, 1);
    QCOMPARE(refused.error().node, m.fc);
    check_refused(doc, [&] { return doc.connect(m.w, m.fc, 2); },
                  {"MatMul 'fc' (#0): has no input 2"});
    check_refused(doc, [&] { return doc.connect(m.w, m.fc, -1); }, {"has no input -1"});
    check_refused(doc, [&] { return doc.connect(99, m.fc, 1); }, {"no value %99"});
    check_refused(doc, [&] { return doc.connect(m.w, 42, 1); }, {"no node #42"});
    const Snapshot before = snap(doc);
    Spies spies(doc);
    QVERIFY(doc.connect(m.w, m.fc, 1).is_ok());
    const ValueId y = doc.graph().node(m.fc).outputs[0];
    QVERIFY(doc.is_typed(y));
    QCOMPARE(doc.graph().value(y).type.to_string(), std::string("f32[N, 3]"));  // [N, 4] x [4, 3]
    QVERIFY(doc.node_error(m.fc) == nullptr);
    QCOMPARE(spies.edges.count(), 1);
    QCOMPARE(spies.types.count(), 1);
    QCOMPARE(spies.changed.count(), 1);  // fc: its inputs and its problem (gone)
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Connect 'w' to MatMul 'fc' input 1"));
    check_undo_redo(doc, before);
    // Connecting what is already there does nothing.
    const int count = doc.undo_stack().count();
    QVERIFY(doc.connect(m.w, m.fc, 1).is_ok());
    QCOMPARE(doc.undo_stack().count(), count);
    // Cycles: fc -> a -> b, then b into fc, or a into itself.
    const NodeId a = *doc.add_node("Relu", "a");
    const NodeId b = *doc.add_node("Relu", "b");
    QVERIFY(doc.connect(y, a, 0).is_ok());
    QVERIFY(doc.connect(doc.graph().node(a).outputs[0], b, 0).is_ok());
    check_refused(doc, [&] { return doc.connect(doc.graph().node(b).outputs[0], m.fc, 0); },
                  {"MatMul 'fc' (#0) input 0 ('A')", "would close a cycle"});
    check_refused(doc, [&] { return doc.connect(doc.graph().node(a).outputs[0], a, 0); },
                  {"Relu 'a' (#1)", "cycle"});
  }

  void variadic_inputs_append() {
    Document doc(registry_);
    const ValueId x = *doc.add_input("x", f32({Dim::known(2)}));
    const NodeId sum = *doc.add_node("Sum", "s");
    QVERIFY(doc.connect(x, sum, 0).is_ok());
    QVERIFY(doc.connect(x, sum, 1).is_ok());  // a second slot of the variadic port
    QCOMPARE(doc.graph().node(sum).inputs, (std::vector<ValueId>{x, x}));
    check_refused(doc, [&] { return doc.connect(x, sum, 3); }, {"has no input 3"});
    QCOMPARE(doc.graph().value(doc.graph().node(sum).outputs[0]).type.to_string(),
             std::string("f32[2]"));
  }

  void disconnect_do_undo_redo() {
    Document doc(registry_);
    Mlp m = make_mlp(doc);
    QVERIFY(doc.connect(m.w, m.fc, 1).is_ok());
    const Snapshot before = snap(doc);
    QVERIFY(doc.disconnect(m.fc, 0).is_ok());
    QCOMPARE(doc.graph().node(m.fc).inputs, (std::vector<ValueId>{ir::kNoValue, m.w}));
    QVERIFY(doc.is_incomplete(m.fc));
    QVERIFY(!doc.is_typed(doc.graph().node(m.fc).outputs[0]));
    check_undo_redo(doc, before);
    // The last input goes: the list ends with the last connected input.
    QVERIFY(doc.disconnect(m.fc, 1).is_ok());
    QVERIFY(doc.graph().node(m.fc).inputs.empty());
    check_refused(doc, [&] { return doc.disconnect(m.fc, 1); },
                  {"MatMul 'fc' (#0) input 1 ('B')", "nothing is connected"});
  }

  void set_and_clear_attributes() {
    Document doc(registry_);
    Mlp m = make_mlp(doc);
    const NodeId gemm = *doc.add_node("Gemm", "g");
    QVERIFY(doc.connect(m.x, gemm, 0).is_ok());
    QVERIFY(doc.connect(m.bad, gemm, 1).is_ok() == false);         // [N, 4] x [10, 3]
    const ValueId wt = *doc.add_param("wt", filled({5, 4}, 0.f));  // [N, 4] x [5, 4]^T = [N, 5]
    check_refused(doc, [&] { return doc.connect(wt, gemm, 1); }, {"Gemm 'g' (#1) input 1 ('B')"});
    // Without transB wt does not fit; with it, it does.
    QVERIFY(doc.set_attribute(gemm, "transB", 1).is_ok());
    const Snapshot before = snap(doc);
    QVERIFY(doc.connect(wt, gemm, 1).is_ok());
    QCOMPARE(doc.graph().value(doc.graph().node(gemm).outputs[0]).type.to_string(),
             std::string("f32[N, 5]"));
    check_undo_redo(doc, before);
    // Now clearing transB makes g fail: refused, with the attribute named.
    check_refused(doc, [&] { return doc.clear_attribute(gemm, "transB"); },
                  {"Gemm 'g' (#1) attribute 'transB'"});
    check_refused(doc, [&] { return doc.set_attribute(gemm, "transB", 0); },
                  {"Gemm 'g' (#1) attribute 'transB'"});
    check_refused(doc, [&] { return doc.set_attribute(gemm, "alpha", "big"); },
                  {"Gemm 'g' (#1)", "'alpha' must be float"});
    check_refused(doc, [&] { return doc.set_attribute(gemm, "gamma", 1.0); },
                  {"Gemm 'g' (#1)", "no attribute 'gamma'"});
    Snapshot b2 = snap(doc);
    Spies spies(doc);
    QVERIFY(doc.set_attribute(gemm, "alpha", 2.0).is_ok());
    QCOMPARE(doc.graph().node(gemm).attr("alpha")->f(), 2.0);
    QCOMPARE(spies.changed.count(), 1);
    QCOMPARE(spies.edges.count(), 0);
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Set g.alpha"));
    check_undo_redo(doc, b2);
    b2 = snap(doc);
    QVERIFY(doc.clear_attribute(gemm, "alpha").is_ok());
    QVERIFY(doc.graph().node(gemm).attr("alpha") == nullptr);
    check_undo_redo(doc, b2);
  }

  void renames() {
    Document doc(registry_);
    Mlp m = make_mlp(doc);
    const NodeId other = *doc.add_node("Relu", "other");
    Snapshot before = snap(doc);
    Spies spies(doc);
    QVERIFY(doc.rename_node(m.fc, "dense").is_ok());
    QCOMPARE(doc.graph().node(m.fc).name, std::string("dense"));
    QCOMPARE(spies.changed.count(), 1);
    check_undo_redo(doc, before);
    check_refused(doc, [&] { return doc.rename_node(m.fc, "other"); }, {"'other' already exists"});
    check_refused(doc, [&] { return doc.rename_node(other, ""); },
                  {"Relu 'other' (#1)", "needs a name"});
    before = snap(doc);
    QVERIFY(doc.rename_value(m.x, "input").is_ok());
    QVERIFY(contains(ir::print_graph(doc.graph()), "input %0 \"input\" : f32[N, 4]"));
    QCOMPARE(spies.values.count(), 1);
    check_undo_redo(doc, before);
    check_refused(doc, [&] { return doc.rename_value(m.x, "w"); }, {"'w' already exists"});
  }

  void remove_nodes_restores_everything() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    QVERIFY(doc.set_positions({{2, {0, 200}}, {3, {0, 300}}, {4, {0, 400}}}).is_ok());
    QVERIFY(doc.group({3, 4}, "block2").is_ok());
    const Snapshot before = snap(doc);
    Spies spies(doc);
    // conv2 (#3): relu2 loses its input; conv2.w and conv2.b go with it (16*6*5*5 + 16 = 2416).
    QVERIFY(doc.remove_nodes({3}).is_ok());
    const ir::Graph& g = doc.graph();
    QVERIFY(!g.has_node(3));
    QVERIFY(g.node(4).inputs.empty());
    QVERIFY(!g.find_value("conv2.w") && !g.find_value("conv2.b"));
    QCOMPARE(doc.parameter_count(), int64_t{61706 - 2416});
    QVERIFY(!doc.position(3));
    QCOMPARE(doc.layout().groups.size(), size_t{1});
    QCOMPARE(doc.layout().groups[0].nodes, std::vector<NodeId>{4});
    QVERIFY(doc.is_incomplete(4));
    QCOMPARE(spies.removed.count(), 1);
    QCOMPARE(spies.groups.count(), 1);
    QCOMPARE(spies.terminals.count(), 1);  // the param list
    check_undo_redo(doc, before);
    doc.undo_stack().undo();
    QCOMPARE(doc.parameter_count(), int64_t{61706});
    QVERIFY(doc.inference_error() == std::nullopt);
    // fc3 (#11) feeds the graph output: the output goes; a new node gets a fresh id, not 11.
    QVERIFY(doc.remove_nodes({11, 10}).is_ok());
    QVERIFY(doc.graph().outputs().empty());
    QCOMPARE(*doc.add_node("Relu"), 12);
    check_refused(doc, [&] { return doc.remove_nodes({11}); }, {"no node #11"});
    check_refused(doc, [&] { return doc.remove_nodes({}); }, {"no node"});
    // Everything back to the file's graph.
    while (doc.undo_stack().canUndo()) doc.undo_stack().undo();
    Document fresh(registry_);
    QVERIFY(fresh.load(kLenet).is_ok());
    QCOMPARE(ir::print_graph(doc.graph()), ir::print_graph(fresh.graph()));
  }

  void moves_merge() {
    Document doc(registry_);
    const NodeId a = *doc.add_node("Relu", "a", {0, 0});
    const NodeId b = *doc.add_node("Relu", "b", {100, 0});
    const Snapshot before = snap(doc);
    const int count = doc.undo_stack().count();
    Spies spies(doc);
    QVERIFY(doc.move_nodes({a, b}, 5, 1).is_ok());
    QVERIFY(doc.move_nodes({b, a}, 5, 2).is_ok());  // the same selection: merges
    QVERIFY(doc.move_nodes({a, b}, -1, 0).is_ok());
    QCOMPARE(doc.undo_stack().count(), count + 1);
    QVERIFY(doc.position(a) == (NodePosition{9, 3}));
    QVERIFY(doc.position(b) == (NodePosition{109, 3}));
    QCOMPARE(spies.layout.count(), 3);
    QCOMPARE(spies.layout.at(0).at(0).value<QList<NodeId>>(), (QList<NodeId>{a, b}));
    QCOMPARE(spies.types.count(), 0);
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Move 2 nodes"));
    check_undo_redo(doc, before);
    QVERIFY(doc.move_nodes({a}, 1, 1).is_ok());  // another selection: its own step
    QCOMPARE(doc.undo_stack().count(), count + 2);
    QVERIFY(doc.move_nodes({a}, 0, 0).is_ok());  // nothing moves: no step
    QCOMPARE(doc.undo_stack().count(), count + 2);
    // A node the automatic layout placed must be pinned first.
    Document lenet(registry_);
    QVERIFY(lenet.load(kLenet).is_ok());
    check_refused(lenet, [&] { return lenet.move_nodes({0}, 1, 1); }, {"node #0 has no position"});
    const Snapshot unplaced = snap(lenet);
    QVERIFY(lenet.set_positions({{0, {1, 2}}}).is_ok());
    QVERIFY(lenet.position(0) == (NodePosition{1, 2}));
    check_undo_redo(lenet, unplaced);
  }

  void groups() {
    Document doc(registry_);
    const NodeId a = *doc.add_node("Relu", "a");
    const NodeId b = *doc.add_node("Relu", "b");
    Snapshot before = snap(doc);
    Spies spies(doc);
    QVERIFY(doc.group({b, a}, "pair").is_ok());
    QCOMPARE(doc.layout().groups.size(), size_t{1});
    QVERIFY(doc.layout().groups[0] == (formats::NodeGroup{"pair", {a, b}, false}));
    QCOMPARE(spies.groups.count(), 1);
    check_undo_redo(doc, before);
    check_refused(doc, [&] { return doc.group({a}, "pair"); }, {"'pair' already exists"});
    check_refused(doc, [&] { return doc.group({a}, "solo"); },
                  {"node #0 is already in group 'pair'"});
    before = snap(doc);
    QVERIFY(doc.set_group_collapsed("pair", true).is_ok());
    QVERIFY(doc.layout().groups[0].collapsed);
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Collapse 'pair'"));
    check_undo_redo(doc, before);
    before = snap(doc);
    QVERIFY(doc.ungroup("pair").is_ok());
    QVERIFY(doc.layout().groups.empty());
    check_undo_redo(doc, before);
    check_refused(doc, [&] { return doc.ungroup("pair"); }, {"no group named 'pair'"});
  }

  void copy_and_paste() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    QVERIFY(doc.set_positions({{0, {10, 20}}, {1, {10, 100}}}).is_ok());
    Expected<ClipboardPayload> payload = doc.copy({1, 0});
    QVERIFY(payload.has_value());
    // conv1 with its params, relu1 fed by it; x is outside the selection: absent.
    const ir::Graph& clip = payload->graph;
    QCOMPARE(clip.num_nodes(), 2);
    QCOMPARE(clip.params().size(), size_t{2});
    QCOMPARE(clip.node(0).inputs, (std::vector<ValueId>{ir::kNoValue, 0, 1}));
    QCOMPARE(clip.node(1).inputs, std::vector<ValueId>{clip.node(0).outputs[0]});
    // Through the clipboard's text and back.
    Expected<ClipboardPayload> back = studio::parse_clipboard(studio::clipboard_text(*payload));
    QVERIFY2(back.has_value(), status_of(back).to_string().c_str());
    QCOMPARE(ir::print_graph(back->graph), ir::print_graph(clip));
    QVERIFY(back->positions == payload->positions);
    const Snapshot before = snap(doc);
    Spies spies(doc);
    Expected<std::vector<NodeId>> ids = doc.paste(*back, 50, 5);
    QVERIFY2(ids.has_value(), status_of(ids).to_string().c_str());
    QCOMPARE(*ids, (std::vector<NodeId>{12, 13}));
    const ir::Graph& g = doc.graph();
    QCOMPARE(g.node(12).name, std::string("conv1_2"));
    QCOMPARE(g.node(13).name, std::string("relu1_2"));
    QCOMPARE(g.node(13).inputs, std::vector<ValueId>{g.node(12).outputs[0]});
    QCOMPARE(g.value(g.node(12).inputs[1]).name, std::string("conv1.w_2"));
    QCOMPARE(doc.parameter_count(), int64_t{61706 + 156});
    QVERIFY(doc.position(12) == (NodePosition{60, 25}));
    QVERIFY(doc.position(13) == (NodePosition{60, 105}));
    QVERIFY(doc.is_incomplete(12));  // X absent
    QCOMPARE(spies.added.count(), 2);
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Paste 2 nodes"));
    check_undo_redo(doc, before);
    // Then connecting x makes the copy typed like the original.
    QVERIFY(doc.connect(*g.find_value("x"), 12, 0).is_ok());
    QCOMPARE(g.value(g.node(13).outputs[0]).type.to_string(), std::string("f32[N, 6, 28, 28]"));
    QVERIFY(!doc.copy({}).has_value());
    QVERIFY(!doc.copy({99}).has_value());
  }

  void macro_is_one_step() {
    Document doc(registry_);
    const Snapshot before = snap(doc);
    doc.begin_macro(QStringLiteral("Add block"));
    const ValueId x = *doc.add_input("x", f32({Dim::known(2)}));
    const NodeId r = *doc.add_node("Relu", "r");
    QVERIFY(doc.connect(x, r, 0).is_ok());
    doc.end_macro();
    QCOMPARE(doc.undo_stack().count(), 1);
    QCOMPARE(doc.undo_stack().undoText(), QStringLiteral("Add block"));
    QVERIFY(doc.is_typed(doc.graph().node(r).outputs[0]));
    check_undo_redo(doc, before);
  }

  void modified_flag() {
    Document doc(registry_);
    QSignalSpy modified(&doc, &Document::modified_changed);
    QVERIFY(!doc.is_modified());
    QVERIFY(doc.add_node("Relu", "a").has_value());
    QVERIFY(doc.is_modified());
    QCOMPARE(modified.count(), 1);
    QCOMPARE(modified.at(0).at(0).toBool(), true);
    doc.undo_stack().undo();
    QVERIFY(!doc.is_modified());
    QCOMPARE(modified.at(1).at(0).toBool(), false);
    doc.undo_stack().redo();
    const std::string path = dir_.filePath("one.tir").toStdString();
    QSignalSpy renamed(&doc, &Document::path_changed);
    QVERIFY(doc.save(path).is_ok());
    QVERIFY(!doc.is_modified());
    QCOMPARE(doc.path(), path);
    QCOMPARE(renamed.count(), 1);
    QCOMPARE(modified.count(), 4);  // redo: true, save: false
    QVERIFY(doc.rename_node(0, "b").is_ok());
    QVERIFY(doc.is_modified());
    doc.undo_stack().undo();  // back to what was saved
    QVERIFY(!doc.is_modified());
    // A failed save changes nothing.
    QVERIFY(doc.rename_node(0, "c").is_ok());
    const Status st = doc.save(dir_.filePath("no/such/dir/x.tsr").toStdString());
    QVERIFY(!st.is_ok());
    QVERIFY(contains(st.to_string(), "no/such/dir/x.tsr"));
    QVERIFY(doc.is_modified());
    QCOMPARE(doc.path(), path);
  }

  void lenet_by_commands() {
    Document doc(registry_);
    const Snapshot empty = snap(doc);
    const Status built = build_lenet(doc);
    QVERIFY2(built.is_ok(), built.to_string().c_str());
    const ir::Graph& g = doc.graph();
    QCOMPARE(g.num_nodes(), 12);
    QVERIFY2(!doc.inference_error(),
             doc.inference_error() ? doc.inference_error()->to_string().c_str() : "");
    QCOMPARE(g.outputs().size(), size_t{1});
    QCOMPARE(g.value(g.outputs()[0]).type.to_string(), std::string("f32[N, 10]"));
    // 28 -> conv pads 2 -> 28 -> pool -> 14 -> conv -> 10 -> pool -> 5; 16 * 5 * 5 = 400.
    QCOMPARE(g.value(*g.find_value("flatten.output")).type.to_string(), std::string("f32[N, 400]"));
    // 156 + 2416 + 48120 + 10164 + 850.
    QCOMPARE(doc.parameter_count(), int64_t{61706});
    // conv1.w is uniform(-1/5, 1/5) (fan_in 1*5*5); fc1.w uniform(-1/20, 1/20) (fan_in 400).
    for (const auto& [name, bound] :
         std::vector<std::pair<std::string, double>>{{"conv1.w", 0.2}, {"fc1.w", 0.05}}) {
      const Tensor* t = g.param_data(*g.find_value(name));
      double lo = 1, hi = -1;
      for (int64_t i = 0; i < t->numel(); ++i) {
        lo = std::min(lo, t->get(i));
        hi = std::max(hi, t->get(i));
      }
      QVERIFY(lo >= -bound && hi <= bound);
      QVERIFY(lo < -0.9 * bound && hi > 0.9 * bound);  // spread over the range (150+ draws)
    }
    // 1 input + 5 macros (params, node, edges) + 7 layers of 2 steps (add, connect) + outputs.
    QCOMPARE(doc.undo_stack().count(), 1 + 5 + 14 + 1);
    const Snapshot built_snap = snap(doc);

    // .tsr keeps ids: the same text; .json renumbers values but keeps names and node ids.
    const std::string tsr = dir_.filePath("lenet.tsr").toStdString();
    const std::string json = dir_.filePath("lenet.json").toStdString();
    QVERIFY(doc.save(json).is_ok());
    Status st = doc.save(tsr);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    Document reopened(registry_);
    st = reopened.load(tsr);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QCOMPARE(ir::print_graph(reopened.graph()), built_snap.text);
    QVERIFY(reopened.layout() == built_snap.layout);
    QVERIFY(reopened.state().value_positions == built_snap.value_positions);
    QCOMPARE(reopened.metadata().producer, std::string("tessera-studio"));
    QVERIFY(!reopened.is_modified());
    Document from_json(registry_);
    st = from_json.load(json);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QCOMPARE(by_names(from_json.graph()), by_names(g));
    QVERIFY(from_json.layout() == built_snap.layout);
    QCOMPARE(from_json.layout().positions.size(), size_t{12});
    QVERIFY(from_json.value_position(*from_json.graph().find_value("x")) == (NodePosition{0, -60}));
    QCOMPARE(from_json.parameter_count(), int64_t{61706});

    // Undo the whole build: nothing left; redo all of it: the same graph again.
    while (doc.undo_stack().canUndo()) doc.undo_stack().undo();
    QCOMPARE(ir::print_graph(doc.graph()), kEmpty);
    QVERIFY(doc.layout() == empty.layout);
    QVERIFY(doc.state().value_positions.empty());
    QCOMPARE(doc.graph().num_nodes(), 0);
    QCOMPARE(doc.parameter_count(), int64_t{0});
    while (doc.undo_stack().canRedo()) doc.undo_stack().redo();
    QCOMPARE(ir::print_graph(doc.graph()), built_snap.text);
    QVERIFY(!doc.is_modified());  // the stack is at the saved index again
  }

  void load_resets_the_stack() {
    Document doc(registry_);
    QVERIFY(doc.add_node("Relu", "a").has_value());
    QSignalSpy reset(&doc, &Document::graph_reset);
    QSignalSpy modified(&doc, &Document::modified_changed);
    QVERIFY(doc.load(kLenet).is_ok());
    QCOMPARE(reset.count(), 1);
    QCOMPARE(modified.count(), 1);
    QCOMPARE(doc.undo_stack().count(), 0);
    QVERIFY(!doc.is_modified());
    doc.reset();
    QVERIFY(doc.is_empty());
    QCOMPARE(reset.count(), 2);
    QCOMPARE(ir::print_graph(doc.graph()), kEmpty);
  }

  void failures_stay_local() {
    // x f32[N, 4] feeds two branches; one Add fails, the other branch is typed all the way.
    Document doc(registry_);
    const ValueId x = *doc.add_input("x", f32({Dim::named("N"), Dim::known(4)}));
    const ValueId y = *doc.add_input("y", f32({Dim::named("N"), Dim::known(3)}));
    const NodeId bad = *doc.add_node("Add", "bad");
    QVERIFY(doc.connect(x, bad, 0).is_ok());
    check_refused(doc, [&] { return doc.connect(y, bad, 1); },
                  {"Add 'bad' (#0) input 1 ('B')", "'y' : f32[N, 3]"});
    const NodeId good = *doc.add_node("Relu", "good");
    QVERIFY(doc.connect(x, good, 0).is_ok());
    QVERIFY(doc.is_typed(doc.graph().node(good).outputs[0]));
    QVERIFY(doc.is_incomplete(bad));
    QVERIFY(!doc.analysis().failed(bad));
  }
};

TESSERA_QTEST(DocumentEditTest)
#include "document_edit_test.moc"
