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

#include "engine/cuda/ops_internal.h"

namespace tessera::cuda {
namespace {

// ---- element-wise ----

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

// ---- rows: softmax, layer normalization, reductions, batch normalization ----
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
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    reg.add(op, "cuda:view", 10, [ctx](const KernelInit& i) { return make_view(ctx, i); });
  reg.add("Transpose", "cuda:strided-copy", 10, [ctx](const KernelInit& i) { return make_transpose(ctx, i); });
  reg.add("Expand", "cuda:strided-copy", 10, [ctx](const KernelInit& i) { return make_expand(ctx, i); });
  reg.add("Slice", "cuda:strided-copy", 10, [ctx](const KernelInit& i) { return make_slice(ctx, i); });
  reg.add("Concat", "cuda:concat", 10, [ctx](const KernelInit& i) { return make_concat(ctx, i); });
  reg.add("Gather", "cuda:gather", 10, [ctx](const KernelInit& i) { return make_gather(ctx, i); });
  reg.add("Cast", "cuda:cast", 10, [ctx](const KernelInit& i) { return make_cast(ctx, i); });
  reg.add("Pad", "cuda:pad", 10, [ctx](const KernelInit& i) { return make_pad(ctx, i); });
  register_cudnn_kernels(reg, ctx);
  register_training_kernels(reg, ctx);
}

}  // namespace tessera::cuda
