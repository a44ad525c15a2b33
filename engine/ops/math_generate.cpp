// Ops that make tensors from shapes and scalars: Range, Size, ConstantOfShape, EyeLike.
//
// Output shapes that depend on input values (Range, ConstantOfShape) are known at compile time
// when those inputs are constants (InferContext::constant), and are unknown dims otherwise.
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ir/limits.h"
#include "engine/ops/math_internal.h"

namespace tessera::ops {
namespace {

const char* kShapeOnly = "the output depends only on shapes and attributes, not on input values";

// ---------------------------------------------------------------------------------------------
// Range

// The element count of Range(start, limit, delta): max(ceil((limit - start) / delta), 0), exact
// for integers; an error for delta = 0 or a non-finite count.
Expected<int64_t> range_count(const Tensor& start, const Tensor& limit, const Tensor& delta,
                              const ir::Node& node) {
  if (is_integer(start.dtype())) {
    const int64_t s = to_int64s(start)[0], l = to_int64s(limit)[0], d = to_int64s(delta)[0];
    if (d == 0) return node_error(node, "delta must not be 0");
    const __int128 span = static_cast<__int128>(l) - s;
    __int128 n = span / d;
    if (n * d != span && ((span < 0) == (d < 0))) ++n;  // ceil for a positive quotient
    return static_cast<int64_t>(n < 0 ? 0 : n);
  }
  const double s = start.get(0), l = limit.get(0), d = delta.get(0);
  if (d == 0) return node_error(node, "delta must not be 0");
  const double n = std::ceil((l - s) / d);
  if (std::isnan(n) || std::isinf(n) || n > 1e15)
    return node_error(node, "Range(" + std::to_string(s) + ", " + std::to_string(l) + ", " +
                                std::to_string(d) + ") has no finite element count");
  return static_cast<int64_t>(n < 0 ? 0 : n);
}

Status check_scalars(const KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  for (size_t i = 0; i < 3; ++i) {
    RETURN_IF_ERROR(check_kernel_dtype(ctx, i, ctx.in(0).dtype()));
    if (ctx.in(i).numel() != 1 || ctx.in(i).rank() > 1)
      return node_error(ctx.node, "input '" + ctx.def.inputs[i].name +
                                      "' must be a scalar, got shape " +
                                      shape_to_string(ctx.in(i).shape()));
  }
  return Status::ok();
}

Status range_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_scalars(ctx));
  const Tensor start = ctx.in(0).contiguous(), limit = ctx.in(1).contiguous(),
               delta = ctx.in(2).contiguous();
  TRY(int64_t n, range_count(start, limit, delta, ctx.node));
  TRY(Tensor y, Tensor::create(start.dtype(), {n}));
  RETURN_IF_ERROR(dispatch_numeric(start.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T s = start.data<T>()[0], d = delta.data<T>()[0];
    T* py = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        py[i] = static_cast<T>(s + static_cast<T>(i) * d);
      else
        py[i] = static_cast<T>(static_cast<uint64_t>(s) +
                               static_cast<uint64_t>(i) * static_cast<uint64_t>(d));
    }
    return Status::ok();
  }));
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_range(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  for (size_t i = 0; i < 3; ++i) {
    const TensorType& t = *ctx.inputs[i];
    if (t.rank_known &&
        !(t.rank() == 0 || (t.rank() == 1 && (!t.dims[0].is_known() || t.dims[0].size == 1))))
      return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be a scalar, got " +
                                      t.to_string());
  }
  const DType dt = ctx.inputs[0]->dtype;
  if (ctx.constant(0) && ctx.constant(1) && ctx.constant(2)) {
    TRY(int64_t n, range_count(*ctx.constant(0), *ctx.constant(1), *ctx.constant(2), ctx.node));
    return one_type(TensorType(dt, {Dim::known(n)}));
  }
  return one_type(TensorType(dt, {Dim::unknown()}));
}

// ---------------------------------------------------------------------------------------------
// ConstantOfShape

// The fill value: the `value` attribute (one element of any type), or an f32 0.
Expected<Tensor> fill_value(const ir::Node& node, const AttrReader& attrs) {
  if (!attrs.has("value")) return Tensor::scalar<float>(0.f);
  const Tensor& v = attrs.t("value");
  if (v.numel() != 1)
    return node_error(
        node, "attribute 'value' must hold one element, got shape " + shape_to_string(v.shape()));
  return v.contiguous();
}

Expected<Shape> shape_from(const Tensor& t, const ir::Node& node) {
  if (t.dtype() != DType::kI64 || t.rank() != 1)
    return node_error(node, "input 'input' must be a 1-D i64 shape, got " + dt_name(t.dtype()) +
                                shape_to_string(t.shape()));
  Shape shape = to_int64s(t);
  for (int64_t d : shape)
    if (d < 0)
      return node_error(node, "shape " + shape_to_string(shape) + " has a negative dimension");
  return shape;
}

Status constant_of_shape_kernel(KernelContext& ctx) {
  TRY(Shape shape, shape_from(ctx.in(0), ctx.node));
  TRY(Tensor value, fill_value(ctx.node, ctx.attrs()));
  TRY(Tensor y, Tensor::create(value.dtype(), shape));
  const size_t size = static_cast<size_t>(dtype_size(value.dtype()));
  auto* out = static_cast<std::byte*>(y.raw_data());
  for (int64_t i = 0; i < y.numel(); ++i)
    std::memcpy(out + static_cast<size_t>(i) * size, value.raw_data(), size);
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_constant_of_shape(const InferContext& ctx) {
  TRY(Tensor value, fill_value(ctx.node, ctx.attrs()));
  const TensorType& in = *ctx.inputs[0];
  if (in.dtype != DType::kI64 || (in.rank_known && in.rank() != 1))
    return node_error(ctx.node, "input 'input' must be a 1-D i64 shape, got " + in.to_string());
  if (const Tensor* c = ctx.constant(0)) {
    TRY(Shape shape, shape_from(*c, ctx.node));
    return one_type(TensorType::of(value.dtype(), shape));
  }
  if (in.rank_known && in.dims[0].is_known()) {
    TRY(std::vector<Dim> dims, ir::unknown_dims(in.dims[0].size));
    return one_type(TensorType(value.dtype(), std::move(dims)));
  }
  return one_type(TensorType::unranked(value.dtype()));
}

// ---------------------------------------------------------------------------------------------
// EyeLike

Expected<DType> eyelike_dtype(const ir::Node& node, const AttrReader& attrs, DType input) {
  if (!attrs.has("dtype")) return input;
  const std::optional<DType> dt = dtype_from_name(attrs.s("dtype"));
  if (!dt)
    return node_error(node, "unknown element type '" + attrs.s("dtype") + "' in attribute 'dtype'");
  return *dt;
}

Status eyelike_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const Tensor& x = ctx.in(0);
  if (x.rank() != 2)
    return node_error(ctx.node, "input must be 2-D, got shape " + shape_to_string(x.shape()));
  TRY(DType dt, eyelike_dtype(ctx.node, ctx.attrs(), x.dtype()));
  const int64_t k = ctx.attrs().i("k");
  TRY(Tensor y, Tensor::create(dt, x.shape()));
  for (int64_t r = 0; r < x.dim(0); ++r) {
    const int64_t c = r + k;
    if (c >= 0 && c < x.dim(1)) y.set(r * x.dim(1) + c, 1.0);
  }
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_eyelike(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& x = *ctx.inputs[0];
  if (x.rank_known && x.rank() != 2)
    return node_error(ctx.node, "input must be 2-D, got " + x.to_string());
  TRY(DType dt, eyelike_dtype(ctx.node, ctx.attrs(), x.dtype));
  TensorType out = x;
  out.dtype = dt;
  if (!out.rank_known) out = TensorType(dt, {Dim::unknown(), Dim::unknown()});
  return one_type(out);
}

}  // namespace

void register_math_generate_ops(OpRegistry& registry) {
  OpDef range("Range", "tensor",
              "The 1-D sequence start, start + delta, ... stopping before limit: "
              "max(ceil((limit - start) / delta), 0) elements. The three inputs are scalars of "
              "one element type; delta must not be 0. The output length is known at compile "
              "time when the inputs are constants.");
  range.input("start", "first value (scalar)")
      .input("limit", "exclusive bound (scalar)")
      .input("delta", "step (scalar, not 0)");
  range.output("output", "1-D, the inputs' element type");
  range.allowed_types = {DType::kF32, DType::kF64, DType::kI32, DType::kI64};
  range.infer = infer_range;
  range.reference = range_kernel;
  range.no_gradient_reason = "the output is an index sequence; its length is not differentiable";
  registry.add(std::move(range));

  OpDef size("Size", "tensor", "The number of elements of the input, as an i64 scalar.");
  size.input("data", "tensor of any element type").output("size", "i64 scalar");
  size.infer = [](const InferContext&) -> Expected<std::vector<TensorType>> {
    return one_type(TensorType(DType::kI64, {}));
  };
  size.reference = [](KernelContext& ctx) -> Status {
    ctx.outputs = {Tensor::scalar<int64_t>(ctx.in(0).numel())};
    return Status::ok();
  };
  size.no_gradient_reason = kShapeOnly;
  registry.add(std::move(size));

  OpDef cos("ConstantOfShape", "tensor",
            "A tensor of the shape given by a 1-D i64 input, every element equal to the "
            "one-element tensor attribute 'value' (f32 0 when absent), whose element type the "
            "output takes. The shape is known at compile time when the input is a constant.");
  cos.input("input", "1-D i64 shape, no negative dimensions; [] gives a scalar");
  cos.output("output", "the given shape, value's element type");
  cos.attr("value", AttrKind::kTensor, std::nullopt, "one-element fill value (default f32 0)");
  cos.allowed_types = {DType::kI64};
  cos.infer = infer_constant_of_shape;
  cos.reference = constant_of_shape_kernel;
  cos.no_gradient_reason = kShapeOnly;
  registry.add(std::move(cos));

  OpDef eye("EyeLike", "tensor",
            "A 2-D tensor of the input's shape with ones on diagonal k (0: main, > 0: above, < "
            "0: below) and zeros elsewhere. Unlike ONNX, whose 'dtype' is an integer DataType, "
            "'dtype' names the element type as a string, as Cast's 'to' does (importers "
            "translate it); absent: the input's element type.");
  eye.input("input", "2-D tensor; only its shape (and element type) are used");
  eye.output("output", "the input's shape, element type 'dtype'");
  eye.attr("k", AttrKind::kInt, Attribute(0), "diagonal offset");
  eye.attr("dtype", AttrKind::kString, std::nullopt,
           "output element type: f32 f16 bf16 f64 i8 u8 i32 i64 bool");
  eye.allowed_types = kAllTypes;
  eye.infer = infer_eyelike;
  eye.reference = eyelike_kernel;
  eye.no_gradient_reason = kShapeOnly;
  registry.add(std::move(eye));
}

}  // namespace tessera::ops
