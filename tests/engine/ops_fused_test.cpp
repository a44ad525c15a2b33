// Tests of engine/ops/fused.cpp: FusedConv, FusedMatMul and FusedGemm against hand-computed values,
// every activation against its formula, schema errors and FLOPs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ir/text.h"
#include "engine/ops/cost.h"
#include "engine/ops/infer.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Attributes;

Expected<std::vector<Tensor>> try_run(const std::string& op, const std::vector<const Tensor*>& in, Attributes attrs) {
  return runtime::run_single_op_with_absent(registry(), op, in, std::move(attrs));
}

TEST(FusedConv, BiasResidualRelu) {
  // 1x1 conv, 1 input channel -> 2 output channels, weights [1, -1], bias [0.5, 0.5].
  const Tensor x = f32({1, 1, 1, 3}, {1, 2, -3});
  const Tensor w = f32({2, 1, 1, 1}, {1, -1});
  const Tensor b = f32({2}, {0.5f, 0.5f});
  const Tensor z = f32({1, 2, 1, 3}, {0, -3, 0, 0, 0, -4});
  auto y = try_run("FusedConv", {&x, &w, &b, &z}, {{"activation", "Relu"}});
  ASSERT_TRUE(y) << y.error().to_string();
  // conv: [1, 2, -3] and [-1, -2, 3]; + 0.5: [1.5, 2.5, -2.5], [-0.5, -1.5, 3.5]; + z; relu.
  expect_values((*y)[0], {1, 2, 1, 3}, {1.5, 0, 0, 0, 0, 0});
  // No activation, no residual: plain Conv with bias.
  auto plain = try_run("FusedConv", {&x, &w, &b}, {});
  ASSERT_TRUE(plain);
  expect_values((*plain)[0], {1, 2, 1, 3}, {1.5, 2.5, -2.5, -0.5, -1.5, 3.5});
}

TEST(FusedConv, ResidualWithoutBiasAndConvAttributes) {
  const Tensor x = iota(DType::kF32, {1, 1, 3, 3});
  const Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  const Tensor z = f32({1, 1, 1, 1}, {-20});
  // stride 2, no padding: one window, sum of x[0..1][0..1] = 0 + 1 + 3 + 4 = 8; 8 - 20 = -12.
  auto y = try_run("FusedConv", {&x, &w, nullptr, &z},
                   {{"strides", std::vector<int64_t>{2, 2}}, {"activation", "LeakyRelu"}, {"activation_alpha", 0.5}});
  ASSERT_TRUE(y) << y.error().to_string();
  expect_values((*y)[0], {1, 1, 1, 1}, {-6});
}

TEST(FusedMatMul, BiasResidualActivation) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  const Tensor b = f32({2, 2}, {1, 0, 0, 1});
  const Tensor bias = f32({1, 2}, {10, -10});
  const Tensor z = f32({2, 2}, {1, 1, 1, 1});
  auto y = try_run("FusedMatMul", {&a, &b, &bias, &z},
                   {{"activation", "Clip"}, {"activation_alpha", 0.0}, {"activation_beta", 12.0}});
  ASSERT_TRUE(y) << y.error().to_string();
  // A + bias + 1 = [12, -7, 14, -5] clipped to [0, 12].
  expect_values((*y)[0], {2, 2}, {12, 0, 12, 0});
  // Batched A with an [N] bias.
  const Tensor a3 = iota(DType::kF32, {2, 1, 2});
  const Tensor b1 = f32({2}, {1, 2});
  auto y3 = try_run("FusedMatMul", {&a3, &b, &b1}, {});
  ASSERT_TRUE(y3) << y3.error().to_string();
  expect_values((*y3)[0], {2, 1, 2}, {1, 3, 3, 5});
}

TEST(FusedGemm, AlphaBetaTransposeAndResidual) {
  const Tensor a = f32({2, 1}, {1, 2});  // transA: op(A) = [1, 2]
  const Tensor b = f32({2, 2}, {1, 2, 3, 4});  // transB: op(B) = [[1, 3], [2, 4]]
  const Tensor c = f32({2}, {1, 1});
  const Tensor z = f32({1, 2}, {-100, 0});
  auto y = try_run("FusedGemm", {&a, &b, &c, &z},
                   {{"transA", 1}, {"transB", 1}, {"alpha", 2.0}, {"beta", 3.0}, {"activation", "Relu"}});
  ASSERT_TRUE(y) << y.error().to_string();
  // op(A) op(B) = [5, 11]; * 2 + 3 = [13, 25]; + z = [-87, 25]; relu.
  expect_values((*y)[0], {1, 2}, {0, 25});
}

TEST(Fused, EveryActivationMatchesItsFormula) {
  const std::vector<float> xs = {-4, -1.5f, -0.25f, 0, 0.5f, 2, 5};
  const Tensor a = f32({7, 1}, xs);
  const Tensor one = f32({1, 1}, {1});
  auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  const std::vector<std::pair<std::string, std::function<double(double)>>> acts = {
      {"Relu", [](double x) { return x < 0 ? 0 : x; }},
      {"LeakyRelu", [](double x) { return x < 0 ? 0.2 * x : x; }},
      {"Clip", [](double x) { return std::min(std::max(x, -1.0), 1.0); }},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Gelu", gelu},
      {"HardSwish", [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }},
      {"HardSigmoid", [](double x) { return std::min(std::max(0.2 * x + 1.0, 0.0), 1.0); }},
      {"Swish", [](double x) { return x / (1 + std::exp(-0.2 * x)); }},
  };
  for (const auto& [name, f] : acts) {
    auto y = try_run("FusedMatMul", {&a, &one},
                     {{"activation", name}, {"activation_alpha", name == "Clip" ? -1.0 : 0.2}, {"activation_beta", 1.0}});
    ASSERT_TRUE(y) << name << ": " << y.error().to_string();
    std::vector<double> want;
    for (float x : xs) want.push_back(f(x));
    SCOPED_TRACE(name);
    expect_values((*y)[0], {7, 1}, want, 1e-6);
  }
}

TEST(Fused, F64AndF16) {
  const Tensor a = Tensor::from_vector<double>({1, 2}, {1, -2});
  const Tensor b = Tensor::from_vector<double>({2, 1}, {1, 1});
  auto y = try_run("FusedMatMul", {&a, &b}, {{"activation", "Relu"}});
  ASSERT_TRUE(y);
  EXPECT_EQ((*y)[0].dtype(), DType::kF64);
  expect_values((*y)[0], {1, 1}, {0});
  const Tensor ah = a.cast(DType::kF16), bh = b.cast(DType::kF16);
  const Tensor zh = Tensor::from_vector<double>({1, 1}, {3}).cast(DType::kF16);
  auto yh = try_run("FusedMatMul", {&ah, &bh, nullptr, &zh}, {{"activation", "Relu"}});
  ASSERT_TRUE(yh) << yh.error().to_string();
  EXPECT_EQ((*yh)[0].dtype(), DType::kF16);
  expect_values((*yh)[0], {1, 1}, {2});
}

TEST(Fused, SchemaErrors) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  auto bad_act = try_run("FusedMatMul", {&a, &a}, {{"activation", "Softsign"}});
  ASSERT_FALSE(bad_act);
  EXPECT_NE(bad_act.error().message.find("attribute 'activation' is 'Softsign'"), std::string::npos);
  const Tensor z = f32({1, 2}, {1, 2});
  auto bad_z = try_run("FusedMatMul", {&a, &a, nullptr, &z}, {});
  ASSERT_FALSE(bad_z);
  EXPECT_NE(bad_z.error().message.find("input 'Z'"), std::string::npos) << bad_z.error().message;
  const Tensor bias = f32({2, 1}, {1, 2});
  auto bad_bias = try_run("FusedMatMul", {&a, &a, &bias}, {});
  ASSERT_FALSE(bad_bias);
  EXPECT_NE(bad_bias.error().message.find("input 'Bias'"), std::string::npos) << bad_bias.error().message;
  const Tensor zd = Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(try_run("FusedMatMul", {&a, &a, nullptr, &zd}, {}));  // dtype
  // Conv's own checks still apply.
  const Tensor x = f32({1, 1, 2}, {1, 2});
  const Tensor w = f32({1, 2, 1}, {1, 1});
  EXPECT_FALSE(try_run("FusedConv", {&x, &w}, {}));
}

TEST(Fused, FlopsAddOnePerPostOp) {
  auto g = ir::parse_graph(R"(graph "g" {
  input %0 "a" : f32[4, 3]
  input %1 "z" : f32[4, 2]
  param %2 "b" : f32[3, 2] = tensor<f32[3, 2]> [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  param %3 "bias" : f32[2] = tensor<f32[2]> [1.0, 2.0]
  #0 = FusedMatMul(%0, %2, %3, %1) -> (%4 : f32[4, 2]) {activation = "Relu"}
  output %4
})");
  ASSERT_TRUE(g) << g.error().to_string();
  auto cost = ops::graph_cost(*g, registry());
  ASSERT_TRUE(cost) << cost.error().to_string();
  EXPECT_DOUBLE_EQ(cost->flops, 2.0 * 8 * 3 + 3 * 8);
}

TEST(Fused, SchemasMirrorTheBaseOps) {
  for (const char* name : {"FusedConv", "FusedMatMul", "FusedGemm"}) {
    const ops::OpDef* def = registry().find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->inputs.back().name, "Z");
    EXPECT_NE(def->find_attr("activation"), nullptr);
    EXPECT_FALSE(def->no_gradient_reason.empty());
  }
  EXPECT_NE(registry().find("FusedConv")->find_attr("group"), nullptr);
  EXPECT_NE(registry().find("FusedGemm")->find_attr("transB"), nullptr);
  EXPECT_EQ(registry().find("FusedMatMul")->inputs[2].name, "Bias");
}

}  // namespace
}  // namespace tessera
