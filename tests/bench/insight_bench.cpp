// Insight store benchmark (not a test): write rate of one million spans through the recorder, the
// time to query the spans of one time window and the statistics by op, and the metrics ingest rate.
//
// Usage: insight_bench [DB_PATH] [SPANS]     (default: a temporary file, 1000000 spans)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "insight/query.h"
#include "insight/recorder.h"

using namespace tessera;
using namespace tessera::insight;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void remove_db(const std::string& path) {
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
}

int die(const Error& e) {
  std::fprintf(stderr, "insight_bench: %s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() /
                                                 ("insight_bench_" + std::to_string(getpid()) + ".db")).string();
  const int64_t n = argc > 2 ? std::stoll(argv[2]) : 1'000'000;
  remove_db(path);
  const char* kOps[] = {"Conv", "Relu", "MaxPool", "Gemm", "Add", "Softmax", "BatchNorm", "Reshape"};

  // 1. Spans: a kernel every ~2 us on 4 threads, as a profiled run would produce them.
  int64_t run = 0;
  double enqueue_s = 0, total_s = 0;
  {
    auto rec = Recorder::open(path);
    if (!rec) return die(rec.error());
    RunInfo info;
    info.name = "bench";
    info.kind = "bench";
    auto id = (*rec)->start_run(info);
    if (!id) return die(id.error());
    run = *id;
    observe::Span s;
    s.kind = observe::Span::Kind::kKernel;
    s.device = "cpu";
    s.detail = "onednn";
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) {
      s.op = kOps[i % 8];
      s.name = s.op + "_" + std::to_string(i % 50);
      s.node = static_cast<int32_t>(i % 50);
      s.thread = static_cast<int32_t>(i % 4);
      s.start_ns = 1'000'000'000 + i * 2000;
      s.end_ns = s.start_ns + 500 + (i * 7919) % 3000;
      s.bytes = 4096;
      s.flops = 1e5;
      (*rec)->on_span(s);
    }
    enqueue_s = seconds_since(t0);
    Status st = (*rec)->finish_run(RunStatus::kFinished);
    total_s = seconds_since(t0);
    if (!st.is_ok()) return die(st.error());
    if ((*rec)->dropped_spans() > 0) std::printf("  (%lld spans dropped)\n", static_cast<long long>((*rec)->dropped_spans()));
  }
  std::printf("spans: %lld written in %.2f s = %.0f spans/s (caller side %.0f ns/span)\n", static_cast<long long>(n),
              total_s, static_cast<double>(n) / total_s, enqueue_s * 1e9 / static_cast<double>(n));

  // 1b. The training thread's own cost: bursts of 20000 spans queued while the writer waits, the
  // writer draining between bursts (untimed), as in training where a flush happens every 200 ms.
  {
    const std::string scratch = path + ".enqueue";
    remove_db(scratch);
    RecorderOptions o;
    o.flush_interval_ms = 600000;
    o.batch_records = 1 << 30;
    auto rec = Recorder::open(scratch, o);
    if (!rec) return die(rec.error());
    if (auto id = (*rec)->start_run(RunInfo{}); !id) return die(id.error());
    observe::Span s;
    s.device = "cpu";
    s.detail = "onednn";
    s.op = "Conv";
    s.name = "conv1";
    double q = 0;
    const int64_t burst = 20000, bursts = std::max<int64_t>(1, n / burst);
    for (int64_t b = 0; b < bursts; ++b) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < burst; ++i) {
        s.start_ns = b * burst + i;
        s.end_ns = s.start_ns + 1;
        (*rec)->on_span(s);
      }
      q += seconds_since(t0);
      if (Status st = (*rec)->flush(); !st.is_ok()) return die(st.error());
    }
    std::printf("enqueue: %.0f ns per span in the calling thread (bursts of %lld, writer waiting)\n",
                q * 1e9 / static_cast<double>(bursts * burst), static_cast<long long>(burst));
    (void)(*rec)->finish_run(RunStatus::kFinished);
    remove_db(scratch);
  }

  // 2. Queries, on a fresh connection (cold statement cache, warm OS cache).
  auto db = Database::open(path);
  if (!db) return die(db.error());
  const int64_t mid = 1'000'000'000 + n * 1000;
  auto t0 = std::chrono::steady_clock::now();
  auto window = spans_in_window(*db, run, mid, mid + 1'000'000);  // 1 ms: ~500 spans
  const double window_s = seconds_since(t0);
  if (!window) return die(window.error());
  t0 = std::chrono::steady_clock::now();
  auto stats = op_stats(*db, run);
  const double stats_s = seconds_since(t0);
  if (!stats) return die(stats.error());
  std::printf("query: spans of a 1 ms window: %zu spans in %.3f ms\n", window->size(), window_s * 1e3);
  std::printf("query: statistics by op over %lld spans: %zu ops in %.1f ms\n", static_cast<long long>(n), stats->size(),
              stats_s * 1e3);
  t0 = std::chrono::steady_clock::now();
  const std::string trace = path + ".trace.json";
  auto events = export_chrome_trace(*db, run, trace);
  if (!events) return die(events.error());
  std::printf("export: %lld Chrome trace events in %.2f s (%.0f MB)\n", static_cast<long long>(*events),
              seconds_since(t0), static_cast<double>(std::filesystem::file_size(trace)) / 1e6);
  std::filesystem::remove(trace);

  // 3. Metrics: loss, accuracy and lr of every step.
  {
    auto rec = Recorder::open(path);
    if (!rec) return die(rec.error());
    RunInfo info;
    info.name = "metrics";
    if (auto id = (*rec)->start_run(info); !id) return die(id.error());
    const int64_t steps = n / 3;
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i) {
      (*rec)->on_metric("loss", i, i / 1000, 1.0 / static_cast<double>(i + 1));
      (*rec)->on_metric("accuracy", i, i / 1000, 0.5);
      (*rec)->on_metric("lr", i, i / 1000, 0.01);
    }
    Status st = (*rec)->finish_run(RunStatus::kFinished);
    const double s = seconds_since(t0);
    if (!st.is_ok()) return die(st.error());
    std::printf("metrics: %lld values in %.2f s = %.0f values/s\n", static_cast<long long>(steps * 3), s,
                static_cast<double>(steps * 3) / s);
  }
  std::printf("database: %.0f MB (%s)\n", static_cast<double>(std::filesystem::file_size(path)) / 1e6, path.c_str());
  if (argc <= 1) remove_db(path);
  return 0;
}
