// Tests for loading a recorded run (insight/timeline/run_loader.cpp): a real database written by
// insight::Recorder, and the errors the view shows instead of a timeline.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "insight/recorder.h"
#include "insight/timeline/loaders.h"

namespace tessera::insight::timeline {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_timeline_run_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
  return p.string();
}

observe::Span span(observe::Span::Kind kind, const std::string& name, const std::string& op,
                   int node, int thread, int64_t s, int64_t e) {
  observe::Span sp;
  sp.kind = kind, sp.name = name, sp.op = op, sp.device = "cpu", sp.detail = "ref", sp.node = node;
  sp.thread = thread, sp.start_ns = s, sp.end_ns = e, sp.bytes = 64, sp.flops = 1000;
  return sp;
}

// Records one run with spans (or none) and memory events; returns its id.
int64_t record(const std::string& path, const std::string& name, bool with_spans) {
  auto rec = Recorder::open(path);
  EXPECT_TRUE(rec) << rec.error().to_string();
  RunInfo info;
  info.name = name, info.kind = "run", info.command = "test";
  auto id = (*rec)->start_run(info);
  EXPECT_TRUE(id);
  if (with_spans) {
    using K = observe::Span::Kind;
    (*rec)->on_span(span(K::kStage, "execute", "", -1, 0, 1000, 9000));
    (*rec)->on_span(span(K::kKernel, "conv1", "Conv", 3, 0, 2000, 5000));
    (*rec)->on_span(span(K::kKernel, "relu1", "Relu", 4, 0, 5500, 6000));
    (*rec)->on_span(span(K::kKernel, "conv2", "Conv", 6, 1, 2500, 4000));
    (*rec)->on_memory({"cpu", "arena", 1500, 4096});
    (*rec)->on_memory({"cpu", "arena", 8000, -4096});
  }
  EXPECT_TRUE((*rec)->finish_run(RunStatus::kFinished));
  return *id;
}

TEST(RunLoader, LoadsTheSpansAndMemoryOfARecordedRun) {
  const std::string db = temp_path("runs.db");
  record(db, "first", true);
  const int64_t second = record(db, "lenet", true);
  auto l = load_run(db, "last");
  ASSERT_TRUE(l) << l.error().to_string();
  EXPECT_EQ(l->title, "run " + std::to_string(second) + " 'lenet' (run, finished)");
  const TimelineModel& m = *l->model;
  EXPECT_EQ(m.span_count(), 4u);
  ASSERT_EQ(m.lanes().size(), 2u);
  EXPECT_EQ(m.lanes()[0].label, "cpu / thread 0");
  ASSERT_EQ(m.lanes()[0].depths.size(), 2u);  // execute > conv1, relu1
  const Track& kernels = m.lanes()[0].depths[1];
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(m.strings().text(kernels.name[0]), "conv1");
  EXPECT_EQ(kernels.node[1], 4);
  EXPECT_EQ(kernels.start_ns[1], 5500);
  EXPECT_EQ(kernels.bytes[0], 64);
  ASSERT_EQ(m.counters().size(), 1u);
  EXPECT_EQ(m.counters()[0].name, "memory cpu");
  EXPECT_EQ(m.counters()[0].value, (std::vector<double>{4096, 0}));
  auto by_name = load_run(db, "first");
  ASSERT_TRUE(by_name) << by_name.error().to_string();
  EXPECT_NE(by_name->title.find("'first'"), std::string::npos);
}

TEST(RunLoader, ErrorsAreClearMessages) {
  const std::string missing = temp_path("missing.db");
  auto no_db = load_run(missing, "last");
  ASSERT_FALSE(no_db);
  EXPECT_NE(no_db.error().to_string().find("no insight database"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(missing)) << "a viewer must not create a database";

  const std::string corrupt = temp_path("corrupt.db");
  std::ofstream(corrupt, std::ios::binary) << std::string(8192, '\x5a');
  auto bad = load_run(corrupt, "last");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find(corrupt), std::string::npos) << bad.error().to_string();

  const std::string db = temp_path("few.db");
  const int64_t quiet = record(db, "quiet", false);
  auto unknown = load_run(db, "999");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().to_string().find("999"), std::string::npos)
      << unknown.error().to_string();
  auto empty = load_run(db, std::to_string(quiet));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().to_string().find("recorded no spans"), std::string::npos)
      << empty.error().to_string();
}

}  // namespace
}  // namespace tessera::insight::timeline
