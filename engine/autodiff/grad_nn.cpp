// Gradient rules of the nn families: nn.cpp (MatMul, Gemm, Softmax, LogSoftmax), nn_conv.cpp and
// nn_more_conv.cpp (Conv, ConvTranspose, pools), nn_norm.cpp and nn_more_norm.cpp
// (normalisations, Dropout), loss_ops.cpp; and the reasons of the backward ops (grad_ops.cpp).
//
// Convolution and pooling gradients are single backward ops with explicit pads (auto_pad is
// resolved here from the static shapes); the normalisations are composed from element-wise ops and
// reductions, with the moments recomputed (ONNX BatchNormalization has no saved statistics):
//   x_c = x - mean,  inv = 1 / sqrt(var + eps),  xhat = x_c * inv,  g = dY * scale
//   dX = inv * (g - mean(g) - xhat * mean(g * xhat))      (means over the normalised axes)
#include <algorithm>

#include "engine/autodiff/gradient.h"

namespace tessera::autodiff {
namespace {

using ir::Attributes;
using ir::ValueId;
using ops::GradientContext;

std::vector<int64_t> ints_or(const GradientContext& g, const std::string& name, size_t n, int64_t dflt) {
  const ir::Attribute* a = g.attrs().get(name);
  if (a && a->kind() == ir::AttrKind::kInts) return a->ints();
  return std::vector<int64_t>(n, dflt);
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// Spatial extents of a static [N, C, D...] value, or an error naming `what`.
Expected<std::vector<int64_t>> static_spatial(GradientContext& g, ValueId v, const std::string& what) {
  const ir::TensorType& t = g.type(v);
  if (!t.is_static() || t.rank() < 3) return g.fail(what + " must have a static [N, C, D...] shape");
  Shape s = t.static_shape();
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

// The pads a Conv or pool node applied (auto_pad resolved from the static shapes of X and Y).
Expected<std::vector<int64_t>> resolved_pads(GradientContext& g, const std::vector<int64_t>& kernel) {
  const size_t nsp = kernel.size();
  const std::string auto_pad = g.attrs().has("auto_pad") ? g.attrs().s("auto_pad") : "NOTSET";
  if (auto_pad == "NOTSET") return ints_or(g, "pads", 2 * nsp, 0);
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * nsp, 0);
  TRY(std::vector<int64_t> in, static_spatial(g, g.input(0), "X (auto_pad " + auto_pad + ")"));
  TRY(std::vector<int64_t> out, static_spatial(g, g.output(0), "Y (auto_pad " + auto_pad + ")"));
  const std::vector<int64_t> s = ints_or(g, "strides", nsp, 1), d = ints_or(g, "dilations", nsp, 1);
  std::vector<int64_t> pads(2 * nsp, 0);
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + d[i] * (kernel[i] - 1) + 1 - in[i]);
    pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pads[nsp + i] = total - pads[i];
  }
  return pads;
}

// pads, strides and dilations of a window op, explicit.
Expected<Attributes> window_attrs(GradientContext& g, const std::vector<int64_t>& kernel) {
  const size_t nsp = kernel.size();
  TRY(std::vector<int64_t> pads, resolved_pads(g, kernel));
  return Attributes{{"pads", pads},
                    {"strides", ints_or(g, "strides", nsp, 1)},
                    {"dilations", ints_or(g, "dilations", nsp, 1)}};
}

// dY summed over every axis but 1 (a per-channel bias gradient).
ValueId channel_sum(GradientContext& g, ValueId dy) {
  std::vector<int64_t> axes{0};
  for (int64_t a : range(2, g.rank(dy))) axes.push_back(a);
  return g.emit("ReduceSum", {dy, g.ints(axes)}, {{"keepdims", int64_t{0}}});
}

// A per-channel [C] value viewed as [C, 1, ...] against a rank-`rank` [N, C, ...] tensor.
ValueId per_channel(GradientContext& g, ValueId v, int rank) {
  if (rank <= 2) return v;
  return g.emit("Unsqueeze", {v, g.ints(range(1, rank - 1))});
}

// ---- convolution and pooling -------------------------------------------------------------------

Status conv_grad(GradientContext& g) {
  const ir::TensorType& wt = g.type(g.input(1));
  if (!wt.rank_known || wt.rank() < 3) return g.fail("W must have a known rank >= 3");
  std::vector<int64_t> kernel;
  for (int i = 2; i < wt.rank(); ++i) {
    const ir::Dim& d = wt.dims[static_cast<size_t>(i)];
    if (!d.is_known()) return g.fail("the kernel size must be known");
    kernel.push_back(d.size);
  }
  TRY(Attributes attrs, window_attrs(g, kernel));
  attrs.insert_or_assign("group", g.attrs().i("group"));
  const ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.emit("ConvGradInput", {dy, g.input(1), g.shape_of(g.input(0))}, attrs));
  const bool bias = g.has_input(2) && g.wants(2);
  if (g.wants(1) && bias) {  // the bias gradient inside the weights' backward (oneDNN's diff_bias)
    const std::vector<ValueId> d = g.emit_n("ConvGradWeight", {dy, g.input(0), g.shape_of(g.input(1))}, 2, attrs);
    g.set_grad(1, d[0]);
    g.set_grad(2, d[1]);
    return Status::ok();
  }
  if (g.wants(1)) g.set_grad(1, g.emit("ConvGradWeight", {dy, g.input(0), g.shape_of(g.input(1))}, attrs));
  if (bias) g.set_grad(2, channel_sum(g, dy));
  return Status::ok();
}

// ConvTranspose(X, W) is the input gradient of Conv(., W) taken at X, so its gradients are
// Conv(dY, W) for X and ConvGradWeight(X, dY) for W, with the transposed convolution's begin pads
// and end pads that give X's extents back.
Status conv_transpose_grad(GradientContext& g) {
  TRY(std::vector<int64_t> in, static_spatial(g, g.input(0), "X"));
  TRY(std::vector<int64_t> out, static_spatial(g, g.output(0), "Y"));
  const ir::TensorType& wt = g.type(g.input(1));
  if (!wt.is_static()) return g.fail("W must have a static shape");
  const size_t nsp = in.size();
  const Shape w = wt.static_shape();
  const std::vector<int64_t> s = ints_or(g, "strides", nsp, 1), d = ints_or(g, "dilations", nsp, 1);
  const std::vector<int64_t> pads = ints_or(g, "pads", 2 * nsp, 0), op = ints_or(g, "output_padding", nsp, 0);
  const std::string auto_pad = g.attrs().s("auto_pad");
  std::vector<int64_t> conv_pads(2 * nsp, 0);
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t ext = d[i] * (w[2 + i] - 1) + 1, full = s[i] * (in[i] - 1) + op[i] + ext;
    int64_t pb = auto_pad == "VALID" ? 0 : pads[i];
    if (g.attrs().has("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = full - out[i];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pb = auto_pad == "SAME_UPPER" ? half : total - half;
    }
    if (pb < 0) return g.fail("a negative begin pad (output_shape past the full output) is not supported");
    conv_pads[i] = pb;
    conv_pads[nsp + i] = std::max<int64_t>(0, (in[i] - 1) * s[i] + ext - out[i] - pb);
  }
  const Attributes attrs{{"pads", conv_pads}, {"strides", s}, {"dilations", d}, {"group", g.attrs().i("group")}};
  const ValueId dy = g.grad_output(0);
  if (g.wants(0)) g.set_grad(0, g.emit("Conv", {dy, g.input(1)}, attrs));
  if (g.wants(1)) g.set_grad(1, g.emit("ConvGradWeight", {g.input(0), dy, g.shape_of(g.input(1))}, attrs));
  if (g.has_input(2) && g.wants(2)) g.set_grad(2, channel_sum(g, dy));
  return Status::ok();
}

Status pool_grad(GradientContext& g, bool max) {
  const std::vector<int64_t> kernel = g.attrs().ints("kernel_shape");
  TRY(Attributes attrs, window_attrs(g, kernel));
  attrs.insert_or_assign("kernel_shape", kernel);
  const ValueId dy = g.grad_output(0);
  if (max) {
    g.set_grad(0, g.emit("MaxPoolGrad", {dy, g.input(0)}, attrs));
  } else {
    attrs.insert_or_assign("count_include_pad", g.attrs().i("count_include_pad"));
    g.set_grad(0, g.emit("AveragePoolGrad", {dy, g.shape_of(g.input(0))}, attrs));
  }
  return Status::ok();
}

// Global pools are pools whose window is the whole plane.
Status global_pool_grad(GradientContext& g, bool max) {
  TRY(std::vector<int64_t> kernel, static_spatial(g, g.input(0), "X"));
  const Attributes attrs{{"kernel_shape", kernel}};
  const ValueId dy = g.grad_output(0);
  if (max)
    g.set_grad(0, g.emit("MaxPoolGrad", {dy, g.input(0)}, attrs));
  else
    g.set_grad(0, g.emit("AveragePoolGrad", {dy, g.shape_of(g.input(0))}, attrs));
  return Status::ok();
}

// ---- MatMul, Gemm ------------------------------------------------------------------------------

// dA = dY B^T and dB = A^T dY on numpy.matmul's promoted operands (1-D A as [1, K], 1-D B as
// [K, 1]), summed over broadcast batch axes; 2-D products are Gemms with transposed operands.
Status matmul_grad(GradientContext& g) {
  const ValueId a = g.input(0), b = g.input(1);
  const int ra = g.rank(a), rb = g.rank(b);
  if (ra < 1 || rb < 1) return g.fail("operands must have a known rank >= 1");
  ValueId dy = g.grad_output(0);
  const ValueId a2 = ra == 1 ? g.emit("Unsqueeze", {a, g.ints({0})}) : a;
  const ValueId b2 = rb == 1 ? g.emit("Unsqueeze", {b, g.ints({1})}) : b;
  const int ry = g.rank(dy);
  if (ra == 1 && rb == 1) dy = g.emit("Reshape", {dy, g.ints({1, 1})});
  else if (ra == 1) dy = g.emit("Unsqueeze", {dy, g.ints({ry - 1})});
  else if (rb == 1) dy = g.emit("Unsqueeze", {dy, g.ints({ry})});
  const bool flat = g.rank(dy) == 2 && g.rank(a2) == 2 && g.rank(b2) == 2;
  const ir::TensorType at = g.type(a2), yt = g.type(dy);
  if (ra >= 3 && rb == 2 && at.is_static() && yt.is_static()) {
    // A linear layer over batch axes ([N, T, K] x [K, M]): the batch axes fold into the rows of
    // two Gemms (views, no copies): dA = dY W^T, dW = A^T dY over all N*T rows at once, instead of
    // a batched product per row block, its Transposes and a ReduceSum over N.
    const Shape as = at.static_shape(), ys = yt.static_shape();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < as.size(); ++i) rows *= as[i];
    const ValueId dy2 = g.emit("Reshape", {dy, g.ints({rows, ys.back()})});
    if (g.wants(0))
      g.set_grad(0, g.emit("Reshape", {g.emit("Gemm", {dy2, b2}, {{"transB", int64_t{1}}}), g.shape_of(a)}));
    if (g.wants(1))
      g.set_grad(1, g.emit("Gemm", {g.emit("Reshape", {a2, g.ints({rows, as.back()})}), dy2}, {{"transA", int64_t{1}}}));
    return Status::ok();
  }
  auto transposed = [&](ValueId v) {
    std::vector<int64_t> perm = range(0, g.rank(v));
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return g.emit("Transpose", {v}, {{"perm", perm}});
  };
  auto finish = [&](size_t i, ValueId grad, ValueId promoted, ValueId original) {
    ValueId r = g.unbroadcast(grad, promoted);
    if (promoted != original) r = g.emit("Reshape", {r, g.shape_of(original)});
    g.set_grad(i, r);
  };
  if (g.wants(0))
    finish(0, flat ? g.emit("Gemm", {dy, b2}, {{"transB", int64_t{1}}}) : g.emit("MatMul", {dy, transposed(b2)}), a2, a);
  if (g.wants(1))
    finish(1, flat ? g.emit("Gemm", {a2, dy}, {{"transA", int64_t{1}}}) : g.emit("MatMul", {transposed(a2), dy}), b2, b);
  return Status::ok();
}

// Y = alpha op(A) op(B) + beta C:
//   dA = alpha dY op(B)^T  (transA: alpha op(B) dY^T),  dB = alpha op(A)^T dY  (transB: alpha dY^T op(A)).
Status gemm_grad(GradientContext& g) {
  const int64_t ta = g.attrs().i("transA"), tb = g.attrs().i("transB");
  const double alpha = g.attrs().f("alpha"), beta = g.attrs().f("beta");
  const ValueId dy = g.grad_output(0), a = g.input(0), b = g.input(1);
  auto gemm = [&](ValueId x, ValueId y, int64_t tx, int64_t ty) {
    Attributes at{{"transA", tx}, {"transB", ty}};
    if (alpha != 1.0) at.insert_or_assign("alpha", alpha);
    return g.emit("Gemm", {x, y}, at);
  };
  if (g.wants(0)) g.set_grad(0, ta ? gemm(b, dy, tb, 1) : gemm(dy, b, 0, 1 - tb));
  if (g.wants(1)) g.set_grad(1, tb ? gemm(dy, a, 1, ta) : gemm(a, dy, 1 - ta, 0));
  if (g.has_input(2) && g.wants(2)) {
    const ValueId scaled = beta == 1.0 ? dy : g.emit("Mul", {dy, g.scalar(beta, g.dtype(dy))});
    g.set_grad(2, g.unbroadcast(scaled, g.input(2)));
  }
  return Status::ok();
}

// ---- Softmax, LogSoftmax, losses ---------------------------------------------------------------

int64_t axis_of(const GradientContext& g, int rank) {
  int64_t axis = g.attrs().i("axis");
  return axis < 0 ? axis + rank : axis;
}

// Softmax: dX = Y * (dY - sum(dY * Y)); LogSoftmax: dX = dY - exp(Y) * sum(dY), sums along axis.
ValueId softmax_backward(GradientContext& g, ValueId dy, ValueId y, int64_t axis, bool log) {
  const Attributes keep{{"keepdims", int64_t{1}}};
  if (log) {
    const ValueId s = g.emit("ReduceSum", {dy, g.ints({axis})}, keep);
    return g.emit("Sub", {dy, g.emit("Mul", {g.emit("Exp", {y}), s})});
  }
  const ValueId s = g.emit("ReduceSum", {g.emit("Mul", {dy, y}), g.ints({axis})}, keep);
  return g.emit("Mul", {y, g.emit("Sub", {dy, s})});
}

Status softmax_grad(GradientContext& g, bool log) {
  const int64_t axis = axis_of(g, g.rank(g.input(0)));
  if (!log) {  // one op (oneDNN's softmax backward on the CPU)
    g.set_grad(0, g.emit("SoftmaxGrad", {g.grad_output(0), g.output(0)}, {{"axis", axis}}));
    return Status::ok();
  }
  g.set_grad(0, softmax_backward(g, g.grad_output(0), g.output(0), axis, log));
  return Status::ok();
}

Attributes loss_attrs(const GradientContext& g) {
  Attributes a{{"reduction", g.attrs().s("reduction")}};
  if (g.attrs().has("ignore_index")) a.insert_or_assign("ignore_index", g.attrs().i("ignore_index"));
  return a;
}

Status loss_grad(GradientContext& g, bool softmax) {
  if (g.wants(2)) return g.fail("the gradient with respect to the class weights is not supported");
  std::vector<ValueId> parts;
  if (g.grad_output(0) != ir::kNoValue) {
    std::vector<ValueId> in{g.grad_output(0), g.input(0), g.input(1)};
    if (g.has_input(2)) in.push_back(g.input(2));
    parts.push_back(g.emit(softmax ? "SoftmaxCrossEntropyLossGrad" : "NegativeLogLikelihoodLossGrad", in, loss_attrs(g)));
  }
  if (softmax && g.grad_output(1) != ir::kNoValue)  // log_prob = LogSoftmax(scores, axis 1)
    parts.push_back(softmax_backward(g, g.grad_output(1), g.output(1), 1, /*log=*/true));
  if (!parts.empty()) g.set_grad(0, parts.size() == 1 ? parts[0] : g.emit("Sum", parts));
  return Status::ok();
}

// ---- normalisations ----------------------------------------------------------------------------

struct Moments {
  ValueId xc, inv, xhat;
};

// Centred x, 1 / sqrt(var + eps) and the normalised x, moments over `axes` (kept as size 1).
Moments moments(GradientContext& g, ValueId x, const std::vector<int64_t>& axes, double eps) {
  const Attributes red{{"axes", axes}, {"keepdims", int64_t{1}}};
  const DType dt = g.dtype(x);
  Moments m;
  m.xc = g.emit("Sub", {x, g.emit("ReduceMean", {x}, red)});
  const ValueId var = g.emit("ReduceMean", {g.emit("Mul", {m.xc, m.xc})}, red);
  m.inv = g.emit("Div", {g.scalar(1.0, dt), g.emit("Sqrt", {g.emit("Add", {var, g.scalar(eps, dt)})})});
  m.xhat = g.emit("Mul", {m.xc, m.inv});
  return m;
}

// dX = inv * (gx - mean(gx) - xhat * mean(gx * xhat)), the gradient of xhat for the upstream gx.
ValueId normalize_backward(GradientContext& g, ValueId gx, const Moments& m, const std::vector<int64_t>& axes) {
  const Attributes red{{"axes", axes}, {"keepdims", int64_t{1}}};
  const ValueId m1 = g.emit("ReduceMean", {gx}, red);
  const ValueId m2 = g.emit("ReduceMean", {g.emit("Mul", {gx, m.xhat})}, red);
  const ValueId inner = g.emit("Sub", {g.emit("Sub", {gx, m1}), g.emit("Mul", {m.xhat, m2})});
  return g.emit("Mul", {m.inv, inner});
}

std::vector<int64_t> all_but_channels(int rank) {
  std::vector<int64_t> axes{0};
  for (int64_t a : range(2, rank)) axes.push_back(a);
  return axes;
}

// Inference: Y = X * a + (B - mean * a) with a = scale / sqrt(var + eps), all inputs differentiable.
Status batchnorm_inference_grad(GradientContext& g) {
  const ValueId dy = g.grad_output(0), x = g.input(0);
  const int rank = g.rank(x);
  const DType dt = g.dtype(x);
  const ValueId inv = g.emit("Div", {g.scalar(1.0, dt), g.emit("Sqrt", {g.emit("Add", {g.input(4), g.scalar(g.attrs().f("epsilon"), dt)})})});
  const ValueId a = g.emit("Mul", {g.input(1), inv});
  if (g.wants(0)) g.set_grad(0, g.emit("Mul", {dy, per_channel(g, a, rank)}));
  const ValueId db = channel_sum(g, dy);
  if (g.wants(2)) g.set_grad(2, db);
  if (g.wants(3)) g.set_grad(3, g.emit("Neg", {g.emit("Mul", {db, a})}));
  if (g.wants(1) || g.wants(4)) {
    const ValueId xc = g.emit("Sub", {x, per_channel(g, g.input(3), rank)});
    const ValueId s = channel_sum(g, g.emit("Mul", {dy, xc}));  // sum(dY * (X - mean))
    if (g.wants(1)) g.set_grad(1, g.emit("Mul", {s, inv}));
    if (g.wants(4)) {  // d/dvar = -0.5 * scale * inv^3 * s
      const ValueId inv3 = g.emit("Mul", {inv, g.emit("Mul", {inv, inv})});
      g.set_grad(4, g.emit("Mul", {g.emit("Mul", {s, g.input(1)}), g.emit("Mul", {inv3, g.scalar(-0.5, dt)})}));
    }
  }
  return Status::ok();
}

// Training: batch moments over every axis but 1; running_mean / running_var (outputs 1, 2) are
// input_* * momentum + batch_* * (1 - momentum).
Status batchnorm_training_grad(GradientContext& g) {
  const ValueId x = g.input(0);
  const int rank = g.rank(x);
  const DType dt = g.dtype(x);
  const std::vector<int64_t> axes = all_but_channels(rank);
  const double momentum = g.attrs().f("momentum");
  const ValueId grm = g.grad_output(1), grv = g.grad_output(2);
  if (const ValueId dy = g.grad_output(0); dy != ir::kNoValue && grm == ir::kNoValue && grv == ir::kNoValue) {
    // The usual case (the running statistics only feed the next step): one fused op.
    const std::vector<ValueId> d = g.emit_n("BatchNormalizationGrad", {dy, x, g.input(1)}, 3, {{"epsilon", g.attrs().f("epsilon")}});
    if (g.wants(0)) g.set_grad(0, d[0]);
    if (g.wants(1)) g.set_grad(1, d[1]);
    if (g.wants(2)) g.set_grad(2, d[2]);
    return Status::ok();
  }
  const Moments m = moments(g, x, axes, g.attrs().f("epsilon"));
  std::vector<ValueId> dx;
  if (const ValueId dy = g.grad_output(0); dy != ir::kNoValue) {
    if (g.wants(0)) dx.push_back(normalize_backward(g, g.emit("Mul", {dy, per_channel(g, g.input(1), rank)}), m, axes));
    if (g.wants(1)) g.set_grad(1, channel_sum(g, g.emit("Mul", {dy, m.xhat})));
    if (g.wants(2)) g.set_grad(2, channel_sum(g, dy));
  }
  if (g.wants(3) && grm != ir::kNoValue) g.set_grad(3, g.emit("Mul", {grm, g.scalar(momentum, dt)}));
  if (g.wants(4) && grv != ir::kNoValue) g.set_grad(4, g.emit("Mul", {grv, g.scalar(momentum, dt)}));
  if (g.wants(0) && (grm != ir::kNoValue || grv != ir::kNoValue)) {
    const ir::TensorType& xt = g.type(x);
    if (!xt.is_static()) return g.fail("gradients through the running statistics need a static X");
    const double count = static_cast<double>(xt.static_numel() / xt.static_shape()[1]);
    const double k = (1.0 - momentum) / count;
    // d batch_mean / dX = 1 / count; d batch_var / dX = 2 (X - mean) / count.
    if (grm != ir::kNoValue)
      dx.push_back(g.emit("Expand", {g.emit("Mul", {per_channel(g, grm, rank), g.scalar(k, dt)}), g.shape_of(x)}));
    if (grv != ir::kNoValue)
      dx.push_back(g.emit("Mul", {m.xc, g.emit("Mul", {per_channel(g, grv, rank), g.scalar(2 * k, dt)})}));
  }
  if (!dx.empty()) g.set_grad(0, dx.size() == 1 ? dx[0] : g.emit("Sum", dx));
  return Status::ok();
}

Status batchnorm_grad(GradientContext& g) {
  return g.attrs().i("training_mode") ? batchnorm_training_grad(g) : batchnorm_inference_grad(g);
}

Status layernorm_grad(GradientContext& g) {
  if (g.grad_output(1) != ir::kNoValue || g.grad_output(2) != ir::kNoValue)
    return g.fail("gradients through the Mean and InvStdDev outputs are not supported");
  const ValueId dy = g.grad_output(0), x = g.input(0);
  const int rank = g.rank(x);
  const int64_t axis = axis_of(g, rank);
  const std::vector<int64_t> axes = range(axis, rank);
  const ir::TensorType xt = g.type(x), st = g.type(g.input(1));
  const Shape xs = xt.is_static() ? xt.static_shape() : Shape{};
  if (xt.is_static() && st.is_static() && Shape(xs.begin() + axis, xs.end()) == st.static_shape() &&
      (!g.has_input(2) || (g.type(g.input(2)).is_static() && g.type(g.input(2)).static_shape() == st.static_shape()))) {
    // Scale and B of the normalised dims (the usual case): one op.
    const std::vector<ValueId> d = g.emit_n("LayerNormalizationGrad", {dy, x, g.input(1)}, 3,
                                            {{"axis", axis}, {"epsilon", g.attrs().f("epsilon")}});
    if (g.wants(0)) g.set_grad(0, d[0]);
    if (g.wants(1)) g.set_grad(1, d[1]);
    if (g.has_input(2) && g.wants(2)) g.set_grad(2, d[2]);
    return Status::ok();
  }
  const Moments m = moments(g, x, axes, g.attrs().f("epsilon"));
  if (g.wants(0)) g.set_grad(0, normalize_backward(g, g.emit("Mul", {dy, g.input(1)}), m, axes));
  if (g.wants(1)) g.set_grad(1, g.unbroadcast(g.emit("Mul", {dy, m.xhat}), g.input(1)));
  if (g.has_input(2) && g.wants(2)) g.set_grad(2, g.unbroadcast(dy, g.input(2)));
  return Status::ok();
}

Status instance_norm_grad(GradientContext& g) {
  const ValueId dy = g.grad_output(0), x = g.input(0);
  const int rank = g.rank(x);
  const std::vector<int64_t> axes = range(2, rank);
  const Moments m = moments(g, x, axes, g.attrs().f("epsilon"));
  if (g.wants(0)) g.set_grad(0, normalize_backward(g, g.emit("Mul", {dy, per_channel(g, g.input(1), rank)}), m, axes));
  if (g.wants(1)) g.set_grad(1, channel_sum(g, g.emit("Mul", {dy, m.xhat})));
  if (g.wants(2)) g.set_grad(2, channel_sum(g, dy));
  return Status::ok();
}

// Y = x_c / d with d = sqrt(var) + 1e-9 (the epsilon outside the root):
//   dX = (dY - mean(dY)) / d - x_c * mean(dY * x_c) / (d^2 sqrt(var)).
Status mvn_grad(GradientContext& g) {
  const ValueId dy = g.grad_output(0), x = g.input(0);
  const int rank = g.rank(x);
  std::vector<int64_t> axes = g.attrs().ints("axes");
  for (int64_t& a : axes)
    if (a < 0) a += rank;
  const DType dt = g.dtype(x);
  const Attributes red{{"axes", axes}, {"keepdims", int64_t{1}}};
  const ValueId xc = g.emit("Sub", {x, g.emit("ReduceMean", {x}, red)});
  const ValueId sd = g.emit("Sqrt", {g.emit("ReduceMean", {g.emit("Mul", {xc, xc})}, red)});
  const ValueId inv = g.emit("Div", {g.scalar(1.0, dt), g.emit("Add", {sd, g.scalar(1e-9, dt)})});
  const ValueId first = g.emit("Mul", {inv, g.emit("Sub", {dy, g.emit("ReduceMean", {dy}, red)})});
  const ValueId m2 = g.emit("ReduceMean", {g.emit("Mul", {dy, xc})}, red);
  const ValueId coef = g.emit("Div", {g.emit("Mul", {m2, g.emit("Mul", {inv, inv})}), sd});
  g.set_grad(0, g.emit("Sub", {first, g.emit("Mul", {xc, coef})}));
  return Status::ok();
}

Status lrn_grad(GradientContext& g) {
  const Attributes attrs{{"size", g.attrs().i("size")},
                         {"alpha", g.attrs().f("alpha")},
                         {"beta", g.attrs().f("beta")},
                         {"bias", g.attrs().f("bias")}};
  g.set_grad(0, g.emit("LRNGrad", {g.grad_output(0), g.input(0)}, attrs));
  return Status::ok();
}

// Training: dX = dY * kept / (1 - ratio) (DropoutGrad regenerates the mask from seed and
// rng_offset and rng_rows); d ratio = sum(dY * Y) / (1 - ratio) for the fixed mask. Otherwise the identity.
Status dropout_grad(GradientContext& g) {
  const ValueId dy = g.grad_output(0);
  bool maybe_training = g.has_input(2);
  if (maybe_training)
    if (const Tensor* t = g.constant(g.input(2))) maybe_training = t->numel() > 0 && t->get(0) != 0;
  // A constant ratio of 0 drops nothing (torchvision's Swin exports 24 such attention Dropouts in
  // training mode): the identity, without a DropoutGrad to regenerate an all-true mask.
  if (maybe_training && g.has_input(1) && !g.wants(1))
    if (const Tensor* r = g.constant(g.input(1))) maybe_training = !(r->numel() == 1 && r->get(0) == 0);
  if (!maybe_training) {
    if (g.wants(0)) g.set_grad(0, dy);
    return Status::ok();
  }
  if (g.wants(0)) {
    std::vector<ValueId> in{dy, g.input(1), g.input(2)};
    if (g.has_input(3) || g.has_input(4)) in.push_back(g.input(3));
    if (g.has_input(4)) in.push_back(g.input(4));
    Attributes attrs;
    if (g.attrs().has("seed")) attrs.insert_or_assign("seed", g.attrs().i("seed"));
    g.set_grad(0, g.emit("DropoutGrad", in, attrs));
  }
  if (g.has_input(1) && g.wants(1)) {
    const ValueId r = g.input(1);
    const DType dt = g.dtype(r);
    ValueId s = g.emit("ReduceSum", {g.emit("Mul", {dy, g.output(0)})}, {{"keepdims", int64_t{0}}});
    if (dt != g.dtype(s)) s = g.emit("Cast", {s}, {{"to", std::string(dtype_name(dt))}});
    ValueId v = g.emit("Div", {s, g.emit("Sub", {g.scalar(1.0, dt), r})});
    if (!g.constant(g.input(2))) v = g.emit("Where", {g.input(2), v, g.scalar(0.0, dt)});
    g.set_grad(1, g.emit("Reshape", {v, g.shape_of(r)}));
  }
  return Status::ok();
}

}  // namespace

// RNN, LSTM, GRU: one backward op (backpropagation through time) from the forward inputs and the
// gradients of Y, Y_h (and Y_c); it returns the gradients of X, W, R, B, initial_h (initial_c, P).
Status recurrent_grad(GradientContext& g) {
  const bool lstm = g.node().op == "LSTM";
  const size_t nf = lstm ? 8 : 6, nout = lstm ? 3 : 2;
  std::vector<ValueId> ins;
  for (size_t i = 0; i < nf; ++i) ins.push_back(g.input(i));
  for (size_t o = 0; o < nout; ++o) ins.push_back(o < g.num_outputs() ? g.grad_output(o) : ir::kNoValue);
  while (ins.back() == ir::kNoValue) ins.pop_back();
  const std::vector<ValueId> d = g.emit_n(g.node().op + "Grad", ins, lstm ? 7 : 5, g.node().attrs);
  // Gradient outputs in the order of the inputs X, W, R, B, (sequence_lens), initial_h, initial_c, P.
  const std::vector<std::pair<size_t, size_t>> input_of = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {5, 4}, {6, 5}, {7, 6}};
  for (const auto& [in, out] : input_of)
    if (out < d.size() && g.has_input(in) && g.wants(in)) g.set_grad(in, d[out]);
  return Status::ok();
}

void register_nn_gradients(ops::OpRegistry& registry) {
  for (const char* op : {"RNN", "LSTM", "GRU"}) set_gradient(registry, op, recurrent_grad);
  set_gradient(registry, "Conv", conv_grad);
  set_gradient(registry, "ConvTranspose", conv_transpose_grad);
  set_gradient(registry, "MaxPool", [](GradientContext& g) { return pool_grad(g, true); });
  set_gradient(registry, "AveragePool", [](GradientContext& g) { return pool_grad(g, false); });
  set_gradient(registry, "GlobalMaxPool", [](GradientContext& g) { return global_pool_grad(g, true); });
  set_gradient(registry, "GlobalAveragePool", [](GradientContext& g) { return global_pool_grad(g, false); });
  set_gradient(registry, "MatMul", matmul_grad);
  set_gradient(registry, "Gemm", gemm_grad);
  set_gradient(registry, "Softmax", [](GradientContext& g) { return softmax_grad(g, false); });
  set_gradient(registry, "LogSoftmax", [](GradientContext& g) { return softmax_grad(g, true); });
  set_gradient(registry, "SoftmaxCrossEntropyLoss", [](GradientContext& g) { return loss_grad(g, true); });
  set_gradient(registry, "NegativeLogLikelihoodLoss", [](GradientContext& g) { return loss_grad(g, false); });
  set_gradient(registry, "BatchNormalization", batchnorm_grad);
  set_gradient(registry, "LayerNormalization", layernorm_grad);
  set_gradient(registry, "InstanceNormalization", instance_norm_grad);
  set_gradient(registry, "MeanVarianceNormalization", mvn_grad);
  set_gradient(registry, "LRN", lrn_grad);
  set_gradient(registry, "Dropout", dropout_grad);
  for (const char* op : {"ConvGradInput", "ConvGradWeight", "MaxPoolGrad", "AveragePoolGrad",
                         "SoftmaxCrossEntropyLossGrad", "NegativeLogLikelihoodLossGrad", "LRNGrad", "DropoutGrad",
                         "RNNGrad", "LSTMGrad", "GRUGrad"})
    set_no_gradient(registry, op, "a backward op; second derivatives are not supported");
  for (const char* op : {"QuantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "QLinearMatMul",
                         "QLinearConv"})
    set_no_gradient(registry, op, "integer-valued (quantization-aware training would need a straight-through rule)");
  set_no_gradient(registry, "DequantizeLinear", "its input is integer-valued");
  set_no_gradient(registry, "NonMaxSuppression", "integer-valued (indices)");
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"})
    set_no_gradient(registry, op, "its inputs are integer sizes");
  for (const char* op : {"RoiAlign", "MaxUnpool", "GridSample", "DFT", "STFT", "Det"})
    set_no_gradient(registry, op, "no gradient rule yet (inference of detection models)");
}

}  // namespace tessera::autodiff
