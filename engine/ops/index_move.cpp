// Data movement (ONNX opset 17): Pad, Tile, DepthToSpace, SpaceToDepth. Registered by
// register_index_ops (index_ops.cpp).
//
// Pad maps each output coordinate o on an axis with begin pad p and input extent n to the input
// coordinate i = o - p, then, when i falls outside [0, n):
//   constant  the constant value
//   edge      clamp(i, 0, n - 1)
//   reflect   mirror without repeating the edge, period 2(n - 1): [a b c] -> c b [a b c] b a
//   wrap      i mod n (opset 19, accepted here too)
// Negative pads crop. DepthToSpace and SpaceToDepth are a reshape, a transpose and a reshape,
// done as one strided copy.
#include <algorithm>
#include <cstring>

#include "engine/ops/index_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

// ---- Pad ----

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

Expected<PadMode> pad_mode(const Node& node, const AttrReader& attrs) {
  const std::string& m = attrs.s("mode");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  return node_error(node, "mode must be constant, reflect, edge or wrap, got '" + m + "'");
}

// Per-axis begin and end pads for rank r from the 'pads' values and the optional 'axes'.
Expected<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pads_per_axis(
    const std::vector<int64_t>& pads, const std::optional<std::vector<int64_t>>& axes, int rank,
    const Node& node) {
  std::vector<int64_t> all_axes;
  if (axes) {
    for (int64_t a : *axes) {
      TRY(int n, normalize_axis(a, rank, node));
      all_axes.push_back(n);
    }
  } else {
    for (int a = 0; a < rank; ++a) all_axes.push_back(a);
  }
  const size_t n = all_axes.size();
  if (pads.size() != 2 * n)
    return node_error(node, "'pads' has " + std::to_string(pads.size()) + " values, expected " +
                                std::to_string(2 * n) + " (begins, then ends)");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < n; ++k) {
    begin[static_cast<size_t>(all_axes[k])] = pads[k];
    end[static_cast<size_t>(all_axes[k])] = pads[n + k];
  }
  return std::make_pair(begin, end);
}

Expected<std::vector<TensorType>> infer_pad(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  RETURN_IF_ERROR(check_index_input(ctx, 3, true));
  RETURN_IF_ERROR(pad_mode(ctx.node, ctx.attrs()).status());
  if (ctx.has_input(2) && ctx.inputs[2]->dtype != ctx.inputs[0]->dtype)
    return node_error(ctx.node, "'constant_value' must have the element type of 'data'");
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(x);
  TRY(auto pads, constant_ints(ctx, 1));
  TRY(auto axes, constant_ints(ctx, 3));
  TensorType out = x;
  if (!pads || (ctx.has_input(3) && !axes)) {
    for (Dim& d : out.dims) d = Dim::unknown();
    return one(out);
  }
  TRY(auto be, pads_per_axis(*pads, axes, x.rank(), ctx.node));
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (be.first[d] == 0 && be.second[d] == 0) continue;
    if (!out.dims[d].is_known()) {
      out.dims[d] = Dim::unknown();
      continue;
    }
    const int64_t n = out.dims[d].size + be.first[d] + be.second[d];
    if (n < 0) return node_error(ctx.node, "pads crop axis " + std::to_string(d) + " below zero");
    out.dims[d] = Dim::known(n);
  }
  return one(out);
}

// Input coordinate for output coordinate o on one axis, -1 for "use the constant".
int64_t pad_source(int64_t o, int64_t begin, int64_t n, PadMode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return std::clamp<int64_t>(i, 0, n - 1);
    case PadMode::kWrap:
      return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      i = ((i % period) + period) % period;
      return i < n ? i : period - i;
    }
  }
  return -1;
}

Status pad_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(PadMode mode, pad_mode(ctx.node, ctx.attrs()));
  TRY(std::vector<int64_t> pads, read_ints(ctx.in(1), ctx.node, "input 'pads'"));
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(3)) {
    TRY(std::vector<int64_t> v, read_ints(ctx.in(3), ctx.node, "input 'axes'"));
    axes = std::move(v);
  }
  TRY(auto be, pads_per_axis(pads, axes, x.rank(), ctx.node));
  const auto& [begin, end] = be;
  Shape shape = x.shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] += begin[d] + end[d];
    if (shape[d] < 0)
      return node_error(ctx.node, "pads crop axis " + std::to_string(d) + " below zero");
    if (mode != PadMode::kConstant && x.dim(static_cast<int>(d)) == 0 && shape[d] > 0)
      return node_error(ctx.node, "cannot pad an empty axis in this mode");
  }
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));
  const auto esz = static_cast<size_t>(dtype_size(x.dtype()));
  Tensor fill(x.dtype(), {});
  if (ctx.has_input(2) && ctx.in(2).numel() > 0) {
    if (ctx.in(2).dtype() != x.dtype())
      return node_error(ctx.node, "'constant_value' must have the element type of 'data'");
    fill = ctx.in(2).contiguous();
  }
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  std::vector<int64_t> pos(shape.size(), 0);
  for (int64_t k = 0; k < y.numel(); ++k) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size() && src >= 0; ++d) {
      const int64_t i = pad_source(pos[d], begin[d], x.dim(static_cast<int>(d)), mode);
      src = i < 0 ? -1 : src + i * xs[d];
    }
    std::memcpy(byte_data(y) + static_cast<size_t>(k) * esz,
                src < 0 ? byte_data(fill) : byte_data(x) + static_cast<size_t>(src) * esz, esz);
    next_index(pos, shape);
  }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- Tile ----

Expected<std::vector<TensorType>> infer_tile(const InferContext& ctx) {
  RETURN_IF_ERROR(check_index_input(ctx, 1, false));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(x);
  TRY(auto reps, constant_ints(ctx, 1));
  const int64_t len = reps ? static_cast<int64_t>(reps->size()) : static_length(ctx.inputs[1]);
  if (len >= 0 && len != x.rank())
    return node_error(ctx.node, "'repeats' has " + std::to_string(len) + " entries for rank " +
                                    std::to_string(x.rank()));
  TensorType out = x;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (!reps) {
      out.dims[d] = Dim::unknown();
    } else if ((*reps)[d] < 0) {
      return node_error(ctx.node, "'repeats' must be >= 0");
    } else if ((*reps)[d] != 1) {
      out.dims[d] =
          out.dims[d].is_known() ? Dim::known(out.dims[d].size * (*reps)[d]) : Dim::unknown();
    }
  }
  return one(out);
}

Status tile_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  TRY(std::vector<int64_t> reps, read_ints(ctx.in(1), ctx.node, "input 'repeats'"));
  if (static_cast<int>(reps.size()) != x.rank())
    return node_error(ctx.node, "'repeats' has " + std::to_string(reps.size()) +
                                    " entries for rank " + std::to_string(x.rank()));
  Shape shape = x.shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reps[d] < 0) return node_error(ctx.node, "'repeats' must be >= 0");
    shape[d] *= reps[d];
  }
  TRY(Tensor y, make_tensor(x.dtype(), shape, ctx.node));
  const auto esz = static_cast<size_t>(dtype_size(x.dtype()));
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  std::vector<int64_t> pos(shape.size(), 0);
  for (int64_t k = 0; k < y.numel(); ++k) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d) src += (pos[d] % x.dim(static_cast<int>(d))) * xs[d];
    std::memcpy(byte_data(y) + static_cast<size_t>(k) * esz,
                byte_data(x) + static_cast<size_t>(src) * esz, esz);
    next_index(pos, shape);
  }
  ctx.outputs = {y};
  return Status::ok();
}

// ---- DepthToSpace, SpaceToDepth ----

// Output dims of DepthToSpace (to_space) or SpaceToDepth for [N, C, H, W].
Expected<std::vector<Dim>> d2s_dims(const Node& node, const std::vector<Dim>& x, int64_t b,
                                    bool to_space) {
  if (x.size() != 4) return node_error(node, "input must be 4-D [N, C, H, W]");
  if (b < 1) return node_error(node, "blocksize must be >= 1, got " + std::to_string(b));
  auto scale = [&](const Dim& d, bool up, const char* what) -> Expected<Dim> {
    if (!d.is_known()) return Dim::unknown();
    if (up) return Dim::known(d.size * b);
    if (d.size % b != 0)
      return node_error(node, std::string(what) + " " + std::to_string(d.size) +
                                  " is not a multiple of the block size " + std::to_string(b));
    return Dim::known(d.size / b);
  };
  std::vector<Dim> out = x;
  if (to_space) {
    TRY(out[1], scale(x[1], false, "channel count"));
    if (out[1].is_known()) {
      TRY(out[1], scale(out[1], false, "channel count"));
    }
  } else {
    TRY(out[1], scale(x[1], true, "channel count"));
    if (out[1].is_known()) out[1] = Dim::known(out[1].size * b);
  }
  TRY(out[2], scale(x[2], to_space, "height"));
  TRY(out[3], scale(x[3], to_space, "width"));
  return out;
}

Expected<std::vector<TensorType>> infer_d2s(const InferContext& ctx, bool to_space) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(x);
  if (to_space) {
    const std::string& m = ctx.attrs().s("mode");
    if (m != "DCR" && m != "CRD")
      return node_error(ctx.node, "mode must be DCR or CRD, got '" + m + "'");
  }
  TRY(std::vector<Dim> dims, d2s_dims(ctx.node, x.dims, ctx.attrs().i("blocksize"), to_space));
  return one(TensorType(x.dtype, std::move(dims)));
}

Status d2s_kernel(KernelContext& ctx, bool to_space) {
  const Tensor x = ctx.in(0).contiguous();
  const int64_t b = ctx.attrs().i("blocksize");
  TRY(std::vector<Dim> dims,
      d2s_dims(ctx.node, TensorType::of(x.dtype(), x.shape()).dims, b, to_space));
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Shape view;
  std::vector<int> perm;
  if (!to_space) {  // [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b]
    view = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
  } else if (ctx.attrs().s("mode") == "CRD") {  // [N, C', b, b, H, W] -> [N, C', H, b, W, b]
    view = {n, c / (b * b), b, b, h, w};
    perm = {0, 1, 4, 2, 5, 3};
  } else {  // DCR: [N, b, b, C', H, W] -> [N, C', H, b, W, b]
    view = {n, b, b, c / (b * b), h, w};
    perm = {0, 3, 4, 1, 5, 2};
  }
  const std::vector<int64_t> vs = contiguous_strides(view);
  Shape tshape(6);
  std::vector<int64_t> tstrides(6);
  for (size_t i = 0; i < 6; ++i) {
    tshape[i] = view[static_cast<size_t>(perm[i])];
    tstrides[i] = vs[static_cast<size_t>(perm[i])];
  }
  TRY(Tensor t, strided_copy(x, tshape, tstrides, 0, ctx.node));
  TRY(Tensor y, t.reshape(TensorType(x.dtype(), dims).static_shape()));
  ctx.outputs = {y};
  return Status::ok();
}

}  // namespace

void register_index_move_ops(OpRegistry& registry) {
  {
    OpDef def("Pad", "tensor",
              "Pads (or, with negative pads, crops) every axis: constant fill, edge replication, "
              "reflection without the edge, or wrap-around.");
    def.input("data", "tensor")
        .input("pads", "i64 [2 * axes]: all begins, then all ends")
        .input("constant_value", "scalar of data's dtype for mode constant; default 0", true)
        .input("axes", "i32/i64 1-D axes the pads apply to (opset 18); default all", true);
    def.output("output", "the padded tensor");
    def.attr("mode", AttrKind::kString, Attribute("constant"), "constant, reflect, edge or wrap");
    def.allowed_types = kAllTypes;
    def.infer = infer_pad;
    def.reference = pad_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Tile", "tensor", "Repeats the input repeats[d] times along every axis d.");
    def.input("input", "tensor").input("repeats", "i64 [rank], each >= 0");
    def.output("output", "input.shape * repeats");
    def.allowed_types = kAllTypes;
    def.infer = infer_tile;
    def.reference = tile_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("DepthToSpace", "tensor",
              "Moves blocks of channels into b x b spatial blocks: [N, C, H, W] -> "
              "[N, C / b^2, H * b, W * b]; DCR takes depth as (row, column, channel), CRD as "
              "(channel, row, column).");
    def.input("input", "[N, C, H, W]").output("output", "[N, C / b^2, H * b, W * b]");
    def.required_attr("blocksize", AttrKind::kInt, "b, >= 1");
    def.attr("mode", AttrKind::kString, Attribute("DCR"), "DCR or CRD");
    def.allowed_types = kAllTypes;
    def.infer = [](const InferContext& ctx) { return infer_d2s(ctx, true); };
    def.reference = [](KernelContext& ctx) { return d2s_kernel(ctx, true); };
    registry.add(std::move(def));
  }
  {
    OpDef def(
        "SpaceToDepth", "tensor",
        "Moves b x b spatial blocks into channels: [N, C, H, W] -> [N, C * b^2, H / b, W / b] "
        "(the inverse of DepthToSpace in DCR mode).");
    def.input("input", "[N, C, H, W]").output("output", "[N, C * b^2, H / b, W / b]");
    def.required_attr("blocksize", AttrKind::kInt, "b, >= 1; H and W divide by it");
    def.allowed_types = kAllTypes;
    def.infer = [](const InferContext& ctx) { return infer_d2s(ctx, false); };
    def.reference = [](KernelContext& ctx) { return d2s_kernel(ctx, false); };
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
