// CUDA backend check (engine/cuda/device.cu): the add kernel against the reference Add kernel on
// odd sizes. Exits 77 (ctest: skipped) when no device is usable, naming the reason.
#include <cstdio>
#include <random>

#include "engine/cuda/device.h"
#include "engine/runtime/interpreter.h"

int main() {
  using namespace tessera;
  std::string why;
  if (cuda::device_count(&why) == 0) {
    std::printf("no CUDA device (%s) - skipping GPU work\n", why.c_str());
    return 77;
  }
  std::printf("device 0: %s\n", cuda::device_description(0).c_str());
  const ops::OpRegistry reg = ops::make_default_registry();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-10, 10);
  for (int64_t n : {0, 1, 7, 1000, 1 << 20}) {
    Tensor a(DType::kF32, {n}), b(DType::kF32, {n});
    for (int64_t i = 0; i < n; ++i) {
      a.data<float>()[i] = u(rng);
      b.data<float>()[i] = u(rng);
    }
    auto gpu = cuda::add_f32(a, b);
    auto ref = runtime::run_single_op(reg, "Add", {a, b});
    if (!gpu || !ref) {
      std::printf("FAIL n=%lld: %s\n", static_cast<long long>(n), (!gpu ? gpu.error() : ref.error()).to_string().c_str());
      return 1;
    }
    if (!gpu->equals((*ref)[0])) {
      std::printf("FAIL n=%lld: GPU and reference Add differ\n", static_cast<long long>(n));
      return 1;
    }
  }
  std::printf("CUDA add matches the reference kernel\n");
  return 0;
}
