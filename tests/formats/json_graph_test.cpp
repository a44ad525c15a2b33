// Tests for formats/json_graph.cpp: loading the samples, the type parser, every error case with
// its file, JSON pointer and reason, and the shapes of graphs the loader must accept.
#include "tests/support/paths.h"
#include "formats/json_graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/ops/infer.h"
#include "engine/runtime/interpreter.h"
#include "formats/file_io.h"
#include "formats/npy.h"

namespace tessera::formats {
namespace {

const std::string kSamples = tessera::test::source_dir() + "/samples/";

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_json_graph_test";
  std::filesystem::create_directories(dir);
  return dir.string();
}

Expected<ir::Graph> parse(const std::string& text, const std::string& base_dir = "") {
  return parse_json_graph(text, "g.json", base_dir);
}

// A minimal valid document around the given members (JSON text without the outer braces).
std::string doc(const std::string& members) {
  return R"({"format": "tessera-graph", "version": 1, )" + members + "}";
}

Error load_error(const std::string& text, const std::string& base_dir = "") {
  auto g = parse(text, base_dir);
  EXPECT_FALSE(g.has_value());
  return g ? Error{} : g.error();
}

#define EXPECT_ERROR(err, where_, reason)                                      \
  do {                                                                         \
    const Error& e_ = (err);                                                   \
    EXPECT_EQ(e_.where, (where_));                                             \
    EXPECT_NE(e_.message.find(reason), std::string::npos) << e_.to_string();   \
  } while (0)

ir::ValueId value_named(const ir::Graph& g, const std::string& name) {
  auto v = g.find_value(name);
  EXPECT_TRUE(v.has_value()) << name;
  return v.value_or(ir::kNoValue);
}

// ---- the samples ----

TEST(JsonGraphSamples, Lenet) {
  auto g = load_json_graph(kSamples + "lenet.json");
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->name(), "lenet");
  ASSERT_EQ(g->inputs().size(), 1u);
  const ir::Value& x = g->value(g->inputs()[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.type, ir::TensorType(DType::kF32, {ir::Dim::named("N"), ir::Dim::known(1),
                                                 ir::Dim::known(28), ir::Dim::known(28)}));
  EXPECT_EQ(g->params().size(), 10u);
  EXPECT_EQ(g->num_nodes(), 12);

  const ir::Node& conv1 = g->node(0);
  EXPECT_EQ(conv1.op, "Conv");
  EXPECT_EQ(conv1.name, "conv1");
  EXPECT_EQ(conv1.inputs, (std::vector<ir::ValueId>{value_named(*g, "x"), value_named(*g, "conv1.w"),
                                                    value_named(*g, "conv1.b")}));
  ASSERT_NE(conv1.attr("pads"), nullptr);
  EXPECT_EQ(conv1.attr("pads")->ints(), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(conv1.attr("kernel_shape")->ints(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(conv1.provenance.origin, kSamples + "lenet.json:/nodes/0");
  EXPECT_EQ(g->node(11).provenance.origin, kSamples + "lenet.json:/nodes/11");

  // Weights from the side file (values printed by NumPy from samples/lenet.npz).
  const Tensor* w = g->param_data(value_named(*g, "conv1.w"));
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape(), (Shape{6, 1, 5, 5}));
  EXPECT_FLOAT_EQ(static_cast<float>(w->get(0)), -0.140655071f);
  EXPECT_FLOAT_EQ(static_cast<float>(w->get(1)), 0.114162281f);
  EXPECT_FLOAT_EQ(static_cast<float>(w->get(2)), 0.441020608f);
  const Tensor* fc3 = g->param_data(value_named(*g, "fc3.w"));
  ASSERT_NE(fc3, nullptr);
  EXPECT_FLOAT_EQ(static_cast<float>(fc3->get(83 * 10 + 9)), 0.001483372412621975f);
  const Tensor* fc3b = g->param_data(value_named(*g, "fc3.b"));  // inline
  ASSERT_NE(fc3b, nullptr);
  EXPECT_EQ(fc3b->to_doubles(), std::vector<double>(10, 0.0));

  ops::OpRegistry reg = ops::make_default_registry();
  Status st = ops::infer_types(*g, reg);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const ir::Value& logits = g->value(g->outputs()[0]);
  EXPECT_EQ(logits.name, "logits");
  EXPECT_EQ(logits.type.to_string(), "f32[N, 10]");
}

TEST(JsonGraphSamples, MlpRunsAndMatchesNumPy) {
  auto g = load_json_graph(kSamples + "mlp.json");
  ASSERT_TRUE(g) << g.error().to_string();
  ops::OpRegistry reg = ops::make_default_registry();
  ASSERT_TRUE(ops::infer_types(*g, reg).is_ok());
  // Row 0: all 0.5; row 1: (index % 7) / 7.
  Tensor x(DType::kF32, {2, 1, 28, 28});
  for (int i = 0; i < 784; ++i) {
    x.data<float>()[i] = 0.5f;
    x.data<float>()[784 + i] = static_cast<float>(i % 7) / 7.0f;
  }
  auto out = runtime::run_reference(*g, reg, {{"x", x}});
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_EQ(out->size(), 1u);
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.shape(), (Shape{2, 10}));
  // logits = relu(x @ fc1.w + fc1.b) @ fc2.w + fc2.b, computed by NumPy.
  const double expected[20] = {-0.550417602, 1.1162467,    -0.112787366, -0.928171337, -0.59073782,
                               -0.153757423, 1.195675611,  0.101221181,  0.668089628,  -0.08751069,
                               0.156820148,  0.444812894,  0.044130605,  -0.368469179, -1.235624433,
                               -0.619095683, 0.989825845,  -0.141392961, 0.077373177,  -0.48010385};
  for (int i = 0; i < 20; ++i) EXPECT_NEAR(y.get(i), expected[i], 1e-4) << i;
}

// ---- types ----

TEST(JsonGraphTypes, ParsesTheIrSpelling) {
  struct Case {
    const char* text;
    const char* printed;
  };
  const Case cases[] = {
      {"f32[N, 1, 28, 28]", "f32[N, 1, 28, 28]"},
      {"f32[N,1,28,28]", "f32[N, 1, 28, 28]"},
      {"  i64 [ ? ]  ", "i64[?]"},
      {"f16[*]", "f16[*]"},
      {"f32[ * ]", "f32[*]"},
      {"bool[]", "bool[]"},
      {"bf16[batch_size,3,?]", "bf16[batch_size, 3, ?]"},
      {"u8[0]", "u8[0]"},
  };
  for (const Case& c : cases) {
    auto t = parse_tensor_type(c.text);
    ASSERT_TRUE(t) << c.text << ": " << t.error().message;
    EXPECT_EQ(t->to_string(), c.printed);
  }
  auto t = parse_tensor_type("f32[N, 3]");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->dims[0].is_symbolic());
  EXPECT_EQ(t->dims[0].symbol, "N");
  EXPECT_EQ(t->dims[1].size, 3);
  auto u = parse_tensor_type("f32[*]");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->rank_known);
  auto s = parse_tensor_type("i32[]");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->rank_known);
  EXPECT_EQ(s->rank(), 0);
}

TEST(JsonGraphTypes, Errors) {
  struct Case {
    const char* text;
    const char* reason;
  };
  const Case cases[] = {
      {"f33[2]", "unknown dtype 'f33'"},
      {"float32[2]", "unknown dtype 'float32'"},
      {"f32[2", "expected ',' or ']'"},
      {"f32 2]", "expected '['"},
      {"f32[2,]", "expected a dimension"},
      {"f32[-1]", "expected a dimension"},
      {"f32[2] x", "unexpected text after ']'"},
      {"f32[*, 2]", "expected ']' after '*'"},
      {"f32[99999999999999999999]", "dimension too large"},
      {"[2]", "expected a dtype"},
      {"", "expected a dtype"},
  };
  for (const Case& c : cases) {
    auto t = parse_tensor_type(c.text);
    ASSERT_FALSE(t) << c.text;
    EXPECT_NE(t.error().message.find(c.reason), std::string::npos) << t.error().message;
  }
}

// ---- accepted shapes of graphs ----

// Params drawn at load: the bytes NumPy computes for the same formula (tests/bench/train_bench.py
// uniform_init(7, 4, 0.5)), constants, and the errors.
TEST(JsonGraphLoad, ParamsDrawnAtLoad) {
  auto g = parse(doc(R"("params": [{"name": "w", "type": "f32[4]", "init": {"uniform": 0.5, "seed": 7}},
                                  {"name": "w64", "type": "f64[2, 2]", "init": {"uniform": 0.5, "seed": 7}},
                                  {"name": "one", "type": "f32[3]", "init": {"constant": 1}}])"));
  ASSERT_TRUE(g) << g.error().to_string();
  const Tensor& w = *g->param_data(value_named(*g, "w"));
  const std::vector<float> numpy = {-0.11017025262117386f, -0.4832116961479187f, 0.400760680437088f, 0.0829302966594696f};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(w.data<float>()[i], numpy[static_cast<size_t>(i)]) << i;
  const Tensor& w64 = *g->param_data(value_named(*g, "w64"));
  EXPECT_NEAR(w64.get(1), numpy[1], 1e-7);  // the same draws, kept in double
  const Tensor& one = *g->param_data(value_named(*g, "one"));
  EXPECT_EQ(one.get(2), 1.0);
  // Another seed, other values; the same seed, the same values.
  auto h = parse(doc(R"("params": [{"name": "w", "type": "f32[4]", "init": {"uniform": 0.5, "seed": 8}}])"));
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->param_data(value_named(*h, "w"))->equals(w));

  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "i64[4]", "init": {"constant": 1}}])")),
               "g.json:/params/0/init", "floating-point params only");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[4]", "init": {"uniform": -1}}])")),
               "g.json:/params/0/init/uniform", "must be positive");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[4]", "init": {"uniform": 1, "seed": -2}}])")),
               "g.json:/params/0/init/seed", "non-negative integer");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[4]", "init": {"normal": 1}}])")),
               "g.json:/params/0/init", "expected {\"uniform\"");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[4]", "init": {"constant": 1, "seed": 2}}])")),
               "g.json:/params/0/init/seed", "unknown field");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[1]", "data": [1], "init": {"constant": 1}}])")),
               "g.json:/params/0", "not two");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[N]", "init": {"constant": 1}}])")),
               "g.json:/params/0/type", "");
}

TEST(JsonGraphLoad, MinimalAndDefaults) {
  auto g = parse(doc(R"("nodes": [])"));
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->name(), "main");
  EXPECT_EQ(g->num_nodes(), 0);
  EXPECT_TRUE(g->outputs().empty());
}

TEST(JsonGraphLoad, AbsentInputUnnamedOutputAndComments) {
  auto g = parse(doc(R"("_comment": "ignored", "name": "t",
      "inputs": [{"name": "x", "type": "f32[2]", "_note": "also ignored"}],
      "nodes": [{"op": "Split", "inputs": ["x", ""], "outputs": ["a", ""]},
                {"op": "Relu", "inputs": ["a"], "outputs": ["y"]}],
      "outputs": ["y"])"));
  ASSERT_TRUE(g) << g.error().to_string();
  const ir::Node& split = g->node(0);
  EXPECT_EQ(split.inputs, (std::vector<ir::ValueId>{value_named(*g, "x"), ir::kNoValue}));
  ASSERT_EQ(split.outputs.size(), 2u);
  EXPECT_EQ(g->value(split.outputs[1]).name, "");
  EXPECT_EQ(g->value(split.outputs[1]).producer, 0);
  EXPECT_EQ(g->value(split.outputs[1]).producer_output, 1);
  EXPECT_EQ(g->node(1).inputs, (std::vector<ir::ValueId>{split.outputs[0]}));
}

TEST(JsonGraphLoad, CycleLoadsAndIsLeftToTheChecker) {
  auto g = parse(doc(R"("nodes": [{"op": "Relu", "inputs": ["b"], "outputs": ["a"]},
                                  {"op": "Relu", "inputs": ["a"], "outputs": ["b"]}],
                        "outputs": ["b"])"));
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->node(0).inputs[0], g->node(1).outputs[0]);
  EXPECT_EQ(g->node(1).inputs[0], g->node(0).outputs[0]);
  EXPECT_FALSE(g->topological_order().has_value());
  ops::OpRegistry reg = ops::make_default_registry();
  EXPECT_FALSE(ops::check_graph(*g, reg).is_ok());
}

TEST(JsonGraphLoad, UnknownOpLoadsAndIsLeftToTheChecker) {
  auto g = parse(doc(R"("inputs": [{"name": "x", "type": "f32[2]"}],
                        "nodes": [{"op": "NoSuchOp", "inputs": ["x"], "outputs": ["y"],
                                   "attrs": {"alpha": "not a float"}}],
                        "outputs": ["y"])"));
  ASSERT_TRUE(g) << g.error().to_string();
  ops::OpRegistry reg = ops::make_default_registry();
  Status st = ops::check_graph(*g, reg);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, 0);
}

TEST(JsonGraphLoad, NodeIdsProvenanceAndNestedOrigins) {
  auto g = parse(doc(R"("inputs": [{"name": "c", "type": "bool[]"}, {"name": "x", "type": "f32[3]"}],
      "nodes": [
        {"op": "Relu", "inputs": ["x"], "outputs": ["r"]},
        {"id": 7, "op": "If", "inputs": ["c"], "outputs": ["y"], "from": [0, 3],
         "attrs": {"then_branch": {"graph": {"captures": [{"name": "r", "type": "f32[3]"}],
                                             "nodes": [{"op": "Neg", "inputs": ["r"], "outputs": ["t"]}],
                                             "outputs": ["t"]}},
                   "else_branch": {"graph": {"name": "other", "captures": [{"name": "x", "type": "f32[3]"}],
                                             "outputs": ["x"]}}}},
        {"op": "Relu", "inputs": ["y"], "outputs": ["z"]}],
      "outputs": ["z"])"));
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->node_ids(), (std::vector<ir::NodeId>{0, 2, 7}));  // the third node keeps its index
  const ir::Node& ifn = g->node(7);
  EXPECT_EQ(ifn.op, "If");
  EXPECT_EQ(ifn.provenance.from, (std::vector<ir::NodeId>{0, 3}));
  EXPECT_EQ(ifn.provenance.origin, "g.json:/nodes/1");
  EXPECT_EQ(g->value(ifn.outputs[0]).producer, 7);
  EXPECT_EQ(g->node(2).inputs[0], ifn.outputs[0]);
  const ir::Graph& then_g = ifn.attr("then_branch")->g();
  EXPECT_EQ(then_g.name(), "then_branch");  // defaults to the attribute's name
  ASSERT_EQ(then_g.captures().size(), 1u);
  EXPECT_EQ(then_g.value(then_g.captures()[0]).name, "r");
  EXPECT_EQ(then_g.value(then_g.captures()[0]).kind, ir::ValueKind::kCapture);
  EXPECT_EQ(then_g.node(0).provenance.origin, "g.json:/nodes/1/attrs/then_branch/graph/nodes/0");
  EXPECT_EQ(then_g.node(0).inputs[0], then_g.captures()[0]);
  EXPECT_EQ(ifn.attr("else_branch")->g().name(), "other");
}

TEST(JsonGraphLoad, AttributeKinds) {
  auto g = parse(doc(R"("nodes": [{"op": "Any", "outputs": [], "attrs": {
      "i": -3, "f": 0.5, "whole": 2.0, "s": "text",
      "ints": [1, -2], "floats": [1, 2.5], "strings": ["a", "b"], "empty": [],
      "xi": {"int": 4}, "xf": {"float": "-inf"}, "xs": {"string": "s"},
      "xints": {"ints": []}, "xfloats": {"floats": ["nan", 1]}, "xstrings": {"strings": []},
      "t": {"tensor": {"type": "i32[2, 2]", "data": [1, 2, 3, 4]}},
      "a/b~c": 1}}])"));
  ASSERT_TRUE(g) << g.error().to_string();
  const ir::Node& n = g->node(0);
  using K = ir::AttrKind;
  EXPECT_EQ(n.attr("i")->kind(), K::kInt);
  EXPECT_EQ(n.attr("i")->i(), -3);
  EXPECT_EQ(n.attr("f")->kind(), K::kFloat);
  EXPECT_EQ(n.attr("f")->f(), 0.5);
  EXPECT_EQ(n.attr("whole")->kind(), K::kFloat);
  EXPECT_EQ(n.attr("s")->s(), "text");
  EXPECT_EQ(n.attr("ints")->ints(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(n.attr("floats")->kind(), K::kFloats);
  EXPECT_EQ(n.attr("floats")->floats(), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(n.attr("strings")->strings(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(n.attr("empty")->kind(), K::kInts);
  EXPECT_EQ(n.attr("xi")->i(), 4);
  EXPECT_EQ(n.attr("xf")->kind(), K::kFloat);
  EXPECT_TRUE(std::isinf(n.attr("xf")->f()) && n.attr("xf")->f() < 0);
  EXPECT_EQ(n.attr("xs")->s(), "s");
  EXPECT_EQ(n.attr("xints")->kind(), K::kInts);
  EXPECT_EQ(n.attr("xfloats")->kind(), K::kFloats);
  EXPECT_TRUE(std::isnan(n.attr("xfloats")->floats()[0]));
  EXPECT_EQ(n.attr("xfloats")->floats()[1], 1.0);
  EXPECT_EQ(n.attr("xstrings")->kind(), K::kStrings);
  EXPECT_TRUE(n.attr("xstrings")->strings().empty());
  const Tensor& t = n.attr("t")->t();
  EXPECT_EQ(t.dtype(), DType::kI32);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(n.attr("a/b~c")->i(), 1);
}

TEST(JsonGraphLoad, InlineDataOfEveryDType) {
  auto g = parse(doc(R"("params": [
      {"name": "f32", "type": "f32[3]", "data": [0.1, "nan", "-inf"]},
      {"name": "f16", "type": "f16[2]", "data": [0.5, 65504]},
      {"name": "bf16", "type": "bf16[1]", "data": [1.5]},
      {"name": "f64", "type": "f64[1]", "data": [0.1]},
      {"name": "i8", "type": "i8[2]", "data": [-128, 127]},
      {"name": "u8", "type": "u8[1]", "data": [255]},
      {"name": "i32", "type": "i32[1]", "data": [-2147483648]},
      {"name": "i64", "type": "i64[2]", "data": [9223372036854775807, -9223372036854775808]},
      {"name": "bool", "type": "bool[3]", "data": [true, false, 1]},
      {"name": "scalar", "type": "f32[]", "data": [2.5]},
      {"name": "empty", "type": "f32[0, 4]", "data": []}])"));
  ASSERT_TRUE(g) << g.error().to_string();
  auto data = [&](const char* name) { return *g->param_data(value_named(*g, name)); };
  EXPECT_EQ(data("f32").data<float>()[0], 0.1f);
  EXPECT_TRUE(std::isnan(data("f32").get(1)));
  EXPECT_EQ(data("f32").get(2), -HUGE_VAL);
  EXPECT_EQ(data("f16").to_doubles(), (std::vector<double>{0.5, 65504}));
  EXPECT_EQ(data("bf16").get(0), 1.5);
  EXPECT_EQ(data("f64").data<double>()[0], 0.1);
  EXPECT_EQ(data("i8").to_doubles(), (std::vector<double>{-128, 127}));
  EXPECT_EQ(data("u8").get(0), 255);
  EXPECT_EQ(data("i32").get(0), -2147483648.0);
  EXPECT_EQ(data("i64").data<int64_t>()[0], INT64_MAX);
  EXPECT_EQ(data("i64").data<int64_t>()[1], INT64_MIN);
  EXPECT_EQ(data("bool").to_doubles(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(data("scalar").rank(), 0);
  EXPECT_EQ(data("scalar").get(0), 2.5);
  EXPECT_EQ(data("empty").shape(), (Shape{0, 4}));
}

// ---- errors: file, JSON pointer, reason ----

TEST(JsonGraphErrors, Syntax) {
  EXPECT_ERROR(load_error("{\n  \"format\": \"tessera-graph\",\n  \"version\": 1,,\n}"), "g.json:3:16",
               "invalid JSON");
  EXPECT_ERROR(load_error(""), "g.json:1:1", "invalid JSON");
  EXPECT_ERROR(load_error("[1, 2]"), "g.json", "expected a JSON object at the top level");
}

TEST(JsonGraphErrors, TopLevelFields) {
  EXPECT_ERROR(load_error(R"({"version": 1})"), "g.json", "missing field \"format\"");
  EXPECT_ERROR(load_error(R"({"format": "onnx", "version": 1})"), "g.json:/format",
               "expected \"tessera-graph\"");
  EXPECT_ERROR(load_error(R"({"format": "tessera-graph"})"), "g.json", "missing field \"version\"");
  EXPECT_ERROR(load_error(R"({"format": "tessera-graph", "version": 2})"), "g.json:/version",
               "unsupported version 2");
  EXPECT_ERROR(load_error(R"({"format": "tessera-graph", "version": "1"})"), "g.json:/version",
               "expected an integer, got string");
  EXPECT_ERROR(load_error(doc(R"("ouputs": [])")), "g.json:/ouputs", "unknown field \"ouputs\"");
  EXPECT_ERROR(load_error(doc(R"("nodes": {})")), "g.json:/nodes", "expected an array, got object");
  EXPECT_ERROR(load_error(doc(R"("name": 3)")), "g.json:/name", "expected a string, got number 3");
  EXPECT_ERROR(load_error(doc(R"("captures": [])")), "g.json:/captures", "unknown field");
}

TEST(JsonGraphErrors, InputsAndTypes) {
  EXPECT_ERROR(load_error(doc(R"("inputs": [{"type": "f32[2]"}])")), "g.json:/inputs/0",
               "missing field \"name\"");
  EXPECT_ERROR(load_error(doc(R"("inputs": [{"name": "x", "type": 3}])")), "g.json:/inputs/0/type",
               "expected a string, got number");
  EXPECT_ERROR(load_error(doc(R"("inputs": [{"name": "x", "type": "f33[2]"}])")),
               "g.json:/inputs/0/type", "unknown dtype 'f33'");
  EXPECT_ERROR(load_error(doc(R"("inputs": [{"name": "x", "type": "f32[2"}])")),
               "g.json:/inputs/0/type", "cannot parse type 'f32[2'");
  EXPECT_ERROR(load_error(doc(R"("inputs": [{"name": "", "type": "f32[2]"}])")),
               "g.json:/inputs/0/name", "must not be empty");
  EXPECT_ERROR(load_error(doc(R"("inputs": ["x"])")), "g.json:/inputs/0", "expected an object");
}

TEST(JsonGraphErrors, DuplicateNames) {
  Error e = load_error(doc(R"("inputs": [{"name": "x", "type": "f32[2]"}],
                              "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["x"]}])"));
  EXPECT_ERROR(e, "g.json:/nodes/0/outputs/0", "duplicate value name 'x' (first defined at /inputs/0/name)");
  EXPECT_EQ(e.node, 0);
  EXPECT_ERROR(load_error(doc(R"("inputs": [{"name": "x", "type": "f32[2]"}],
                                  "params": [{"name": "x", "type": "f32[1]", "data": [1]}])")),
               "g.json:/params/0/name", "duplicate value name 'x'");
}

TEST(JsonGraphErrors, Nodes) {
  const std::string x = R"("inputs": [{"name": "x", "type": "f32[2]"}], )";
  Error undefined = load_error(doc(x + R"("nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["a"]},
                                                    {"op": "Relu", "inputs": ["nope"], "outputs": ["b"]}])"));
  EXPECT_ERROR(undefined, "g.json:/nodes/1/inputs/0", "undefined value 'nope'");
  EXPECT_EQ(undefined.node, 1);
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"inputs": ["x"], "outputs": ["a"]}])")), "g.json:/nodes/0",
               "missing field \"op\"");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "Relu", "inputs": ["x"]}])")), "g.json:/nodes/0",
               "missing field \"outputs\"");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "Relu", "inputs": [3], "outputs": ["a"]}])")),
               "g.json:/nodes/0/inputs/0", "expected a value name");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["a"], "attr": {}}])")),
               "g.json:/nodes/0/attr", "unknown field \"attr\"");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "", "outputs": []}])")), "g.json:/nodes/0/op",
               "the op name is empty");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "Relu", "outputs": []}], "outputs": ["y"])")),
               "g.json:/outputs/0", "undefined value 'y'");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "A", "outputs": []}, {"id": 0, "op": "B", "outputs": []}])")),
               "g.json:/nodes/1/id", "node id 0 is already used by /nodes/0");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"id": 1, "op": "A", "outputs": []}, {"op": "B", "outputs": []}])")),
               "g.json:/nodes/1", "node id 1 (its index, as it has no \"id\") is already used by /nodes/0");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"id": 1000000000000, "op": "A", "outputs": []}])")),
               "g.json:/nodes/0/id", "out of range");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"id": -1, "op": "A", "outputs": []}])")),
               "g.json:/nodes/0/id", "out of range");
  EXPECT_ERROR(load_error(doc(x + R"("nodes": [{"op": "A", "outputs": [], "from": [1.5]}])")),
               "g.json:/nodes/0/from/0", "expected an integer");
}

TEST(JsonGraphErrors, Attributes) {
  auto attr_error = [](const std::string& attrs) {
    return load_error(doc(R"("nodes": [{"op": "A", "outputs": [], "attrs": )" + attrs + "}]"));
  };
  EXPECT_ERROR(attr_error(R"({"flag": true})"), "g.json:/nodes/0/attrs/flag", "(write 0 or 1)");
  EXPECT_ERROR(attr_error(R"({"x": null})"), "g.json:/nodes/0/attrs/x", "got null");
  EXPECT_ERROR(attr_error(R"({"mixed": [1, "a"]})"), "g.json:/nodes/0/attrs/mixed",
               "only numbers or only strings");
  EXPECT_ERROR(attr_error(R"({"nested": [[1]]})"), "g.json:/nodes/0/attrs/nested", "only numbers or only strings");
  EXPECT_ERROR(attr_error(R"({"o": {"vector": [1]}})"), "g.json:/nodes/0/attrs/o/vector",
               "unknown attribute kind \"vector\"");
  EXPECT_ERROR(attr_error(R"({"o": {"int": 1, "float": 2}})"), "g.json:/nodes/0/attrs/o", "exactly one key");
  EXPECT_ERROR(attr_error(R"({"o": {"ints": [1, 2.5]}})"), "g.json:/nodes/0/attrs/o/ints/1", "expected an integer");
  EXPECT_ERROR(attr_error(R"({"o": {"float": "x"}})"), "g.json:/nodes/0/attrs/o/float", "expected a number");
  EXPECT_ERROR(attr_error(R"({"a/b": true})"), "g.json:/nodes/0/attrs/a~1b", "got boolean");
  EXPECT_ERROR(attr_error(R"({"t": {"tensor": {"type": "f32[2]", "data": [1]}}})"),
               "g.json:/nodes/0/attrs/t/tensor/data", "the data has 1 elements but the type f32[2] holds 2");
  EXPECT_ERROR(attr_error(R"({"t": {"tensor": {"type": "f32[N]", "data": [1]}}})"),
               "g.json:/nodes/0/attrs/t/tensor/type", "must have known dimensions");
  EXPECT_ERROR(attr_error(R"({"t": {"tensor": {"type": "i8[2]", "data": [1, 300]}}})"),
               "g.json:/nodes/0/attrs/t/tensor/data/1", "300 does not fit i8");
  EXPECT_ERROR(attr_error(R"({"big": 18446744073709551615})"), "g.json:/nodes/0/attrs/big",
               "does not fit in 64 bits");
}

TEST(JsonGraphErrors, NestedGraphs) {
  const std::string head = R"("inputs": [{"name": "c", "type": "bool[]"}, {"name": "x", "type": "f32[2]"}],
      "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["r"]},
                {"op": "If", "inputs": ["c"], "outputs": ["y"], "attrs": {"then_branch": {"graph": )";
  Error undefined = load_error(doc(head + R"({"nodes": [{"op": "Neg", "inputs": ["x"], "outputs": ["t"]}]}}}}])"));
  EXPECT_ERROR(undefined, "g.json:/nodes/1/attrs/then_branch/graph/nodes/0/inputs/0",
               "undefined value 'x' (list it in \"captures\"");
  EXPECT_EQ(undefined.node, 1);  // the outer node that holds the graph
  EXPECT_ERROR(load_error(doc(head + R"({"captures": [{"name": "q", "type": "f32[2]"}]}}}}])")),
               "g.json:/nodes/1/attrs/then_branch/graph/captures/0/name",
               "the capture 'q' names no value of an enclosing graph");
  EXPECT_ERROR(load_error(doc(head + R"({"format": "tessera-graph"}}}}])")),
               "g.json:/nodes/1/attrs/then_branch/graph/format", "unknown field");
  EXPECT_ERROR(load_error(doc(head + R"([]}}}])")), "g.json:/nodes/1/attrs/then_branch/graph",
               "expected a graph object");
  // A node output defined later in the outer graph is visible to captures too.
  auto g = parse(doc(R"("inputs": [{"name": "c", "type": "bool[]"}],
      "nodes": [{"op": "If", "inputs": ["c"], "outputs": ["y"],
                 "attrs": {"g": {"graph": {"captures": [{"name": "later", "type": "f32[*]"}], "outputs": ["later"]}}}},
                {"op": "Relu", "inputs": ["y"], "outputs": ["later"]}])"));
  EXPECT_TRUE(g) << g.error().to_string();
}

TEST(JsonGraphErrors, DeepNestingIsBounded) {
  std::string g = R"({"outputs": []})";
  for (int i = 0; i < 40; ++i)
    g = R"({"nodes": [{"op": "If", "outputs": [], "attrs": {"b": {"graph": )" + g + "}}}]}";
  std::string text = doc(g.substr(1, g.size() - 2));
  Error e = load_error(text);
  EXPECT_NE(e.message.find("nested more than 32 deep"), std::string::npos) << e.to_string();
  // Deeply nested JSON arrays are a syntax-level matter for nlohmann (no recursion there).
  std::string deep = doc(R"("_x": )" + std::string(100000, '[') + std::string(100000, ']'));
  auto ok = parse(deep);
  EXPECT_TRUE(ok) << ok.error().to_string();
}

TEST(JsonGraphErrors, ParamData) {
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[2, 2]", "data": [1, 2, 3]}])")),
               "g.json:/params/0/data", "the data has 3 elements but the type f32[2, 2] holds 4");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[2]", "data": [1, "x"]}])")),
               "g.json:/params/0/data/1", "expected a number");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "i32[1]", "data": [1.5]}])")),
               "g.json:/params/0/data/0", "expected an integer for i32 data");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "u8[1]", "data": [-1]}])")),
               "g.json:/params/0/data/0", "-1 does not fit u8");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "bool[1]", "data": [2]}])")),
               "g.json:/params/0/data/0", "expected true, false, 0 or 1");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[N]", "data": [1]}])")),
               "g.json:/params/0/type", "must have known dimensions, got 'f32[N]'");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[1]", "data": [1], "npz": "w"}])")),
               "g.json:/params/0", "either \"data\" or \"npz\", not both");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[1]"}])")), "g.json:/params/0",
               "a param needs \"data\"");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[1]", "data": 1}])")),
               "g.json:/params/0/data", "expected an array");
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[1]", "npz": "w"}])")),
               "g.json:/params/0/npz", "the graph has no \"weights_file\"");
  // A huge declared type with a short data array is rejected without allocating it.
  EXPECT_ERROR(load_error(doc(R"("params": [{"name": "w", "type": "f32[1000000, 1000000]", "data": [1]}])")),
               "g.json:/params/0/data", "GiB limit");
}

TEST(JsonGraphErrors, SideFile) {
  const std::string dir = temp_dir();
  ASSERT_TRUE(write_npz(dir + "/side.npz",
                        {{"w", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                         {"i", Tensor::from_vector<int32_t>({2}, {1, 2})}},
                        false)
                  .is_ok());
  const std::string good = R"("weights_file": "side.npz", "params": [{"name": "w", "type": "f32[2, 3]", "npz": "w"}])";
  auto g = parse(doc(good), dir);
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->param_data(0)->to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));

  EXPECT_ERROR(load_error(doc(R"("weights_file": "side.npz", "params": [{"name": "w", "type": "f32[2, 3]", "npz": "w2"}])"), dir),
               "g.json:/params/0/npz", "the side file side.npz has no array 'w2'");
  EXPECT_ERROR(load_error(doc(R"("weights_file": "side.npz", "params": [{"name": "w", "type": "f32[3, 2]", "npz": "w"}])"), dir),
               "g.json:/params/0/npz", "array 'w' is f32[2, 3] but the param is declared f32[3, 2]");
  EXPECT_ERROR(load_error(doc(R"("weights_file": "side.npz", "params": [{"name": "i", "type": "i64[2]", "npz": "i"}])"), dir),
               "g.json:/params/0/npz", "array 'i' is i32[2] but the param is declared i64[2]");
  Error missing = load_error(doc(R"("weights_file": "absent.npz", "params": [{"name": "w", "type": "f32[2, 3]", "npz": "w"}])"), dir);
  EXPECT_ERROR(missing, "g.json:/weights_file", "cannot read the side file: " + dir + "/absent.npz");
  ASSERT_TRUE(write_file_atomic(dir + "/garbage.npz", "not a zip").is_ok());
  EXPECT_ERROR(load_error(doc(R"("weights_file": "garbage.npz", "params": [{"name": "w", "type": "f32[2, 3]", "npz": "w"}])"), dir),
               "g.json:/weights_file", "not a readable .npz");
  EXPECT_ERROR(load_error(doc(R"("weights_file": 3)")), "g.json:/weights_file", "expected a string");
}

TEST(JsonGraphErrors, LoadFileErrors) {
  auto g = load_json_graph("/nonexistent/g.json");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().where, "/nonexistent/g.json");
  // A side file relative to the JSON file's directory, not the working directory.
  const std::string dir = temp_dir() + "/sub";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_npz(dir + "/w.npz", {{"w", Tensor::from_vector<float>({1}, {7})}}, true).is_ok());
  ASSERT_TRUE(write_file_atomic(dir + "/g.json", doc(R"("weights_file": "w.npz", "params": [{"name": "w", "type": "f32[1]", "npz": "w"}])")).is_ok());
  auto loaded = load_json_graph(dir + "/g.json");
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->param_data(0)->get(0), 7.0);
}

// Every prefix of a real file fails cleanly (a small in-process fuzz; ASan runs it too).
TEST(JsonGraphErrors, TruncationsNeverCrash) {
  auto text = read_file(kSamples + "lenet.json");
  ASSERT_TRUE(text);
  for (size_t n = 0; n < text->size(); n += 7) {
    auto g = parse_json_graph(text->substr(0, n), "t.json", kSamples);
    EXPECT_FALSE(g.has_value()) << n;
  }
}

}  // namespace
}  // namespace tessera::formats
