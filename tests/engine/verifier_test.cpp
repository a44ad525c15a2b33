// Tests for the structural verifier (engine/ir/verifier.cpp) and the schema checks and type
// inference over graphs (engine/ops/infer.cpp).
#include <gtest/gtest.h>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/ops/cost.h"
#include "engine/ops/infer.h"

namespace tessera {
namespace {

ir::Graph parse(const char* text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.has_value()) << g.error().to_string();
  return g ? std::move(*g) : ir::Graph();
}

std::string verify_error(const ir::Graph& g) {
  Status st = ir::verify(g);
  return st.is_ok() ? "ok" : st.error().to_string();
}

TEST(Verifier, AcceptsAWellFormedGraph) {
  ir::Graph g = parse(R"(graph "g" {
    input %0 "x" : f32[2]
    #0 = Relu(%0) -> (%1 : f32[2])
    output %1
  })");
  EXPECT_EQ(verify_error(g), "ok");
}

TEST(Verifier, DanglingInputNamesTheNode) {
  ir::Graph g = parse(R"(graph "g" {
    input %0 "x" : f32[2]
    #3 "act" = Relu(%7) -> (%1 : f32[2])
    output %1
  })");
  Status st = ir::verify(g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, 3);
  EXPECT_NE(st.error().message.find("Relu 'act' (#3): input 0 refers to undefined value %7"), std::string::npos)
      << st.error().message;
}

TEST(Verifier, CycleIsReportedWithANodeOnIt) {
  ir::Graph g = parse(R"(graph "g" {
    input %0 "x" : f32[2]
    #0 = Add(%0, %2) -> (%1 : f32[2])
    #1 = Relu(%1) -> (%2 : f32[2])
    output %2
  })");
  Status st = ir::verify(g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("cycle"), std::string::npos);
  EXPECT_TRUE(st.error().node == 0 || st.error().node == 1);
}

TEST(Verifier, UndefinedGraphOutput) {
  ir::Graph g = parse(R"(graph "g" { input %0 "x" : f32[2]
    output %5 })");
  EXPECT_NE(verify_error(g).find("graph output refers to undefined value %5"), std::string::npos);
}

TEST(Verifier, DuplicateInputNames) {
  ir::Graph g;
  g.add_input("x", ir::TensorType(DType::kF32, {}));
  g.add_input("x", ir::TensorType(DType::kF32, {}));
  EXPECT_NE(verify_error(g).find("named 'x'"), std::string::npos);
}

TEST(Verifier, RemovedProducerLeavesDanglingUse) {
  ir::Graph g;
  auto x = g.add_input("x", ir::TensorType(DType::kF32, {}));
  auto a = g.add_node("Relu", {x}, 1);
  auto b = g.add_node("Neg", {g.node(a).outputs[0]}, 1);
  g.set_outputs(g.node(b).outputs);
  g.remove_node(a);
  Status st = ir::verify(g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, b);
}

TEST(Verifier, NestedGraphErrorsNameTheOuterNode) {
  ir::Graph g = parse(R"(graph "g" {
    input %0 "c" : bool[]
    #5 "branch" = If(%0) -> (%1 : f32[2]) {else_branch = graph "e" {
      #0 = Relu(%9) -> (%1 : f32[2])
      output %1
    }, then_branch = graph "t" {
      output %0
    }}
    output %1
  })");
  Status st = ir::verify(g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, 5);
  EXPECT_NE(st.error().message.find("If 'branch' (#5): in graph attribute 'else_branch'"), std::string::npos)
      << st.error().message;
}

TEST(SchemaCheck, UnknownOpArityAndAttributes) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto err = [&](const char* text) {
    ir::Graph g = parse(text);
    Status st = ops::check_graph(g, reg);
    return st.is_ok() ? std::string("ok") : st.error().to_string();
  };
  EXPECT_NE(err(R"(graph "g" { input %0 "x" : f32[2]
      #0 = Frobnicate(%0) -> (%1 : f32[2])
      output %1 })").find("unknown op 'Frobnicate'"), std::string::npos);
  EXPECT_NE(err(R"(graph "g" { input %0 "x" : f32[2]
      #0 = Relu(%0, %0) -> (%1 : f32[2])
      output %1 })").find("takes 1 inputs, got 2"), std::string::npos);
  EXPECT_NE(err(R"(graph "g" { input %0 "x" : f32[2]
      #0 = LeakyRelu(%0) -> (%1 : f32[2]) {alpha = "big"}
      output %1 })").find("attribute 'alpha' must be float, got string"), std::string::npos);
  EXPECT_NE(err(R"(graph "g" { input %0 "x" : f32[2]
      #0 = Relu(%0) -> (%1 : f32[2]) {bogus = 1}
      output %1 })").find("unknown attribute 'bogus'"), std::string::npos);
  EXPECT_NE(err(R"(graph "g" { input %0 "x" : f32[2]
      #0 = Add(%0, _) -> (%1 : f32[2])
      output %1 })").find("required input 1"), std::string::npos);
}

TEST(Inference, PropagatesSymbolicShapesThroughAChain) {
  const ops::OpRegistry reg = ops::make_default_registry();
  ir::Graph g = parse(R"(graph "g" {
    input %0 "x" : f32[N, 4]
    param %1 "w" : f32[4, 3] = tensor<f32[4, 3]> [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
    param %2 "b" : f32[3] = tensor<f32[3]> [1.0, 2.0, 3.0]
    #0 = MatMul(%0, %1) -> (%3 : f32[*])
    #1 = Add(%3, %2) -> (%4 : f32[*])
    #2 = Relu(%4) -> (%5 : f32[*])
    output %5
  })");
  Status st = ops::infer_types(g, reg);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(g.value(5).type.to_string(), "f32[N, 3]");
}

TEST(Inference, ShapeDisagreementNamesTheNode) {
  const ops::OpRegistry reg = ops::make_default_registry();
  ir::Graph g = parse(R"(graph "g" {
    input %0 "x" : f32[N, 4]
    input %1 "y" : f32[5]
    #7 "sum" = Add(%0, %1) -> (%2 : f32[*])
    output %2
  })");
  Status st = ops::infer_types(g, reg);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, 7);
  EXPECT_NE(st.error().message.find("sum"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// engine/ops/cost.cpp: parameters and FLOPs, with symbols bound to 1.
TEST(Cost, CountsParamsAndMatmulFlops) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = ir::parse_graph(R"(graph "g" {
    input %0 "x" : f32[N, 4]
    param %1 "w" : f32[4, 3] = tensor<f32[4, 3]> [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
    #0 = MatMul(%0, %1) -> (%2 : f32[*])
    #1 = Relu(%2) -> (%3 : f32[*])
    output %3
  })");
  ASSERT_TRUE(g.has_value());
  auto c = ops::graph_cost(*g, reg, 2);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  EXPECT_EQ(c->params, 12);
  EXPECT_DOUBLE_EQ(c->flops_by_op["MatMul"], 2.0 * 2 * 3 * 4);  // N=2: [2,4] x [4,3]
  EXPECT_DOUBLE_EQ(c->flops_by_op["Relu"], 6.0);
  EXPECT_EQ(c->op_counts["MatMul"], 1);
}

// Pooling counts one operation per window element (it counted one per output: 2,704 for LeNet's
// 16x13x13 MaxPool whatever its 2x2 window).
TEST(Cost, PoolingCountsItsWindow) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = ir::parse_graph(R"(graph "g" {
    input %0 "x" : f32[1, 16, 26, 26]
    #0 = MaxPool(%0) -> (%1 : f32[*]) {kernel_shape = [2, 2], strides = [2, 2]}
    #1 = AveragePool(%1) -> (%2 : f32[*]) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}
    output %2
  })");
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto c = ops::graph_cost(*g, reg, 1);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  EXPECT_DOUBLE_EQ(c->flops_by_op["MaxPool"], 16.0 * 13 * 13 * 4);
  EXPECT_DOUBLE_EQ(c->flops_by_op["AveragePool"], 16.0 * 13 * 13 * 9);
}

}  // namespace
}  // namespace tessera
