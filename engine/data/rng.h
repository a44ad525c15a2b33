// A small portable random generator (SplitMix64) for shuffling and augmentation.
//
// Usage:
//   data::Rng rng = data::Rng::for_example(seed, epoch, index);   // one per example
//   if (rng.bernoulli(0.5)) flip(...);
//   int64_t dy = rng.uniform_int(9);                               // 0..8
//
// Every value is defined by integer arithmetic written out here (no std::*_distribution, whose
// output differs between standard libraries), so a seed gives the same stream on every machine,
// compiler and worker count. The generator is SplitMix64 (Steele, Lea, Flood 2014): a 64-bit
// counter advanced by the golden-ratio increment and passed through a bijective mixer; its output
// passes BigCrush and is ample for data augmentation and shuffling. Streams for different
// (seed, epoch, index, purpose) start from a mixed combination of all four, so they do not overlap
// in any way that matters here.
#pragma once

#include <cstdint>

namespace tessera::data {

class Rng {
 public:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  // Purposes, so that the shuffle stream and the per-example streams differ.
  static constexpr uint64_t kShuffleStream = 0x53485546464c45ull;  // "SHUFFLE"
  static constexpr uint64_t kExampleStream = 0x4558414d504c45ull;  // "EXAMPLE"

  explicit Rng(uint64_t state) : state_(state) {}

  // The SplitMix64 finaliser: a bijection on 64-bit integers with good avalanche.
  static constexpr uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // A generator seeded from (seed, purpose, epoch, index), each step mixed in turn.
  static Rng derive(uint64_t seed, uint64_t purpose, uint64_t epoch, uint64_t index) {
    uint64_t s = mix(seed + kGolden);
    s = mix(s ^ (purpose + 2 * kGolden));
    s = mix(s ^ (epoch + 3 * kGolden));
    s = mix(s ^ (index + 4 * kGolden));
    return Rng(s);
  }
  static Rng for_example(uint64_t seed, int64_t epoch, int64_t index) {
    return derive(seed, kExampleStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index));
  }
  static Rng for_shuffle(uint64_t seed, int64_t epoch) {
    return derive(seed, kShuffleStream, static_cast<uint64_t>(epoch), 0);
  }

  uint64_t next_u64() {
    state_ += kGolden;
    return mix(state_);
  }
  // Uniform in [0, n) for n >= 1, unbiased (rejection of the top partial range).
  uint64_t uniform_u64(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // a multiple of n
    uint64_t r = next_u64();
    while (r >= limit) r = next_u64();
    return r % n;
  }
  int64_t uniform_int(int64_t n) {
    return static_cast<int64_t>(uniform_u64(static_cast<uint64_t>(n)));
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // True with probability p (p <= 0: never, p >= 1: always; one draw either way).
  bool bernoulli(double p) { return uniform01() < p; }

 private:
  uint64_t state_;
};

}  // namespace tessera::data
