// The layout pass: which nodes become blocked and where Reorders go, idempotence, and numbers:
// the reference executor on the laid-out graph, and a small executor that runs every node with
// its CPU kernel in the layouts the graph says, both against the reference on the original graph.
#include "engine/cpu/layout.h"

#include <cstring>

#include "engine/ir/text.h"
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;

// Runs the graph node by node with CPU kernels (layouts from the graph) or, where none accepts,
// the reference kernel on plain buffers. Records the kernel chosen per node ("ref" for fallback).
std::vector<Tensor> run_compiled(const ir::Graph& g, const runtime::Feeds& feeds,
                                 std::map<std::string, std::string>* impls) {
  std::map<ir::ValueId, std::vector<char>> buf;
  auto put = [&](ir::ValueId v, const Tensor& t) {
    const Tensor c = t.contiguous();
    buf[v].assign(static_cast<const char*>(c.raw_data()),
                  static_cast<const char*>(c.raw_data()) + c.nbytes());
  };
  for (ir::ValueId v : g.inputs()) put(v, feeds.at(g.value(v).name));
  for (ir::ValueId v : g.params()) put(v, *g.param_data(v));
  auto order = g.topological_order();
  EXPECT_TRUE(order.has_value());
  for (ir::NodeId id : *order) {
    const ir::Node& node = g.node(id);
    const ops::OpDef* def = ops_registry().find(node.op);
    backend::KernelInit init{node, *def, {}, {}, {}, {}, cpu::node_layout(node), 2};
    for (ir::ValueId v : node.inputs) {
      init.in_types.push_back(g.has_value(v) ? &g.value(v).type : nullptr);
      init.constants.push_back(g.has_value(v) ? ops::constant_value(g, v) : nullptr);
      init.in_layouts.push_back(cpu::value_layout(g, v));
    }
    for (ir::ValueId v : node.outputs) init.out_types.push_back(&g.value(v).type);
    std::unique_ptr<backend::Kernel> kernel;
    for (const auto* e : kernels().candidates(node.op)) {
      auto k = e->factory(init);
      EXPECT_TRUE(k.has_value()) << k.error().to_string();
      if (k && *k) {
        kernel = std::move(*k);
        break;
      }
    }
    (*impls)[node.name] = kernel ? kernel->name() : "ref";
    if (kernel) {
      EXPECT_TRUE(kernel->load().is_ok());
      backend::KernelRun run;
      for (ir::ValueId v : node.inputs)
        run.inputs.push_back({g.has_value(v) ? buf[v].data() : nullptr, 0});
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        buf[node.outputs[i]].assign(kernel->output_bytes(i), 0);
        run.outputs.push_back({buf[node.outputs[i]].data(), kernel->output_bytes(i)});
      }
      std::vector<char> scratch(kernel->scratch_bytes());
      run.scratch = {scratch.data(), scratch.size()};
      const Status st = kernel->run(run);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      continue;
    }
    // Reference fallback: plain buffers only.
    EXPECT_EQ(init.out_layout, "") << node.name;
    std::vector<Tensor> ins;
    std::vector<const Tensor*> ptrs;
    ins.reserve(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      EXPECT_EQ(init.in_layouts[i], "") << node.name;
      const ir::ValueId v = node.inputs[i];
      if (!g.has_value(v)) {
        ptrs.push_back(nullptr);
        continue;
      }
      const ir::TensorType& t = g.value(v).type;
      ins.push_back(Tensor::wrap(buf[v].data(), t.dtype, t.static_shape()));
      ptrs.push_back(&ins.back());
    }
    ops::KernelContext ctx{node, *def, ptrs, {}, {}};
    const Status st = def->reference(ctx);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    for (size_t i = 0; i < node.outputs.size() && st; ++i) put(node.outputs[i], ctx.outputs[i]);
  }
  std::vector<Tensor> outs;
  for (ir::ValueId v : g.outputs()) {
    EXPECT_EQ(cpu::value_layout(g, v), "");
    const ir::TensorType& t = g.value(v).type;
    Tensor o(t.dtype, t.static_shape());
    std::memcpy(o.raw_data(), buf[v].data(), o.nbytes());
    outs.push_back(o);
  }
  return outs;
}

const ir::Node* find_node(const ir::Graph& g, const std::string& name) {
  for (ir::NodeId id : g.node_ids())
    if (g.node(id).name == name) return &g.node(id);
  return nullptr;
}

std::vector<const ir::Node*> reorders(const ir::Graph& g) {
  std::vector<const ir::Node*> out;
  for (ir::NodeId id : g.node_ids())
    if (g.node(id).op == "Reorder") out.push_back(&g.node(id));
  return out;
}

// Runs the pass (twice: the second must change nothing) and checks the numbers three ways.
void lay_out_and_check(ir::Graph& g, const runtime::Feeds& feeds) {
  ASSERT_TRUE(ops::infer_types(g, ops_registry()).is_ok());
  const ir::Graph original = g;
  auto changed = cpu::assign_layouts(g, ops_registry());
  ASSERT_TRUE(changed.has_value()) << changed.error().to_string();
  const std::string once = ir::print_graph(g);
  auto again = cpu::assign_layouts(g, ops_registry());
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(*again);
  EXPECT_EQ(ir::print_graph(g), once);
  const Status checked = ops::check_graph(g, ops_registry());
  ASSERT_TRUE(checked.is_ok()) << checked.to_string() << "\n" << ir::print_graph(g);
  auto want = runtime::run_reference(original, ops_registry(), feeds);
  auto laid = runtime::run_reference(g, ops_registry(), feeds);
  ASSERT_TRUE(want.has_value() && laid.has_value());
  ASSERT_EQ(want->size(), laid->size());
  std::map<std::string, std::string> impls;
  const std::vector<Tensor> compiled = run_compiled(g, feeds, &impls);
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_TRUE((*laid)[i].equals((*want)[i]));
    expect_close(compiled[i], (*want)[i]);
  }
}

TEST(CpuLayout, ConvReluConvPoolFlattenGemm) {
  ir::Graph g("cnn");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {2, 3, 8, 8}));
  const Ints pad1{1, 1, 1, 1};
  const ir::NodeId c1 = g.add_node(
      "Conv",
      {x, g.add_param("w1", random_f32({16, 3, 3, 3}, 1)), g.add_param("b1", random_f32({16}, 2))},
      1, "conv1", {{"pads", pad1}});
  const ir::NodeId r1 = g.add_node("Relu", {g.node(c1).outputs[0]}, 1, "relu1");
  const ir::NodeId c2 =
      g.add_node("Conv", {g.node(r1).outputs[0], g.add_param("w2", random_f32({8, 16, 3, 3}, 3))},
                 1, "conv2", {{"pads", pad1}});
  const ir::NodeId p = g.add_node("MaxPool", {g.node(c2).outputs[0]}, 1, "pool",
                                  {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  const ir::NodeId f = g.add_node("Flatten", {g.node(p).outputs[0]}, 1, "flatten");
  const ir::NodeId gm =
      g.add_node("Gemm",
                 {g.node(f).outputs[0], g.add_param("w3", random_f32({128, 10}, 4)),
                  g.add_param("b3", random_f32({10}, 5))},
                 1, "fc");
  g.set_value_name(g.node(gm).outputs[0], "logits");
  g.set_outputs({g.node(gm).outputs[0]});
  lay_out_and_check(g, {{"x", random_f32({2, 3, 8, 8}, 6)}});

  EXPECT_EQ(cpu::node_layout(*find_node(g, "conv1")), "nhwc");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "relu1")), "nhwc");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "conv2")), "nhwc");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "pool")), "nhwc");
  EXPECT_EQ(find_node(g, "flatten")->attr(backend::kLayoutAttr), nullptr);
  EXPECT_EQ(find_node(g, "fc")->attr(backend::kLayoutAttr), nullptr);
  // Exactly one Reorder, back to plain, between the pool and the flatten; none before conv1.
  const std::vector<const ir::Node*> r = reorders(g);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]->attr("to")->s(), "");
  EXPECT_EQ(r[0]->inputs[0], find_node(g, "pool")->outputs[0]);
  EXPECT_EQ(find_node(g, "flatten")->inputs[0], r[0]->outputs[0]);
  EXPECT_EQ(find_node(g, "conv1")->inputs[0], x);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "logits");
}

// LeNet's shape: a 6-channel convolution and its pool stay plain (no Reorder before the
// backward ops), the 16-channel one after them goes channels-last; both run numbers as before.
TEST(CpuLayout, FewOutputChannelsStayPlain) {
  ir::Graph g("lenet-like");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {2, 1, 12, 12}));
  const ir::NodeId c1 = g.add_node("Conv", {x, g.add_param("w1", random_f32({6, 1, 3, 3}, 1))}, 1, "conv1",
                                   {{"pads", Ints{1, 1, 1, 1}}});
  const ir::NodeId p1 = g.add_node("MaxPool", {g.node(c1).outputs[0]}, 1, "pool1",
                                   {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  const ir::NodeId c2 = g.add_node("Conv", {g.node(p1).outputs[0], g.add_param("w2", random_f32({16, 6, 3, 3}, 2))},
                                   1, "conv2");
  const ir::NodeId p2 = g.add_node("MaxPool", {g.node(c2).outputs[0]}, 1, "pool2",
                                   {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  g.set_outputs({g.node(p2).outputs[0]});
  lay_out_and_check(g, {{"x", random_f32({2, 1, 12, 12}, 3)}});
  EXPECT_EQ(find_node(g, "conv1")->attr(backend::kLayoutAttr), nullptr);
  EXPECT_EQ(find_node(g, "pool1")->attr(backend::kLayoutAttr), nullptr);
  EXPECT_EQ(cpu::node_layout(*find_node(g, "conv2")), "nhwc");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "pool2")), "nhwc");
}

TEST(CpuLayout, ResidualAddWithPlainInputAndBlockedOutput) {
  ir::Graph g("res");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {1, 16, 6, 5}));
  const ir::NodeId c = g.add_node("Conv", {x, g.add_param("w", random_f32({16, 16, 3, 3}, 7))}, 1,
                                  "conv", {{"pads", Ints{1, 1, 1, 1}}});
  const ir::NodeId r = g.add_node("Relu", {g.node(c).outputs[0]}, 1, "relu");
  const ir::NodeId a = g.add_node("Add", {g.node(r).outputs[0], x}, 1, "add");
  g.set_value_name(g.node(a).outputs[0], "y");
  g.set_outputs({g.node(a).outputs[0]});
  lay_out_and_check(g, {{"x", random_f32({1, 16, 6, 5}, 8)}});

  EXPECT_EQ(cpu::node_layout(*find_node(g, "add")), "nhwc");
  const std::vector<const ir::Node*> rs = reorders(g);
  ASSERT_EQ(rs.size(), 2u);  // x -> nhwc for the Add, y -> plain for the output
  EXPECT_EQ(find_node(g, "conv")->inputs[0], x);  // the conv reads plain x itself
  EXPECT_EQ(cpu::value_layout(g, find_node(g, "add")->inputs[1]), "nhwc");
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
  EXPECT_EQ(cpu::value_layout(g, g.outputs()[0]), "");
  EXPECT_EQ(g.value(find_node(g, "add")->outputs[0]).name, "y.blocked");
}

// Squeeze-excitation (EfficientNet, MobileNetV3, RegNet): a channels-last conv output times a
// [1, C, 1, 1] gate. The Mul stays channels-last (oneDNN's jit binary wants its src1 and dst in
// src0's format: a plain dst made it fall back to the reference binary, 4 ms a Mul), no Reorder.
TEST(CpuLayout, SqueezeExcitationScaleStaysChannelsLast) {
  ir::Graph g("se");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {1, 16, 6, 5}));
  const ir::NodeId c = g.add_node("Conv", {x, g.add_param("w", random_f32({16, 16, 3, 3}, 21))}, 1,
                                  "conv", {{"pads", Ints{1, 1, 1, 1}}});
  const ir::ValueId y = g.node(c).outputs[0];
  const ir::NodeId pool = g.add_node("GlobalAveragePool", {y}, 1, "pool");
  const ir::NodeId fc = g.add_node("Conv", {g.node(pool).outputs[0], g.add_param("wse", random_f32({16, 16, 1, 1}, 22))},
                                   1, "fc");
  const ir::NodeId gate = g.add_node("Sigmoid", {g.node(fc).outputs[0]}, 1, "gate");
  const ir::NodeId mul = g.add_node("Mul", {y, g.node(gate).outputs[0]}, 1, "scale");
  const ir::NodeId c2 = g.add_node("Conv", {g.node(mul).outputs[0], g.add_param("w2", random_f32({8, 16, 1, 1}, 23))}, 1,
                                   "conv2");
  g.set_value_name(g.node(c2).outputs[0], "out");
  g.set_outputs({g.node(c2).outputs[0]});
  lay_out_and_check(g, {{"x", random_f32({1, 16, 6, 5}, 24)}});
  EXPECT_EQ(cpu::node_layout(*find_node(g, "scale")), "nhwc");
  for (const ir::Node* r : reorders(g)) EXPECT_EQ(r->inputs[0], find_node(g, "conv2")->outputs[0]);
}

// ConvNeXt's sandwich: a channels-last conv, Transpose to NHWC, LayerNorm over channels, Transpose
// back to NCHW, a conv. Both Transposes become byte copies of channels-last buffers (the compile
// stage then makes them views): no Reorder anywhere.
TEST(CpuLayout, NchwNhwcTransposesOfChannelsLastAreCopies) {
  ir::Graph g("convnext");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {1, 16, 5, 6}));
  const ir::NodeId c = g.add_node("Conv", {x, g.add_param("w", random_f32({16, 1, 3, 3}, 31))}, 1, "dw",
                                  {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{16}}});
  const ir::NodeId t1 = g.add_node("Transpose", {g.node(c).outputs[0]}, 1, "to_nhwc", {{"perm", Ints{0, 2, 3, 1}}});
  const ir::NodeId ln = g.add_node("LayerNormalization", {g.node(t1).outputs[0], g.add_param("gamma", random_f32({16}, 32))},
                                   1, "ln", {{"axis", int64_t{-1}}});
  const ir::NodeId t2 = g.add_node("Transpose", {g.node(ln).outputs[0]}, 1, "to_nchw", {{"perm", Ints{0, 3, 1, 2}}});
  const ir::NodeId c2 = g.add_node("Conv", {g.node(t2).outputs[0], g.add_param("w2", random_f32({8, 16, 1, 1}, 33))}, 1, "pw");
  g.set_value_name(g.node(c2).outputs[0], "y");
  g.set_outputs({g.node(c2).outputs[0]});
  lay_out_and_check(g, {{"x", random_f32({1, 16, 5, 6}, 34)}});
  EXPECT_EQ(cpu::node_layout(*find_node(g, "dw")), "nhwc");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "to_nhwc")), "");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "to_nchw")), "nhwc");
  EXPECT_EQ(cpu::node_layout(*find_node(g, "pw")), "");  // reads nhwc, writes the plain output
  EXPECT_TRUE(reorders(g).empty());
}

TEST(CpuLayout, ConcatOfBlockedBranchesAndBatchNorm) {
  ir::Graph g("branches");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {2, 4, 5, 5}));
  const ir::NodeId c1 =
      g.add_node("Conv", {x, g.add_param("w1", random_f32({16, 4, 1, 1}, 9))}, 1, "c1");
  const ir::NodeId c2 = g.add_node("Conv", {x, g.add_param("w2", random_f32({16, 4, 3, 3}, 10))}, 1,
                                   "c2", {{"pads", Ints{1, 1, 1, 1}}});
  const ir::NodeId cat = g.add_node("Concat", {g.node(c1).outputs[0], g.node(c2).outputs[0]}, 1,
                                    "cat", {{"axis", int64_t{1}}});
  const ir::NodeId bn =
      g.add_node("BatchNormalization",
                 {g.node(cat).outputs[0], g.add_param("s", random_f32({32}, 11)),
                  g.add_param("b", random_f32({32}, 12)), g.add_param("m", random_f32({32}, 13)),
                  g.add_param("v", random_f32({32}, 14, 0.5f, 2.f))},
                 1, "bn");
  const ir::NodeId gap = g.add_node("GlobalAveragePool", {g.node(bn).outputs[0]}, 1, "gap");
  g.set_outputs({g.node(gap).outputs[0], g.node(c1).outputs[0]});
  lay_out_and_check(g, {{"x", random_f32({2, 4, 5, 5}, 15)}});
  for (const char* n : {"c1", "c2", "cat", "bn", "gap"})
    EXPECT_EQ(cpu::node_layout(*find_node(g, n)), "nhwc") << n;
  EXPECT_EQ(reorders(g).size(), 2u);  // both outputs back to plain
}

TEST(CpuLayout, NothingToDoLeavesGraphUnchanged) {
  ir::Graph g("small");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF64, {1, 3, 5, 5}));
  const ir::NodeId c = g.add_node(
      "Conv", {x, g.add_param("w", random_f32({3, 3, 3, 3}, 16).cast(DType::kF64))}, 1, "conv");
  const ir::NodeId r = g.add_node("Relu", {g.node(c).outputs[0]}, 1, "relu");  // f64: stays plain
  g.set_outputs({g.node(r).outputs[0]});
  ASSERT_TRUE(ops::infer_types(g, ops_registry()).is_ok());
  const std::string before = ir::print_graph(g);
  auto changed = cpu::assign_layouts(g, ops_registry());
  ASSERT_TRUE(changed.has_value());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(ir::print_graph(g), before);
}

TEST(CpuLayout, BlockedTagFor) {
  EXPECT_EQ(cpu::blocked_tag_for(ir::TensorType::of(DType::kF32, {1, 32, 3, 3})), "nhwc");
  EXPECT_EQ(cpu::blocked_tag_for(ir::TensorType::of(DType::kF32, {1, 24, 3, 3})), "nhwc");
  EXPECT_EQ(cpu::blocked_tag_for(ir::TensorType::of(DType::kF32, {1, 3, 3, 3})), "nhwc");  // channels-last needs no padding
  EXPECT_EQ(cpu::blocked_tag_for(ir::TensorType::of(DType::kF64, {1, 16, 3, 3})), "");
  EXPECT_EQ(cpu::blocked_tag_for(ir::TensorType::of(DType::kF32, {16, 16})), "");
}

}  // namespace
}  // namespace tessera::cpu_test
