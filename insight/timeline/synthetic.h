// A synthetic trace for benchmarks and the viewer's --bench-spans: `threads` lanes of training
// steps, each a "step" span enclosing kernel spans of realistic durations (2 us - 0.5 ms, a few
// ops, 200 nodes), plus memory allocations and frees per step. Deterministic for a seed.
//
//   TimelineModel m = make_synthetic_model(10'000'000, 8, 42);
#pragma once

#include <cstdint>

#include "insight/timeline/model.h"

namespace tessera::insight::timeline {

// About `spans` spans in total (steps included) over `threads` threads.
TimelineModel make_synthetic_model(int64_t spans, int threads, uint64_t seed);

}  // namespace tessera::insight::timeline
