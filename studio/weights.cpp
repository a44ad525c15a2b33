// Initial weights: zeros or PyTorch's default uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
#include "studio/weights.h"

#include <cmath>
#include <random>

namespace tessera::studio {

Expected<Tensor> make_weight(const Shape& shape, WeightInit init, int64_t fan_in, uint64_t seed) {
  TRY(Tensor t, Tensor::create(DType::kF32, shape));
  if (init == WeightInit::kZeros) return t;
  if (fan_in < 1) return make_error("fan_in must be at least 1, got " + std::to_string(fan_in));
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  std::mt19937_64 rng(seed);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    // (rng() >> 11) * 2^-53 is uniform in [0, 1); std::uniform_real_distribution is not the same
    // on every standard library.
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    p[i] = static_cast<float>((2.0 * u - 1.0) * bound);
  }
  return t;
}

int64_t fan_in_of(const Shape& weight_shape) {
  if (weight_shape.empty()) return 1;
  if (weight_shape.size() == 1) return weight_shape[0];
  int64_t fan_in = weight_shape[1];
  for (size_t i = 2; i < weight_shape.size(); ++i) fan_in *= weight_shape[i];
  return fan_in;
}

}  // namespace tessera::studio
