// Tests for the timeline model (insight/timeline/model.cpp): lanes and nesting depths, the
// level-of-detail folding against a brute-force count, search, statistics and counter curves.
#include <gtest/gtest.h>

#include <map>

#include <random>

#include "insight/timeline/model.h"

namespace tessera::insight::timeline {
namespace {

using Kind = observe::Span::Kind;

void add(TimelineBuilder& b, Kind kind, const std::string& name, const std::string& op,
         const std::string& device, int thread, int64_t s, int64_t e, int node = -1) {
  b.add_span(kind, name, op, device, "", node, thread, s, e);
}

std::vector<std::string> names(const TimelineModel& m, const Track& t) {
  std::vector<std::string> out;
  for (size_t i = 0; i < t.size(); ++i) out.push_back(m.strings().text(t.name[i]));
  return out;
}

TEST(TimelineModel, LanesPerDeviceAndThreadAndDepthsFromContainment) {
  TimelineBuilder b;
  add(b, Kind::kKernel, "k2", "Add", "cpu", 0, 25, 30);  // out of order on purpose
  add(b, Kind::kStage, "optimise", "", "cpu", 0, 0, 100);
  add(b, Kind::kPass, "fuse", "", "cpu", 0, 10, 40);
  add(b, Kind::kKernel, "k1", "Conv", "cpu", 0, 12, 20);
  add(b, Kind::kPass, "cse", "", "cpu", 0, 50, 90);
  add(b, Kind::kKernel, "w1", "Relu", "cpu", 1, 5, 6);
  add(b, Kind::kKernel, "g1", "MatMul", "cuda:0", 0, 1, 2);
  add(b, Kind::kKernel, "a", "", "cpu", 3, 0, 10);  // partial overlap: b goes one depth deeper
  add(b, Kind::kKernel, "b", "", "cpu", 3, 5, 15);
  add(b, Kind::kKernel, "c", "", "cpu", 3, 12, 20);
  TimelineModel m = std::move(b).build();
  ASSERT_EQ(m.lanes().size(), 4u);
  EXPECT_EQ(m.lanes()[0].label, "cpu / thread 0");
  EXPECT_EQ(m.lanes()[1].label, "cpu / thread 1");
  EXPECT_EQ(m.lanes()[2].label, "cpu / thread 3");
  EXPECT_EQ(m.lanes()[3].label, "cuda:0 / thread 0");
  const Lane& l0 = m.lanes()[0];
  ASSERT_EQ(l0.depths.size(), 3u);
  EXPECT_EQ(names(m, l0.depths[0]), (std::vector<std::string>{"optimise"}));
  EXPECT_EQ(names(m, l0.depths[1]), (std::vector<std::string>{"fuse", "cse"}));
  EXPECT_EQ(names(m, l0.depths[2]), (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(l0.depths[2].start_ns, (std::vector<int64_t>{12, 25}));
  EXPECT_EQ(l0.depths[2].end_ns, (std::vector<int64_t>{20, 30}));
  const Lane& l3 = m.lanes()[2];
  // b overlaps a partially: one deeper. c starts after a ends but inside b: deeper than b (a depth
  // never holds overlapping spans, which the layout's binary searches rely on).
  ASSERT_EQ(l3.depths.size(), 3u);
  EXPECT_EQ(names(m, l3.depths[0]), (std::vector<std::string>{"a"}));
  EXPECT_EQ(names(m, l3.depths[1]), (std::vector<std::string>{"b"}));
  EXPECT_EQ(names(m, l3.depths[2]), (std::vector<std::string>{"c"}));
  EXPECT_EQ(m.span_count(), 10u);
  EXPECT_EQ(m.t_min(), 0);
  EXPECT_EQ(m.t_max(), 100);
  uint32_t idx = 99;
  EXPECT_TRUE(m.span_at(0, 2, 27, &idx));
  EXPECT_EQ(idx, 1u);
  EXPECT_FALSE(m.span_at(0, 2, 22, &idx));
  EXPECT_FALSE(m.span_at(0, 2, 30, &idx));  // end is exclusive
}

TEST(TimelineModel, StringsAreInternedOnce) {
  TimelineBuilder b;
  for (int i = 0; i < 1000; ++i)
    add(b, Kind::kKernel, "conv", "Conv", "cpu", 0, i * 10, i * 10 + 5);
  TimelineModel m = std::move(b).build();
  EXPECT_EQ(m.strings().size(), 4u);  // "", conv, Conv, cpu
  EXPECT_GT(m.span_bytes(), 1000u * 40);
  EXPECT_LT(m.span_bytes(), 1000u * 80);
}

// One lane of back-to-back spans of random widths (a few very wide), as a training run has.
TimelineModel random_track(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TimelineBuilder b;
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t w = rng() % 50 == 0 ? 20000 + static_cast<int64_t>(rng() % 50000)
                                      : 1 + static_cast<int64_t>(rng() % 300);
    add(b, Kind::kKernel, "k", "Op", "cpu", 0, t, t + w);
    t += w + static_cast<int64_t>(rng() % 200);
  }
  return std::move(b).build();
}

TEST(TimelineModel, FoldingCoversExactlyTheVisibleSpansInFewItems) {
  const TimelineModel m = random_track(20000, 7);
  const Track& tr = m.lanes()[0].depths[0];
  const int64_t total = m.t_max();
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const double pixels = 200 + static_cast<double>(rng() % 1800);
    const int64_t w = std::max<int64_t>(100, total >> (rng() % 14));
    const int64_t t0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(total)) - w / 4;
    const int64_t t1 = t0 + w;
    const double npp = static_cast<double>(w) / pixels, min_px = 3.0,
                 min_ns = std::max(min_px * npp, 1.0);
    std::vector<DrawItem> items;
    m.layout(0, 0, t0, t1, npp, min_px, items);
    // Brute force: the spans overlapping [t0, t1).
    size_t first = tr.size(), last = 0, visible = 0;
    for (size_t i = 0; i < tr.size(); ++i)
      if (tr.end_ns[i] > t0 && tr.start_ns[i] < t1) first = std::min(first, i), last = i, ++visible;
    if (visible == 0) {
      EXPECT_TRUE(items.empty());
      continue;
    }
    ASSERT_FALSE(items.empty());
    // Items are consecutive index ranges from the first visible span on, covering every visible
    // one.
    EXPECT_EQ(items.front().first, first);
    size_t next = first, wide = 0;
    for (const DrawItem& it : items) {
      ASSERT_EQ(it.first, next);
      ASSERT_GE(it.count, 1u);
      EXPECT_EQ(it.start_ns, tr.start_ns[it.first]);
      EXPECT_EQ(it.end_ns, tr.end_ns[it.first + it.count - 1]);
      if (it.count > 1) {
        for (uint32_t k = it.first; k < it.first + it.count; ++k) {
          ASSERT_LT(static_cast<double>(tr.end_ns[k] - tr.start_ns[k]), min_ns)
              << "a wide span folded";
        }
      }
      if (it.count == 1 &&
          static_cast<double>(tr.end_ns[it.first] - tr.start_ns[it.first]) >= min_ns)
        ++wide;
      next = it.first + it.count;
    }
    ASSERT_GE(next, last + 1) << "visible spans left out";
    for (size_t k = last + 1; k < next; ++k)  // a fold may run on past t1, by less than its width
      EXPECT_LT(static_cast<double>(tr.start_ns[k]), static_cast<double>(t1) + min_ns);
    // O(pixels): each fold moves at least min_px right.
    EXPECT_LE(static_cast<double>(items.size()),
              static_cast<double>(w) / min_ns + 3 + 2 * static_cast<double>(wide))
        << "trial " << trial;
  }
}

TEST(TimelineModel, ZoomedInEverySpanIsItsOwnItem) {
  TimelineBuilder b;
  for (int i = 0; i < 10; ++i) add(b, Kind::kKernel, "k", "Op", "cpu", 0, i * 100, i * 100 + 50);
  TimelineModel m = std::move(b).build();
  std::vector<DrawItem> items;
  m.layout(0, 0, 0, 1000, 1.0, 3.0, items);  // 1 ns per pixel: 50 px each
  EXPECT_EQ(items.size(), 10u);
  items.clear();
  m.layout(0, 0, 0, 1000, 100.0, 3.0, items);  // 100 ns per pixel: all 0.5 px, one fold
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].count, 10u);
  EXPECT_EQ(items[0].start_ns, 0);
  EXPECT_EQ(items[0].end_ns, 950);
  items.clear();
  m.layout(0, 0, 240, 450, 1.0, 3.0,
           items);  // the window: spans 2, 3, 4 (2 ends at 250 > 240, 4 starts at 400 < 450)
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].first, 2u);
  EXPECT_EQ(items[2].first, 4u);
}

TEST(TimelineModel, SearchByNameOrOpCaseInsensitiveInTimeOrder) {
  TimelineBuilder b;
  add(b, Kind::kKernel, "conv1", "Conv", "cpu", 0, 100, 200);
  add(b, Kind::kKernel, "relu1", "Relu", "cpu", 1, 50, 60);
  add(b, Kind::kKernel, "CONV2", "Conv", "cpu", 1, 70, 80);
  add(b, Kind::kKernel, "fc", "FusedConvRelu", "cuda:0", 0, 10, 20);
  add(b, Kind::kKernel, "pool", "MaxPool", "cpu", 0, 300, 310);
  TimelineModel m = std::move(b).build();
  auto hits = m.search("conv");
  ASSERT_EQ(hits.size(), 3u);
  std::vector<int64_t> starts;
  for (const SpanRef& r : hits) starts.push_back(m.track(r).start_ns[r.index]);
  EXPECT_EQ(starts, (std::vector<int64_t>{10, 70, 100}));
  EXPECT_EQ(m.search("RELU").size(), 2u);  // relu1 by name, fc by op
  EXPECT_TRUE(m.search("nothing").empty());
  EXPECT_TRUE(m.search("").empty());
  EXPECT_EQ(m.search("o", 2).size(), 2u);
}

TEST(TimelineModel, StatisticsByOpAndNodeMatchHandComputedValues) {
  TimelineBuilder b;
  add(b, Kind::kKernel, "conv1", "Conv", "cpu", 0, 0, 10, 1);     // 10
  add(b, Kind::kKernel, "conv2", "Conv", "cpu", 0, 20, 50, 2);    // 30
  add(b, Kind::kKernel, "conv1", "Conv", "cpu", 1, 100, 106, 1);  // 6
  add(b, Kind::kKernel, "relu", "Relu", "cpu", 0, 60, 61, 3);     // 1
  add(b, Kind::kStage, "load", "", "", 0, 0, 200);                // 200, no op
  TimelineModel m = std::move(b).build();
  auto by_op = m.stats(GroupBy::kOp, INT64_MIN, INT64_MAX);
  ASSERT_EQ(by_op.size(), 3u);
  EXPECT_EQ(by_op[0].key, "<stage>");
  EXPECT_EQ(by_op[0].total_ns, 200);
  EXPECT_EQ(by_op[1].key, "Conv");
  EXPECT_EQ(by_op[1].count, 3);
  EXPECT_EQ(by_op[1].total_ns, 46);
  EXPECT_EQ(by_op[1].min_ns, 6);
  EXPECT_EQ(by_op[1].max_ns, 30);
  EXPECT_DOUBLE_EQ(by_op[1].mean_ns(), 46.0 / 3);
  EXPECT_EQ(by_op[2].key, "Relu");
  auto by_node = m.stats(GroupBy::kNode, INT64_MIN, INT64_MAX);
  ASSERT_EQ(by_node.size(), 3u);
  EXPECT_EQ(by_node[0].node, 2);
  EXPECT_EQ(by_node[0].key, "#2 conv2");
  EXPECT_EQ(by_node[1].node, 1);
  EXPECT_EQ(by_node[1].count, 2);
  EXPECT_EQ(by_node[1].total_ns, 16);
  // The window [15, 100): conv2 and relu start in it.
  auto window = m.stats(GroupBy::kOp, 15, 100);
  ASSERT_EQ(window.size(), 2u);
  EXPECT_EQ(window[0].key, "Conv");
  EXPECT_EQ(window[0].count, 1);
  EXPECT_EQ(window[0].total_ns, 30);
}

// Issue 40, item 8: PyTorch's ops nest (aten::linear > aten::addmm, aten::conv2d > aten::conv2d
// through a wrapper): an op inside a span of its own op is counted once, by the outer span, and
// self time is what a span spent outside the spans inside it. Ops without an "op" argument (a
// PyTorch trace's cpu_op events) are grouped by name.
TEST(TimelineModel, NestedSpansOfOneOpCountOnceAndSelfTimeExcludesChildren) {
  TimelineBuilder b;
  add(b, Kind::kKernel, "aten::linear", "", "cpu", 0, 0, 100);
  add(b, Kind::kKernel, "aten::addmm", "", "cpu", 0, 10, 90);
  add(b, Kind::kKernel, "aten::conv2d", "", "cpu", 0, 200, 300);
  add(b, Kind::kKernel, "aten::conv2d", "", "cpu", 0, 210, 290);  // the same op inside itself
  add(b, Kind::kKernel, "aten::mkldnn_convolution", "", "cpu", 0, 220, 280);
  TimelineModel m = std::move(b).build();
  auto by_op = m.stats(GroupBy::kOp, INT64_MIN, INT64_MAX);
  ASSERT_EQ(by_op.size(), 4u);
  std::map<std::string, GroupStats> g;
  for (const GroupStats& s : by_op) g[s.key] = s;
  ASSERT_TRUE(g.count("aten::conv2d"));
  EXPECT_EQ(g["aten::conv2d"].count, 1);
  EXPECT_EQ(g["aten::conv2d"].total_ns, 100);  // not 180
  EXPECT_EQ(g["aten::conv2d"].self_ns, 20 + 20);  // 100 - 80, and 80 - 60
  EXPECT_EQ(g["aten::linear"].total_ns, 100);
  EXPECT_EQ(g["aten::linear"].self_ns, 20);
  EXPECT_EQ(g["aten::addmm"].self_ns, 80);
  EXPECT_EQ(g["aten::mkldnn_convolution"].self_ns, 60);
  int64_t self = 0;
  for (const GroupStats& s : by_op) self += s.self_ns;
  EXPECT_EQ(self, 200);  // the busy time, once
}

TEST(TimelineModel, MemoryIsARunningSumPerDeviceAndCountersAreAbsolute) {
  TimelineBuilder b;
  add(b, Kind::kKernel, "k", "Op", "cpu", 0, 0, 10);
  b.add_memory({"cpu", "arena", 30, -100});
  b.add_memory({"cpu", "arena", 10, 300});
  b.add_memory({"cuda:0", "weights", 5, 1000});
  b.add_memory({"cpu", "dynamic", 20, 50});
  b.add_counter("queue", 7, 4);
  b.add_counter("queue", 3, 9);
  TimelineModel m = std::move(b).build();
  ASSERT_EQ(m.counters().size(), 3u);
  const Counter& cpu = m.counters()[0];
  EXPECT_EQ(cpu.name, "memory cpu");
  EXPECT_EQ(cpu.time_ns, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(cpu.value, (std::vector<double>{300, 350, 250}));
  EXPECT_EQ(cpu.max_value, 350);
  EXPECT_EQ(cpu.min_value, 250);
  EXPECT_EQ(m.counters()[1].name, "memory cuda:0");
  EXPECT_EQ(m.counters()[1].value, (std::vector<double>{1000}));
  EXPECT_EQ(m.counters()[2].value, (std::vector<double>{9, 4}));
  EXPECT_EQ(m.t_max(), 30);  // counters widen the extent
}

TEST(TimelineModel, FormatDuration) {
  EXPECT_EQ(format_duration(850), "850 ns");
  EXPECT_EQ(format_duration(12500), "12.5 us");
  EXPECT_EQ(format_duration(3.2e6), "3.2 ms");
  EXPECT_EQ(format_duration(1.5e9), "1.5 s");
}

TEST(TimelineModel, RulerLabelsHaveTheDecimalsTheirStepNeeds) {
  EXPECT_EQ(format_tick(0, 1e6), "0 ms");
  EXPECT_EQ(format_tick(262.51e6, 1e4), "262.51 ms");
  EXPECT_EQ(format_tick(262.5e6, 5e5), "262.5 ms");
  EXPECT_EQ(format_tick(3e9, 1e9), "3 s");
  EXPECT_EQ(format_tick(1500, 100), "1.5 us");
  EXPECT_EQ(format_tick(400, 100), "400 ns");
}

}  // namespace
}  // namespace tessera::insight::timeline
