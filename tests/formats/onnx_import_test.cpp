// Tests of formats/onnx_import*.cpp: structure and types of imported testdata models, results
// against the outputs stored with them (computed by ONNX's NumPy reference), old-opset rules,
// nested graphs, and refusal of bad files (truncated, random, wrong opsets, unknown ops, lying
// sizes, external data problems). Hand-built models use the onnx C++ API.
#include "formats/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera::formats {
namespace {

namespace fs = std::filesystem;
const std::string kData = "/usr/share/libonnx-testdata/data/";

const ops::OpRegistry& registry() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

bool have_testdata() { return fs::exists(kData + "node/test_relu/model.onnx"); }
#define REQUIRE_TESTDATA() \
  if (!have_testdata()) GTEST_SKIP() << "libonnx-testdata is not installed"

// ---- building models with the onnx C++ API ----

struct ModelBuilder {
  onnx::ModelProto model;
  onnx::GraphProto* g;

  explicit ModelBuilder(int64_t opset, int64_t ir_version = 8) {
    model.set_ir_version(ir_version);
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g = model.mutable_graph();
    g->set_name("test");
  }
  static void set_type(onnx::ValueInfoProto* vi, int32_t elem, const std::vector<int64_t>& dims) {
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  static void input(onnx::GraphProto* g, const std::string& name, int32_t elem, const std::vector<int64_t>& dims) {
    auto* vi = g->add_input();
    vi->set_name(name);
    set_type(vi, elem, dims);
  }
  void input(const std::string& name, int32_t elem, const std::vector<int64_t>& dims) { input(g, name, elem, dims); }
  static void output(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }
  void output(const std::string& name) { output(g, name); }
  static onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                               std::vector<std::string> out, const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    return node(g, op, std::move(in), std::move(out), name);
  }
  onnx::TensorProto* initializer(const std::string& name, int32_t elem, const std::vector<int64_t>& dims) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  }
  std::string bytes() const { return model.SerializeAsString(); }
  Expected<ir::Graph> import(const std::string& base_dir = "") const {
    return import_onnx_bytes(bytes(), "test.onnx", base_dir, registry());
  }
};

void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
onnx::GraphProto* attr_graph(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

std::vector<Tensor> run(const ir::Graph& g, const runtime::Feeds& feeds) {
  auto r = runtime::run_reference(g, registry(), feeds);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
  return r ? *r : std::vector<Tensor>{};
}

std::string error_of(const Expected<ir::Graph>& g) { return g ? "imported without error" : g.error().to_string(); }

// Imports a testdata case, runs test_data_set_0, compares with the stored outputs.
void check_case(const std::string& name, double tol = 1e-5) {
  const std::string dir = kData + name + "/";
  auto g = import_onnx_file(dir + "model.onnx", registry());
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  runtime::Feeds feeds;
  for (int k = 0; fs::exists(dir + "test_data_set_0/input_" + std::to_string(k) + ".pb"); ++k) {
    auto in = read_onnx_tensor_file(dir + "test_data_set_0/input_" + std::to_string(k) + ".pb");
    ASSERT_TRUE(in.has_value()) << in.error().to_string();
    feeds[in->first.empty() ? g->value(g->inputs()[k]).name : in->first] = in->second;
  }
  std::vector<Tensor> outs = run(*g, feeds);
  for (size_t k = 0; k < outs.size(); ++k) {
    auto want = read_onnx_tensor_file(dir + "test_data_set_0/output_" + std::to_string(k) + ".pb");
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    ASSERT_EQ(outs[k].shape(), want->second.shape()) << name;
    ASSERT_EQ(outs[k].dtype(), want->second.dtype()) << name;
    for (int64_t i = 0; i < outs[k].numel(); ++i)
      ASSERT_NEAR(outs[k].get(i), want->second.get(i), tol + 1e-3 * std::fabs(want->second.get(i))) << name << " element " << i;
  }
}

// ---- testdata models ----

TEST(OnnxImport, ConvStructureAndTypes) {
  REQUIRE_TESTDATA();
  auto g = import_onnx_file(kData + "node/test_conv_with_strides_padding/model.onnx", registry());
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  ASSERT_EQ(g->inputs().size(), 2u);
  EXPECT_EQ(g->value(g->inputs()[0]).name, "x");
  EXPECT_EQ(g->value(g->inputs()[0]).type.to_string(), "f32[1, 1, 7, 5]");
  EXPECT_EQ(g->value(g->inputs()[1]).type.to_string(), "f32[1, 1, 3, 3]");
  ASSERT_EQ(g->num_nodes(), 1);
  const ir::Node& n = g->node(g->node_ids()[0]);
  EXPECT_EQ(n.op, "Conv");
  EXPECT_EQ(n.provenance.origin, "onnx:Conv#0");
  ASSERT_NE(n.attr("strides"), nullptr);
  EXPECT_EQ(n.attr("strides")->ints(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(n.attr("pads")->ints(), (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->value(g->outputs()[0]).name, "y");
  EXPECT_EQ(g->value(g->outputs()[0]).type.to_string(), "f32[1, 1, 4, 3]");  // inferred
}

TEST(OnnxImport, UnsortedNodesAreSortedAsOnnxRuntimeDoes) {
  // ONNX Runtime's float16 converter appends the Cast that the first node reads: the nodes are
  // out of order. Importing in dependency order (file order among the ready) runs it; an If
  // branch reading a value of a later node counts as a use.
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {2, 3});
  m.input("c", onnx::TensorProto::BOOL, {});
  m.node("Relu", {"x_cast"}, {"r"}, "uses_the_cast");
  auto* iff = m.node("If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::GraphProto* g = attr_graph(iff, branch);
    ModelBuilder::node(g, std::string(branch) == "then_branch" ? "Neg" : "Abs", {"late"}, {std::string(branch) + "_out"});
    ModelBuilder::output(g, std::string(branch) + "_out");
  }
  m.node("Exp", {"r"}, {"late"}, "defined_after_the_if");
  auto* cast = m.node("Cast", {"x"}, {"x_cast"}, "appended_cast");
  attr_int(cast, "to", onnx::TensorProto::FLOAT);
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1.f, 0.5f, 2.f, -3.f, 0.f, 1.f});
  auto out = run(*g, {{"x", x}, {"c", Tensor::from_bools({}, {true})}});
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_FLOAT_EQ(out[0].get(i), -std::exp(std::max(0.0, x.get(i)))) << i;
  // A true cycle still fails, naming the input.
  ModelBuilder cyc(13);
  cyc.input("x", onnx::TensorProto::FLOAT, {2});
  cyc.node("Add", {"x", "b"}, {"a"});
  cyc.node("Relu", {"a"}, {"b"});
  cyc.output("b");
  EXPECT_NE(error_of(cyc.import()).find("'b' is not defined"), std::string::npos) << error_of(cyc.import());
}

TEST(OnnxImport, NamedNodeKeepsItsNameAsOrigin) {
  REQUIRE_TESTDATA();
  auto g = import_onnx_file(kData + "simple/test_single_relu_model/model.onnx", registry());
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  const ir::Node& n = g->node(g->node_ids()[0]);
  EXPECT_EQ(n.name, "test");
  EXPECT_EQ(n.provenance.origin, "onnx:test");
}

TEST(OnnxImport, TestdataCasesMatchStoredOutputs) {
  REQUIRE_TESTDATA();
  for (const char* c : {"node/test_relu", "node/test_conv_with_strides_padding", "node/test_slice",
                        "node/test_softmax_axis_0", "node/test_if", "node/test_loop11",
                        "node/test_range_float_type_positive_delta_expanded", "node/test_cast_FLOAT_to_DOUBLE",
                        "simple/test_single_relu_model"}) {
    SCOPED_TRACE(c);
    check_case(c);
  }
}

TEST(OnnxImport, ReadsTensorFile) {
  REQUIRE_TESTDATA();
  auto t = read_onnx_tensor_file(kData + "node/test_conv_with_strides_padding/test_data_set_0/input_0.pb");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_EQ(t->first, "x");
  EXPECT_EQ(t->second.shape(), (Shape{1, 1, 7, 5}));
  EXPECT_EQ(t->second.get(0), 0.0);  // the test's input is 0, 1, 2, ..., 34
  EXPECT_EQ(t->second.get(34), 34.0);
}

// ---- hand-built models: initializers, constants, rules ----

TEST(OnnxImport, InitializersBecomeParamsFromRawAndTypedData) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {2});
  auto* w = m.initializer("w", onnx::TensorProto::FLOAT, {2});
  w->add_float_data(10.f);
  w->add_float_data(20.f);
  auto* b = m.initializer("b", onnx::TensorProto::FLOAT, {2});
  const float raw[2] = {1.f, 2.f};
  b->set_raw_data(std::string(reinterpret_cast<const char*>(raw), sizeof raw));
  m.input("b", onnx::TensorProto::FLOAT, {2});  // IR < 4 style: an initializer also listed as input
  m.node("Mul", {"x", "w"}, {"t"});
  m.node("Add", {"t", "b"}, {"y"});
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->params().size(), 2u);
  auto out = run(*g, {{"x", Tensor::from_vector<float>({2}, {3.f, 4.f})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{31, 82}));
}

TEST(OnnxImport, SymbolicAndUnknownDims) {
  ModelBuilder m(13);
  auto* vi = m.g->add_input();
  vi->set_name("x");
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  tt->mutable_shape()->add_dim();
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  auto* u = m.g->add_input();
  u->set_name("u");
  u->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);  // no shape
  m.node("Relu", {"x"}, {"y"});
  m.node("Identity", {"u"}, {"v"});
  m.output("y");
  m.output("v");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->value(g->inputs()[0]).type.to_string(), "f32[N, ?, 3]");
  EXPECT_EQ(g->value(g->inputs()[1]).type.to_string(), "i64[*]");
}

TEST(OnnxImport, ConstantFormsAndCastToDtypeName) {
  ModelBuilder m(13);
  auto* c = m.node("Constant", {}, {"k"});
  attr_ints(c, "value_ints", {2, 3});
  auto* cast = m.node("Cast", {"k"}, {"y"});
  attr_int(cast, "to", onnx::TensorProto::DOUBLE);
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  const ir::Node& cn = g->node(g->node_ids()[0]);
  ASSERT_NE(cn.attr("value"), nullptr);  // value_ints became a tensor, so it folds
  EXPECT_EQ(cn.attr("value")->t().dtype(), DType::kI64);
  EXPECT_EQ(g->node(g->node_ids()[1]).attr("to")->s(), "f64");
  auto out = run(*g, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kF64);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{2, 3}));
}

// Scan-8 (a batch axis on every input and output) becomes a Loop over the batch rows around a
// Scan-9: each row keeps its own running sum; a reversed scan input is read back to front.
TEST(OnnxImport, Scan8RunsEachBatchRow) {
  ModelBuilder m(8);
  m.input("init", onnx::TensorProto::FLOAT, {2, 1});
  m.input("x", onnx::TensorProto::FLOAT, {2, 3, 1});
  auto* n = m.node("Scan", {"", "init", "x"}, {"final", "partial"});
  attr_int(n, "num_scan_inputs", 1);
  attr_ints(n, "directions", {1});
  onnx::GraphProto* body = attr_graph(n, "body");
  ModelBuilder::input(body, "acc", onnx::TensorProto::FLOAT, {1});
  ModelBuilder::input(body, "xi", onnx::TensorProto::FLOAT, {1});
  ModelBuilder::node(body, "Add", {"acc", "xi"}, {"acc_out"});
  ModelBuilder::node(body, "Identity", {"acc_out"}, {"seen"});
  ModelBuilder::output(body, "acc_out");
  ModelBuilder::output(body, "seen");
  m.output("final");
  m.output("partial");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"init", Tensor::from_vector<float>({2, 1}, {0, 100})},
                      {"x", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 10, 20, 30})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{6, 160}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(out[1].to_doubles(), (std::vector<double>{3, 5, 6, 130, 150, 160}));  // reversed input
  // sequence_lens (variable lengths per row) is refused, naming the node.
  n->set_input(0, "lens");
  m.input("lens", onnx::TensorProto::INT32, {2});
  EXPECT_NE(error_of(m.import()).find("Scan-8's sequence_lens is not supported"), std::string::npos) << error_of(m.import());
}

TEST(OnnxImport, Slice9AttributesBecomeInputs) {
  ModelBuilder m(9);
  m.input("x", onnx::TensorProto::FLOAT, {2, 4});
  auto* n = m.node("Slice", {"x"}, {"y"});
  attr_ints(n, "starts", {1});
  attr_ints(n, "ends", {3});
  attr_ints(n, "axes", {1});
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  const ir::Node& s = g->node(g->node_ids()[0]);
  EXPECT_EQ(s.inputs.size(), 4u);
  EXPECT_TRUE(s.attrs.empty());
  Tensor x = Tensor::from_vector<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto out = run(*g, {{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{1, 2, 5, 6}));
}

TEST(OnnxImport, Squeeze11AndSplit11AttributesBecomeInputs) {
  ModelBuilder m(11);
  m.input("x", onnx::TensorProto::FLOAT, {1, 5});
  attr_ints(m.node("Squeeze", {"x"}, {"s"}), "axes", {0});
  auto* sp = m.node("Split", {"s"}, {"a", "b"});
  attr_ints(sp, "split", {2, 3});
  m.output("a");
  m.output("b");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"x", Tensor::from_vector<float>({1, 5}, {1, 2, 3, 4, 5})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{1, 2}));
  EXPECT_EQ(out[1].to_doubles(), (std::vector<double>{3, 4, 5}));
}

TEST(OnnxImport, Softmax11CoercesTo2DAtAxis) {
  // Softmax-11 with axis=1 on [1, 2, 2] normalises over all 4 trailing elements together.
  ModelBuilder m(11);
  m.input("x", onnx::TensorProto::FLOAT, {1, 2, 2});
  attr_int(m.node("Softmax", {"x"}, {"y"}), "axis", 1);
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"x", Tensor::from_vector<float>({1, 2, 2}, {0, 0, 0, std::log(5.f)})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 2}));
  // exp: 1, 1, 1, 5 -> sum 8
  const std::vector<double> want{0.125, 0.125, 0.125, 0.625};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0].get(i), want[i], 1e-6);
}

TEST(OnnxImport, Clip6AttributesBecomeInputs) {
  ModelBuilder m(7);
  m.input("x", onnx::TensorProto::FLOAT, {3});
  auto* c = m.node("Clip", {"x"}, {"y"});
  auto* lo = c->add_attribute();
  lo->set_name("min");
  lo->set_type(onnx::AttributeProto::FLOAT);
  lo->set_f(-1.f);
  auto* hi = c->add_attribute();
  hi->set_name("max");
  hi->set_type(onnx::AttributeProto::FLOAT);
  hi->set_f(2.f);
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"x", Tensor::from_vector<float>({3}, {-5, 0.5, 9})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{-1, 0.5, 2}));
}

void attr_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

TEST(OnnxImport, Add6BroadcastAtAxisAlignsB) {
  // Add-6, broadcast=1, axis=1: B [3] lines up with A's dim 1 of [2, 3, 2], so B[j] is added to
  // A[i, j, k] (opset 7 would align it with the last dim and fail).
  ModelBuilder m(6);
  m.input("a", onnx::TensorProto::FLOAT, {2, 3, 2});
  m.input("b", onnx::TensorProto::FLOAT, {3});
  auto* n = m.node("Add", {"a", "b"}, {"y"});
  attr_int(n, "broadcast", 1);
  attr_int(n, "axis", 1);
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"a", Tensor::from_vector<float>({2, 3, 2}, std::vector<float>(12, 0.f))},
                      {"b", Tensor::from_vector<float>({3}, {10, 20, 30})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30}));
}

TEST(OnnxImport, Mul1BroadcastWithoutAxisAlignsTrailingDims) {
  ModelBuilder m(1);
  m.input("a", onnx::TensorProto::FLOAT, {2, 2});
  m.input("b", onnx::TensorProto::FLOAT, {2});
  attr_int(m.node("Mul", {"a", "b"}, {"y"}), "broadcast", 1);
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"a", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})},
                      {"b", Tensor::from_vector<float>({2}, {10, 100})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{10, 200, 30, 400}));
}

TEST(OnnxImport, Concat1DefaultsToAxis1AndCast1TakesATypeName) {
  ModelBuilder m(1);
  m.input("a", onnx::TensorProto::FLOAT, {1, 2});
  m.input("b", onnx::TensorProto::FLOAT, {1, 1});
  m.node("Concat", {"a", "b"}, {"c"});
  attr_string(m.node("Cast", {"c"}, {"y"}), "to", "INT64");
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"a", Tensor::from_vector<float>({1, 2}, {1.5f, 2})}, {"b", Tensor::from_vector<float>({1, 1}, {7})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kI64);
  EXPECT_EQ(out[0].shape(), (Shape{1, 3}));
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{1, 2, 7}));
}

TEST(OnnxImport, PRelu6SlopeAppliesPerChannel) {
  ModelBuilder m(6);
  m.input("x", onnx::TensorProto::FLOAT, {1, 2, 2});
  m.input("s", onnx::TensorProto::FLOAT, {2});
  m.node("PRelu", {"x", "s"}, {"y"});
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"x", Tensor::from_vector<float>({1, 2, 2}, {-1, -2, -3, 4})},
                      {"s", Tensor::from_vector<float>({2}, {0.5f, 0.25f})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{-0.5, -1, -0.75, 4}));
}

TEST(OnnxImportErrors, Add6BroadcastAxisThatDoesNotFit) {
  ModelBuilder m(6);
  m.input("a", onnx::TensorProto::FLOAT, {2, 3});
  m.input("b", onnx::TensorProto::FLOAT, {3, 1});
  auto* n = m.node("Add", {"a", "b"}, {"y"}, "add");
  attr_int(n, "broadcast", 1);
  attr_int(n, "axis", 1);
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("Add (node 'add'): axis 1 does not fit B"), std::string::npos) << e;
}

TEST(OnnxImport, IfBranchesCaptureOuterValues) {
  ModelBuilder m(13);
  m.input("cond", onnx::TensorProto::BOOL, {});
  m.input("x", onnx::TensorProto::FLOAT, {2});
  m.node("Neg", {"x"}, {"nx"});
  auto* n = m.node("If", {"cond"}, {"y"}, "branch");
  onnx::GraphProto* then_g = attr_graph(n, "then_branch");
  ModelBuilder::node(then_g, "Add", {"x", "nx"}, {"t"});  // x - x = 0 from outer values
  ModelBuilder::output(then_g, "t");
  onnx::GraphProto* else_g = attr_graph(n, "else_branch");
  ModelBuilder::node(else_g, "Identity", {"nx"}, {"e"});
  ModelBuilder::output(else_g, "e");
  m.output("y");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  const ir::Node& ifn = g->node(g->node_ids()[1]);
  ASSERT_EQ(ifn.op, "If");
  const ir::Graph& then_ir = ifn.attr("then_branch")->g();
  ASSERT_EQ(then_ir.captures().size(), 2u);
  EXPECT_EQ(then_ir.value(then_ir.captures()[0]).name, "x");
  EXPECT_EQ(then_ir.value(then_ir.captures()[1]).name, "nx");
  Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  auto t = run(*g, {{"cond", Tensor::from_bools({}, {true})}, {"x", x}});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to_doubles(), (std::vector<double>{0, 0}));
  auto e = run(*g, {{"cond", Tensor::from_bools({}, {false})}, {"x", x}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].to_doubles(), (std::vector<double>{-1, -2}));
}

TEST(OnnxImport, LoopBodyInputsWithoutTypesAreDerived) {
  // sum = x; repeat 3 times: sum = sum + x  -> 4x. The body's inputs carry no types.
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {2});
  auto* k = m.node("Constant", {}, {"trips"});
  auto* a = k->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_int64_data(3);
  auto* loop = m.node("Loop", {"trips", "", "x"}, {"sum"});
  onnx::GraphProto* body = attr_graph(loop, "body");
  for (const char* name : {"i", "c", "acc"}) body->add_input()->set_name(name);
  ModelBuilder::node(body, "Identity", {"c"}, {"c_out"});
  ModelBuilder::node(body, "Add", {"acc", "x"}, {"acc_out"});
  ModelBuilder::output(body, "c_out");
  ModelBuilder::output(body, "acc_out");
  m.output("sum");
  auto g = m.import();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto out = run(*g, {{"x", Tensor::from_vector<float>({2}, {1, 2})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{4, 8}));
}

// ---- bad input ----

TEST(OnnxImportErrors, TruncatedAndRandomBytes) {
  REQUIRE_TESTDATA();
  std::ifstream f(kData + "node/test_conv_with_strides_padding/model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 40u);
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{7}}) {
    auto g = import_onnx_bytes(bytes.substr(0, cut), "cut.onnx", "", registry());
    ASSERT_FALSE(g.has_value()) << "cut at " << cut;
    EXPECT_EQ(g.error().where, "cut.onnx");
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 50; ++i) {
    std::string junk(static_cast<size_t>(rng() % 300), '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    auto g = import_onnx_bytes(junk, "junk.onnx", "", registry());
    EXPECT_FALSE(g.has_value());
  }
  auto g = import_onnx_bytes("\x08\x01\x12\x03", "bad.onnx", "", registry());
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message.find("truncated or corrupt"), std::string::npos) << g.error().to_string();
}

TEST(OnnxImportErrors, OpsetOutOfRange) {
  for (int64_t opset : {0, 18}) {
    ModelBuilder m(opset);
    m.input("x", onnx::TensorProto::FLOAT, {1});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    auto g = m.import();
    ASSERT_FALSE(g.has_value());
    EXPECT_NE(g.error().message.find("opset " + std::to_string(opset) + " is not supported"), std::string::npos)
        << g.error().to_string();
  }
  ModelBuilder old_ir(13, 2);
  EXPECT_NE(error_of(old_ir.import()).find("ir_version 2"), std::string::npos);
}

TEST(OnnxImportErrors, AllUnsupportedOpsListedAtOnce) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {1});
  m.node("FooOp", {"x"}, {"a"}, "n3");
  m.node("Relu", {"a"}, {"b"});
  m.node("BarOp", {"b"}, {"c"});
  auto* custom = m.node("Baz", {"c"}, {"d"}, "n9");
  custom->set_domain("com.example");
  m.output("d");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("unsupported ops: FooOp (node 'n3'), BarOp (node #2), com.example.Baz (node 'n9')"),
            std::string::npos)
      << e;
}

TEST(OnnxImportErrors, RawDataShorterThanDims) {
  ModelBuilder m(13);
  auto* w = m.initializer("w", onnx::TensorProto::FLOAT, {4});
  w->set_raw_data(std::string(12, '\0'));
  m.node("Identity", {"w"}, {"y"});
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("initializer 'w': raw_data holds 12 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("need 16"), std::string::npos) << e;
}

TEST(OnnxImportErrors, HugeDimsRefusedBeforeAllocating) {
  ModelBuilder m(13);
  auto* w = m.initializer("w", onnx::TensorProto::FLOAT, {1 << 20, 1 << 20, 1 << 10});
  w->set_raw_data(std::string(4, '\0'));
  m.node("Identity", {"w"}, {"y"});
  m.output("y");
  const std::string e = error_of(m.import());
  // 2^50 elements * 4 bytes = 4.504e15 bytes
  EXPECT_NE(e.find("need 4.504e+15 bytes, more than the 64 GiB limit"), std::string::npos) << e;
  EXPECT_NE(e.find("initializer 'w'"), std::string::npos) << e;
}

TEST(OnnxImportErrors, TypedDataCountMismatch) {
  ModelBuilder m(13);
  auto* w = m.initializer("w", onnx::TensorProto::INT64, {3});
  w->add_int64_data(1);
  m.node("Identity", {"w"}, {"y"});
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("int64_data holds 1 values but the dims say 3"), std::string::npos) << e;
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_onnx_ext_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static ModelBuilder model(const std::string& location, int64_t offset, int64_t length) {
    ModelBuilder m(13);
    auto* w = m.initializer("w", onnx::TensorProto::FLOAT, {2});
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    if (offset >= 0) add("offset", std::to_string(offset));
    if (length >= 0) add("length", std::to_string(length));
    m.node("Identity", {"w"}, {"y"});
    m.output("y");
    return m;
  }
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  fs::path dir_;
};

TEST_F(ExternalData, ReadsAtOffset) {
  const float v[2] = {1.5f, -2.f};
  write("w.bin", "PAD!" + std::string(reinterpret_cast<const char*>(v), sizeof v));
  auto g = model("w.bin", 4, 8).import(dir_.string());
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->param_data(g->params()[0])->to_doubles(), (std::vector<double>{1.5, -2}));
}

TEST_F(ExternalData, MissingFileTooShortAndEscapingPaths) {
  EXPECT_NE(error_of(model("nope.bin", -1, -1).import(dir_.string())).find("'" + (dir_ / "nope.bin").string() + "' is missing"),
            std::string::npos);
  write("short.bin", std::string(6, 'x'));
  const std::string e = error_of(model("short.bin", -1, -1).import(dir_.string()));
  EXPECT_NE(e.find("holds 6 bytes; 8 are needed from offset 0"), std::string::npos) << e;
  EXPECT_NE(error_of(model("short.bin", 4, -1).import(dir_.string())).find("holds 6 bytes"), std::string::npos);
  EXPECT_NE(error_of(model("../etc/passwd", -1, -1).import(dir_.string())).find("leaves the model's folder"),
            std::string::npos);
  EXPECT_NE(error_of(model("/etc/passwd", -1, -1).import(dir_.string())).find("is absolute"), std::string::npos);
  EXPECT_NE(error_of(model("short.bin", -1, 4).import(dir_.string())).find("length 4 does not match"), std::string::npos);
}

TEST(OnnxImportErrors, UndefinedInputAndNonTensorTypes) {
  ModelBuilder m(13);
  m.node("Relu", {"ghost"}, {"y"}, "r");
  m.output("y");
  EXPECT_NE(error_of(m.import()).find("Relu (node 'r'): input 'ghost' is not defined"), std::string::npos);
  ModelBuilder s(13);
  auto* vi = s.g->add_input();
  vi->set_name("seq");
  vi->mutable_type()->mutable_sequence_type();
  s.output("seq");
  EXPECT_NE(error_of(s.import()).find("input 'seq' is a sequence"), std::string::npos);
}

TEST(OnnxImportErrors, InferenceErrorNamesTheNode) {
  ModelBuilder m(13);
  m.input("a", onnx::TensorProto::FLOAT, {2, 3});
  m.input("b", onnx::TensorProto::FLOAT, {4, 5});
  m.node("MatMul", {"a", "b"}, {"y"}, "mm");
  m.output("y");
  auto g = m.import();
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message.find("'mm'"), std::string::npos) << g.error().to_string();
  EXPECT_NE(g.error().message.find("[onnx:mm]"), std::string::npos) << g.error().to_string();
  EXPECT_GE(g.error().node, 0);
}


// What onnx.checker refuses, the importer refuses too, naming the node and the reason (issue 15,
// item 8; each found by tests/fuzz/campaign.py).
namespace checker_rules {

TEST(OnnxImportErrors, OpOutsideTheModelsOpset) {
  ModelBuilder m(8);  // Atanh first appears in opset 9
  m.input("x", onnx::TensorProto::FLOAT, {3});
  m.node("Atanh", {"x"}, {"y"}, "at");
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("Atanh (node 'at'): Atanh is not in opset 8 (the model's); it first appears in opset 9"), std::string::npos) << e;
}

TEST(OnnxImportErrors, NodeThatDoesNotMatchItsSchema) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {3});
  attr_int(m.node("Relu", {"x"}, {"y"}, "r"), "alpha", 2);  // Relu has no attributes
  m.output("y");
  std::string e = error_of(m.import());
  EXPECT_NE(e.find("Relu (node 'r'): does not match ONNX's definition of Relu in opset 13: Unrecognized attribute: alpha"),
            std::string::npos) << e;
  ModelBuilder two(13);  // Relu takes one input
  two.input("x", onnx::TensorProto::FLOAT, {3});
  two.node("Relu", {"x", "x"}, {"y"}, "r");
  two.output("y");
  e = error_of(two.import());
  EXPECT_NE(e.find("does not match ONNX's definition of Relu"), std::string::npos) << e;
}

TEST(OnnxImportErrors, DeclaredOutputTypeThatTheNodeDoesNotProduce) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {2, 3});
  m.node("Relu", {"x"}, {"y"}, "r");
  auto* out = m.g->add_output();
  out->set_name("y");
  ModelBuilder::set_type(out, onnx::TensorProto::FLOAT, {2, 4});
  std::string e = error_of(m.import());
  EXPECT_NE(e.find("output 'y' is declared f32[2, 4] but is computed as f32[2, 3] by Relu"), std::string::npos) << e;
  EXPECT_NE(e.find("the dimension 1 differs"), std::string::npos) << e;
  ModelBuilder::set_type(out, onnx::TensorProto::INT64, {2, 3});
  out->mutable_type()->mutable_tensor_type()->mutable_shape()->clear_dim();
  for (int64_t d : {2, 3}) out->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  e = error_of(m.import());
  EXPECT_NE(e.find("the element type differs"), std::string::npos) << e;
  // A symbolic or unknown declared dimension describes any size.
  ModelBuilder ok(13);
  ok.input("x", onnx::TensorProto::FLOAT, {2, 3});
  ok.node("Relu", {"x"}, {"y"});
  auto* o = ok.g->add_output();
  o->set_name("y");
  auto* tt = o->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  tt->mutable_shape()->add_dim();
  EXPECT_TRUE(ok.import().has_value());
}

TEST(OnnxImportErrors, TypeConstraintsOfTheSchema) {
  ModelBuilder m(13);
  m.input("a", onnx::TensorProto::INT32, {3});
  m.node("Relu", {"a"}, {"y"}, "r");  // Relu takes integers from opset 14 on
  m.output("y");
  std::string e = error_of(m.import());
  EXPECT_NE(e.find("Relu (node 'r'): input 0 ('a') is i32, which Relu in opset 13 does not accept there (type T)"),
            std::string::npos) << e;
  ModelBuilder v14(14);
  v14.input("a", onnx::TensorProto::INT32, {3});
  v14.node("Relu", {"a"}, {"y"}, "r");
  v14.output("y");
  EXPECT_TRUE(v14.import().has_value());
}

TEST(OnnxImportErrors, DefaultDomainImportedTwice) {
  ModelBuilder m(13);
  auto* op = m.model.add_opset_import();
  op->set_domain("");
  op->set_version(9);
  m.input("x", onnx::TensorProto::FLOAT, {3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("opset_import lists the domain '' twice (versions 13 and 9)"), std::string::npos) << e;
}

TEST(OnnxImportErrors, TensorWithValuesInTwoFields) {
  ModelBuilder m(13);
  auto* w = m.initializer("w", onnx::TensorProto::INT32, {1});
  w->add_int32_data(1);
  w->add_float_data(1.f);
  m.node("Identity", {"w"}, {"y"});
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("initializer 'w': holds values in float_data, int32_data (ONNX allows exactly one of them)"), std::string::npos) << e;
}

TEST(OnnxImportErrors, InitializerNotAnInputBeforeIr4) {
  ModelBuilder m(7, /*ir_version=*/3);
  auto* w = m.initializer("w", onnx::TensorProto::FLOAT, {1});
  w->add_float_data(1.f);
  m.node("Identity", {"w"}, {"y"});
  m.output("y");
  std::string e = error_of(m.import());
  EXPECT_NE(e.find("initializer 'w' is not a graph input, which IR version 3 requires"), std::string::npos) << e;
  m.model.set_ir_version(4);
  EXPECT_TRUE(m.import().has_value());
}

TEST(OnnxImportErrors, FlagAttributeThatIsNeitherZeroNorOne) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {2, 3});
  attr_int(m.node("ReduceSum", {"x"}, {"y"}, "sum"), "keepdims", int64_t{1} << 62);
  m.output("y");
  const std::string e = error_of(m.import());
  EXPECT_NE(e.find("ReduceSum (node 'sum'): attribute 'keepdims' is 4611686018427387904; ONNX defines it as 0 or 1"),
            std::string::npos) << e;
}

}  // namespace checker_rules

}  // namespace
}  // namespace tessera::formats
