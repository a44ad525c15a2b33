// The profiler timeline's data: spans in lanes (one per device and thread), nested by containment
// into depths, each (lane, depth) a time-sorted struct of arrays; memory and counter curves; an
// interned string table. No UI code: the view (view.h) and the benchmarks read it.
//
//   TimelineBuilder b;
//   for (const observe::Span& s : spans) b.add_span(s);
//   for (const observe::MemoryEvent& e : events) b.add_memory(e);
//   TimelineModel model = std::move(b).build();
//   std::vector<DrawItem> items;
//   model.layout(lane, depth, t0, t1, ns_per_px, 3.0, items);   // O(pixels), not O(spans)
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/observe/sinks.h"

namespace tessera::insight::timeline {

using StringId = uint32_t;

// Interned strings: each distinct text stored once; ids are dense from 0 ("" is id 0).
class StringTable {
 public:
  StringTable();
  // Move only: the index views into the stored strings.
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StringId intern(std::string_view text);
  const std::string& text(StringId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }
  size_t bytes() const;  // approximate heap bytes held

 private:
  std::deque<std::string> strings_;  // a deque: the map's keys view into stable elements
  std::unordered_map<std::string_view, StringId> ids_;
};

// The spans of one lane at one nesting depth, sorted by start. Within a track spans never overlap,
// so ends are sorted too (a partial overlap in the input goes one depth deeper).
struct Track {
  std::vector<int64_t> start_ns, end_ns;  // steady-clock ns as recorded (or trace us * 1000)
  std::vector<StringId> name, op, detail;
  std::vector<int32_t> node;
  std::vector<int64_t> bytes;
  std::vector<float> flops;
  std::vector<uint8_t> kind;  // observe::Span::Kind
  // Every kCoarse-th start: a small index searched first, so that a lookup touches a few cache
  // lines of the big arrays instead of ~20 (the frame's folds do thousands of lookups).
  static constexpr size_t kCoarse = 32;
  std::vector<int64_t> coarse_start;
  size_t size() const { return start_ns.size(); }
  // The first index >= from whose start is >= t (size() when none).
  size_t first_start_at_or_after(size_t from, int64_t t) const;
};

struct Lane {
  StringId device = 0;
  int64_t thread = 0;
  std::string label;          // "cpu / thread 0"
  std::vector<Track> depths;  // depth 0 = outermost
};

// A running value over time (memory bytes of a device, a Chrome "C" counter), sorted by time.
struct Counter {
  std::string name;  // "memory cpu"
  std::vector<int64_t> time_ns;
  std::vector<double> value;
  double min_value = 0, max_value = 0;
};

// One span, addressed by lane, depth and index in the track.
struct SpanRef {
  uint32_t lane = 0, depth = 0, index = 0;
  bool operator==(const SpanRef& o) const {
    return lane == o.lane && depth == o.depth && index == o.index;
  }
};

// What a frame draws for one track: a single span (count == 1, `first` its index) or a fold of
// `count` consecutive spans [first, first + count) too narrow to draw one by one.
struct DrawItem {
  int64_t start_ns = 0, end_ns = 0;
  uint32_t first = 0, count = 0;
};

// Statistics of one group (an op, or a node). A span inside another span of its own group (a
// PyTorch op calling itself, kernels nested in kernels) is counted once, by the outer one: count,
// total, min and max are of the outermost spans. `self_ns` is the group's exclusive time: every
// span's duration less that of the spans nested directly in it, so the selves of all groups add
// up to the busy time once.
struct GroupStats {
  std::string key;    // op; the name of a kernel span without op (PyTorch's "aten::addmm");
                      // "<stage>" for other spans without op; or "#12 conv1" for a node
  int32_t node = -1;  // the node, when grouped by node
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0, self_ns = 0;
  double mean_ns() const {
    return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0.0;
  }
};
enum class GroupBy { kOp, kNode };

class TimelineModel {
 public:
  const std::vector<Lane>& lanes() const { return lanes_; }
  const std::vector<Counter>& counters() const { return counters_; }
  const StringTable& strings() const { return strings_; }
  // Earliest start and latest end over all spans and counter points ({0, 0} when empty).
  int64_t t_min() const { return t_min_; }
  int64_t t_max() const { return t_max_; }
  size_t span_count() const { return span_count_; }
  const Track& track(const SpanRef& r) const { return lanes_[r.lane].depths[r.depth]; }
  // Approximate heap bytes held by the spans (tracks), for the bytes/span figure.
  size_t span_bytes() const;

  // Level of detail for one track over the window [t0, t1): spans at least `min_px` pixels wide
  // one by one, runs of narrower neighbours folded into one item. Visits O(window pixels / min_px)
  // items by jumping with a binary search to the first span past each fold. Appends to `out`.
  void layout(uint32_t lane, uint32_t depth, int64_t t0, int64_t t1, double ns_per_px,
              double min_px, std::vector<DrawItem>& out) const;
  // The span of a track containing time t (nullopt-like: returns false when none).
  bool span_at(uint32_t lane, uint32_t depth, int64_t t, uint32_t* index) const;

  // Spans whose name or op contains `needle` (ASCII case-insensitive), by start time, at most
  // `limit`. Empty needle: no matches.
  std::vector<SpanRef> search(std::string_view needle, size_t limit = 1000000) const;
  // Per-string-id flags: 1 when the text contains `needle` (the view's highlight test).
  std::vector<uint8_t> matching_strings(std::string_view needle) const;

  // Statistics of the spans starting in [t0, t1), by op or by node (node >= 0 only), most total
  // time first.
  std::vector<GroupStats> stats(GroupBy by, int64_t t0, int64_t t1) const;

 private:
  friend class TimelineBuilder;
  StringTable strings_;
  std::vector<Lane> lanes_;
  std::vector<Counter> counters_;
  int64_t t_min_ = 0, t_max_ = 0;
  size_t span_count_ = 0;
};

// Collects spans and memory events (interning as it goes) and builds the model.
class TimelineBuilder {
 public:
  void add_span(const observe::Span& s);
  // The same without observe::Span's strings (loaders and the 10M-span benchmark).
  void add_span(observe::Span::Kind kind, std::string_view name, std::string_view op,
                std::string_view device, std::string_view detail, int32_t node, int64_t thread,
                int64_t start_ns, int64_t end_ns, int64_t bytes = 0, double flops = 0);
  // A memory allocation (bytes > 0) or free (< 0): the device's curve is the running sum.
  void add_memory(const observe::MemoryEvent& e);
  // An absolute counter sample (Chrome "C" events).
  void add_counter(std::string_view name, int64_t time_ns, double value);
  // Lane labels: a name for a device string (Chrome process_name) and for a (device, thread).
  void set_thread_name(std::string_view device, int64_t thread, std::string_view name);
  void set_device_name(std::string_view device, std::string_view name);
  size_t span_count() const { return raw_.size(); }
  void reserve(size_t spans) { raw_.reserve(spans); }

  // Sorts, nests and packs; the builder is consumed.
  TimelineModel build() &&;

 private:
  struct Raw {
    int64_t start_ns, end_ns, bytes, thread;
    float flops;
    StringId name, op, detail, device;
    int32_t node;
    uint8_t kind;
  };
  struct Sample {
    int64_t time_ns;
    double value;
    bool delta;
  };
  StringTable strings_;
  std::vector<Raw> raw_;
  std::unordered_map<std::string, std::vector<Sample>> counters_;
  std::vector<std::string> counter_order_;
  std::unordered_map<std::string, std::string> thread_names_;  // "device\x1fthread" -> name
  std::unordered_map<std::string, std::string> device_names_;
};

// Duration as text with a unit: "850 ns", "12.5 us", "3.20 ms", "1.50 s".
std::string format_duration(double ns);
// A ruler label: the unit from the magnitude of `ns`, as many decimals as ticks `step_ns` apart
// need to differ ("262.51 ms" for a 10 us step).
std::string format_tick(double ns, double step_ns);

}  // namespace tessera::insight::timeline
