// Tests for insight/chrome_import.cpp: Chrome traces (PyTorch's profiler export and the like) read
// as engine spans for a run logged from Python, and clear errors for files that are not traces.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "insight/chrome_import.h"

namespace tessera::insight {
namespace {

std::string write(const std::string& name, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_chrome_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  std::ofstream(p, std::ios::binary) << body;
  return p;
}

TEST(ChromeImport, ReadsCompleteEventsAndBeginEndPairs) {
  const std::string p = write("t.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "ts": 10.5, "dur": 2.25, "pid": 7, "tid": 7,
     "args": {"bytes": 64}},
    {"ph": "B", "cat": "python_function", "name": "train_step", "ts": 1, "pid": 7, "tid": 8},
    {"ph": "X", "cat": "kernel", "name": "sgemm", "ts": 12, "dur": "3", "pid": 0, "tid": 2, "args": {"device": 1}},
    {"ph": "E", "ts": 20, "pid": 7, "tid": 8},
    {"ph": "E", "ts": 21, "pid": 7, "tid": 9},
    {"ph": "C", "name": "memory", "ts": 5, "pid": 7, "args": {"bytes": 10}},
    {"ph": "i", "name": "mark", "ts": 6, "pid": 7, "tid": 7}
  ]})");
  auto t = read_chrome_spans(p);
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  ASSERT_EQ(t->spans.size(), 3u);
  EXPECT_EQ(t->skipped, 3);  // the counter, the instant, an E without its B
  const observe::Span& step = t->spans[0];  // sorted by start
  EXPECT_EQ(step.name, "train_step");
  EXPECT_EQ(step.kind, observe::Span::Kind::kStep);
  EXPECT_EQ(step.start_ns, 1000);
  EXPECT_EQ(step.end_ns, 20000);
  const observe::Span& conv = t->spans[1];
  EXPECT_EQ(conv.kind, observe::Span::Kind::kKernel);
  EXPECT_EQ(conv.op, "aten::conv2d");
  EXPECT_EQ(conv.device, "cpu");
  EXPECT_EQ(conv.start_ns, 10500);
  EXPECT_EQ(conv.end_ns, 12750);
  EXPECT_EQ(conv.bytes, 64);
  EXPECT_NE(conv.thread, step.thread);  // (pid, tid) lanes
  EXPECT_EQ(t->spans[2].device, "cuda:1");
  EXPECT_EQ(t->spans[2].end_ns - t->spans[2].start_ns, 3000);
}

TEST(ChromeImport, BareArrayIsATrace) {
  auto t = read_chrome_spans(write("a.json", R"([{"ph": "X", "name": "k", "ts": 0, "dur": 1}])"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->spans.size(), 1u);
}

TEST(ChromeImport, ErrorsNameTheFileAndTheReason) {
  auto missing = read_chrome_spans("/nonexistent/trace.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().to_string().find("/nonexistent/trace.json"), std::string::npos);
  auto cut = read_chrome_spans(write("cut.json", R"({"traceEvents": [{"ph": "X", "ts": 1)"));
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().to_string().find("byte"), std::string::npos);
  EXPECT_NE(cut.error().to_string().find("cut.json"), std::string::npos);
  auto shape = read_chrome_spans(write("obj.json", R"({"events": []})"));
  ASSERT_FALSE(shape.has_value());
  EXPECT_NE(shape.error().message.find("traceEvents"), std::string::npos);
  auto none = read_chrome_spans(write("none.json", R"([{"ph": "M", "name": "process_name"}])"));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("no spans"), std::string::npos);
  auto bad = read_chrome_spans(write("bad.json", R"([1, 2])"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("event 0"), std::string::npos);
  auto nots = read_chrome_spans(write("nots.json", R"([{"ph": "X", "name": "k", "ts": "soon"}])"));
  ASSERT_FALSE(nots.has_value());
  EXPECT_NE(nots.error().message.find("ts"), std::string::npos);
  auto big = read_chrome_spans(write("big.json", R"([{"ph": "X", "ts": 0}, {"ph": "X", "ts": 1}])"), 1);
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message.find("more than"), std::string::npos);
}

}  // namespace
TEST(ChromeImport, SpansWithNegativeDurationsOrTimesBeyondAnyClockAreSkippedAndCounted) {
  const std::string p = write("bad_spans.json", R"({"traceEvents": [
    {"ph": "X", "name": "good", "ts": 10, "dur": 2, "pid": 1, "tid": 1},
    {"ph": "X", "name": "negative", "ts": 10, "dur": -5, "pid": 1, "tid": 1},
    {"ph": "X", "name": "far", "ts": 1e300, "dur": 1, "pid": 1, "tid": 1},
    {"ph": "X", "name": "long", "ts": 10, "dur": 1e300, "pid": 1, "tid": 1},
    {"ph": "B", "name": "backwards", "ts": 50, "pid": 1, "tid": 2},
    {"ph": "E", "ts": 40, "pid": 1, "tid": 2}
  ]})");
  auto t = read_chrome_spans(p);
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  ASSERT_EQ(t->spans.size(), 1u);
  EXPECT_EQ(t->spans[0].name, "good");
  EXPECT_EQ(t->invalid, 4);
  EXPECT_NE(t->first_invalid.find("event 1 ('negative')"), std::string::npos) << t->first_invalid;
  for (const observe::Span& s : t->spans) EXPECT_GE(s.end_ns, s.start_ns);

  const std::string only_bad = write("only_bad.json", R"([{"ph": "X", "name": "n", "ts": 1, "dur": -1}])");
  auto none = read_chrome_spans(only_bad);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("no valid spans"), std::string::npos) << none.error().message;
}

TEST(ChromeImport, AFifoIsRefusedWithoutBlocking) {
  const std::string p = write("placeholder", "");
  const std::string fifo = p + ".fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto t = read_chrome_spans(fifo);  // opening it would wait for a writer forever
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().where, fifo);
  EXPECT_NE(t.error().message.find("FIFO"), std::string::npos) << t.error().message;
  std::filesystem::remove(fifo);
}

}  // namespace tessera::insight
