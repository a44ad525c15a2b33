// Detection ops (ONNX opsets 11 to 16): NonMaxSuppression, RoiAlign, MaxUnpool, GridSample.
//
//   NonMaxSuppression  boxes [B, N, 4], scores [B, C, N] -> selected [K, 3] i64 (batch, class,
//                      box), per batch and class: boxes above score_threshold by descending score
//                      (ties by index), each kept unless its IoU with a kept one exceeds
//                      iou_threshold, at most max_output_boxes_per_class (0: none). Boxes are
//                      corners [y1, x1, y2, x2] in either order (center_point_box 0) or
//                      [x_center, y_center, width, height] (1). K is known only at run time.
//   RoiAlign           X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in input coordinates times
//                      spatial_scale), batch_indices [R] -> [R, C, oh, ow]: each bin the average
//                      (or ONNX Runtime's max of weighted corners) of sampling_ratio^2 bilinear
//                      samples (0: ceil(roi size / bins)); coordinate_transformation_mode
//                      half_pixel shifts by -0.5
//   MaxUnpool          X and Indices (MaxPool's flat positions) -> zeros with X scattered to them;
//                      output (in - 1) * stride + kernel - pads, or output_shape
//   GridSample         X [N, C, H, W], grid [N, Ho, Wo, 2] (x, y in [-1, 1]) -> [N, C, Ho, Wo]:
//                      bilinear, nearest (half to even) or bicubic (A = -0.75) sampling; padding
//                      zeros, border or reflection; align_corners maps -1 and 1 to the corner
//                      pixels' centres (else to their outer edges)
// Reference kernels in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/ir/limits.h"
#include "engine/ops/index_internal.h"
#include "engine/ops/nn_internal.h"
#include "engine/ops/roi_align.h"

namespace tessera::ops {
namespace {

std::string port(const OpDef& def, size_t i) { return "'" + def.inputs[i].name + "'"; }

Status check_rank(const InferContext& ctx, size_t i, int rank, const std::string& doc) {
  const TensorType& t = *ctx.inputs[i];
  if (t.rank_known && t.rank() != rank)
    return node_error(ctx.node, "input " + port(ctx.def, i) + " must be " + doc + ", got " + t.to_string());
  return Status::ok();
}

// ---- NonMaxSuppression ----

Expected<std::vector<TensorType>> infer_nms(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_rank(ctx, 0, 3, "[batch, boxes, 4]"));
  RETURN_IF_ERROR(check_rank(ctx, 1, 3, "[batch, classes, boxes]"));
  const TensorType &b = *ctx.inputs[0], &s = *ctx.inputs[1];
  if (b.rank_known && b.dims[2].is_known() && b.dims[2].size != 4)
    return node_error(ctx.node, "input 'boxes' " + b.to_string() + " must have 4 coordinates per box");
  if (b.rank_known && s.rank_known) {
    if (b.dims[0].is_known() && s.dims[0].is_known() && b.dims[0] != s.dims[0])
      return node_error(ctx.node, "'boxes' " + b.to_string() + " and 'scores' " + s.to_string() + " disagree on the batch");
    if (b.dims[1].is_known() && s.dims[2].is_known() && b.dims[1] != s.dims[2])
      return node_error(ctx.node, "'boxes' " + b.to_string() + " and 'scores' " + s.to_string() + " disagree on the box count");
  }
  if (s.dtype != b.dtype) return node_error(ctx.node, "'scores' must have the type of 'boxes'");
  if (ctx.has_input(2) && ctx.inputs[2]->dtype != DType::kI64)
    return node_error(ctx.node, "input 'max_output_boxes_per_class' must be i64, got " + ctx.inputs[2]->to_string());
  for (size_t i : {size_t{3}, size_t{4}})
    if (ctx.has_input(i) && ctx.inputs[i]->dtype != DType::kF32)
      return node_error(ctx.node, "input " + port(ctx.def, i) + " must be f32, got " + ctx.inputs[i]->to_string());
  const int64_t cpb = ctx.attrs().i("center_point_box");
  if (cpb != 0 && cpb != 1) return node_error(ctx.node, "center_point_box must be 0 or 1, got " + std::to_string(cpb));
  return std::vector<TensorType>{TensorType(DType::kI64, {Dim::unknown(), Dim::known(3)})};
}

struct Box {
  double y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
  double area() const { return (y2 - y1) * (x2 - x1); }
};

double iou(const Box& a, const Box& b) {
  const double ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return 0;
  const double inter = ih * iw, uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0;
}

Status nms_kernel(KernelContext& ctx) {
  const Tensor boxes = widen(ctx.in(0)).cast(DType::kF64).contiguous(), scores = widen(ctx.in(1)).cast(DType::kF64).contiguous();
  if (boxes.rank() != 3 || scores.rank() != 3 || boxes.dim(2) != 4 || boxes.dim(0) != scores.dim(0) ||
      boxes.dim(1) != scores.dim(2))
    return node_error(ctx.node, "'boxes' " + shape_to_string(boxes.shape()) + " and 'scores' " +
                                    shape_to_string(scores.shape()) + " must be [B, N, 4] and [B, C, N]");
  int64_t max_out = 0;
  if (ctx.has_input(2)) {
    TRY(max_out, read_scalar_int(ctx.in(2), ctx.node, "max_output_boxes_per_class"));
    max_out = std::max<int64_t>(0, max_out);
  }
  const double iou_threshold = ctx.has_input(3) ? ctx.in(3).get(0) : 0.0;
  const bool has_score_threshold = ctx.has_input(4);
  const double score_threshold = has_score_threshold ? ctx.in(4).get(0) : 0.0;
  if (iou_threshold < 0 || iou_threshold > 1)
    return node_error(ctx.node, "iou_threshold must be in [0, 1], got " + std::to_string(iou_threshold));
  const bool center = ctx.attrs().i("center_point_box") == 1;
  const int64_t B = boxes.dim(0), N = boxes.dim(1), C = scores.dim(1);
  std::vector<int64_t> out;
  std::vector<Box> bx(static_cast<size_t>(N));
  std::vector<int64_t> order;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      const double* p = boxes.data<double>() + (b * N + n) * 4;
      Box& x = bx[static_cast<size_t>(n)];
      if (center) {
        x = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
      } else {
        x = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const double* s = scores.data<double>() + (b * C + c) * N;
      order.clear();
      for (int64_t n = 0; n < N; ++n)
        if (!has_score_threshold || s[n] > score_threshold) order.push_back(n);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t bb) { return s[a] > s[bb]; });
      // A box suppresses only boxes it overlaps, so each candidate is compared with the kept boxes
      // whose x-range can meet its own: the kept boxes sorted by x1, searched from x1 - (widest
      // kept box) to x2. torchvision's batched NMS offsets each class's boxes apart and calls NMS
      // once over all classes (SSDLite: up to 27,000 boxes); comparing each with every kept box
      // was 60% of SSDLite's time. A box with a coordinate that is not finite has an IoU of 0 or
      // NaN with every box: it neither suppresses nor is suppressed, and stays out of the index.
      std::vector<int64_t> kept;
      std::vector<std::pair<double, int64_t>> by_x1;  // finite kept boxes by x1
      double widest = 0;
      for (int64_t n : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box& a = bx[static_cast<size_t>(n)];
        const bool finite = std::isfinite(a.x1) && std::isfinite(a.x2) && std::isfinite(a.y1) && std::isfinite(a.y2);
        bool keep = true;
        if (finite) {
          // Every kept box meeting a has x1 > a.x1 - widest; the margin covers x1 + (x2 - x1) != x2
          // in floating point.
          const double from = a.x1 - widest - 4 * std::numeric_limits<double>::epsilon() * (std::fabs(a.x1) + widest);
          auto it = std::upper_bound(by_x1.begin(), by_x1.end(), std::make_pair(from, std::numeric_limits<int64_t>::max()));
          for (; it != by_x1.end() && it->first < a.x2; ++it)
            if (iou(a, bx[static_cast<size_t>(it->second)]) > iou_threshold) {
              keep = false;
              break;
            }
        }
        if (!keep) continue;
        kept.push_back(n);
        if (finite) {
          by_x1.insert(std::upper_bound(by_x1.begin(), by_x1.end(), std::make_pair(a.x1, n)), {a.x1, n});
          widest = std::max(widest, a.x2 - a.x1);
        }
      }
      for (int64_t k : kept) out.insert(out.end(), {b, c, k});
    }
  }
  const int64_t k = static_cast<int64_t>(out.size() / 3);
  ctx.outputs = {Tensor::from_vector<int64_t>({k, 3}, out)};
  return Status::ok();
}

// ---- RoiAlign ----

Expected<std::vector<TensorType>> infer_roi_align(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_rank(ctx, 0, 4, "[N, C, H, W]"));
  RETURN_IF_ERROR(check_rank(ctx, 1, 2, "[num_rois, 4]"));
  RETURN_IF_ERROR(check_rank(ctx, 2, 1, "[num_rois]"));
  const TensorType &x = *ctx.inputs[0], &rois = *ctx.inputs[1], &idx = *ctx.inputs[2];
  if (rois.dtype != x.dtype) return node_error(ctx.node, "'rois' must have the type of 'X'");
  if (idx.dtype != DType::kI64) return node_error(ctx.node, "input 'batch_indices' must be i64, got " + idx.to_string());
  if (rois.rank_known && rois.dims[1].is_known() && rois.dims[1].size != 4)
    return node_error(ctx.node, "input 'rois' " + rois.to_string() + " must have 4 coordinates per region");
  const AttrReader a = ctx.attrs();
  const int64_t oh = a.i("output_height"), ow = a.i("output_width"), sr = a.i("sampling_ratio");
  if (oh < 1 || ow < 1) return node_error(ctx.node, "output_height and output_width must be >= 1");
  if (sr < 0) return node_error(ctx.node, "sampling_ratio must be >= 0");
  const std::string& mode = a.s("mode");
  if (mode != "avg" && mode != "max") return node_error(ctx.node, "mode must be \"avg\" or \"max\", got \"" + mode + "\"");
  const std::string& ctm = a.s("coordinate_transformation_mode");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return node_error(ctx.node, "coordinate_transformation_mode must be half_pixel or output_half_pixel, got \"" + ctm + "\"");
  const Dim r = rois.rank_known ? rois.dims[0] : Dim::unknown();
  const Dim c = x.rank_known ? x.dims[1] : Dim::unknown();
  return std::vector<TensorType>{TensorType(x.dtype, {r, c, Dim::known(oh), Dim::known(ow)})};
}

}  // namespace

Status roi_align_samples(const double roi[4], int64_t r, const RoiAlignParams& p, int64_t H, int64_t W,
                         std::vector<RoiSample>& out, int64_t& per_bin, double& count) {
  const double x1 = roi[0] * p.spatial_scale - p.offset, y1 = roi[1] * p.spatial_scale - p.offset;
  const double x2 = roi[2] * p.spatial_scale - p.offset, y2 = roi[3] * p.spatial_scale - p.offset;
  if (!std::isfinite(x1) || !std::isfinite(y1) || !std::isfinite(x2) || !std::isfinite(y2))
    return make_error("rois[" + std::to_string(r) + "] is not finite");
  double rw = x2 - x1, rh = y2 - y1;
  if (p.offset == 0) {  // output_half_pixel (opset 10): regions at least 1 x 1
    rw = std::max(rw, 1.0);
    rh = std::max(rh, 1.0);
  }
  const double bh = rh / static_cast<double>(p.oh), bw = rw / static_cast<double>(p.ow);
  // Points per bin: sampling_ratio, else ceil(region / bins); a bin of more than 2^20 points is
  // refused (a hostile region, not an image).
  const double gh_d = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(rh / static_cast<double>(p.oh));
  const double gw_d = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(rw / static_cast<double>(p.ow));
  if (gh_d * gw_d > static_cast<double>(1 << 20))
    return make_error("region " + std::to_string(r) + " needs " + std::to_string(gh_d * gw_d) + " samples per bin (at most 2^20)");
  const int64_t gh = static_cast<int64_t>(std::max(gh_d, 0.0)), gw = static_cast<int64_t>(std::max(gw_d, 0.0));
  per_bin = gh * gw;
  count = static_cast<double>(std::max<int64_t>(per_bin, 1));
  out.clear();
  out.reserve(static_cast<size_t>(p.oh * p.ow * per_bin));
  for (int64_t ph = 0; ph < p.oh; ++ph)
    for (int64_t pw = 0; pw < p.ow; ++pw)
      for (int64_t iy = 0; iy < gh; ++iy) {
        const double yy = y1 + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
        for (int64_t ix = 0; ix < gw; ++ix) {
          const double xx = x1 + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
          if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) {
            out.push_back({-1, 0, 0, 0, 0, 0, 0, 0});
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
          out.push_back({y0 * W + x0, y0 * W + xh, yh * W + x0, yh * W + xh, hy * hx, hy * lx, ly * hx, ly * lx});
        }
      }
  return Status::ok();
}

namespace {

RoiAlignParams roi_align_params(const AttrReader& a) {
  RoiAlignParams p;
  p.oh = a.i("output_height");
  p.ow = a.i("output_width");
  p.sampling_ratio = a.i("sampling_ratio");
  p.spatial_scale = a.f("spatial_scale");
  p.offset = a.s("coordinate_transformation_mode") == "half_pixel" ? 0.5 : 0.0;
  return p;
}

Status roi_align_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  // float32 read as it is (each element widened exactly when used), other types through float64.
  const bool f32 = dt == DType::kF32;
  const Tensor x = f32 ? ctx.in(0).contiguous() : ctx.in(0).cast(DType::kF64).contiguous(), rois = ctx.in(1).contiguous();
  const float* xf = f32 ? x.data<float>() : nullptr;
  const double* xd = f32 ? nullptr : x.data<double>();
  const std::vector<int64_t> batch = to_int64s(ctx.in(2));
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || static_cast<int64_t>(batch.size()) != rois.dim(0))
    return node_error(ctx.node, "X, rois and batch_indices must be [N, C, H, W], [R, 4] and [R]");
  const AttrReader a = ctx.attrs();
  const RoiAlignParams p = roi_align_params(a);
  const bool avg = a.s("mode") == "avg";
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois.dim(0), oh = p.oh, ow = p.ow;
  TRY(Tensor y, make_tensor(DType::kF64, {R, C, oh, ow}, ctx.node));
  double* py = y.data<double>();
  // The sampling points of a region depend on the region only: computed once per region, then
  // applied to every channel (Faster R-CNN: 256 channels, 1,000 regions; recomputing them per
  // channel made RoiAlign 90 ms a call).
  std::vector<RoiSample> samples;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t n = batch[static_cast<size_t>(r)];
    if (n < 0 || n >= N)
      return node_error(ctx.node, "batch_indices[" + std::to_string(r) + "] = " + std::to_string(n) + " is outside [0, " +
                                      std::to_string(N) + ")");
    const double roi[4] = {rois.get(r * 4), rois.get(r * 4 + 1), rois.get(r * 4 + 2), rois.get(r * 4 + 3)};
    int64_t per_bin;
    double count;
    if (Status st = roi_align_samples(roi, r, p, H, W, samples, per_bin, count); !st.is_ok())
      return node_error(ctx.node, st.error().message);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t plane_at = (n * C + c) * H * W;
      const auto value = [&](int64_t i) { return f32 ? static_cast<double>(xf[plane_at + i]) : xd[plane_at + i]; };
      for (int64_t bin = 0; bin < oh * ow; ++bin) {
        double acc = 0;
        bool any = false;
        for (int64_t k = 0; k < per_bin; ++k) {
          const RoiSample& sm = samples[static_cast<size_t>(bin * per_bin + k)];
          double v = 0;
          if (sm.i1 >= 0) {
            const double v1 = value(sm.i1), v2 = value(sm.i2), v3 = value(sm.i3), v4 = value(sm.i4);
            if (avg) {
              v = sm.w1 * v1 + sm.w2 * v2 + sm.w3 * v3 + sm.w4 * v4;
            } else {  // ONNX Runtime's max: the largest weighted corner
              v = std::max(std::max(sm.w1 * v1, sm.w2 * v2), std::max(sm.w3 * v3, sm.w4 * v4));
            }
          }
          if (avg) {
            acc += v;
          } else {
            acc = any ? std::max(acc, v) : v;
            any = true;
          }
        }
        py[(r * C + c) * oh * ow + bin] = avg ? acc / count : acc;
      }
    }
  }
  ctx.outputs = {y.cast(dt)};
  return Status::ok();
}

// ---- MaxUnpool ----

// The unpooled shape ((in - 1) * stride + kernel - pads per spatial axis) into `out`.
Status unpool_shape(const ir::Node& node, const AttrReader& a, const std::vector<Dim>& x, std::vector<Dim>& out) {
  if (x.size() < 3) return node_error(node, "input 'X' must be [N, C, D1, ...]");
  const size_t nsp = x.size() - 2;
  TRY(std::vector<int64_t> k, per_axis(node, a, "kernel_shape", nsp, 1, 1));
  TRY(std::vector<int64_t> s, per_axis(node, a, "strides", nsp, 1, 1));
  TRY(std::vector<int64_t> p, per_axis(node, a, "pads", 2 * nsp, 0, 0));
  for (const std::vector<int64_t>* v : {&k, &s, &p})
    for (int64_t e : *v)
      if (e > ir::kMaxElements) return node_error(node, "kernel_shape, strides and pads must be at most 2^48");
  out = {x[0], x[1]};
  for (size_t d = 0; d < nsp; ++d) {
    if (!x[2 + d].is_known()) {
      out.push_back(Dim::unknown());
      continue;
    }
    const __int128 o128 = static_cast<__int128>(x[2 + d].size - 1) * s[d] + k[d] - p[d] - p[nsp + d];
    if (o128 > ir::kMaxElements) return node_error(node, "the output of spatial axis " + std::to_string(d) + " is over 2^48");
    const int64_t o = static_cast<int64_t>(o128);
    if (o < 0) return node_error(node, "the output of spatial axis " + std::to_string(d) + " would be negative");
    out.push_back(Dim::known(o));
  }
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_max_unpool(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType &x = *ctx.inputs[0], &i = *ctx.inputs[1];
  if (i.dtype != DType::kI64) return node_error(ctx.node, "input 'I' must be i64, got " + i.to_string());
  if (!ctx.node.attr("kernel_shape")) return node_error(ctx.node, "required attribute 'kernel_shape' is missing");
  if (!x.rank_known) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
  if (i.rank_known && x.dims.size() == i.dims.size())
    for (size_t d = 0; d < x.dims.size(); ++d)
      if (x.dims[d].is_known() && i.dims[d].is_known() && x.dims[d] != i.dims[d])
        return node_error(ctx.node, "'X' " + x.to_string() + " and 'I' " + i.to_string() + " must have one shape");
  std::vector<Dim> out;
  RETURN_IF_ERROR(unpool_shape(ctx.node, ctx.attrs(), x.dims, out));
  if (ctx.has_input(2)) {
    const Tensor* os = ctx.constant(2);
    if (!os) {
      for (size_t d = 2; d < out.size(); ++d) out[d] = Dim::unknown();
    } else {
      const std::vector<int64_t> v = to_int64s(*os);
      if (v.size() != x.dims.size()) return node_error(ctx.node, "'output_shape' must have one value per axis of 'X'");
      for (size_t d = 2; d < v.size(); ++d) {
        if (out[d].is_known() && v[d] < out[d].size)
          return node_error(ctx.node, "'output_shape' is smaller than the unpooled shape on axis " + std::to_string(d));
        out[d] = Dim::known(v[d]);
      }
    }
  }
  return std::vector<TensorType>{TensorType(x.dtype, out)};
}

Status max_unpool_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  const Tensor idx = ctx.in(1).contiguous();
  if (idx.shape() != x.shape()) return node_error(ctx.node, "'X' and 'I' must have one shape");
  std::vector<Dim> out;
  RETURN_IF_ERROR(unpool_shape(ctx.node, ctx.attrs(), TensorType::of(x.dtype(), x.shape()).dims, out));
  const Shape unpooled = TensorType(x.dtype(), out).static_shape();
  Shape shape = unpooled;
  if (ctx.has_input(2)) {
    const std::vector<int64_t> v = to_int64s(ctx.in(2));
    if (v.size() != shape.size()) return node_error(ctx.node, "'output_shape' must have one value per axis of 'X'");
    for (size_t d = 2; d < v.size(); ++d) shape[d] = v[d];
  }
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));
  // Indices are flat over the unpooled shape (what MaxPool read); a larger output_shape holds that
  // tensor in its leading corner.
  int64_t total = 1;
  for (int64_t d : unpooled) total *= d;
  const int64_t* pi = idx.data<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t at = pi[i];
    if (at < 0 || at >= total)
      return node_error(ctx.node, "I[" + std::to_string(i) + "] = " + std::to_string(at) + " is outside the unpooled " +
                                      "shape " + shape_to_string(unpooled));
    int64_t flat = 0, rest = at, stride = 1;
    for (int d = static_cast<int>(unpooled.size()) - 1; d >= 0; --d) {
      const int64_t coord = rest % unpooled[static_cast<size_t>(d)];
      rest /= unpooled[static_cast<size_t>(d)];
      flat += coord * stride;
      stride *= shape[static_cast<size_t>(d)];
    }
    y.set(flat, x.get(i));
  }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- GridSample ----

Expected<std::vector<TensorType>> infer_grid_sample(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_rank(ctx, 0, 4, "[N, C, H, W]"));
  RETURN_IF_ERROR(check_rank(ctx, 1, 4, "[N, H_out, W_out, 2]"));
  const TensorType &x = *ctx.inputs[0], &g = *ctx.inputs[1];
  if (g.dtype != x.dtype) return node_error(ctx.node, "'grid' must have the type of 'X'");
  if (g.rank_known && g.dims[3].is_known() && g.dims[3].size != 2)
    return node_error(ctx.node, "input 'grid' " + g.to_string() + " must end in 2 (x, y)");
  const AttrReader a = ctx.attrs();
  const std::string &mode = a.s("mode"), &pad = a.s("padding_mode");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return node_error(ctx.node, "mode must be bilinear, nearest or bicubic, got \"" + mode + "\"");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return node_error(ctx.node, "padding_mode must be zeros, border or reflection, got \"" + pad + "\"");
  const Dim n = x.rank_known ? x.dims[0] : Dim::unknown(), c = x.rank_known ? x.dims[1] : Dim::unknown();
  const Dim h = g.rank_known ? g.dims[1] : Dim::unknown(), w = g.rank_known ? g.dims[2] : Dim::unknown();
  return std::vector<TensorType>{TensorType(x.dtype, {n, c, h, w})};
}

// Reflects x into [lo, hi] (ONNX's and PyTorch's reflection of a coordinate).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double d = lo - x;
    const int64_t flips = static_cast<int64_t>(d / range);
    const double extra = d - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? lo + extra : hi - extra;
  }
  if (x > hi) {
    const double d = x - hi;
    const int64_t flips = static_cast<int64_t>(d / range);
    const double extra = d - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? hi - extra : lo + extra;
  }
  return x;
}

double cubic(double x, int k) {  // the 4 weights of Keys' cubic convolution, A = -0.75
  const double A = -0.75;
  auto near = [&](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };
  auto far = [&](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; };
  switch (k) {
    case 0: return far(x + 1);
    case 1: return near(x);
    case 2: return near(1 - x);
    default: return far(2 - x);
  }
}

Status grid_sample_kernel(KernelContext& ctx) {
  const DType dt = ctx.in(0).dtype();
  const Tensor x = widen(ctx.in(0)).cast(DType::kF64).contiguous(), g = widen(ctx.in(1)).cast(DType::kF64).contiguous();
  if (x.rank() != 4 || g.rank() != 4 || g.dim(3) != 2 || g.dim(0) != x.dim(0))
    return node_error(ctx.node, "X and grid must be [N, C, H, W] and [N, H_out, W_out, 2]");
  const AttrReader a = ctx.attrs();
  const bool align = a.i("align_corners") != 0;
  const std::string mode = a.s("mode"), pad = a.s("padding_mode");
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = g.dim(1), Wo = g.dim(2);
  TRY(Tensor y, make_tensor(DType::kF64, {N, C, Ho, Wo}, ctx.node));
  const double* px = x.data<double>();
  const double* pg = g.data<double>();
  double* py = y.data<double>();
  // Pixel coordinate of a normalised one.
  auto unnorm = [&](double v, int64_t size) {
    return align ? (v + 1) / 2 * static_cast<double>(size - 1) : ((v + 1) * static_cast<double>(size) - 1) / 2;
  };
  auto pad_coord = [&](double v, int64_t size) {
    if (pad == "border") return std::min(std::max(v, 0.0), static_cast<double>(size - 1));
    if (pad == "reflection") {
      if (align) return reflect(v, 0, static_cast<double>(size - 1));
      return std::min(std::max(reflect(v, -0.5, static_cast<double>(size) - 0.5), 0.0), static_cast<double>(size - 1));
    }
    return v;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = px + (n * C + c) * H * W;
      // A pixel, or 0 / the border / the reflection outside the image.
      auto pixel = [&](int64_t yy, int64_t xx) -> double {
        if (pad == "zeros") return yy < 0 || yy >= H || xx < 0 || xx >= W ? 0.0 : plane[yy * W + xx];
        if (pad == "border") {
          yy = std::min<int64_t>(std::max<int64_t>(yy, 0), H - 1);
          xx = std::min<int64_t>(std::max<int64_t>(xx, 0), W - 1);
          return plane[yy * W + xx];
        }
        const double ry = pad_coord(static_cast<double>(yy), H), rx = pad_coord(static_cast<double>(xx), W);
        return plane[static_cast<int64_t>(ry) * W + static_cast<int64_t>(rx)];
      };
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          const double* gp = pg + ((n * Ho + i) * Wo + j) * 2;
          if (!std::isfinite(gp[0]) || !std::isfinite(gp[1])) {  // no place to sample: 0
            py[((n * C + c) * Ho + i) * Wo + j] = 0;
            continue;
          }
          // Far outside is outside: bounded so that the integer casts below stay defined.
          const double far = 1e15;
          double xs = std::max(-far, std::min(far, unnorm(gp[0], W))), ys = std::max(-far, std::min(far, unnorm(gp[1], H)));
          double v = 0;
          if (mode == "nearest") {
            xs = pad_coord(xs, W);
            ys = pad_coord(ys, H);
            v = pixel(static_cast<int64_t>(std::nearbyint(ys)), static_cast<int64_t>(std::nearbyint(xs)));
          } else if (mode == "bilinear") {
            xs = pad_coord(xs, W);
            ys = pad_coord(ys, H);
            const int64_t x0 = static_cast<int64_t>(std::floor(xs)), y0 = static_cast<int64_t>(std::floor(ys));
            const double fx = xs - static_cast<double>(x0), fy = ys - static_cast<double>(y0);
            v = (1 - fy) * ((1 - fx) * pixel(y0, x0) + fx * pixel(y0, x0 + 1)) +
                fy * ((1 - fx) * pixel(y0 + 1, x0) + fx * pixel(y0 + 1, x0 + 1));
          } else {  // bicubic: 4 x 4 neighbours, padding applied per neighbour
            const int64_t x0 = static_cast<int64_t>(std::floor(xs)) - 1, y0 = static_cast<int64_t>(std::floor(ys)) - 1;
            const double fx = xs - std::floor(xs), fy = ys - std::floor(ys);
            for (int ky = 0; ky < 4; ++ky) {
              double row = 0;
              for (int kx = 0; kx < 4; ++kx) row += cubic(fx, kx) * pixel(y0 + ky, x0 + kx);
              v += cubic(fy, ky) * row;
            }
          }
          py[((n * C + c) * Ho + i) * Wo + j] = v;
        }
    }
  ctx.outputs = {narrow(y.cast(dt == DType::kF64 ? DType::kF64 : DType::kF32), dt)};
  return Status::ok();
}

}  // namespace

void register_detection_ops(OpRegistry& registry) {
  {
    OpDef def("NonMaxSuppression", "detection",
              "Greedy non-maximum suppression per batch and class: boxes above score_threshold by descending "
              "score, each kept unless it overlaps a kept box by more than iou_threshold (IoU), at most "
              "max_output_boxes_per_class of them. Returns [K, 3] (batch, class, box) indices; K is known at run "
              "time.");
    def.input("boxes", "[B, N, 4]: [y1, x1, y2, x2] corners (center_point_box 0) or [xc, yc, w, h] (1)")
        .input("scores", "[B, C, N]")
        .input("max_output_boxes_per_class", "i64 scalar (0 when absent: nothing selected)", true)
        .input("iou_threshold", "f32 scalar in [0, 1] (0 when absent)", true)
        .input("score_threshold", "f32 scalar: boxes scoring at or below it are dropped (none when absent)", true)
        .output("selected_indices", "i64 [K, 3]");
    def.attr("center_point_box", AttrKind::kInt, Attribute(0), "0: corners; 1: centre, width and height");
    def.allowed_types = {DType::kF32, DType::kF16, DType::kF64};
    def.infer = infer_nms;
    def.reference = nms_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("RoiAlign", "detection",
              "Region of interest align (Mask R-CNN): each region of X pooled to output_height x output_width bins, "
              "each bin the average (or max) of bilinearly interpolated samples.");
    def.input("X", "[N, C, H, W]").input("rois", "[R, 4]: x1, y1, x2, y2").input("batch_indices", "i64 [R]")
        .output("Y", "[R, C, output_height, output_width]");
    def.attr("coordinate_transformation_mode", AttrKind::kString, Attribute("half_pixel"),
             "half_pixel (shift by -0.5, opset 16) or output_half_pixel (opset 10)")
        .attr("mode", AttrKind::kString, Attribute("avg"), "avg or max")
        .attr("output_height", AttrKind::kInt, Attribute(1), ">= 1")
        .attr("output_width", AttrKind::kInt, Attribute(1), ">= 1")
        .attr("sampling_ratio", AttrKind::kInt, Attribute(0), "samples per bin side (0: ceil(region / bins))")
        .attr("spatial_scale", AttrKind::kFloat, Attribute(1.0), "rois in X's coordinates times this");
    def.allowed_types = {DType::kF32, DType::kF16, DType::kF64};
    def.infer = infer_roi_align;
    def.reference = roi_align_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("MaxUnpool", "nn",
              "The partial inverse of MaxPool: zeros of the unpooled shape with X's values at the flat positions I "
              "(MaxPool's Indices).");
    def.input("X", "[N, C, D1, ...]").input("I", "i64, X's shape: flat positions in the output")
        .input("output_shape", "i64 [rank]: the output's shape (default: (in - 1) * stride + kernel - pads)", true)
        .output("output", "[N, C, O1, ...]");
    def.required_attr("kernel_shape", AttrKind::kInts, "one per spatial axis")
        .attr("pads", AttrKind::kInts, std::nullopt, "[x1_begin, ..., x1_end, ...]; default 0")
        .attr("strides", AttrKind::kInts, std::nullopt, "one per spatial axis; default 1");
    def.allowed_types = kFloatTypes;
    def.infer = infer_max_unpool;
    def.reference = max_unpool_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("GridSample", "detection",
              "Samples X at the normalised positions of grid (x, y in [-1, 1]): bilinear, nearest or bicubic, with "
              "zeros, border or reflection outside (spatial transformers, deformable detection heads).");
    def.input("X", "[N, C, H, W]").input("grid", "[N, H_out, W_out, 2]").output("Y", "[N, C, H_out, W_out]");
    def.attr("align_corners", AttrKind::kInt, Attribute(0), "1: -1 and 1 are the corner pixels' centres")
        .attr("mode", AttrKind::kString, Attribute("bilinear"), "bilinear, nearest or bicubic")
        .attr("padding_mode", AttrKind::kString, Attribute("zeros"), "zeros, border or reflection");
    def.allowed_types = kFloatTypes;
    def.infer = infer_grid_sample;
    def.reference = grid_sample_kernel;
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
