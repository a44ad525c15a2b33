// Tests for engine/data/rng.h against an independent Python implementation of the same algorithm.
#include "engine/data/rng.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::data {
namespace {

TEST(Rng, SplitMix64ReferenceValues) {
  // The published SplitMix64 outputs for state 0 (also what Vigna's splitmix64.c prints).
  Rng r(0);
  EXPECT_EQ(r.next_u64(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(r.next_u64(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(r.next_u64(), 0x06c45d188009454full);
}

TEST(Rng, DerivedStreamsMatchPython) {
  // From a 20-line Python transcription of rng.h (derive, uniform_u64).
  Rng r = Rng::for_example(3, 2, 5);
  EXPECT_EQ(Rng::for_example(3, 2, 5).next_u64(), 0xd46cc11f20ff49cbull);
  std::vector<int64_t> draws;
  for (int i = 0; i < 4; ++i) draws.push_back(r.uniform_int(5));
  EXPECT_EQ(draws, (std::vector<int64_t>{2, 4, 4, 1}));
  EXPECT_NE(Rng::for_example(3, 2, 6).next_u64(), Rng::for_example(3, 2, 5).next_u64());
  EXPECT_NE(Rng::for_example(3, 3, 5).next_u64(), Rng::for_example(3, 2, 5).next_u64());
  EXPECT_NE(Rng::for_shuffle(3, 2).next_u64(), Rng::for_example(3, 2, 0).next_u64());
}

TEST(Rng, UniformRangesAndBernoulli) {
  Rng r(42);
  std::vector<int> hist(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const int64_t v = r.uniform_int(7);
    ASSERT_TRUE(v >= 0 && v < 7);
    ++hist[static_cast<size_t>(v)];
  }
  for (int h : hist) EXPECT_NEAR(h, 1000, 150);
  int ones = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = r.uniform01();
    ASSERT_TRUE(u >= 0.0 && u < 1.0);
    ones += r.bernoulli(0.25) ? 1 : 0;
  }
  EXPECT_NEAR(ones, 2500, 200);
  EXPECT_EQ(r.uniform_int(1), 0);
  EXPECT_FALSE(r.bernoulli(0.0));
  EXPECT_TRUE(r.bernoulli(1.0));
}

}  // namespace
}  // namespace tessera::data
