// The memory plan: an offset for every planned buffer in one arena per device, with buffers
// reused once their values are dead.
//
// Rule (the allocator's whole contract): two buffers may share bytes only if one of them is
// completely dead before the other is written in every schedule the given DAG allows, i.e. its
// producer and all its consumers are ancestors of the other's producer. The compile stage passes
// the sequential step order (most reuse) and then adds a "memory edge" to the execution DAG for
// every pair that shares bytes, so the plan stays valid for any thread count. Placement is greedy by size (largest first,
// lowest offset that conflicts with no placed buffer; TFLite's "greedy by size" offsets).
// The report compares the arena's size with the lifetime lower bound: the largest total of
// buffers simultaneously alive in the sequential (topological) order.
//
// Usage:
//   StepDag dag(num_steps);  dag.add_edge(0, 1); ...
//   std::vector<BufferRequest> reqs = {{.bytes = 4096, .def_step = 0, .last_step = 1}, ...};
//   TRY(MemoryPlan plan, plan_memory(reqs, dag));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tessera::stages {

// Dependencies between execution steps (edges go from producer to consumer, steps are numbered in
// a topological order). Answers "does a finish before b starts in every schedule?".
class StepDag {
 public:
  explicit StepDag(int num_steps = 0);
  // The total order 0 -> 1 -> ... -> n-1 (the sequential schedule): before(a, b) is a < b, with no
  // ancestor sets (they cost n^2/8 bytes: 1.25 GB at 100,000 steps).
  static StepDag sequential(int num_steps);
  void add_edge(int from, int to);
  int size() const { return static_cast<int>(preds_.size()); }
  const std::vector<int>& preds(int s) const { return preds_[static_cast<size_t>(s)]; }
  // Builds the ancestor sets (call once after the last edge; n^2/8 bytes).
  void finish();
  // True when a is a (strict) ancestor of b.
  bool before(int a, int b) const;

 private:
  std::vector<std::vector<int>> preds_;
  std::vector<std::vector<uint64_t>> ancestors_;
  bool total_order_ = false;
};

struct BufferRequest {
  size_t bytes = 0;
  int def_step = 0;             // the step that writes it
  std::vector<int> use_steps;   // the steps that read it (may be empty)
  bool pinned = false;          // alive until the end (graph outputs)
  std::string label;            // value name, for printing
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per request, 64-byte aligned
  size_t arena_bytes = 0;       // the arena's size: the plan's peak
  size_t lower_bound_bytes = 0; // lifetime lower bound in the sequential order
  size_t total_bytes = 0;       // sum of all requests (what no reuse would need)
  std::string print(const std::vector<BufferRequest>& requests) const;
};

inline constexpr size_t kBufferAlignment = 64;

Expected<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, const StepDag& dag);

}  // namespace tessera::stages
