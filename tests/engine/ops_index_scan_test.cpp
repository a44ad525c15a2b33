// Tests of engine/ops/index_scan.cpp: Scan on hand-built body graphs run by the reference
// interpreter (the running sum of ONNX's test_scan9_sum, directions, axes), signature checks and
// type inference.
#include <gtest/gtest.h>

#include "engine/ops/infer.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::Graph;
using ir::NodeId;
using ir::TensorType;
using ir::ValueId;
using Ints = std::vector<int64_t>;

ValueId out0(const Graph& g, NodeId n) {
  return g.node(n).outputs[0];
}

// body(sum_in: f32[2], next: f32[2]) -> (sum_in + next, sum_in + next)
Graph sum_body() {
  Graph b("body");
  const ValueId s = b.add_input("sum_in", TensorType::of(DType::kF32, {2}));
  const ValueId x = b.add_input("next", TensorType::of(DType::kF32, {2}));
  const NodeId add = b.add_node("Add", {s, x}, 1, "add");
  const NodeId id = b.add_node("Identity", {out0(b, add)}, 1, "copy");
  b.set_outputs({out0(b, add), out0(b, id)});
  return b;
}

// main(init: f32[2], xs: f32[3, 2] or [2, 3]) = Scan(init, xs)
Graph scan_graph(const Shape& xs_shape, ir::Attributes extra = {}) {
  Graph g("scan");
  const ValueId init = g.add_input("init", TensorType::of(DType::kF32, {2}));
  const ValueId xs = g.add_input("xs", TensorType::of(DType::kF32, xs_shape));
  ir::Attributes attrs{{"body", sum_body()}, {"num_scan_inputs", 1}};
  for (auto& [k, v] : extra) attrs.emplace(k, v);
  const NodeId n = g.add_node("Scan", {init, xs}, 2, "scan", std::move(attrs));
  g.set_outputs(g.node(n).outputs);
  return g;
}

std::vector<Tensor> run_graph(Graph g, const Tensor& xs) {
  const runtime::Feeds feeds{{"init", f32({2}, {0, 0})}, {"xs", xs}};
  auto r = runtime::run_reference(g, registry(), feeds);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
  return r ? *r : std::vector<Tensor>(2);
}

TEST(Scan, RunningSumAsInOnnxScan9Sum) {
  auto out = run_graph(scan_graph({3, 2}), f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_values(out[0], {2}, {9, 12});
  expect_values(out[1], {3, 2}, {1, 2, 4, 6, 9, 12});
}

TEST(Scan, ReverseInputAndOutputDirections) {
  auto rin = run_graph(scan_graph({3, 2}, {{"scan_input_directions", Ints{1}}}),
                       f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_values(rin[1], {3, 2}, {5, 6, 8, 10, 9, 12});
  auto rout = run_graph(scan_graph({3, 2}, {{"scan_output_directions", Ints{1}}}),
                        f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_values(rout[1], {3, 2}, {9, 12, 4, 6, 1, 2});
}

TEST(Scan, InputAndOutputAxes) {
  // xs [2, 3] scanned along axis 1: the slices are the columns [1 4], [2 5], [3 6].
  auto out =
      run_graph(scan_graph({2, 3}, {{"scan_input_axes", Ints{1}}, {"scan_output_axes", Ints{1}}}),
                f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  expect_values(out[0], {2}, {6, 15});
  expect_values(out[1], {2, 3}, {1, 3, 6, 4, 9, 15});
}

TEST(Scan, InferenceAndSignatureErrors) {
  Graph g = scan_graph({3, 2});
  ASSERT_TRUE(ops::infer_types(g, registry()).is_ok());
  EXPECT_EQ(g.value(g.outputs()[0]).type.to_string(), "f32[2]");
  EXPECT_EQ(g.value(g.outputs()[1]).type.to_string(), "f32[3, 2]");
  // A body with the wrong number of inputs is rejected by the schema check.
  Graph bad("bad");
  const ValueId init = bad.add_input("init", TensorType::of(DType::kF32, {2}));
  const ValueId xs = bad.add_input("xs", TensorType::of(DType::kF32, {3, 2}));
  Graph body("body");
  const ValueId only = body.add_input("x", TensorType::of(DType::kF32, {2}));
  body.set_outputs({only, only});
  const NodeId n =
      bad.add_node("Scan", {init, xs}, 2, "scan", {{"body", body}, {"num_scan_inputs", 1}});
  bad.set_outputs(bad.node(n).outputs);
  Status st = ops::infer_types(bad, registry());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("body has 1 inputs"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace tessera
