// Greedy-by-size offset planning over lifetimes defined by the step DAG (see memory_plan.h).
#include "engine/stages/memory_plan.h"

#include <algorithm>
#include <sstream>

namespace tessera::stages {

StepDag::StepDag(int num_steps) : preds_(static_cast<size_t>(num_steps)) {}

StepDag StepDag::sequential(int num_steps) {
  StepDag dag(num_steps);
  for (int s = 1; s < num_steps; ++s) dag.add_edge(s - 1, s);
  dag.total_order_ = true;
  return dag;
}

void StepDag::add_edge(int from, int to) { preds_[static_cast<size_t>(to)].push_back(from); }

void StepDag::finish() {
  if (total_order_) return;
  size_t n = preds_.size(), words = (n + 63) / 64;
  ancestors_.assign(n, std::vector<uint64_t>(words, 0));
  for (size_t s = 0; s < n; ++s)
    for (int p : preds_[s]) {
      auto& a = ancestors_[s];
      const auto& b = ancestors_[static_cast<size_t>(p)];
      for (size_t w = 0; w < words; ++w) a[w] |= b[w];
      a[static_cast<size_t>(p) / 64] |= uint64_t{1} << (p % 64);
    }
}

bool StepDag::before(int a, int b) const {
  if (a == b) return false;
  if (total_order_) return a < b;
  return (ancestors_[static_cast<size_t>(b)][static_cast<size_t>(a) / 64] >> (a % 64)) & 1;
}

namespace {

size_t align_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

// x is dead before y is written in every schedule.
bool dead_before(const BufferRequest& x, const BufferRequest& y, const StepDag& dag) {
  if (x.pinned) return false;
  if (!dag.before(x.def_step, y.def_step)) return false;
  for (int u : x.use_steps)
    if (!dag.before(u, y.def_step)) return false;
  return true;
}

int last_step(const BufferRequest& r, int end) {
  if (r.pinned) return end;
  int last = r.def_step;
  for (int u : r.use_steps) last = std::max(last, u);
  return last;
}

}  // namespace

Expected<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, const StepDag& dag) {
  MemoryPlan plan;
  size_t n = requests.size();
  plan.offsets.assign(n, 0);
  for (const auto& r : requests) {
    if (r.def_step < 0 || r.def_step >= dag.size()) return make_error("memory plan: buffer '" + r.label + "' has no producing step");
    plan.total_bytes += align_up(r.bytes);
  }

  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });

  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of conflicting placed buffers
  for (size_t i : order) {
    const BufferRequest& r = requests[i];
    size_t size = align_up(r.bytes);
    busy.clear();
    for (size_t j : placed) {
      const BufferRequest& o = requests[j];
      if (dead_before(o, r, dag) || dead_before(r, o, dag)) continue;
      busy.emplace_back(plan.offsets[j], plan.offsets[j] + align_up(o.bytes));
    }
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the buffer, else after the last busy range.
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [b, e] : busy) {
      if (b > cursor && b - cursor >= size && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    if (best == SIZE_MAX) best = cursor;
    plan.offsets[i] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
    placed.push_back(i);
  }

  // Lifetime lower bound in the sequential order: max over steps of the bytes alive there.
  int steps = dag.size();
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 1, 0);
  for (const auto& r : requests) {
    delta[static_cast<size_t>(r.def_step)] += static_cast<int64_t>(align_up(r.bytes));
    delta[static_cast<size_t>(last_step(r, steps - 1)) + 1] -= static_cast<int64_t>(align_up(r.bytes));
  }
  int64_t live = 0;
  for (int s = 0; s < steps; ++s) {
    live += delta[static_cast<size_t>(s)];
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, static_cast<size_t>(live));
  }
  return plan;
}

std::string MemoryPlan::print(const std::vector<BufferRequest>& requests) const {
  std::ostringstream os;
  os << "arena " << arena_bytes << " bytes (lifetime lower bound " << lower_bound_bytes << ", without reuse "
     << total_bytes << ")\n";
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    os << "  [" << offsets[i] << ", " << offsets[i] + r.bytes << ") " << r.label << " steps " << r.def_step;
    int last = r.def_step;
    for (int u : r.use_steps) last = std::max(last, u);
    os << ".." << (r.pinned ? std::string("end") : std::to_string(last)) << "\n";
  }
  return os.str();
}

}  // namespace tessera::stages
