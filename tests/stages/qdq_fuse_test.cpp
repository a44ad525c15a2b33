// The qdq-fuse pass (engine/passes/qdq_fuse.cpp): a QDQ graph as quantization tools write it, run
// through the six stages (its Conv and Gemm become QLinearConv and QLinearMatMul on the int8
// kernels) against the same graph on the reference kernels (float ops between the Q/DQ pairs).
#include "engine/stages/session.h"
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;


// A QDQ graph as quantization tools write it: x -> Q -> DQ -> Conv(DQ(w_q), b) -> Relu -> Q -> DQ
// -> Gemm(DQ(w2_q), c) -> Q -> DQ -> y.
ir::Graph qdq_graph() {
  ir::Graph g("qdq");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {2, 3, 6, 6}));
  auto p = [&](const std::string& n, Tensor t) { return g.add_param(n, std::move(t)); };
  auto qdq = [&](ir::ValueId v, float s, double z, const std::string& n) {
    const ir::ValueId sv = p(n + ".s", scalar_f32(s)), zv = p(n + ".z", scalar_q(DType::kU8, z));
    const ir::ValueId q = g.node(g.add_node("QuantizeLinear", {v, sv, zv}, 1, n + ".q")).outputs[0];
    return g.node(g.add_node("DequantizeLinear", {q, sv, zv}, 1, n + ".dq")).outputs[0];
  };
  const ir::ValueId xd = qdq(x, 0.02f, 128, "x");
  const ir::ValueId ws = p("w.s", random_f32({4}, 5, 0.005f, 0.01f)), wz = p("w.z", Tensor(DType::kI8, {4}));
  const ir::ValueId wq = p("w.q", random_q(DType::kI8, {4, 3, 3, 3}, 6));
  const ir::ValueId wd = g.node(g.add_node("DequantizeLinear", {wq, ws, wz}, 1, "w.dq", {{"axis", int64_t{0}}})).outputs[0];
  const ir::ValueId b = p("b", random_f32({4}, 7, -0.1f, 0.1f));
  const ir::ValueId c = g.node(g.add_node("Conv", {xd, wd, b}, 1, "conv", {{"pads", Ints{1, 1, 1, 1}}})).outputs[0];
  const ir::ValueId r = g.node(g.add_node("Relu", {c}, 1, "relu")).outputs[0];
  const ir::ValueId rd = qdq(r, 0.01f, 0, "r");
  const ir::ValueId f = g.node(g.add_node("Flatten", {rd}, 1, "flatten")).outputs[0];
  const ir::ValueId w2s = p("w2.s", scalar_f32(0.004f)), w2z = p("w2.z", scalar_q(DType::kI8, 0));
  const ir::ValueId w2q = p("w2.q", random_q(DType::kI8, {5, 144}, 8));
  const ir::ValueId w2d = g.node(g.add_node("DequantizeLinear", {w2q, w2s, w2z}, 1, "w2.dq")).outputs[0];
  const ir::ValueId c2 = p("c2", random_f32({5}, 9, -0.1f, 0.1f));
  const ir::ValueId y = g.node(g.add_node("Gemm", {f, w2d, c2}, 1, "fc", {{"transB", int64_t{1}}})).outputs[0];
  const ir::ValueId yd = qdq(y, 0.05f, 100, "y");
  g.set_value_name(yd, "y");
  g.set_outputs({yd});
  return g;
}

TEST(QdqFuse, IntegerOpsRunTheQdqGraphAsItsFloatForm) {
  const ir::Graph g = qdq_graph();
  const Tensor x = random_f32({2, 3, 6, 6}, 11, -2, 2);
  auto want = runtime::run_reference(g, ops_registry(), {{"x", x}});
  ASSERT_TRUE(want) << want.error().to_string();
  stages::SessionOptions opts;
  opts.threads = 2;
  stages::Session session(qdq_graph(), ops_registry(), opts);
  auto got = session.run({{"x", x}});
  ASSERT_TRUE(got) << got.error().to_string();
  ASSERT_NE(session.last_program(), nullptr);
  std::string kernels;
  for (const auto& step : session.last_program()->plan().steps) kernels += step.impl + " ";
  EXPECT_NE(kernels.find("onednn:qlinear_conv"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("onednn:qlinear_matmul"), std::string::npos) << kernels;
  // The integer ops round once where the float graph rounded twice: at most one step of y's grid.
  expect_close((*got)[0], (*want)[0], 0, 0.05 + 1e-6);
}

// Weights the int8 kernels cannot take (u8, or a non-zero zero point) are folded to float once by
// constant-fold instead of being dequantized on every run.
TEST(QdqFuse, WeightsTheInt8KernelsCannotTakeAreFoldedOnce) {
  ir::Graph g("u8w");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {1, 2, 5, 5}));
  const ir::ValueId s = g.add_param("s", scalar_f32(0.02f)), z = g.add_param("z", scalar_q(DType::kU8, 128));
  const ir::ValueId q = g.node(g.add_node("QuantizeLinear", {x, s, z}, 1, "xq")).outputs[0];
  const ir::ValueId xd = g.node(g.add_node("DequantizeLinear", {q, s, z}, 1, "xdq")).outputs[0];
  const ir::ValueId wq = g.add_param("wq", random_q(DType::kU8, {3, 2, 3, 3}, 3));
  const ir::ValueId ws = g.add_param("ws", scalar_f32(0.01f)), wz = g.add_param("wz", scalar_q(DType::kU8, 120));
  const ir::ValueId wd = g.node(g.add_node("DequantizeLinear", {wq, ws, wz}, 1, "wdq")).outputs[0];
  const ir::ValueId y = g.node(g.add_node("Conv", {xd, wd}, 1, "conv")).outputs[0];
  g.set_outputs({y});
  stages::Session session(g, ops_registry(), {});
  const Tensor xin = random_f32({1, 2, 5, 5}, 4);
  auto got = session.run({{"x", xin}});
  ASSERT_TRUE(got) << got.error().to_string();
  for (const auto& step : session.last_program()->plan().steps)
    EXPECT_NE(session.last_program()->plan().graph.node(step.node).name, "wdq") << "the weights' DequantizeLinear runs";
  auto want = runtime::run_reference(g, ops_registry(), {{"x", xin}});
  ASSERT_TRUE(want);
  expect_close((*got)[0], (*want)[0], 1e-5, 1e-5);
}

}  // namespace
}  // namespace tessera::cpu_test
