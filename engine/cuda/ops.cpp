// The CUDA device's kernels: cuBLAS for MatMul / Gemm (and their fused forms: the post-ops run as
// one epilogue kernel), cuDNN for Conv and pooling, our kernels (kernels.cu) for the rest.
//
// Each factory declines (nullptr, with the reason) what it does not take: the device's
// cannot_run() asks the same factories, so the split stage never places a node here that no
// kernel will take. All f32 except the data-movement ops (any element size) and Gather's indices.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "engine/cuda/context.h"
#include "engine/cuda/kernels.h"
#include "engine/ops/infer.h"

namespace tessera::cuda {
namespace {

using backend::Kernel;
using backend::KernelInit;
using backend::KernelRun;
using Made = Expected<std::unique_ptr<Kernel>>;

Made decline(const std::string& why) {
  backend::set_decline_reason(why);
  return std::unique_ptr<Kernel>();
}

int64_t product(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  const auto first = s.begin() + static_cast<std::ptrdiff_t>(std::min(from, s.size()));
  const auto last = s.begin() + static_cast<std::ptrdiff_t>(std::min(to, s.size()));
  return first < last ? std::accumulate(first, last, int64_t{1}, std::multiplies<int64_t>()) : 1;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[static_cast<size_t>(i)] = st[static_cast<size_t>(i) + 1] * s[static_cast<size_t>(i) + 1];
  return st;
}

// Strides reading `in` as the (broadcast) shape `out`: 0 on broadcast dims, right-aligned.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 && out[off + d] != 1 ? 0 : cs[d];
  return st;
}

// How a binary kernel reads a and b as the output's shape.
Broadcast make_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  Broadcast bc;
  bc.rank = static_cast<int>(out.size());
  const std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  for (size_t d = 0; d < out.size(); ++d) {
    bc.dims[d] = out[d];
    bc.a[d] = sa[d];
    bc.b[d] = sb[d];
  }
  bc.a_plain = product(a) == product(out);
  bc.b_plain = product(b) == product(out);
  return bc;
}

// A missing, non-f32 or non-plain input or output: why this node is not taken.
std::string needs_f32(const KernelInit& init, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (i < init.in_types.size() && init.in_types[i] && init.in_types[i]->dtype != DType::kF32)
      return "input " + std::to_string(i) + " is " + std::string(dtype_name(init.in_types[i]->dtype)) + " (CUDA kernels take f32)";
  for (const ir::TensorType* t : init.out_types)
    if (t->dtype != DType::kF32) return std::string("output is ") + std::string(dtype_name(t->dtype)) + " (CUDA kernels take f32)";
  return "";
}

bool has(const KernelInit& init, size_t i) { return i < init.in_types.size() && init.in_types[i] != nullptr; }

// The base of every CUDA kernel: its outputs are plain buffers, it runs under the device's lock
// on the device's stream, and a failed launch names the kernel and the device.
class CudaKernel : public Kernel {
 public:
  CudaKernel(Context* ctx, std::string impl, const KernelInit& init) : ctx_(ctx), impl_(std::move(impl)) {
    for (const ir::TensorType* t : init.out_types) out_bytes_.push_back(backend::plain_bytes(*t));
  }
  std::string name() const override { return impl_; }
  size_t output_bytes(size_t i) const override { return out_bytes_[i]; }
  Status run(KernelRun& r) override {
    std::lock_guard<std::mutex> lock(ctx_->mu);
    if (cudaError_t e = cudaSetDevice(ctx_->device); e != cudaSuccess)
      return make_error(impl_ + " on " + ctx_->name + ": " + error_text(e));
    const std::string err = launch(r);
    if (!err.empty()) return make_error(impl_ + " on " + ctx_->name + ": " + err);
    return Status::ok();
  }

 protected:
  virtual std::string launch(KernelRun& r) = 0;
  cudaStream_t stream() const { return ctx_->stream; }
  static const float* in(const KernelRun& r, size_t i) {
    return i < r.inputs.size() ? static_cast<const float*>(r.inputs[i].data) : nullptr;
  }
  static float* out(const KernelRun& r, size_t i = 0) { return static_cast<float*>(r.outputs[i].data); }
  Context* ctx_;
  std::string impl_;
  std::vector<size_t> out_bytes_;
};

// ---- element-wise ----

struct Activation {
  Unary op = Unary::kIdentity;
  float alpha = 0, beta = 0;
};

// The fused ops' "activation" attribute (engine/ops/fused.cpp) as a Unary.
Expected<Activation> fused_activation(const ops::AttrReader& a) {
  const std::string& s = a.s("activation");
  const float alpha = static_cast<float>(a.f("activation_alpha")), beta = static_cast<float>(a.f("activation_beta"));
  static const std::pair<const char*, Unary> kNames[] = {
      {"", Unary::kIdentity},        {"Relu", Unary::kRelu},       {"LeakyRelu", Unary::kLeakyRelu},
      {"Clip", Unary::kClip},        {"Sigmoid", Unary::kSigmoid}, {"Tanh", Unary::kTanh},
      {"Gelu", Unary::kGelu},        {"HardSwish", Unary::kHardSwish}, {"HardSigmoid", Unary::kHardSigmoid},
      {"Swish", Unary::kSwish}};
  for (const auto& [name, op] : kNames)
    if (s == name) return Activation{op, alpha, beta};
  return make_error("activation '" + s + "' has no CUDA epilogue");
}

class UnaryKernel : public CudaKernel {
 public:
  UnaryKernel(Context* c, const KernelInit& init, Activation act) : CudaKernel(c, "cuda:unary", init), act_(act) {
    n_ = init.out_types[0]->static_numel();
  }

 protected:
  std::string launch(KernelRun& r) override { return unary(act_.op, in(r, 0), out(r), n_, act_.alpha, act_.beta, stream()); }

 private:
  Activation act_;
  int64_t n_ = 0;
};

void add_unary(backend::KernelRegistry& reg, Context* ctx, const char* op, Unary u,
               std::function<Expected<Activation>(const KernelInit&)> params = nullptr) {
  reg.add(op, "cuda:unary", 10, [ctx, u, params](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0}); !why.empty()) return decline(why);
    Activation a{u, 0, 0};
    if (params) {
      Expected<Activation> p = params(init);
      if (!p) return decline(p.error().message);
      a = *p;
    }
    return std::unique_ptr<Kernel>(new UnaryKernel(ctx, init, a));
  });
}

// Clip's bounds: constant scalar inputs (absent: unbounded).
Expected<Activation> clip_bounds(const KernelInit& init) {
  Activation a{Unary::kClip, -INFINITY, INFINITY};
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!has(init, i)) continue;
    const Tensor* t = init.constants[i];
    if (!t || t->numel() != 1 || t->dtype() != DType::kF32) return make_error("Clip bounds that are not constant f32 scalars");
    (i == 1 ? a.alpha : a.beta) = t->data<float>()[0];
  }
  return a;
}

class BinaryKernel : public CudaKernel {
 public:
  BinaryKernel(Context* c, const KernelInit& init, Binary op) : CudaKernel(c, "cuda:binary", init), op_(op) {
    const Shape out_shape = init.out_types[0]->static_shape();
    n_ = product(out_shape);
    bc_ = make_broadcast(init.in_types[0]->static_shape(), init.in_types[1]->static_shape(), out_shape);
  }

 protected:
  std::string launch(KernelRun& r) override { return binary(op_, in(r, 0), in(r, 1), out(r), n_, bc_, stream()); }

 private:
  Binary op_;
  Broadcast bc_;
  int64_t n_ = 0;
};

void add_binary(backend::KernelRegistry& reg, Context* ctx, const char* op, Binary b) {
  reg.add(op, "cuda:binary", 10, [ctx, b](const KernelInit& init) -> Made {
    if (init.in_types.size() != 2 || !has(init, 0) || !has(init, 1)) return decline("takes exactly two inputs");
    if (std::string why = needs_f32(init, {0, 1}); !why.empty()) return decline(why);
    if (init.out_types[0]->rank() > kMaxRank) return decline("rank above " + std::to_string(kMaxRank));
    return std::unique_ptr<Kernel>(new BinaryKernel(ctx, init, b));
  });
}

// ---- matrix products (cuBLAS) ----

// Y = act(alpha * op(A) op(B) + bias + Z), row-major, batched over leading dims.
class GemmKernel : public CudaKernel {
 public:
  struct Shape3 {
    int64_t batch = 1, m = 0, n = 0, k = 0;
    int64_t stride_a = 0, stride_b = 0;
    bool trans_a = false, trans_b = false;
  };
  GemmKernel(Context* c, const KernelInit& init, Shape3 s, float alpha, int bias_input, int64_t bias_n, int64_t bias_inner,
             int z_input, Activation act)
      : CudaKernel(c, "cuda:cublas", init), s_(s), alpha_(alpha), bias_(bias_input), bias_n_(bias_n),
        bias_inner_(bias_inner), z_(z_input), act_(act) {}

 protected:
  std::string launch(KernelRun& r) override {
    const float beta = 0.f;
    const int64_t m = s_.m, n = s_.n, k = s_.k;
    if (m * n == 0) return "";
    float* y = out(r);
    if (k == 0) {
      if (cudaError_t e = cudaMemsetAsync(y, 0, static_cast<size_t>(s_.batch * m * n) * sizeof(float), stream()); e != cudaSuccess)
        return error_text(e);
    } else {
      const cublasOperation_t op_a = s_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = s_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
      const int lda = static_cast<int>(s_.trans_a ? m : k), ldb = static_cast<int>(s_.trans_b ? k : n);
      // Row-major Y = A B is column-major Y^T = B^T A^T: B first.
      cublasStatus_t st = cublasSgemmStridedBatched(ctx_->cublas, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                                                    static_cast<int>(k), &alpha_, in(r, 1), ldb, s_.stride_b, in(r, 0), lda,
                                                    s_.stride_a, &beta, y, static_cast<int>(n), m * n, static_cast<int>(s_.batch));
      if (st != CUBLAS_STATUS_SUCCESS) return "cublasSgemmStridedBatched: " + error_text(st);
    }
    const float* bias = bias_ >= 0 ? in(r, static_cast<size_t>(bias_)) : nullptr;
    const float* z = z_ >= 0 ? in(r, static_cast<size_t>(z_)) : nullptr;
    if (!bias && !z && act_.op == Unary::kIdentity) return "";
    return epilogue(y, s_.batch * m * n, bias, bias_n_, bias_inner_, z, act_.op, act_.alpha, act_.beta, stream());
  }

 private:
  Shape3 s_;
  float alpha_;
  int bias_;
  int64_t bias_n_, bias_inner_;
  int z_;
  Activation act_;
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

// MatMul / FusedMatMul: A [..., M, K] x B [..., K, N]; B 2-D (A's batch folded into M), equal
// batch dims, or A 2-D (broadcast over B's batch). 1-D operands are a row / a column.
Made make_matmul(Context* ctx, const KernelInit& init, bool fused) {
  if (std::string why = needs_f32(init, {0, 1, 2, 3}); !why.empty()) return decline(why);
  Shape a = init.in_types[0]->static_shape(), b = init.in_types[1]->static_shape();
  if (a.empty() || b.empty()) return decline("a scalar operand");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  GemmKernel::Shape3 s;
  s.m = a[a.size() - 2];
  s.k = a.back();
  s.n = b.back();
  if (b[b.size() - 2] != s.k) return decline("inner dimensions differ");
  const Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  if (bb.empty() || product(bb) == 1) {
    s.m *= product(ba);  // B shared: one GEMM over every row of A
  } else if (ba == bb) {
    s.batch = product(ba);
    s.stride_a = s.m * s.k;
    s.stride_b = s.k * s.n;
  } else if (ba.empty() || product(ba) == 1) {
    s.batch = product(bb);
    s.stride_b = s.k * s.n;
  } else {
    return decline("batch dimensions that broadcast other than one way");
  }
  if (!fits_int(s.m) || !fits_int(s.n) || !fits_int(s.k) || !fits_int(s.batch)) return decline("a dimension above 2^31");
  Activation act;
  int bias = -1, z = -1;
  int64_t bias_n = 1;
  if (fused) {
    TRY(act, fused_activation(init.attrs()));
    if (has(init, 2)) {
      const int64_t nb = product(init.in_types[2]->static_shape());
      if (nb != 1 && nb != s.n) return decline("a bias that is not [N]");
      bias = 2;
      bias_n = nb;
    }
    if (has(init, 3)) z = 3;
  }
  return std::unique_ptr<Kernel>(new GemmKernel(ctx, init, s, 1.f, bias, bias_n, 1, z, act));
}

// Gemm / FusedGemm: 2-D, transposes, alpha; C (beta 1) as a bias [N], [1, N], [M, 1], a scalar
// or a full [M, N] (then as the residual, unless FusedGemm has its own).
Made make_gemm(Context* ctx, const KernelInit& init, bool fused) {
  if (std::string why = needs_f32(init, {0, 1, 2, 3}); !why.empty()) return decline(why);
  const ops::AttrReader attrs = init.attrs();
  const Shape a = init.in_types[0]->static_shape(), b = init.in_types[1]->static_shape();
  if (a.size() != 2 || b.size() != 2) return decline("Gemm operands are not 2-D");
  GemmKernel::Shape3 s;
  s.trans_a = attrs.i("transA") != 0;
  s.trans_b = attrs.i("transB") != 0;
  s.m = s.trans_a ? a[1] : a[0];
  s.k = s.trans_a ? a[0] : a[1];
  s.n = s.trans_b ? b[0] : b[1];
  if (!fits_int(s.m) || !fits_int(s.n) || !fits_int(s.k)) return decline("a dimension above 2^31");
  Activation act;
  if (fused) {
    TRY(act, fused_activation(attrs));
  }
  int bias = -1, z = fused && has(init, 3) ? 3 : -1;
  int64_t bias_n = 1, inner = 1;
  if (has(init, 2)) {
    if (attrs.f("beta") != 1.0) return decline("beta other than 1 with C");
    const Shape c = init.in_types[2]->static_shape();
    const int64_t nc = product(c);
    if (nc == 1) {
      bias = 2;
    } else if (nc == s.n && (c.size() == 1 || c[0] == 1)) {
      bias = 2, bias_n = s.n;
    } else if (c.size() == 2 && c[0] == s.m && c[1] == 1) {
      bias = 2, bias_n = s.m, inner = s.n;
    } else if (nc == s.m * s.n && z < 0) {
      z = 2;
    } else {
      return decline("C of shape " + shape_to_string(c) + " with a residual");
    }
  }
  return std::unique_ptr<Kernel>(new GemmKernel(ctx, init, s, static_cast<float>(attrs.f("alpha")), bias, bias_n, inner, z, act));
}

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

int as_int(int64_t v) { return static_cast<int>(v); }

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

// ---- rows: softmax, layer normalization, reductions, batch normalization ----

// Input i viewed as [outer, axis, inner] around the node's "axis" attribute.
struct AxisRows {
  int64_t outer = 1, axis = 1, inner = 1;
};
AxisRows axis_rows(const KernelInit& init, size_t i) {
  const Shape s = init.in_types[i]->static_shape();
  int64_t axis = init.attrs().i("axis");
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  AxisRows r;
  r.outer = product(s, 0, static_cast<size_t>(axis));
  r.axis = s.empty() ? 1 : s[static_cast<size_t>(axis)];
  r.inner = product(s, static_cast<size_t>(axis) + 1);
  return r;
}

class SoftmaxKernel : public CudaKernel {
 public:
  SoftmaxKernel(Context* c, const KernelInit& init, bool log)
      : CudaKernel(c, "cuda:softmax", init), log_(log), rows_(axis_rows(init, 0)) {}

 protected:
  std::string launch(KernelRun& r) override {
    return softmax(in(r, 0), out(r), rows_.outer, rows_.axis, rows_.inner, log_, stream());
  }

 private:
  bool log_;
  AxisRows rows_;
};

class LayerNormKernel : public CudaKernel {
 public:
  LayerNormKernel(Context* c, const KernelInit& init, int64_t rows, int64_t cols)
      : CudaKernel(c, "cuda:layer-norm", init), rows_(rows), cols_(cols),
        eps_(static_cast<float>(init.attrs().f("epsilon"))), bias_(has(init, 2)) {}

 protected:
  std::string launch(KernelRun& r) override {
    return layer_norm(in(r, 0), in(r, 1), bias_ ? in(r, 2) : nullptr, out(r), rows_, cols_, eps_, stream());
  }

 private:
  int64_t rows_, cols_;
  float eps_;
  bool bias_;
};

class ReduceKernel : public CudaKernel {
 public:
  ReduceKernel(Context* c, const KernelInit& init, Reduce op, int64_t outer, int64_t axis, int64_t inner)
      : CudaKernel(c, "cuda:reduce", init), op_(op), outer_(outer), axis_(axis), inner_(inner) {}

 protected:
  std::string launch(KernelRun& r) override { return reduce(op_, in(r, 0), out(r), outer_, axis_, inner_, stream()); }

 private:
  Reduce op_;
  int64_t outer_, axis_, inner_;
};

// The reduced axes as one contiguous range [first, last] of x (else a decline).
Made make_reduce(Context* ctx, const KernelInit& init, Reduce op) {
  if (std::string why = needs_f32(init, {0}); !why.empty()) return decline(why);
  const ops::AttrReader attrs = init.attrs();
  const Shape x = init.in_types[0]->static_shape();
  std::vector<int64_t> axes;
  if (attrs.get("axes")) {
    axes = attrs.ints("axes");
  } else if (has(init, 1)) {
    const Tensor* t = init.constants[1];
    if (!t) return decline("axes that are not constant");
    const Tensor c = t->contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) axes.push_back(c.dtype() == DType::kI32 ? c.data<int32_t>()[i] : c.data<int64_t>()[i]);
  }
  if (axes.empty()) {
    if (attrs.get("noop_with_empty_axes") && attrs.i("noop_with_empty_axes")) return decline("noop_with_empty_axes");
    for (size_t d = 0; d < x.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(x.size()) : a;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (!axes.empty() && axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size()))
    return decline("reduced axes that are not contiguous");
  const size_t first = axes.empty() ? 0 : static_cast<size_t>(axes.front()), last = axes.empty() ? 0 : static_cast<size_t>(axes.back()) + 1;
  return std::unique_ptr<Kernel>(
      new ReduceKernel(ctx, init, op, product(x, 0, first), product(x, first, last), product(x, last)));
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

// ---- data movement ----

// Output 0 is input 0's bytes: the compile stage usually aliases it; else one device copy.
class ViewKernel : public CudaKernel {
 public:
  ViewKernel(Context* c, const KernelInit& init) : CudaKernel(c, "cuda:view", init) {}
  bool is_view() const override { return true; }

 protected:
  std::string launch(KernelRun& r) override {
    if (r.outputs[0].bytes == 0 || r.outputs[0].data == r.inputs[0].data) return "";
    const cudaError_t e = cudaMemcpyAsync(r.outputs[0].data, r.inputs[0].data, r.outputs[0].bytes, cudaMemcpyDeviceToDevice, stream());
    return e == cudaSuccess ? "" : error_text(e);
  }
};

Made make_view(Context* ctx, const KernelInit& init) {
  if (!has(init, 0) || init.in_types[0]->dtype != init.out_types[0]->dtype) return decline("changes the element type");
  if (backend::plain_bytes(*init.in_types[0]) != backend::plain_bytes(*init.out_types[0])) return decline("changes the size");
  return std::unique_ptr<Kernel>(new ViewKernel(ctx, init));
}

class StridedKernel : public CudaKernel {
 public:
  StridedKernel(Context* c, const KernelInit& init, std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t offset)
      : CudaKernel(c, "cuda:strided-copy", init), dims_(std::move(dims)), strides_(std::move(strides)), offset_(offset),
        elem_(static_cast<int>(dtype_size(init.out_types[0]->dtype))), n_(product(init.out_types[0]->static_shape())) {}

 protected:
  std::string launch(KernelRun& r) override {
    return strided_copy(r.inputs[0].data, r.outputs[0].data, elem_, static_cast<int>(dims_.size()), dims_.data(),
                        strides_.data(), offset_, n_, stream());
  }

 private:
  std::vector<int64_t> dims_, strides_;
  int64_t offset_;
  int elem_;
  int64_t n_;
};

bool movable(const KernelInit& init, std::string& why) {
  const size_t e = dtype_size(init.out_types[0]->dtype);
  if (e != 1 && e != 2 && e != 4 && e != 8) {
    why = std::string("elements of ") + std::string(dtype_name(init.out_types[0]->dtype));
    return false;
  }
  if (init.out_types[0]->rank() > kMaxRank) {
    why = "rank above " + std::to_string(kMaxRank);
    return false;
  }
  return true;
}

Made make_transpose(Context* ctx, const KernelInit& init) {
  std::string why;
  if (!movable(init, why)) return decline(why);
  const Shape x = init.in_types[0]->static_shape();
  std::vector<int64_t> perm = init.attrs().get("perm") ? init.attrs().ints("perm") : std::vector<int64_t>();
  if (perm.empty())
    for (size_t d = 0; d < x.size(); ++d) perm.push_back(static_cast<int64_t>(x.size() - 1 - d));
  const std::vector<int64_t> cs = contiguous_strides(x);
  std::vector<int64_t> st;
  for (int64_t p : perm) st.push_back(cs[static_cast<size_t>(p)]);
  return std::unique_ptr<Kernel>(new StridedKernel(ctx, init, init.out_types[0]->static_shape(), st, 0));
}

Made make_expand(Context* ctx, const KernelInit& init) {
  std::string why;
  if (!movable(init, why)) return decline(why);
  const Shape out_shape = init.out_types[0]->static_shape();
  return std::unique_ptr<Kernel>(
      new StridedKernel(ctx, init, out_shape, broadcast_strides(init.in_types[0]->static_shape(), out_shape), 0));
}

std::vector<int64_t> constant_ints(const Tensor* t) {
  std::vector<int64_t> v;
  const Tensor c = t->contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) v.push_back(c.dtype() == DType::kI32 ? c.data<int32_t>()[i] : c.data<int64_t>()[i]);
  return v;
}

// Slice with constant starts / axes / steps (the output's shape, known, gives the counts).
Made make_slice(Context* ctx, const KernelInit& init) {
  std::string why;
  if (!movable(init, why)) return decline(why);
  for (size_t i = 1; i < init.in_types.size(); ++i)
    if (has(init, i) && !init.constants[i]) return decline("starts, ends, axes or steps that are not constant");
  if (!has(init, 1)) return decline("no starts");
  const Shape x = init.in_types[0]->static_shape();
  const std::vector<int64_t> starts = constant_ints(init.constants[1]);
  std::vector<int64_t> axes, steps;
  if (has(init, 3)) axes = constant_ints(init.constants[3]);
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (has(init, 4)) steps = constant_ints(init.constants[4]);
  else steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return decline("starts, axes and steps of different lengths");
  const std::vector<int64_t> cs = contiguous_strides(x);
  std::vector<int64_t> st = cs;
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(x.size()) : axes[i];
    if (a < 0 || a >= static_cast<int64_t>(x.size()) || steps[i] == 0) return decline("a bad axis or step");
    const int64_t dim = x[static_cast<size_t>(a)];
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, std::max<int64_t>(dim - 1, 0));
    offset += s * cs[static_cast<size_t>(a)];
    st[static_cast<size_t>(a)] = cs[static_cast<size_t>(a)] * steps[i];
  }
  return std::unique_ptr<Kernel>(new StridedKernel(ctx, init, init.out_types[0]->static_shape(), st, offset));
}

// Concat: one 2-D copy per input (cudaMemcpy2DAsync: rows of each input's block).
class ConcatKernel : public CudaKernel {
 public:
  ConcatKernel(Context* c, const KernelInit& init, int64_t axis) : CudaKernel(c, "cuda:concat", init) {
    const Shape y = init.out_types[0]->static_shape();
    const size_t elem = dtype_size(init.out_types[0]->dtype);
    outer_ = product(y, 0, static_cast<size_t>(axis));
    row_ = static_cast<size_t>(product(y, static_cast<size_t>(axis))) * elem;
    for (const ir::TensorType* t : init.in_types)
      widths_.push_back(t ? static_cast<size_t>(product(t->static_shape(), static_cast<size_t>(axis))) * elem : 0);
  }

 protected:
  std::string launch(KernelRun& r) override {
    size_t at = 0;
    for (size_t i = 0; i < widths_.size(); ++i) {
      if (widths_[i] == 0 || outer_ == 0) continue;
      const cudaError_t e = cudaMemcpy2DAsync(static_cast<char*>(r.outputs[0].data) + at, row_, r.inputs[i].data, widths_[i],
                                              widths_[i], static_cast<size_t>(outer_), cudaMemcpyDeviceToDevice, stream());
      if (e != cudaSuccess) return "cudaMemcpy2DAsync: " + error_text(e);
      at += widths_[i];
    }
    return "";
  }

 private:
  int64_t outer_ = 0;
  size_t row_ = 0;
  std::vector<size_t> widths_;
};

Made make_concat(Context* ctx, const KernelInit& init) {
  for (const ir::TensorType* t : init.in_types)
    if (!t || t->dtype != init.out_types[0]->dtype) return decline("inputs of another element type");
  int64_t axis = init.attrs().i("axis");
  if (axis < 0) axis += init.out_types[0]->rank();
  return std::unique_ptr<Kernel>(new ConcatKernel(ctx, init, axis));
}

class CastKernel : public CudaKernel {
 public:
  CastKernel(Context* c, const KernelInit& init, Elem from, Elem to)
      : CudaKernel(c, "cuda:cast", init), from_(from), to_(to), n_(product(init.out_types[0]->static_shape())) {}

 protected:
  std::string launch(KernelRun& r) override { return cast(r.inputs[0].data, from_, r.outputs[0].data, to_, n_, stream()); }

 private:
  Elem from_, to_;
  int64_t n_;
};

Made make_cast(Context* ctx, const KernelInit& init) {
  auto elem = [](DType d) -> std::optional<Elem> {
    switch (d) {
      case DType::kF32: return Elem::kF32;
      case DType::kF64: return Elem::kF64;
      case DType::kI64: return Elem::kI64;
      case DType::kI32: return Elem::kI32;
      case DType::kI8: return Elem::kI8;
      case DType::kU8: return Elem::kU8;
      case DType::kBool: return Elem::kBool;
      default: return std::nullopt;
    }
  };
  const auto from = elem(init.in_types[0]->dtype), to = elem(init.out_types[0]->dtype);
  if (!from || !to) return decline("element types other than f32, f64, i64, i32, i8, u8 and bool");
  return std::unique_ptr<Kernel>(new CastKernel(ctx, init, *from, *to));
}

class PadKernel : public CudaKernel {
 public:
  PadKernel(Context* c, const KernelInit& init, std::vector<int64_t> begins, float value)
      : CudaKernel(c, "cuda:pad", init), out_(init.out_types[0]->static_shape()), in_(init.in_types[0]->static_shape()),
        begins_(std::move(begins)), value_(value) {}

 protected:
  std::string launch(KernelRun& r) override {
    return pad(in(r, 0), out(r), static_cast<int>(out_.size()), out_.data(), in_.data(), begins_.data(), value_, product(out_),
               stream());
  }

 private:
  Shape out_, in_;
  std::vector<int64_t> begins_;
  float value_;
};

// Pad in constant mode with constant pads (and axes, opset 18) on f32 data.
Made make_pad(Context* ctx, const KernelInit& init) {
  if (std::string why = needs_f32(init, {0, 2}); !why.empty()) return decline(why);
  if (init.attrs().s("mode") != "constant") return decline("mode " + init.attrs().s("mode"));
  for (size_t i = 1; i < init.in_types.size(); ++i)
    if (has(init, i) && !init.constants[i]) return decline("pads, value or axes that are not constant");
  if (!has(init, 1)) return decline("no pads");
  const Shape x = init.in_types[0]->static_shape();
  if (x.size() > static_cast<size_t>(kMaxRank)) return decline("rank above " + std::to_string(kMaxRank));
  const std::vector<int64_t> pads = constant_ints(init.constants[1]);
  std::vector<int64_t> axes;
  if (has(init, 3)) axes = constant_ints(init.constants[3]);
  else
    for (size_t d = 0; d < x.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  if (pads.size() != 2 * axes.size()) return decline("pads of the wrong length");
  std::vector<int64_t> begins(x.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(x.size()) : axes[i];
    if (a < 0 || a >= static_cast<int64_t>(x.size())) return decline("an axis out of range");
    begins[static_cast<size_t>(a)] = pads[i];
  }
  float value = 0.f;
  if (has(init, 2)) {
    const Tensor c = init.constants[2]->contiguous();
    if (c.numel() != 1) return decline("a constant_value that is not a scalar");
    value = c.data<float>()[0];
  }
  return std::unique_ptr<Kernel>(new PadKernel(ctx, init, std::move(begins), value));
}

class GatherKernel : public CudaKernel {
 public:
  GatherKernel(Context* c, const KernelInit& init, int64_t axis) : CudaKernel(c, "cuda:gather", init) {
    const Shape x = init.in_types[0]->static_shape();
    elem_ = static_cast<int>(dtype_size(init.in_types[0]->dtype));
    outer_ = product(x, 0, static_cast<size_t>(axis));
    axis_dim_ = x[static_cast<size_t>(axis)];
    inner_ = product(x, static_cast<size_t>(axis) + 1);
    num_ = product(init.in_types[1]->static_shape());
    i64_ = init.in_types[1]->dtype == DType::kI64;
  }

 protected:
  std::string launch(KernelRun& r) override {
    return gather(r.inputs[0].data, elem_, r.inputs[1].data, i64_, num_, r.outputs[0].data, outer_, axis_dim_, inner_, stream());
  }

 private:
  int elem_ = 4;
  int64_t outer_ = 1, axis_dim_ = 1, inner_ = 1, num_ = 0;
  bool i64_ = true;
};

Made make_gather(Context* ctx, const KernelInit& init) {
  std::string why;
  if (!movable(init, why)) return decline(why);
  if (!has(init, 1) || (init.in_types[1]->dtype != DType::kI64 && init.in_types[1]->dtype != DType::kI32))
    return decline("indices that are not i32 or i64");
  // Out-of-range indices are an error on the CPU; checked here at compile time when constant.
  int64_t axis = init.attrs().i("axis");
  const Shape x = init.in_types[0]->static_shape();
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  if (!init.constants[1]) return decline("indices known only at run time (range checks stay on the CPU)");
  for (int64_t i : constant_ints(init.constants[1]))
    if (i < -x[static_cast<size_t>(axis)] || i >= x[static_cast<size_t>(axis)]) return decline("an index out of range");
  return std::unique_ptr<Kernel>(new GatherKernel(ctx, init, axis));
}

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

void register_kernels(backend::KernelRegistry& reg, Context* ctx) {
  auto alpha_beta = [](const char* a, const char* b, Unary op) {
    return [=](const KernelInit& init) -> Expected<Activation> {
      const ops::AttrReader r = init.attrs();
      return Activation{op, a ? static_cast<float>(r.f(a)) : 0.f, b ? static_cast<float>(r.f(b)) : 0.f};
    };
  };
  add_unary(reg, ctx, "Relu", Unary::kRelu);
  add_unary(reg, ctx, "LeakyRelu", Unary::kLeakyRelu, alpha_beta("alpha", nullptr, Unary::kLeakyRelu));
  add_unary(reg, ctx, "Sigmoid", Unary::kSigmoid);
  add_unary(reg, ctx, "Tanh", Unary::kTanh);
  add_unary(reg, ctx, "Exp", Unary::kExp);
  add_unary(reg, ctx, "Log", Unary::kLog);
  add_unary(reg, ctx, "Sqrt", Unary::kSqrt);
  add_unary(reg, ctx, "Neg", Unary::kNeg);
  add_unary(reg, ctx, "Abs", Unary::kAbs);
  add_unary(reg, ctx, "Erf", Unary::kErf);
  add_unary(reg, ctx, "Reciprocal", Unary::kReciprocal);
  add_unary(reg, ctx, "Floor", Unary::kFloor);
  add_unary(reg, ctx, "Ceil", Unary::kCeil);
  add_unary(reg, ctx, "Round", Unary::kRound);
  add_unary(reg, ctx, "Sin", Unary::kSin);
  add_unary(reg, ctx, "Cos", Unary::kCos);
  add_unary(reg, ctx, "Sign", Unary::kSign);
  add_unary(reg, ctx, "Softplus", Unary::kSoftplus);
  add_unary(reg, ctx, "Mish", Unary::kMish);
  add_unary(reg, ctx, "HardSwish", Unary::kHardSwish);
  add_unary(reg, ctx, "HardSigmoid", Unary::kHardSigmoid, alpha_beta("alpha", "beta", Unary::kHardSigmoid));
  add_unary(reg, ctx, "Elu", Unary::kElu, alpha_beta("alpha", nullptr, Unary::kElu));
  add_unary(reg, ctx, "Selu", Unary::kSelu, alpha_beta("alpha", "gamma", Unary::kSelu));
  add_unary(reg, ctx, "Swish", Unary::kSwish, alpha_beta("alpha", nullptr, Unary::kSwish));
  add_unary(reg, ctx, "Clip", Unary::kClip, clip_bounds);
  add_unary(reg, ctx, "Gelu", Unary::kGelu, [](const KernelInit& init) -> Expected<Activation> {
    const std::string& m = init.attrs().s("approximate");
    if (m != "none" && m != "tanh") return make_error("approximate '" + m + "'");
    return Activation{m == "tanh" ? Unary::kGeluTanh : Unary::kGelu, 0, 0};
  });
  add_binary(reg, ctx, "Add", Binary::kAdd);
  add_binary(reg, ctx, "Sub", Binary::kSub);
  add_binary(reg, ctx, "Mul", Binary::kMul);
  add_binary(reg, ctx, "Div", Binary::kDiv);
  add_binary(reg, ctx, "Pow", Binary::kPow);
  add_binary(reg, ctx, "Max", Binary::kMax);
  add_binary(reg, ctx, "Min", Binary::kMin);
  add_binary(reg, ctx, "PRelu", Binary::kPRelu);

  reg.add("MatMul", "cuda:cublas", 10, [ctx](const KernelInit& i) { return make_matmul(ctx, i, false); });
  reg.add("FusedMatMul", "cuda:cublas", 10, [ctx](const KernelInit& i) { return make_matmul(ctx, i, true); });
  reg.add("Gemm", "cuda:cublas", 10, [ctx](const KernelInit& i) { return make_gemm(ctx, i, false); });
  reg.add("FusedGemm", "cuda:cublas", 10, [ctx](const KernelInit& i) { return make_gemm(ctx, i, true); });
  reg.add("Conv", "cuda:cudnn-conv", 10, [ctx](const KernelInit& i) { return make_conv(ctx, i, false); });
  reg.add("FusedConv", "cuda:cudnn-conv", 10, [ctx](const KernelInit& i) { return make_conv(ctx, i, true); });
  reg.add("MaxPool", "cuda:cudnn-pool", 10, [ctx](const KernelInit& i) { return make_pool(ctx, i, true); });
  reg.add("AveragePool", "cuda:cudnn-pool", 10, [ctx](const KernelInit& i) { return make_pool(ctx, i, false); });
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    const Reduce r = std::string(op) == "GlobalMaxPool" ? Reduce::kMax : Reduce::kMean;
    reg.add(op, "cuda:reduce", 10, [ctx, r](const KernelInit& init) -> Made {
      if (std::string why = needs_f32(init, {0}); !why.empty()) return decline(why);
      const Shape x = init.in_types[0]->static_shape();
      if (x.size() < 3) return decline("rank below 3");
      return std::unique_ptr<Kernel>(new ReduceKernel(ctx, init, r, x[0] * x[1], product(x, 2), 1));
    });
  }
  for (const auto& [op, r] : {std::pair<const char*, Reduce>{"ReduceSum", Reduce::kSum},
                              {"ReduceMean", Reduce::kMean}, {"ReduceMax", Reduce::kMax}, {"ReduceMin", Reduce::kMin}}) {
    const Reduce kind = r;
    reg.add(op, "cuda:reduce", 10, [ctx, kind](const KernelInit& i) { return make_reduce(ctx, i, kind); });
  }
  for (bool log : {false, true})
    reg.add(log ? "LogSoftmax" : "Softmax", "cuda:softmax", 10, [ctx, log](const KernelInit& init) -> Made {
      if (std::string why = needs_f32(init, {0}); !why.empty()) return decline(why);
      return std::unique_ptr<Kernel>(new SoftmaxKernel(ctx, init, log));
    });
  reg.add("LayerNormalization", "cuda:layer-norm", 10, [ctx](const KernelInit& init) -> Made {
    if (std::string why = needs_f32(init, {0, 1, 2}); !why.empty()) return decline(why);
    if (init.out_types.size() > 1) return decline("the Mean and InvStdDev outputs");
    const Shape x = init.in_types[0]->static_shape();
    int64_t axis = init.attrs().i("axis");
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    const int64_t cols = product(x, static_cast<size_t>(axis));
    for (size_t i : {size_t{1}, size_t{2}})
      if (has(init, i) && product(init.in_types[i]->static_shape()) != cols) return decline("a Scale or B that broadcasts");
    return std::unique_ptr<Kernel>(new LayerNormKernel(ctx, init, product(x, 0, static_cast<size_t>(axis)), cols));
  });
  reg.add("BatchNormalization", "cuda:batch-norm", 10, [ctx](const KernelInit& i) { return make_batchnorm(ctx, i); });
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    reg.add(op, "cuda:view", 10, [ctx](const KernelInit& i) { return make_view(ctx, i); });
  reg.add("Transpose", "cuda:strided-copy", 10, [ctx](const KernelInit& i) { return make_transpose(ctx, i); });
  reg.add("Expand", "cuda:strided-copy", 10, [ctx](const KernelInit& i) { return make_expand(ctx, i); });
  reg.add("Slice", "cuda:strided-copy", 10, [ctx](const KernelInit& i) { return make_slice(ctx, i); });
  reg.add("Concat", "cuda:concat", 10, [ctx](const KernelInit& i) { return make_concat(ctx, i); });
  reg.add("Gather", "cuda:gather", 10, [ctx](const KernelInit& i) { return make_gather(ctx, i); });
  reg.add("Cast", "cuda:cast", 10, [ctx](const KernelInit& i) { return make_cast(ctx, i); });
  reg.add("Pad", "cuda:pad", 10, [ctx](const KernelInit& i) { return make_pad(ctx, i); });
  // Training
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
  reg.add("BatchNormalizationGrad", "cuda:cudnn-batch-norm-grad", 10,
          [ctx](const KernelInit& i) { return make_batchnorm_train(ctx, i, true); });
  reg.add("SGDUpdate", "cuda:sgd-update", 10, [ctx](const KernelInit& i) { return make_sgd(ctx, i); });
  reg.add("AdamUpdate", "cuda:adam-update", 10, [ctx](const KernelInit& i) { return make_adam(ctx, i); });
  reg.add("ConvGradInput", "cuda:cudnn-conv-grad-input", 10, [ctx](const KernelInit& i) { return make_conv_grad(ctx, i, false); });
  reg.add("ConvGradWeight", "cuda:cudnn-conv-grad-weight", 10, [ctx](const KernelInit& i) { return make_conv_grad(ctx, i, true); });
  reg.add("MaxPoolGrad", "cuda:cudnn-pool-grad", 10, [ctx](const KernelInit& i) { return make_pool_grad(ctx, i, true); });
  reg.add("AveragePoolGrad", "cuda:cudnn-pool-grad", 10, [ctx](const KernelInit& i) { return make_pool_grad(ctx, i, false); });
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
