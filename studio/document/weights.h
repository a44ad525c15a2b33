// Initial weights for params the studio creates, as PyTorch initialises nn.Linear and nn.Conv*
// by default, so that a graph built in the studio trains like its PyTorch twin.
//
// PyTorch's reset_parameters() draws the weight from kaiming_uniform(a = sqrt(5)), whose bound is
// gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + 5)): that is 1 / sqrt(fan_in); the bias is
// drawn from uniform(-1 / sqrt(fan_in), 1 / sqrt(fan_in)) with the weight's fan_in. So both are
// uniform(-b, b), b = 1 / sqrt(fan_in).
//
// Usage:
//   TRY(Tensor w, make_weight({6, 1, 5, 5}, WeightInit::kUniform, fan_in_of({6, 1, 5, 5}), 1));
//   TRY(Tensor b, make_weight({6}, WeightInit::kUniform, 25, 2));   // the weight's fan_in
#pragma once

#include <optional>

#include <cstdint>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

#include "engine/ir/graph.h"

namespace tessera::studio {

enum class WeightInit { kZeros, kUniform };

// An f32 tensor of `shape`: zeros, or uniform(-b, b) with b = 1 / sqrt(fan_in). The values come
// from std::mt19937_64 seeded with `seed` (53 random bits per value), so a seed gives the same
// tensor on every machine. Fails for a bad shape (negative or too large) or fan_in < 1 (uniform).
Expected<Tensor> make_weight(const Shape& shape, WeightInit init, int64_t fan_in, uint64_t seed);

// PyTorch's fan_in of a weight laid out [out, in, k...] (Linear, Conv): in * prod(k); for a
// rank-1 shape its only dimension; 1 for a scalar. Gemm without transB holds its weight [in, out]:
// its fan_in is shape[0], which the caller passes instead.
int64_t fan_in_of(const Shape& weight_shape);

// The shape a new weight for input `input` of node `n` most likely has, from what the graph
// already says, to pre-fill the Add Weight prompt: a Conv's bias has its weight's output channels,
// its weight the input's channels and the kernel_shape (16 output channels when nothing says),
// Gemm's C the columns of B, BatchNormalization's scale, bias, mean and variance the channels, a
// LayerNormalization's scale and bias the normalised dimension. Absent when nothing is known.
std::optional<Shape> suggested_weight_shape(const ir::Graph& g, const ir::Node& n, int input);

}  // namespace tessera::studio
