// Our own CUDA kernels (see kernels.h): grid-stride loops of 256 threads, block reductions by
// warp shuffles for rows (softmax, layer normalization, reductions).
#include "engine/cuda/kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 8192)); }
int rows_grid(int64_t rows) { return static_cast<int>(std::min<int64_t>(rows, 1 << 20)); }

std::string launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

__device__ __forceinline__ int64_t global_index() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// NaN-propagating maximum and minimum (fmaxf would drop a NaN operand).
__device__ __forceinline__ float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float min_nan(float a, float b) { return (a < b || a != a) ? a : b; }

__device__ __forceinline__ float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }

__device__ float apply_unary(Unary op, float x, float alpha, float beta) {
  switch (op) {
    case Unary::kIdentity: return x;
    case Unary::kRelu: return x < 0.f ? 0.f : x;
    case Unary::kLeakyRelu: return x < 0.f ? alpha * x : x;
    case Unary::kSigmoid: return 1.f / (1.f + expf(-x));
    case Unary::kTanh: return tanhf(x);
    case Unary::kExp: return expf(x);
    case Unary::kLog: return logf(x);
    case Unary::kSqrt: return sqrtf(x);
    case Unary::kNeg: return -x;
    case Unary::kAbs: return fabsf(x);
    case Unary::kErf: return erff(x);
    case Unary::kReciprocal: return 1.f / x;
    case Unary::kClip: {
      const float v = x < alpha ? alpha : x;
      return beta < v ? beta : v;
    }
    case Unary::kHardSigmoid: {
      const float v = alpha * x + beta;
      return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
    }
    case Unary::kHardSwish: {
      const float r = x + 3.f;
      return x * (r < 0.f ? 0.f : (r > 6.f ? 6.f : r)) / 6.f;
    }
    case Unary::kSwish: return x / (1.f + expf(-alpha * x));
    case Unary::kGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case Unary::kGeluTanh: return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Unary::kSoftplus: return softplus(x);
    case Unary::kFloor: return floorf(x);
    case Unary::kCeil: return ceilf(x);
    case Unary::kSin: return sinf(x);
    case Unary::kCos: return cosf(x);
    case Unary::kElu: return x < 0.f ? alpha * (expf(x) - 1.f) : x;
    case Unary::kSelu: return x <= 0.f ? beta * (alpha * (expf(x) - 1.f)) : beta * x;
    case Unary::kSign: return x > 0.f ? 1.f : (x < 0.f ? -1.f : x);
    case Unary::kRound: return rintf(x);
    case Unary::kMish: return x * tanhf(softplus(x));
  }
  return x;
}

__device__ __forceinline__ float apply_binary(Binary op, float a, float b) {
  switch (op) {
    case Binary::kAdd: return a + b;
    case Binary::kSub: return a - b;
    case Binary::kMul: return a * b;
    case Binary::kDiv: return a / b;
    case Binary::kPow: return powf(a, b);
    case Binary::kMax: return max_nan(a, b);
    case Binary::kMin: return min_nan(a, b);
    case Binary::kPRelu: return a < 0.f ? b * a : a;
    case Binary::kReluGrad: return b > 0.f ? a : 0.f;
    case Binary::kGeluGrad: {
      const float cdf = 0.5f * (1.f + erff(b * 0.70710678118654752f));
      return a * (cdf + b * expf(-0.5f * b * b) * 0.39894228040143268f);
    }
    case Binary::kGeluTanhGrad: {
      const float k = 0.79788456080286536f, u = k * (b + 0.044715f * b * b * b), t = tanhf(u);
      return a * (0.5f * (1.f + t) + 0.5f * b * (1.f - t * t) * k * (1.f + 3.f * 0.044715f * b * b));
    }
  }
  return a;
}

__global__ void fill_kernel(float* y, int64_t n, float v) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) y[i] = v;
}

__global__ void unary_kernel(Unary op, const float* x, float* y, int64_t n, float alpha, float beta) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) y[i] = apply_unary(op, x[i], alpha, beta);
}

template <bool kPlain>
__global__ void binary_kernel(Binary op, const float* a, const float* b, float* y, int64_t n, Broadcast bc) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    int64_t ia = i, ib = i;
    if (!kPlain) {
      int64_t r = i;
      ia = 0;
      ib = 0;
      for (int d = bc.rank - 1; d >= 0; --d) {
        const int64_t q = r % bc.dims[d];
        r /= bc.dims[d];
        ia += q * bc.a[d];
        ib += q * bc.b[d];
      }
      if (bc.a_plain) ia = i;
      if (bc.b_plain) ib = i;
    }
    y[i] = apply_binary(op, a[ia], b[ib]);
  }
}

__global__ void epilogue_kernel(float* y, int64_t n, const float* bias, int64_t bias_n, int64_t inner, const float* z,
                                Unary act, float alpha, float beta) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    float v = y[i];
    if (bias) v += bias[bias_n == 1 ? 0 : (i / inner) % bias_n];
    if (z) v += z[i];
    y[i] = apply_unary(act, v, alpha, beta);
  }
}

__global__ void channel_affine_kernel(const float* x, float* y, int64_t n, const float* scale, const float* shift,
                                      int64_t channels, int64_t inner) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t c = (i / inner) % channels;
    y[i] = x[i] * scale[c] + shift[c];
  }
}

// Reduces v over the block (every thread gets the result). `shared` holds 32 floats.
template <class F>
__device__ float block_reduce(float v, F f, float init, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : init;
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return max_nan(a, b); }
};
struct MinOp {
  __device__ float operator()(float a, float b) const { return min_nan(a, b); }
};

// The maximum of a row and the sum of exp(x - max) (every thread of the block gets both).
__device__ void row_softmax_stats(const float* xr, int64_t cols, float* shared, float& m, float& s) {
  m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = max_nan(m, xr[c]);
  m = block_reduce(m, MaxOp(), -INFINITY, shared);
  s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
  s = block_reduce(s, AddOp(), 0.f, shared);
}

// One block per row (inner == 1).
__global__ void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, bool log) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m, s;
    row_softmax_stats(xr, cols, shared, m, s);
    const float ls = logf(s);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      yr[c] = log ? xr[c] - m - ls : expf(xr[c] - m) / s;
  }
}

// One thread per (outer, inner) column (inner > 1).
__global__ void softmax_columns(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log) {
  for (int64_t i = global_index(); i < outer * inner; i += grid_stride()) {
    const int64_t o = i / inner, k = i % inner;
    const float* xc = x + o * axis * inner + k;
    float* yc = y + o * axis * inner + k;
    float m = -INFINITY;
    for (int64_t a = 0; a < axis; ++a) m = max_nan(m, xc[a * inner]);
    float s = 0.f;
    for (int64_t a = 0; a < axis; ++a) s += expf(xc[a * inner] - m);
    const float ls = logf(s);
    for (int64_t a = 0; a < axis; ++a) yc[a * inner] = log ? xc[a * inner] - m - ls : expf(xc[a * inner] - m) / s;
  }
}

__global__ void layer_norm_rows(const float* x, const float* scale, const float* bias, float* y, int64_t rows,
                                int64_t cols, float eps) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    const float mean = block_reduce(s, AddOp(), 0.f, shared) / static_cast<float>(cols);
    float v = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float d = xr[c] - mean;
      v += d * d;
    }
    const float var = block_reduce(v, AddOp(), 0.f, shared) / static_cast<float>(cols);
    const float inv = rsqrtf(var + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      yr[c] = (xr[c] - mean) * inv * scale[c] + (bias ? bias[c] : 0.f);
  }
}

template <class F>
__global__ void reduce_rows(const float* x, float* y, int64_t rows, int64_t cols, F f, float init, bool mean) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float v = init;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) v = f(v, x[r * cols + c]);
    v = block_reduce(v, f, init, shared);
    if (threadIdx.x == 0) y[r] = mean ? v / static_cast<float>(cols) : v;
  }
}

template <class F>
__global__ void reduce_columns(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, F f, float init,
                               bool mean) {
  for (int64_t i = global_index(); i < outer * inner; i += grid_stride()) {
    const int64_t o = i / inner, k = i % inner;
    float v = init;
    for (int64_t a = 0; a < axis; ++a) v = f(v, x[(o * axis + a) * inner + k]);
    y[i] = mean ? v / static_cast<float>(axis) : v;
  }
}

struct Strides {
  int rank;
  int64_t dims[kMaxRank];
  int64_t strides[kMaxRank];
};

template <class T>
__global__ void strided_copy_kernel(const T* x, T* y, Strides st, int64_t offset, int64_t n) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    int64_t r = i, src = offset;
    for (int d = st.rank - 1; d >= 0; --d) {
      src += (r % st.dims[d]) * st.strides[d];
      r /= st.dims[d];
    }
    y[i] = x[src];
  }
}

template <class T, class I>
__global__ void gather_kernel(const T* x, const I* indices, int64_t num_indices, T* y, int64_t outer, int64_t axis_dim,
                              int64_t inner) {
  const int64_t n = outer * num_indices * inner;
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t k = i % inner, j = (i / inner) % num_indices, o = i / (inner * num_indices);
    int64_t idx = static_cast<int64_t>(indices[j]);
    if (idx < 0) idx += axis_dim;
    y[i] = idx >= 0 && idx < axis_dim ? x[(o * axis_dim + idx) * inner + k] : T(0);
  }
}

template <class T>
std::string gather_typed(const void* x, const void* indices, bool indices64, int64_t num_indices, void* y, int64_t outer,
                         int64_t axis_dim, int64_t inner, cudaStream_t s) {
  const int64_t n = outer * num_indices * inner;
  if (indices64)
    gather_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const int64_t*>(indices),
                                                                 num_indices, static_cast<T*>(y), outer, axis_dim, inner);
  else
    gather_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const int32_t*>(indices),
                                                                 num_indices, static_cast<T*>(y), outer, axis_dim, inner);
  return launched();
}

__global__ void sgd_kernel(const float* p, const float* g, const float* lr, const float* buf, const float* loss, float* out_p,
                           float* out_buf, int64_t n, float momentum, bool nesterov, float wd, float gs) {
  const bool skip = loss && !isfinite(*loss);
  const float rate = *lr;
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    if (skip) {
      out_p[i] = p[i];
      if (out_buf) out_buf[i] = buf[i];
      continue;
    }
    float d = g[i] * gs;
    if (wd != 0.f) d += wd * p[i];
    if (out_buf) {
      const float b = momentum * buf[i] + d;
      out_buf[i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    out_p[i] = p[i] - rate * d;
  }
}

__device__ double scalar_value(const void* s, Scalar t) {
  switch (t) {
    case Scalar::kF32: return static_cast<double>(*static_cast<const float*>(s));
    case Scalar::kI64: return static_cast<double>(*static_cast<const int64_t*>(s));
    case Scalar::kI32: return static_cast<double>(*static_cast<const int32_t*>(s));
  }
  return 0.0;
}

__global__ void adam_kernel(const float* p, const float* g, const float* lr, const void* step, Scalar step_type, const float* m,
                            const float* v, const float* loss, float* out_p, float* out_m, float* out_v, int64_t n, double b1,
                            double b2, double eps, double wd, bool decoupled, float gs) {
  const bool skip = loss && !isfinite(*loss);
  const double rate = *lr, t = scalar_value(step, step_type);
  const double c1 = 1.0 - pow(b1, t), c2 = 1.0 - pow(b2, t);
  const float step_size = static_cast<float>(rate / c1), sc2 = static_cast<float>(sqrt(c2));
  const float fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2), f1b1 = static_cast<float>(1.0 - b1),
              f1b2 = static_cast<float>(1.0 - b2), feps = static_cast<float>(eps), fwd = static_cast<float>(wd),
              decay = static_cast<float>(1.0 - rate * wd);
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    if (skip) {
      out_p[i] = p[i];
      out_m[i] = m[i];
      out_v[i] = v[i];
      continue;
    }
    float param = p[i], d = g[i] * gs;
    if (decoupled) param *= decay;
    else if (wd != 0.0) d += fwd * param;
    const float mi = fb1 * m[i] + f1b1 * d;
    const float vi = fb2 * v[i] + f1b2 * d * d;
    out_m[i] = mi;
    out_v[i] = vi;
    out_p[i] = param - step_size * mi / (sqrtf(vi) / sc2 + feps);
  }
}

__device__ __forceinline__ int64_t label_at(const void* labels, bool labels64, int64_t i) {
  return labels64 ? static_cast<const int64_t*>(labels)[i] : static_cast<int64_t>(static_cast<const int32_t*>(labels)[i]);
}

// One block per row: max, sum of exp, then the loss (and log_softmax).
__global__ void xent_rows(const float* x, const void* labels, bool labels64, float* losses, float* log_prob, int64_t rows,
                          int64_t cols) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float m, s;
    row_softmax_stats(xr, cols, shared, m, s);
    const float ls = logf(s);
    if (log_prob)
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) log_prob[r * cols + c] = xr[c] - m - ls;
    if (threadIdx.x == 0) {
      const int64_t k = label_at(labels, labels64, r);
      losses[r] = (k < 0 || k >= cols) ? NAN : -(xr[k] - m - ls);
    }
  }
}

__global__ void xent_grad_rows(const float* dloss, bool per_row, float scale, const float* x, const void* labels,
                               bool labels64, float* dx, int64_t rows, int64_t cols) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float m, s;
    row_softmax_stats(xr, cols, shared, m, s);
    const float g = dloss[per_row ? r : 0] * scale;
    const int64_t k = label_at(labels, labels64, r);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dx[r * cols + c] = (k < 0 || k >= cols) ? NAN : g * (expf(xr[c] - m) / s - (c == k ? 1.f : 0.f));
  }
}

__global__ void softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * cols;
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += dy[base + c] * y[base + c];
    s = block_reduce(s, AddOp(), 0.f, shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dx[base + c] = y[base + c] * (dy[base + c] - s);
  }
}

__global__ void softmax_grad_columns(const float* dy, const float* y, float* dx, int64_t outer, int64_t axis, int64_t inner) {
  for (int64_t i = global_index(); i < outer * inner; i += grid_stride()) {
    const int64_t base = (i / inner) * axis * inner + i % inner;
    float s = 0.f;
    for (int64_t a = 0; a < axis; ++a) s += dy[base + a * inner] * y[base + a * inner];
    for (int64_t a = 0; a < axis; ++a) dx[base + a * inner] = y[base + a * inner] * (dy[base + a * inner] - s);
  }
}

// dX by rows (block per row), saving each row's mean and 1 / sqrt(var + eps) for the sums below.
__global__ void layer_norm_grad_rows(const float* dy, const float* x, const float* scale, float* dx, float* stats, int64_t rows,
                                     int64_t cols, float eps) {
  __shared__ float shared[32];
  const float n = static_cast<float>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    const float* gr = dy + r * cols;
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    const float mean = block_reduce(s, AddOp(), 0.f, shared) / n;
    float v = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) v += (xr[c] - mean) * (xr[c] - mean);
    const float inv = rsqrtf(block_reduce(v, AddOp(), 0.f, shared) / n + eps);
    float mg = 0.f, mgx = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = gr[c] * scale[c];
      mg += g;
      mgx += g * (xr[c] - mean) * inv;
    }
    mg = block_reduce(mg, AddOp(), 0.f, shared) / n;
    mgx = block_reduce(mgx, AddOp(), 0.f, shared) / n;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float xhat = (xr[c] - mean) * inv;
      dx[r * cols + c] = inv * (gr[c] * scale[c] - mg - xhat * mgx);
    }
    if (threadIdx.x == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = inv;
    }
  }
}

// dScale and dB: one thread per column, over the rows.
__global__ void layer_norm_grad_columns(const float* dy, const float* x, const float* stats, float* dscale, float* dbias,
                                        int64_t rows, int64_t cols) {
  for (int64_t c = global_index(); c < cols; c += grid_stride()) {
    float ds = 0.f, db = 0.f;
    for (int64_t r = 0; r < rows; ++r) {
      const float g = dy[r * cols + c];
      ds += g * (x[r * cols + c] - stats[2 * r]) * stats[2 * r + 1];
      db += g;
    }
    dscale[c] = ds;
    dbias[c] = db;
  }
}

__device__ __forceinline__ bool is_float(Elem e) { return e == Elem::kF32 || e == Elem::kF64; }

__global__ void cast_kernel(const void* x, Elem from, void* y, Elem to, int64_t n) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    double f = 0;
    int64_t k = 0;
    switch (from) {
      case Elem::kF32: f = static_cast<const float*>(x)[i]; break;
      case Elem::kF64: f = static_cast<const double*>(x)[i]; break;
      case Elem::kI64: k = static_cast<const int64_t*>(x)[i]; break;
      case Elem::kI32: k = static_cast<const int32_t*>(x)[i]; break;
      case Elem::kI8: k = static_cast<const int8_t*>(x)[i]; break;
      case Elem::kU8: k = static_cast<const uint8_t*>(x)[i]; break;
      case Elem::kBool: k = static_cast<const uint8_t*>(x)[i] != 0; break;
    }
    const bool src_float = is_float(from);
    if (to == Elem::kBool) {
      static_cast<uint8_t*>(y)[i] = src_float ? (f != 0.0) : (k != 0);  // NaN != 0: true
      continue;
    }
    if (is_float(to)) {
      const double v = src_float ? f : static_cast<double>(k);
      if (to == Elem::kF32) static_cast<float*>(y)[i] = static_cast<float>(v);
      else static_cast<double*>(y)[i] = v;
      continue;
    }
    // To an integer: floats truncate and saturate (NaN is 0), integers wrap.
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (to == Elem::kI32) lo = INT32_MIN, hi = INT32_MAX;
    if (to == Elem::kI8) lo = -128, hi = 127;
    if (to == Elem::kU8) lo = 0, hi = 255;
    int64_t v = k;
    if (src_float) {
      const double t = trunc(f);
      v = f != f ? 0 : t <= static_cast<double>(lo) ? lo : t >= static_cast<double>(hi) ? hi : static_cast<int64_t>(t);
    }
    switch (to) {
      case Elem::kI64: static_cast<int64_t*>(y)[i] = v; break;
      case Elem::kI32: static_cast<int32_t*>(y)[i] = static_cast<int32_t>(static_cast<uint32_t>(v)); break;
      case Elem::kI8: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(static_cast<uint8_t>(v)); break;
      case Elem::kU8: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v); break;
      default: break;
    }
  }
}

struct PadShape {
  int rank;
  int64_t out[kMaxRank], in[kMaxRank], begin[kMaxRank];
};

__global__ void pad_kernel(const float* x, float* y, PadShape p, float value, int64_t n) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    int64_t r = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = r % p.out[d];
      r /= p.out[d];
      const int64_t at = o - p.begin[d];
      inside = inside && at >= 0 && at < p.in[d];
      src += at * stride;
      stride *= p.in[d];
    }
    y[i] = inside ? x[src] : value;
  }
}

__global__ void bn_running_kernel(const float* in_mean, const float* in_var, const float* save_mean, const float* save_inv,
                                  float* out_mean, float* out_var, int64_t channels, float eps, float momentum) {
  for (int64_t c = global_index(); c < channels; c += grid_stride()) {
    const float var = 1.f / (save_inv[c] * save_inv[c]) - eps;
    out_mean[c] = in_mean[c] * momentum + save_mean[c] * (1.f - momentum);
    out_var[c] = in_var[c] * momentum + var * (1.f - momentum);
  }
}

}  // namespace

std::string softmax_grad(const float* dy, const float* y, float* dx, int64_t outer, int64_t axis, int64_t inner, cudaStream_t s) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return "";
  if (inner == 1)
    softmax_grad_rows<<<rows_grid(outer), kThreads, 0, s>>>(dy, y, dx, outer, axis);
  else
    softmax_grad_columns<<<blocks_for(outer * inner), kThreads, 0, s>>>(dy, y, dx, outer, axis, inner);
  return launched();
}

std::string layer_norm_grad(const float* dy, const float* x, const float* scale, float* dx, float* dscale, float* dbias,
                            float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  if (cols <= 0) return "";
  if (rows <= 0) {  // no rows: the sums are zeros
    cudaMemsetAsync(dscale, 0, static_cast<size_t>(cols) * sizeof(float), s);
    cudaMemsetAsync(dbias, 0, static_cast<size_t>(cols) * sizeof(float), s);
    return launched();
  }
  layer_norm_grad_rows<<<rows_grid(rows), kThreads, 0, s>>>(dy, x, scale, dx, stats, rows, cols, eps);
  layer_norm_grad_columns<<<blocks_for(cols), kThreads, 0, s>>>(dy, x, stats, dscale, dbias, rows, cols);
  return launched();
}

std::string cast(const void* x, Elem from, void* y, Elem to, int64_t n, cudaStream_t s) {
  if (n <= 0) return "";
  cast_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, from, y, to, n);
  return launched();
}

std::string pad(const float* x, float* y, int rank, const int64_t* out_dims, const int64_t* in_dims, const int64_t* begins,
                float value, int64_t n, cudaStream_t s) {
  if (n <= 0) return "";
  if (rank > kMaxRank) return "rank " + std::to_string(rank) + " is above " + std::to_string(kMaxRank);
  PadShape p{};
  p.rank = rank;
  for (int d = 0; d < rank; ++d) {
    p.out[d] = out_dims[d];
    p.in[d] = in_dims[d];
    p.begin[d] = begins[d];
  }
  pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, p, value, n);
  return launched();
}

std::string bn_running(const float* in_mean, const float* in_var, const float* save_mean, const float* save_inv,
                       float* out_mean, float* out_var, int64_t channels, float eps, float momentum, cudaStream_t s) {
  if (channels <= 0) return "";
  bn_running_kernel<<<blocks_for(channels), kThreads, 0, s>>>(in_mean, in_var, save_mean, save_inv, out_mean, out_var, channels,
                                                             eps, momentum);
  return launched();
}

std::string sgd_update(const float* p, const float* g, const float* lr, const float* buf, const float* loss, float* out_p,
                       float* out_buf, int64_t n, float momentum, bool nesterov, float weight_decay, float grad_scale,
                       cudaStream_t s) {
  if (n <= 0) return "";
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, lr, buf, loss, out_p, out_buf, n, momentum, nesterov, weight_decay,
                                                grad_scale);
  return launched();
}

std::string adam_update(const float* p, const float* g, const float* lr, const void* step, Scalar step_type, const float* m,
                        const float* v, const float* loss, float* out_p, float* out_m, float* out_v, int64_t n, double beta1,
                        double beta2, double eps, double weight_decay, bool decoupled, float grad_scale, cudaStream_t s) {
  if (n <= 0) return "";
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, lr, step, step_type, m, v, loss, out_p, out_m, out_v, n, beta1, beta2,
                                                 eps, weight_decay, decoupled, grad_scale);
  return launched();
}

std::string softmax_xent(const float* x, const void* labels, bool labels64, float* losses, float* log_prob, int64_t rows,
                         int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return "";
  xent_rows<<<rows_grid(rows), kThreads, 0, s>>>(x, labels, labels64, losses, log_prob, rows, cols);
  return launched();
}

std::string softmax_xent_grad(const float* dloss, bool per_row, float scale, const float* x, const void* labels,
                              bool labels64, float* dx, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return "";
  xent_grad_rows<<<rows_grid(rows), kThreads, 0, s>>>(dloss, per_row, scale, x, labels, labels64, dx, rows, cols);
  return launched();
}

std::string unary(Unary op, const float* x, float* y, int64_t n, float alpha, float beta, cudaStream_t s) {
  if (n <= 0) return "";
  unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, x, y, n, alpha, beta);
  return launched();
}

std::string binary(Binary op, const float* a, const float* b, float* y, int64_t n, const Broadcast& bc, cudaStream_t s) {
  if (n <= 0) return "";
  if (bc.a_plain && bc.b_plain)
    binary_kernel<true><<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n, bc);
  else
    binary_kernel<false><<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n, bc);
  return launched();
}

std::string epilogue(float* y, int64_t n, const float* bias, int64_t bias_n, int64_t inner, const float* z, Unary act,
                     float alpha, float beta, cudaStream_t s) {
  if (n <= 0) return "";
  epilogue_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, n, bias, std::max<int64_t>(bias_n, 1), std::max<int64_t>(inner, 1), z,
                                                     act, alpha, beta);
  return launched();
}

std::string channel_affine(const float* x, float* y, int64_t n, const float* scale, const float* shift, int64_t channels,
                           int64_t inner, cudaStream_t s) {
  if (n <= 0) return "";
  channel_affine_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, scale, shift, std::max<int64_t>(channels, 1),
                                                           std::max<int64_t>(inner, 1));
  return launched();
}

std::string softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log, cudaStream_t s) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return "";
  if (inner == 1)
    softmax_rows<<<rows_grid(outer), kThreads, 0, s>>>(x, y, outer, axis, log);
  else
    softmax_columns<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer, axis, inner, log);
  return launched();
}

std::string layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                       float eps, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return "";
  layer_norm_rows<<<rows_grid(rows), kThreads, 0, s>>>(x, scale, bias, y, rows, cols, eps);
  return launched();
}

std::string reduce(Reduce op, const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, cudaStream_t s) {
  if (outer <= 0 || inner <= 0) return "";
  const bool mean = op == Reduce::kMean;
  if (axis <= 0) {  // an empty reduction: the identity (NaN for a mean, as 0 / 0)
    const float v = op == Reduce::kMax ? -INFINITY : op == Reduce::kMin ? INFINITY : mean ? NAN : 0.f;
    fill_kernel<<<blocks_for(outer * inner), kThreads, 0, s>>>(y, outer * inner, v);
    return launched();
  }
  if (inner == 1) {
    const int g = rows_grid(outer);
    if (op == Reduce::kMax) reduce_rows<<<g, kThreads, 0, s>>>(x, y, outer, axis, MaxOp(), -INFINITY, false);
    else if (op == Reduce::kMin) reduce_rows<<<g, kThreads, 0, s>>>(x, y, outer, axis, MinOp(), INFINITY, false);
    else reduce_rows<<<g, kThreads, 0, s>>>(x, y, outer, axis, AddOp(), 0.f, mean);
  } else {
    const int g = blocks_for(outer * inner);
    if (op == Reduce::kMax) reduce_columns<<<g, kThreads, 0, s>>>(x, y, outer, axis, inner, MaxOp(), -INFINITY, false);
    else if (op == Reduce::kMin) reduce_columns<<<g, kThreads, 0, s>>>(x, y, outer, axis, inner, MinOp(), INFINITY, false);
    else reduce_columns<<<g, kThreads, 0, s>>>(x, y, outer, axis, inner, AddOp(), 0.f, mean);
  }
  return launched();
}

std::string strided_copy(const void* x, void* y, int elem, int rank, const int64_t* dims, const int64_t* strides,
                         int64_t offset, int64_t n, cudaStream_t s) {
  if (n <= 0) return "";
  if (rank > kMaxRank) return "rank " + std::to_string(rank) + " is above " + std::to_string(kMaxRank);
  Strides st{};
  st.rank = rank;
  for (int d = 0; d < rank; ++d) {
    st.dims[d] = dims[d];
    st.strides[d] = strides[d];
  }
  switch (elem) {
    case 1: strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), st, offset, n); break;
    case 2: strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), st, offset, n); break;
    case 4: strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), st, offset, n); break;
    case 8: strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y), st, offset, n); break;
    default: return "no strided copy for " + std::to_string(elem) + "-byte elements";
  }
  return launched();
}

std::string gather(const void* x, int elem, const void* indices, bool indices64, int64_t num_indices, void* y,
                   int64_t outer, int64_t axis_dim, int64_t inner, cudaStream_t s) {
  if (outer * num_indices * inner <= 0) return "";
  switch (elem) {
    case 1: return gather_typed<uint8_t>(x, indices, indices64, num_indices, y, outer, axis_dim, inner, s);
    case 2: return gather_typed<uint16_t>(x, indices, indices64, num_indices, y, outer, axis_dim, inner, s);
    case 4: return gather_typed<uint32_t>(x, indices, indices64, num_indices, y, outer, axis_dim, inner, s);
    case 8: return gather_typed<uint64_t>(x, indices, indices64, num_indices, y, outer, axis_dim, inner, s);
    default: return "no gather for " + std::to_string(elem) + "-byte elements";
  }
}

}  // namespace tessera::cuda
