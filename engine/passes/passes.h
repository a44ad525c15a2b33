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
#pragma once

#include <cstdint>
#include <memory>

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

}  // namespace tessera::passes
