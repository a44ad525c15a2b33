// The CUDA device's training kernels besides cuDNN's: SGD and Adam updates, softmax cross-entropy
// and its gradient, the backward ops of Relu, Gelu, Softmax and LayerNormalization, n-ary Sum.
#include <cmath>

#include "engine/cuda/ops_internal.h"

namespace tessera::cuda {
namespace {

// ---- training: optimizer updates, the loss, n-ary sums ----

bool scalar_f32(const KernelInit& init, size_t i) {
  return has(init, i) && init.in_types[i]->dtype == DType::kF32 && product(init.in_types[i]->static_shape()) == 1;
}

class SgdKernel : public CudaKernel {
 public:
  SgdKernel(Context* c, const KernelInit& init) : CudaKernel(c, "cuda:sgd-update", init) {
    const ops::AttrReader a = init.attrs();
    momentum_ = static_cast<float>(a.f("momentum"));
    nesterov_ = a.i("nesterov") != 0;
    wd_ = static_cast<float>(a.f("weight_decay"));
    gs_ = static_cast<float>(a.f("grad_scale"));
    loss_ = has(init, 4);
    n_ = product(init.in_types[0]->static_shape());
  }

 protected:
  std::string launch(KernelRun& r) override {
    const bool buf = momentum_ != 0.f;
    return sgd_update(in(r, 0), in(r, 1), in(r, 2), buf ? in(r, 3) : nullptr, loss_ ? in(r, 4) : nullptr, out(r, 0),
                      buf ? out(r, 1) : nullptr, n_, momentum_, nesterov_, wd_, gs_, stream());
  }

 private:
  float momentum_ = 0, wd_ = 0, gs_ = 1;
  bool nesterov_ = false, loss_ = false;
  int64_t n_ = 0;
};

Made make_sgd(Context* ctx, const KernelInit& init) {
  if (std::string why = needs_f32(init, {0, 1, 3}); !why.empty()) return decline(why);
  if (!scalar_f32(init, 2) || (has(init, 4) && !scalar_f32(init, 4))) return decline("lr or loss that is not an f32 scalar");
  if (init.attrs().f("momentum") != 0.0 && !has(init, 3)) return decline("momentum without its buffer");
  return std::unique_ptr<Kernel>(new SgdKernel(ctx, init));
}

class AdamKernel : public CudaKernel {
 public:
  AdamKernel(Context* c, const KernelInit& init, Scalar step) : CudaKernel(c, "cuda:adam-update", init), step_(step) {
    const ops::AttrReader a = init.attrs();
    b1_ = a.f("beta1");
    b2_ = a.f("beta2");
    eps_ = a.f("epsilon");
    wd_ = a.f("weight_decay");
    decoupled_ = a.i("decoupled") != 0;
    gs_ = static_cast<float>(a.f("grad_scale"));
    loss_ = has(init, 6);
    n_ = product(init.in_types[0]->static_shape());
  }

 protected:
  std::string launch(KernelRun& r) override {
    return adam_update(in(r, 0), in(r, 1), in(r, 2), r.inputs[3].data, step_, in(r, 4), in(r, 5), loss_ ? in(r, 6) : nullptr,
                       out(r, 0), out(r, 1), out(r, 2), n_, b1_, b2_, eps_, wd_, decoupled_, gs_, stream());
  }

 private:
  Scalar step_;
  double b1_ = 0.9, b2_ = 0.999, eps_ = 1e-8, wd_ = 0;
  bool decoupled_ = false, loss_ = false;
  float gs_ = 1;
  int64_t n_ = 0;
};

Made make_adam(Context* ctx, const KernelInit& init) {
  if (std::string why = needs_f32(init, {0, 1, 4, 5}); !why.empty()) return decline(why);
  if (!scalar_f32(init, 2) || (has(init, 6) && !scalar_f32(init, 6))) return decline("lr or loss that is not an f32 scalar");
  if (!has(init, 3) || product(init.in_types[3]->static_shape()) != 1) return decline("a step that is not a scalar");
  const DType st = init.in_types[3]->dtype;
  if (st != DType::kF32 && st != DType::kI64 && st != DType::kI32) return decline("a step that is not f32, i64 or i32");
  return std::unique_ptr<Kernel>(
      new AdamKernel(ctx, init, st == DType::kF32 ? Scalar::kF32 : st == DType::kI64 ? Scalar::kI64 : Scalar::kI32));
}

// SoftmaxCrossEntropyLoss of [N, C] scores (no class weights, no ignore_index): the per-row
// losses into scratch (or the output, for reduction none), then their mean or sum.
class XentKernel : public CudaKernel {
 public:
  XentKernel(Context* c, const KernelInit& init, int reduction) : CudaKernel(c, "cuda:softmax-xent", init), reduction_(reduction) {
    const Shape x = init.in_types[0]->static_shape();
    rows_ = x[0];
    cols_ = x[1];
    labels64_ = init.in_types[1]->dtype == DType::kI64;
    log_prob_ = init.out_types.size() > 1;
  }
  size_t scratch_bytes() const override { return reduction_ == 0 ? 0 : static_cast<size_t>(rows_) * sizeof(float); }

 protected:
  std::string launch(KernelRun& r) override {
    float* losses = reduction_ == 0 ? out(r, 0) : static_cast<float*>(r.scratch.data);
    std::string e = softmax_xent(in(r, 0), r.inputs[1].data, labels64_, losses, log_prob_ ? out(r, 1) : nullptr, rows_, cols_, stream());
    if (!e.empty() || reduction_ == 0) return e;
    return reduce(reduction_ == 1 ? Reduce::kMean : Reduce::kSum, losses, out(r, 0), 1, rows_, 1, stream());
  }

 private:
  int reduction_;  // 0 none, 1 mean, 2 sum
  int64_t rows_ = 0, cols_ = 0;
  bool labels64_ = true, log_prob_ = false;
};

class XentGradKernel : public CudaKernel {
 public:
  XentGradKernel(Context* c, const KernelInit& init, int reduction) : CudaKernel(c, "cuda:softmax-xent-grad", init) {
    const Shape x = init.in_types[1]->static_shape();
    rows_ = x[0];
    cols_ = x[1];
    per_row_ = reduction == 0;
    scale_ = reduction == 1 && rows_ > 0 ? 1.f / static_cast<float>(rows_) : 1.f;
    labels64_ = init.in_types[2]->dtype == DType::kI64;
  }

 protected:
  std::string launch(KernelRun& r) override {
    return softmax_xent_grad(in(r, 0), per_row_, scale_, in(r, 1), r.inputs[2].data, labels64_, out(r), rows_, cols_, stream());
  }

 private:
  int64_t rows_ = 0, cols_ = 0;
  bool per_row_ = false, labels64_ = true;
  float scale_ = 1;
};

// The reduction of a loss op (0 none, 1 mean, 2 sum), or a decline for what the GPU does not take.
Expected<int> xent_reduction(const KernelInit& init, size_t scores, size_t labels, size_t weights) {
  const ops::AttrReader a = init.attrs();
  if (has(init, weights)) return make_error("class weights");
  if (a.get("ignore_index")) return make_error("ignore_index");
  if (init.in_types[scores]->rank() != 2) return make_error("scores that are not [N, C]");
  const DType l = init.in_types[labels]->dtype;
  if (l != DType::kI64 && l != DType::kI32) return make_error("labels that are not i64 or i32");
  const std::string& red = a.s("reduction");
  if (red == "none") return 0;
  if (red == "mean") return 1;
  if (red == "sum") return 2;
  return make_error("reduction " + red);
}

class SoftmaxGradKernel : public CudaKernel {
 public:
  SoftmaxGradKernel(Context* c, const KernelInit& init) : CudaKernel(c, "cuda:softmax-grad", init), rows_(axis_rows(init, 1)) {}

 protected:
  std::string launch(KernelRun& r) override {
    return softmax_grad(in(r, 0), in(r, 1), out(r), rows_.outer, rows_.axis, rows_.inner, stream());
  }

 private:
  AxisRows rows_;
};

class LayerNormGradKernel : public CudaKernel {
 public:
  LayerNormGradKernel(Context* c, const KernelInit& init, int64_t rows, int64_t cols)
      : CudaKernel(c, "cuda:layer-norm-grad", init), rows_(rows), cols_(cols), eps_(static_cast<float>(init.attrs().f("epsilon"))) {}
  size_t scratch_bytes() const override { return 2 * static_cast<size_t>(rows_) * sizeof(float); }

 protected:
  std::string launch(KernelRun& r) override {
    return layer_norm_grad(in(r, 0), in(r, 1), in(r, 2), out(r, 0), out(r, 1), out(r, 2), static_cast<float*>(r.scratch.data), rows_,
                           cols_, eps_, stream());
  }

 private:
  int64_t rows_, cols_;
  float eps_;
};

// Sum of any number of inputs (broadcasting): a chain of additions into the output.
class SumKernel : public CudaKernel {
 public:
  SumKernel(Context* c, const KernelInit& init) : CudaKernel(c, "cuda:sum", init) {
    const Shape y = init.out_types[0]->static_shape();
    n_ = product(y);
    for (size_t i = 0; i < init.in_types.size(); ++i)
      bcs_.push_back(make_broadcast(i == 0 ? init.in_types[0]->static_shape() : y, init.in_types[i]->static_shape(), y));
  }

 protected:
  std::string launch(KernelRun& r) override {
    if (bcs_.size() == 1) {  // y = x0 (broadcast): x0 + 0 through the same kernel would need a zero; copy when plain
      if (bcs_[0].b_plain) {
        const cudaError_t e = cudaMemcpyAsync(out(r), in(r, 0), r.outputs[0].bytes, cudaMemcpyDeviceToDevice, stream());
        return e == cudaSuccess ? "" : error_text(e);
      }
      return strided_copy(in(r, 0), out(r), 4, bcs_[0].rank, bcs_[0].dims, bcs_[0].b, 0, n_, stream());
    }
    std::string e = binary(Binary::kAdd, in(r, 0), in(r, 1), out(r), n_, with_a(bcs_[1], 0), stream());
    for (size_t i = 2; e.empty() && i < bcs_.size(); ++i) e = binary(Binary::kAdd, out(r), in(r, i), out(r), n_, bcs_[i], stream());
    return e;
  }

 private:
  // bcs_[1] with input 0's strides as its `a` (the first addition reads x0, not the output).
  Broadcast with_a(Broadcast bc, size_t i) const {
    for (int d = 0; d < bc.rank; ++d) bc.a[d] = bcs_[i].b[d];
    bc.a_plain = bcs_[i].b_plain;
    return bc;
  }
  std::vector<Broadcast> bcs_;
  int64_t n_ = 0;
};

Made make_sum(Context* ctx, const KernelInit& init) {
  if (init.in_types.empty()) return decline("no inputs");
  for (size_t i = 0; i < init.in_types.size(); ++i)
    if (!has(init, i)) return decline("an absent input");
  std::vector<size_t> all(init.in_types.size());
  std::iota(all.begin(), all.end(), size_t{0});
  for (size_t i : all)
    if (init.in_types[i]->dtype != DType::kF32) return decline("inputs that are not f32");
  if (init.out_types[0]->dtype != DType::kF32) return decline("an output that is not f32");
  if (init.out_types[0]->rank() > kMaxRank) return decline("rank above " + std::to_string(kMaxRank));
  return std::unique_ptr<Kernel>(new SumKernel(ctx, init));
}


}  // namespace

void register_training_kernels(backend::KernelRegistry& reg, Context* ctx) {
  add_binary(reg, ctx, "ReluGrad", Binary::kReluGrad);
  reg.add("GeluGrad", "cuda:binary", 10, [ctx](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0, 1}); !why.empty()) return decline(why);
    const std::string& m = init.attrs().s("approximate");
    if (m != "none" && m != "tanh") return decline("approximate '" + m + "'");
    if (init.in_types[0]->static_shape() != init.in_types[1]->static_shape()) return decline("dY and X of other shapes");
    return std::unique_ptr<Kernel>(new BinaryKernel(ctx, init, m == "tanh" ? Binary::kGeluTanhGrad : Binary::kGeluGrad));
  });
  reg.add("SoftmaxGrad", "cuda:softmax-grad", 10, [ctx](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0, 1}); !why.empty()) return decline(why);
    if (init.in_types[0]->static_shape() != init.in_types[1]->static_shape()) return decline("dY and Y of other shapes");
    return std::unique_ptr<Kernel>(new SoftmaxGradKernel(ctx, init));
  });
  reg.add("LayerNormalizationGrad", "cuda:layer-norm-grad", 10, [ctx](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0, 1, 2}); !why.empty()) return decline(why);
    const Shape x = init.in_types[1]->static_shape();
    int64_t axis = init.attrs().i("axis");
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    if (axis < 0 || axis >= static_cast<int64_t>(x.size()) || init.in_types[0]->static_shape() != x ||
        init.in_types[2]->static_shape() != Shape(x.begin() + axis, x.end()))
      return decline("dY, X and Scale that do not fit the axis");
    return std::unique_ptr<Kernel>(
        new LayerNormGradKernel(ctx, init, product(x, 0, static_cast<size_t>(axis)), product(x, static_cast<size_t>(axis))));
  });
  reg.add("Sum", "cuda:sum", 10, [ctx](const KernelInit& i) { return make_sum(ctx, i); });
  reg.add("SGDUpdate", "cuda:sgd-update", 10, [ctx](const KernelInit& i) { return make_sgd(ctx, i); });
  reg.add("AdamUpdate", "cuda:adam-update", 10, [ctx](const KernelInit& i) { return make_adam(ctx, i); });
  reg.add("SoftmaxCrossEntropyLoss", "cuda:softmax-xent", 10, [ctx](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0}); !why.empty()) return decline(why);
    Expected<int> red = xent_reduction(init, 0, 1, 2);
    if (!red) return decline(red.error().message);
    return std::unique_ptr<Kernel>(new XentKernel(ctx, init, *red));
  });
  reg.add("SoftmaxCrossEntropyLossGrad", "cuda:softmax-xent-grad", 10, [ctx](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0, 1}); !why.empty()) return decline(why);
    Expected<int> red = xent_reduction(init, 1, 2, 3);
    if (!red) return decline(red.error().message);
    if (*red == 0 && product(init.in_types[0]->static_shape()) != init.in_types[1]->static_shape()[0])
      return decline("dloss that is not [N]");
    return std::unique_ptr<Kernel>(new XentGradKernel(ctx, init, *red));
  });
}

}  // namespace tessera::cuda
