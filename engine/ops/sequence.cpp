// ONNX's sequence and optional ops: SequenceEmpty SequenceConstruct SequenceInsert SequenceAt
// SequenceErase SequenceLength SplitToSequence ConcatFromSequence SequenceMap, Optional
// OptionalHasElement OptionalGetElement.
//
// A sequence is a runtime value holding tensors of one dtype (Tensor::sequence); an optional holds
// nothing or one tensor or sequence (Tensor::optional). Their IR types are seq(T), opt(T) and
// opt(seq(T)) (ir::TensorType::kind), where T describes the element tensors. Values are
// immutable: inserting or erasing makes a new sequence sharing the item tensors.
#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include "engine/ops/helpers.h"
#include "engine/ops/index_internal.h"
#include "engine/ops/op_def.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {
namespace {

using ir::Dim;

Status need_kind(const InferContext& ctx, size_t i, TypeKind kind, const char* what) {
  if (ctx.inputs[i]->kind != kind)
    return node_error(ctx.node, "input '" + ctx.def.inputs[std::min(i, ctx.def.inputs.size() - 1)].name + "' must be " +
                                    what + ", got " + ctx.inputs[i]->to_string());
  return Status::ok();
}

Status need_tensor_of(const InferContext& ctx, size_t i, DType dt) {
  const TensorType& t = *ctx.inputs[i];
  if (!t.is_tensor() || t.dtype != dt)
    return node_error(ctx.node, "input '" + ctx.def.inputs[std::min(i, ctx.def.inputs.size() - 1)].name +
                                    "' must be a " + std::string(dtype_name(dt)) + " tensor (the sequence's element type), got " +
                                    t.to_string());
  return Status::ok();
}

// An optional position input: an i32/i64 scalar.
Status check_position_type(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return Status::ok();
  const TensorType& t = *ctx.inputs[i];
  const bool scalar = t.is_tensor() && (!t.rank_known || t.rank() == 0 || (t.rank() == 1 && (!t.dims[0].is_known() || t.dims[0].size == 1)));
  if (!scalar || (t.dtype != DType::kI32 && t.dtype != DType::kI64))
    return node_error(ctx.node, "input 'position' must be an i32 or i64 scalar, got " + t.to_string());
  return Status::ok();
}

Status need_sequence(const KernelContext& ctx, size_t i) {
  if (ctx.in(i).kind() != TypeKind::kSequence)
    return node_error(ctx.node, "input " + std::to_string(i) + " is not a sequence");
  return Status::ok();
}

// Position input `i` resolved against a sequence of n items; valid range [-n, n-1], or [-n, n]
// when `end_ok` (insertion after the last item).
Expected<size_t> position(const KernelContext& ctx, size_t i, size_t n, bool end_ok) {
  TRY(int64_t p, read_scalar_int(ctx.in(i), ctx.node, "position"));
  const int64_t len = static_cast<int64_t>(n);
  const int64_t hi = end_ok ? len : len - 1;
  if (p < -len || p > hi)
    return node_error(ctx.node, "position " + std::to_string(p) + " is outside [" + std::to_string(-len) + ", " +
                                    std::to_string(hi) + "] for a sequence of " + std::to_string(n) + " tensors");
  return static_cast<size_t>(p < 0 ? p + len : p);
}

Expected<int64_t> normalized_axis(const ir::Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return node_error(node, "axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank) + ", " +
                                std::to_string(rank - 1) + "]");
  return axis < 0 ? axis + rank : axis;
}

// ---- SequenceEmpty, SequenceConstruct ----

Expected<DType> dtype_attr(const ir::Node& node, const AttrReader& attrs, const std::string& name) {
  const std::optional<DType> dt = dtype_from_name(attrs.s(name));
  if (!dt) return node_error(node, "unknown element type '" + attrs.s(name) + "' in attribute '" + name + "'");
  return *dt;
}

Expected<std::vector<TensorType>> infer_empty(const InferContext& ctx) {
  TRY(DType dt, dtype_attr(ctx.node, ctx.attrs(), "dtype"));
  return one(TensorType::unranked(dt).as(TypeKind::kSequence));
}

Status empty_kernel(KernelContext& ctx) {
  TRY(DType dt, dtype_attr(ctx.node, ctx.attrs(), "dtype"));
  ctx.outputs = {Tensor::sequence(dt, {})};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_construct(const InferContext& ctx) {
  TensorType elem = *ctx.inputs[0];
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    RETURN_IF_ERROR(need_tensor_of(ctx, i, elem.dtype));
    elem = union_type(elem, *ctx.inputs[i]);
  }
  return one(elem.as(TypeKind::kSequence));
}

Status construct_kernel(KernelContext& ctx) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.in(i).is_tensor() || ctx.in(i).dtype() != ctx.in(0).dtype())
      return node_error(ctx.node, "input " + std::to_string(i) + " is not a " + std::string(dtype_name(ctx.in(0).dtype())) + " tensor");
    items.push_back(ctx.in(i));
  }
  ctx.outputs = {Tensor::sequence(ctx.in(0).dtype(), std::move(items))};
  return Status::ok();
}

// ---- SequenceInsert, SequenceAt, SequenceErase, SequenceLength ----

Expected<std::vector<TensorType>> infer_insert(const InferContext& ctx) {
  RETURN_IF_ERROR(need_kind(ctx, 0, TypeKind::kSequence, "a sequence"));
  RETURN_IF_ERROR(need_tensor_of(ctx, 1, ctx.inputs[0]->dtype));
  RETURN_IF_ERROR(check_position_type(ctx, 2));
  return one(union_type(ctx.inputs[0]->as(TypeKind::kTensor), *ctx.inputs[1]).as(TypeKind::kSequence));
}

Status insert_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(need_sequence(ctx, 0));
  const Tensor& seq = ctx.in(0);
  if (!ctx.in(1).is_tensor() || ctx.in(1).dtype() != seq.dtype())
    return node_error(ctx.node, "the inserted value is not a " + std::string(dtype_name(seq.dtype())) + " tensor");
  std::vector<Tensor> items = seq.items();
  size_t at = items.size();
  if (ctx.has_input(2)) {
    TRY(at, position(ctx, 2, items.size(), true));
  }
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), ctx.in(1));
  ctx.outputs = {Tensor::sequence(seq.dtype(), std::move(items))};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_at(const InferContext& ctx) {
  RETURN_IF_ERROR(need_kind(ctx, 0, TypeKind::kSequence, "a sequence"));
  RETURN_IF_ERROR(check_position_type(ctx, 1));
  return one(ctx.inputs[0]->as(TypeKind::kTensor));
}

Status at_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(need_sequence(ctx, 0));
  TRY(size_t at, position(ctx, 1, ctx.in(0).items().size(), false));
  ctx.outputs = {ctx.in(0).items()[at]};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_erase(const InferContext& ctx) {
  RETURN_IF_ERROR(need_kind(ctx, 0, TypeKind::kSequence, "a sequence"));
  RETURN_IF_ERROR(check_position_type(ctx, 1));
  return one(*ctx.inputs[0]);
}

Status erase_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(need_sequence(ctx, 0));
  std::vector<Tensor> items = ctx.in(0).items();
  if (items.empty()) return node_error(ctx.node, "cannot erase from an empty sequence");
  size_t at = items.size() - 1;
  if (ctx.has_input(1)) {
    TRY(at, position(ctx, 1, items.size(), false));
  }
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
  ctx.outputs = {Tensor::sequence(ctx.in(0).dtype(), std::move(items))};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_length(const InferContext& ctx) {
  RETURN_IF_ERROR(need_kind(ctx, 0, TypeKind::kSequence, "a sequence"));
  return one(TensorType(DType::kI64, {}));
}

Status length_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(need_sequence(ctx, 0));
  ctx.outputs = {Tensor::scalar<int64_t>(static_cast<int64_t>(ctx.in(0).items().size()))};
  return Status::ok();
}

// ---- SplitToSequence, ConcatFromSequence ----

// The rows [begin, end) of x along `axis` (x contiguous), as a new contiguous tensor.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t begin, int64_t end) {
  Shape shape = x.shape();
  const int64_t outer = std::accumulate(shape.begin(), shape.begin() + axis, int64_t{1}, std::multiplies<>());
  const int64_t inner = std::accumulate(shape.begin() + axis + 1, shape.end(), int64_t{1}, std::multiplies<>());
  const int64_t len = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = end - begin;
  Tensor out(x.dtype(), shape);
  const size_t es = static_cast<size_t>(dtype_size(x.dtype()));
  const auto* src = static_cast<const std::byte*>(x.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const size_t chunk = static_cast<size_t>((end - begin) * inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    if (chunk) std::memcpy(dst + static_cast<size_t>(o) * chunk, src + static_cast<size_t>((o * len + begin) * inner) * es, chunk);
  return out;
}

Expected<std::vector<TensorType>> infer_split(const InferContext& ctx) {
  const TensorType& x = *ctx.inputs[0];
  if (ctx.has_input(1)) {
    const TensorType& s = *ctx.inputs[1];
    if (!s.is_tensor() || (s.dtype != DType::kI32 && s.dtype != DType::kI64) || (s.rank_known && s.rank() > 1))
      return node_error(ctx.node, "input 'split' must be an i32 or i64 scalar or 1-D tensor, got " + s.to_string());
  }
  if (!x.rank_known) return one(TensorType::unranked(x.dtype).as(TypeKind::kSequence));
  TRY(int64_t axis, normalized_axis(ctx.node, ctx.attrs().i("axis"), x.rank()));
  TensorType elem = x;
  elem.dims[static_cast<size_t>(axis)] = Dim::unknown();
  if (!ctx.has_input(1) && ctx.attrs().i("keepdims") == 0) {
    elem.dims.erase(elem.dims.begin() + axis);
  } else if (!ctx.has_input(1)) {
    elem.dims[static_cast<size_t>(axis)] = Dim::known(1);
  }
  return one(elem.as(TypeKind::kSequence));
}

Status split_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() == 0) return node_error(ctx.node, "cannot split a scalar");
  TRY(int64_t axis, normalized_axis(ctx.node, ctx.attrs().i("axis"), x.rank()));
  const int64_t len = x.dim(static_cast<int>(axis));
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.has_input(1)) {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = ctx.attrs().i("keepdims") == 0;
  } else if (ctx.in(1).rank() == 0) {
    TRY(int64_t chunk, read_scalar_int(ctx.in(1), ctx.node, "split"));
    if (chunk <= 0) return node_error(ctx.node, "split " + std::to_string(chunk) + " must be positive");
    for (int64_t at = 0; at < len; at += chunk) sizes.push_back(std::min(chunk, len - at));
  } else {
    const Tensor& s = ctx.in(1);
    int64_t total = 0;
    for (int64_t i = 0; i < s.numel(); ++i) {
      const int64_t v = static_cast<int64_t>(s.get(i));
      if (v < 0) return node_error(ctx.node, "split length " + std::to_string(v) + " is negative");
      sizes.push_back(v);
      total += v;
    }
    if (total != len)
      return node_error(ctx.node, "split lengths sum to " + std::to_string(total) + " but axis " + std::to_string(axis) +
                                      " has " + std::to_string(len));
  }
  std::vector<Tensor> items;
  int64_t at = 0;
  for (int64_t n : sizes) {
    Tensor piece = slice_axis(x, axis, at, at + n);
    at += n;
    if (squeeze) {
      Shape s = piece.shape();
      s.erase(s.begin() + axis);
      TRY(piece, piece.reshape(s));
    }
    items.push_back(std::move(piece));
  }
  ctx.outputs = {Tensor::sequence(x.dtype(), std::move(items))};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_concat(const InferContext& ctx) {
  RETURN_IF_ERROR(need_kind(ctx, 0, TypeKind::kSequence, "a sequence"));
  TensorType elem = ctx.inputs[0]->as(TypeKind::kTensor);
  if (!elem.rank_known) return one(elem);
  const bool new_axis = ctx.attrs().i("new_axis") != 0;
  TRY(int64_t axis, normalized_axis(ctx.node, ctx.attrs().i("axis"), elem.rank() + (new_axis ? 1 : 0)));
  if (new_axis) elem.dims.insert(elem.dims.begin() + axis, Dim::unknown());
  else elem.dims[static_cast<size_t>(axis)] = Dim::unknown();
  return one(elem);
}

Status concat_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(need_sequence(ctx, 0));
  const std::vector<Tensor>& items = ctx.in(0).items();
  if (items.empty()) return node_error(ctx.node, "cannot concatenate an empty sequence (its shape is unknown)");
  const bool new_axis = ctx.attrs().i("new_axis") != 0;
  const int rank = items[0].rank() + (new_axis ? 1 : 0);
  TRY(int64_t axis, normalized_axis(ctx.node, ctx.attrs().i("axis"), rank));
  std::vector<Tensor> parts;
  Shape out_shape;
  for (size_t k = 0; k < items.size(); ++k) {
    Tensor t = items[k].contiguous();
    if (new_axis) {
      Shape s = t.shape();
      s.insert(s.begin() + axis, 1);
      TRY(t, t.reshape(s));
    }
    if (k == 0) {
      out_shape = t.shape();
      out_shape[static_cast<size_t>(axis)] = 0;
    }
    for (int d = 0; d < rank; ++d)
      if (t.rank() != rank || (d != axis && t.dim(d) != out_shape[static_cast<size_t>(d)]))
        return node_error(ctx.node, "tensor " + std::to_string(k) + " of shape " + shape_to_string(items[k].shape()) +
                                        " does not match tensor 0's " + shape_to_string(items[0].shape()) +
                                        " outside axis " + std::to_string(axis));
    out_shape[static_cast<size_t>(axis)] += t.dim(static_cast<int>(axis));
    parts.push_back(std::move(t));
  }
  TRY(Tensor out, Tensor::create_uninitialized(items[0].dtype(), out_shape));
  const int64_t outer = std::accumulate(out_shape.begin(), out_shape.begin() + axis, int64_t{1}, std::multiplies<>());
  const int64_t inner = std::accumulate(out_shape.begin() + axis + 1, out_shape.end(), int64_t{1}, std::multiplies<>());
  const size_t es = static_cast<size_t>(dtype_size(out.dtype()));
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& t : parts) {
      const size_t chunk = static_cast<size_t>(t.dim(static_cast<int>(axis)) * inner) * es;
      if (chunk) std::memcpy(dst, static_cast<const std::byte*>(t.raw_data()) + static_cast<size_t>(o) * chunk, chunk);
      dst += chunk;
    }
  ctx.outputs = {std::move(out)};
  return Status::ok();
}

// ---- SequenceMap ----

Status verify_map(const ir::Node& node, const OpDef&) {
  const Attribute* a = node.attr("body");
  if (!a || a->kind() != AttrKind::kGraph) return node_error(node, "attribute 'body' must be a graph");
  const ir::Graph& body = a->g();
  if (body.inputs().size() != node.inputs.size())
    return node_error(node, "body takes " + std::to_string(body.inputs().size()) + " inputs but the node has " +
                                std::to_string(node.inputs.size()));
  if (body.outputs().size() != node.outputs.size())
    return node_error(node, "body has " + std::to_string(body.outputs().size()) + " outputs but the node has " +
                                std::to_string(node.outputs.size()));
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_map(const InferContext& ctx) {
  RETURN_IF_ERROR(verify_map(ctx.node, ctx.def));
  RETURN_IF_ERROR(need_kind(ctx, 0, TypeKind::kSequence, "a sequence"));
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (!ctx.inputs[i] || (!ctx.inputs[i]->is_tensor() && ctx.inputs[i]->kind != TypeKind::kSequence))
      return node_error(ctx.node, "additional input " + std::to_string(i) + " must be a tensor or a sequence");
  const ir::Graph& body = ctx.attrs().g("body");
  std::vector<TensorType> out;
  for (ir::ValueId v : body.outputs()) {
    const TensorType& t = body.value(v).type;
    if (!t.is_tensor()) return node_error(ctx.node, "body output '" + body.value(v).name + "' must be a tensor, got " + t.to_string());
    out.push_back(t.as(TypeKind::kSequence));
  }
  return out;
}

Status map_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(need_sequence(ctx, 0));
  if (!ctx.run_subgraph) return node_error(ctx.node, "the executor supplied no subgraph runner");
  const ir::Graph& body = ctx.attrs().g("body");
  const size_t n = ctx.in(0).items().size();
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.in(i).kind() == TypeKind::kSequence && ctx.in(i).items().size() != n)
      return node_error(ctx.node, "input " + std::to_string(i) + " is a sequence of " + std::to_string(ctx.in(i).items().size()) +
                                      " tensors but input 0 has " + std::to_string(n));
  std::vector<std::vector<Tensor>> outs(body.outputs().size());
  for (size_t k = 0; k < n; ++k) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < ctx.inputs.size(); ++i)
      in.push_back(ctx.in(i).kind() == TypeKind::kSequence ? ctx.in(i).items()[k] : ctx.in(i));
    auto r = ctx.run_subgraph(body, in);
    if (!r) return r.error();
    for (size_t j = 0; j < outs.size(); ++j) outs[j].push_back(std::move((*r)[j]));
  }
  ctx.outputs.clear();
  for (size_t j = 0; j < outs.size(); ++j)
    ctx.outputs.push_back(Tensor::sequence(body.value(body.outputs()[j]).type.dtype, std::move(outs[j])));
  return Status::ok();
}

// ---- Optional, OptionalHasElement, OptionalGetElement ----

Expected<TensorType> parse_type_attr(const ir::Node& node, const std::string& text);

Expected<std::vector<TensorType>> infer_optional(const InferContext& ctx) {
  TensorType t;
  if (ctx.has_input(0)) {
    t = *ctx.inputs[0];
  } else {
    if (!ctx.attrs().has("type")) return node_error(ctx.node, "needs input 'input' or attribute 'type'");
    TRY(t, parse_type_attr(ctx.node, ctx.attrs().s("type")));
  }
  if (t.kind != TypeKind::kTensor && t.kind != TypeKind::kSequence)
    return node_error(ctx.node, "cannot wrap " + t.to_string() + " in an optional");
  return one(t.as(t.is_tensor() ? TypeKind::kOptional : TypeKind::kOptionalSequence));
}

Status optional_kernel(KernelContext& ctx) {
  if (ctx.has_input(0)) {
    ctx.outputs = {Tensor::optional(ctx.in(0).dtype(), {ctx.in(0)})};
    return Status::ok();
  }
  TRY(TensorType t, parse_type_attr(ctx.node, ctx.attrs().s("type")));
  ctx.outputs = {Tensor::optional(t.dtype, {})};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_has(const InferContext&) {
  return one(TensorType(DType::kBool, {}));
}

Status has_kernel(KernelContext& ctx) {
  // ONNX 18 also takes a tensor or a sequence (always present) and an absent input (empty).
  const bool has = ctx.has_input(0) && (ctx.in(0).kind() != TypeKind::kOptional || !ctx.in(0).items().empty());
  ctx.outputs = {Tensor::from_bools({}, {has})};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_get(const InferContext& ctx) {
  const TensorType& t = *ctx.inputs[0];
  if (t.kind == TypeKind::kOptional) return one(t.as(TypeKind::kTensor));
  if (t.kind == TypeKind::kOptionalSequence) return one(t.as(TypeKind::kSequence));
  return one(t);
}

Status get_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.kind() != TypeKind::kOptional) {
    ctx.outputs = {x};
    return Status::ok();
  }
  if (x.items().empty()) return node_error(ctx.node, "the optional input is empty");
  ctx.outputs = {x.items()[0]};
  return Status::ok();
}

Expected<TensorType> parse_type_attr(const ir::Node& node, const std::string& text) {
  // "f32[*]", "seq(f32[2, 3])": the IR's type text (the ONNX importer writes TypeProtos so).
  std::string s = text;
  TypeKind kind = TypeKind::kTensor;
  if (s.rfind("seq(", 0) == 0 && s.size() > 5 && s.back() == ')') {
    kind = TypeKind::kSequence;
    s = s.substr(4, s.size() - 5);
  }
  const size_t bracket = s.find('[');
  const std::optional<DType> dt = dtype_from_name(s.substr(0, bracket));
  if (!dt) return node_error(node, "attribute 'type' is '" + text + "'; expected a type such as f32[*] or seq(f32[*])");
  return TensorType::unranked(*dt).as(kind);
}

OpDef sequence_def(const char* name, const char* doc) {
  OpDef def(name, "sequence", doc);
  def.takes_sequences = true;
  def.no_gradient_reason = "sequence and optional values have no gradient";
  return def;
}

}  // namespace

void register_sequence_ops(OpRegistry& reg) {
  {
    OpDef d = sequence_def("SequenceEmpty", "An empty sequence of tensors of element type `dtype`.");
    d.output("output", "seq(dtype[*]) with no tensors");
    d.attr("dtype", AttrKind::kString, Attribute(std::string("f32")), "element type of the sequence");
    d.infer = infer_empty;
    d.reference = empty_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SequenceConstruct", "A sequence of the input tensors, in order (all of one element type).");
    d.input("inputs", "tensors of one element type", false, true);
    d.output("output_sequence", "the sequence");
    d.infer = infer_construct;
    d.reference = construct_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SequenceInsert",
                           "A new sequence with `tensor` inserted before `position` (in [-n, n]; "
                           "negative counts from the back; absent: at the end).");
    d.input("input_sequence", "the sequence").input("tensor", "a tensor of the sequence's element type");
    d.input("position", "i32 or i64 scalar", true);
    d.output("output_sequence", "the new sequence");
    d.infer = infer_insert;
    d.reference = insert_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SequenceAt", "The tensor at `position` (in [-n, n-1]; negative counts from the back).");
    d.input("input_sequence", "the sequence").input("position", "i32 or i64 scalar");
    d.output("tensor", "the tensor at that position");
    d.infer = infer_at;
    d.reference = at_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SequenceErase", "A new sequence without the tensor at `position` (absent: the last).");
    d.input("input_sequence", "the sequence").input("position", "i32 or i64 scalar", true);
    d.output("output_sequence", "the new sequence");
    d.infer = infer_erase;
    d.reference = erase_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SequenceLength", "The number of tensors in the sequence (an i64 scalar).");
    d.input("input_sequence", "the sequence");
    d.output("length", "i64 scalar");
    d.infer = infer_length;
    d.reference = length_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SplitToSequence",
                           "Splits `input` along `axis` into a sequence: into pieces of `split` "
                           "(a scalar: equal chunks, the last smaller; 1-D: the lengths) or, "
                           "without `split`, into pieces of 1 (squeezed unless keepdims).");
    d.input("input", "the tensor to split").input("split", "i32 or i64 scalar or 1-D tensor", true);
    d.output("output_sequence", "the pieces");
    d.attr("axis", AttrKind::kInt, Attribute(0), "axis to split along (negative counts from the back)");
    d.attr("keepdims", AttrKind::kInt, Attribute(1), "without split: keep the axis of size 1");
    d.infer = infer_split;
    d.reference = split_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("ConcatFromSequence",
                           "Concatenates the sequence's tensors along `axis` (new_axis: stacks them "
                           "along a new axis, which may be one past the last).");
    d.input("input_sequence", "a sequence of tensors of equal shape outside the axis");
    d.output("concat_result", "one tensor");
    d.required_attr("axis", AttrKind::kInt, "axis (negative counts from the back)");
    d.attr("new_axis", AttrKind::kInt, Attribute(0), "1: insert a new axis and stack");
    d.infer = infer_concat;
    d.reference = concat_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("SequenceMap",
                           "Runs `body` once per tensor of input_sequence; additional inputs are passed "
                           "whole (tensors) or element by element (sequences of the same length). "
                           "Each body output collects into an output sequence.");
    d.input("input_sequence", "the sequence mapped over").input("additional_inputs", "tensors or sequences", true, true);
    d.output("out_sequence", "one sequence per body output", false, true);
    d.required_attr("body", AttrKind::kGraph, "graph taking one tensor per node input");
    d.verify = verify_map;
    d.infer = infer_map;
    d.reference = map_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("Optional", "An optional holding `input`, or an empty optional of type `type`.");
    d.input("input", "a tensor or a sequence", true);
    d.output("output", "opt(T) or opt(seq(T))");
    d.attr("type", AttrKind::kString, std::nullopt, "without input: the element type, e.g. f32[*] or seq(f32[*])");
    d.infer = infer_optional;
    d.reference = optional_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("OptionalHasElement", "Whether the optional holds a value (a bool scalar).");
    d.input("input", "an optional (a tensor or a sequence: true; absent: false)", true);
    d.output("output", "bool scalar");
    d.infer = infer_has;
    d.reference = has_kernel;
    reg.add(std::move(d));
  }
  {
    OpDef d = sequence_def("OptionalGetElement", "The value an optional holds (an error when it is empty).");
    d.input("input", "an optional (a tensor or a sequence is returned as it is)");
    d.output("output", "the tensor or sequence");
    d.infer = infer_get;
    d.reference = get_kernel;
    reg.add(std::move(d));
  }
}

}  // namespace tessera::ops
