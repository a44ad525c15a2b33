// Our own CUDA kernels (kernels.cu), as launchers on a stream. f32 throughout; index math in
// int64. Every launcher returns the launch error ("" when the launch succeeded) and does nothing
// for empty tensors. NaN propagates as ONNX and the reference kernels say (Relu(NaN) = NaN,
// Max(NaN, x) = NaN, a row with a NaN softmaxes to NaN).
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace tessera::cuda {

inline constexpr int kMaxRank = 8;

// Element-wise functions of one input (alpha, beta: the op's attributes).
enum class Unary : int {
  kIdentity, kRelu, kLeakyRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kErf, kReciprocal,
  kClip, kHardSigmoid, kHardSwish, kSwish, kGelu, kGeluTanh, kSoftplus, kFloor, kCeil, kSin, kCos, kElu,
  kSelu, kSign, kRound, kMish
};
// Element-wise functions of two inputs, with ONNX (numpy) broadcasting.
// The gradients: a = dY, b = the forward's Y (kReluGrad: dX = Y > 0 ? dY : 0) or X (kGeluGrad,
// kGeluTanhGrad: dX = dY * Gelu'(X)).
enum class Binary : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu, kReluGrad, kGeluGrad, kGeluTanhGrad };

// Strides of an operand read as the output's shape (0 on broadcast dims).
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};      // output dims
  int64_t a[kMaxRank] = {};         // a's stride for each output dim
  int64_t b[kMaxRank] = {};
  bool a_plain = false, b_plain = false;  // reads exactly the output's index (no index math)
};

std::string unary(Unary op, const float* x, float* y, int64_t n, float alpha, float beta, cudaStream_t s);
std::string binary(Binary op, const float* a, const float* b, float* y, int64_t n, const Broadcast& bc, cudaStream_t s);

// y = act(y + bias[(i / inner) % bias_n] + z[i]) in place: the post-ops of FusedConv (inner = the
// spatial size), FusedMatMul / FusedGemm (inner = 1). bias or z may be null.
std::string epilogue(float* y, int64_t n, const float* bias, int64_t bias_n, int64_t inner, const float* z, Unary act,
                     float alpha, float beta, cudaStream_t s);
// y[i] = x[i] * scale[c] + shift[c], c = (i / inner) % channels (inference batch normalization).
std::string channel_affine(const float* x, float* y, int64_t n, const float* scale, const float* shift,
                           int64_t channels, int64_t inner, cudaStream_t s);
// (Log)Softmax of x viewed as [outer, axis, inner] along the middle.
std::string softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log, cudaStream_t s);
// Layer normalization of rows of `cols` values: y = (x - mean) / sqrt(var + eps) * scale + bias
// (scale, bias: `cols` values; bias may be null).
std::string layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                       float eps, cudaStream_t s);
enum class Reduce : int { kSum, kMean, kMax, kMin };
// Reduces x viewed as [outer, axis, inner] along the middle into y [outer, inner].
std::string reduce(Reduce op, const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, cudaStream_t s);
// y[i] = x[offset + sum_d index_d(i) * strides[d]] for the output's dims (Transpose, Slice,
// Expand, broadcasting copies), of `elem` bytes per element (1, 2, 4 or 8).
std::string strided_copy(const void* x, void* y, int elem, int rank, const int64_t* dims, const int64_t* strides,
                         int64_t offset, int64_t n, cudaStream_t s);
// Element types Cast converts between on the GPU.
enum class Elem : int { kF32, kF64, kI64, kI32, kI8, kU8, kBool };
// Cast as the reference kernel: floats to integers truncate (NaN 0, out of range saturates),
// integers to narrower integers wrap, anything to bool is x != 0 (NaN true), bool is 0 or 1.
std::string cast(const void* x, Elem from, void* y, Elem to, int64_t n, cudaStream_t s);
// Constant padding of f32 data (negative pads crop): y[o] = x[o - begin] inside, else value.
std::string pad(const float* x, float* y, int rank, const int64_t* out_dims, const int64_t* in_dims, const int64_t* begins,
                float value, int64_t n, cudaStream_t s);
// Gather along an axis: x viewed as [outer, axis_dim, inner], indices (int64 or int32, negative
// counting from the back; the caller checks their range), y as [outer, num_indices, inner].
std::string gather(const void* x, int elem, const void* indices, bool indices64, int64_t num_indices, void* y,
                   int64_t outer, int64_t axis_dim, int64_t inner, cudaStream_t s);

// ---- training ----

// A scalar the graph computes or feeds (the learning rate, Adam's step): its element type.
enum class Scalar : int { kF32, kI64, kI32 };

// torch.optim.SGD (dampening 0) as SGDUpdate's reference kernel; buf and out_buf null without
// momentum; when loss is given and not finite the step is skipped (outputs = inputs).
std::string sgd_update(const float* p, const float* g, const float* lr, const float* buf, const float* loss, float* out_p,
                       float* out_buf, int64_t n, float momentum, bool nesterov, float weight_decay, float grad_scale,
                       cudaStream_t s);
// torch.optim.Adam / AdamW as AdamUpdate's reference kernel (bias corrections from the step).
std::string adam_update(const float* p, const float* g, const float* lr, const void* step, Scalar step_type, const float* m,
                        const float* v, const float* loss, float* out_p, float* out_m, float* out_v, int64_t n, double beta1,
                        double beta2, double eps, double weight_decay, bool decoupled, float grad_scale, cudaStream_t s);
// SoftmaxGrad over [outer, axis, inner]'s middle axis: dX = Y * (dY - sum(dY * Y)).
std::string softmax_grad(const float* dy, const float* y, float* dx, int64_t outer, int64_t axis, int64_t inner, cudaStream_t s);
// LayerNormalizationGrad of rows of `cols`: dX, and dScale / dB summed over the rows; `stats`
// is scratch of 2 * rows floats.
std::string layer_norm_grad(const float* dy, const float* x, const float* scale, float* dx, float* dscale, float* dbias,
                            float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s);
// Batch normalization's running statistics after a training step, from the batch's mean and
// 1 / sqrt(var + eps) (cuDNN's saved values): running = input * momentum + batch * (1 - momentum),
// with the batch's population variance (as the reference kernel; cuDNN's own update is unbiased).
std::string bn_running(const float* in_mean, const float* in_var, const float* save_mean, const float* save_inv,
                       float* out_mean, float* out_var, int64_t channels, float eps, float momentum, cudaStream_t s);
// Softmax cross entropy of rows x [rows, cols] against labels (i64 or i32): per-row losses into
// `losses` (a label out of [0, cols) gives NaN, so training stops at a non-finite loss), and
// log_softmax into log_prob when it is not null.
std::string softmax_xent(const float* x, const void* labels, bool labels64, float* losses, float* log_prob, int64_t rows,
                         int64_t cols, cudaStream_t s);
// Its gradient: dx = dloss[per_row ? i : 0] * scale * (softmax(x_i) - onehot(label_i)).
std::string softmax_xent_grad(const float* dloss, bool per_row, float scale, const float* x, const void* labels,
                              bool labels64, float* dx, int64_t rows, int64_t cols, cudaStream_t s);

}  // namespace tessera::cuda
