// The limits every tensor type obeys, stated once. ops::infer_types checks them on every graph
// input, parameter and node output it types (overflow-safe), and the readers check what they
// decode against the same constants, so that kernels, the memory plan and writers can trust them
// (a Conv with pads of 2^62 once gave a dim of 4.6e18, a wrapped element count and negative FLOPs).
//
// Usage:
//   if (std::string why = ir::limits_violation(type); !why.empty()) return make_error("output 0: " + why);
#pragma once

#include <cstdint>
#include <string>

#include <vector>

#include "engine/core/status.h"
#include "engine/ir/type.h"

namespace tessera::ir {

inline constexpr int kMaxRank = 64;                        // NumPy 2's limit; every reader's
inline constexpr int64_t kMaxElements = int64_t{1} << 48;  // per tensor: 1 PiB of f32, past any machine
// Per node and run: 2^50 (1.1e15) FLOPs, days of this project's CPUs. A MaxPool whose window is
// 2^31 wide over 2^31 outputs (2^62 comparisons) typed fine and then ran for ever; ops::infer_types
// refuses such a node by its FLOPs (OpDef::flops), naming it.
inline constexpr double kMaxNodeFlops = 1125899906842624.0;

// Why `t` breaks a limit (its rank over kMaxRank, or the product of its known dims over
// kMaxElements, zero dims left out), or "" when it obeys them. Symbolic dims count as 1 (they are
// checked when bound).
std::string limits_violation(const TensorType& t);

// `rank` unknown dims, for an output whose rank is a count read from the model (the length of a
// shape input): an error past kMaxRank before anything is allocated (a shape input declared
// i64[2^31] once made type inference allocate 2^31 dims).
Expected<std::vector<Dim>> unknown_dims(int64_t rank);

}  // namespace tessera::ir
