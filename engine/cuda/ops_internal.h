// What the CUDA device's kernel files share (ops.cpp, ops_cudnn.cpp, ops_train.cpp): the base of
// every kernel, how a factory declines, shapes and strides, the fused ops' activation.
#pragma once

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "engine/cuda/context.h"
#include "engine/cuda/kernels.h"
#include "engine/ops/infer.h"

namespace tessera::cuda {

using backend::Kernel;
using backend::KernelInit;
using backend::KernelRun;
using Made = Expected<std::unique_ptr<Kernel>>;

inline Made decline(const std::string& why) {
  backend::set_decline_reason(why);
  return std::unique_ptr<Kernel>();
}

inline int64_t product(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  const auto first = s.begin() + static_cast<std::ptrdiff_t>(std::min(from, s.size()));
  const auto last = s.begin() + static_cast<std::ptrdiff_t>(std::min(to, s.size()));
  return first < last ? std::accumulate(first, last, int64_t{1}, std::multiplies<int64_t>()) : 1;
}

inline std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[static_cast<size_t>(i)] = st[static_cast<size_t>(i) + 1] * s[static_cast<size_t>(i) + 1];
  return st;
}

// Strides reading `in` as the (broadcast) shape `out`: 0 on broadcast dims, right-aligned.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 && out[off + d] != 1 ? 0 : cs[d];
  return st;
}

// How a binary kernel reads a and b as the output's shape.
inline Broadcast make_broadcast(const Shape& a, const Shape& b, const Shape& out) {
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
inline std::string needs_f32(const KernelInit& init, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (i < init.in_types.size() && init.in_types[i] && init.in_types[i]->dtype != DType::kF32)
      return "input " + std::to_string(i) + " is " + std::string(dtype_name(init.in_types[i]->dtype)) + " (CUDA kernels take f32)";
  for (const ir::TensorType* t : init.out_types)
    if (t->dtype != DType::kF32) return std::string("output is ") + std::string(dtype_name(t->dtype)) + " (CUDA kernels take f32)";
  return "";
}

inline bool has(const KernelInit& init, size_t i) { return i < init.in_types.size() && init.in_types[i] != nullptr; }

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


struct Activation {
  Unary op = Unary::kIdentity;
  float alpha = 0, beta = 0;
};

// The fused ops' "activation" attribute (engine/ops/fused.cpp) as a Unary.
inline Expected<Activation> fused_activation(const ops::AttrReader& a) {
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

inline void add_binary(backend::KernelRegistry& reg, Context* ctx, const char* op, Binary b) {
  reg.add(op, "cuda:binary", 10, [ctx, b](const KernelInit& init) -> Made {
    if (init.in_types.size() != 2 || !has(init, 0) || !has(init, 1)) return decline("takes exactly two inputs");
    if (std::string why = needs_f32(init, {0, 1}); !why.empty()) return decline(why);
    if (init.out_types[0]->rank() > kMaxRank) return decline("rank above " + std::to_string(kMaxRank));
    return std::unique_ptr<Kernel>(new BinaryKernel(ctx, init, b));
  });
}

inline bool fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

inline int as_int(int64_t v) { return static_cast<int>(v); }


// Input i viewed as [outer, axis, inner] around the node's "axis" attribute.
struct AxisRows {
  int64_t outer = 1, axis = 1, inner = 1;
};
inline AxisRows axis_rows(const KernelInit& init, size_t i) {
  const Shape s = init.in_types[i]->static_shape();
  int64_t axis = init.attrs().i("axis");
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  AxisRows r;
  r.outer = product(s, 0, static_cast<size_t>(axis));
  r.axis = s.empty() ? 1 : s[static_cast<size_t>(axis)];
  r.inner = product(s, static_cast<size_t>(axis) + 1);
  return r;
}


inline std::vector<int64_t> constant_ints(const Tensor* t) {
  std::vector<int64_t> v;
  const Tensor c = t->contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) v.push_back(c.dtype() == DType::kI32 ? c.data<int32_t>()[i] : c.data<int64_t>()[i]);
  return v;
}


// The kernels of ops_cudnn.cpp (cuDNN: convolution, pooling, batch normalization, their
// gradients) and of ops_train.cpp (optimizer updates, the loss, the backward ops of the rest).
void register_cudnn_kernels(backend::KernelRegistry& reg, Context* ctx);
void register_training_kernels(backend::KernelRegistry& reg, Context* ctx);

}  // namespace tessera::cuda
