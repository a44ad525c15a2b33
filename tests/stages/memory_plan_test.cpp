// Tests of the memory planner: reuse along chains, no reuse across concurrent branches, the lower
// bound, and the invariant that two buffers overlapping in memory never live at the same time.
#include "engine/stages/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace tessera::stages {
namespace {

bool overlap(size_t a, size_t an, size_t b, size_t bn) { return a < b + bn && b < a + an; }

// Checks the plan's contract directly: overlapping buffers must be ordered by the DAG.
void expect_valid(const std::vector<BufferRequest>& reqs, const StepDag& dag, const MemoryPlan& plan) {
  for (size_t i = 0; i < reqs.size(); ++i)
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      if (!overlap(plan.offsets[i], reqs[i].bytes, plan.offsets[j], reqs[j].bytes)) continue;
      auto dead = [&](const BufferRequest& x, const BufferRequest& y) {
        if (x.pinned || !dag.before(x.def_step, y.def_step)) return false;
        for (int u : x.use_steps)
          if (!dag.before(u, y.def_step)) return false;
        return true;
      };
      EXPECT_TRUE(dead(reqs[i], reqs[j]) || dead(reqs[j], reqs[i])) << reqs[i].label << " overlaps " << reqs[j].label;
    }
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kBufferAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + reqs[i].bytes, plan.arena_bytes);
  }
}

TEST(MemoryPlan, ChainReusesBuffers) {
  // 0 -> 1 -> 2 -> 3, each step writes 1024 bytes read by the next.
  StepDag dag(4);
  for (int s = 1; s < 4; ++s) dag.add_edge(s - 1, s);
  dag.finish();
  std::vector<BufferRequest> reqs;
  for (int s = 0; s < 4; ++s) reqs.push_back({1024, s, s < 3 ? std::vector<int>{s + 1} : std::vector<int>{}, s == 3, "v" + std::to_string(s)});
  auto plan = plan_memory(reqs, dag);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->arena_bytes, 2048u);  // ping-pong
  EXPECT_EQ(plan->lower_bound_bytes, 2048u);
  EXPECT_EQ(plan->total_bytes, 4096u);
  expect_valid(reqs, dag, *plan);
}

TEST(MemoryPlan, ConcurrentBranchesDoNotShare) {
  // 0 -> {1, 2} -> 3: the outputs of 1 and 2 may be alive together in a parallel schedule even
  // though the sequential order 0,1,2,3 would let a naive planner reuse 1's input for 2's output.
  StepDag dag(4);
  dag.add_edge(0, 1);
  dag.add_edge(0, 2);
  dag.add_edge(1, 3);
  dag.add_edge(2, 3);
  dag.finish();
  EXPECT_TRUE(dag.before(0, 3));
  EXPECT_FALSE(dag.before(1, 2));
  EXPECT_FALSE(dag.before(2, 1));
  std::vector<BufferRequest> reqs = {{256, 0, {1, 2}, false, "a"}, {512, 1, {3}, false, "b"},
                                     {512, 2, {3}, false, "c"},   {128, 3, {}, true, "d"}};
  auto plan = plan_memory(reqs, dag);
  ASSERT_TRUE(plan.has_value());
  EXPECT_FALSE(overlap(plan->offsets[1], 512, plan->offsets[2], 512));
  expect_valid(reqs, dag, *plan);
  // d may reuse a's bytes (a is dead once 1 and 2 are done, and both precede 3).
  EXPECT_LE(plan->arena_bytes, 512u + 512u + 256u);
}

TEST(MemoryPlan, RandomDagsStayValidAndNearTheBound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    int n = 5 + static_cast<int>(rng() % 40);
    StepDag dag(n);
    std::vector<std::vector<int>> users(static_cast<size_t>(n));
    for (int s = 1; s < n; ++s) {
      int k = 1 + static_cast<int>(rng() % 2);
      for (int e = 0; e < k; ++e) {
        int p = static_cast<int>(rng() % static_cast<unsigned>(s));
        dag.add_edge(p, s);
        users[static_cast<size_t>(p)].push_back(s);
      }
    }
    dag.finish();
    std::vector<BufferRequest> reqs;
    for (int s = 0; s < n; ++s)
      reqs.push_back({64 * (1 + rng() % 50), s, users[static_cast<size_t>(s)], users[static_cast<size_t>(s)].empty(), "v" + std::to_string(s)});
    auto plan = plan_memory(reqs, dag);
    ASSERT_TRUE(plan.has_value());
    expect_valid(reqs, dag, *plan);
    EXPECT_GE(plan->arena_bytes, plan->lower_bound_bytes);
    EXPECT_LE(plan->arena_bytes, plan->total_bytes);
  }
}

// The sequential order without ancestor sets answers as the chain DAG with them does, and plans the
// same offsets.
TEST(MemoryPlan, SequentialOrderMatchesTheChainDag) {
  const int n = 70;  // more than one 64-bit word of ancestors
  StepDag chain(n);
  for (int s = 1; s < n; ++s) chain.add_edge(s - 1, s);
  chain.finish();
  const StepDag seq = StepDag::sequential(n);
  ASSERT_EQ(seq.size(), n);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) ASSERT_EQ(seq.before(a, b), chain.before(a, b)) << a << " " << b;
  std::vector<BufferRequest> reqs;
  for (int s = 0; s + 2 < n; ++s) reqs.push_back({static_cast<size_t>(64 * (1 + s % 5)), s, {s + 1, s + 2}, s % 11 == 0, "v"});
  auto a = plan_memory(reqs, chain), b = plan_memory(reqs, seq);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->offsets, b->offsets);
  EXPECT_EQ(a->arena_bytes, b->arena_bytes);
}

TEST(MemoryPlan, RequestWithoutStepIsAnError) {
  StepDag dag(1);
  dag.finish();
  auto plan = plan_memory({{64, 3, {}, false, "ghost"}}, dag);
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message.find("ghost"), std::string::npos);
}

}  // namespace
}  // namespace tessera::stages
