// The built-in passes, one small class each (one file per pass). default_pass_registry()
// (pass_manager.h) registers all of them under these names:
//
//   dce             remove nodes whose outputs reach no graph output, and unused params
//   constant-fold   evaluate nodes whose inputs are all constants; Shape of a static type
//   cse             merge identical nodes and identical small params
//   canonicalize    algebraic simplification rules indexed by op type, to a fixed point
//   fold-batchnorm  inference BatchNormalization into the preceding Conv / Gemm / MatMul weights
//   fuse-patterns   decomposed Swish, HardSwish, Gelu and LayerNormalization -> those ops
//   fuse            Conv / MatMul / Gemm + bias Add + residual Add + activation -> Fused* ops
//   widen-f16       float16 models computed in float32
//
// And folded_graph_cost, the cost that `tessera info` and the studio show.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/ops/cost.h"
#include "engine/passes/pass_manager.h"

namespace tessera::passes {

std::unique_ptr<Pass> make_dce_pass();
// Results larger than `max_result_bytes` are left unfolded (they would bloat the weights).
inline constexpr int64_t kDefaultFoldLimitBytes = int64_t{64} << 20;
std::unique_ptr<Pass> make_constant_fold_pass(int64_t max_result_bytes = kDefaultFoldLimitBytes);
// Params up to `max_param_bytes` are compared by value and merged.
inline constexpr int64_t kDefaultCseParamBytes = int64_t{1} << 16;
std::unique_ptr<Pass> make_cse_pass(int64_t max_param_bytes = kDefaultCseParamBytes);
std::unique_ptr<Pass> make_canonicalize_pass();
std::unique_ptr<Pass> make_fold_batchnorm_pass();
std::unique_ptr<Pass> make_fuse_patterns_pass();
std::unique_ptr<Pass> make_fuse_pass();
std::unique_ptr<Pass> make_qdq_fuse_pass();
std::unique_ptr<Pass> make_widen_f16_pass();

// ops::graph_cost with every symbolic or unknown input dimension bound (`sizes` by symbol, else
// `default_size`), after folding what those sizes make constant: exporters compute Reshape targets
// from Shape -> Gather -> Concat chains, and without folding every dimension after them is unknown
// and counts 0 FLOPs (Swin-T: 32 MFLOPs instead of 4.5 G multiply-adds). Parameters and op counts
// are the unfolded graph's; FLOPs by node are keyed by the graph's own node ids.
Expected<ops::GraphCost> folded_graph_cost(const ir::Graph& graph, const ops::OpRegistry& registry,
                                           const std::map<std::string, int64_t>& sizes = {}, int64_t default_size = 1);

}  // namespace tessera::passes
