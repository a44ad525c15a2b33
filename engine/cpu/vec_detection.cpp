// Detection kernels: RoiAlign on plain f32 (Faster R-CNN's box and mask heads).
//
// The reference kernel computes in double, region by region and channel by channel; with
// Faster R-CNN's 1,000 regions of 256 channels it took 67 ms a call (2 calls a run, most of the
// model's time). Here the sampling points and bilinear weights of a region are computed once and
// applied to every channel in float, regions split over the team. Same sampling as the reference
// kernel (engine/ops/detection.cpp): results agree to float rounding.
#include <cmath>
#include <vector>

#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

struct Sample {
  int32_t i1, i2, i3, i4;  // corner offsets in the plane; i1 < 0: outside the image (value 0)
  float w1, w2, w3, w4;
};

Expected<KernelPtr> make_roi_align(const KernelInit& init) {
  const std::string impl = "cpu.vec:roi_align";
  if (!plain_static(init) || init.in_types.size() != 3 || init.out_types.size() != 1) return decline(init, impl, "needs plain static types");
  const ir::TensorType *xt = init.in_types[0], *rt = init.in_types[1], *bt = init.in_types[2];
  if (!xt || !rt || !bt || xt->dtype != DType::kF32 || rt->dtype != DType::kF32 || bt->dtype != DType::kI64 || xt->rank() != 4 ||
      rt->rank() != 2)
    return decline(init, impl, "needs f32 X [N, C, H, W], f32 rois [R, 4], i64 batch_indices");
  const Shape xs = xt->static_shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], R = rt->static_shape()[0];
  if (H * W > (int64_t{1} << 31)) return decline(init, impl, "plane over 2^31 elements");
  const ops::AttrReader a = init.attrs();
  const int64_t oh = a.i("output_height"), ow = a.i("output_width"), sr = a.i("sampling_ratio");
  const double scale = a.f("spatial_scale");
  const bool avg = a.s("mode") == "avg";
  const double offset = a.s("coordinate_transformation_mode") == "half_pixel" ? 0.5 : 0.0;
  const std::string node = init.node.name;
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    const float* rois = static_cast<const float*>(run.inputs[1].data);
    const int64_t* batch = static_cast<const int64_t*>(run.inputs[2].data);
    float* y = static_cast<float*>(run.outputs[0].data);
    // Errors as the reference kernel gives them, found before any work.
    for (int64_t r = 0; r < R; ++r) {
      if (batch[r] < 0 || batch[r] >= N)
        return make_error("batch_indices[" + std::to_string(r) + "] = " + std::to_string(batch[r]) + " is outside [0, " +
                          std::to_string(N) + ")");
      for (int k = 0; k < 4; ++k)
        if (!std::isfinite(static_cast<double>(rois[r * 4 + k]) * scale - offset))
          return make_error("rois[" + std::to_string(r) + "] is not finite");
    }
    Status failed = Status::ok();
#pragma omp parallel
    {
      std::vector<Sample> samples;
#pragma omp for schedule(dynamic, 4)
      for (int64_t r = 0; r < R; ++r) {
        const double x1 = rois[r * 4] * scale - offset, y1 = rois[r * 4 + 1] * scale - offset;
        const double x2 = rois[r * 4 + 2] * scale - offset, y2 = rois[r * 4 + 3] * scale - offset;
        double rw = x2 - x1, rh = y2 - y1;
        if (offset == 0) {
          rw = std::max(rw, 1.0);
          rh = std::max(rh, 1.0);
        }
        const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
        const double gh_d = sr > 0 ? static_cast<double>(sr) : std::ceil(rh / static_cast<double>(oh));
        const double gw_d = sr > 0 ? static_cast<double>(sr) : std::ceil(rw / static_cast<double>(ow));
        if (gh_d * gw_d > static_cast<double>(1 << 20)) {
#pragma omp critical
          failed = make_error("region " + std::to_string(r) + " needs " + std::to_string(gh_d * gw_d) +
                              " samples per bin (at most 2^20)");
          continue;
        }
        const int64_t gh = static_cast<int64_t>(std::max(gh_d, 0.0)), gw = static_cast<int64_t>(std::max(gw_d, 0.0));
        const float inv_count = 1.0f / static_cast<float>(std::max<int64_t>(gh * gw, 1));
        samples.clear();
        for (int64_t ph = 0; ph < oh; ++ph)
          for (int64_t pw = 0; pw < ow; ++pw)
            for (int64_t iy = 0; iy < gh; ++iy) {
              const double yy = y1 + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
              for (int64_t ix = 0; ix < gw; ++ix) {
                const double xx = x1 + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
                if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) {
                  samples.push_back({-1, 0, 0, 0, 0, 0, 0, 0});
                  continue;
                }
                double yc = std::max(yy, 0.0), xc = std::max(xx, 0.0);
                int64_t y0 = static_cast<int64_t>(yc), x0 = static_cast<int64_t>(xc), yh, xh;
                if (y0 >= H - 1) {
                  yh = y0 = H - 1;
                  yc = static_cast<double>(y0);
                } else {
                  yh = y0 + 1;
                }
                if (x0 >= W - 1) {
                  xh = x0 = W - 1;
                  xc = static_cast<double>(x0);
                } else {
                  xh = x0 + 1;
                }
                const double ly = yc - y0, lx = xc - x0, hy = 1 - ly, hx = 1 - lx;
                samples.push_back({static_cast<int32_t>(y0 * W + x0), static_cast<int32_t>(y0 * W + xh),
                                   static_cast<int32_t>(yh * W + x0), static_cast<int32_t>(yh * W + xh),
                                   static_cast<float>(hy * hx), static_cast<float>(hy * lx), static_cast<float>(ly * hx),
                                   static_cast<float>(ly * lx)});
              }
            }
        const int64_t per_bin = gh * gw;
        for (int64_t c = 0; c < C; ++c) {
          const float* plane = x + (batch[r] * C + c) * H * W;
          float* out = y + (r * C + c) * oh * ow;
          for (int64_t bin = 0; bin < oh * ow; ++bin) {
            const Sample* sm = samples.data() + bin * per_bin;
            float acc = 0;
            for (int64_t k = 0; k < per_bin; ++k) {
              float v = 0;
              if (sm[k].i1 >= 0) {
                const float v1 = plane[sm[k].i1], v2 = plane[sm[k].i2], v3 = plane[sm[k].i3], v4 = plane[sm[k].i4];
                v = avg ? sm[k].w1 * v1 + sm[k].w2 * v2 + sm[k].w3 * v3 + sm[k].w4 * v4
                        : std::max(std::max(sm[k].w1 * v1, sm[k].w2 * v2), std::max(sm[k].w3 * v3, sm[k].w4 * v4));
              }
              acc = avg ? acc + v : (k == 0 ? v : std::max(acc, v));
            }
            out[bin] = avg ? acc * inv_count : acc;
          }
        }
      }
    }
    return failed;
  });
}

}  // namespace

void register_vec_detection(KernelRegistry& registry) {
  registry.add("RoiAlign", "cpu.vec:roi_align", kVecPriority, make_roi_align);
}

}  // namespace tessera::cpu
