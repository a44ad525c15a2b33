// The memory plan: an offset for every planned buffer in one arena per device, with buffers
// reused once their values are dead.
//
// Lifetimes are intervals in the sequential step order (the compile stage's topological order):
// a buffer is alive from the step that writes it to the last step that reads it (to the end when
// pinned). Two buffers may share bytes only if their intervals are disjoint. Placement is greedy by
// size (largest first, the best-fitting gap among the buffers it conflicts with: TFLite's "greedy
// by size" offsets); conflicts are found with a segment tree over steps, so planning costs
// O((n + k) log n) for n buffers and k conflicting pairs instead of n^2.
//
// A parallel schedule may run steps out of the sequential order, so the plan alone is not enough:
// memory_order_edges() lists, for every byte shared by two buffers, "every reader (or the writer,
// when nobody reads it) of the earlier buffer before the writer of the later one", which the
// compile stage adds to the execution DAG. It sweeps buffers in step order over a map from byte
// ranges to their latest occupant, so each pair sharing bytes is ordered through the chain of
// occupants between them without looking at every pair.
//
// The report compares the arena's size with the lifetime lower bound: the largest total of
// buffers simultaneously alive in the sequential order.
//
// Usage:
//   std::vector<BufferRequest> reqs = {{.bytes = 4096, .def_step = 0, .use_steps = {1}}, ...};
//   TRY(MemoryPlan plan, plan_memory(reqs, num_steps));
//   for (auto [from, to] : memory_order_edges(reqs, plan)) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace tessera::stages {

struct BufferRequest {
  size_t bytes = 0;
  int def_step = 0;             // the step that writes it
  std::vector<int> use_steps;   // the steps that read it (may be empty)
  bool pinned = false;          // alive until the end (graph outputs)
  std::string label;            // value name, for printing

  // The last step of the buffer's lifetime in the sequential order (num_steps - 1 when pinned).
  int last_step(int num_steps) const;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per request, 64-byte aligned
  size_t arena_bytes = 0;       // the arena's size: the plan's peak
  size_t lower_bound_bytes = 0; // lifetime lower bound in the sequential order
  size_t total_bytes = 0;       // sum of all requests (what no reuse would need)
  int num_steps = 0;
  std::string print(const std::vector<BufferRequest>& requests) const;
};

inline constexpr size_t kBufferAlignment = 64;

Expected<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, int num_steps);

// Step edges (from, to) that keep every pair of buffers sharing bytes apart in time in any
// schedule that also respects the data edges (each buffer's writer before its readers). Edges
// from a step to itself are left out; an edge may repeat a data edge (the caller drops those).
std::vector<std::pair<int, int>> memory_order_edges(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace tessera::stages
