// Variadic and binary element-wise ops: Max Min Sum Mean (variadic), Mod, BitShift, the bool
// logic ops And Or Xor Not, LessOrEqual GreaterOrEqual, and PRelu.
//
// Broadcasting is ONNX (NumPy) multidirectional, except PRelu's slope, which broadcasts one way
// onto X. f16/bf16 compute in f32. Max and Min propagate NaN (as numpy.maximum does). Integer Mod
// fails on a zero divisor; float Mod needs fmod=1 (as ONNX requires).
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/math_internal.h"

namespace tessera::ops {
namespace {

// Inputs [0, n) share input 0's dtype, which is in def.allowed_types.
Status check_kernel_inputs(const KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.has_input(i)) RETURN_IF_ERROR(check_kernel_dtype(ctx, i, ctx.in(0).dtype()));
  return Status::ok();
}

// C = f(A, B) with broadcasting; the result has A's dtype, or bool when kBoolOut.
template <bool kBoolOut, class F>
Status map_binary(KernelContext& ctx, F f) {
  RETURN_IF_ERROR(check_kernel_inputs(ctx));
  const Tensor a0 = ctx.in(0).contiguous(), b0 = ctx.in(1).contiguous();
  TRY(Shape shape, broadcast_tensors(ctx, {&a0, &b0}));
  const Tensor a = widen(a0), b = widen(b0);
  TRY(Tensor c, Tensor::create(kBoolOut ? DType::kBool : a.dtype(), shape));
  RETURN_IF_ERROR(dispatch_all(a.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    using R = std::conditional_t<kBoolOut, uint8_t, T>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    R* pc = c.data<R>();
    for_each_broadcast(shape, {&a.shape(), &b.shape()}, [&](int64_t o, const auto& i) {
      pc[o] = static_cast<R>(f(pa[i[0]], pb[i[1]]));
    });
    return Status::ok();
  }));
  ctx.outputs = {kBoolOut ? c : narrow(c, a0.dtype())};
  return Status::ok();
}

template <bool kBoolOut, class F>
KernelFn binary_kernel(F f) {
  return [f](KernelContext& ctx) { return map_binary<kBoolOut>(ctx, f); };
}

// Folds every input into the broadcast result with f; Mean divides by the input count after.
template <class F>
Status fold_kernel(KernelContext& ctx, F f, bool mean) {
  RETURN_IF_ERROR(check_kernel_inputs(ctx));
  std::vector<Tensor> xs;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) xs.push_back(widen(ctx.in(i).contiguous()));
  for (const Tensor& x : xs) ptrs.push_back(&x);
  TRY(Shape shape, broadcast_tensors(ctx, ptrs));
  TRY(Tensor y, Tensor::create(xs[0].dtype(), shape));
  RETURN_IF_ERROR(dispatch_numeric(y.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    T* py = y.data<T>();
    for (size_t k = 0; k < xs.size(); ++k) {
      const T* px = xs[k].data<T>();
      for_each_broadcast(shape, {&xs[k].shape()}, [&](int64_t o, const auto& i) {
        py[o] = k == 0 ? px[i[0]] : static_cast<T>(f(py[o], px[i[0]]));
      });
    }
    if (mean)
      for (int64_t o = 0; o < y.numel(); ++o)
        py[o] = static_cast<T>(py[o] / static_cast<T>(xs.size()));
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, ctx.in(0).dtype())};
  return Status::ok();
}

template <class T>
T max_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a < b ? b : a;
}
template <class T>
T min_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return b < a ? b : a;
}

// Integer remainder: truncated (C, fmod=1) or with the divisor's sign (Python, fmod=0). The
// caller rejects zero divisors; MIN % -1 is 0 instead of trapping.
template <class T>
T int_mod(T a, T b, bool truncated) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
    T r = static_cast<T>(a % b);
    if (!truncated && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

Status mod_kernel(KernelContext& ctx) {
  const bool fmod = ctx.attrs().i("fmod") != 0;
  const DType dt = ctx.in(0).dtype();
  if (is_float(dt) && !fmod)
    return node_error(ctx.node, "float Mod needs fmod=1 (ONNX leaves fmod=0 undefined for floats)");
  if (is_integer(dt) && ctx.in(1).dtype() == dt) {
    const Tensor b = ctx.in(1).contiguous();
    RETURN_IF_ERROR(dispatch_numeric(dt, ctx.node, [&](auto tag) -> Status {
      using T = decltype(tag);
      for (int64_t i = 0; i < b.numel(); ++i)
        if (b.data<T>()[i] == T{0}) return node_error(ctx.node, "integer Mod by zero");
      return Status::ok();
    }));
  }
  return map_binary<false>(ctx, [fmod](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>)
      return std::fmod(a, b);
    else
      return int_mod(a, b, fmod);
  });
}

Status bitshift_kernel(KernelContext& ctx) {
  const std::string& dir = ctx.attrs().s("direction");
  if (dir != "LEFT" && dir != "RIGHT")
    return node_error(ctx.node, "attribute 'direction' is '" + dir + "'; expected LEFT or RIGHT");
  const bool left = dir == "LEFT";
  return map_binary<false>(ctx, [left](auto a, auto b) {
    using T = decltype(a);
    using U = std::make_unsigned_t<std::conditional_t<std::is_integral_v<T>, T, int>>;
    constexpr int kBits = static_cast<int>(sizeof(U) * 8);
    if constexpr (!std::is_integral_v<T>) {
      return a;  // unreachable: allowed_types holds unsigned integers only
    } else {
      const U x = static_cast<U>(a);
      const uint64_t s = static_cast<uint64_t>(static_cast<U>(b));
      if (s >= static_cast<uint64_t>(kBits)) return T{0};
      return static_cast<T>(left ? static_cast<U>(x << s) : static_cast<U>(x >> s));
    }
  });
}

Status prelu_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_inputs(ctx));
  TRY(Shape shape, broadcast_tensors(ctx, {&ctx.in(0), &ctx.in(1)}));
  if (shape != ctx.in(0).shape())
    return node_error(ctx.node, "slope " + shape_to_string(ctx.in(1).shape()) +
                                    " does not broadcast onto X " +
                                    shape_to_string(ctx.in(0).shape()));
  return map_binary<false>(ctx, [](auto x, auto slope) {
    using T = decltype(x);
    return x < T{0} ? static_cast<T>(slope * x) : x;
  });
}

Status not_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  const Tensor x = ctx.in(0).contiguous();
  TRY(Tensor y, Tensor::create(DType::kBool, x.shape()));
  const uint8_t* px = x.data<uint8_t>();
  uint8_t* py = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] = px[i] ? 0 : 1;
  ctx.outputs = {y};
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Inference

InferFn infer_elementwise(bool bool_result) {
  return [bool_result](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    RETURN_IF_ERROR(check_allowed_type(ctx));
    RETURN_IF_ERROR(check_same_dtype(ctx, 0, ctx.inputs.size() - 1));
    TRY(TensorType out, broadcast_types(ctx, 0, bool_result ? DType::kBool : ctx.inputs[0]->dtype));
    return one_type(out);
  };
}

Expected<std::vector<TensorType>> infer_mod(const InferContext& ctx) {
  if (is_float(ctx.inputs[0]->dtype) && ctx.attrs().i("fmod") == 0)
    return node_error(ctx.node, "float Mod needs fmod=1 (ONNX leaves fmod=0 undefined for floats)");
  return infer_elementwise(false)(ctx);
}

Expected<std::vector<TensorType>> infer_bitshift(const InferContext& ctx) {
  const std::string& dir = ctx.attrs().s("direction");
  if (dir != "LEFT" && dir != "RIGHT")
    return node_error(ctx.node, "attribute 'direction' is '" + dir + "'; expected LEFT or RIGHT");
  return infer_elementwise(false)(ctx);
}

Expected<std::vector<TensorType>> infer_prelu(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  const TensorType& x = *ctx.inputs[0];
  const TensorType& s = *ctx.inputs[1];
  if (x.rank_known && s.rank_known) {
    bool ok = s.rank() <= x.rank();
    for (int i = 0; ok && i < s.rank(); ++i) {
      const Dim& ds = s.dims[static_cast<size_t>(s.rank() - 1 - i)];
      const Dim& dx = x.dims[static_cast<size_t>(x.rank() - 1 - i)];
      ok = !ds.is_known() || ds.size == 1 || !dx.is_known() || ds.size == dx.size;
    }
    if (!ok)
      return node_error(ctx.node,
                        "slope " + s.to_string() + " does not broadcast onto X " + x.to_string());
  }
  return one_type(x);
}

// ---------------------------------------------------------------------------------------------
// Registration

OpDef variadic_def(const char* name, const char* output, const std::string& doc,
                   const std::vector<DType>& types) {
  OpDef def(name, "math",
            doc + " One or more inputs of one element type, broadcast together (NumPy rules).");
  def.input("data_0", "inputs, one element type", false, true);
  def.output(output, "input 0's element type, broadcast shape of all inputs");
  def.allowed_types = types;
  def.infer = infer_elementwise(false);
  return def;
}

OpDef binary_def(const char* name, const char* category, std::string doc,
                 const std::vector<DType>& types, bool bool_result) {
  OpDef def(name, category, std::move(doc));
  def.input("A", "first operand").input("B", "second operand, same element type as A");
  def.output("C", bool_result ? "bool result, broadcast shape of A and B"
                              : "A's element type, broadcast shape of A and B");
  def.allowed_types = types;
  def.infer = infer_elementwise(bool_result);
  return def;
}

void register_variadic(OpRegistry& reg) {
  OpDef max = variadic_def("Max", "max", "Element-wise maximum (NaN propagates).", kNumericTypes);
  max.reference = [](KernelContext& ctx) {
    return fold_kernel(
        ctx, [](auto a, auto b) { return max_nan(a, b); }, false);
  };
  reg.add(std::move(max));
  OpDef min = variadic_def("Min", "min", "Element-wise minimum (NaN propagates).", kNumericTypes);
  min.reference = [](KernelContext& ctx) {
    return fold_kernel(
        ctx, [](auto a, auto b) { return min_nan(a, b); }, false);
  };
  reg.add(std::move(min));
  OpDef sum = variadic_def("Sum", "sum", "Element-wise sum.", kFloatTypes);
  sum.reference = [](KernelContext& ctx) {
    return fold_kernel(
        ctx, [](auto a, auto b) { return a + b; }, false);
  };
  reg.add(std::move(sum));
  OpDef mean = variadic_def("Mean", "mean", "Element-wise arithmetic mean.", kFloatTypes);
  mean.reference = [](KernelContext& ctx) {
    return fold_kernel(
        ctx, [](auto a, auto b) { return a + b; }, true);
  };
  reg.add(std::move(mean));
}

void register_arith(OpRegistry& reg) {
  OpDef mod = binary_def("Mod", "math",
                         "Remainder of A / B, element-wise, with broadcasting. fmod=0 (integers "
                         "only): the result takes the divisor's sign (Python's %); fmod=1: it "
                         "takes the dividend's sign (C fmod). Integer Mod by zero is an error.",
                         kNumericTypes, false);
  mod.attr("fmod", AttrKind::kInt, Attribute(0),
           "1: C fmod (required for floats); 0: integer mod with the divisor's sign");
  mod.infer = infer_mod;
  mod.reference = mod_kernel;
  reg.add(std::move(mod));

  OpDef shift(
      "BitShift", "math",
      "Shifts the bits of X by Y, element-wise, with broadcasting (unsigned integers; "
      "shifting by the bit width or more gives 0).");
  shift.input("X", "values to shift").input("Y", "shift amounts, same element type as X");
  shift.output("Z", "X's element type, broadcast shape of X and Y");
  shift.allowed_types = {DType::kU8, DType::kU16, DType::kU32, DType::kU64};
  shift.required_attr("direction", AttrKind::kString, "'LEFT' or 'RIGHT'");
  shift.infer = infer_bitshift;
  shift.reference = bitshift_kernel;
  shift.no_gradient_reason = "integer bit operation";
  reg.add(std::move(shift));

  OpDef prelu("PRelu", "activation",
              "x for x >= 0, slope * x otherwise, element-wise; slope broadcasts one way onto X "
              "(ONNX unidirectional broadcasting).");
  prelu.input("X", "input tensor").input("slope", "slope, same element type, broadcastable to X");
  prelu.output("Y", "same type and shape as X");
  prelu.allowed_types = {DType::kF32, DType::kF16, DType::kBF16,
                         DType::kF64, DType::kI32, DType::kI64};
  prelu.infer = infer_prelu;
  prelu.reference = prelu_kernel;
  reg.add(std::move(prelu));
}

void register_logic(OpRegistry& reg) {
  const std::vector<DType> kBool = {DType::kBool};
  const std::string note = " Broadcasting; bool inputs and output.";
  const char* kNoGrad = "logic on bool values has no gradient";
  OpDef and_op = binary_def("And", "logic", "A and B, element-wise." + note, kBool, true);
  and_op.reference = binary_kernel<true>([](auto a, auto b) { return a && b; });
  and_op.no_gradient_reason = kNoGrad;
  reg.add(std::move(and_op));
  OpDef or_op = binary_def("Or", "logic", "A or B, element-wise." + note, kBool, true);
  or_op.reference = binary_kernel<true>([](auto a, auto b) { return a || b; });
  or_op.no_gradient_reason = kNoGrad;
  reg.add(std::move(or_op));
  OpDef xor_op = binary_def("Xor", "logic", "A xor B, element-wise." + note, kBool, true);
  xor_op.reference = binary_kernel<true>([](auto a, auto b) { return (a != 0) != (b != 0); });
  xor_op.no_gradient_reason = kNoGrad;
  reg.add(std::move(xor_op));

  OpDef not_op("Not", "logic", "Logical negation, element-wise, of a bool tensor.");
  not_op.input("X", "bool input").output("Y", "bool, same shape as X");
  not_op.allowed_types = kBool;
  not_op.infer = infer_same_as_first;
  not_op.reference = not_kernel;
  not_op.no_gradient_reason = kNoGrad;
  reg.add(std::move(not_op));

  const std::string cmp =
      " Broadcasting; A and B share an element type; the output is bool (false where either is "
      "NaN).";
  const char* kCmpNoGrad = "comparison: the bool output has no gradient";
  OpDef le = binary_def("LessOrEqual", "logic", "A <= B, element-wise." + cmp, kNumericTypes, true);
  le.reference = binary_kernel<true>([](auto a, auto b) { return a <= b; });
  le.no_gradient_reason = kCmpNoGrad;
  reg.add(std::move(le));
  OpDef ge =
      binary_def("GreaterOrEqual", "logic", "A >= B, element-wise." + cmp, kNumericTypes, true);
  ge.reference = binary_kernel<true>([](auto a, auto b) { return a >= b; });
  ge.no_gradient_reason = kCmpNoGrad;
  reg.add(std::move(ge));
}

}  // namespace

void register_math_binary_ops(OpRegistry& registry) {
  register_variadic(registry);
  register_arith(registry);
  register_logic(registry);
}

}  // namespace tessera::ops
