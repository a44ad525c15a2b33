// Element-wise ops: arithmetic, unary math and activations, comparisons, Where, Clip and Cast.
//
// Reference kernels compute f32 and f64 natively, f16/bf16 in f32 (widen, compute, narrow) and
// integers where ONNX allows them. Integer arithmetic wraps modulo 2^bits (as NumPy and ONNX
// Runtime do) instead of overflowing; integer division truncates toward zero and fails with an
// error on a zero divisor. Broadcasting follows ONNX (NumPy) multidirectional rules.
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/core/strings.h"
#include "engine/ops/helpers.h"
#include "engine/ops/math_internal.h"
#include "engine/ops/op_def.h"

namespace tessera::ops {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // sqrt(2 / pi)

const std::vector<DType> kSignedTypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                                         DType::kI8,  DType::kI16, DType::kI32, DType::kI64};

// ---------------------------------------------------------------------------------------------
// Broadcasting walk and dispatch

// Walks `out` in row-major order and calls f(o, offsets) for every element, where offsets[k] is
// the element's offset in input k (contiguous, shape *ins[k], broadcastable to `out`). The
// innermost axis runs as a tight strided loop; equal shapes take a flat loop.
template <size_t K, class F>
void for_each_broadcast(const Shape& out, const std::array<const Shape*, K>& ins, F&& f) {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  if (n == 0) return;
  bool same = true;
  for (const Shape* s : ins) same = same && *s == out;
  std::array<int64_t, K> p{};
  if (same || out.empty()) {
    for (int64_t o = 0; o < n; ++o) {
      p.fill(same ? o : 0);
      f(o, p);
    }
    return;
  }
  const size_t rank = out.size();
  std::array<std::vector<int64_t>, K> st;
  for (size_t k = 0; k < K; ++k) st[k] = broadcast_strides(*ins[k], out);
  const int64_t inner = out[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, K> base{};
  for (int64_t o = 0; o < n; o += inner) {
    p = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(o + j, p);
      for (size_t k = 0; k < K; ++k) p[k] += st[k][rank - 1];
    }
    // Advance the outer index (all axes but the last) like an odometer.
    for (size_t d = rank - 1; d-- > 0;) {
      for (size_t k = 0; k < K; ++k) base[k] += st[k][d];
      if (++idx[d] < out[d]) break;
      for (size_t k = 0; k < K; ++k) base[k] -= st[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

// The broadcast shape of the given tensors, or an error naming the node.
Expected<Shape> broadcast_inputs(const KernelContext& ctx,
                                 std::initializer_list<const Tensor*> ts) {
  Shape out = (*ts.begin())->shape();
  for (const Tensor* t : ts) {
    auto s = broadcast_shapes(out, t->shape());
    if (!s) return node_error(ctx.node, s.error().message);
    out = std::move(*s);
  }
  return out;
}

Status check_same_kernel_dtype(const KernelContext& ctx, const Tensor& a, const Tensor& b,
                               size_t b_index) {
  if (a.dtype() == b.dtype()) return Status::ok();
  return node_error(ctx.node, "input '" + ctx.def.inputs[b_index].name + "' has element type " +
                                  std::string(dtype_name(b.dtype())) + " but the op needs " +
                                  std::string(dtype_name(a.dtype())));
}


// ---------------------------------------------------------------------------------------------
// Scalar rules

template <class T>
uint64_t u64(T v) {
  return static_cast<uint64_t>(v);
}
template <class T>
T wrap_neg(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(uint64_t{0} - u64(v));
  else
    return -v;
}


enum class Arith { kAdd, kSub, kMul, kDiv };

template <Arith A>
struct ArithOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (A == Arith::kAdd) return a + b;
      if constexpr (A == Arith::kSub) return a - b;
      if constexpr (A == Arith::kMul) return a * b;
      if constexpr (A == Arith::kDiv) return a / b;
    } else {
      if constexpr (A == Arith::kAdd) return static_cast<T>(u64(a) + u64(b));
      if constexpr (A == Arith::kSub) return static_cast<T>(u64(a) - u64(b));
      if constexpr (A == Arith::kMul) return static_cast<T>(u64(a) * u64(b));
      if constexpr (A == Arith::kDiv) {
        // The caller rejects zero divisors; MIN / -1 wraps instead of trapping.
        if constexpr (std::is_signed_v<T>)
          if (b == static_cast<T>(-1)) return wrap_neg(a);
        return static_cast<T>(a / b);
      }
    }
  }
};

// Integer base to a (float-valued) exponent: exact repeated squaring (wrapping) for non-negative
// integral exponents, otherwise std::pow truncated toward zero.
template <class T>
T int_pow(T base, double e) {
  if (e >= 0 && std::isfinite(e) && e == std::trunc(e)) {
    uint64_t n = e >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(e);
    uint64_t result = 1, b = u64(base);
    while (n > 0) {
      if (n & 1) result *= b;
      b *= b;
      n >>= 1;
    }
    return static_cast<T>(result);
  }
  return saturate_cast<T>(std::pow(static_cast<double>(base), e));
}

// ---------------------------------------------------------------------------------------------
// Kernel skeletons

// map_unary and check_kernel_type are shared with the math family (math_internal.h).

template <bool kInts, class F>
KernelFn unary_kernel(F f) {
  return [f](KernelContext& ctx) { return map_unary<kInts>(ctx, f); };
}

// C = f(A, B) with broadcasting; A and B share a dtype. The result has A's dtype, or bool
// when kBoolOut. f16/bf16 compute in f32.
template <bool kBoolOut, class F>
Status map_binary(KernelContext& ctx, const Tensor& a0, const Tensor& b0, F f) {
  TRY(Shape shape, broadcast_inputs(ctx, {&a0, &b0}));
  const Tensor a = widen(a0), b = widen(b0);
  TRY(Tensor c, Tensor::create(kBoolOut ? DType::kBool : a.dtype(), shape));
  RETURN_IF_ERROR(dispatch_all(a.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    using R = std::conditional_t<kBoolOut, uint8_t, T>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    R* pc = c.data<R>();
    for_each_broadcast<2>(shape, {&a.shape(), &b.shape()}, [&](int64_t o, const auto& i) {
      pc[o] = static_cast<R>(f(pa[i[0]], pb[i[1]]));
    });
    return Status::ok();
  }));
  ctx.outputs = {kBoolOut ? c : narrow(c, a0.dtype())};
  return Status::ok();
}

// Kernel for a binary op whose inputs must share a dtype from def.allowed_types.
template <bool kBoolOut, class F>
KernelFn binary_kernel(F f) {
  return [f](KernelContext& ctx) -> Status {
    const Tensor a = ctx.in(0).contiguous(), b = ctx.in(1).contiguous();
    RETURN_IF_ERROR(check_kernel_type(ctx, a.dtype()));
    RETURN_IF_ERROR(check_same_kernel_dtype(ctx, a, b, 1));
    return map_binary<kBoolOut>(ctx, a, b, f);
  };
}

Status div_kernel(KernelContext& ctx) {
  const Tensor a = ctx.in(0).contiguous(), b = ctx.in(1).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, a.dtype()));
  RETURN_IF_ERROR(check_same_kernel_dtype(ctx, a, b, 1));
  if (is_integer(b.dtype())) {
    RETURN_IF_ERROR(dispatch_numeric(b.dtype(), ctx.node, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* pb = b.data<T>();
      for (int64_t i = 0; i < b.numel(); ++i)
        if (pb[i] == T{0}) return node_error(ctx.node, "integer division by zero");
      return Status::ok();
    }));
  }
  return map_binary<false>(ctx, a, b, ArithOp<Arith::kDiv>{});
}

// Pow(X, Y): Y may have any numeric dtype; it is converted to X's compute type (f32/f64, or f64
// for an integer X) first.
Status pow_kernel(KernelContext& ctx) {
  const Tensor x0 = ctx.in(0).contiguous(), y0 = ctx.in(1).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, x0.dtype()));
  if (!is_float(y0.dtype()) && !is_integer(y0.dtype()))
    return node_error(ctx.node, "exponent 'Y' has element type " +
                                    std::string(dtype_name(y0.dtype())) + "; it must be numeric");
  TRY(Shape shape, broadcast_inputs(ctx, {&x0, &y0}));
  const Tensor x = widen(x0);
  const DType exp_type = is_float(x.dtype()) ? x.dtype() : DType::kF64;
  const Tensor y = y0.dtype() == exp_type ? y0 : y0.cast(exp_type);
  TRY(Tensor z, Tensor::create(x.dtype(), shape));
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    using E = std::conditional_t<std::is_floating_point_v<T>, T, double>;
    const T* px = x.data<T>();
    const E* py = y.data<E>();
    T* pz = z.data<T>();
    for_each_broadcast<2>(shape, {&x.shape(), &y.shape()}, [&](int64_t o, const auto& i) {
      if constexpr (std::is_floating_point_v<T>)
        pz[o] = std::pow(px[i[0]], py[i[1]]);
      else
        pz[o] = int_pow(px[i[0]], py[i[1]]);
    });
    return Status::ok();
  }));
  ctx.outputs = {narrow(z, x0.dtype())};
  return Status::ok();
}

// Clip(input, min?, max?): min(max(x, lo), hi); an absent bound is unbounded; NaN stays NaN;
// when lo > hi every element becomes hi.
Status clip_kernel(KernelContext& ctx) {
  const Tensor x0 = ctx.in(0).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, x0.dtype()));
  Tensor bounds[2];
  for (size_t k = 1; k <= 2; ++k) {
    if (!ctx.has_input(k)) continue;
    const Tensor& t = ctx.in(k);
    RETURN_IF_ERROR(check_same_kernel_dtype(ctx, x0, t, k));
    if (t.numel() != 1)
      return node_error(ctx.node, "'" + ctx.def.inputs[k].name + "' must be a scalar, got shape " +
                                      shape_to_string(t.shape()));
    bounds[k - 1] = widen(t.contiguous());
  }
  const Tensor x = widen(x0);
  TRY(Tensor y, Tensor::create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(dispatch_numeric(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    using Lim = std::numeric_limits<T>;
    const T lo = ctx.has_input(1) ? bounds[0].data<T>()[0]
                                  : (Lim::has_infinity ? -Lim::infinity() : Lim::lowest());
    const T hi = ctx.has_input(2) ? bounds[1].data<T>()[0]
                                  : (Lim::has_infinity ? Lim::infinity() : Lim::max());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const T v = px[i] < lo ? lo : px[i];
      py[i] = hi < v ? hi : v;
    }
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, x0.dtype())};
  return Status::ok();
}

// Where(condition, X, Y): selects by element size, so every dtype works without conversion.
template <class U>
void where_typed(const Tensor& c, const Tensor& x, const Tensor& y, Tensor& out) {
  const uint8_t* pc = c.data<uint8_t>();
  const U* px = static_cast<const U*>(x.raw_data());
  const U* py = static_cast<const U*>(y.raw_data());
  U* po = static_cast<U*>(out.raw_data());
  for_each_broadcast<3>(out.shape(), {&c.shape(), &x.shape(), &y.shape()},
                        [&](int64_t o, const auto& i) { po[o] = pc[i[0]] ? px[i[1]] : py[i[2]]; });
}

Status where_kernel(KernelContext& ctx) {
  const Tensor c = ctx.in(0).contiguous(), x = ctx.in(1).contiguous(), y = ctx.in(2).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, c.dtype()));
  RETURN_IF_ERROR(check_same_kernel_dtype(ctx, x, y, 2));
  TRY(Shape shape, broadcast_inputs(ctx, {&c, &x, &y}));
  TRY(Tensor out, Tensor::create(x.dtype(), shape));
  switch (dtype_size(x.dtype())) {
    case 1:
      where_typed<uint8_t>(c, x, y, out);
      break;
    case 2:
      where_typed<uint16_t>(c, x, y, out);
      break;
    case 4:
      where_typed<uint32_t>(c, x, y, out);
      break;
    default:
      where_typed<uint64_t>(c, x, y, out);
      break;
  }
  ctx.outputs = {std::move(out)};
  return Status::ok();
}

// Cast's target type from its string attribute `to`.
Expected<DType> cast_target(const ir::Node& node, const AttrReader& attrs) {
  const Attribute* a = attrs.get("to");
  if (a == nullptr || a->kind() != AttrKind::kString)
    return node_error(node, "attribute 'to' must be a string naming an element type");
  const std::optional<DType> to = dtype_from_name(a->s());
  if (!to) return node_error(node, "unknown element type '" + a->s() + "' in attribute 'to'");
  return *to;
}

}  // namespace

namespace {

// The shortest decimal text that reads back as the same value of the element type (float32 at
// most 9 significant digits, float64 17); NaN, INF, -INF as ONNX's Cast spells them and bool as 1
// and 0, as ONNX Runtime writes them.
std::string number_text(const Tensor& x, int64_t i) {
  const DType dt = x.dtype();
  if (dt == DType::kI64) return std::to_string(x.data<int64_t>()[i]);
  if (dt == DType::kU64) return std::to_string(x.data<uint64_t>()[i]);
  if (dt == DType::kBool) return x.data<uint8_t>()[i] ? "1" : "0";
  const double v = x.get(i);
  if (is_integer(dt)) return std::to_string(static_cast<int64_t>(v));
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  const bool single = dt != DType::kF64;
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (single ? std::strtof(buf, nullptr) == static_cast<float>(v) : std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// String to number: decimal or scientific text, "inf"/"infinity"/"nan" in any case, surrounding
// white space allowed; anything else is an error naming the element.
Status strings_to_numbers(KernelContext& ctx, const Tensor& x, DType to) {
  // Integer text to an integer type: read as a 64-bit integer and converted as C++ (and ONNX
  // Runtime) convert, wrapping ("300" as u8 is 44); other text goes through double, saturating.
  if (is_integer(to)) {
    bool all_integers = true;
    std::vector<int64_t> ints;
    for (int64_t i = 0; i < x.numel() && all_integers; ++i) {
      const std::string& s = x.string_at(i);
      const char* begin = s.c_str();
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(begin, &end, 10);
      while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
      all_integers = end != begin && end && !*end && s.size() == std::strlen(begin) && errno != ERANGE;
      ints.push_back(static_cast<int64_t>(v));
    }
    if (all_integers) {
      TRY(Tensor y, Tensor::create(to, x.shape()));
      RETURN_IF_ERROR(dispatch_all(to, ctx.node, [&](auto tag) -> Status {
        using D = decltype(tag);
        for (int64_t i = 0; i < x.numel(); ++i) y.data<D>()[i] = static_cast<D>(ints[static_cast<size_t>(i)]);
        return Status::ok();
      }));
      ctx.outputs = {y};
      return Status::ok();
    }
  }
  std::vector<double> values;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string& s = x.string_at(i);
    const char* begin = s.c_str();
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (end == begin || (end && *end) || s.size() != std::strlen(begin))
      return node_error(ctx.node, "element " + std::to_string(i) + " is the string \"" + s.substr(0, 40) +
                                      "\", which is not a number");
    values.push_back(v);
  }
  Tensor d = Tensor::from_doubles(DType::kF64, x.shape(), values);
  if (to == DType::kF64) {
    ctx.outputs = {d};
    return Status::ok();
  }
  return convert_into_output(ctx, d, to);
}

}  // namespace

Status convert_into_output(KernelContext& ctx, const Tensor& x0, DType to) {
  if (x0.dtype() == DType::kString) return strings_to_numbers(ctx, x0.contiguous(), to);
  if (to == DType::kString) {
    const Tensor x = x0.contiguous();
    TRY(Tensor y, Tensor::create(DType::kString, x.shape()));
    for (int64_t i = 0; i < x.numel(); ++i) y.data<uint64_t>()[i] = intern_string(number_text(x, i));
    ctx.outputs = {y};
    return Status::ok();
  }
  const Tensor x = widen(x0);
  const DType compute = (to == DType::kF16 || to == DType::kBF16) ? DType::kF32 : to;
  TRY(Tensor y, Tensor::create(compute, x.shape()));
  const bool to_bool = to == DType::kBool;
  RETURN_IF_ERROR(dispatch_all(x.dtype(), ctx.node, [&](auto src_tag) -> Status {
    using S = decltype(src_tag);
    const S* px = x.data<S>();
    return dispatch_all(compute, ctx.node, [&](auto dst_tag) -> Status {
      using D = decltype(dst_tag);
      D* py = y.data<D>();
      for (int64_t i = 0; i < x.numel(); ++i)
        py[i] = to_bool ? static_cast<D>(px[i] != S{0}) : saturate_cast<D>(px[i]);
      return Status::ok();
    });
  }));
  ctx.outputs = {narrow(y, to)};
  return Status::ok();
}

namespace {

// Cast(input) to attribute `to`: floats to integers truncate toward zero (NaN -> 0, saturating
// out of range); integers wrap; anything to bool is x != 0 (NaN -> true); bool is 0 or 1.
Status cast_kernel(KernelContext& ctx) {
  const Tensor x0 = ctx.in(0).contiguous();
  TRY(const DType to, cast_target(ctx.node, ctx.attrs()));
  if (x0.dtype() == to) {
    ctx.outputs = {x0.clone()};
    return Status::ok();
  }
  return convert_into_output(ctx, x0, to);
}

// ---------------------------------------------------------------------------------------------
// Inference

InferFn infer_binary(bool bool_result) {
  return [bool_result](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    RETURN_IF_ERROR(check_allowed_type(ctx));
    RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
    return infer_broadcast(ctx, bool_result);
  };
}

Expected<std::vector<TensorType>> infer_pow(const InferContext& ctx) {
  const DType e = ctx.inputs[1]->dtype;
  if (!is_float(e) && !is_integer(e))
    return node_error(ctx.node, "exponent 'Y' has element type " + std::string(dtype_name(e)) +
                                    "; it must be numeric");
  return infer_broadcast(ctx, false);
}

Expected<std::vector<TensorType>> infer_where(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2));
  TRY(std::vector<TensorType> out, infer_broadcast(ctx, false));  // checks condition is bool
  out[0].dtype = ctx.inputs[1]->dtype;
  return out;
}

Expected<std::vector<TensorType>> infer_clip(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  for (size_t k = 1; k <= 2; ++k) {
    if (!ctx.has_input(k) || !ctx.inputs[k]->rank_known) continue;
    const TensorType& t = *ctx.inputs[k];
    const bool scalar_like =
        t.rank() == 0 || (t.rank() == 1 && (!t.dims[0].is_known() || t.dims[0].size == 1));
    if (!scalar_like)
      return node_error(ctx.node,
                        "'" + ctx.def.inputs[k].name + "' must be a scalar, got " + t.to_string());
  }
  return std::vector<TensorType>{*ctx.inputs[0]};
}

Expected<std::vector<TensorType>> infer_cast(const InferContext& ctx) {
  TRY(const DType to, cast_target(ctx.node, ctx.attrs()));
  TensorType out = *ctx.inputs[0];
  out.dtype = to;
  return std::vector<TensorType>{out};
}

Expected<std::vector<TensorType>> infer_gelu(const InferContext& ctx) {
  const std::string& mode = ctx.attrs().s("approximate");
  if (mode != "none" && mode != "tanh")
    return node_error(ctx.node,
                      "attribute 'approximate' is '" + mode + "'; expected 'none' or 'tanh'");
  return infer_same_as_first(ctx);
}

// ---------------------------------------------------------------------------------------------
// Registration helpers

template <bool kInts, class F>
void add_unary(OpRegistry& reg, const char* name, const char* category, const char* doc,
               const std::vector<DType>& types, F f) {
  OpDef def(name, category, doc);
  def.input("X", "input tensor").output("Y", "output tensor, same type and shape as X");
  def.allowed_types = types;
  def.infer = infer_same_as_first;
  def.reference = unary_kernel<kInts>(f);
  reg.add(std::move(def));
}

OpDef binary_def(const char* name, const char* category, std::string doc,
                 const std::vector<DType>& types, bool bool_result) {
  OpDef def(name, category, std::move(doc));
  def.input("A", "first operand").input("B", "second operand, same element type as A");
  def.output("C", bool_result ? "bool result, broadcast shape of A and B"
                              : "result, A's element type, broadcast shape of A and B");
  def.allowed_types = types;
  def.infer = infer_binary(bool_result);
  return def;
}

void register_arithmetic(OpRegistry& reg) {
  const std::string note = " Multidirectional (NumPy) broadcasting; A and B share an element type.";
  OpDef add = binary_def("Add", "math", "A + B, element-wise; integers wrap on overflow." + note,
                         kNumericTypes, false);
  add.reference = binary_kernel<false>(ArithOp<Arith::kAdd>{});
  reg.add(std::move(add));
  OpDef sub = binary_def("Sub", "math", "A - B, element-wise; integers wrap on overflow." + note,
                         kNumericTypes, false);
  sub.reference = binary_kernel<false>(ArithOp<Arith::kSub>{});
  reg.add(std::move(sub));
  OpDef mul = binary_def("Mul", "math", "A * B, element-wise; integers wrap on overflow." + note,
                         kNumericTypes, false);
  mul.reference = binary_kernel<false>(ArithOp<Arith::kMul>{});
  reg.add(std::move(mul));
  OpDef div = binary_def("Div", "math",
                         "A / B, element-wise. Integer division truncates toward zero and fails on "
                         "a zero divisor; float division by zero gives inf or NaN (IEEE)." +
                             note,
                         kNumericTypes, false);
  div.reference = div_kernel;
  reg.add(std::move(div));

  OpDef pow("Pow", "math",
            "X raised to the power Y, element-wise, with broadcasting. Y may have any numeric "
            "element type (converted to X's); the result has X's element type. For integer X, "
            "non-negative integral exponents are exact (wrapping on overflow), others use pow() "
            "truncated toward zero.");
  pow.input("X", "base").input("Y", "exponent, any numeric element type");
  pow.output("Z", "X's element type, broadcast shape of X and Y");
  pow.allowed_types = kNumericTypes;
  pow.infer = infer_pow;
  pow.reference = pow_kernel;
  reg.add(std::move(pow));
}

void register_unary(OpRegistry& reg) {
  add_unary<true>(reg, "Neg", "math", "-x, element-wise (integers wrap: -MIN is MIN).",
                  kSignedTypes, [](auto x) { return wrap_neg(x); });
  add_unary<true>(reg, "Abs", "math", "|x|, element-wise (integers wrap: |MIN| is MIN).",
                  kNumericTypes, [](auto x) {
                    using T = decltype(x);
                    if constexpr (std::is_unsigned_v<T>)
                      return x;
                    else
                      return x < T{0} ? wrap_neg(x) : x;
                  });
  add_unary<false>(reg, "Exp", "math", "e^x, element-wise.", kFloatTypes,
                   [](auto x) { return std::exp(x); });
  add_unary<false>(reg, "Log", "math",
                   "Natural logarithm, element-wise (log 0 = -inf, log x<0 = NaN).", kFloatTypes,
                   [](auto x) { return std::log(x); });
  add_unary<false>(reg, "Sqrt", "math", "Square root, element-wise (NaN for x < 0).", kFloatTypes,
                   [](auto x) { return std::sqrt(x); });
  add_unary<false>(reg, "Reciprocal", "math", "1 / x, element-wise.", kFloatTypes,
                   [](auto x) { return decltype(x){1} / x; });
  add_unary<false>(reg, "Erf", "math", "The error function, element-wise.", kFloatTypes,
                   [](auto x) { return std::erf(x); });
  add_unary<true>(reg, "Relu", "activation", "max(x, 0), element-wise (NaN stays NaN).",
                  kSignedTypes, [](auto x) { return x < decltype(x){0} ? decltype(x){0} : x; });
  add_unary<false>(reg, "Sigmoid", "activation", "1 / (1 + e^-x), element-wise.", kFloatTypes,
                   [](auto x) { return sigmoid(x); });
  add_unary<false>(reg, "Tanh", "activation", "Hyperbolic tangent, element-wise.", kFloatTypes,
                   [](auto x) { return std::tanh(x); });
}

void register_activations(OpRegistry& reg) {
  OpDef leaky("LeakyRelu", "activation", "x for x >= 0, alpha * x otherwise, element-wise.");
  leaky.input("X", "input tensor").output("Y", "output tensor, same type and shape as X");
  leaky.attr("alpha", AttrKind::kFloat, Attribute(0.01), "slope for negative inputs");
  leaky.allowed_types = kFloatTypes;
  leaky.infer = infer_same_as_first;
  leaky.reference = [](KernelContext& ctx) {
    const double alpha = ctx.attrs().f("alpha");
    return map_unary<false>(ctx, [alpha](auto x) {
      using T = decltype(x);
      return x < T{0} ? static_cast<T>(alpha) * x : x;
    });
  };
  reg.add(std::move(leaky));

  OpDef gelu("Gelu", "activation",
             "Gaussian error linear unit (ONNX opset 20): approximate='none' gives "
             "0.5 x (1 + erf(x / sqrt 2)); 'tanh' gives 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 "
             "x^3))).");
  gelu.input("X", "input tensor").output("Y", "output tensor, same type and shape as X");
  gelu.attr("approximate", AttrKind::kString, Attribute("none"), "'none' (exact) or 'tanh'");
  gelu.allowed_types = kFloatTypes;
  gelu.infer = infer_gelu;
  gelu.reference = [](KernelContext& ctx) -> Status {
    const std::string& mode = ctx.attrs().s("approximate");
    if (mode == "none")
      return map_unary<false>(ctx, [](auto x) {
        using T = decltype(x);
        return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf)));
      });
    if (mode == "tanh")
      return map_unary<false>(ctx, [](auto x) {
        using T = decltype(x);
        return T(0.5) * x * (T(1) + std::tanh(T(kSqrtTwoOverPi) * (x + T(0.044715) * x * x * x)));
      });
    return node_error(ctx.node,
                      "attribute 'approximate' is '" + mode + "'; expected 'none' or 'tanh'");
  };
  reg.add(std::move(gelu));

  OpDef clip("Clip", "activation",
             "Limits every element to [min, max] (ONNX opset 13: bounds are optional scalar "
             "inputs of the input's element type; an absent bound is unbounded). NaN stays NaN; "
             "when min > max every element becomes max.");
  clip.input("input", "input tensor");
  clip.input("min", "scalar lower bound (rank 0 or [1])", /*optional=*/true);
  clip.input("max", "scalar upper bound (rank 0 or [1])", /*optional=*/true);
  clip.output("output", "same type and shape as input");
  clip.allowed_types = kNumericTypes;
  clip.infer = infer_clip;
  clip.reference = clip_kernel;
  reg.add(std::move(clip));
}

void register_logic(OpRegistry& reg) {
  std::vector<DType> eq_types = kNumericTypes;
  eq_types.push_back(DType::kBool);
  const std::string note = " Broadcasting; A and B share an element type; the output is bool.";
  const char* kNoGrad = "comparison: the bool output has no gradient";
  OpDef eq = binary_def("Equal", "logic", "A == B, element-wise (NaN equals nothing)." + note,
                        eq_types, true);
  eq.reference = binary_kernel<true>([](auto a, auto b) { return a == b; });
  eq.no_gradient_reason = kNoGrad;
  reg.add(std::move(eq));
  OpDef less = binary_def("Less", "logic", "A < B, element-wise." + note, kNumericTypes, true);
  less.reference = binary_kernel<true>([](auto a, auto b) { return a < b; });
  less.no_gradient_reason = kNoGrad;
  reg.add(std::move(less));
  OpDef greater =
      binary_def("Greater", "logic", "A > B, element-wise." + note, kNumericTypes, true);
  greater.reference = binary_kernel<true>([](auto a, auto b) { return a > b; });
  greater.no_gradient_reason = kNoGrad;
  reg.add(std::move(greater));

  OpDef where("Where", "logic",
              "Selects X where condition is true and Y elsewhere, broadcasting all three inputs. "
              "X and Y share any element type; condition is bool.");
  where.input("condition", "bool selector")
      .input("X", "values where condition is true")
      .input("Y", "values where condition is false, same element type as X");
  where.output("output", "X's element type, broadcast shape of all three inputs");
  where.allowed_types = {DType::kBool};
  where.infer = infer_where;
  where.reference = where_kernel;
  reg.add(std::move(where));
}

void register_cast(OpRegistry& reg) {
  OpDef cast("Cast", "cast",
             "Converts to the element type named by the string attribute 'to' (ONNX stores an "
             "integer DataType; importers translate it). Floats to integers truncate toward zero "
             "(NaN becomes 0, out-of-range values saturate); integers to narrower integers wrap; "
             "anything to bool is x != 0 (NaN is true); bool becomes 0 or 1. Numbers become "
             "strings as the shortest text that reads back (NaN, INF, -INF; bool as 1 and 0, as "
             "ONNX Runtime writes them); strings become numbers by parsing (integer text to an "
             "integer type wraps as ONNX Runtime does; an error names an element that is not a number).");
  cast.input("input", "tensor of any element type");
  cast.output("output", "same shape, element type 'to'");
  cast.required_attr("to", AttrKind::kString,
                     "target element type: f32 f16 bf16 f64 i8 u8 i16 u16 i32 u32 i64 u64 bool string");
  cast.infer = infer_cast;
  cast.reference = cast_kernel;
  reg.add(std::move(cast));
}

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
  register_arithmetic(registry);
  register_unary(registry);
  register_activations(registry);
  register_logic(registry);
  register_cast(registry);
}

}  // namespace tessera::ops
