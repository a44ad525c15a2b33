// Fusion and folding tests (engine/passes/fuse.cpp, fold_batchnorm.cpp, with the default pipeline):
// each graph is run with the reference executor on random inputs before and after the passes,
// and the outputs must agree within 1e-5 relative; the rewritten structure is checked too.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/passes/instrumentations.h"
#include "engine/passes/passes.h"
#include "tests/engine/op_test_util.h"

namespace tessera::passes {
namespace {

Tensor random_tensor(DType dt, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  return t;
}

// Parses `text` and gives every param random values in [-1, 1] (|x| + 0.1 for names containing
// "var"), except params whose names start with "keep_".
ir::Graph with_random_params(const std::string& text, std::mt19937& rng) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g) << g.error().to_string();
  for (ir::ValueId p : g->params()) {
    const Tensor& t = *g->param_data(p);
    if (g->value(p).name.rfind("keep_", 0) == 0) continue;
    Tensor r = random_tensor(t.dtype(), t.shape(), rng);
    if (g->value(p).name.find("var") != std::string::npos)
      for (int64_t i = 0; i < r.numel(); ++i) r.set(i, std::fabs(r.get(i)) + 0.1);
    g->set_param_data(p, r);
  }
  return *g;
}

std::map<std::string, int> op_counts(const ir::Graph& g) {
  std::map<std::string, int> c;
  for (ir::NodeId id : g.node_ids()) ++c[g.node(id).op];
  return c;
}

// Runs `pipeline` on `g` (verified), compares outputs on random feeds, returns the result graph.
ir::Graph optimise_and_compare(ir::Graph g, const std::string& pipeline, std::mt19937& rng) {
  EXPECT_TRUE(ops::infer_types(g, registry()).is_ok());
  runtime::Feeds feeds;
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    feeds[in.name] = random_tensor(in.type.dtype, in.type.static_shape(), rng);
  }
  auto before = runtime::run_reference(g, registry(), feeds);
  EXPECT_TRUE(before) << before.error().to_string();
  auto pm = PassManager::parse(pipeline, default_pass_registry());
  EXPECT_TRUE(pm);
  pm->add_instrumentation(std::make_unique<VerifierInstrumentation>(registry()));
  PassContext ctx{registry(), {}};
  auto changed = pm->run(g, ctx);
  EXPECT_TRUE(changed) << changed.error().to_string();
  auto after = runtime::run_reference(g, registry(), feeds);
  EXPECT_TRUE(after) << after.error().to_string() << "\n" << ir::print_graph(g);
  if (!before || !after) return g;
  EXPECT_EQ(before->size(), after->size());
  for (size_t i = 0; i < before->size() && i < after->size(); ++i) {
    const Tensor& b = (*before)[i];
    const Tensor& a = (*after)[i];
    EXPECT_EQ(a.shape(), b.shape());
    EXPECT_EQ(a.dtype(), b.dtype());
    for (int64_t k = 0; k < b.numel() && a.numel() == b.numel(); ++k)
      EXPECT_NEAR(a.get(k), b.get(k), 1e-5 * std::max(1.0, std::fabs(b.get(k)))) << "output " << i << " element " << k;
  }
  return g;
}

// "param %ID "NAME" : f32[SHAPE] = tensor<f32[SHAPE]> [0.0, ...]" (values randomised later).
std::string param(int id, const std::string& name, const Shape& shape) {
  const std::string type = "f32" + shape_to_string(shape);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string values;
  for (int64_t i = 0; i < n; ++i) values += (i ? ", " : "") + std::string("0.0");
  return "  param %" + std::to_string(id) + " \"" + name + "\" : " + type + " = tensor<" + type + "> [" + values + "]\n";
}

TEST(Fuse, ConvBatchNormResidualRelu) {
  std::mt19937 rng(1);
  const std::string text = "graph \"block\" {\n  input %0 \"x\" : f32[2, 3, 5, 5]\n  input %6 \"skip\" : f32[2, 4, 5, 5]\n" +
                           param(1, "w", {4, 3, 3, 3}) + param(2, "scale", {4}) + param(3, "shift", {4}) +
                           param(4, "mean", {4}) + param(5, "var", {4}) + R"(
  #0 "conv" = Conv(%0, %1) -> (%7 : f32[2, 4, 5, 5]) {pads = [1, 1, 1, 1]} origin "n0"
  #1 "bn" = BatchNormalization(%7, %2, %3, %4, %5) -> (%8 : f32[2, 4, 5, 5]) {epsilon = 0.001}
  #2 "add" = Add(%6, %8) -> (%9 : f32[2, 4, 5, 5])
  #3 "relu" = Relu(%9) -> (%10 "y" : f32[2, 4, 5, 5])
  output %10
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), kDefaultPipeline, rng);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"FusedConv", 1}}));
  const ir::Node& f = g.node(g.node_ids()[0]);
  EXPECT_EQ(f.name, "conv");
  EXPECT_EQ(f.provenance.origin, "n0");
  EXPECT_EQ(f.attr("activation")->s(), "Relu");
  ASSERT_EQ(f.inputs.size(), 4u);
  EXPECT_EQ(f.inputs[3], 6);  // the residual
  EXPECT_EQ(g.value(f.outputs[0]).name, "y");
  EXPECT_EQ(g.params().size(), 2u);  // folded weight and bias; the BN params are gone
  // from: the BN-folded Conv (#4, itself from #0 and #1), then the Add and the Relu.
  EXPECT_EQ(f.provenance.from, (std::vector<ir::NodeId>{4, 2, 3}));
}

TEST(Fuse, MatMulBiasGeluAndGemmBiasLeakyRelu) {
  std::mt19937 rng(2);
  const std::string text = "graph \"mlp\" {\n  input %0 \"x\" : f32[5, 6]\n" + param(1, "w1", {6, 4}) +
                           param(2, "b1", {4}) + param(3, "w2", {3, 4}) + param(4, "b2", {1, 3}) + R"(
  #0 "fc1" = MatMul(%0, %1) -> (%5 : f32[5, 4])
  #1 "bias1" = Add(%2, %5) -> (%6 : f32[5, 4])
  #2 "gelu" = Gelu(%6) -> (%7 : f32[5, 4])
  #3 "fc2" = Gemm(%7, %3) -> (%8 : f32[5, 3]) {transB = 1, alpha = 0.5, beta = 7.0}
  #4 "bias2" = Add(%8, %4) -> (%9 : f32[5, 3])
  #5 "act" = LeakyRelu(%9) -> (%10 "y" : f32[5, 3]) {alpha = 0.2}
  output %10
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fuse,dce", rng);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"FusedGemm", 1}, {"FusedMatMul", 1}}));
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    if (n.op == "FusedGemm") {
      EXPECT_EQ(n.attr("activation")->s(), "LeakyRelu");
      EXPECT_DOUBLE_EQ(n.attr("activation_alpha")->f(), 0.2);
      EXPECT_DOUBLE_EQ(n.attr("beta")->f(), 1.0);  // C was absent: the bias comes in with beta 1
      EXPECT_EQ(n.provenance.from, (std::vector<ir::NodeId>{3, 4, 5}));
    } else {
      EXPECT_EQ(n.attr("activation")->s(), "Gelu");
      EXPECT_EQ(n.inputs.size(), 3u);  // A, B, Bias
    }
  }
}

TEST(Fuse, ConvClipWithExistingBiasAndBiasAdd) {
  std::mt19937 rng(3);
  const std::string text = "graph \"c\" {\n  input %0 \"x\" : f32[1, 2, 4, 4]\n" + param(1, "w", {3, 2, 2, 2}) +
                           param(2, "b", {3}) + param(3, "cb", {1, 3, 1, 1}) + R"(
  param %4 "keep_lo" : f32[] = tensor<f32[]> [-0.25]
  param %5 "keep_hi" : f32[] = tensor<f32[]> [0.5]
  #0 "conv" = Conv(%0, %1, %2) -> (%6 : f32[1, 3, 3, 3])
  #1 "bias" = Add(%6, %3) -> (%7 : f32[1, 3, 3, 3])
  #2 "clip" = Clip(%7, %4, %5) -> (%8 "y" : f32[1, 3, 3, 3])
  output %8
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fuse,dce", rng);
  ASSERT_EQ(op_counts(g), (std::map<std::string, int>{{"FusedConv", 1}}));
  const ir::Node& f = g.node(g.node_ids()[0]);
  EXPECT_DOUBLE_EQ(f.attr("activation_alpha")->f(), -0.25);
  EXPECT_DOUBLE_EQ(f.attr("activation_beta")->f(), 0.5);
  EXPECT_EQ(f.inputs.size(), 3u);
}

TEST(Fuse, LeavesSharedValuesAndUnsupportedPatternsAlone) {
  std::mt19937 rng(4);
  const std::string text = "graph \"n\" {\n  input %0 \"x\" : f32[1, 2, 3, 3]\n  input %9 \"a\" : f32[2, 2]\n" +
                           param(1, "w", {2, 2, 1, 1}) + param(2, "wide", {1, 2, 3, 3}) + R"(
  #0 "conv" = Conv(%0, %1) -> (%3 : f32[1, 2, 3, 3])
  #1 "u1" = Relu(%3) -> (%4 "u1" : f32[1, 2, 3, 3])
  #2 "u2" = Tanh(%3) -> (%5 "u2" : f32[1, 2, 3, 3])
  #3 "conv2" = Conv(%0, %1) -> (%6 : f32[1, 2, 3, 3])
  #4 "not_bias" = Add(%6, %2) -> (%7 "v" : f32[1, 2, 3, 3])
  #5 "mm" = MatMul(%9, %9) -> (%10 : f32[2, 2])
  #6 "sq" = Add(%10, %10) -> (%11 "w" : f32[2, 2])
  output %4, %5, %7, %11
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fuse,dce", rng);
  // conv has two users; conv2's Add is a constant that is not a per-channel bias; mm + mm is not
  // a residual (the same value twice).
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"Add", 2}, {"Conv", 2}, {"MatMul", 1}, {"Relu", 1}, {"Tanh", 1}}));
}

TEST(FoldBatchNorm, GemmTransBAndMatMul) {
  std::mt19937 rng(5);
  const std::string text = "graph \"bn\" {\n  input %0 \"x\" : f32[3, 4]\n" + param(1, "w", {5, 4}) + param(2, "c", {5}) +
                           param(3, "s1", {5}) + param(4, "t1", {5}) + param(5, "m1", {5}) + param(6, "var1", {5}) +
                           param(7, "w2", {5, 2}) + param(8, "s2", {2}) + param(9, "t2", {2}) + param(10, "m2", {2}) +
                           param(11, "var2", {2}) + R"(
  #0 "gemm" = Gemm(%0, %1, %2) -> (%12 : f32[3, 5]) {transB = 1, beta = 0.5, alpha = 2.0}
  #1 "bn1" = BatchNormalization(%12, %3, %4, %5, %6) -> (%13 : f32[3, 5])
  #2 "mm" = MatMul(%13, %7) -> (%14 : f32[3, 2])
  #3 "bn2" = BatchNormalization(%14, %8, %9, %10, %11) -> (%15 "y" : f32[3, 2])
  output %15
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fold-batchnorm,dce", rng);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"Gemm", 2}}));
  for (ir::NodeId id : g.node_ids()) EXPECT_DOUBLE_EQ(g.node(id).attr("beta")->f(), 1.0);
}

TEST(FoldBatchNorm, KeepsBatchNormWhenConvOutputIsShared) {
  std::mt19937 rng(6);
  const std::string text = "graph \"bn\" {\n  input %0 \"x\" : f32[1, 2, 2, 2]\n" + param(1, "w", {2, 2, 1, 1}) +
                           param(2, "s", {2}) + param(3, "t", {2}) + param(4, "m", {2}) + param(5, "var", {2}) + R"(
  #0 "conv" = Conv(%0, %1) -> (%6 "c" : f32[1, 2, 2, 2])
  #1 "bn" = BatchNormalization(%6, %2, %3, %4, %5) -> (%7 "y" : f32[1, 2, 2, 2])
  output %6, %7
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fold-batchnorm", rng);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"BatchNormalization", 1}, {"Conv", 1}}));
}

TEST(DefaultPipeline, FoldsAndSimplifiesWithoutChangingResults) {
  std::mt19937 rng(7);
  const std::string text = "graph \"p\" {\n  input %0 \"x\" : f32[2, 3, 4]\n" + param(1, "k", {4}) + R"(
  param %2 "keep_zero" : f32[4] = tensor<f32[4]> [0.0, 0.0, 0.0, 0.0]
  param %3 "keep_axes" : i64[1] = tensor<i64[1]> [0]
  param %4 "keep_tail" : i64[1] = tensor<i64[1]> [-1]
  #0 "t1" = Transpose(%0) -> (%5 : f32[4, 3, 2]) {perm = [2, 1, 0]}
  #1 "t2" = Transpose(%5) -> (%6 : f32[3, 2, 4]) {perm = [1, 2, 0]}
  #2 "z" = Add(%6, %2) -> (%7 : f32[3, 2, 4])
  #3 "shape" = Shape(%7) -> (%8 : i64[3])
  #4 "g" = Gather(%8, %3) -> (%9 : i64[1]) {axis = 0}
  #5 "cat" = Concat(%9, %4) -> (%10 : i64[2]) {axis = 0}
  #6 "r" = Reshape(%7, %10) -> (%11 : f32[3, 8])
  #7 "k2" = Mul(%1, %1) -> (%12 : f32[4])
  #8 "sq" = Mul(%7, %12) -> (%13 "y" : f32[3, 2, 4])
  output %11, %13
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), kDefaultPipeline, rng);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"Mul", 1}, {"Reshape", 1}, {"Transpose", 1}}));
}

// ---- fuse-patterns (engine/passes/fuse_patterns.cpp) ----

TEST(FusePatterns, SwishAndHardSwish) {
  std::mt19937 rng(11);
  const std::string text = R"(graph "act" {
  input %0 "x" : f32[2, 3]
  #0 "sig" = Sigmoid(%0) -> (%1 : f32[2, 3])
  #1 "silu" = Mul(%0, %1) -> (%2 "a" : f32[2, 3])
  #2 "hsig" = HardSigmoid(%2) -> (%3 : f32[2, 3]) {alpha = 0.16666667, beta = 0.5}
  #3 "hswish" = Mul(%3, %2) -> (%4 "b" : f32[2, 3])
  #4 "gate" = HardSigmoid(%4) -> (%5 : f32[2, 3])
  #5 "not_hswish" = Mul(%4, %5) -> (%6 "c" : f32[2, 3])
  output %6
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fuse-patterns,dce", rng);
  // The last HardSigmoid has ONNX's default alpha 0.2: not HardSwish's 1/6, so it stays.
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"HardSigmoid", 1}, {"HardSwish", 1}, {"Mul", 1}, {"Swish", 1}}));
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    if (n.op == "Swish") {
      EXPECT_EQ(n.provenance.from, (std::vector<ir::NodeId>{0, 1}));
    } else if (n.op == "HardSwish") {
      EXPECT_EQ(g.value(n.outputs[0]).name, "b");
    }
  }
}

TEST(FusePatterns, GeluInBothMulOrders) {
  std::mt19937 rng(12);
  const std::string text = R"(graph "gelu" {
  input %0 "x" : f32[4, 5]
  param %1 "keep_sqrt2" : f32[] = tensor<f32[]> [1.4142135]
  param %2 "keep_one" : f32[] = tensor<f32[]> [1.0]
  param %3 "keep_half" : f32[] = tensor<f32[]> [0.5]
  param %4 "keep_inv_sqrt2" : f32[] = tensor<f32[]> [0.70710677]
  #0 "div" = Div(%0, %1) -> (%5 : f32[4, 5])
  #1 "erf" = Erf(%5) -> (%6 : f32[4, 5])
  #2 "add" = Add(%6, %2) -> (%7 : f32[4, 5])
  #3 "mul" = Mul(%0, %7) -> (%8 : f32[4, 5])
  #4 "half" = Mul(%8, %3) -> (%9 "a" : f32[4, 5])
  #5 "scale" = Mul(%9, %4) -> (%10 : f32[4, 5])
  #6 "erf2" = Erf(%10) -> (%11 : f32[4, 5])
  #7 "add2" = Add(%2, %11) -> (%12 : f32[4, 5])
  #8 "half2" = Mul(%12, %3) -> (%13 : f32[4, 5])
  #9 "mul2" = Mul(%9, %13) -> (%14 "b" : f32[4, 5])
  output %14
})";
  const ir::Graph g = optimise_and_compare(with_random_params(text, rng), "fuse-patterns,dce", rng);
  EXPECT_EQ(op_counts(g), (std::map<std::string, int>{{"Gelu", 2}}));
  EXPECT_TRUE(g.params().empty());
}

std::string layer_norm_text(bool expose_centered) {
  return "graph \"ln\" {\n  input %0 \"x\" : f32[2, 3, 8]\n" + param(1, "gamma", {8}) + param(2, "beta", {8}) + R"(
  param %3 "keep_two" : f32[] = tensor<f32[]> [2.0]
  param %4 "keep_eps" : f32[] = tensor<f32[]> [1e-05]
  #0 "mean" = ReduceMean(%0) -> (%5 : f32[2, 3, 1]) {axes = [-1]}
  #1 "sub" = Sub(%0, %5) -> (%6 : f32[2, 3, 8])
  #2 "pow" = Pow(%6, %3) -> (%7 : f32[2, 3, 8])
  #3 "var" = ReduceMean(%7) -> (%8 : f32[2, 3, 1]) {axes = [-1]}
  #4 "eps" = Add(%8, %4) -> (%9 : f32[2, 3, 1])
  #5 "sqrt" = Sqrt(%9) -> (%10 : f32[2, 3, 1])
  #6 "div" = Div(%6, %10) -> (%11 : f32[2, 3, 8])
  #7 "scale" = Mul(%11, %1) -> (%12 : f32[2, 3, 8])
  #8 "shift" = Add(%12, %2) -> (%13 "y" : f32[2, 3, 8])
  output %13)" + std::string(expose_centered ? ", %6" : "") + "\n}";
}

TEST(FusePatterns, LayerNormalization) {
  std::mt19937 rng(13);
  const ir::Graph g = optimise_and_compare(with_random_params(layer_norm_text(false), rng), "fuse-patterns,dce", rng);
  ASSERT_EQ(op_counts(g), (std::map<std::string, int>{{"LayerNormalization", 1}}));
  const ir::Node& n = g.node(g.node_ids()[0]);
  EXPECT_EQ(n.attr("axis")->i(), -1);
  EXPECT_NEAR(n.attr("epsilon")->f(), 1e-5, 1e-12);
  EXPECT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.provenance.from.size(), 9u);
  EXPECT_EQ(g.value(n.outputs[0]).name, "y");
  // x - mean also read elsewhere (a graph output here, a gradient in training): left alone.
  std::mt19937 rng2(14);
  const ir::Graph kept =
      optimise_and_compare(with_random_params(layer_norm_text(true), rng2), "fuse-patterns,dce", rng2);
  EXPECT_EQ(op_counts(kept).count("LayerNormalization"), 0u);
}

}  // namespace
}  // namespace tessera::passes
