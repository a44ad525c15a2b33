// The timeline model: building lanes and depths from spans, the level-of-detail layout, search,
// statistics and counter curves (model.h).
#include "insight/timeline/model.h"

#include <algorithm>
#include <optional>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <unordered_map>

namespace tessera::insight::timeline {

StringTable::StringTable() {
  intern("");
}

StringId StringTable::intern(std::string_view text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(text);
  const auto id = static_cast<StringId>(strings_.size() - 1);
  ids_.emplace(std::string_view(strings_.back()), id);
  return id;
}

size_t StringTable::bytes() const {
  size_t n = 0;
  for (const std::string& s : strings_)
    n += sizeof(std::string) + (s.size() > 15 ? s.capacity() : 0) + 32;
  return n;
}

namespace {

// ASCII lower-case copy.
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const char* kind_label(uint8_t kind) {
  static const char* const kNames[] = {"<stage>", "<pass>", "<kernel>", "<copy>", "<step>"};
  return kind < 5 ? kNames[kind] : "<kernel>";
}

template <class T>
size_t vec_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

size_t Track::first_start_at_or_after(size_t from, int64_t t) const {
  const size_t n = size();
  if (from >= n) return n;
  // coarse_start[c] = start_ns[c * kCoarse]: the answer lies in [(c - 1) * kCoarse, c * kCoarse].
  const size_t c = static_cast<size_t>(
      std::lower_bound(coarse_start.begin(), coarse_start.end(), t) - coarse_start.begin());
  const size_t hi = std::min(n, c * kCoarse);
  if (from >= hi)
    return start_ns[from] >= t
               ? from
               : static_cast<size_t>(std::lower_bound(start_ns.begin() + static_cast<long>(from),
                                                      start_ns.end(), t) -
                                     start_ns.begin());
  const size_t lo = std::max(from, c > 0 ? (c - 1) * kCoarse : size_t{0});
  return static_cast<size_t>(std::lower_bound(start_ns.begin() + static_cast<long>(lo),
                                              start_ns.begin() + static_cast<long>(hi), t) -
                             start_ns.begin());
}

size_t TimelineModel::span_bytes() const {
  size_t n = 0;
  for (const Lane& lane : lanes_)
    for (const Track& t : lane.depths)
      n += vec_bytes(t.start_ns) + vec_bytes(t.end_ns) + vec_bytes(t.name) + vec_bytes(t.op) +
           vec_bytes(t.detail) + vec_bytes(t.node) + vec_bytes(t.bytes) + vec_bytes(t.flops) +
           vec_bytes(t.kind) + vec_bytes(t.coarse_start);
  return n;
}

// Level of detail (the Tracy scheme): find the first span ending after t0 (ends are sorted in a
// track), then walk right. A span at least min_px wide is one item. A narrow one starts a fold:
// binary-search the first span starting min_px further right, take everything before it (only the
// last of those can be wide: the others end before the next starts; a wide last one is left for the
// next item), and keep extending while the next span is narrow and touches the fold. Each step
// moves min_px to the right or emits a wide span, so a frame costs O(pixels / min_px) binary
// searches per track whatever the zoom.
void TimelineModel::layout(uint32_t lane, uint32_t depth, int64_t t0, int64_t t1, double ns_per_px,
                           double min_px, std::vector<DrawItem>& out) const {
  if (lane >= lanes_.size() || depth >= lanes_[lane].depths.size() || t1 <= t0) return;
  const Track& tr = lanes_[lane].depths[depth];
  const int64_t* start = tr.start_ns.data();
  const int64_t* end = tr.end_ns.data();
  const size_t n = tr.size();
  const double min_ns = std::max(min_px * ns_per_px, 1.0);
  auto narrow = [&](size_t k) { return static_cast<double>(end[k] - start[k]) < min_ns; };
  size_t i = static_cast<size_t>(std::upper_bound(end, end + n, t0) - end);
  while (i < n && start[i] < t1) {
    if (!narrow(i)) {
      out.push_back({start[i], end[i], static_cast<uint32_t>(i), 1});
      ++i;
      continue;
    }
    const size_t first = i;
    size_t j = i;
    while (true) {
      const double target = static_cast<double>(start[j]) + min_ns;
      const int64_t target_ns = target > 9.2e18 ? INT64_MAX : static_cast<int64_t>(target);
      size_t k = tr.first_start_at_or_after(j + 1, target_ns);
      if (k - 1 > j && !narrow(k - 1)) --k;
      j = k;
      if (j < n && start[j] < t1 && narrow(j) &&
          static_cast<double>(start[j] - end[j - 1]) < ns_per_px)
        continue;
      break;
    }
    out.push_back(
        {start[first], end[j - 1], static_cast<uint32_t>(first), static_cast<uint32_t>(j - first)});
    i = j;
  }
}

bool TimelineModel::span_at(uint32_t lane, uint32_t depth, int64_t t, uint32_t* index) const {
  if (lane >= lanes_.size() || depth >= lanes_[lane].depths.size()) return false;
  const Track& tr = lanes_[lane].depths[depth];
  auto it = std::upper_bound(tr.start_ns.begin(), tr.start_ns.end(), t);
  if (it == tr.start_ns.begin()) return false;
  const size_t k = static_cast<size_t>(it - tr.start_ns.begin()) - 1;
  if (tr.end_ns[k] <= t) return false;
  *index = static_cast<uint32_t>(k);
  return true;
}

std::vector<uint8_t> TimelineModel::matching_strings(std::string_view needle) const {
  std::vector<uint8_t> flags(strings_.size(), 0);
  if (needle.empty()) return flags;
  const std::string n = lower(needle);
  for (size_t id = 1; id < strings_.size(); ++id)
    flags[id] = lower(strings_.text(static_cast<StringId>(id))).find(n) != std::string::npos;
  return flags;
}

std::vector<SpanRef> TimelineModel::search(std::string_view needle, size_t limit) const {
  std::vector<SpanRef> out;
  if (needle.empty()) return out;
  const std::vector<uint8_t> flags = matching_strings(needle);
  if (std::none_of(flags.begin(), flags.end(), [](uint8_t f) { return f != 0; })) return out;
  for (uint32_t l = 0; l < lanes_.size(); ++l)
    for (uint32_t d = 0; d < lanes_[l].depths.size(); ++d) {
      const Track& tr = lanes_[l].depths[d];
      for (uint32_t i = 0; i < tr.size() && out.size() < limit; ++i)
        if (flags[tr.name[i]] || flags[tr.op[i]]) out.push_back({l, d, i});
    }
  std::sort(out.begin(), out.end(), [&](const SpanRef& a, const SpanRef& b) {
    const int64_t sa = track(a).start_ns[a.index], sb = track(b).start_ns[b.index];
    if (sa != sb) return sa < sb;
    return std::tie(a.lane, a.depth, a.index) < std::tie(b.lane, b.depth, b.index);
  });
  return out;
}

std::vector<GroupStats> TimelineModel::stats(GroupBy by, int64_t t0, int64_t t1) const {
  std::unordered_map<int64_t, GroupStats> groups;
  // The group of span i of track `tr` (nullopt: not grouped, a node-less span by node).
  auto key_of = [&](const Track& tr, size_t i) -> std::optional<int64_t> {
    if (by == GroupBy::kNode) {
      if (tr.node[i] < 0) return std::nullopt;
      return tr.node[i];
    }
    if (tr.op[i] != 0) return static_cast<int64_t>(tr.op[i]);
    // A kernel without op (a PyTorch trace's cpu_op events): its name is its op.
    if (tr.kind[i] == static_cast<uint8_t>(observe::Span::Kind::kKernel) && tr.name[i] != 0) return static_cast<int64_t>(tr.name[i]);
    return -1 - static_cast<int64_t>(tr.kind[i]);
  };
  for (const Lane& lane : lanes_) {
    const std::vector<Track>& depths = lane.depths;
    // The span of depth d - 1 that holds span i of depth d, if any.
    auto parent = [&](size_t d, size_t i) -> std::optional<size_t> {
      if (d == 0) return std::nullopt;
      const Track& up = depths[d - 1];
      const Track& t = depths[d];
      auto it = std::upper_bound(up.start_ns.begin(), up.start_ns.end(), t.start_ns[i]);
      if (it == up.start_ns.begin()) return std::nullopt;
      const size_t j = static_cast<size_t>(it - up.start_ns.begin()) - 1;
      if (up.end_ns[j] < t.end_ns[i]) return std::nullopt;
      return j;
    };
    for (size_t d = 0; d < depths.size(); ++d) {
      const Track& tr = depths[d];
      const size_t lo = static_cast<size_t>(
          std::lower_bound(tr.start_ns.begin(), tr.start_ns.end(), t0) - tr.start_ns.begin());
      for (size_t i = lo; i < tr.size() && tr.start_ns[i] < t1; ++i) {
        const std::optional<int64_t> key = key_of(tr, i);
        if (!key) continue;
        GroupStats& g = groups[*key];
        const int64_t dur = tr.end_ns[i] - tr.start_ns[i];
        // Self time: less the spans directly inside it.
        int64_t inner = 0;
        if (d + 1 < depths.size()) {
          const Track& down = depths[d + 1];
          auto k = static_cast<size_t>(
              std::lower_bound(down.start_ns.begin(), down.start_ns.end(), tr.start_ns[i]) - down.start_ns.begin());
          for (; k < down.size() && down.start_ns[k] < tr.end_ns[i]; ++k)
            inner += std::min(down.end_ns[k], tr.end_ns[i]) - down.start_ns[k];
        }
        g.self_ns += std::max<int64_t>(0, dur - inner);
        // Inside a span of the same group: already counted by that one.
        bool nested = false;
        for (std::optional<size_t> p = parent(d, i), pd = d; p && !nested; ) {
          const size_t up_depth = *pd - 1;
          nested = key_of(depths[up_depth], *p) == key;
          pd = up_depth;
          p = parent(up_depth, *p);
        }
        if (g.key.empty()) {
          if (by == GroupBy::kNode) {
            g.node = tr.node[i];
            g.key = "#" + std::to_string(tr.node[i]) + " " + strings_.text(tr.name[i]);
          } else {
            g.key = tr.op[i] != 0 ? strings_.text(tr.op[i])
                    : *key >= 0   ? strings_.text(tr.name[i])
                                  : kind_label(tr.kind[i]);
          }
        }
        if (nested) continue;
        if (g.count == 0) g.min_ns = g.max_ns = dur;
        ++g.count;
        g.total_ns += dur;
        g.min_ns = std::min(g.min_ns, dur);
        g.max_ns = std::max(g.max_ns, dur);
      }
    }
  }
  std::vector<GroupStats> out;
  out.reserve(groups.size());
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  std::sort(out.begin(), out.end(), [](const GroupStats& a, const GroupStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.key < b.key;
  });
  return out;
}

void TimelineBuilder::add_span(const observe::Span& s) {
  add_span(s.kind, s.name, s.op, s.device, s.detail, s.node, s.thread, s.start_ns, s.end_ns,
           s.bytes, s.flops);
}

void TimelineBuilder::add_span(observe::Span::Kind kind, std::string_view name, std::string_view op,
                               std::string_view device, std::string_view detail, int32_t node,
                               int64_t thread, int64_t start_ns, int64_t end_ns, int64_t bytes,
                               double flops) {
  if (end_ns < start_ns) end_ns = start_ns;
  raw_.push_back({start_ns, end_ns, bytes, thread, static_cast<float>(flops), strings_.intern(name),
                  strings_.intern(op), strings_.intern(detail), strings_.intern(device), node,
                  static_cast<uint8_t>(kind)});
}

void TimelineBuilder::add_memory(const observe::MemoryEvent& e) {
  const std::string name = "memory " + e.device;
  auto [it, fresh] = counters_.try_emplace(name);
  if (fresh) counter_order_.push_back(name);
  it->second.push_back({e.time_ns, static_cast<double>(e.bytes), true});
}

void TimelineBuilder::add_counter(std::string_view name, int64_t time_ns, double value) {
  auto [it, fresh] = counters_.try_emplace(std::string(name));
  if (fresh) counter_order_.emplace_back(name);
  it->second.push_back({time_ns, value, false});
}

void TimelineBuilder::set_thread_name(std::string_view device, int64_t thread,
                                      std::string_view name) {
  thread_names_[std::string(device) + '\x1f' + std::to_string(thread)] = std::string(name);
}

void TimelineBuilder::set_device_name(std::string_view device, std::string_view name) {
  device_names_[std::string(device)] = std::string(name);
}

TimelineModel TimelineBuilder::build() && {
  TimelineModel m;
  // Lanes: distinct (device, thread), ordered by device text then thread.
  std::map<std::pair<std::string, int64_t>, uint32_t> lane_of_key;
  std::unordered_map<uint64_t, uint32_t> lane_of_pair;  // (device id, thread) -> provisional lane
  std::vector<std::pair<StringId, int64_t>> keys;
  std::vector<uint32_t> lane_of(raw_.size());
  for (size_t i = 0; i < raw_.size(); ++i) {
    const uint64_t k = (static_cast<uint64_t>(raw_[i].device) << 32) ^
                       static_cast<uint64_t>(raw_[i].thread & 0xffffffff);
    auto [it, fresh] = lane_of_pair.try_emplace(k, static_cast<uint32_t>(keys.size()));
    if (fresh) keys.emplace_back(raw_[i].device, raw_[i].thread);
    lane_of[i] = it->second;
  }
  std::vector<uint32_t> order_of_keys(keys.size());
  std::iota(order_of_keys.begin(), order_of_keys.end(), 0u);
  std::sort(order_of_keys.begin(), order_of_keys.end(), [&](uint32_t a, uint32_t b) {
    const std::string& da = strings_.text(keys[a].first);
    const std::string& db = strings_.text(keys[b].first);
    return da != db ? da < db : keys[a].second < keys[b].second;
  });
  std::vector<uint32_t> final_lane(keys.size());
  for (uint32_t i = 0; i < order_of_keys.size(); ++i) final_lane[order_of_keys[i]] = i;
  m.lanes_.resize(keys.size());
  for (uint32_t k = 0; k < keys.size(); ++k) {
    Lane& lane = m.lanes_[final_lane[k]];
    lane.device = keys[k].first;
    lane.thread = keys[k].second;
    std::string dev = strings_.text(keys[k].first);
    auto dev_named = device_names_.find(dev);
    auto named = thread_names_.find(dev + '\x1f' + std::to_string(keys[k].second));
    if (dev_named != device_names_.end()) dev = dev_named->second;
    if (dev.empty()) dev = "host";  // stages and passes carry no device
    lane.label = dev + " / thread " + std::to_string(keys[k].second);
    if (named != thread_names_.end()) lane.label = dev + " / " + named->second;
  }
  // Counting sort of span indices by lane.
  std::vector<size_t> lane_begin(keys.size() + 1, 0);
  for (uint32_t& l : lane_of) l = final_lane[l], ++lane_begin[l + 1];
  for (size_t l = 0; l < keys.size(); ++l) lane_begin[l + 1] += lane_begin[l];
  std::vector<uint32_t> order(raw_.size());
  {
    std::vector<size_t> fill(lane_begin.begin(), lane_begin.end() - 1);
    for (size_t i = 0; i < raw_.size(); ++i) order[fill[lane_of[i]]++] = static_cast<uint32_t>(i);
  }
  std::vector<uint32_t>().swap(lane_of);
  m.t_min_ = INT64_MAX;
  m.t_max_ = INT64_MIN;
  std::vector<uint32_t> depth_of;
  std::vector<int64_t> stack;  // ends of the open spans
  for (size_t l = 0; l < keys.size(); ++l) {
    auto* b = order.data() + lane_begin[l];
    auto* e = order.data() + lane_begin[l + 1];
    std::sort(b, e, [&](uint32_t x, uint32_t y) {
      const Raw& rx = raw_[x];
      const Raw& ry = raw_[y];
      return rx.start_ns != ry.start_ns ? rx.start_ns < ry.start_ns : rx.end_ns > ry.end_ns;
    });
    // Nesting: a span's depth is the number of open spans containing its start. Popping only from
    // the top keeps each depth free of overlaps (a partially overlapping span goes deeper).
    depth_of.assign(static_cast<size_t>(e - b), 0);
    stack.clear();
    std::vector<size_t> per_depth;
    for (auto* p = b; p != e; ++p) {
      const Raw& r = raw_[*p];
      while (!stack.empty() && stack.back() <= r.start_ns) stack.pop_back();
      const uint32_t d = static_cast<uint32_t>(stack.size());
      depth_of[static_cast<size_t>(p - b)] = d;
      if (per_depth.size() <= d) per_depth.resize(d + 1, 0);
      ++per_depth[d];
      stack.push_back(r.end_ns);
    }
    Lane& lane = m.lanes_[l];
    lane.depths.resize(per_depth.size());
    for (size_t d = 0; d < per_depth.size(); ++d) {
      Track& t = lane.depths[d];
      const size_t n = per_depth[d];
      t.start_ns.reserve(n), t.end_ns.reserve(n), t.name.reserve(n), t.op.reserve(n),
          t.detail.reserve(n);
      t.node.reserve(n), t.bytes.reserve(n), t.flops.reserve(n), t.kind.reserve(n);
    }
    for (auto* p = b; p != e; ++p) {
      const Raw& r = raw_[*p];
      Track& t = lane.depths[depth_of[static_cast<size_t>(p - b)]];
      t.start_ns.push_back(r.start_ns), t.end_ns.push_back(r.end_ns), t.name.push_back(r.name);
      t.op.push_back(r.op), t.detail.push_back(r.detail), t.node.push_back(r.node),
          t.bytes.push_back(r.bytes);
      t.flops.push_back(r.flops), t.kind.push_back(r.kind);
      m.t_min_ = std::min(m.t_min_, r.start_ns);
      m.t_max_ = std::max(m.t_max_, r.end_ns);
    }
    for (Track& t : lane.depths)
      for (size_t i = 0; i < t.size(); i += Track::kCoarse) t.coarse_start.push_back(t.start_ns[i]);
  }
  m.span_count_ = raw_.size();
  std::vector<Raw>().swap(raw_);
  // Counters: time order (stable: equal times keep arrival order); memory deltas become a running
  // sum.
  for (const std::string& name : counter_order_) {
    std::vector<Sample>& samples = counters_[name];
    std::stable_sort(samples.begin(), samples.end(),
                     [](const Sample& a, const Sample& b) { return a.time_ns < b.time_ns; });
    Counter c;
    c.name = name;
    double running = 0;
    for (const Sample& s : samples) {
      running = s.delta ? running + s.value : s.value;
      c.time_ns.push_back(s.time_ns);
      c.value.push_back(running);
      m.t_min_ = std::min(m.t_min_, s.time_ns);
      m.t_max_ = std::max(m.t_max_, s.time_ns);
    }
    if (!c.value.empty()) {
      c.min_value = *std::min_element(c.value.begin(), c.value.end());
      c.max_value = *std::max_element(c.value.begin(), c.value.end());
    }
    m.counters_.push_back(std::move(c));
  }
  if (m.t_min_ > m.t_max_) m.t_min_ = m.t_max_ = 0;
  m.strings_ = std::move(strings_);
  return m;
}

std::string format_duration(double ns) {
  char buf[48];
  const double a = ns < 0 ? -ns : ns;
  if (a < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (a < 1e6)
    std::snprintf(buf, sizeof buf, "%.3g us", ns / 1e3);
  else if (a < 1e9)
    std::snprintf(buf, sizeof buf, "%.3g ms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3g s", ns / 1e9);
  return buf;
}

std::string format_tick(double ns, double step_ns) {
  const double a = std::max(std::fabs(ns), step_ns);
  const char* unit = "ns";
  double scale = 1;
  if (a >= 1e9)
    unit = "s", scale = 1e9;
  else if (a >= 1e6)
    unit = "ms", scale = 1e6;
  else if (a >= 1e3)
    unit = "us", scale = 1e3;
  const double step = step_ns / scale;
  const int decimals =
      step >= 1 ? 0 : std::min(9, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, ns / scale, unit);
  return buf;
}

}  // namespace tessera::insight::timeline
