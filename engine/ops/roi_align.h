// RoiAlign's sampling, shared by the reference kernel (detection.cpp) and the CPU backend's
// vectorised RoiAlign (cpu/vec_detection.cpp), so both sample the same points with the same weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tessera::ops {

struct RoiAlignParams {
  int64_t oh = 1, ow = 1, sampling_ratio = 0;
  double spatial_scale = 1, offset = 0;  // offset 0.5: half_pixel; 0: output_half_pixel (opset 10)
};

// One sampling point: the four corners' offsets in an H x W plane and their bilinear weights;
// i1 < 0 when the point lies outside the image (its value is 0).
struct RoiSample {
  int64_t i1, i2, i3, i4;
  double w1, w2, w3, w4;
};

// The sampling points of region `r` (x1, y1, x2, y2 before spatial_scale), bin-major: oh * ow bins
// of `per_bin` points each; `count` is what an average divides by. Errors (no node named: the
// caller's): a region that is not finite, one needing more than 2^20 points per bin.
Status roi_align_samples(const double roi[4], int64_t r, const RoiAlignParams& p, int64_t H, int64_t W,
                         std::vector<RoiSample>& out, int64_t& per_bin, double& count);

}  // namespace tessera::ops
