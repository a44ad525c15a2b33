// Tests for the IR text form (engine/ir/text_printer.cpp, text_parser.cpp): golden round trips,
// id stability, and parse errors with line:column.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/paths.h"
#include "engine/ir/text.h"

namespace tessera::ir {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every file under tests/golden/ir parses and prints back byte for byte.
TEST(TextGolden, EveryFileRoundTripsExactly) {
  const std::filesystem::path dir = std::filesystem::path(tessera::test::source_dir()) / "tests/golden/ir";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".tir") continue;
    const std::string text = read_file(entry.path());
    auto g = parse_graph(text, entry.path().string());
    ASSERT_TRUE(g.has_value()) << g.error().to_string();
    EXPECT_EQ(print_graph(*g), text) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 2);
}

TEST(Text, BuiltGraphRoundTripsWithSameIds) {
  Graph g("mlp");
  ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::named("N"), Dim::known(4)}));
  ValueId w = g.add_param("w", Tensor::from_vector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  NodeId mm = g.add_node("MatMul", {x, w}, 1, "fc");
  NodeId relu = g.add_node("Relu", {g.node(mm).outputs[0]}, 1);
  g.node(relu).provenance.from = {mm};
  g.set_outputs({g.node(relu).outputs[0]});
  g.remove_node(relu);  // tombstone: ids after it must not shift
  NodeId relu2 = g.add_node("Relu", {g.node(mm).outputs[0]}, 1);
  g.set_outputs({g.node(relu2).outputs[0]});

  const std::string text = print_graph(g);
  auto back = parse_graph(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(print_graph(*back), text);
  EXPECT_TRUE(back->has_node(relu2));
  EXPECT_FALSE(back->has_node(relu));
  EXPECT_EQ(back->node(relu2).op, "Relu");
  EXPECT_EQ(back->outputs(), g.outputs());
  EXPECT_NE(text.find("#2 = Relu(%2)"), std::string::npos) << text;
}

TEST(Text, ElidedWeightsPrintTheStructureOnlyAndDoNotParse) {
  Graph g("m");
  ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::known(1), Dim::known(4)}));
  ValueId w = g.add_param("w", Tensor::from_vector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  NodeId mm = g.add_node("MatMul", {x, w}, 1, "fc");
  g.set_outputs({g.node(mm).outputs[0]});
  const std::string text = print_graph(g, PrintOptions{false});
  EXPECT_NE(text.find("param %1 \"w\" : f32[4, 2] = elided\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("tensor<"), std::string::npos) << text;
  // Everything but the weights is as print_graph writes it.
  std::string full = print_graph(g);
  const size_t at = full.find(" = tensor<");
  full.replace(at, full.find('\n', at) - at, " = elided");
  EXPECT_EQ(text, full);
  auto back = parse_graph(text, "snapshot.tir");
  ASSERT_FALSE(back.has_value());
  EXPECT_NE(back.error().to_string().find("snapshot.tir:3:"), std::string::npos) << back.error().to_string();
}

TEST(Text, PrintsInTopologicalOrderWhateverTheIds) {
  Graph g;
  ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::known(2)}));
  NodeId a = g.add_node("Relu", {x}, 1);
  NodeId b = g.add_node("Neg", {x}, 1);
  // Rewire a to consume b: b (#1) must now print before a (#0).
  g.node(a).inputs[0] = g.node(b).outputs[0];
  const std::string text = print_graph(g);
  EXPECT_LT(text.find("#1 = Neg"), text.find("#0 = Relu")) << text;
  auto back = parse_graph(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(print_graph(*back), text);
}

TEST(Text, ScheduleEarlyAndLateNodesOrderAmongTheReady) {
  // Ready at once: #0 late, #1 plain, #2 early, #3 plain (after #1). Ids alone give 0 1 2 3; the
  // early node goes first, the late one after everything that does not need it.
  Graph g;
  ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::known(2)}));
  NodeId late = g.add_node("Relu", {x}, 1, "late", {{kScheduleLateAttr, Attribute(int64_t{1})}});
  NodeId plain = g.add_node("Neg", {x}, 1, "plain");
  NodeId early = g.add_node("Abs", {x}, 1, "early", {{kScheduleEarlyAttr, Attribute(int64_t{1})}});
  NodeId after = g.add_node("Exp", {g.node(plain).outputs[0]}, 1, "after");
  auto order = g.topological_order();
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<NodeId>{early, plain, after, late}));
}

TEST(Text, HalfAndExtremeValuesRoundTrip) {
  Graph g;
  g.add_param("h", Tensor::from_doubles(DType::kF16, {3}, {0.1, -65504, 6e-8}));
  g.add_param("b", Tensor::from_doubles(DType::kBF16, {2}, {3.14159, -1e30}));
  g.add_param("d", Tensor::from_doubles(DType::kF64, {2}, {0.1, 1e-300}));
  g.add_param("i", Tensor::from_vector<int64_t>({2}, {INT64_MIN + 1, INT64_MAX}));
  const std::string text = print_graph(g);
  auto back = parse_graph(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  for (ValueId p : g.params()) EXPECT_TRUE(g.param_data(p)->equals(*back->param_data(p))) << text;
}

struct BadText {
  const char* text;
  const char* expect;  // substring of the error
};

class TextErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(TextErrors, ReportsPlaceAndReason) {
  auto g = parse_graph(GetParam().text, "bad.tir");
  ASSERT_FALSE(g.has_value());
  const std::string msg = g.error().to_string();
  EXPECT_NE(msg.find("bad.tir:"), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam().expect), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TextErrors,
    ::testing::Values(BadText{"graph \"g\" {\n  input %0 \"x\" : q32[2]\n}", "bad.tir:2:18: unknown element type 'q32'"},
                      BadText{"graph \"g\" {\n  input %0 \"x\" : f32[2]\n  input %0 \"y\" : f32[2]\n}", "defined twice"},
                      BadText{"graph \"g\" {", "found the end of the text"},
                      BadText{"graph \"g\" { param %0 \"w\" : f32[2] = tensor<f32[2]> [1.0] }", "has 1 elements"},
                      BadText{"graph \"g\" { param %0 \"w\" : f32[3] = tensor<f32[2]> [1.0, 2.0] }", "declared f32[3]"},
                      BadText{"graph \"g\" { #0 = Relu(%1) -> (%2 : f32[2]) {a = 1, a = 2} }", "given twice"},
                      BadText{"graph \"g\" { input %0 \"x : f32[2] }", "unterminated string"},
                      BadText{"graph \"g\" { #0 = Relu(%1) -> (%1 : f32[2]) {a = [1, 2.0]} }", "mixes element kinds"},
                      BadText{"graph \"g\" { input %99999999999 \"x\" : f32[2] }", "too large"},
                      BadText{"graph \"g\" { param %0 \"w\" : f32[100000000000, 100000000000] = tensor<f32[100000000000, 100000000000]> [] }", "GiB limit"},
                      BadText{"graph \"g\" { } trailing", "after the graph"},
                      // Found while writing tir_fuzz: the literal's size was allocated
                      // before its elements were seen (4 GB here).
                      BadText{"graph \"g\" { param %0 : f32[1000000000] = tensor<f32[1000000000]> [1.0] }",
                              "declares 1000000000 elements but only 6 characters of text follow"},
                      // Found by tir_fuzz: ids are dense slots, so "%44444444" made the graph
                      // allocate 3 GB of values; all ids of a text share a budget of
                      // max(65536, 4 x its size) slots.
                      BadText{"graph \"g\" { input %44444444 \"x\" : f32[2] }",
                              "bad.tir:1:13: id %44444444 is too large for a text of 42 characters"},
                      BadText{"graph \"g\" { #50000000 = Relu() -> () }", "id #50000000 is too large"},
                      BadText{"graph \"g\" { input %40000 : f32[] input %40001 : f32[] #0 = If() -> () "
                              "{g = graph \"h\" { input %40000 : f32[] }} }",
                              "id %40000 is too large for a text of 112 characters (its graphs may use 65536 ids"}));

// Ids are kept as printed, gaps included: sparse ids within the budget (values and nodes of all
// graphs together) parse.
TEST(Text, SparseIdsWithinTheBudgetParse) {
  auto g = parse_graph("graph \"g\" { input %65000 \"x\" : f32[2] #500 = Relu(%65000) -> (%7 : f32[2]) "
                       "output %7 }");
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_TRUE(g->has_value(65000));
  EXPECT_TRUE(g->has_node(500));
}

// `depth` graphs nested inside the top one through graph attributes.
std::string nested_text(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "graph \"\" {\n#0 = If() -> () {g = ";
  s += "graph \"\" {\n}";
  for (int i = 0; i < depth; ++i) s += "}\n}";
  return s;
}

// Found while writing tir_fuzz (its 4 KB inputs cannot nest this deep): 3000 nested graphs
// overflowed the stack. 32 below the top one are accepted
// (as in the JSON graph format), deeper is an error.
TEST(Text, NestingIsBounded) {
  auto ok = parse_graph(nested_text(32), "deep.tir");
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  for (int depth : {33, 3000}) {
    auto g = parse_graph(nested_text(depth), "deep.tir");
    ASSERT_FALSE(g.has_value()) << depth;
    EXPECT_NE(g.error().to_string().find("deep.tir:34:"), std::string::npos) << g.error().to_string();
    EXPECT_NE(g.error().message.find("nested more than 32 deep"), std::string::npos) << g.error().message;
  }
}

}  // namespace
}  // namespace tessera::ir
