// Resize's per-axis interpolation taps, shared by the reference kernel (index_resize.cpp) and the
// CPU backend's vectorised Resize, so both compute with the same coordinates and weights.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::ops {

// One axis: for each output coordinate o, the input positions at[o] and their weights w[o];
// outside[o] when the element takes extrapolation_value (tf_crop_and_resize only).
struct ResizeAxisTaps {
  std::vector<std::vector<int64_t>> at;
  std::vector<std::vector<double>> w;
  std::vector<bool> outside;
};

// The taps of every axis of a Resize from an `in` to an `out` shape with `scales` per axis (as the
// reference kernel derives them from 'scales' or 'sizes') and `roi` (2 * rank: starts, then ends).
// Errors name the node (an attribute value Resize does not define).
Expected<std::vector<ResizeAxisTaps>> resize_taps(const ir::Node& node, const AttrReader& attrs,
                                                  const std::vector<int64_t>& in,
                                                  const std::vector<int64_t>& out,
                                                  const std::vector<double>& scales,
                                                  const std::vector<double>& roi);

}  // namespace tessera::ops
