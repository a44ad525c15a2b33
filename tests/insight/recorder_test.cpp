// Tests for the recorder (insight/recorder.cpp): what a run records, batched writes visible to a
// second connection while the run writes (WAL), heartbeats, dropping under overload, lineage, and
// a real SIGKILL of a writing process.
#include <gtest/gtest.h>

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "insight/query.h"
#include "insight/recorder.h"

namespace tessera::insight {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_recorder_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
  return p.string();
}

// An independent reader of the file.
class Reader {
 public:
  explicit Reader(const std::string& path) { sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr); }
  ~Reader() { sqlite3_close(db_); }
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    std::string out = "<no row>";
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return std::string("<error> ") + sqlite3_errmsg(db_);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    sqlite3_finalize(st);
    return out;
  }
  int64_t number(const std::string& sql) { return std::stoll(text(sql)); }

 private:
  sqlite3* db_ = nullptr;
};

observe::Span span(const std::string& op, int64_t start, int64_t end, int thread = 0) {
  observe::Span s;
  s.kind = observe::Span::Kind::kKernel;
  s.name = op + "_node";
  s.op = op;
  s.device = "cpu";
  s.detail = "ref";
  s.node = 7;
  s.thread = thread;
  s.start_ns = start;
  s.end_ns = end;
  s.bytes = 1024;
  s.flops = 2e6;
  return s;
}

RunInfo info(const std::string& name) {
  RunInfo i;
  i.name = name;
  i.kind = "train";
  i.command = "tessera train lenet.json --lr 0.1";
  i.graph_name = "lenet";
  i.engine_version = "0.test";
  i.seed = 42;
  i.hyperparams = {{"lr", "0.1"}, {"batch", "64"}};
  return i;
}

TEST(Recorder, RecordsEveryPartOfARun) {
  const std::string path = temp_path("run.db");
  auto rec = Recorder::open(path);
  ASSERT_TRUE(rec.has_value()) << rec.error().to_string();
  auto run = (*rec)->start_run(info("first"));
  ASSERT_TRUE(run.has_value()) << run.error().to_string();
  Recorder& r = **rec;
  r.on_metric("loss", 1, 0, 2.5);
  r.on_metric("loss", 2, 0, 1.5);
  r.on_span(span("Conv", 100, 350));
  observe::MemoryEvent m{"cpu", "arena", 120, 4096};
  r.on_memory(m);
  observe::Snapshot snap;
  snap.stage = "optimise";
  snap.pass = "fuse";
  snap.index = 3;
  snap.ir_text = "graph g { }";
  snap.hash = 0xabcdef;
  snap.nodes_before = 10;
  snap.nodes_after = 8;
  snap.diagnostics = {"fused 2 convs"};
  snap.provenance = {{5, {1, 2}}, {6, {3}}};
  r.on_snapshot(snap);
  r.on_snapshot(snap);  // the same IR again: stored once
  const std::string h1 = r.log_graph("lenet", "tir", "graph lenet {}");
  const std::string h2 = r.log_graph("lenet", "tir", "graph lenet {}", "trained");
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(h1.size(), 16u);
  r.log_dataset("train", "xxh3:1234", "/data/mnist", 60000);
  r.log_checkpoint("/tmp/ck/step-2.tsc", 2, "00000000000000ff");
  r.log_hyperparam("epochs", "3");
  ASSERT_TRUE(r.finish_run(RunStatus::kFinished).is_ok());

  Reader db(path);
  const std::string id = std::to_string(*run);
  EXPECT_EQ(db.text("SELECT status || '|' || name || '|' || kind || '|' || seed || '|' || engine_version FROM runs WHERE id = " + id),
            "finished|first|train|42|0.test");
  EXPECT_EQ(db.number("SELECT pid FROM runs WHERE id = " + id), getpid());
  EXPECT_EQ(db.text("SELECT group_concat(key || '=' || value, ',') FROM (SELECT * FROM hyperparams ORDER BY key)"),
            "batch=64,epochs=3,lr=0.1");
  EXPECT_EQ(db.text("SELECT group_concat(value, ',') FROM (SELECT value FROM metrics ORDER BY step)"), "2.5,1.5");
  EXPECT_EQ(db.text("SELECT o.text || '|' || s.kind || '|' || start_ns || '|' || end_ns || '|' || bytes || '|' || node "
                    "FROM spans s JOIN strings o ON o.id = s.op"),
            "Conv|2|100|350|1024|7");
  EXPECT_EQ(db.text("SELECT d.text || '|' || t.text || '|' || n.text FROM spans s JOIN strings d ON d.id = s.device "
                    "JOIN strings t ON t.id = s.detail JOIN strings n ON n.id = s.name"),
            "cpu|ref|Conv_node");
  EXPECT_EQ(db.number("SELECT max_span_ns FROM runs WHERE id = " + id), 250);
  EXPECT_EQ(db.number("SELECT bytes FROM memory_events"), 4096);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM snapshots"), 2);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM ir_texts"), 1);
  EXPECT_EQ(db.text("SELECT graph_hash FROM snapshots LIMIT 1"), "0000000000abcdef");
  EXPECT_EQ(db.text("SELECT diagnostics FROM snapshots LIMIT 1"), "fused 2 convs\n");
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM snapshot_provenance"), 6);  // 3 edges x 2 snapshots
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM graphs"), 1);
  EXPECT_EQ(db.text("SELECT group_concat(role, ',') FROM (SELECT role FROM run_graphs ORDER BY role)"), "input,trained");
  EXPECT_EQ(db.text("SELECT fingerprint || '|' || examples FROM datasets"), "xxh3:1234|60000");
  EXPECT_EQ(db.text("SELECT path || '|' || step FROM checkpoints"), "/tmp/ck/step-2.tsc|2");
}

TEST(Recorder, BatchedWritesAreVisibleToAnotherConnectionWhileTheRunWrites) {
  const std::string path = temp_path("live.db");
  RecorderOptions o;
  o.flush_interval_ms = 50;
  auto rec = Recorder::open(path, o);
  ASSERT_TRUE(rec.has_value());
  ASSERT_TRUE((*rec)->start_run(info("live")).has_value());
  Reader db(path);
  EXPECT_EQ(db.text("PRAGMA journal_mode"), "wal");
  for (int i = 0; i < 100; ++i) (*rec)->on_span(span("Relu", i * 10, i * 10 + 5));
  // No flush(): the writer commits on its own within its interval.
  int64_t seen = 0;
  for (int tries = 0; tries < 100 && seen < 100; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    seen = db.number("SELECT COUNT(*) FROM spans");
  }
  EXPECT_EQ(seen, 100);
  EXPECT_EQ(db.text("SELECT status FROM runs"), "running");
  // A reader in the middle of a read transaction does not stop the writer (WAL).
  Reader holder(path);
  EXPECT_EQ(holder.text("BEGIN"), "<no row>");
  EXPECT_EQ(holder.number("SELECT COUNT(*) FROM spans"), 100);
  for (int i = 0; i < 50; ++i) (*rec)->on_span(span("Relu", 5000 + i, 5001 + i));
  ASSERT_TRUE((*rec)->flush().is_ok());
  EXPECT_EQ(holder.number("SELECT COUNT(*) FROM spans"), 100);  // its snapshot
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM spans"), 150);
  holder.text("COMMIT");
  ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
}

TEST(Recorder, SpansFromManyThreadsAllArrive) {
  const std::string path = temp_path("threads.db");
  auto rec = Recorder::open(path);
  ASSERT_TRUE(rec.has_value());
  ASSERT_TRUE((*rec)->start_run(info("threads")).has_value());
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) (*rec)->on_span(span(t % 2 ? "Add" : "Mul", i, i + 1, t));
    });
  for (auto& w : workers) w.join();
  ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  Reader db(path);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM spans"), 40000);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM spans s JOIN strings o ON o.id = s.op WHERE o.text = 'Add'"), 20000);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM strings"), 6);  // Add, Add_node, Mul, Mul_node, cpu, ref: once each
  // The writer's running totals agree with the spans: 20000 of each op, 1 ns each.
  EXPECT_EQ(db.text("SELECT group_concat(x, ',') FROM (SELECT o.text || '=' || count || '/' || total_ns || '/' || min_ns "
                    "|| '/' || max_ns AS x FROM span_stats st JOIN strings o ON o.id = st.op ORDER BY o.text)"),
            "Add=20000/20000/1/1,Mul=20000/20000/1/1");
  EXPECT_EQ(db.number("SELECT COUNT(DISTINCT thread) FROM spans"), 4);
  EXPECT_EQ((*rec)->dropped_spans(), 0);
}

TEST(Recorder, DropsSpansBeyondTheQueueButNeverMetrics) {
  const std::string path = temp_path("drop.db");
  RecorderOptions o;
  o.flush_interval_ms = 60000;  // the writer sleeps: everything waits in the queue
  o.batch_records = 1000000;
  o.max_queued_spans = 10;
  auto rec = Recorder::open(path, o);
  ASSERT_TRUE(rec.has_value());
  ASSERT_TRUE((*rec)->start_run(info("drop")).has_value());
  for (int i = 0; i < 25; ++i) (*rec)->on_span(span("Relu", i, i + 1));
  for (int i = 0; i < 30; ++i) (*rec)->on_metric("loss", i, 0, 1.0 / (i + 1));
  EXPECT_EQ((*rec)->dropped_spans(), 15);
  ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  Reader db(path);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM spans"), 10);
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM metrics"), 30);
  EXPECT_EQ(db.text("SELECT error FROM runs"), "15 trace events dropped (the writer fell behind)");
}

TEST(Recorder, HeartbeatAdvancesWhileIdle) {
  const std::string path = temp_path("heartbeat.db");
  RecorderOptions o;
  o.flush_interval_ms = 20;
  o.heartbeat_ms = 50;
  auto rec = Recorder::open(path, o);
  ASSERT_TRUE(rec.has_value());
  ASSERT_TRUE((*rec)->start_run(info("idle")).has_value());
  Reader db(path);
  const int64_t first = db.number("SELECT heartbeat_ns FROM runs");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t later = db.number("SELECT heartbeat_ns FROM runs");
  EXPECT_GT(later - first, 100'000'000);  // several beats in 300 ms
  ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
}

TEST(Recorder, ResumeLinksToTheCheckpointAnotherRunWrote) {
  const std::string path = temp_path("lineage.db");
  const std::string ck = temp_path("ck/step-100.tsc");
  int64_t first = 0, second = 0;
  {
    auto rec = Recorder::open(path);
    ASSERT_TRUE(rec.has_value());
    first = *(*rec)->start_run(info("base"));
    (*rec)->log_checkpoint(ck, 100, "0123456789abcdef");
    ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  }
  {
    auto rec = Recorder::open(path);
    ASSERT_TRUE(rec.has_value());
    second = *(*rec)->start_run(info("resumed"));
    (*rec)->add_lineage(LineageKind::kResumedFrom, "", ck);
    (*rec)->add_lineage(LineageKind::kFineTunedFrom, "", "/nowhere/else.tsc");
    (*rec)->add_lineage(LineageKind::kDerivedFrom, "aaaa", "bbbb", "studio edit");
    ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  }
  auto db = Database::open(path);
  ASSERT_TRUE(db.has_value());
  auto out = lineage_from(*db, second);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].kind, "resumed_from");
  EXPECT_EQ((*out)[0].to_type, "checkpoint");
  EXPECT_EQ((*out)[0].checkpoint.run, first);
  EXPECT_EQ((*out)[0].checkpoint.step, 100);
  EXPECT_EQ((*out)[0].checkpoint.path, ck);
  EXPECT_EQ((*out)[1].to_type, "checkpoint_path");  // no recorded run wrote it
  EXPECT_EQ((*out)[1].checkpoint.run, 0);
  auto in = lineage_into(*db, first);
  ASSERT_TRUE(in.has_value());
  ASSERT_EQ(in->size(), 1u);
  EXPECT_EQ((*in)[0].first, second);
  Reader r(path);
  EXPECT_EQ(r.text("SELECT from_id || '>' || to_id || '|' || note FROM lineage WHERE kind = 'derived_from'"),
            "aaaa>bbbb|studio edit");
}

TEST(Recorder, ARunNeverFinishedIsRecordedAsFailedAndTwoStartsAreRefused) {
  const std::string path = temp_path("unfinished.db");
  {
    auto rec = Recorder::open(path);
    ASSERT_TRUE(rec.has_value());
    ASSERT_TRUE((*rec)->start_run(info("a")).has_value());
    auto again = (*rec)->start_run(info("b"));
    ASSERT_FALSE(again.has_value());
    EXPECT_NE(again.error().message.find("already records run"), std::string::npos);
  }
  Reader db(path);
  EXPECT_EQ(db.text("SELECT status FROM runs"), "failed");
  EXPECT_EQ(db.number("SELECT COUNT(*) FROM runs"), 1);
}

TEST(Recorder, FileChecksumIsXxh3OfTheBytesAcrossReadChunks) {
  const std::string path = temp_path("blob.bin");
  std::string bytes(3 * (1 << 20) + 17, '\0');  // spans several of the checksum's 1 MiB reads
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  std::ofstream(path, std::ios::binary) << bytes;
  char expected[17];
  std::snprintf(expected, sizeof expected, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  auto sum = file_checksum(path);
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(*sum, expected);
  EXPECT_EQ(content_hash(bytes), expected);
  EXPECT_NE(content_hash("abc"), content_hash("abd"));
  EXPECT_FALSE(file_checksum(temp_path("missing.bin")).has_value());
}

TEST(Recorder, NanAndInfinityMetricsAreStoredAndTheBatchAroundThemKept) {
  const std::string path = temp_path("nan.db");
  int64_t run = -1;
  {
    auto rec = Recorder::open(path);
    ASSERT_TRUE(rec.has_value());
    run = *(*rec)->start_run(info("nan"));
    for (int i = 0; i < 299; ++i) (*rec)->on_metric("loss", i, 0, 1.0 / (i + 1));
    (*rec)->on_metric("loss", 299, 0, std::nan(""));  // a diverging loss: was "NOT NULL constraint failed"
    (*rec)->on_metric("grad_norm", 299, 0, INFINITY);
    (*rec)->on_metric("grad_norm", 300, 0, -INFINITY);
    ASSERT_TRUE((*rec)->flush().is_ok()) << (*rec)->flush().error().to_string();
    ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  }
  auto db = Database::open(path);
  ASSERT_TRUE(db.has_value());
  auto points = run_metrics(*db, run);
  ASSERT_TRUE(points.has_value());
  ASSERT_EQ(points->size(), 302u);  // all 299 of the batch kept
  std::map<std::pair<std::string, int64_t>, double> v;
  for (const MetricPoint& p : *points) v[{p.name, p.step}] = p.value;
  auto at = [&](const char* name, int64_t step) { return v[{name, step}]; };
  EXPECT_TRUE(std::isnan(at("loss", 299)));
  EXPECT_EQ(at("grad_norm", 299), INFINITY);
  EXPECT_EQ(at("grad_norm", 300), -INFINITY);
  EXPECT_DOUBLE_EQ(at("loss", 0), 1.0);
  // NaN is never the best; the final value is what was logged last.
  for (const MetricSummary& m : summarize_metrics(*points))
    if (m.name == "loss") {
      EXPECT_TRUE(std::isnan(m.final_value));
      EXPECT_DOUBLE_EQ(m.best_value, 1.0 / 299);
    }
  Reader r(path);
  EXPECT_EQ(r.text("SELECT status FROM runs"), "finished");
}

TEST(Recorder, ABatchMeetingAnotherWritersLockIsKeptAndWrittenOnceTheLockIsFree) {
  const std::string path = temp_path("busy.db");
  RecorderOptions o;
  o.open.busy_timeout_ms = 50;
  o.flush_interval_ms = 20;
  auto rec = Recorder::open(path, o);
  ASSERT_TRUE(rec.has_value());
  const int64_t run = *(*rec)->start_run(info("busy"));
  sqlite3* other = nullptr;  // another process's writer, holding the lock far past the busy timeout
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr), SQLITE_OK);
  for (int i = 0; i < 100; ++i) (*rec)->on_metric("loss", i, 0, i);
  Status st = (*rec)->flush();
  ASSERT_FALSE(st.is_ok());  // not committed yet, and said so
  EXPECT_NE(st.error().message.find("another process held the write lock"), std::string::npos) << st.error().message;
  for (int i = 100; i < 150; ++i) (*rec)->on_metric("loss", i, 0, i);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // several failed attempts
  sqlite3_exec(other, "COMMIT;", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  Status later = (*rec)->flush();
  EXPECT_TRUE(later.is_ok()) << later.error().to_string();
  ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  Reader r(path);
  EXPECT_EQ(r.number("SELECT COUNT(*) FROM metrics WHERE run = " + std::to_string(run)), 150);
  EXPECT_EQ(r.number("SELECT COUNT(DISTINCT step) FROM metrics"), 150);  // each once
  EXPECT_EQ(r.text("SELECT status FROM runs"), "finished");
  EXPECT_EQ(r.text("SELECT error FROM runs"), "NULL");
}

TEST(Recorder, RecordsLostForGoodMakeTheRunFailedNotFinished) {
  const std::string path = temp_path("lost.db");
  auto rec = Recorder::open(path);
  ASSERT_TRUE(rec.has_value());
  ASSERT_TRUE((*rec)->start_run(info("lost")).has_value());
  // A failure that no retry mends: the table is gone (a damaged or tampered file).
  {
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "DROP TABLE metrics;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(other);
  }
  (*rec)->on_metric("loss", 0, 0, 1.0);
  EXPECT_FALSE((*rec)->flush().is_ok());
  Status st = (*rec)->finish_run(RunStatus::kFinished);
  EXPECT_FALSE(st.is_ok());  // the caller hears of the loss too
  Reader r(path);
  EXPECT_EQ(r.text("SELECT status FROM runs"), "failed");
  EXPECT_NE(r.text("SELECT error FROM runs").find("incomplete record"), std::string::npos) << r.text("SELECT error FROM runs");
}

TEST(Recorder, AForkedChildNeitherWritesNorHangsNorTouchesTheParentsConnection) {
  // SQLite connections must not cross fork(): a Python DataLoader worker inherits the run.
  const std::string path = temp_path("fork.db");
  auto rec = Recorder::open(path);
  ASSERT_TRUE(rec.has_value());
  const int64_t run = *(*rec)->start_run(info("fork"));
  (*rec)->on_metric("loss", 0, 0, 1.0);
  ASSERT_TRUE((*rec)->flush().is_ok());
  const pid_t child = fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) {
    int code = 0;
    (*rec)->on_metric("loss", 99, 0, 9.0);               // dropped
    Status f = (*rec)->flush();                           // refused at once (there is no writer thread)
    if (f.is_ok() || f.error().message.find("forked") == std::string::npos) code = 1;
    if ((*rec)->finish_run(RunStatus::kFinished).is_ok()) code = 2;
    rec->reset();                                         // the destructor leaves the connection alone
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  (*rec)->on_metric("loss", 1, 0, 0.5);
  ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  Reader r(path);
  EXPECT_EQ(r.number("SELECT COUNT(*) FROM metrics WHERE run = " + std::to_string(run)), 2);  // the child's is not there
  EXPECT_EQ(r.text("SELECT status FROM runs"), "finished");
  EXPECT_EQ(r.text("PRAGMA integrity_check"), "ok");
}

TEST(Recorder, ChecksumsRefuseAFifoWithoutBlocking) {
  const std::string fifo = temp_path("ck.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto sum = file_checksum(fifo);
  ASSERT_FALSE(sum.has_value());
  EXPECT_NE(sum.error().message.find("FIFO"), std::string::npos) << sum.error().message;
  std::filesystem::remove(fifo);
}

// The real thing: a process writing spans and metrics is killed with SIGKILL mid-run.
TEST(Recorder, SigkillMidRunLeavesAnIntactDatabaseAndACrashedRun) {
  const std::string path = temp_path("killed.db");
  ASSERT_TRUE(Database::open(path).has_value());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto rec = Recorder::open(path);
    if (!rec || !(*rec)->start_run(info("doomed"))) _exit(3);
    for (int64_t step = 0;; ++step) {
      const int64_t t = observe::now_ns();
      for (int k = 0; k < 20; ++k) (*rec)->on_span(span(k % 2 ? "Conv" : "Relu", t + k, t + k + 1));
      (*rec)->on_metric("loss", step, step / 100, 1.0 / (1.0 + static_cast<double>(step)));
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int64_t kill_wall = wall_ns();
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer died on its own: " << status;
  {
    Reader db(path);
    EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(db.text("SELECT status FROM runs"), "running");  // nobody has looked yet
    const int64_t last_metric = db.number("SELECT MAX(wall_ns) FROM metrics");
    EXPECT_GT(last_metric, kill_wall - 1'000'000'000) << "more than a second of metrics lost";
    EXPECT_GT(db.number("SELECT COUNT(*) FROM metrics"), 500);
    EXPECT_GT(db.number("SELECT COUNT(*) FROM spans"), 10000);
    std::printf("kill test: %lld spans, %lld metrics kept; last committed metric %.0f ms before the kill\n",
                static_cast<long long>(db.number("SELECT COUNT(*) FROM spans")),
                static_cast<long long>(db.number("SELECT COUNT(*) FROM metrics")),
                static_cast<double>(kill_wall - last_metric) / 1e6);
  }
  auto db = Database::open(path);  // the next open marks it
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  auto runs = list_runs(*db);
  ASSERT_TRUE(runs.has_value());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].status, "crashed");
  EXPECT_GT((*runs)[0].ended_ns, kill_wall - 2'000'000'000);  // ended at its last heartbeat
  Reader again(path);
  EXPECT_EQ(again.text("PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace tessera::insight

// Runs of exported models are named by their file when the exporter gave the graph a generic name
// (a new user saw ResNet-50 and ViT runs both called "torch_jit").
TEST(Recorder, RunNamesPreferTheFileOverAnExportersGenericGraphName) {
  EXPECT_EQ(tessera::insight::run_name("torch_jit", "build/zoo/resnet50.onnx"), "resnet50");
  EXPECT_EQ(tessera::insight::run_name("main_graph", "/m/vit.b16.onnx"), "vit.b16");
  EXPECT_EQ(tessera::insight::run_name("", "samples/mlp.json"), "mlp");
  EXPECT_EQ(tessera::insight::run_name("lenet", "out/other.tsr"), "lenet");  // a real name stays
  EXPECT_EQ(tessera::insight::run_name("torch_jit", ""), "torch_jit");       // no file: as it is
}
