// Gradient rules of the element-wise and math families (elementwise.cpp, math_unary.cpp,
// math_binary.cpp, CumSum of math_index.cpp, math_einsum.cpp).
//
// Rules reuse the forward output where it carries the derivative (Exp, Sigmoid, Tanh, Sqrt, Selu,
// Elu...), mask with Where(mask, dy, scalar 0) rather than materialised zeros, and reduce a
// broadcast operand's gradient with GradientContext::unbroadcast. Piecewise rules take the
// derivative of the branch the forward kernel picks; at a kink (Relu at 0, a tie of Max) they pick
// one side, as PyTorch does.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/autodiff/gradient.h"

namespace tessera::autodiff {
namespace {

using ir::ValueId;
using ops::GradientContext;

// ---------------------------------------------------------------------------------------------
// Emission shorthands

struct Ops {
  GradientContext& g;
  DType dt;                           // the element type of scalars made by c()
  std::map<double, ValueId> scalars;  // one constant per value within a rule

  ValueId c(double v) {
    auto it = scalars.find(v);
    return it != scalars.end() ? it->second : scalars[v] = g.scalar(v, dt);
  }
  ValueId add(ValueId a, ValueId b) { return g.emit("Add", {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return g.emit("Sub", {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return g.emit("Mul", {a, b}); }
  ValueId div(ValueId a, ValueId b) { return g.emit("Div", {a, b}); }
  ValueId neg(ValueId a) { return g.emit("Neg", {a}); }
  ValueId op(const char* name, ValueId a) { return g.emit(name, {a}); }
  ValueId op(const char* name, ValueId a, ValueId b) { return g.emit(name, {a, b}); }
  ValueId where(ValueId m, ValueId a, ValueId b) { return g.emit("Where", {m, a, b}); }
  ValueId square(ValueId a) { return mul(a, a); }
};

// Scalars take the output's element type (Where's input 0 is the bool condition).
Ops ops_for(GradientContext& g) {
  return Ops{g, g.dtype(g.output(0)), {}};
}

// A one-input rule: dX = f(ops, X, Y, dY), set only when X wants a gradient.
template <class F>
Status unary(GradientContext& g, F f) {
  if (!g.wants(0)) return Status::ok();
  Ops o = ops_for(g);
  g.set_grad(0, f(o, g.input(0), g.output(0), g.grad_output(0)));
  return Status::ok();
}

ValueId cast_to(GradientContext& g, ValueId v, DType dt) {
  if (g.dtype(v) == dt) return v;
  return g.emit("Cast", {v}, {{"to", std::string(dtype_name(dt))}});
}

// ---------------------------------------------------------------------------------------------
// Arithmetic

Status add_grad(GradientContext& g) {
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(dy, g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(dy, g.input(1)));
  return Status::ok();
}

Status sub_grad(GradientContext& g) {
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(dy, g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(g.emit("Neg", {dy}), g.input(1)));
  return Status::ok();
}

Status mul_grad(GradientContext& g) {
  ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(g.emit("Mul", {dy, g.input(1)}), g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(g.emit("Mul", {dy, g.input(0)}), g.input(1)));
  return Status::ok();
}

// C = A / B: dA = dY / B; dB = -dY A / B^2 = -(dY / B) C.
Status div_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId da = o.div(g.grad_output(0), g.input(1));
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(da, g.input(0)));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(o.neg(o.mul(da, g.output(0))), g.input(1)));
  return Status::ok();
}

// Z = X^Y: dX = dY Y X^(Y-1) (finite at X = 0 for Y >= 1); dY = dY Z log X, taken as 0 where
// X = 0 (the limit for Y > 0). Y may have another element type than X: it is converted, and its
// gradient converted back.
Status pow_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId x = g.input(0), y = g.input(1), dz = g.grad_output(0);
  if (g.wants(0)) {
    const Tensor* k = g.constant(y);
    ValueId dx;
    if (k && k->numel() == 1 && k->get(0) == 2.0) {
      dx = o.mul(dz, o.mul(x, o.c(2.0)));  // the common square: 2 X dY
    } else if (k && k->numel() == 1 && k->get(0) == 1.0) {
      dx = dz;
    } else {
      ValueId yx = cast_to(g, y, o.dt);
      dx = o.mul(dz, o.mul(yx, g.emit("Pow", {x, o.sub(yx, o.c(1.0))})));
    }
    g.set_grad(0, g.unbroadcast(dx, x));
  }
  if (g.wants(1)) {
    ValueId zero = o.c(0.0);
    ValueId log_x = o.where(o.op("Equal", x, zero), zero, o.op("Log", x));
    ValueId dy = o.mul(dz, o.mul(g.output(0), log_x));
    g.set_grad(1, cast_to(g, g.unbroadcast(dy, y), g.dtype(y)));
  }
  return Status::ok();
}

// Float Mod (fmod=1): C = A - trunc(A / B) B, so dA = dC and dB = -dC trunc(A / B), where
// trunc(A / B) = round((A - C) / B) (exact integers, free of a Trunc op).
Status mod_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId dc = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.unbroadcast(dc, g.input(0)));
  if (g.wants(1)) {
    ValueId q = o.op("Round", o.div(o.sub(g.input(0), g.output(0)), g.input(1)));
    g.set_grad(1, g.unbroadcast(o.neg(o.mul(dc, q)), g.input(1)));
  }
  return Status::ok();
}

Status sum_grad(GradientContext& g) {
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.wants(i)) g.set_grad(i, g.unbroadcast(g.grad_output(0), g.input(i)));
  return Status::ok();
}

Status mean_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId share = o.mul(g.grad_output(0), o.c(1.0 / static_cast<double>(g.num_inputs())));
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.wants(i)) g.set_grad(i, g.unbroadcast(share, g.input(i)));
  return Status::ok();
}

// Max / Min: dY goes to the input that equals the result; on a tie, to the first such input, so
// the gradients always add up to dY. Input k < n-1 takes Equal(X_k, Y) and not taken before; the
// last input takes what no earlier input took.
Status extreme_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId dy = g.grad_output(0), zero = o.c(0.0);
  const size_t n = g.num_inputs();
  ValueId taken = ir::kNoValue;  // bool: an earlier input already equals Y
  for (size_t k = 0; k + 1 < n; ++k) {
    ValueId eq = o.op("Equal", g.input(k), g.output(0));
    ValueId mine = taken == ir::kNoValue ? eq : o.op("And", eq, o.op("Not", taken));
    if (g.wants(k)) g.set_grad(k, g.unbroadcast(o.where(mine, dy, zero), g.input(k)));
    taken = taken == ir::kNoValue ? eq : o.op("Or", taken, eq);
  }
  if (g.wants(n - 1))
    g.set_grad(n - 1, g.unbroadcast(n == 1 ? dy : o.where(taken, zero, dy), g.input(n - 1)));
  return Status::ok();
}

// Where(C, X, Y): X takes dOut where C holds, Y elsewhere; C is bool and has none.
Status where_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId dy = g.grad_output(0), zero = o.c(0.0);
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(o.where(g.input(0), dy, zero), g.input(1)));
  if (g.wants(2)) g.set_grad(2, g.unbroadcast(o.where(g.input(0), zero, dy), g.input(2)));
  return Status::ok();
}

// PRelu: X < 0 gives slope X, else X.
Status prelu_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId x = g.input(0), slope = g.input(1), dy = g.grad_output(0);
  ValueId negative = o.op("Less", x, o.c(0.0));
  if (g.wants(0)) g.set_grad(0, o.where(negative, o.mul(dy, slope), dy));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(o.where(negative, o.mul(dy, x), o.c(0.0)), slope));
  return Status::ok();
}

// Clip = Min(Max(X, lo), hi) (hi wins when lo > hi). X takes dY where it passes unchanged; a bound
// takes the sum of dY over the elements clipped to it.
Status clip_grad(GradientContext& g) {
  Ops o = ops_for(g);
  ValueId x = g.input(0), y = g.output(0), dy = g.grad_output(0), zero = o.c(0.0);
  ValueId same = o.op("Equal", x, y);
  if (g.wants(0)) g.set_grad(0, o.where(same, dy, zero));
  if (!g.wants(1) && !g.wants(2)) return Status::ok();
  ValueId clipped = o.op("Not", same);
  for (size_t k = 1; k <= 2; ++k) {
    if (!g.wants(k)) continue;
    ValueId mask = o.op("And", clipped, o.op("Equal", y, g.input(k)));
    g.set_grad(k, g.unbroadcast(o.where(mask, dy, zero), g.input(k)));
  }
  return Status::ok();
}

Status identity_grad(GradientContext& g) {
  if (g.wants(0)) g.set_grad(0, g.grad_output(0));
  return Status::ok();
}

// Cast / CastLike: dY converted back to the input's element type.
Status cast_grad(GradientContext& g) {
  if (g.wants(0)) g.set_grad(0, cast_to(g, g.grad_output(0), g.dtype(g.input(0))));
  return Status::ok();
}

// CumSum: the adjoint of a cumulative sum is the cumulative sum the other way round, with the same
// exclusiveness (y_j = sum_{i<=j} x_i gives dx_i = sum_{j>=i} dy_j).
Status cumsum_grad(GradientContext& g) {
  if (!g.wants(0)) return Status::ok();
  const int64_t exclusive = g.attrs().i("exclusive"), reverse = g.attrs().i("reverse");
  g.set_grad(0, g.emit("CumSum", {g.grad_output(0), g.input(1)},
                       {{"exclusive", exclusive}, {"reverse", int64_t{reverse == 0 ? 1 : 0}}}));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Unary functions: dX = dY f'(X), written with Y where that is cheaper

constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
constexpr double kInvSqrt2 = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;     // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;    // sqrt(2 / pi)

ValueId neg_d(Ops& o, ValueId, ValueId, ValueId dy) {
  return o.neg(dy);
}
ValueId abs_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.mul(dy, o.op("Sign", x));
}
ValueId exp_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.mul(dy, y);
}
ValueId log_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, x);
}
ValueId sqrt_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.div(o.mul(dy, o.c(0.5)), y);
}
ValueId reciprocal_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.neg(o.mul(dy, o.square(y)));
}
ValueId erf_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.mul(dy, o.mul(o.op("Exp", o.neg(o.square(x))), o.c(kTwoOverSqrtPi)));
}
ValueId relu_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.op("ReluGrad", dy, y);  // one pass (was Where(Greater(Y, 0), dY, 0): two passes and a mask)
}
ValueId sigmoid_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.mul(dy, o.mul(y, o.sub(o.c(1.0), y)));
}
ValueId tanh_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.mul(dy, o.sub(o.c(1.0), o.square(y)));
}

ValueId sin_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.mul(dy, o.op("Cos", x));
}
ValueId cos_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.neg(o.mul(dy, o.op("Sin", x)));
}
ValueId tan_d(Ops& o, ValueId, ValueId y, ValueId dy) {
  return o.mul(dy, o.add(o.c(1.0), o.square(y)));
}
ValueId asin_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, o.op("Sqrt", o.sub(o.c(1.0), o.square(x))));
}
ValueId acos_d(Ops& o, ValueId x, ValueId y, ValueId dy) {
  return o.neg(asin_d(o, x, y, dy));
}
ValueId atan_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, o.add(o.c(1.0), o.square(x)));
}
ValueId sinh_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.mul(dy, o.op("Cosh", x));
}
ValueId cosh_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.mul(dy, o.op("Sinh", x));
}
ValueId asinh_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, o.op("Sqrt", o.add(o.square(x), o.c(1.0))));
}
ValueId acosh_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, o.op("Sqrt", o.sub(o.square(x), o.c(1.0))));
}
ValueId atanh_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, o.sub(o.c(1.0), o.square(x)));
}

ValueId softplus_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.mul(dy, o.op("Sigmoid", x));
}
// x / (1 + |x|) has derivative 1 / (1 + |x|)^2.
ValueId softsign_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  return o.div(dy, o.square(o.add(o.c(1.0), o.op("Abs", x))));
}
// x tanh(sp(x)): tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
ValueId mish_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  ValueId t = o.op("Tanh", o.op("Softplus", x));
  ValueId slope = o.mul(o.mul(x, o.op("Sigmoid", x)), o.sub(o.c(1.0), o.square(t)));
  return o.mul(dy, o.add(t, slope));
}
// x * clamp(x / 6 + 1/2, 0, 1): 0 below -3, 1 above 3, x / 3 + 1/2 between.
ValueId hardswish_d(Ops& o, ValueId x, ValueId, ValueId dy) {
  ValueId inside = o.add(o.mul(x, o.c(1.0 / 3.0)), o.c(0.5));
  ValueId d = o.where(o.op("Greater", x, o.c(3.0)), o.c(1.0), inside);
  return o.mul(dy, o.where(o.op("Less", x, o.c(-3.0)), o.c(0.0), d));
}

template <ValueId (*kD)(Ops&, ValueId, ValueId, ValueId)>
Status unary_rule(GradientContext& g) {
  return unary(g, [](Ops& o, ValueId x, ValueId y, ValueId dy) { return kD(o, x, y, dy); });
}

// ---------------------------------------------------------------------------------------------
// Activations with attributes

Status leaky_relu_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha");
  return unary(g, [alpha](Ops& o, ValueId x, ValueId, ValueId dy) {
    return o.where(o.op("Less", x, o.c(0.0)), o.mul(dy, o.c(alpha)), dy);
  });
}

// Selu: gamma for x > 0, gamma alpha e^x = Y + gamma alpha otherwise.
Status selu_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha"), gamma = g.attrs().f("gamma");
  return unary(g, [=](Ops& o, ValueId x, ValueId y, ValueId dy) {
    return o.mul(dy,
                 o.where(o.op("Greater", x, o.c(0.0)), o.c(gamma), o.add(y, o.c(gamma * alpha))));
  });
}

// Elu: 1 for x >= 0, alpha e^x = Y + alpha otherwise.
Status elu_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha");
  return unary(g, [=](Ops& o, ValueId x, ValueId y, ValueId dy) {
    return o.mul(dy, o.where(o.op("Less", x, o.c(0.0)), o.add(y, o.c(alpha)), o.c(1.0)));
  });
}

// Celu: 1 for x > 0, e^(x / alpha) = Y / alpha + 1 otherwise.
Status celu_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha");
  return unary(g, [=](Ops& o, ValueId x, ValueId y, ValueId dy) {
    ValueId below = o.add(o.mul(y, o.c(1.0 / alpha)), o.c(1.0));
    return o.mul(dy, o.where(o.op("Less", x, o.c(0.0)), below, o.c(1.0)));
  });
}

// HardSigmoid: alpha where 0 < Y < 1 (the linear part), 0 where clamped.
Status hard_sigmoid_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha");
  return unary(g, [=](Ops& o, ValueId, ValueId y, ValueId dy) {
    ValueId linear = o.op("And", o.op("Greater", y, o.c(0.0)), o.op("Less", y, o.c(1.0)));
    return o.where(linear, o.mul(dy, o.c(alpha)), o.c(0.0));
  });
}

// Swish x s(a x), s the sigmoid: s(a x) + a x s(a x) (1 - s(a x)).
Status swish_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha");
  return unary(g, [=](Ops& o, ValueId x, ValueId, ValueId dy) {
    ValueId ax = o.mul(x, o.c(alpha));
    ValueId s = o.op("Sigmoid", ax);
    return o.mul(dy, o.add(s, o.mul(o.mul(ax, s), o.sub(o.c(1.0), s))));
  });
}

Status thresholded_relu_grad(GradientContext& g) {
  const double alpha = g.attrs().f("alpha");
  return unary(g, [=](Ops& o, ValueId x, ValueId, ValueId dy) {
    return o.where(o.op("Greater", x, o.c(alpha)), dy, o.c(0.0));
  });
}

// Shrink: slope 1 where |x| > lambd, 0 in the dead zone.
Status shrink_grad(GradientContext& g) {
  const double lambd = g.attrs().f("lambd");
  return unary(g, [=](Ops& o, ValueId x, ValueId, ValueId dy) {
    return o.where(o.op("Greater", o.op("Abs", x), o.c(lambd)), dy, o.c(0.0));
  });
}

// Gelu 'none': Phi(x) + x phi(x). 'tanh': with t = tanh(u), u = c (x + a x^3),
// 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2).
Status gelu_grad(GradientContext& g) {
  const std::string& mode = g.attrs().s("approximate");
  if (mode != "none" && mode != "tanh") return g.fail("unknown approximate mode '" + mode + "'");
  const bool exact = mode == "none";
  if (g.grad_output(0) != ir::kNoValue && g.wants(0)) {  // one op (oneDNN's eltwise backward on the CPU)
    g.set_grad(0, g.emit("GeluGrad", {g.grad_output(0), g.input(0)}, {{"approximate", mode}}));
    return Status::ok();
  }
  return unary(g, [exact](Ops& o, ValueId x, ValueId, ValueId dy) {
    ValueId x2 = o.square(x);
    if (exact) {
      ValueId cdf = o.add(o.mul(o.op("Erf", o.mul(x, o.c(kInvSqrt2))), o.c(0.5)), o.c(0.5));
      ValueId xpdf = o.mul(x, o.mul(o.op("Exp", o.mul(x2, o.c(-0.5))), o.c(kInvSqrt2Pi)));
      return o.mul(dy, o.add(cdf, xpdf));
    }
    const double a = 0.044715;
    ValueId t =
        o.op("Tanh", o.mul(o.mul(x, o.c(kSqrt2OverPi)), o.add(o.c(1.0), o.mul(x2, o.c(a)))));
    ValueId left = o.mul(o.add(t, o.c(1.0)), o.c(0.5));
    ValueId du = o.mul(o.add(o.c(1.0), o.mul(x2, o.c(3.0 * a))), o.c(0.5 * kSqrt2OverPi));
    ValueId right = o.mul(o.mul(x, o.sub(o.c(1.0), o.square(t))), du);
    return o.mul(dy, o.add(left, right));
  });
}

// ---------------------------------------------------------------------------------------------
// Einsum
//
// The gradient of operand k is an Einsum of dY and the other operands whose output is k's term:
// for 'ij,jk->ik', dA = Einsum('ik,jk->ij', dY, B). The equation is first written out with
// letters only ("..." dims get unused letters, as the op aligns them: right-aligned). Then:
//   - a label of k that neither dY nor another operand has (summed inside k alone, 'ij->i') is
//     left out of the gradient's output, and put back by Unsqueeze + Expand;
//   - a "..." dim that k broadcasts (size 1 against a larger size) is summed: it is left out and
//     put back as size 1; another operand's broadcast dim gets a label of its own (of size 1);
//   - a label repeated in k's own term (a diagonal, 'ii->i') is computed once, then spread onto
//     the diagonal by a second Einsum with identity matrices (EyeLike): 'i,iI->iI'.

struct ExplicitEinsum {
  std::vector<std::string> inputs;  // one term per operand, letters only
  std::string output;
  std::string spare;  // letters the equation does not use
};

Expected<ExplicitEinsum> explicit_einsum(GradientContext& g) {
  std::string eq = g.attrs().s("equation");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  ExplicitEinsum e;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != g.num_inputs())
    return g.fail("equation '" + eq + "' does not match the operand count");
  std::set<char> used;
  std::map<char, int> count;
  for (char ch : eq)
    if (std::isalpha(static_cast<unsigned char>(ch))) used.insert(ch);
  for (const std::string& t : e.inputs)
    for (char ch : t)
      if (std::isalpha(static_cast<unsigned char>(ch))) ++count[ch];
  for (char ch = 'a'; ch <= 'z'; ++ch)
    if (!used.count(ch)) e.spare += ch;
  for (char ch = 'A'; ch <= 'Z'; ++ch)
    if (!used.count(ch)) e.spare += ch;
  std::vector<int> ell(e.inputs.size(), 0);
  int ell_rank = 0;
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    if (!g.type(g.input(k)).is_static()) return g.fail("the operands' shapes must be known");
    const size_t dots = e.inputs[k].find("...");
    if (dots == std::string::npos) continue;
    ell[k] = g.rank(g.input(k)) - static_cast<int>(e.inputs[k].size() - 3);
    ell_rank = std::max(ell_rank, ell[k]);
  }
  if (ell_rank > static_cast<int>(e.spare.size()))
    return g.fail("too many '...' dims to name with letters");
  const std::string ell_letters = e.spare.substr(0, static_cast<size_t>(ell_rank));
  e.spare.erase(0, static_cast<size_t>(ell_rank));
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (size_t dots = e.inputs[k].find("..."); dots != std::string::npos)
      e.inputs[k].replace(dots, 3, ell_letters.substr(static_cast<size_t>(ell_rank - ell[k])));
  if (arrow != std::string::npos) {
    e.output = eq.substr(arrow + 2);
    if (size_t dots = e.output.find("..."); dots != std::string::npos)
      e.output.replace(dots, 3, ell_letters);
  } else {  // NumPy's implicit output: "..." dims, then the letters used once, in ASCII order
    e.output = ell_letters;
    for (const auto& [ch, n] : count)  // std::map<char>: ASCII order, A-Z before a-z
      if (n == 1) e.output += ch;
  }
  return e;
}

// dX_k = Einsum(dY, other operands) with k's term as output (see above).
Expected<ValueId> einsum_operand_grad(GradientContext& g, const ExplicitEinsum& e,
                                      std::map<char, int64_t>& size, size_t k) {
  const std::string& term = e.inputs[k];
  const Shape shape = g.type(g.input(k)).static_shape();
  std::string spare = e.spare, lhs = e.output;
  std::set<char> have(e.output.begin(), e.output.end());
  std::vector<ValueId> ins{g.grad_output(0)};
  for (size_t m = 0; m < e.inputs.size(); ++m) {
    if (m == k) continue;
    std::string t = e.inputs[m];
    const Shape sm = g.type(g.input(m)).static_shape();
    for (size_t a = 0; a < t.size(); ++a) {
      if (sm[a] != 1 || size[t[a]] == 1) continue;
      if (spare.empty()) return g.fail("too many broadcast dims to name with letters");
      t[a] = spare.back();
      spare.pop_back();
    }
    have.insert(t.begin(), t.end());
    lhs += "," + t;
    ins.push_back(g.input(m));
  }
  // The gradient over k's distinct labels (a repeated label counts once: the diagonal).
  std::string distinct, kept;
  Shape distinct_shape;
  std::vector<int64_t> dropped;
  bool expand = false;
  for (size_t a = 0; a < term.size(); ++a) {
    if (distinct.find(term[a]) != std::string::npos) continue;
    const bool broadcast = shape[a] == 1 && size[term[a]] > 1;
    if (!broadcast && have.count(term[a])) {
      kept += term[a];
    } else {
      dropped.push_back(static_cast<int64_t>(distinct.size()));
      expand |= shape[a] > 1;
    }
    distinct += term[a];
    distinct_shape.push_back(shape[a]);
  }
  ValueId r = ins.size() == 1 && lhs == kept
                  ? ins[0]
                  : g.emit("Einsum", ins, {{"equation", lhs + "->" + kept}});
  if (!dropped.empty()) r = g.emit("Unsqueeze", {r, g.ints(dropped)});
  if (expand) r = g.emit("Expand", {r, g.ints(distinct_shape)});
  if (distinct == term) return r;
  // Put the diagonal back: each repeat of label i becomes a new label i' times identity(i, i').
  std::string eq = distinct, out;
  std::vector<ValueId> diag_ins{r};
  for (size_t a = 0; a < term.size(); ++a) {
    if (term.find(term[a]) == a) {
      out += term[a];
      continue;
    }
    if (spare.empty()) return g.fail("too many repeated labels to name with letters");
    const char fresh = spare.back();
    spare.pop_back();
    out += fresh;
    eq += std::string(",") + term[a] + fresh;
    ValueId square = g.emit("ConstantOfShape", {g.ints({shape[a], shape[a]})});
    diag_ins.push_back(
        g.emit("EyeLike", {square}, {{"dtype", std::string(dtype_name(g.dtype(r)))}}));
  }
  return g.emit("Einsum", diag_ins, {{"equation", eq + "->" + out}});
}

Status einsum_grad(GradientContext& g) {
  TRY(ExplicitEinsum e, explicit_einsum(g));
  std::map<char, int64_t> size;  // each label's extent (the largest an operand gives it)
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    const Shape s = g.type(g.input(k)).static_shape();
    for (size_t a = 0; a < s.size(); ++a)
      size[e.inputs[k][a]] = std::max(size[e.inputs[k][a]], s[a]);
  }
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    if (!g.wants(k)) continue;
    TRY(ValueId dx, einsum_operand_grad(g, e, size, k));
    g.set_grad(k, dx);
  }
  return Status::ok();
}

}  // namespace

void register_elementwise_gradients(ops::OpRegistry& registry) {
  // Arithmetic and variadic
  set_gradient(registry, "Add", add_grad);
  set_gradient(registry, "Sub", sub_grad);
  set_gradient(registry, "Mul", mul_grad);
  set_gradient(registry, "Div", div_grad);
  set_gradient(registry, "Pow", pow_grad);
  set_gradient(registry, "Mod", mod_grad);  // float (fmod=1) only: integer Mod never wants one
  set_gradient(registry, "Sum", sum_grad);
  set_gradient(registry, "Mean", mean_grad);
  set_gradient(registry, "Max", extreme_grad);
  set_gradient(registry, "Min", extreme_grad);
  set_gradient(registry, "Where", where_grad);
  set_gradient(registry, "Clip", clip_grad);
  set_gradient(registry, "PRelu", prelu_grad);
  set_gradient(registry, "Identity", identity_grad);
  set_gradient(registry, "Cast", cast_grad);
  set_gradient(registry, "CastLike", cast_grad);  // target_type's values are never read
  set_gradient(registry, "CumSum", cumsum_grad);
  set_gradient(registry, "Einsum", einsum_grad);
  // Unary math
  set_gradient(registry, "Neg", unary_rule<neg_d>);
  set_gradient(registry, "Abs", unary_rule<abs_d>);
  set_gradient(registry, "Exp", unary_rule<exp_d>);
  set_gradient(registry, "Log", unary_rule<log_d>);
  set_gradient(registry, "Sqrt", unary_rule<sqrt_d>);
  set_gradient(registry, "Reciprocal", unary_rule<reciprocal_d>);
  set_gradient(registry, "Erf", unary_rule<erf_d>);
  set_gradient(registry, "Sin", unary_rule<sin_d>);
  set_gradient(registry, "Cos", unary_rule<cos_d>);
  set_gradient(registry, "Tan", unary_rule<tan_d>);
  set_gradient(registry, "Asin", unary_rule<asin_d>);
  set_gradient(registry, "Acos", unary_rule<acos_d>);
  set_gradient(registry, "Atan", unary_rule<atan_d>);
  set_gradient(registry, "Sinh", unary_rule<sinh_d>);
  set_gradient(registry, "Cosh", unary_rule<cosh_d>);
  set_gradient(registry, "Asinh", unary_rule<asinh_d>);
  set_gradient(registry, "Acosh", unary_rule<acosh_d>);
  set_gradient(registry, "Atanh", unary_rule<atanh_d>);
  // Activations
  set_gradient(registry, "Relu", unary_rule<relu_d>);
  set_gradient(registry, "Sigmoid", unary_rule<sigmoid_d>);
  set_gradient(registry, "Tanh", unary_rule<tanh_d>);
  set_gradient(registry, "Softplus", unary_rule<softplus_d>);
  set_gradient(registry, "Softsign", unary_rule<softsign_d>);
  set_gradient(registry, "Mish", unary_rule<mish_d>);
  set_gradient(registry, "HardSwish", unary_rule<hardswish_d>);
  set_gradient(registry, "LeakyRelu", leaky_relu_grad);
  set_gradient(registry, "Selu", selu_grad);
  set_gradient(registry, "Elu", elu_grad);
  set_gradient(registry, "Swish", swish_grad);
  set_gradient(registry, "Celu", celu_grad);
  set_gradient(registry, "HardSigmoid", hard_sigmoid_grad);
  set_gradient(registry, "ThresholdedRelu", thresholded_relu_grad);
  set_gradient(registry, "Shrink", shrink_grad);
  set_gradient(registry, "Gelu", gelu_grad);
}

}  // namespace tessera::autodiff
