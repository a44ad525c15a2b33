// Tests of engine/ir/hash.cpp: the structural hash sees every printed difference and nothing else.
#include <gtest/gtest.h>

#include "engine/ir/hash.h"
#include "engine/ir/text.h"

namespace tessera::ir {
namespace {

const char* kBase = R"(graph "g" {
  input %0 "x" : f32[N, 3]
  param %1 "w" : f32[3, 2] = tensor<f32[3, 2]> [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  #0 "mm" = MatMul(%0, %1) -> (%2 : f32[N, 2]) origin "a"
  #1 "act" = LeakyRelu(%2) -> (%3 "y" : f32[N, 2]) {alpha = 0.5}
  #2 "br" = If(%4) -> (%5 : f32[N, 2]) {else_branch = graph "e" {
    capture %0 "y" : f32[N, 2]
    output %0
  }, then_branch = graph "t" {
    capture %0 "y" : f32[N, 2]
    #0 = Neg(%0) -> (%1 : f32[N, 2])
    output %1
  }}
  input %4 "c" : bool[]
  output %3, %5
})";

uint64_t hash_of(const std::string& text) {
  auto g = parse_graph(text);
  EXPECT_TRUE(g) << g.error().to_string();
  return g ? structural_hash(*g) : 0;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(StructuralHash, SameGraphSameHash) {
  EXPECT_EQ(hash_of(kBase), hash_of(kBase));
  auto g = parse_graph(kBase);
  ASSERT_TRUE(g);
  Graph copy = *g;
  EXPECT_EQ(structural_hash(copy), structural_hash(*g));
  // A round trip through text keeps the hash.
  auto again = parse_graph(print_graph(*g));
  ASSERT_TRUE(again);
  EXPECT_EQ(structural_hash(*again), structural_hash(*g));
}

TEST(StructuralHash, EveryKindOfEditChangesIt) {
  const uint64_t base = hash_of(kBase);
  const std::pair<const char*, const char*> edits[] = {
      {"6.0]", "6.5]"},                        // param contents
      {"alpha = 0.5", "alpha = 0.25"},         // float attribute
      {"LeakyRelu", "Relu"},                   // op
      {"\"act\"", "\"act2\""},                 // node name
      {"origin \"a\"", "origin \"b\""},        // provenance
      {"#0 \"mm\"", "#7 \"mm\""},              // node id
      {"%3 \"y\" : f32[N, 2]) {", "%3 \"y\" : f32[M, 2]) {"},  // a type
      {"#0 = Neg", "#0 = Abs"},                // inside a nested graph
      {"output %3, %5", "output %5, %3"},      // output order
      {"MatMul(%0, %1)", "MatMul(%0, %0)"},    // an edge
  };
  for (const auto& [from, to] : edits) EXPECT_NE(hash_of(replaced(kBase, from, to)), base) << from << " -> " << to;
}

TEST(StructuralHash, CommentsAndWhitespaceDoNotMatter) {
  EXPECT_EQ(hash_of(replaced(kBase, "  output %3, %5", "  // a comment\n    output %3,   %5")), hash_of(kBase));
}

TEST(StructuralHash, TensorHashIsByValue) {
  const Tensor a = Tensor::from_vector<float>({2}, {1, 2});
  const Tensor b = Tensor::from_vector<float>({2}, {1, 2});
  EXPECT_EQ(tensor_hash(a), tensor_hash(b));
  EXPECT_NE(tensor_hash(a), tensor_hash(Tensor::from_vector<float>({1, 2}, {1, 2})));  // shape
  EXPECT_NE(tensor_hash(a), tensor_hash(Tensor::from_vector<double>({2}, {1, 2})));    // dtype
  // A strided view hashes as its logical contents.
  const Tensor t = Tensor::from_vector<float>({2, 2}, {1, 3, 2, 4});
  EXPECT_EQ(tensor_hash(t.view({2, 2}, {1, 2}, 0)), tensor_hash(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})));
  EXPECT_EQ(attribute_hash(Attribute(a)), attribute_hash(Attribute(b)));
  EXPECT_NE(attribute_hash(Attribute(int64_t{1})), attribute_hash(Attribute(1.0)));
}

TEST(GraphHasher, MemoMatchesPlainHashAndSeesNewData) {
  Graph g("big");
  Tensor w(DType::kF32, {64, 64});  // 16 KiB: memoised
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, static_cast<double>(i));
  const ValueId p = g.add_param("w", w);
  g.set_outputs({p});
  GraphHasher hasher;
  EXPECT_EQ(hasher.hash(g), structural_hash(g));
  EXPECT_EQ(hasher.hash(g), structural_hash(g));  // from the memo
  Tensor w2 = w.clone();
  w2.set(5, -1.0);
  g.set_param_data(p, w2);  // new data, new storage
  EXPECT_EQ(hasher.hash(g), structural_hash(g));
  EXPECT_NE(structural_hash(g), [&] {
    Graph h = g;
    h.set_param_data(p, w);
    return structural_hash(h);
  }());
}

}  // namespace
}  // namespace tessera::ir
