// Tests for the Chrome trace reader (insight/timeline/chrome_reader.cpp): complete files, B/E
// pairs, counters, metadata, a trace cut at every byte, garbage and empty files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "insight/timeline/loaders.h"

namespace tessera::insight::timeline {
namespace {

std::string temp_file(const std::string& name, const std::string& body) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tessera_chrome_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  std::ofstream(p, std::ios::binary) << body;
  return p;
}

const Track& depth0(const TimelineModel& m, size_t lane) {
  return m.lanes().at(lane).depths.at(0);
}

TEST(ChromeReader, CompleteEventsWithArgsBecomeSpansInLanes) {
  const std::string body = R"({"displayTimeUnit":"ns","traceEvents":[
{"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"run 7 lenet"}},
{"name":"conv1","cat":"kernel","ph":"X","ts":1.5,"dur":2.25,"pid":7,"tid":0,"args":{"device":"cpu","op":"Conv","detail":"onednn","node":4,"bytes":1024,"flops":2e6}},
{"name":"relu","cat":"kernel","ph":"X","ts":10,"dur":1,"pid":7,"tid":1,"args":{"device":"cpu","op":"Relu","node":5,"nested":{"x":[1,2,{"y":3}]}}},
{"name":"compile","cat":"stage","ph":"X","ts":0,"dur":100,"pid":8,"tid":2}
]})";
  auto l = load_chrome_trace(temp_file("complete.json", body));
  ASSERT_TRUE(l) << l.error().to_string();
  EXPECT_TRUE(l->warnings.empty());
  const TimelineModel& m = *l->model;
  ASSERT_EQ(m.lanes().size(), 3u);
  EXPECT_EQ(m.lanes()[0].label, "cpu / thread 0");
  EXPECT_EQ(m.lanes()[1].label, "cpu / thread 1");
  EXPECT_EQ(m.lanes()[2].label, "pid 8 / thread 2");
  const Track& t = depth0(m, 0);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(m.strings().text(t.name[0]), "conv1");
  EXPECT_EQ(m.strings().text(t.op[0]), "Conv");
  EXPECT_EQ(m.strings().text(t.detail[0]), "onednn");
  EXPECT_EQ(t.node[0], 4);
  EXPECT_EQ(t.start_ns[0], 1500);
  EXPECT_EQ(t.end_ns[0], 3750);
  EXPECT_EQ(t.bytes[0], 1024);
  EXPECT_FLOAT_EQ(t.flops[0], 2e6f);
  EXPECT_EQ(t.kind[0], static_cast<uint8_t>(observe::Span::Kind::kKernel));
  EXPECT_EQ(depth0(m, 1).node[0], 5);
  EXPECT_EQ(depth0(m, 2).kind[0], static_cast<uint8_t>(observe::Span::Kind::kStage));
  EXPECT_EQ(depth0(m, 2).end_ns[0], 100000);
}

TEST(ChromeReader, BareArrayBeginEndPairsAndThreadNames) {
  const std::string body = R"([
{"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"worker"}},
{"name":"outer","ph":"B","ts":0,"pid":1,"tid":3},
{"name":"inner","ph":"B","ts":2,"pid":1,"tid":3},
{"ph":"E","ts":5,"pid":1,"tid":3},
{"ph":"E","ts":9,"pid":1,"tid":3},
{"name":"lonely","ph":"B","ts":20,"pid":1,"tid":3}
])";
  auto l = load_chrome_trace(temp_file("pairs.json", body));
  ASSERT_TRUE(l) << l.error().to_string();
  const TimelineModel& m = *l->model;
  ASSERT_EQ(m.lanes().size(), 1u);
  EXPECT_EQ(m.lanes()[0].label, "pid 1 / worker");
  ASSERT_EQ(m.lanes()[0].depths.size(), 2u);
  EXPECT_EQ(m.strings().text(depth0(m, 0).name[0]), "outer");
  EXPECT_EQ(depth0(m, 0).end_ns[0], 9000);
  EXPECT_EQ(m.strings().text(m.lanes()[0].depths[1].name[0]), "inner");
  EXPECT_EQ(m.lanes()[0].depths[1].start_ns[0], 2000);
  EXPECT_EQ(m.lanes()[0].depths[1].end_ns[0], 5000);
  ASSERT_EQ(l->warnings.size(), 1u);  // the unclosed "lonely"
  EXPECT_NE(l->warnings[0].find("without their pair"), std::string::npos);
}

TEST(ChromeReader, CountersBecomeCurves) {
  const std::string body = R"({"traceEvents":[
{"name":"k","ph":"X","ts":0,"dur":1,"pid":1,"tid":0},
{"name":"memory cpu","ph":"C","ts":1,"pid":1,"tid":0,"args":{"bytes":100}},
{"name":"memory cpu","ph":"C","ts":3,"pid":1,"tid":0,"args":{"bytes":40}},
{"name":"q","ph":"C","ts":2,"pid":1,"args":{"a":1,"b":2.5}}
]})";
  auto l = load_chrome_trace(temp_file("counters.json", body));
  ASSERT_TRUE(l) << l.error().to_string();
  const auto& c = l->model->counters();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].name, "memory cpu");
  EXPECT_EQ(c[0].time_ns, (std::vector<int64_t>{1000, 3000}));
  EXPECT_EQ(c[0].value, (std::vector<double>{100, 40}));  // absolute, not summed
  EXPECT_EQ(c[1].name, "q a");
  EXPECT_EQ(c[2].name, "q b");
  EXPECT_EQ(c[2].value, (std::vector<double>{2.5}));
}

// A trace of n "X" events, one per line, and the byte offset just past each event's closing brace.
std::string numbered_trace(int n, std::vector<size_t>* event_ends) {
  std::string s = "{\"traceEvents\":[\n";
  for (int i = 0; i < n; ++i) {
    if (i) s += ",\n";
    s += "{\"name\":\"k" + std::to_string(i) + "\",\"ph\":\"X\",\"ts\":" + std::to_string(i * 10) +
         ",\"dur\":5,\"pid\":1,\"tid\":" + std::to_string(i % 2) +
         ",\"args\":{\"op\":\"Op\",\"node\":" + std::to_string(i) + "}}";
    event_ends->push_back(s.size());
  }
  s += "\n]}\n";
  return s;
}

TEST(ChromeReader, ATraceCutAtAnyByteKeepsEveryCompleteEventBeforeTheCut) {
  std::vector<size_t> ends;
  const std::string full = numbered_trace(30, &ends);
  for (size_t cut = 1; cut < full.size(); ++cut) {
    const std::string path = temp_file("cut.json", full.substr(0, cut));
    auto l = load_chrome_trace(path);
    const size_t complete = static_cast<size_t>(
        std::count_if(ends.begin(), ends.end(), [&](size_t e) { return e <= cut; }));
    if (complete == 0) {
      EXPECT_FALSE(l) << "cut " << cut;
      continue;
    }
    ASSERT_TRUE(l) << "cut " << cut << ": " << l.error().to_string();
    EXPECT_EQ(l->model->span_count(), complete) << "cut " << cut;
    if (cut < full.size() - 1) {  // the last byte is only the final newline
      ASSERT_EQ(l->warnings.size(), 1u) << "cut " << cut;
      const std::string& w = l->warnings[0];
      EXPECT_EQ(w.rfind("cut.json: cut short at byte ", 0), 0u) << w;
      EXPECT_NE(
          w.find("showing the " + thousands(static_cast<int64_t>(complete)) + " events before it"),
          std::string::npos)
          << w;
    }
  }
}

TEST(ChromeReader, TheWarningSaysWhereTheTraceEnded) {
  std::vector<size_t> ends;
  const std::string full = numbered_trace(3, &ends);
  auto inside = load_chrome_trace(temp_file("inside.json", full.substr(0, ends[1] - 4)));
  ASSERT_TRUE(inside);
  EXPECT_EQ(inside->warnings.at(0),
            "inside.json: cut short at byte " + std::to_string(ends[1] - 4) +
                " (JSON ended inside an event); showing the 1 events before it");
  auto between = load_chrome_trace(temp_file("between.json", full.substr(0, ends[1] + 1)));
  ASSERT_TRUE(between);
  EXPECT_NE(between->warnings.at(0).find("JSON ended between events"), std::string::npos);
  auto garbage = load_chrome_trace(
      temp_file("garbage_mid.json", full.substr(0, ends[1]) + ",{\"name\":@@@}]}"));
  ASSERT_TRUE(garbage);
  EXPECT_NE(garbage->warnings.at(0).find("invalid JSON"), std::string::npos);
  EXPECT_EQ(garbage->model->span_count(), 2u);
}

TEST(ChromeReader, GarbageEmptyAndMissingFilesAreClearErrors) {
  auto missing = load_chrome_trace("/nonexistent/trace.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);
  auto empty = load_chrome_trace(temp_file("empty.json", ""));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("empty"), std::string::npos);
  auto junk = load_chrome_trace(temp_file("junk.json", "\x89PNG\r\n\x1a\n binary"));
  ASSERT_FALSE(junk);
  EXPECT_NE(junk.error().message.find("not a Chrome trace"), std::string::npos);
  auto no_events = load_chrome_trace(temp_file("obj.json", R"({"foo":[1,2,3]})"));
  ASSERT_FALSE(no_events);
  EXPECT_NE(no_events.error().message.find("no trace events"), std::string::npos);
  auto nothing =
      load_chrome_trace(temp_file("nothing.json", R"({"traceEvents":[{"ph":"i","ts":1}]})"));
  ASSERT_FALSE(nothing);
  EXPECT_NE(nothing.error().message.find("no spans"), std::string::npos);
  auto bad_values = load_chrome_trace(
      temp_file("bad.json", R"([{"ph":"X","ts":"x","dur":1},{"ph":"X","ts":1e300,"dur":1},
      {"ph":"X","ts":1,"dur":-5},{"name":7,"ph":"X","ts":2,"dur":1,"pid":[1],"tid":{"a":1},"args":[1]}])"));
  ASSERT_TRUE(bad_values) << bad_values.error().to_string();
  EXPECT_EQ(bad_values->model->span_count(), 1u);  // only the last one has usable times
}

TEST(ChromeReader, RandomMutationsNeverCrash) {
  std::vector<size_t> ends;
  const std::string full = numbered_trace(20, &ends);
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::string s = full;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) s[rng() % s.size()] = static_cast<char>(rng() % 256);
    auto l = load_chrome_trace(temp_file("mutated.json", s));
    if (l) {
      EXPECT_LE(l->model->span_count(), 20u);
    }
  }
}

TEST(ChromeReader, StopsAtTheEventLimitWithAWarning) {
  std::vector<size_t> ends;
  ChromeLimits limits;
  limits.max_events = 5;
  auto l = load_chrome_trace(temp_file("limit.json", numbered_trace(20, &ends)), limits);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->model->span_count(), 5u);
  ASSERT_EQ(l->warnings.size(), 1u);
  EXPECT_NE(l->warnings[0].find("stopped after 5 events"), std::string::npos);
}

TEST(ChromeReader, Thousands) {
  EXPECT_EQ(thousands(0), "0");
  EXPECT_EQ(thousands(999), "999");
  EXPECT_EQ(thousands(41233), "41,233");
  EXPECT_EQ(thousands(1234567), "1,234,567");
  EXPECT_EQ(thousands(-1000), "-1,000");
}

}  // namespace
}  // namespace tessera::insight::timeline
