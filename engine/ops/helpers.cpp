// Broadcasting, axes, dtype widening and common inference for op definitions.
#include "engine/ops/helpers.h"

#include <algorithm>

namespace tessera::ops {

Error node_error(const ir::Node& node, const std::string& msg) {
  std::string who = node.op;
  if (!node.name.empty()) who += " '" + node.name + "'";
  return make_error(who + ": " + msg, {}, node.id);
}

Expected<std::vector<Dim>> broadcast_dims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->is_known() && db->is_known()) {
      if (da->size == db->size || db->size == 1) out[i] = *da;
      else if (da->size == 1) out[i] = *db;
      else
        return make_error("shapes cannot be broadcast: dimension " + std::to_string(i) + " is " +
                          da->to_string() + " on one side and " + db->to_string() + " on the other");
    } else if (da->is_known()) {
      out[i] = da->size == 1 ? *db : *da;
    } else if (db->is_known()) {
      out[i] = db->size == 1 ? *da : *db;
    } else {
      out[i] = (*da == *db) ? *da : Dim::unknown();
    }
  }
  return out;
}

Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else
      return make_error("shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                        " cannot be broadcast");
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const std::vector<int64_t> cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

Expected<int> normalize_axis(int64_t axis, int rank, const ir::Node& node) {
  if (axis < -rank || axis >= std::max(rank, 1) || (rank == 0 && axis != 0 && axis != -1))
    return node_error(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                                std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Tensor widen(const Tensor& t) {
  if (t.dtype() == DType::kF16 || t.dtype() == DType::kBF16) return t.cast(DType::kF32);
  return t;
}

Tensor narrow(const Tensor& t, DType to) { return t.dtype() == to ? t : t.cast(to); }

std::vector<int64_t> to_int64s(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<int64_t> out(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) {
    // Exact for i64 (doubles lose INT64_MAX, ONNX's usual "to the end").
    if (c.dtype() == DType::kI64) out[static_cast<size_t>(i)] = c.data<int64_t>()[i];
    else if (c.dtype() == DType::kI32) out[static_cast<size_t>(i)] = c.data<int32_t>()[i];
    else out[static_cast<size_t>(i)] = static_cast<int64_t>(c.get(i));
  }
  return out;
}

Status check_allowed_type(const InferContext& ctx) {
  if (ctx.def.allowed_types.empty() || !ctx.has_input(0)) return Status::ok();
  const DType dt = ctx.inputs[0]->dtype;
  if (std::find(ctx.def.allowed_types.begin(), ctx.def.allowed_types.end(), dt) !=
      ctx.def.allowed_types.end())
    return Status::ok();
  std::string allowed;
  for (DType a : ctx.def.allowed_types) allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(a));
  return node_error(ctx.node, "input '" + ctx.def.inputs[0].name + "' has element type " +
                                  std::string(dtype_name(dt)) + "; allowed: " + allowed);
}

Status check_same_dtype(const InferContext& ctx, size_t first, size_t last) {
  if (!ctx.has_input(first)) return Status::ok();
  const DType dt = ctx.inputs[first]->dtype;
  for (size_t i = first + 1; i <= last && i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i) || ctx.inputs[i]->dtype == dt) continue;
    const std::string name = i < ctx.def.inputs.size() ? ctx.def.inputs[i].name : ctx.def.inputs.back().name;
    return node_error(ctx.node, "input " + std::to_string(i) + " ('" + name + "') has element type " +
                                    std::string(dtype_name(ctx.inputs[i]->dtype)) + " but input " +
                                    std::to_string(first) + " has " + std::string(dtype_name(dt)));
  }
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_same_as_first(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  return std::vector<TensorType>{*ctx.inputs[0]};
}

Expected<std::vector<TensorType>> infer_broadcast(const InferContext& ctx, bool bool_result) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  TensorType out = *ctx.inputs[0];
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType& t = *ctx.inputs[i];
    if (!out.rank_known || !t.rank_known) {
      out.rank_known = false;
      out.dims.clear();
      continue;
    }
    auto dims = broadcast_dims(out.dims, t.dims);
    if (!dims) return node_error(ctx.node, dims.error().message);
    out.dims = std::move(*dims);
  }
  if (bool_result) out.dtype = DType::kBool;
  return std::vector<TensorType>{out};
}

}  // namespace tessera::ops
