// Tests of the memory planner: reuse along chains, no sharing between buffers alive together, the
// lower bound, and the memory edges that keep buffers sharing bytes apart in any parallel schedule.
#include "engine/stages/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace tessera::stages {
namespace {

bool overlap(size_t a, size_t an, size_t b, size_t bn) { return a < b + bn && b < a + an; }

// The planner's contract: buffers sharing bytes have disjoint lifetimes in the step order.
void expect_valid(const std::vector<BufferRequest>& reqs, int steps, const MemoryPlan& plan) {
  for (size_t i = 0; i < reqs.size(); ++i)
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      if (!overlap(plan.offsets[i], reqs[i].bytes, plan.offsets[j], reqs[j].bytes)) continue;
      bool disjoint = reqs[i].last_step(steps) < reqs[j].def_step || reqs[j].last_step(steps) < reqs[i].def_step;
      EXPECT_TRUE(disjoint) << reqs[i].label << " overlaps " << reqs[j].label;
    }
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kBufferAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + reqs[i].bytes, plan.arena_bytes);
  }
}

TEST(MemoryPlan, ChainReusesBuffers) {
  // 0 -> 1 -> 2 -> 3, each step writes 1024 bytes read by the next.
  std::vector<BufferRequest> reqs;
  for (int s = 0; s < 4; ++s) reqs.push_back({1024, s, s < 3 ? std::vector<int>{s + 1} : std::vector<int>{}, s == 3, "v" + std::to_string(s)});
  auto plan = plan_memory(reqs, 4);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->arena_bytes, 2048u);  // ping-pong
  EXPECT_EQ(plan->lower_bound_bytes, 2048u);
  EXPECT_EQ(plan->total_bytes, 4096u);
  expect_valid(reqs, 4, *plan);
  // Every pair sharing bytes is already ordered by a data edge (v1's reader is v2's writer...).
  for (auto [from, to] : memory_order_edges(reqs, *plan)) EXPECT_EQ(from + 1, to);
}

TEST(MemoryPlan, BuffersAliveTogetherDoNotShare) {
  // Step 0 writes a, read by 1 and 2; b and c are alive together at step 2..3.
  std::vector<BufferRequest> reqs = {{256, 0, {1, 2}, false, "a"}, {512, 1, {3}, false, "b"},
                                     {512, 2, {3}, false, "c"},   {128, 3, {}, true, "d"}};
  auto plan = plan_memory(reqs, 4);
  ASSERT_TRUE(plan.has_value());
  EXPECT_FALSE(overlap(plan->offsets[1], 512, plan->offsets[2], 512));
  expect_valid(reqs, 4, *plan);
  EXPECT_LE(plan->arena_bytes, 512u + 512u + 256u);
}

// Two independent branches: 0 -> 1 and 2 -> 3. The sequential order lets 2's output reuse 0's
// bytes; a parallel schedule could run 2 before 1 reads 0's output unless 1 -> 2 is added.
TEST(MemoryPlan, SharedBytesAcrossBranchesGetAnEdge) {
  std::vector<BufferRequest> reqs = {{1024, 0, {1}, false, "a"}, {64, 1, {}, true, "b"},
                                     {1024, 2, {3}, false, "c"}, {64, 3, {}, true, "d"}};
  auto plan = plan_memory(reqs, 4);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->offsets[0], plan->offsets[2]);
  auto edges = memory_order_edges(reqs, *plan);
  EXPECT_NE(std::find(edges.begin(), edges.end(), std::make_pair(1, 2)), edges.end());
}

// Random DAGs: the plan is valid in the step order, and with the memory edges added every pair
// sharing bytes is ordered in every schedule (all readers of the earlier buffer, and its writer,
// reach the later buffer's writer through data and memory edges).
TEST(MemoryPlan, RandomDagsWithMemoryEdgesAreSafeInParallel) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    int n = 5 + static_cast<int>(rng() % 60);
    std::vector<std::vector<int>> users(static_cast<size_t>(n)), succs(static_cast<size_t>(n));
    for (int s = 1; s < n; ++s) {
      int k = 1 + static_cast<int>(rng() % 2);
      for (int e = 0; e < k; ++e) {
        int p = static_cast<int>(rng() % static_cast<unsigned>(s));
        users[static_cast<size_t>(p)].push_back(s);
        succs[static_cast<size_t>(p)].push_back(s);
      }
    }
    std::vector<BufferRequest> reqs;
    for (int s = 0; s < n; ++s) {
      bool pinned = users[static_cast<size_t>(s)].empty() && rng() % 2;
      reqs.push_back({64 * (1 + rng() % 50), s, users[static_cast<size_t>(s)], pinned, "v" + std::to_string(s)});
      if (rng() % 4 == 0) reqs.push_back({64 * (1 + rng() % 20), s, {}, false, "scratch" + std::to_string(s)});
    }
    auto plan = plan_memory(reqs, n);
    ASSERT_TRUE(plan.has_value());
    expect_valid(reqs, n, *plan);
    EXPECT_GE(plan->arena_bytes, plan->lower_bound_bytes);
    EXPECT_LE(plan->arena_bytes, plan->total_bytes);
    for (auto [from, to] : memory_order_edges(reqs, *plan)) {
      ASSERT_LT(from, to);
      succs[static_cast<size_t>(from)].push_back(to);
    }
    // reach[a][b]: a path a -> b (steps are numbered topologically, edges go forward).
    std::vector<std::vector<bool>> reach(static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(n), false));
    for (int a = n - 1; a >= 0; --a)
      for (int b : succs[static_cast<size_t>(a)]) {
        reach[a][b] = true;
        for (int c = 0; c < n; ++c)
          if (reach[b][c]) reach[a][c] = true;
      }
    for (size_t i = 0; i < reqs.size(); ++i)
      for (size_t j = 0; j < reqs.size(); ++j) {
        const BufferRequest &x = reqs[i], &y = reqs[j];
        if (i == j || !overlap(plan->offsets[i], x.bytes, plan->offsets[j], y.bytes)) continue;
        if (x.last_step(n) >= y.def_step) continue;  // y is the earlier one: checked as (j, i)
        if (x.def_step != y.def_step) EXPECT_TRUE(reach[x.def_step][y.def_step]) << x.label << " / " << y.label;
        for (int u : x.use_steps)
          if (u != y.def_step) EXPECT_TRUE(reach[u][y.def_step]) << "reader " << u << " of " << x.label << " / " << y.label;
      }
  }
}

// A long chain plans with reuse and no memory edge beyond the data edges, at a size where a
// pairwise planner would take minutes.
TEST(MemoryPlan, LongChainIsPlannedLinearly) {
  const int n = 200000;
  std::vector<BufferRequest> reqs;
  for (int s = 0; s < n; ++s) reqs.push_back({4096, s, s + 1 < n ? std::vector<int>{s + 1} : std::vector<int>{}, s + 1 == n, ""});
  auto plan = plan_memory(reqs, n);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->arena_bytes, 2u * 4096u);
  for (auto [from, to] : memory_order_edges(reqs, *plan)) ASSERT_EQ(from + 1, to);
}

TEST(MemoryPlan, RequestWithoutStepIsAnError) {
  auto plan = plan_memory({{64, 3, {}, false, "ghost"}}, 1);
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message.find("ghost"), std::string::npos);
  auto early = plan_memory({{64, 1, {0}, false, "backwards"}}, 2);
  ASSERT_FALSE(early.has_value());
  EXPECT_NE(early.error().message.find("backwards"), std::string::npos);
}

}  // namespace
}  // namespace tessera::stages
