// Training ops that autodiff and the training step emit: SumToShape (the reverse of broadcasting,
// for shapes known only at run time) and the optimizer updates as graph ops, so a whole training
// step (forward, backward, update) is one graph that the stages optimise and run.
//
// Optimizers follow PyTorch 1.13's torch.optim formulas exactly (same hyper-parameters give the
// same trajectory up to float rounding):
//   SGDUpdate:  g = grad + wd*p; buf = momentum*buf + g (momentum > 0); g = nesterov ? g + momentum*buf : buf;
//               p' = p - lr*g
//   AdamUpdate: g = grad (+ wd*p unless decoupled); decoupled (AdamW): p *= 1 - lr*wd;
//               m' = b1*m + (1-b1)*g; v' = b2*v + (1-b2)*g^2; mh = m'/(1-b1^t); vh = v'/(1-b2^t);
//               p' = p - lr*mh/(sqrt(vh)+eps)       (t = step, starting at 1)
// Both skip the step (outputs = inputs) when their optional `loss` input is not finite.
#include <cmath>

#include "engine/ir/limits.h"
#include "engine/ops/helpers.h"

namespace tessera::ops {
namespace {

constexpr const char* kOptimizerNoGrad = "an optimizer update, applied after the gradient; nothing differentiates through it";

Expected<std::vector<TensorType>> infer_sum_to_shape(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  DType dt = ctx.inputs[0]->dtype;
  if (const Tensor* s = ctx.constant(1)) return std::vector<TensorType>{TensorType::of(dt, to_int64s(*s))};
  const TensorType& shape = *ctx.inputs[1];
  if (shape.rank_known && shape.rank() == 1 && shape.dims[0].is_known()) {
    TRY(std::vector<ir::Dim> dims, ir::unknown_dims(shape.dims[0].size));
    return std::vector<TensorType>{TensorType(dt, dims)};
  }
  return std::vector<TensorType>{TensorType::unranked(dt)};
}

Status sum_to_shape_kernel(KernelContext& ctx) {
  const Tensor& g = ctx.in(0);
  Shape target = to_int64s(ctx.in(1));
  const Shape& gs = g.shape();
  if (target.size() > gs.size())
    return node_error(ctx.node, "target shape " + shape_to_string(target) + " has more dimensions than " + shape_to_string(gs));
  size_t lead = gs.size() - target.size();
  for (size_t d = 0; d < target.size(); ++d)
    if (target[d] != gs[d + lead] && target[d] != 1)
      return node_error(ctx.node, "cannot sum " + shape_to_string(gs) + " down to " + shape_to_string(target));
  Tensor src = widen(g.contiguous());
  TRY(Tensor out, Tensor::create(src.dtype(), target));  // widened: f32 or f64, zero-filled
  std::vector<int64_t> tstrides = contiguous_strides(target);
  std::vector<int64_t> idx(gs.size(), 0);
  RETURN_IF_ERROR(dispatch_float(src.dtype(), ctx.node, [&](auto tag) {
    using T = decltype(tag);
    const T* s = src.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0, n = src.numel(); i < n; ++i) {
      int64_t t = 0;  // the target index drops the leading dims and the stretched ones
      for (size_t d = lead; d < gs.size(); ++d)
        if (target[d - lead] != 1) t += idx[d] * tstrides[d - lead];
      o[t] += s[i];
      for (size_t d = gs.size(); d-- > 0;) {
        if (++idx[d] < gs[d]) break;
        idx[d] = 0;
      }
    }
    return Status::ok();
  }));
  ctx.outputs.push_back(narrow(out, g.dtype()));
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_update(const InferContext& ctx, size_t num_states, size_t first_state) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const TensorType& p = *ctx.inputs[0];
  auto same = [&](size_t i, const char* what) -> Status {
    if (!ctx.has_input(i)) return Status::ok();
    const TensorType& t = *ctx.inputs[i];
    if (t.dtype != p.dtype || (t.is_static() && p.is_static() && t.static_shape() != p.static_shape()))
      return node_error(ctx.node, std::string(what) + " is " + t.to_string() + ", the parameter " + p.to_string());
    return Status::ok();
  };
  RETURN_IF_ERROR(same(1, "the gradient"));
  for (size_t k = 0; k < num_states; ++k) RETURN_IF_ERROR(same(first_state + k, "the optimizer state"));
  std::vector<TensorType> out(1 + num_states, p);
  return out;
}

double scalar_of(const Tensor& t) {
  Tensor w = widen(t);
  return w.dtype() == DType::kF64 ? w.data<double>()[0]
         : w.dtype() == DType::kF32 ? w.data<float>()[0]
         : w.dtype() == DType::kI64 ? static_cast<double>(w.data<int64_t>()[0])
                                    : static_cast<double>(w.data<int32_t>()[0]);
}

// The optional `loss` input of an update: when it is given and not finite the step is skipped
// (the outputs are the inputs, GradScaler's rule), so the weights of a diverging step stay as
// they were for the trainer's diagnosis.
bool skip_step(KernelContext& ctx, size_t loss_input, const std::vector<size_t>& keep) {
  if (!ctx.has_input(loss_input) || std::isfinite(scalar_of(ctx.in(loss_input)))) return false;
  for (size_t i : keep) ctx.outputs.push_back(ctx.has_input(i) ? ctx.in(i).clone() : Tensor(ctx.in(0).dtype(), {0}));
  return true;
}

Status sgd_kernel(KernelContext& ctx) {
  if (skip_step(ctx, 4, {0, 3})) return Status::ok();
  AttrReader a = ctx.attrs();
  const double lr = scalar_of(ctx.in(2)), momentum = a.f("momentum"), wd = a.f("weight_decay"), gs = a.f("grad_scale");
  const bool nesterov = a.i("nesterov") != 0, has_buf = momentum != 0.0;
  if (has_buf && !ctx.has_input(3)) return node_error(ctx.node, "momentum > 0 needs the momentum buffer input");
  Tensor p = ctx.in(0).contiguous(), g = ctx.in(1).contiguous();
  Tensor np(p.dtype(), p.shape());
  Tensor nb = has_buf ? Tensor(p.dtype(), p.shape()) : Tensor(p.dtype(), {0});
  Tensor b = has_buf ? ctx.in(3).contiguous() : Tensor(p.dtype(), {0});
  RETURN_IF_ERROR(dispatch_float(p.dtype(), ctx.node, [&](auto tag) {
    using T = decltype(tag);
    const T *pp = p.data<T>(), *gp = g.data<T>();
    T* out = np.data<T>();
    const T tlr = static_cast<T>(lr), tm = static_cast<T>(momentum), twd = static_cast<T>(wd), tgs = static_cast<T>(gs);
    for (int64_t i = 0; i < p.numel(); ++i) {
      T d = gp[i] * tgs;
      if (wd != 0.0) d += twd * pp[i];
      if (has_buf) {
        T buf = tm * b.data<T>()[i] + d;
        nb.data<T>()[i] = buf;
        d = nesterov ? d + tm * buf : buf;
      }
      out[i] = pp[i] - tlr * d;
    }
    return Status::ok();
  }));
  ctx.outputs.push_back(std::move(np));
  ctx.outputs.push_back(std::move(nb));
  return Status::ok();
}

Status adam_kernel(KernelContext& ctx) {
  if (skip_step(ctx, 6, {0, 4, 5})) return Status::ok();
  AttrReader a = ctx.attrs();
  const double lr = scalar_of(ctx.in(2)), step = scalar_of(ctx.in(3));
  const double b1 = a.f("beta1"), b2 = a.f("beta2"), eps = a.f("epsilon"), wd = a.f("weight_decay"), gs = a.f("grad_scale");
  const bool decoupled = a.i("decoupled") != 0;
  if (step < 1) return node_error(ctx.node, "step must be >= 1 (the first update is step 1), got " + std::to_string(step));
  Tensor p = ctx.in(0).contiguous(), g = ctx.in(1).contiguous(), m = ctx.in(4).contiguous(), v = ctx.in(5).contiguous();
  Tensor np(p.dtype(), p.shape()), nm(p.dtype(), p.shape()), nv(p.dtype(), p.shape());
  const double c1 = 1.0 - std::pow(b1, step), c2 = 1.0 - std::pow(b2, step);
  RETURN_IF_ERROR(dispatch_float(p.dtype(), ctx.node, [&](auto tag) {
    using T = decltype(tag);
    const T *pp = p.data<T>(), *gp = g.data<T>(), *mp = m.data<T>(), *vp = v.data<T>();
    T *po = np.data<T>(), *mo = nm.data<T>(), *vo = nv.data<T>();
    const T step_size = static_cast<T>(lr / c1), sc2 = static_cast<T>(std::sqrt(c2)), tgs = static_cast<T>(gs);
    for (int64_t i = 0; i < p.numel(); ++i) {
      T param = pp[i], d = gp[i] * tgs;
      if (decoupled) param *= static_cast<T>(1.0 - lr * wd);
      else if (wd != 0.0) d += static_cast<T>(wd) * param;
      T mi = static_cast<T>(b1) * mp[i] + static_cast<T>(1.0 - b1) * d;
      T vi = static_cast<T>(b2) * vp[i] + static_cast<T>(1.0 - b2) * d * d;
      mo[i] = mi;
      vo[i] = vi;
      po[i] = param - step_size * mi / (std::sqrt(vi) / sc2 + static_cast<T>(eps));
    }
    return Status::ok();
  }));
  ctx.outputs.push_back(std::move(np));
  ctx.outputs.push_back(std::move(nm));
  ctx.outputs.push_back(std::move(nv));
  return Status::ok();
}

}  // namespace

constexpr const char* kGradScaleDoc =
    "the gradient is multiplied by this first (data parallel: 1/ranks, so that the update takes the mean of the "
    "ranks' summed gradients)";

void register_train_ops(OpRegistry& registry) {
  OpDef sts("SumToShape", "training",
            "Sums G over the dimensions that NumPy broadcasting added or stretched, giving `shape` (the "
            "gradient of a broadcast; autodiff emits it when shapes are known only at run time).");
  sts.input("G", "gradient of the broadcast result").input("shape", "i64 1-D target shape, broadcastable to G's");
  sts.output("Y", "G summed down to `shape`");
  sts.allowed_types = kFloatTypes;
  sts.infer = infer_sum_to_shape;
  sts.reference = sum_to_shape_kernel;
  registry.add(std::move(sts));

  OpDef sgd("SGDUpdate", "training",
            "One step of stochastic gradient descent with optional momentum, Nesterov momentum and L2 "
            "weight decay (torch.optim.SGD, dampening 0). Outputs the new parameter and momentum buffer.");
  sgd.input("param", "parameter").input("grad", "its gradient").input("lr", "learning rate, a scalar");
  sgd.input("momentum_buffer", "momentum buffer (needed when momentum > 0; zeros before the first step)", true);
  sgd.input("loss", "the step's loss, a scalar: when it is not finite the step is skipped (outputs = inputs)", true);
  sgd.output("new_param", "updated parameter").output("new_momentum_buffer", "updated buffer (empty without momentum)");
  sgd.attr("momentum", AttrKind::kFloat, Attribute(0.0), "momentum factor");
  sgd.attr("nesterov", AttrKind::kInt, Attribute(int64_t{0}), "1: Nesterov momentum");
  sgd.attr("weight_decay", AttrKind::kFloat, Attribute(0.0), "L2 penalty added to the gradient");
  sgd.attr("grad_scale", AttrKind::kFloat, Attribute(1.0), kGradScaleDoc);
  sgd.allowed_types = kFloatTypes;
  sgd.infer = [](const InferContext& ctx) -> Expected<std::vector<TensorType>> {
    TRY(std::vector<TensorType> t, infer_update(ctx, 1, 3));
    if (!ctx.has_input(3)) t[1] = TensorType::of(t[0].dtype, {0});
    return t;
  };
  sgd.reference = sgd_kernel;
  sgd.in_place = {{0, 0}, {1, 3}};
  sgd.no_gradient_reason = kOptimizerNoGrad;
  registry.add(std::move(sgd));

  OpDef adam("AdamUpdate", "training",
             "One step of Adam (torch.optim.Adam) or, with decoupled = 1, AdamW (torch.optim.AdamW). "
             "Outputs the new parameter and the new first and second moments.");
  adam.input("param", "parameter").input("grad", "its gradient").input("lr", "learning rate, a scalar");
  adam.input("step", "the step number t, starting at 1, a scalar").input("m", "first moment").input("v", "second moment");
  adam.input("loss", "the step's loss, a scalar: when it is not finite the step is skipped (outputs = inputs)", true);
  adam.output("new_param", "updated parameter").output("new_m", "updated first moment").output("new_v", "updated second moment");
  adam.attr("beta1", AttrKind::kFloat, Attribute(0.9), "first-moment decay");
  adam.attr("beta2", AttrKind::kFloat, Attribute(0.999), "second-moment decay");
  adam.attr("epsilon", AttrKind::kFloat, Attribute(1e-8), "added to the denominator");
  adam.attr("weight_decay", AttrKind::kFloat, Attribute(0.0), "weight decay (L2, or decoupled for AdamW)");
  adam.attr("decoupled", AttrKind::kInt, Attribute(int64_t{0}), "1: AdamW's decoupled weight decay");
  adam.attr("grad_scale", AttrKind::kFloat, Attribute(1.0), kGradScaleDoc);
  adam.allowed_types = kFloatTypes;
  adam.infer = [](const InferContext& ctx) { return infer_update(ctx, 2, 4); };
  adam.reference = adam_kernel;
  adam.in_place = {{0, 0}, {1, 4}, {2, 5}};
  adam.no_gradient_reason = kOptimizerNoGrad;
  registry.add(std::move(adam));
}

}  // namespace tessera::ops
