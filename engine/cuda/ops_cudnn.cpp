// The CUDA device's cuDNN kernels: convolution (forward, and backward for data, filter and bias),
// pooling (forward and backward), batch normalization (inference, training mode, gradient).
#include <cmath>

#include "engine/cuda/ops_internal.h"

namespace tessera::cuda {
namespace {

// ---- convolution and pooling (cuDNN) ----

// Symmetric pads of a 2-D window op (1-D ops are 2-D with height 1), from pads / auto_pad.
Status window_pads(const ops::AttrReader& attrs, const Shape& in, const Shape& out, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& dil, std::vector<int64_t>& pads) {
  const size_t sp = kernel.size();
  pads.assign(sp, 0);
  const std::string mode = attrs.get("auto_pad") ? attrs.s("auto_pad") : std::string("NOTSET");  // grad ops: explicit pads
  if (mode == "NOTSET") {
    std::vector<int64_t> p = attrs.get("pads") ? attrs.ints("pads") : std::vector<int64_t>(2 * sp, 0);
    if (p.size() != 2 * sp) return make_error("pads of the wrong length");
    for (size_t i = 0; i < sp; ++i) {
      if (p[i] != p[i + sp]) return make_error("asymmetric padding (cuDNN pads both sides alike)");
      pads[i] = p[i];
    }
  } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      const int64_t total = std::max<int64_t>(0, (out[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in[2 + i]);
      if (total % 2) return make_error("SAME padding that is odd on an axis (cuDNN pads both sides alike)");
      pads[i] = total / 2;
    }
  } else if (mode != "VALID") {
    return make_error("auto_pad " + mode);
  }
  return Status::ok();
}

std::vector<int64_t> ints_or(const ops::AttrReader& a, const char* name, size_t n, int64_t dflt) {
  return a.get(name) ? a.ints(name) : std::vector<int64_t>(n, dflt);
}


// Descriptors freed with the kernel.
struct CudnnDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  ~CudnnDescriptors() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
  }
};

#define CUDNN_OR_DECLINE(call)                                                  \
  do {                                                                          \
    if (cudnnStatus_t st_ = (call); st_ != CUDNN_STATUS_SUCCESS)                \
      return decline(std::string(#call).substr(0, 40) + ": " + error_text(st_)); \
  } while (0)

// As 4-D NCHW: 1-D windows get height 1.
Shape as_4d(Shape s) {
  if (s.size() == 3) s.insert(s.begin() + 2, 1);
  return s;
}

class ConvKernel : public CudaKernel {
 public:
  ConvKernel(Context* c, const KernelInit& init) : CudaKernel(c, "cuda:cudnn-conv", init) {}
  CudnnDescriptors d;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace = 0;
  int bias = -1, z = -1;
  int64_t channels = 1, inner = 1, n = 0;
  Activation act;
  size_t scratch_bytes() const override { return workspace; }
  std::string detail() const override { return "algo " + std::to_string(static_cast<int>(algo)); }

 protected:
  std::string launch(KernelRun& r) override {
    if (n == 0) return "";
    const float one = 1.f, zero = 0.f;
    if (cudnnStatus_t st = cudnnConvolutionForward(ctx_->cudnn, &one, d.x, in(r, 0), d.w, in(r, 1), d.conv, algo,
                                                   r.scratch.data, workspace, &zero, d.y, out(r));
        st != CUDNN_STATUS_SUCCESS)
      return "cudnnConvolutionForward: " + error_text(st);
    const float* b = bias >= 0 ? in(r, static_cast<size_t>(bias)) : nullptr;
    const float* zz = z >= 0 ? in(r, static_cast<size_t>(z)) : nullptr;
    if (!b && !zz && act.op == Unary::kIdentity) return "";
    return epilogue(out(r), n, b, channels, inner, zz, act.op, act.alpha, act.beta, stream());
  }
};

#define CUDNN_OR_RETURN(call)                                                   \
  do {                                                                          \
    if (cudnnStatus_t st_ = (call); st_ != CUDNN_STATUS_SUCCESS)                \
      return std::string(#call).substr(0, 40) + ": " + error_text(st_);         \
  } while (0)

// The descriptors of a convolution of x0 by w0 giving y0 (any of the three directions), or why
// cuDNN cannot take it.
std::string conv_descriptors(const Context* ctx, const ops::AttrReader& attrs, const Shape& x0, const Shape& w0, const Shape& y0,
                             CudnnDescriptors& d) {
  if (x0.size() != 4 && x0.size() != 3) return "only 1-D and 2-D convolutions";
  const size_t sp = x0.size() - 2;
  const std::vector<int64_t> strides = ints_or(attrs, "strides", sp, 1), dil = ints_or(attrs, "dilations", sp, 1);
  std::vector<int64_t> kernel(w0.begin() + 2, w0.end()), pads;
  if (Status st = window_pads(attrs, x0, y0, kernel, strides, dil, pads); !st) return st.error().message;
  const Shape x = as_4d(x0), w = as_4d(w0), y = as_4d(y0);
  for (const Shape* s : {&x, &w, &y})
    for (int64_t v : *s)
      if (!fits_int(v)) return "a dimension above 2^31";
  const int ph = sp == 2 ? as_int(pads[0]) : 0, pw = as_int(pads[sp - 1]);
  const int sh = sp == 2 ? as_int(strides[0]) : 1, sw = as_int(strides[sp - 1]);
  const int dh = sp == 2 ? as_int(dil[0]) : 1, dw = as_int(dil[sp - 1]);
  CUDNN_OR_RETURN(cudnnCreateTensorDescriptor(&d.x));
  CUDNN_OR_RETURN(cudnnCreateTensorDescriptor(&d.y));
  CUDNN_OR_RETURN(cudnnCreateFilterDescriptor(&d.w));
  CUDNN_OR_RETURN(cudnnCreateConvolutionDescriptor(&d.conv));
  CUDNN_OR_RETURN(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(x[0]), as_int(x[1]), as_int(x[2]), as_int(x[3])));
  CUDNN_OR_RETURN(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(y[0]), as_int(y[1]), as_int(y[2]), as_int(y[3])));
  CUDNN_OR_RETURN(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, as_int(w[0]), as_int(w[1]), as_int(w[2]), as_int(w[3])));
  CUDNN_OR_RETURN(cudnnSetConvolution2dDescriptor(d.conv, ph, pw, sh, sw, dh, dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_OR_RETURN(cudnnSetConvolutionGroupCount(d.conv, as_int(attrs.i("group"))));
  CUDNN_OR_RETURN(cudnnSetConvolutionMathType(d.conv, ctx->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int on = 0, oc = 0, oh = 0, ow = 0;
  CUDNN_OR_RETURN(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &on, &oc, &oh, &ow));
  if (on != y[0] || oc != y[1] || oh != y[2] || ow != y[3]) return "cuDNN's output shape differs from the graph's";
  return "";
}

// The first of cuDNN's heuristic choices that works with at most 1 GiB of workspace,
// deterministic ones first (runs repeat bit for bit, as on the CPU).
template <class Perf>
bool pick_algo(const Perf* perf, int returned, decltype(Perf::algo)& algo, size_t& workspace) {
  for (bool need_deterministic : {true, false})
    for (int i = 0; i < returned; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= (size_t{1} << 30) &&
          (!need_deterministic || perf[i].determinism == CUDNN_DETERMINISTIC)) {
        algo = perf[i].algo;
        workspace = perf[i].memory;
        return true;
      }
  return false;
}

Made make_conv(Context* ctx, const KernelInit& init, bool fused) {
  if (std::string why = needs_f32(init, {0, 1, 2, 3}); !why.empty()) return decline(why);
  const ops::AttrReader attrs = init.attrs();
  const Shape x0 = init.in_types[0]->static_shape(), w0 = init.in_types[1]->static_shape(), y0 = init.out_types[0]->static_shape();
  auto k = std::make_unique<ConvKernel>(ctx, init);
  if (std::string why = conv_descriptors(ctx, attrs, x0, w0, y0, k->d); !why.empty()) return decline(why);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    CUDNN_OR_DECLINE(cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, k->d.x, k->d.w, k->d.conv, k->d.y,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  }
  if (!pick_algo(perf, returned, k->algo, k->workspace)) return decline("cuDNN offers no forward algorithm for this convolution");
  const Shape y = as_4d(y0);
  k->n = product(y0);
  k->channels = y[1];
  k->inner = y[2] * y[3];
  if (has(init, 2)) k->bias = 2;
  if (fused) {
    TRY(k->act, fused_activation(attrs));
    if (has(init, 3)) k->z = 3;
  }
  return std::unique_ptr<Kernel>(std::move(k));
}

// ConvGradInput (dY, W, input_shape) -> dX and ConvGradWeight (dY, X, weight_shape) -> dW [, dB].
class ConvGradKernel : public CudaKernel {
 public:
  ConvGradKernel(Context* c, const KernelInit& init, bool weight)
      : CudaKernel(c, weight ? "cuda:cudnn-conv-grad-weight" : "cuda:cudnn-conv-grad-input", init), weight_(weight) {}
  ~ConvGradKernel() override {
    if (db_) cudnnDestroyTensorDescriptor(db_);
  }
  CudnnDescriptors d;
  cudnnConvolutionBwdDataAlgo_t data_algo{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo{};
  cudnnTensorDescriptor_t db_ = nullptr;  // dB [1, M, 1, 1] when asked for
  size_t workspace = 0;
  bool empty = false;
  size_t scratch_bytes() const override { return workspace; }

 protected:
  std::string launch(KernelRun& r) override {
    if (empty) return "";
    const float one = 1.f, zero = 0.f;
    cudnnStatus_t st;
    if (weight_) {
      st = cudnnConvolutionBackwardFilter(ctx_->cudnn, &one, d.x, in(r, 1), d.y, in(r, 0), d.conv, filter_algo, r.scratch.data,
                                          workspace, &zero, d.w, out(r, 0));
      if (st == CUDNN_STATUS_SUCCESS && db_)
        st = cudnnConvolutionBackwardBias(ctx_->cudnn, &one, d.y, in(r, 0), &zero, db_, out(r, 1));
    } else {
      st = cudnnConvolutionBackwardData(ctx_->cudnn, &one, d.w, in(r, 1), d.y, in(r, 0), d.conv, data_algo, r.scratch.data,
                                        workspace, &zero, d.x, out(r, 0));
    }
    return st == CUDNN_STATUS_SUCCESS ? "" : std::string("cuDNN convolution backward: ") + error_text(st);
  }

 private:
  bool weight_;
};

Made make_conv_grad(Context* ctx, const KernelInit& init, bool weight) {
  if (std::string why = needs_f32(init, {0, 1}); !why.empty()) return decline(why);
  const ops::AttrReader attrs = init.attrs();
  const Shape dy = init.in_types[0]->static_shape(), other = init.in_types[1]->static_shape(),
              result = init.out_types[0]->static_shape();
  const Shape& x0 = weight ? other : result;
  const Shape& w0 = weight ? result : other;
  auto k = std::make_unique<ConvGradKernel>(ctx, init, weight);
  if (std::string why = conv_descriptors(ctx, attrs, x0, w0, dy, k->d); !why.empty()) return decline(why);
  k->empty = product(dy) == 0 || product(result) == 0;
  std::lock_guard<std::mutex> lock(ctx->mu);
  bool found = false;
  if (weight) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int returned = 0;
    CUDNN_OR_DECLINE(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx->cudnn, k->d.x, k->d.y, k->d.conv, k->d.w,
                                                                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
    found = pick_algo(perf, returned, k->filter_algo, k->workspace);
    if (init.out_types.size() > 1) {
      CUDNN_OR_DECLINE(cudnnCreateTensorDescriptor(&k->db_));
      CUDNN_OR_DECLINE(cudnnSetTensor4dDescriptor(k->db_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, as_int(dy[1]), 1, 1));
    }
  } else {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int returned = 0;
    CUDNN_OR_DECLINE(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx->cudnn, k->d.w, k->d.y, k->d.conv, k->d.x,
                                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
    found = pick_algo(perf, returned, k->data_algo, k->workspace);
  }
  if (!found) return decline("cuDNN offers no backward algorithm for this convolution");
  return std::unique_ptr<Kernel>(std::move(k));
}

class PoolKernel : public CudaKernel {
 public:
  PoolKernel(Context* c, const KernelInit& init) : CudaKernel(c, "cuda:cudnn-pool", init) {}
  CudnnDescriptors d;
  bool empty = false;

 protected:
  std::string launch(KernelRun& r) override {
    if (empty) return "";
    const float one = 1.f, zero = 0.f;
    if (cudnnStatus_t st = cudnnPoolingForward(ctx_->cudnn, d.pool, &one, d.x, in(r, 0), &zero, d.y, out(r));
        st != CUDNN_STATUS_SUCCESS)
      return "cudnnPoolingForward: " + error_text(st);
    return "";
  }
};

// The descriptors of a 2-D (or 1-D) pooling of x0 giving y0, or why cuDNN cannot take it.
std::string pool_descriptors(const ops::AttrReader& attrs, bool max, const Shape& x0, const Shape& y0, CudnnDescriptors& d) {
  if (x0.size() != 4 && x0.size() != 3) return "only 1-D and 2-D pooling";
  const size_t sp = x0.size() - 2;
  const std::vector<int64_t> kernel = attrs.ints("kernel_shape"), strides = ints_or(attrs, "strides", sp, 1),
                             dil = ints_or(attrs, "dilations", sp, 1);
  if (kernel.size() != sp) return "kernel_shape of the wrong length";
  for (int64_t v : dil)
    if (v != 1) return "dilated pooling";
  std::vector<int64_t> pads;
  if (Status st = window_pads(attrs, x0, y0, kernel, strides, dil, pads); !st) return st.error().message;
  const Shape x = as_4d(x0), y = as_4d(y0);
  for (const Shape* s : {&x, &y})
    for (int64_t v : *s)
      if (!fits_int(v)) return "a dimension above 2^31";
  const cudnnPoolingMode_t mode = max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                      : (attrs.get("count_include_pad") && attrs.i("count_include_pad")
                                             ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                                      : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
  CUDNN_OR_RETURN(cudnnCreateTensorDescriptor(&d.x));
  CUDNN_OR_RETURN(cudnnCreateTensorDescriptor(&d.y));
  CUDNN_OR_RETURN(cudnnCreatePoolingDescriptor(&d.pool));
  CUDNN_OR_RETURN(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(x[0]), as_int(x[1]), as_int(x[2]), as_int(x[3])));
  CUDNN_OR_RETURN(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(y[0]), as_int(y[1]), as_int(y[2]), as_int(y[3])));
  CUDNN_OR_RETURN(cudnnSetPooling2dDescriptor(d.pool, mode, CUDNN_PROPAGATE_NAN, sp == 2 ? as_int(kernel[0]) : 1,
                                              as_int(kernel[sp - 1]), sp == 2 ? as_int(pads[0]) : 0, as_int(pads[sp - 1]),
                                              sp == 2 ? as_int(strides[0]) : 1, as_int(strides[sp - 1])));
  int on = 0, oc = 0, oh = 0, ow = 0;
  CUDNN_OR_RETURN(cudnnGetPooling2dForwardOutputDim(d.pool, d.x, &on, &oc, &oh, &ow));
  if (on != y[0] || oc != y[1] || oh != y[2] || ow != y[3]) return "cuDNN's output shape differs (ceil_mode)";
  return "";
}

Made make_pool(Context* ctx, const KernelInit& init, bool max) {
  if (std::string why = needs_f32(init, {0}); !why.empty()) return decline(why);
  if (init.out_types.size() > 1) return decline("MaxPool's Indices output");
  const Shape x0 = init.in_types[0]->static_shape(), y0 = init.out_types[0]->static_shape();
  auto k = std::make_unique<PoolKernel>(ctx, init);
  if (std::string why = pool_descriptors(init.attrs(), max, x0, y0, k->d); !why.empty()) return decline(why);
  k->empty = product(y0) == 0;
  return std::unique_ptr<Kernel>(std::move(k));
}

// MaxPoolGrad (dY, X) -> dX: the forward output recomputed into scratch (cuDNN's backward reads
// it); AveragePoolGrad (dY, input_shape) -> dX (cuDNN reads neither X nor Y for averages).
class PoolGradKernel : public CudaKernel {
 public:
  PoolGradKernel(Context* c, const KernelInit& init, bool max) : CudaKernel(c, "cuda:cudnn-pool-grad", init), max_(max) {
    y_bytes_ = max ? backend::plain_bytes(*init.in_types[0]) : 0;
  }
  CudnnDescriptors d;
  bool empty = false;
  size_t scratch_bytes() const override { return y_bytes_; }

 protected:
  std::string launch(KernelRun& r) override {
    if (empty) return "";
    const float one = 1.f, zero = 0.f;
    const void* x = max_ ? r.inputs[1].data : r.outputs[0].data;
    const void* y = max_ ? r.scratch.data : r.inputs[0].data;
    if (max_)
      if (cudnnStatus_t st = cudnnPoolingForward(ctx_->cudnn, d.pool, &one, d.x, x, &zero, d.y, r.scratch.data);
          st != CUDNN_STATUS_SUCCESS)
        return "cudnnPoolingForward: " + error_text(st);
    if (cudnnStatus_t st = cudnnPoolingBackward(ctx_->cudnn, d.pool, &one, d.y, y, d.y, in(r, 0), d.x, x, &zero, d.x, out(r));
        st != CUDNN_STATUS_SUCCESS)
      return "cudnnPoolingBackward: " + error_text(st);
    return "";
  }

 private:
  bool max_;
  size_t y_bytes_ = 0;
};

Made make_pool_grad(Context* ctx, const KernelInit& init, bool max) {
  if (std::string why = needs_f32(init, max ? std::initializer_list<size_t>{0, 1} : std::initializer_list<size_t>{0});
      !why.empty())
    return decline(why);
  const Shape y0 = init.in_types[0]->static_shape(), x0 = init.out_types[0]->static_shape();
  auto k = std::make_unique<PoolGradKernel>(ctx, init, max);
  if (std::string why = pool_descriptors(init.attrs(), max, x0, y0, k->d); !why.empty()) return decline(why);
  k->empty = product(y0) == 0 || product(x0) == 0;
  return std::unique_ptr<Kernel>(std::move(k));
}


// Inference batch normalization: scale and shift per channel, computed once at load.
class BatchNormKernel : public CudaKernel {
 public:
  BatchNormKernel(Context* c, const KernelInit& init, Tensor scale, Tensor shift)
      : CudaKernel(c, "cuda:batch-norm", init), scale_h_(std::move(scale)), shift_h_(std::move(shift)) {
    const Shape x = init.in_types[0]->static_shape();
    n_ = product(x);
    channels_ = x.size() > 1 ? x[1] : 1;
    inner_ = product(x, 2);
  }
  Status load() override {
    const size_t bytes = scale_h_.nbytes();
    TRY(scale_, ctx_->allocate(bytes));
    TRY(shift_, ctx_->allocate(bytes));
    cudaError_t e = cudaMemcpy(scale_.get(), scale_h_.raw_data(), bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(shift_.get(), shift_h_.raw_data(), bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return make_error("uploading batch-norm scales to " + ctx_->name + ": " + error_text(e));
    return Status::ok();
  }

 protected:
  std::string launch(KernelRun& r) override {
    return channel_affine(in(r, 0), out(r), n_, static_cast<const float*>(scale_.get()), static_cast<const float*>(shift_.get()),
                          channels_, inner_, stream());
  }

 private:
  Tensor scale_h_, shift_h_;
  std::shared_ptr<void> scale_, shift_;
  int64_t n_ = 0, channels_ = 1, inner_ = 1;
};

// Batch normalization in training mode (cuDNN, batch statistics; Y, running_mean, running_var)
// and its gradient (dX, dScale, dB): 2-D to 4-D inputs, spatial mode.
class BatchNormTrainKernel : public CudaKernel {
 public:
  BatchNormTrainKernel(Context* c, const KernelInit& init, bool grad)
      : CudaKernel(c, grad ? "cuda:cudnn-batch-norm-grad" : "cuda:cudnn-batch-norm-train", init), grad_(grad) {
    const ops::AttrReader a = init.attrs();
    eps_ = a.f("epsilon");
    momentum_ = grad ? 0.f : static_cast<float>(a.f("momentum"));
  }
  ~BatchNormTrainKernel() override {
    if (bn_) cudnnDestroyTensorDescriptor(bn_);
  }
  CudnnDescriptors d;
  cudnnTensorDescriptor_t bn_ = nullptr;
  int64_t channels = 0;
  bool empty = false;
  size_t scratch_bytes() const override { return grad_ ? 0 : 2 * static_cast<size_t>(channels) * sizeof(float); }

 protected:
  std::string launch(KernelRun& r) override {
    if (empty) return "";
    const float one = 1.f, zero = 0.f;
    cudnnStatus_t st;
    if (grad_) {  // inputs dY, X, scale; outputs dX, dScale, dB
      st = cudnnBatchNormalizationBackward(ctx_->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d.x, in(r, 1), d.x,
                                           in(r, 0), d.x, out(r, 0), bn_, in(r, 2), out(r, 1), out(r, 2), eps_, nullptr, nullptr);
      return st == CUDNN_STATUS_SUCCESS ? "" : "cudnnBatchNormalizationBackward: " + error_text(st);
    }
    // inputs X, scale, B, input_mean, input_var; outputs Y, running_mean, running_var
    float* save = static_cast<float*>(r.scratch.data);
    st = cudnnBatchNormalizationForwardTraining(ctx_->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x, in(r, 0), d.x, out(r, 0),
                                                bn_, in(r, 1), in(r, 2), 0.0, nullptr, nullptr, eps_, save, save + channels);
    if (st != CUDNN_STATUS_SUCCESS) return "cudnnBatchNormalizationForwardTraining: " + error_text(st);
    return bn_running(in(r, 3), in(r, 4), save, save + channels, out(r, 1), out(r, 2), channels, static_cast<float>(eps_),
                      momentum_, stream());
  }

 private:
  bool grad_;
  double eps_ = 1e-5;
  float momentum_ = 0.9f;
};

Made make_batchnorm_train(Context* ctx, const KernelInit& init, bool grad) {
  if (std::string why = needs_f32(init, {0, 1, 2, 3, 4}); !why.empty()) return decline(why);
  const ops::AttrReader a = init.attrs();
  if (a.get("sync_ranks") && a.i("sync_ranks")) return decline("statistics over every rank's rows");
  if (a.f("epsilon") < CUDNN_BN_MIN_EPSILON) return decline("epsilon below cuDNN's minimum");
  if (!grad && init.out_types.size() != 3) return decline("training mode without both running statistics");
  const Shape x0 = init.in_types[grad ? 1 : 0]->static_shape();
  if (x0.size() < 2 || x0.size() > 4) return decline("inputs of rank other than 2 to 4");
  Shape x = x0;
  while (x.size() < 4) x.push_back(1);
  for (int64_t v : x)
    if (!fits_int(v)) return decline("a dimension above 2^31");
  auto k = std::make_unique<BatchNormTrainKernel>(ctx, init, grad);
  k->channels = x[1];
  k->empty = product(x) == 0;
  CUDNN_OR_DECLINE(cudnnCreateTensorDescriptor(&k->d.x));
  CUDNN_OR_DECLINE(cudnnSetTensor4dDescriptor(k->d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(x[0]), as_int(x[1]), as_int(x[2]), as_int(x[3])));
  CUDNN_OR_DECLINE(cudnnCreateTensorDescriptor(&k->bn_));
  CUDNN_OR_DECLINE(cudnnSetTensor4dDescriptor(k->bn_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, as_int(x[1]), 1, 1));
  return std::unique_ptr<Kernel>(std::move(k));
}

Made make_batchnorm(Context* ctx, const KernelInit& init) {
  if (std::string why = needs_f32(init, {0, 1, 2, 3, 4}); !why.empty()) return decline(why);
  if (init.out_types.size() > 1 || (init.attrs().get("training_mode") && init.attrs().i("training_mode")))
    return make_batchnorm_train(ctx, init, false);
  for (size_t i = 1; i <= 4; ++i)
    if (!has(init, i) || !init.constants[i]) return decline("statistics that are not constant");
  const Shape x = init.in_types[0]->static_shape();
  const int64_t c = x.size() > 1 ? x[1] : 1;
  const double eps = init.attrs().f("epsilon");
  Tensor scale(DType::kF32, {c}), shift(DType::kF32, {c});
  const Tensor g = init.constants[1]->contiguous(), b = init.constants[2]->contiguous(), m = init.constants[3]->contiguous(),
               v = init.constants[4]->contiguous();
  if (g.numel() != c || b.numel() != c || m.numel() != c || v.numel() != c) return decline("statistics that are not [C]");
  for (int64_t i = 0; i < c; ++i) {
    const double s = static_cast<double>(g.data<float>()[i]) / std::sqrt(static_cast<double>(v.data<float>()[i]) + eps);
    scale.data<float>()[i] = static_cast<float>(s);
    shift.data<float>()[i] = static_cast<float>(b.data<float>()[i] - m.data<float>()[i] * s);
  }
  return std::unique_ptr<Kernel>(new BatchNormKernel(ctx, init, std::move(scale), std::move(shift)));
}


}  // namespace

void register_cudnn_kernels(backend::KernelRegistry& reg, Context* ctx) {
  reg.add("Conv", "cuda:cudnn-conv", 10, [ctx](const KernelInit& i) { return make_conv(ctx, i, false); });
  reg.add("FusedConv", "cuda:cudnn-conv", 10, [ctx](const KernelInit& i) { return make_conv(ctx, i, true); });
  reg.add("MaxPool", "cuda:cudnn-pool", 10, [ctx](const KernelInit& i) { return make_pool(ctx, i, true); });
  reg.add("AveragePool", "cuda:cudnn-pool", 10, [ctx](const KernelInit& i) { return make_pool(ctx, i, false); });
  reg.add("BatchNormalization", "cuda:batch-norm", 10, [ctx](const KernelInit& i) { return make_batchnorm(ctx, i); });
  reg.add("BatchNormalizationGrad", "cuda:cudnn-batch-norm-grad", 10,
          [ctx](const KernelInit& i) { return make_batchnorm_train(ctx, i, true); });
  reg.add("ConvGradInput", "cuda:cudnn-conv-grad-input", 10, [ctx](const KernelInit& i) { return make_conv_grad(ctx, i, false); });
  reg.add("ConvGradWeight", "cuda:cudnn-conv-grad-weight", 10, [ctx](const KernelInit& i) { return make_conv_grad(ctx, i, true); });
  reg.add("MaxPoolGrad", "cuda:cudnn-pool-grad", 10, [ctx](const KernelInit& i) { return make_pool_grad(ctx, i, true); });
  reg.add("AveragePoolGrad", "cuda:cudnn-pool-grad", 10, [ctx](const KernelInit& i) { return make_pool_grad(ctx, i, false); });
}

}  // namespace tessera::cuda
