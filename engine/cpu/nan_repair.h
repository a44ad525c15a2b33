// NaN and infinity as the reference kernels (and ONNX Runtime) treat them, for the fast kernels
// whose library does not: oneDNN's max pooling, max reduction and softmax, and our AVX2 2x2 max
// pooling, compute max(x, y) with instructions that return the second operand when either is NaN,
// so a NaN in the input vanishes. These kernels scan their input after running (a vectorised
// pass, the only cost when the data is finite) and, only when it holds a NaN (or, for softmax, a
// non-finite value), repair the outputs it reaches. Internal to engine/cpu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/tensor.h"

namespace tessera::cpu {

// Element-wise activations written with compares that are false for NaN, so NaN falls through:
// cpu.vec:unary's kernels, and what a fused convolution or GEMM applies itself when its oneDNN
// post-op would drop NaN (onednn_util.h Activation::exact). a, b: LeakyRelu's alpha; Clip's
// min and max (min > max gives max); HardSigmoid's alpha and beta.
enum class ActFn { kRelu, kLeakyRelu, kClip, kExp, kLog, kHardSigmoid };
struct ExactActivation {
  ActFn fn = ActFn::kRelu;
  float a = 0.f, b = 0.f;
};
// y = act(x) over [0, n) (x == y is fine), over the OpenMP team when n is large.
void apply_activation(const ExactActivation& act, const float* x, float* y, int64_t n);

// Whether x[0, n) holds a NaN / a NaN or an infinity.
bool has_nan(const float* x, size_t n);
bool has_non_finite(const float* x, size_t n);
bool has_non_finite(const Tensor& t);  // a contiguous f32 tensor (a kernel's constant weights)

// 1 where x is NaN, else 0 (a buffer the kernel's own primitive then pools or reduces: the
// outputs it gives a non-zero are the ones whose window or slice held a NaN).
void nan_indicator(const float* x, float* out, size_t n);
// y[i] = NaN where mark[i] != 0.
void apply_nan_mark(const float* mark, float* y, size_t n);

// Softmax (or LogSoftmax) of x viewed as [outer, len, inner] along the middle axis: recomputes,
// as the reference kernel does, every row that holds a non-finite value (a NaN or +inf anywhere
// makes the whole row NaN; -inf alone gives 0, or -inf for LogSoftmax).
void repair_softmax_rows(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool log);

}  // namespace tessera::cpu
