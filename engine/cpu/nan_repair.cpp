// See nan_repair.h.
#include "engine/cpu/nan_repair.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

// The exponent bits all ones: NaN (mantissa non-zero) or an infinity. Integer compares vectorise.
inline uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b & 0x7fffffffu;
}

TESSERA_VEC_CLONES TESSERA_VECTORISE bool any_above(const float* x, size_t n, uint32_t limit) {
  constexpr size_t kBlock = 4096;  // stop soon after the first hit, but keep the inner loop plain
  for (size_t lo = 0; lo < n; lo += kBlock) {
    const size_t hi = std::min(n, lo + kBlock);
    uint32_t hit = 0;
    for (size_t i = lo; i < hi; ++i) hit |= static_cast<uint32_t>(bits_of(x[i]) >= limit);
    if (hit) return true;
  }
  return false;
}

TESSERA_VEC_CLONES TESSERA_VECTORISE void apply_range(
    ActFn fn, const float* x, float* y, int64_t lo, int64_t hi, float a, float b) {
  switch (fn) {
    case ActFn::kRelu:
      for (int64_t i = lo; i < hi; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];
      break;
    case ActFn::kLeakyRelu:
      for (int64_t i = lo; i < hi; ++i) y[i] = x[i] < 0.f ? a * x[i] : x[i];
      break;
    case ActFn::kClip:
      for (int64_t i = lo; i < hi; ++i) {
        const float v = x[i] < a ? a : x[i];
        y[i] = v > b ? b : v;
      }
      break;
    case ActFn::kExp:
      for (int64_t i = lo; i < hi; ++i) y[i] = vexp(x[i]);
      break;
    case ActFn::kLog:  // libm's: oneDNN's log is 1.4e-6 off at 1 and 4% off on denormals
      for (int64_t i = lo; i < hi; ++i) y[i] = std::log(x[i]);
      break;
    case ActFn::kHardSigmoid:
      for (int64_t i = lo; i < hi; ++i) {
        const float v = a * x[i] + b;
        y[i] = v < 0.f ? 0.f : v > 1.f ? 1.f : v;
      }
      break;
  }
}

}  // namespace

void apply_activation(const ExactActivation& act, const float* x, float* y, int64_t n) {
  for_chunks(n, int64_t{1} << 15, [&](int64_t lo, int64_t hi) { apply_range(act.fn, x, y, lo, hi, act.a, act.b); });
}

namespace {

// Split over the kernel's threads past 512 KB: one thread scanning while the other waited in the
// next primitive's barrier was 5% of ResNet-50's bf16 run at batch 32 (plus as much spin).
bool any_above_parallel(const float* x, size_t n, uint32_t limit) {
  if (n <= (size_t{1} << 17)) return any_above(x, n, limit);
  std::atomic<bool> hit{false};
  for_chunks(static_cast<int64_t>(n), int64_t{1} << 17, [&](int64_t lo, int64_t hi) {
    if (any_above(x + lo, static_cast<size_t>(hi - lo), limit)) hit.store(true, std::memory_order_relaxed);
  });
  return hit.load();
}

}  // namespace

bool has_nan(const float* x, size_t n) { return any_above_parallel(x, n, 0x7f800001u); }
bool has_non_finite(const float* x, size_t n) { return any_above_parallel(x, n, 0x7f800000u); }
bool has_non_finite(const Tensor& t) {
  return has_non_finite(static_cast<const float*>(t.raw_data()), static_cast<size_t>(t.numel()));
}

void nan_indicator(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = x[i] != x[i] ? 1.f : 0.f;
}

void apply_nan_mark(const float* mark, float* y, size_t n) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < n; ++i)
    if (mark[i] != 0.f) y[i] = nan;
}

void repair_softmax_rows(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool log) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * len * inner + in;
      bool finite = true;
      for (int64_t j = 0; j < len && finite; ++j) finite = std::isfinite(x[base + j * inner]);
      if (finite) continue;
      // The reference kernel's arithmetic (engine/ops/nn.cpp softmax_kernel).
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, x[base + j * inner]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(x[base + j * inner] - mx));
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < len; ++j) {
        const double z = static_cast<double>(x[base + j * inner] - mx);
        y[base + j * inner] = static_cast<float>(log ? z - log_sum : std::exp(z) / sum);
      }
    }
}

}  // namespace tessera::cpu
