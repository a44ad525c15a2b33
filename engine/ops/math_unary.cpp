// Unary element-wise ops: activations (Selu Elu Celu HardSigmoid HardSwish Softplus Softsign
// Shrink ThresholdedRelu Mish), trigonometric and hyperbolic functions, Ceil Floor Round Sign,
// IsInf IsNaN, and CastLike.
//
// Float ops compute f32 and f64 natively and f16/bf16 in f32. Float attributes (alpha, beta, ...)
// are converted to the compute type first, as ONNX Runtime does.
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/math_internal.h"

namespace tessera::ops {
namespace {

// Numerically stable log(1 + e^x).
template <class T>
T softplus(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

void add_float_unary(OpRegistry& reg, const char* name, const char* category, const char* doc,
                     KernelFn kernel, const char* no_grad = nullptr) {
  OpDef def(name, category, doc);
  def.input("X", "input tensor").output("Y", "output tensor, same type and shape as X");
  def.allowed_types = kFloatTypes;
  def.infer = infer_same_as_first;
  def.reference = std::move(kernel);
  if (no_grad) def.no_gradient_reason = no_grad;
  reg.add(std::move(def));
}

template <class F>
KernelFn float_kernel(F f) {
  return [f](KernelContext& ctx) { return map_unary<false>(ctx, f); };
}

void register_math_functions(OpRegistry& reg) {
  add_float_unary(reg, "Sin", "math", "Sine, element-wise (radians).",
                  float_kernel([](auto x) { return std::sin(x); }));
  add_float_unary(reg, "Cos", "math", "Cosine, element-wise (radians).",
                  float_kernel([](auto x) { return std::cos(x); }));
  add_float_unary(reg, "Tan", "math", "Tangent, element-wise (radians).",
                  float_kernel([](auto x) { return std::tan(x); }));
  add_float_unary(reg, "Asin", "math", "Arcsine, element-wise (NaN outside [-1, 1]).",
                  float_kernel([](auto x) { return std::asin(x); }));
  add_float_unary(reg, "Acos", "math", "Arccosine, element-wise (NaN outside [-1, 1]).",
                  float_kernel([](auto x) { return std::acos(x); }));
  add_float_unary(reg, "Atan", "math", "Arctangent, element-wise.",
                  float_kernel([](auto x) { return std::atan(x); }));
  add_float_unary(reg, "Sinh", "math", "Hyperbolic sine, element-wise.",
                  float_kernel([](auto x) { return std::sinh(x); }));
  add_float_unary(reg, "Cosh", "math", "Hyperbolic cosine, element-wise.",
                  float_kernel([](auto x) { return std::cosh(x); }));
  add_float_unary(reg, "Asinh", "math", "Inverse hyperbolic sine, element-wise.",
                  float_kernel([](auto x) { return std::asinh(x); }));
  add_float_unary(reg, "Acosh", "math", "Inverse hyperbolic cosine, element-wise (NaN below 1).",
                  float_kernel([](auto x) { return std::acosh(x); }));
  add_float_unary(reg, "Atanh", "math",
                  "Inverse hyperbolic tangent, element-wise (+-inf at +-1, NaN outside).",
                  float_kernel([](auto x) { return std::atanh(x); }));

  const char* kStep = "piecewise constant: the gradient is zero almost everywhere";
  add_float_unary(reg, "Ceil", "math",
                  "Smallest integer not below x, element-wise (NaN and inf unchanged).",
                  float_kernel([](auto x) { return std::ceil(x); }), kStep);
  add_float_unary(reg, "Floor", "math",
                  "Largest integer not above x, element-wise (NaN and inf unchanged).",
                  float_kernel([](auto x) { return std::floor(x); }), kStep);
  // nearbyint rounds with the current mode, round-to-nearest-even unless a program changed it;
  // do it by hand so the result never depends on global state.
  add_float_unary(reg, "Round", "math",
                  "Rounds to the nearest integer, halves to even (0.5 -> 0, 1.5 -> 2, -2.5 -> -2).",
                  float_kernel([](auto x) {
                    using T = decltype(x);
                    const T f = std::floor(x);
                    const T diff = x - f;
                    if (diff > T(0.5)) return f + T(1);
                    if (diff < T(0.5)) return f;
                    return std::fmod(f, T(2)) == T(0) ? f : f + T(1);
                  }),
                  kStep);

  OpDef sign("Sign", "math", "-1, 0 or 1 by the sign of x, element-wise (NaN stays NaN).");
  sign.input("input", "input tensor").output("output", "same type and shape as input");
  sign.allowed_types = kNumericTypes;
  sign.infer = infer_same_as_first;
  sign.reference = [](KernelContext& ctx) {
    return map_unary<true>(ctx, [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(x)) return x;
      return static_cast<T>(T(0) < x ? 1 : (x < T(0) ? -1 : 0));
    });
  };
  sign.no_gradient_reason = kStep;
  reg.add(std::move(sign));
}

// ---------------------------------------------------------------------------------------------
// Activations

// An activation with float attributes read once per run: make(attrs) returns the scalar function.
// Float types only, unless kInts (every numeric type).
template <bool kInts = false, class Make>
void add_activation(OpRegistry& reg, const char* name, const char* doc,
                    std::vector<std::pair<const char*, double>> attrs, Make make) {
  OpDef def(name, "activation", doc);
  def.input("X", "input tensor").output("Y", "output tensor, same type and shape as X");
  for (const auto& [attr, value] : attrs)
    def.attr(attr, AttrKind::kFloat, Attribute(value),
             std::string("coefficient ") + attr + " (see the op's formula)");
  def.allowed_types = kInts ? kNumericTypes : kFloatTypes;
  def.infer = infer_same_as_first;
  def.reference = [make](KernelContext& ctx) { return map_unary<kInts>(ctx, make(ctx.attrs())); };
  reg.add(std::move(def));
}

void register_activations(OpRegistry& reg) {
  add_activation(reg, "Selu",
                 "Scaled exponential linear unit: gamma * x for x > 0, gamma * (alpha * e^x - "
                 "alpha) otherwise.",
                 {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}},
                 [](const AttrReader& a) {
                   const double alpha = a.f("alpha"), gamma = a.f("gamma");
                   return [alpha, gamma](auto x) {
                     using T = decltype(x);
                     const T al = static_cast<T>(alpha), ga = static_cast<T>(gamma);
                     return x > T(0) ? ga * x : ga * (al * std::exp(x) - al);
                   };
                 });
  add_activation(reg, "Elu", "Exponential linear unit: x for x >= 0, alpha * (e^x - 1) otherwise.",
                 {{"alpha", 1.0}}, [](const AttrReader& a) {
                   const double alpha = a.f("alpha");
                   return [alpha](auto x) {
                     using T = decltype(x);
                     return x < T(0) ? static_cast<T>(alpha) * std::expm1(x) : x;
                   };
                 });
  add_activation(reg, "Celu",
                 "Continuously differentiable exponential linear unit: max(0, x) + min(0, alpha "
                 "* (e^(x / alpha) - 1)).",
                 {{"alpha", 1.0}}, [](const AttrReader& a) {
                   const double alpha = a.f("alpha");
                   return [alpha](auto x) {
                     using T = decltype(x);
                     const T al = static_cast<T>(alpha);
                     if (x != x) return x;  // NaN stays NaN (std::max would give 0)
                     return std::max(T(0), x) + std::min(T(0), al * std::expm1(x / al));
                   };
                 });
  add_activation(reg, "HardSigmoid", "max(0, min(1, alpha * x + beta)), element-wise.",
                 {{"alpha", 0.2}, {"beta", 0.5}}, [](const AttrReader& a) {
                   const double alpha = a.f("alpha"), beta = a.f("beta");
                   return [alpha, beta](auto x) {
                     using T = decltype(x);
                     const T v = static_cast<T>(alpha) * x + static_cast<T>(beta);
                     return v < T(0) ? T(0) : v > T(1) ? T(1) : v;  // NaN stays NaN
                   };
                 });
  add_activation(reg, "HardSwish", "x * max(0, min(1, x / 6 + 0.5)), element-wise.", {},
                 [](const AttrReader&) {
                   return [](auto x) {
                     using T = decltype(x);
                     const T v = static_cast<T>(1.0 / 6.0) * x + T(0.5);
                     return x * std::max(T(0), std::min(T(1), v));
                   };
                 });
  add_activation(reg, "Softplus", "log(1 + e^x), element-wise (computed without overflow).", {},
                 [](const AttrReader&) { return [](auto x) { return softplus(x); }; });
  add_activation(reg, "Softsign", "x / (1 + |x|), element-wise.", {}, [](const AttrReader&) {
    return [](auto x) {
      using T = decltype(x);
      return x / (T(1) + std::fabs(x));
    };
  });
  add_activation(reg, "ThresholdedRelu", "x for x > alpha, 0 otherwise, element-wise.",
                 {{"alpha", 1.0}}, [](const AttrReader& a) {
                   const double alpha = a.f("alpha");
                   return [alpha](auto x) {
                     using T = decltype(x);
                     return x > static_cast<T>(alpha) ? x : T(0);
                   };
                 });
  add_activation(reg, "Swish",
                 "x * sigmoid(alpha * x), element-wise (SiLU for alpha = 1; ONNX opset 24). The "
                 "fuse-patterns pass makes it from Mul(x, Sigmoid(x)).",
                 {{"alpha", 1.0}}, [](const AttrReader& a) {
                   const double alpha = a.f("alpha");
                   return [alpha](auto x) {
                     using T = decltype(x);
                     return x * sigmoid(static_cast<T>(alpha) * x);
                   };
                 });
  add_activation(
      reg, "Mish", "x * tanh(softplus(x)), element-wise (ONNX opset 18).", {},
      [](const AttrReader&) { return [](auto x) { return x * std::tanh(softplus(x)); }; });
  add_activation<true>(
      reg, "Shrink",
      "x - bias for x > lambd, x + bias for x < -lambd, 0 otherwise, element-wise. "
      "Integer inputs compute in f64 and convert back (truncating, saturating).",
      {{"bias", 0.0}, {"lambd", 0.5}}, [](const AttrReader& a) {
        const double bias = a.f("bias"), lambd = a.f("lambd");
        return [bias, lambd](auto x) {
          using T = decltype(x);
          if constexpr (std::is_floating_point_v<T>) {
            const T b = static_cast<T>(bias), l = static_cast<T>(lambd);
            return x < -l ? x + b : (x > l ? x - b : T(0));
          } else {
            const double v = static_cast<double>(x);
            return saturate_cast<T>(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
          }
        };
      });
}

// ---------------------------------------------------------------------------------------------
// Predicates and CastLike

template <class P>
Status predicate_kernel(KernelContext& ctx, P pred) {
  const Tensor x0 = ctx.in(0).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, x0.dtype()));
  const Tensor x = widen(x0);
  TRY(Tensor y, Tensor::create(DType::kBool, x.shape()));
  RETURN_IF_ERROR(dispatch_float(x.dtype(), ctx.node, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    uint8_t* py = y.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = pred(px[i]) ? 1 : 0;
    return Status::ok();
  }));
  ctx.outputs = {y};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_predicate(const InferContext& ctx) {
  TRY(std::vector<TensorType> out, infer_same_as_first(ctx));
  out[0].dtype = DType::kBool;
  return out;
}

// CastLike(input, target_type): Cast's rules (see elementwise.cpp) with `to` = target's dtype.
Status castlike_kernel(KernelContext& ctx) {
  const Tensor x0 = ctx.in(0).contiguous();
  RETURN_IF_ERROR(check_kernel_type(ctx, x0.dtype()));
  const DType to = ctx.in(1).dtype();
  if (x0.dtype() == to) {
    ctx.outputs = {x0.clone()};
    return Status::ok();
  }
  return convert_into_output(ctx, x0, to);
}

Expected<std::vector<TensorType>> infer_castlike(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  TensorType out = *ctx.inputs[0];
  out.dtype = ctx.inputs[1]->dtype;
  return one_type(out);
}

void register_predicates(OpRegistry& reg) {
  OpDef isinf("IsInf", "logic",
              "True where x is infinite, element-wise: +inf counts when detect_positive=1, -inf "
              "when detect_negative=1.");
  isinf.input("X", "float input").output("Y", "bool, same shape as X");
  isinf.attr("detect_positive", AttrKind::kInt, Attribute(1), "1: +inf maps to true");
  isinf.attr("detect_negative", AttrKind::kInt, Attribute(1), "1: -inf maps to true");
  isinf.allowed_types = kFloatTypes;
  isinf.infer = infer_predicate;
  isinf.reference = [](KernelContext& ctx) {
    const bool pos = ctx.attrs().i("detect_positive") != 0;
    const bool neg = ctx.attrs().i("detect_negative") != 0;
    return predicate_kernel(
        ctx, [pos, neg](auto x) { return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)); });
  };
  isinf.no_gradient_reason = "predicate: the bool output has no gradient";
  reg.add(std::move(isinf));

  OpDef isnan("IsNaN", "logic", "True where x is NaN, element-wise.");
  isnan.input("X", "float input").output("Y", "bool, same shape as X");
  isnan.allowed_types = kFloatTypes;
  isnan.infer = infer_predicate;
  isnan.reference = [](KernelContext& ctx) {
    return predicate_kernel(ctx, [](auto x) { return std::isnan(x); });
  };
  isnan.no_gradient_reason = "predicate: the bool output has no gradient";
  reg.add(std::move(isnan));

  OpDef castlike("CastLike", "cast",
                 "Converts input to the element type of target_type (whose values are not "
                 "read), with Cast's rules: floats to integers truncate toward zero (NaN becomes "
                 "0, out-of-range values saturate); integers to narrower integers wrap; anything "
                 "to bool is x != 0; bool becomes 0 or 1.");
  castlike.input("input", "tensor to convert")
      .input("target_type", "any tensor; only its element type is used");
  castlike.output("output", "input's shape, target_type's element type");
  castlike.allowed_types = kAllTypes;
  castlike.allowed_types.push_back(DType::kString);
  castlike.infer = infer_castlike;
  castlike.reference = castlike_kernel;
  reg.add(std::move(castlike));
}

}  // namespace

void register_math_unary_ops(OpRegistry& registry) {
  register_math_functions(registry);
  register_activations(registry);
  register_predicates(registry);
}

}  // namespace tessera::ops
