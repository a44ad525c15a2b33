// Tests of engine/ops/control.cpp: If and Loop on small hand-built graphs with nested graphs and
// captures, run by the reference interpreter; signature checks and type inference.
#include <gtest/gtest.h>

#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::Graph;
using ir::NodeId;
using ir::TensorType;
using ir::ValueId;

Tensor i64s(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}
TensorType scalar_of(DType dt) { return TensorType::of(dt, {}); }

void expect_tensor(const Tensor& t, DType dt, const Shape& shape, const std::vector<double>& values) {
  EXPECT_EQ(t.dtype(), dt);
  EXPECT_EQ(t.shape(), shape) << shape_to_string(t.shape());
  EXPECT_EQ(t.to_doubles(), values) << t.summary(32);
}

ValueId out0(const Graph& g, NodeId n) { return g.node(n).outputs[0]; }

// A graph with no inputs returning Gather(x, indices) of the enclosing graph's f32[3] "x".
Graph gather_branch(const std::string& name, std::vector<int64_t> indices) {
  Graph b(name);
  const ValueId x = b.add_capture("x", TensorType::of(DType::kF32, {3}));
  const NodeId idx = b.add_node("Constant", {}, 1, name + "_indices", {{"value", i64s(std::move(indices))}});
  const NodeId g = b.add_node("Gather", {x, out0(b, idx)}, 1, name + "_gather");
  b.set_outputs({out0(b, g)});
  return b;
}

// main(c: bool, x: f32[3]) = If(c) then x[then_idx] else x[else_idx]
Graph if_graph(std::vector<int64_t> then_idx, std::vector<int64_t> else_idx, NodeId* if_node = nullptr) {
  Graph g("choose");
  const ValueId c = g.add_input("c", scalar_of(DType::kBool));
  g.add_input("x", TensorType::of(DType::kF32, {3}));
  const NodeId n = g.add_node("If", {c}, 1, "pick",
                              {{"then_branch", gather_branch("then", std::move(then_idx))},
                               {"else_branch", gather_branch("else", std::move(else_idx))}});
  g.set_outputs({out0(g, n)});
  if (if_node) *if_node = n;
  return g;
}

class ControlOpsTest : public ::testing::Test {
 protected:
  std::vector<Tensor> run(const Graph& g, const runtime::Feeds& feeds) {
    auto r = runtime::run_reference(g, reg_, feeds);
    EXPECT_TRUE(r.has_value()) << r.error().to_string();
    return r ? *r : std::vector<Tensor>(g.outputs().size());
  }
  ops::OpRegistry reg_ = ops::make_default_registry();
};

// ---- If ----

TEST_F(ControlOpsTest, IfChoosesBranchUsingCapturedValue) {
  const Graph g = if_graph({0}, {2});
  const Tensor x = Tensor::from_vector<float>({3}, {10.f, 20.f, 30.f});
  expect_tensor(run(g, {{"c", Tensor::from_bools({}, {true})}, {"x", x}})[0], DType::kF32, {1}, {10});
  expect_tensor(run(g, {{"c", Tensor::from_bools({}, {false})}, {"x", x}})[0], DType::kF32, {1}, {30});
}

TEST_F(ControlOpsTest, IfInferenceUnitesBranchTypes) {
  Graph same = if_graph({0}, {2});
  ASSERT_TRUE(ops::infer_types(same, reg_).is_ok());
  EXPECT_EQ(same.value(same.outputs()[0]).type.to_string(), "f32[1]");
  Graph differ = if_graph({0, 1, 2}, {2});
  ASSERT_TRUE(ops::infer_types(differ, reg_).is_ok());
  EXPECT_EQ(differ.value(differ.outputs()[0]).type.to_string(), "f32[?]");
  const Tensor x = Tensor::from_vector<float>({3}, {1.f, 2.f, 3.f});
  expect_tensor(run(differ, {{"c", Tensor::from_bools({}, {true})}, {"x", x}})[0], DType::kF32, {3}, {1, 2, 3});
}

TEST_F(ControlOpsTest, IfRejectsNonBoolCondition) {
  Graph g("bad_cond");
  const ValueId c = g.add_input("c", scalar_of(DType::kF32));
  g.add_input("x", TensorType::of(DType::kF32, {3}));
  const NodeId n = g.add_node("If", {c}, 1, "pick",
                              {{"then_branch", gather_branch("then", {0})}, {"else_branch", gather_branch("else", {1})}});
  g.set_outputs({out0(g, n)});
  Status st = ops::infer_types(g, reg_);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, n);
}

TEST_F(ControlOpsTest, IfBranchSignatureMismatchIsRejected) {
  Graph g("choose");
  const ValueId c = g.add_input("c", scalar_of(DType::kBool));
  g.add_input("x", TensorType::of(DType::kF32, {3}));
  Graph two = gather_branch("then", {0});
  two.set_outputs({two.outputs()[0], two.outputs()[0]});
  const NodeId n = g.add_node("If", {c}, 1, "pick", {{"then_branch", two}, {"else_branch", gather_branch("else", {1})}});
  g.set_outputs({out0(g, n)});
  Status st = ops::check_graph(g, reg_);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, n);
  EXPECT_NE(st.error().message.find("pick"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("then_branch"), std::string::npos) << st.error().message;

  // A branch with an input is rejected too.
  Graph with_input = gather_branch("else", {1});
  with_input.add_input("extra", scalar_of(DType::kF32));
  Graph h("choose");
  const ValueId hc = h.add_input("c", scalar_of(DType::kBool));
  h.add_input("x", TensorType::of(DType::kF32, {3}));
  const NodeId hn = h.add_node("If", {hc}, 1, "pick2",
                               {{"then_branch", gather_branch("then", {0})}, {"else_branch", with_input}});
  h.set_outputs({out0(h, hn)});
  Status st2 = ops::check_graph(h, reg_);
  ASSERT_FALSE(st2.is_ok());
  EXPECT_EQ(st2.error().node, hn);
  EXPECT_NE(st2.error().message.find("pick2"), std::string::npos) << st2.error().message;
}

// ---- Loop ----

// main(M: i64) = Loop(M, "", s0 = 0) with body (i, cond, s) -> (cond, s + i + 1, s + i + 1):
// the final sum 1 + ... + M and the running sums as a scan output.
Graph sum_loop_graph(bool with_cond) {
  Graph body("sum_body");
  const ValueId i = body.add_input("i", scalar_of(DType::kI64));
  const ValueId cond = body.add_input("cond_in", scalar_of(DType::kBool));
  const ValueId s = body.add_input("s", scalar_of(DType::kI64));
  const NodeId one = body.add_node("Constant", {}, 1, "one", {{"value_int", 1}});
  const NodeId ip1 = body.add_node("Add", {i, out0(body, one)}, 1, "i_plus_1");
  const NodeId sum = body.add_node("Add", {s, out0(body, ip1)}, 1, "sum");
  body.set_outputs({cond, out0(body, sum), out0(body, sum)});

  Graph g("sum_to_m");
  const ValueId m = g.add_input("M", scalar_of(DType::kI64));
  const ValueId c = with_cond ? g.add_input("go", scalar_of(DType::kBool)) : ir::kNoValue;
  const ValueId s0 = g.add_param("s0", Tensor::scalar<int64_t>(0));
  const NodeId loop = g.add_node("Loop", {m, c, s0}, 2, "sum_loop", {{"body", body}});
  g.set_outputs(g.node(loop).outputs);
  return g;
}

TEST_F(ControlOpsTest, LoopSumsOneToMWithScanOutput) {
  const Graph g = sum_loop_graph(false);
  auto outs = run(g, {{"M", Tensor::scalar<int64_t>(4)}});
  ASSERT_EQ(outs.size(), 2u);
  expect_tensor(outs[0], DType::kI64, {}, {10});
  expect_tensor(outs[1], DType::kI64, {4}, {1, 3, 6, 10});

  Graph typed = g;
  ASSERT_TRUE(ops::infer_types(typed, reg_).is_ok());
  EXPECT_EQ(typed.value(typed.outputs()[0]).type.to_string(), "i64[]");
  EXPECT_EQ(typed.value(typed.outputs()[1]).type.to_string(), "i64[?]");
}

TEST_F(ControlOpsTest, LoopWithZeroTripsReturnsInitialValues) {
  auto outs = run(sum_loop_graph(false), {{"M", Tensor::scalar<int64_t>(0)}});
  ASSERT_EQ(outs.size(), 2u);
  expect_tensor(outs[0], DType::kI64, {}, {0});
  expect_tensor(outs[1], DType::kI64, {0}, {});
  // A false initial condition runs no iteration either.
  auto outs2 = run(sum_loop_graph(true), {{"M", Tensor::scalar<int64_t>(5)}, {"go", Tensor::from_bools({}, {false})}});
  ASSERT_EQ(outs2.size(), 2u);
  expect_tensor(outs2[0], DType::kI64, {}, {0});
  expect_tensor(outs2[1], DType::kI64, {0}, {});
}

// main(go: bool[, M]) = Loop(M?, go, last = -1) with body (i, cond, last) -> (table[i], i, i), where
// table (a captured param of main) is {true, true, false, true, true}: the condition turns false in
// iteration 2, so the loop stops after 3 iterations unless M stops it first.
Graph cond_loop_graph(bool with_m, bool with_cond) {
  Graph body("cond_body");
  const ValueId i = body.add_input("i", scalar_of(DType::kI64));
  body.add_input("cond_in", scalar_of(DType::kBool));
  body.add_input("last", scalar_of(DType::kI64));
  const ValueId table = body.add_capture("table", TensorType::of(DType::kBool, {5}));
  const NodeId next = body.add_node("Gather", {table, i}, 1, "next_cond");
  body.set_outputs({out0(body, next), i, i});

  Graph g("until");
  const ValueId m = with_m ? g.add_input("M", scalar_of(DType::kI64)) : ir::kNoValue;
  const ValueId go = with_cond ? g.add_input("go", scalar_of(DType::kBool)) : ir::kNoValue;
  g.add_param("table", Tensor::from_bools({5}, {true, true, false, true, true}));
  const ValueId last0 = g.add_param("last0", Tensor::scalar<int64_t>(-1));
  const NodeId loop = g.add_node("Loop", {m, go, last0}, 2, "until_false", {{"body", body}});
  g.set_outputs(g.node(loop).outputs);
  return g;
}

TEST_F(ControlOpsTest, LoopTerminatedByCondition) {
  auto outs = run(cond_loop_graph(false, true), {{"go", Tensor::from_bools({}, {true})}});
  ASSERT_EQ(outs.size(), 2u);
  expect_tensor(outs[0], DType::kI64, {}, {2});
  expect_tensor(outs[1], DType::kI64, {3}, {0, 1, 2});
}

TEST_F(ControlOpsTest, LoopTripCountStopsBeforeCondition) {
  auto outs = run(cond_loop_graph(true, true), {{"M", Tensor::scalar<int64_t>(2)}, {"go", Tensor::from_bools({}, {true})}});
  ASSERT_EQ(outs.size(), 2u);
  expect_tensor(outs[0], DType::kI64, {}, {1});
  expect_tensor(outs[1], DType::kI64, {2}, {0, 1});
}

TEST_F(ControlOpsTest, LoopIgnoresBodyConditionWithoutCondInput) {
  // ONNX: with cond absent the body's condition output is ignored, M alone decides.
  auto outs = run(cond_loop_graph(true, false), {{"M", Tensor::scalar<int64_t>(4)}});
  ASSERT_EQ(outs.size(), 2u);
  expect_tensor(outs[0], DType::kI64, {}, {3});
  expect_tensor(outs[1], DType::kI64, {4}, {0, 1, 2, 3});
}

TEST_F(ControlOpsTest, LoopWithoutTripCountOrConditionIsRejected) {
  const Graph g = cond_loop_graph(false, false);
  Status st = ops::check_graph(g, reg_);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, g.node_ids().back());
  EXPECT_NE(st.error().message.find("never end"), std::string::npos) << st.error().message;
}

TEST_F(ControlOpsTest, LoopTripCountBeyondLimitIsAnError) {
  auto r = runtime::run_reference(sum_loop_graph(false), reg_, {{"M", Tensor::scalar<int64_t>(int64_t{1} << 40)}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("exceeds the limit"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("sum_loop"), std::string::npos) << r.error().message;
}

TEST_F(ControlOpsTest, LoopBodySignatureMismatchIsRejected) {
  Graph g = sum_loop_graph(false);
  const NodeId loop = g.node_ids().back();
  // Two loop-carried inputs for a body that carries one.
  const ValueId extra = g.add_param("extra", Tensor::scalar<int64_t>(0));
  g.node(loop).inputs.push_back(extra);
  Status st = ops::check_graph(g, reg_);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, loop);
  EXPECT_NE(st.error().message.find("sum_loop"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("body has 3 inputs; expected 4"), std::string::npos) << st.error().message;
}

TEST_F(ControlOpsTest, LoopCarriedTypeChangeIsRejected) {
  Graph body("bad_body");
  const ValueId i = body.add_input("i", scalar_of(DType::kI64));
  const ValueId cond = body.add_input("cond_in", scalar_of(DType::kBool));
  body.add_input("v", scalar_of(DType::kF32));
  body.set_outputs({cond, i});  // the f32 value comes back as i64
  Graph g("bad");
  const ValueId m = g.add_input("M", scalar_of(DType::kI64));
  const ValueId v0 = g.add_param("v0", Tensor::scalar<float>(0.f));
  const NodeId loop = g.add_node("Loop", {m, ir::kNoValue, v0}, 1, "retype", {{"body", body}});
  g.set_outputs({out0(g, loop)});
  Status st = ops::infer_types(g, reg_);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, loop);
}

TEST_F(ControlOpsTest, OpsHaveSchemaVerifyInferenceAndKernel) {
  for (const char* name : {"If", "Loop"}) {
    const ops::OpDef* def = reg_.find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->category, "control") << name;
    EXPECT_TRUE(def->verify) << name;
    EXPECT_TRUE(def->infer) << name;
    EXPECT_TRUE(def->reference) << name;
  }
}

}  // namespace
}  // namespace tessera
