// Detection kernels: RoiAlign on plain f32 (Faster R-CNN's box and mask heads).
//
// The reference kernel computes in double, region by region and channel by channel; with
// Faster R-CNN's 1,000 regions of 256 channels it took 67 ms a call (2 calls a run, most of the
// model's time). Here the sampling points and bilinear weights of a region are computed once and
// applied to every channel in float, regions split over the team. The sampling is the reference
// kernel's own (engine/ops/roi_align.h): results agree to float rounding.
#include <cmath>
#include <vector>

#include "engine/cpu/vec_internal.h"
#include "engine/ops/roi_align.h"

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
  ops::RoiAlignParams p;
  p.oh = a.i("output_height");
  p.ow = a.i("output_width");
  p.sampling_ratio = a.i("sampling_ratio");
  p.spatial_scale = a.f("spatial_scale");
  p.offset = a.s("coordinate_transformation_mode") == "half_pixel" ? 0.5 : 0.0;
  const int64_t oh = p.oh, ow = p.ow;
  const bool avg = a.s("mode") == "avg";
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    const float* rois = static_cast<const float*>(run.inputs[1].data);
    const int64_t* batch = static_cast<const int64_t*>(run.inputs[2].data);
    float* y = static_cast<float*>(run.outputs[0].data);
    // A batch index out of range is the reference kernel's error, found before any work.
    for (int64_t r = 0; r < R; ++r)
      if (batch[r] < 0 || batch[r] >= N)
        return make_error("batch_indices[" + std::to_string(r) + "] = " + std::to_string(batch[r]) + " is outside [0, " +
                          std::to_string(N) + ")");
    Status failed = Status::ok();
#pragma omp parallel
    {
      std::vector<ops::RoiSample> wide;
      std::vector<Sample> samples;
#pragma omp for schedule(dynamic, 4)
      for (int64_t r = 0; r < R; ++r) {
        const double roi[4] = {rois[r * 4], rois[r * 4 + 1], rois[r * 4 + 2], rois[r * 4 + 3]};
        int64_t per_bin;
        double count;
        if (Status st = ops::roi_align_samples(roi, r, p, H, W, wide, per_bin, count); !st.is_ok()) {
#pragma omp critical
          failed = st;
          continue;
        }
        const float inv_count = static_cast<float>(1.0 / count);
        samples.clear();
        for (const ops::RoiSample& w : wide)
          samples.push_back({static_cast<int32_t>(w.i1), static_cast<int32_t>(w.i2), static_cast<int32_t>(w.i3),
                             static_cast<int32_t>(w.i4), static_cast<float>(w.w1), static_cast<float>(w.w2),
                             static_cast<float>(w.w3), static_cast<float>(w.w4)});
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
