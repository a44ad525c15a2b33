// Pieces shared by the index, data-movement, nn-extra and loss op files (index_*.cpp,
// nn_more_*.cpp, loss_ops.cpp). Internal to engine/ops; register_index_ops and register_loss_ops
// (op_def.h) are the public entry points.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/ops/helpers.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {

// GatherElements, ScatterElements, GatherND, ScatterND, Compress, OneHot (index_ops.cpp registers
// them itself); NonZero, Unique, Trilu, ReverseSequence (index_select.cpp).
void register_index_select_ops(OpRegistry& registry);
// Pad, Tile, DepthToSpace, SpaceToDepth (index_move.cpp).
void register_index_move_ops(OpRegistry& registry);
// Resize (index_resize.cpp).
void register_resize_op(OpRegistry& registry);
// Scan (index_scan.cpp).
void register_scan_op(OpRegistry& registry);
// ConvTranspose, GlobalMaxPool (nn_more_conv.cpp).
void register_nn_more_conv_ops(OpRegistry& registry);
// InstanceNormalization, LRN, MeanVarianceNormalization (nn_more_norm.cpp).
void register_nn_more_norm_ops(OpRegistry& registry);

// A zero-filled tensor whose size is checked; errors name the node.
Expected<Tensor> make_tensor(DType dt, Shape shape, const ir::Node& node);

inline const std::byte* byte_data(const Tensor& t) {
  return static_cast<const std::byte*>(t.raw_data());
}
inline std::byte* byte_data(Tensor& t) {
  return static_cast<std::byte*>(t.raw_data());
}

// Row-major multi-index <-> flat offset helpers over a shape.
// Advances `idx` (same rank as shape) to the next position in row-major order.
void next_index(std::vector<int64_t>& idx, const Shape& shape);

// The i64 scalar value of a one-element integer tensor (i32 or i64, rank 0 or 1); `what` names
// it in errors.
Expected<int64_t> read_scalar_int(const Tensor& t, const ir::Node& node, const std::string& what);


}  // namespace tessera::ops
