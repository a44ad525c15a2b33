// The synthetic trace generator (synthetic.h).
#include "insight/timeline/synthetic.h"

#include <random>
#include <string>

namespace tessera::insight::timeline {

TimelineModel make_synthetic_model(int64_t spans, int threads, uint64_t seed) {
  static const char* const kOps[] = {"Conv",      "MatMul",  "Relu",    "Add",
                                     "BatchNorm", "Softmax", "MaxPool", "Copy"};
  static const int64_t kMeanNs[] = {120000, 80000, 4000, 3000, 20000, 9000, 15000, 6000};
  constexpr int kNodes = 200, kKernelsPerStep = 100;
  threads = std::max(threads, 1);
  std::mt19937_64 rng(seed);
  std::vector<std::string> names;
  for (int n = 0; n < kNodes; ++n)
    names.push_back(std::string(kOps[n % 8]) + "_" + std::to_string(n));
  TimelineBuilder b;
  b.reserve(static_cast<size_t>(spans));
  const int64_t per_thread = spans / threads;
  for (int th = 0; th < threads; ++th) {
    int64_t t = 1'000'000 + th * 1000, made = 0;
    const std::string device = th < threads / 2 || threads == 1 ? "cpu" : "cuda:0";
    while (made < per_thread) {
      const int64_t step_start = t;
      const int kernels =
          static_cast<int>(std::min<int64_t>(kKernelsPerStep, per_thread - made - 1));
      t += 2000;
      for (int k = 0; k < kernels; ++k) {
        const int node = static_cast<int>(rng() % kNodes);
        const int op = node % 8;
        const int64_t d =
            std::max<int64_t>(2000, static_cast<int64_t>(std::exponential_distribution<double>(
                                        1.0 / static_cast<double>(kMeanNs[op]))(rng)));
        b.add_span(observe::Span::Kind::kKernel, names[static_cast<size_t>(node)], kOps[op], device,
                   "ref", node, th, t, t + d, d * 4, static_cast<double>(d) * 50);
        t += d + 500 + static_cast<int64_t>(rng() % 4000);
      }
      t += 2000;
      b.add_span(observe::Span::Kind::kStep, "step", "", device, "", -1, th, step_start, t);
      if (th == 0) {
        b.add_memory({device, "dynamic", step_start, 64 << 20});
        b.add_memory({device, "dynamic", t - 1000, -(64 << 20)});
      }
      made += kernels + 1;
      t += 20000;
    }
  }
  return std::move(b).build();
}

}  // namespace tessera::insight::timeline
