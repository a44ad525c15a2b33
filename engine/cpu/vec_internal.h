// Shared by the vectorised kernel files (vec_kernels.cpp, vec_train.cpp, vec_norm.cpp): a Kernel from a
// lambda, and the plain-layout check. Internal to engine/cpu.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {

class VecKernel : public Kernel {
 public:
  using Fn = std::function<Status(KernelRun&)>;
  VecKernel(std::string name, std::vector<size_t> out_bytes, Fn fn, bool view = false)
      : name_(std::move(name)), out_bytes_(std::move(out_bytes)), fn_(std::move(fn)), view_(view) {}
  std::string name() const override { return name_; }
  size_t output_bytes(size_t i) const override { return i < out_bytes_.size() ? out_bytes_[i] : 0; }
  bool is_view() const override { return view_; }
  Status run(KernelRun& run) override { return fn_(run); }

 private:
  std::string name_;
  std::vector<size_t> out_bytes_;
  Fn fn_;
  bool view_;
};

inline Expected<KernelPtr> make(const std::string& name, const KernelInit& init, VecKernel::Fn fn) {
  std::vector<size_t> bytes;
  for (const ir::TensorType* t : init.out_types) bytes.push_back(backend::plain_bytes(*t));
  return KernelPtr(new VecKernel(name, std::move(bytes), std::move(fn)));
}

// A kernel whose one output is its input's bytes (is_view()): a memcpy of `bytes` when it runs.
inline Expected<KernelPtr> make_byte_copy(const std::string& name, size_t bytes) {
  return KernelPtr(new VecKernel(
      name, {bytes},
      [bytes](KernelRun& run) {
        if (bytes && run.outputs[0].data != run.inputs[0].data)
          std::memcpy(run.outputs[0].data, run.inputs[0].data, bytes);
        return Status::ok();
      },
      /*view=*/true));
}

// A hot element loop compiled for AVX-512 (x86-64-v4), AVX2 (v3) and the baseline, the best the
// CPU runs picked when the library loads: the project builds for Debian's baseline x86-64, where
// the compiler's vectors are 4 floats wide. Put it on a plain function over a range (an OpenMP
// region is outlined into a function of its own, without the clone's target) and split the range
// with for_chunks.
#define TESSERA_VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
// GCC vectorises at -O2 only what its very cheap cost model allows (a reduction of compares over a
// block stayed scalar: 147 us for 0.8 MB, 12 us vectorised): loops that need more ask for it.
// Clang vectorises them at -O2 and has no such attribute.
#if defined(__clang__)
#define TESSERA_VECTORISE
#else
#define TESSERA_VECTORISE __attribute__((optimize("tree-vectorize")))
#endif

// e^x in float for vectorised loops (Cephes' expf: range reduction by ln 2, a degree-5 polynomial;
// within 2 ulp over the range, 0 below -87.3, +inf above 88.7, NaN for NaN). Inlined into the
// calling clone.
__attribute__((always_inline)) inline float vexp(float x) {
  if (x > 88.72283f) return __builtin_inff();
  if (!(x >= -87.33654f)) return x != x ? x : 0.f;  // NaN stays NaN (and never reaches the int conversion)
  float fx = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  const float r = x - fx * 0.693359375f + fx * 2.12194440e-4f;
  const float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  // 2^fx through the exponent bits (fx in [-126, 128]: the clamps above keep it there).
  int32_t bits = (static_cast<int32_t>(fx) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// f(begin, end) over [0, n): on the calling thread when n <= serial_max, else over the OpenMP team,
// one contiguous chunk per thread in multiples of 16 elements (whole cache lines of floats).
template <class F>
void for_chunks(int64_t n, int64_t serial_max, F&& f) {
  if (n <= serial_max) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16;
    const int64_t lo = std::min(n, t * per), hi = std::min(n, lo + per);
    if (lo < hi) f(lo, hi);
  }
}

// memcpy split over the calling thread's OpenMP team past 1 MB (a residual copied into a
// convolution's dst by one thread while the other spun was 4.5% of ResNet-50 at batch 32).
inline void parallel_copy(void* dst, const void* src, size_t bytes) {
  for_chunks(static_cast<int64_t>(bytes), int64_t{1} << 20, [&](int64_t lo, int64_t hi) {
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, static_cast<size_t>(hi - lo));
  });
}

// Declines whatever the layouts, for a kernel that only takes a special case of an op that another
// kernel (oneDNN's) also takes: the node goes to that one, which honours the layouts (decline()
// reports layouts a kernel cannot honour as an error, for kernels that are the op's only one).
inline Expected<KernelPtr> pass_to_next(const std::string& why) {
  backend::set_decline_reason(why);
  return KernelPtr();
}

constexpr int64_t kParallelUpdate = 1 << 15;  // elements up to which an update stays on one thread

// Inputs a and b present, f32, of the same static shape.
inline bool same_f32_shape(const KernelInit& init, size_t a, size_t b) {
  return init.in_types[a] && init.in_types[b] && init.in_types[a]->dtype == DType::kF32 &&
         init.in_types[b]->dtype == DType::kF32 && init.in_types[a]->static_shape() == init.in_types[b]->static_shape();
}

// Plain layouts, static types on every present input and output.
inline bool plain_static(const KernelInit& init) {
  if (!all_plain(init)) return false;
  for (const ir::TensorType* t : init.in_types)
    if (t && !t->is_static()) return false;
  for (const ir::TensorType* t : init.out_types)
    if (!t || !t->is_static()) return false;
  return true;
}

}  // namespace tessera::cpu
