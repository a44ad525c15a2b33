// Tests for the insight queries (insight/query.cpp): run lookup, metric summaries, the spans of a
// time window, statistics by op and the Chrome trace export, on hand-made runs with known answers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "insight/query.h"
#include "insight/recorder.h"

namespace tessera::insight {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_query_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
  return p.string();
}

observe::Span span(observe::Span::Kind kind, const std::string& op, int64_t start, int64_t end, int thread = 0) {
  observe::Span s;
  s.kind = kind;
  s.name = op.empty() ? "optimise" : op + "_1";
  s.op = op;
  s.device = "cpu";
  s.thread = thread;
  s.start_ns = start;
  s.end_ns = end;
  return s;
}

// Two runs: "a" (id 1) with spans, memory and metrics; "b" (id 2) with nothing.
class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = temp_path("q.db");
    using K = observe::Span::Kind;
    {
      auto rec = Recorder::open(path_);
      ASSERT_TRUE(rec.has_value());
      RunInfo i;
      i.name = "a";
      i.graph_name = "g";
      ASSERT_EQ(*(*rec)->start_run(i), 1);
      // Conv: 10, 20, 30 ns; Relu: 5 ns; one stage span of 1000 ns.
      (*rec)->on_span(span(K::kStage, "", 0, 1000));
      (*rec)->on_span(span(K::kKernel, "Conv", 100, 110, 0));
      (*rec)->on_span(span(K::kKernel, "Conv", 200, 220, 1));
      (*rec)->on_span(span(K::kKernel, "Relu", 225, 230, 0));
      (*rec)->on_span(span(K::kKernel, "Conv", 400, 430, 0));
      (*rec)->on_memory({"cpu", "arena", 50, 1000});
      (*rec)->on_memory({"cpu", "arena", 900, -400});
      for (auto [step, loss, acc] : {std::tuple{1, 2.0, 0.3}, {2, 0.5, 0.8}, {3, 0.9, 0.7}}) {
        (*rec)->on_metric("loss", step, 0, loss);
        (*rec)->on_metric("accuracy", step, 0, acc);
      }
      ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
    }
    {
      auto rec = Recorder::open(path_);
      RunInfo i;
      i.name = "b";
      ASSERT_EQ(*(*rec)->start_run(i), 2);
      ASSERT_TRUE((*rec)->finish_run(RunStatus::kFailed, "boom").is_ok());
    }
    auto db = Database::open(path_);
    ASSERT_TRUE(db.has_value());
    db_ = std::make_unique<Database>(std::move(*db));
  }
  std::string path_;
  std::unique_ptr<Database> db_;
};

TEST_F(QueryTest, ListsNewestFirstAndResolvesIdsNamesAndLast) {
  auto runs = list_runs(*db_);
  ASSERT_TRUE(runs.has_value());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "b");
  EXPECT_EQ((*runs)[0].status, "failed");
  EXPECT_EQ((*runs)[0].error, "boom");
  EXPECT_EQ((*runs)[1].status, "finished");
  EXPECT_EQ(*resolve_run(*db_, "1"), 1);
  EXPECT_EQ(*resolve_run(*db_, "a"), 1);
  EXPECT_EQ(*resolve_run(*db_, "last"), 2);
  auto missing = resolve_run(*db_, "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("no run 'nope'"), std::string::npos);
  EXPECT_EQ(missing.error().where, path_);
  EXPECT_FALSE(resolve_run(*db_, "99").has_value());
}

TEST_F(QueryTest, DetailsCountWhatTheRunRecorded) {
  auto d = run_details(*db_, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->spans, 5);
  EXPECT_EQ(d->metrics, 6);
  EXPECT_EQ(d->memory_events, 2);
  EXPECT_EQ(d->snapshots, 0);
  EXPECT_FALSE(run_details(*db_, 3).has_value());
}

TEST_F(QueryTest, MetricSummaryTakesLastAndBest) {
  auto m = run_metrics(*db_, 1);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->size(), 6u);
  auto s = summarize_metrics(*m);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "accuracy");  // by name
  EXPECT_DOUBLE_EQ(s[0].final_value, 0.7);
  EXPECT_DOUBLE_EQ(s[0].best_value, 0.8);  // higher is better
  EXPECT_EQ(s[0].best_step, 2);
  EXPECT_EQ(s[1].name, "loss");
  EXPECT_DOUBLE_EQ(s[1].final_value, 0.9);
  EXPECT_DOUBLE_EQ(s[1].best_value, 0.5);  // lower is better
  EXPECT_EQ(s[1].best_step, 2);
  EXPECT_EQ(s[1].count, 3);
}

TEST_F(QueryTest, SpansOfAWindowIncludeThoseStartedBeforeIt) {
  // [205, 300): the stage (0..1000), Conv 200..220 (starts before), Relu 225..230.
  auto w = spans_in_window(*db_, 1, 205, 300);
  ASSERT_TRUE(w.has_value());
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ((*w)[0].kind, observe::Span::Kind::kStage);
  EXPECT_EQ((*w)[1].op, "Conv");
  EXPECT_EQ((*w)[1].start_ns, 200);
  EXPECT_EQ((*w)[1].thread, 1);
  EXPECT_EQ((*w)[2].op, "Relu");
  // [110, 200): Conv 100..110 ends at 110 (not inside), Conv 200.. starts at 200 (not inside).
  auto empty = spans_in_window(*db_, 1, 110, 200);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->size(), 1u);  // only the stage
}

TEST_F(QueryTest, StatisticsByOp) {
  auto s = op_stats(*db_, 1);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[0].op, "<stage>");
  EXPECT_EQ((*s)[0].total_ns, 1000);
  EXPECT_EQ((*s)[1].op, "Conv");
  EXPECT_EQ((*s)[1].count, 3);
  EXPECT_EQ((*s)[1].total_ns, 60);
  EXPECT_EQ((*s)[1].min_ns, 10);
  EXPECT_EQ((*s)[1].max_ns, 30);
  EXPECT_EQ((*s)[2].op, "Relu");
  EXPECT_EQ((*s)[2].total_ns, 5);
}

TEST_F(QueryTest, ChromeTraceIsValidTraceEventJson) {
  const std::string file = temp_path("trace.json");
  auto n = export_chrome_trace(*db_, 1, file);
  ASSERT_TRUE(n.has_value()) << n.error().to_string();
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in);  // throws (fails the test) when invalid
  ASSERT_TRUE(j.contains("traceEvents"));
  const auto& ev = j["traceEvents"];
  EXPECT_EQ(static_cast<int64_t>(ev.size()), *n);
  int complete = 0, counters = 0;
  for (const auto& e : ev) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
    if (e["ph"] == "X") {
      ++complete;
      for (const char* k : {"cat", "ts", "dur", "tid", "args"}) EXPECT_TRUE(e.contains(k)) << k;
    }
    counters += e["ph"] == "C";
  }
  EXPECT_EQ(complete, 5);
  EXPECT_EQ(counters, 2);
  // The Conv of thread 1: 200 ns after the first span, 20 ns long, in microseconds.
  bool found = false;
  for (const auto& e : ev)
    if (e["ph"] == "X" && e["tid"] == 1) {
      found = true;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.2);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.02);
      EXPECT_EQ(e["args"]["op"], "Conv");
      EXPECT_EQ(e["cat"], "kernel");
    }
  EXPECT_TRUE(found);
  // Memory counter is a running total: 1000, then 600.
  std::vector<int64_t> totals;
  for (const auto& e : ev)
    if (e["ph"] == "C") totals.push_back(e["args"]["bytes"].get<int64_t>());
  EXPECT_EQ(totals, (std::vector<int64_t>{1000, 600}));
  EXPECT_FALSE(export_chrome_trace(*db_, 1, "/nonexistent/dir/t.json").has_value());
}

TEST(ChromeTrace, EscapesNamesThatNeedIt) {
  const std::string path = temp_path("escape.db");
  {
    auto rec = Recorder::open(path);
    ASSERT_TRUE(rec.has_value());
    ASSERT_TRUE((*rec)->start_run(RunInfo{}).has_value());
    observe::Span s = span(observe::Span::Kind::kKernel, "Conv", 10, 20);
    s.name = "a \"quoted\" \\ name\nwith\ttabs \x01 and \xc3\xa9";
    (*rec)->on_span(s);
    ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  }
  auto db = Database::open(path);
  ASSERT_TRUE(db.has_value());
  const std::string file = temp_path("escape.json");
  ASSERT_TRUE(export_chrome_trace(*db, 1, file).has_value());
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["traceEvents"][1]["name"], "a \"quoted\" \\ name\nwith\ttabs \x01 and \xc3\xa9");
}

}  // namespace
}  // namespace tessera::insight
