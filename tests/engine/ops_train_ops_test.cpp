// The training ops against hand-computed values: SumToShape, SGDUpdate (plain, momentum, Nesterov,
// weight decay: torch.optim.SGD's formulas) and AdamUpdate (Adam and AdamW, bias-corrected).
#include <cmath>

#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

TEST(SumToShape, SumsBroadcastDims) {
  const Tensor g = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run("SumToShape", {g, Tensor::from_vector<int64_t>({1}, {3})})[0], {3}, {5, 7, 9});
  expect_values(run("SumToShape", {g, Tensor::from_vector<int64_t>({2}, {2, 1})})[0], {2, 1}, {6, 15});
  expect_values(run("SumToShape", {g, Tensor::from_vector<int64_t>({0}, {})})[0], {}, {21});
  auto bad = runtime::run_single_op(registry(), "SumToShape", {g, Tensor::from_vector<int64_t>({1}, {2})});
  EXPECT_FALSE(bad.has_value());
}

TEST(SGDUpdate, MomentumNesterovAndWeightDecay) {
  const Tensor p = f32({2}, {1.0f, -2.0f}), g = f32({2}, {0.5f, 0.25f}), lr = Tensor::scalar<float>(0.1f);
  // Plain: p - lr * g.
  auto r = run("SGDUpdate", {p, g, lr}, {}, 2);
  expect_values(r[0], {2}, {0.95, -2.025}, 1e-6);
  // Momentum 0.9 from buffer b = [1, 1]: buf = 0.9 b + g; p - lr * buf.
  const Tensor b = f32({2}, {1.0f, 1.0f});
  r = run("SGDUpdate", {p, g, lr, b}, {{"momentum", 0.9}}, 2);
  expect_values(r[1], {2}, {1.4, 1.15}, 1e-6);
  expect_values(r[0], {2}, {1.0 - 0.14, -2.0 - 0.115}, 1e-6);
  // Nesterov: p - lr * (g + 0.9 buf).
  r = run("SGDUpdate", {p, g, lr, b}, {{"momentum", 0.9}, {"nesterov", int64_t{1}}}, 2);
  expect_values(r[0], {2}, {1.0 - 0.1 * (0.5 + 0.9 * 1.4), -2.0 - 0.1 * (0.25 + 0.9 * 1.15)}, 1e-6);
  // Weight decay 0.1 adds 0.1 p to the gradient.
  r = run("SGDUpdate", {p, g, lr}, {{"weight_decay", 0.1}}, 2);
  expect_values(r[0], {2}, {1.0 - 0.1 * 0.6, -2.0 - 0.1 * 0.05}, 1e-6);
  // grad_scale (data parallel's 1/ranks) scales the gradient before the decay and the momentum:
  // buf = 0.9 b + g / 4 + 0.1 p.
  r = run("SGDUpdate", {p, g, lr, b}, {{"momentum", 0.9}, {"weight_decay", 0.1}, {"grad_scale", 0.25}}, 2);
  expect_values(r[1], {2}, {0.9 + 0.125 + 0.1, 0.9 + 0.0625 - 0.2}, 1e-6);
}

TEST(AdamUpdate, BiasCorrectedAndDecoupled) {
  const Tensor p = f32({1}, {1.0f}), g = f32({1}, {0.5f}), lr = Tensor::scalar<float>(0.01f);
  const Tensor zero = f32({1}, {0.0f}), step1 = Tensor::scalar<float>(1.0f);
  // First step from zero moments: m = 0.05, v = 0.00025; mh = 0.5, vh = 0.25: p - 0.01 * 0.5 / (0.5 + 1e-8).
  auto r = run("AdamUpdate", {p, g, lr, step1, zero, zero}, {}, 3);
  expect_values(r[1], {1}, {0.05}, 1e-7);
  expect_values(r[2], {1}, {0.00025}, 1e-9);
  expect_values(r[0], {1}, {1.0 - 0.01 * 0.5 / (0.5 + 1e-8)}, 1e-7);
  // AdamW: p * (1 - lr * wd) first, gradient untouched.
  r = run("AdamUpdate", {p, g, lr, step1, zero, zero}, {{"weight_decay", 0.1}, {"decoupled", int64_t{1}}}, 3);
  expect_values(r[0], {1}, {1.0 * (1 - 0.001) - 0.01 * 0.5 / (0.5 + 1e-8)}, 1e-7);
  // Adam with L2: gradient 0.5 + 0.1 * 1 = 0.6; the first step is still lr * sign.
  r = run("AdamUpdate", {p, g, lr, step1, zero, zero}, {{"weight_decay", 0.1}}, 3);
  expect_values(r[1], {1}, {0.06}, 1e-7);
  // grad_scale 1/2 halves the gradient first: m = 0.1 * (0.25 + 0.1).
  r = run("AdamUpdate", {p, g, lr, step1, zero, zero}, {{"weight_decay", 0.1}, {"grad_scale", 0.5}}, 3);
  expect_values(r[1], {1}, {0.035}, 1e-7);
  // Step 0 is refused.
  auto bad = runtime::run_single_op(registry(), "AdamUpdate", {p, g, lr, Tensor::scalar<float>(0.f), zero, zero}, {}, 3);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("step must be >= 1"), std::string::npos);
}

}  // namespace
}  // namespace tessera
