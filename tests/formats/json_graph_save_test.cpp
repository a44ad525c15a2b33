// Tests for formats/json_graph_save.cpp: the samples save back byte for byte, graphs of every
// feature round-trip (inline and side weights, attribute kinds, nested If, symbolic types,
// provenance, id gaps), floats read back bit for bit, and save errors.
#include "tests/support/paths.h"
#include "formats/json_graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/ir/text.h"
#include "formats/file_io.h"
#include "formats/npy.h"

namespace tessera::formats {
namespace {

const std::string kSamples = tessera::test::source_dir() + "/samples/";

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_json_save_test" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

ir::ValueId named(const ir::Graph& g, const std::string& name) {
  auto v = g.find_value(name);
  EXPECT_TRUE(v.has_value()) << name;
  return v.value_or(ir::kNoValue);
}

// ---- the samples ----

TEST(JsonGraphSave, SamplesSaveBackByteForByte) {
  for (const char* name : {"mlp", "lenet"}) {
    SCOPED_TRACE(name);
    auto g = load_json_graph(kSamples + name + ".json");
    ASSERT_TRUE(g) << g.error().to_string();
    const std::string dir = temp_dir(name);
    const std::string out = dir + "/" + name + ".json";
    Status st = save_json_graph(*g, out);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(*read_file(out), *read_file(kSamples + name + ".json"));
    auto ours = read_npz(dir + "/" + name + ".npz");
    auto theirs = read_npz(kSamples + name + ".npz");
    ASSERT_TRUE(ours && theirs);
    ASSERT_EQ(ours->size(), theirs->size());
    for (const auto& [key, t] : *theirs) {
      ASSERT_EQ(ours->count(key), 1u) << key;
      EXPECT_TRUE(same_bits(ours->at(key), t)) << key;
    }
    EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/" + name + ".npz.tmp"));
  }
}

// ---- a graph using every feature ----

ir::Graph then_branch() {
  ir::Graph b("then");
  ir::ValueId r = b.add_capture("r", ir::TensorType(DType::kF32, {ir::Dim::named("N"), ir::Dim::known(3)}));
  ir::ValueId w = b.add_param("w", Tensor::from_vector<float>({3}, {0.5f, -1.f, 2.f}));
  ir::ValueId big = b.add_param("big", Tensor(DType::kF32, {100}));  // same key as the outer "big"
  ir::NodeId mul = b.add_node("Mul", {r, w}, 1, "scale");
  ir::NodeId add = b.add_node("Add", {b.node(mul).outputs[0], big}, 1);
  b.set_value_name(b.node(mul).outputs[0], "scaled");
  b.set_outputs({b.node(add).outputs[0]});
  return b;
}

ir::Graph feature_graph() {
  ir::Graph g("features");
  ir::ValueId x = g.add_input("x", ir::TensorType(DType::kF32, {ir::Dim::named("N"), ir::Dim::known(3)}));
  ir::ValueId c = g.add_input("cond", ir::TensorType(DType::kBool, {}));
  ir::ValueId any = g.add_input("any", ir::TensorType::unranked(DType::kI64));
  ir::ValueId unk = g.add_input("unk", ir::TensorType(DType::kF16, {ir::Dim::unknown(), ir::Dim::known(2)}));
  Tensor big(DType::kF32, {100});
  for (int i = 0; i < 100; ++i) big.data<float>()[i] = static_cast<float>(i) / 3.0f;
  g.add_param("big", big);
  g.add_param("small_i8", Tensor::from_vector<int8_t>({2}, {-128, 127}));
  g.add_param("bf16_big", Tensor::from_doubles(DType::kBF16, {70}, std::vector<double>(70, 1.5)));
  g.add_param("scalar", Tensor::scalar<double>(0.1));
  g.add_param("empty", Tensor(DType::kI64, {0, 5}));

  ir::NodeId relu = g.add_node("Relu", {x}, 1, "relu");
  ir::ValueId r = g.node(relu).outputs[0];
  g.set_value_name(r, "r");
  ir::Attributes attrs;
  attrs.emplace("then_branch", then_branch());
  ir::Graph else_g("else");
  ir::ValueId cap = else_g.add_capture("x", g.value(x).type);
  else_g.set_outputs({cap});
  attrs.emplace("else_branch", std::move(else_g));
  ir::NodeId iff = g.add_node("If", {c}, 1, "branch", std::move(attrs));
  g.node(iff).provenance.from = {0, 42};
  ir::NodeId dead = g.add_node("Relu", {x}, 1, "removed");
  g.remove_node(dead);  // leaves a gap in the node ids
  ir::Attributes kinds;
  kinds.emplace("i", int64_t{-7});
  kinds.emplace("f", 0.1);
  kinds.emplace("whole", 2.0);
  kinds.emplace("inf", -HUGE_VAL);
  kinds.emplace("s", "text \"quoted\"");
  kinds.emplace("ints", std::vector<int64_t>{1, -2});
  kinds.emplace("no_ints", std::vector<int64_t>{});
  kinds.emplace("floats", std::vector<double>{1.0, 0.25});
  kinds.emplace("no_floats", std::vector<double>{});
  kinds.emplace("nan_floats", std::vector<double>{std::nan(""), 1.0});
  kinds.emplace("strings", std::vector<std::string>{"a", "b"});
  kinds.emplace("no_strings", std::vector<std::string>{});
  kinds.emplace("t", Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4}));
  kinds.emplace("a/b", int64_t{1});
  ir::NodeId split = g.add_node("Split", {g.node(iff).outputs[0], ir::kNoValue, any, unk}, 3, "", std::move(kinds));
  // Outputs 0 and 1 unnamed; output 0 is used below, output 1 is not; output 2 duplicates "r".
  g.set_value_name(g.node(split).outputs[2], "r");
  ir::NodeId last = g.add_node("Relu", {g.node(split).outputs[0]}, 1, "last");
  g.set_value_name(g.node(last).outputs[0], "y");
  g.set_outputs({g.node(last).outputs[0], g.node(split).outputs[2]});
  return g;
}

TEST(JsonGraphSave, EveryFeatureRoundTrips) {
  const std::string dir = temp_dir("features");
  const std::string path = dir + "/f.json";
  ir::Graph g0 = feature_graph();
  Status st = save_json_graph(g0, path);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  auto g = load_json_graph(path);
  ASSERT_TRUE(g) << g.error().to_string();

  EXPECT_EQ(g->name(), "features");
  ASSERT_EQ(g->inputs().size(), 4u);
  EXPECT_EQ(g->value(g->inputs()[0]).type.to_string(), "f32[N, 3]");
  EXPECT_EQ(g->value(g->inputs()[1]).type.to_string(), "bool[]");
  EXPECT_EQ(g->value(g->inputs()[2]).type.to_string(), "i64[*]");
  EXPECT_EQ(g->value(g->inputs()[3]).type.to_string(), "f16[?, 2]");
  // Params: bits preserved whether inline or in the side file.
  for (const char* name : {"big", "small_i8", "bf16_big", "scalar", "empty"}) {
    SCOPED_TRACE(name);
    const Tensor* a = g0.param_data(named(g0, name));
    const Tensor* b = g->param_data(named(*g, name));
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(same_bits(*a, *b));
  }
  auto side = read_npz(dir + "/f.npz");
  ASSERT_TRUE(side) << side.error().to_string();
  EXPECT_EQ(side->size(), 2u);  // "big" and the nested "big" (bf16 stays inline)
  EXPECT_EQ(side->count("big"), 1u);
  EXPECT_EQ(side->count("big#2"), 1u);

  // Node ids, including the gap left by the removed node.
  EXPECT_EQ(g->node_ids(), (std::vector<ir::NodeId>{0, 1, 3, 4}));
  const ir::Node& iff = g->node(1);
  EXPECT_EQ(iff.op, "If");
  EXPECT_EQ(iff.name, "branch");
  EXPECT_EQ(iff.provenance.from, (std::vector<ir::NodeId>{0, 42}));
  EXPECT_EQ(iff.provenance.origin, "");  // built in code: "origin": "" is written and read back
  const ir::Graph& then_g = iff.attr("then_branch")->g();
  EXPECT_EQ(then_g.name(), "then");
  ASSERT_EQ(then_g.captures().size(), 1u);
  EXPECT_EQ(then_g.value(then_g.captures()[0]).name, "r");
  EXPECT_EQ(then_g.value(then_g.captures()[0]).type.to_string(), "f32[N, 3]");
  EXPECT_EQ(then_g.num_nodes(), 2);
  EXPECT_EQ(then_g.node(0).op, "Mul");
  EXPECT_EQ(then_g.node(0).inputs[0], then_g.captures()[0]);
  EXPECT_EQ(then_g.value(then_g.node(0).outputs[0]).name, "scaled");
  EXPECT_EQ(then_g.node(1).inputs[0], then_g.node(0).outputs[0]);
  EXPECT_TRUE(same_bits(*then_g.param_data(named(then_g, "big")), Tensor(DType::kF32, {100})));
  EXPECT_EQ(then_g.node(0).provenance.origin, "");
  const ir::Graph& else_g = iff.attr("else_branch")->g();
  EXPECT_EQ(else_g.outputs(), else_g.captures());

  const ir::Node& split = g->node(3);
  EXPECT_EQ(split.op, "Split");
  ASSERT_EQ(split.inputs.size(), 4u);
  EXPECT_EQ(split.inputs[0], iff.outputs[0]);
  EXPECT_EQ(split.inputs[1], ir::kNoValue);
  EXPECT_EQ(split.inputs[2], g->inputs()[2]);
  EXPECT_EQ(g->value(split.outputs[1]).name, "");       // unused and unnamed: stays unnamed
  EXPECT_FALSE(g->value(split.outputs[0]).name.empty());  // used: got a generated name
  EXPECT_NE(g->value(split.outputs[2]).name, "r");      // the duplicate name was made unique
  EXPECT_EQ(g->outputs(), (std::vector<ir::ValueId>{g->node(4).outputs[0], split.outputs[2]}));
  EXPECT_EQ(g->value(g->outputs()[0]).name, "y");

  using K = ir::AttrKind;
  EXPECT_EQ(split.attr("i")->i(), -7);
  EXPECT_EQ(split.attr("f")->kind(), K::kFloat);
  EXPECT_EQ(split.attr("f")->f(), 0.1);
  EXPECT_EQ(split.attr("whole")->kind(), K::kFloat);
  EXPECT_EQ(split.attr("whole")->f(), 2.0);
  EXPECT_EQ(split.attr("inf")->f(), -HUGE_VAL);
  EXPECT_EQ(split.attr("s")->s(), "text \"quoted\"");
  EXPECT_EQ(split.attr("ints")->ints(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(split.attr("no_ints")->kind(), K::kInts);
  EXPECT_EQ(split.attr("floats")->floats(), (std::vector<double>{1.0, 0.25}));
  EXPECT_EQ(split.attr("no_floats")->kind(), K::kFloats);
  EXPECT_TRUE(std::isnan(split.attr("nan_floats")->floats()[0]));
  EXPECT_EQ(split.attr("strings")->strings(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split.attr("no_strings")->kind(), K::kStrings);
  EXPECT_TRUE(same_bits(split.attr("t")->t(), Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4})));
  EXPECT_EQ(split.attr("a/b")->i(), 1);

  // Saving what was loaded gives the same file and the same graph.
  const std::string again = dir + "/again.json";
  ASSERT_TRUE(save_json_graph(*g, again).is_ok());
  auto g2 = load_json_graph(again);
  ASSERT_TRUE(g2) << g2.error().to_string();
  std::string a = *read_file(path), b = *read_file(again);
  const std::string from = "\"weights_file\": \"f.npz\"", to = "\"weights_file\": \"again.npz\"";
  a.replace(a.find(from), from.size(), to);
  EXPECT_EQ(a, b);
}

TEST(JsonGraphSave, WeightsFileIsNextToTheJson) {
  const std::string dir = temp_dir("layout");
  ASSERT_TRUE(save_json_graph(feature_graph(), dir + "/model.json").is_ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.npz"));
  const std::string text = *read_file(dir + "/model.json");
  EXPECT_NE(text.find("\"weights_file\": \"model.npz\""), std::string::npos);
  ASSERT_TRUE(save_json_graph(feature_graph(), dir + "/noext").is_ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/noext.npz"));
}

TEST(JsonGraphSave, InlineLimitAndCompression) {
  const std::string dir = temp_dir("limit");
  JsonSaveOptions all_inline;
  all_inline.inline_limit = -1;
  ASSERT_TRUE(save_json_graph(feature_graph(), dir + "/inline.json", all_inline).is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/inline.npz"));
  const std::string text = *read_file(dir + "/inline.json");
  EXPECT_EQ(text.find("weights_file"), std::string::npos);
  EXPECT_EQ(text.find("\"npz\""), std::string::npos);
  auto g = load_json_graph(dir + "/inline.json");
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->param_data(named(*g, "big"))->get(99), static_cast<double>(99.0f / 3.0f));

  JsonSaveOptions everything;
  everything.inline_limit = 0;
  everything.compress_weights = true;
  ASSERT_TRUE(save_json_graph(feature_graph(), dir + "/side.json", everything).is_ok());
  auto side = read_npz(dir + "/side.npz");
  ASSERT_TRUE(side) << side.error().to_string();
  // Every param with at least one element, except bf16 (inline).
  EXPECT_EQ(side->size(), 5u);
  EXPECT_EQ(side->count("scalar"), 1u);
  EXPECT_EQ(side->count("empty"), 0u);
  EXPECT_EQ(side->count("bf16_big"), 0u);
  auto g2 = load_json_graph(dir + "/side.json");
  ASSERT_TRUE(g2) << g2.error().to_string();
}

TEST(JsonGraphSave, FloatsReadBackBitForBit) {
  const std::vector<float> f32 = {0.1f, 1.0f / 3.0f, 1e-45f, -0.0f, 3.4028235e38f, 16777217.0f, 1.17549435e-38f};
  const std::vector<double> f64 = {0.1, 1.0 / 3.0, 5e-324, -0.0, 1.7976931348623157e308};
  const std::vector<double> halves = {0.1, 65504, 6e-8, -0.0, 1.0 / 3.0};
  ir::Graph g("floats");
  g.add_param("f32", Tensor::from_vector<float>({7}, f32));
  g.add_param("f64", Tensor::from_vector<double>({5}, f64));
  g.add_param("f16", Tensor::from_doubles(DType::kF16, {5}, halves));
  g.add_param("bf16", Tensor::from_doubles(DType::kBF16, {5}, halves));
  g.add_param("special", Tensor::from_vector<float>({3}, {NAN, INFINITY, -INFINITY}));
  const std::string dir = temp_dir("floats");
  ASSERT_TRUE(save_json_graph(g, dir + "/f.json").is_ok());
  const std::string text = *read_file(dir + "/f.json");
  // Shortest forms: 0.1f prints as 0.1, not 0.100000001490116.
  EXPECT_NE(text.find("\"data\": [0.1, 0.33333334, 1e-45, -0.0, 3.4028235e+38, 16777216.0, 1.1754944e-38]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[\"nan\", \"inf\", \"-inf\"]"), std::string::npos) << text;
  auto back = load_json_graph(dir + "/f.json");
  ASSERT_TRUE(back) << back.error().to_string();
  for (const char* name : {"f32", "f64", "f16", "bf16"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(same_bits(*g.param_data(named(g, name)), *back->param_data(named(*back, name))));
  }
  const Tensor& s = *back->param_data(named(*back, "special"));
  EXPECT_TRUE(std::isnan(s.get(0)));
  EXPECT_EQ(s.get(1), HUGE_VAL);
  EXPECT_EQ(s.get(2), -HUGE_VAL);
}

TEST(JsonGraphSave, Errors) {
  const std::string dir = temp_dir("errors");
  ir::Graph g("dangling");
  ir::ValueId x = g.add_input("x", ir::TensorType(DType::kF32, {ir::Dim::known(2)}));
  ir::NodeId a = g.add_node("Relu", {x}, 1, "a");
  ir::NodeId b = g.add_node("Relu", {g.node(a).outputs[0]}, 1, "b");
  g.set_outputs({g.node(b).outputs[0]});
  g.remove_node(a);
  Status st = save_json_graph(g, dir + "/d.json");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().where, dir + "/d.json");
  EXPECT_EQ(st.error().node, b);
  EXPECT_NE(st.error().message.find("node #1 input 0 refers to value %1, which does not exist"),
            std::string::npos) << st.to_string();
  EXPECT_FALSE(std::filesystem::exists(dir + "/d.json"));

  Status nodir = save_json_graph(feature_graph(), "/nonexistent-dir/g.json");
  ASSERT_FALSE(nodir.is_ok());
  EXPECT_NE(nodir.error().where.find("/nonexistent-dir/g"), std::string::npos);
}

}  // namespace
}  // namespace tessera::formats
