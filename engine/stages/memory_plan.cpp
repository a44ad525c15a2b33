// Greedy-by-size offset planning over lifetimes in the sequential step order (see memory_plan.h).
#include "engine/stages/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace tessera::stages {

int BufferRequest::last_step(int num_steps) const {
  if (pinned) return num_steps - 1;
  int last = def_step;
  for (int u : use_steps) last = std::max(last, u);
  return last;
}

namespace {

size_t align_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

// Intervals of steps, inserted one by one; stab(p) lists those that contain step p. Each interval
// is stored in O(log n) nodes of a bottom-up segment tree.
class StepIntervals {
 public:
  explicit StepIntervals(int num_steps) {
    while (leaves_ < static_cast<size_t>(std::max(num_steps, 1))) leaves_ *= 2;
    nodes_.resize(2 * leaves_);
  }
  void insert(int first, int last, size_t id) {
    for (size_t l = first + leaves_, r = last + 1 + leaves_; l < r; l /= 2, r /= 2) {
      if (l & 1) nodes_[l++].push_back(id);
      if (r & 1) nodes_[--r].push_back(id);
    }
  }
  template <class F>
  void stab(int p, F&& f) const {
    for (size_t i = p + leaves_; i >= 1; i /= 2)
      for (size_t id : nodes_[i]) f(id);
  }

 private:
  size_t leaves_ = 1;
  std::vector<std::vector<size_t>> nodes_;
};

}  // namespace

Expected<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, int num_steps) {
  MemoryPlan plan;
  plan.num_steps = num_steps;
  size_t n = requests.size();
  plan.offsets.assign(n, 0);
  std::vector<int> first(n), last(n);
  for (size_t i = 0; i < n; ++i) {
    const BufferRequest& r = requests[i];
    if (r.def_step < 0 || r.def_step >= num_steps)
      return make_error("memory plan: buffer '" + r.label + "' has no producing step");
    for (int u : r.use_steps)
      if (u < r.def_step || u >= num_steps)
        return make_error("memory plan: buffer '" + r.label + "' is read at step " + std::to_string(u) +
                          ", outside its producer's step " + std::to_string(r.def_step) + ".." +
                          std::to_string(num_steps - 1));
    first[i] = r.def_step;
    last[i] = r.last_step(num_steps);
    plan.total_bytes += align_up(r.bytes);
  }

  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });

  // Placed buffers whose lifetime overlaps [a, b]: those alive at a, and those written in (a, b].
  StepIntervals alive(num_steps);
  std::set<std::pair<int, size_t>> by_def;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of conflicting placed buffers
  for (size_t i : order) {
    size_t size = align_up(requests[i].bytes);
    busy.clear();
    auto add = [&](size_t j) { busy.emplace_back(plan.offsets[j], plan.offsets[j] + align_up(requests[j].bytes)); };
    alive.stab(first[i], add);
    for (auto it = by_def.upper_bound({first[i], SIZE_MAX}); it != by_def.end() && it->first <= last[i]; ++it) add(it->second);
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
    alive.insert(first[i], last[i], i);
    by_def.emplace(first[i], i);
  }

  // Lifetime lower bound in the sequential order: max over steps of the bytes alive there.
  std::vector<int64_t> delta(static_cast<size_t>(std::max(num_steps, 0)) + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    delta[static_cast<size_t>(first[i])] += static_cast<int64_t>(align_up(requests[i].bytes));
    delta[static_cast<size_t>(last[i]) + 1] -= static_cast<int64_t>(align_up(requests[i].bytes));
  }
  int64_t live = 0;
  for (int s = 0; s < num_steps; ++s) {
    live += delta[static_cast<size_t>(s)];
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, static_cast<size_t>(live));
  }
  return plan;
}

std::vector<std::pair<int, int>> memory_order_edges(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  std::vector<size_t> order(requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].def_step < requests[b].def_step; });
  struct Range {
    size_t end;
    size_t occupant;
  };
  std::map<size_t, Range> occupied;  // begin -> [begin, end) last written by occupant
  std::vector<size_t> stamp(requests.size(), SIZE_MAX);
  std::vector<std::pair<int, int>> edges;
  std::vector<std::pair<size_t, Range>> keep;
  for (size_t y : order) {
    size_t yb = plan.offsets[y], ye = yb + requests[y].bytes;
    if (yb == ye) continue;
    const int to = requests[y].def_step;
    auto it = occupied.upper_bound(yb);
    if (it != occupied.begin() && std::prev(it)->second.end > yb) --it;
    keep.clear();
    while (it != occupied.end() && it->first < ye) {
      const auto [b, range] = *it;
      const size_t x = range.occupant;
      if (stamp[x] != y) {
        stamp[x] = y;
        const BufferRequest& r = requests[x];
        for (int u : r.use_steps)
          if (u != to) edges.emplace_back(u, to);
        if (r.use_steps.empty() && r.def_step != to) edges.emplace_back(r.def_step, to);
      }
      if (b < yb) keep.push_back({b, {yb, x}});
      if (range.end > ye) keep.push_back({ye, {range.end, x}});
      it = occupied.erase(it);
    }
    for (const auto& k : keep) occupied.insert(k);
    occupied.insert({yb, {ye, y}});
  }
  return edges;
}

std::string MemoryPlan::print(const std::vector<BufferRequest>& requests) const {
  std::ostringstream os;
  os << "arena " << arena_bytes << " bytes (lifetime lower bound " << lower_bound_bytes << ", without reuse "
     << total_bytes << ")\n";
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    os << "  [" << offsets[i] << ", " << offsets[i] + r.bytes << ") " << r.label << " steps " << r.def_step << ".."
       << (r.pinned ? std::string("end") : std::to_string(r.last_step(num_steps))) << "\n";
  }
  return os.str();
}

}  // namespace tessera::stages
