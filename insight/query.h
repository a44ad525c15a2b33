// Reading the insight store: runs, their details, metrics, lineage, spans of a time window,
// statistics by op and the Chrome trace export. Used by `tessera runs ...` and the studio; safe
// while a recorder writes to the same file from another process (WAL readers never block it).
//
//   TRY(auto db, Database::open(path));
//   TRY(int64_t run, resolve_run(db, "last"));
//   TRY(RunDetails d, run_details(db, run));
//   TRY(auto stats, op_stats(db, run));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/observe/sinks.h"
#include "insight/database.h"

namespace tessera::insight {

struct RunRecord {
  int64_t id = 0;
  std::string name, kind, status, command, graph_name, engine_version, host, error;
  int64_t pid = 0, seed = 0;
  int64_t started_ns = 0, ended_ns = 0;  // wall clock; ended_ns 0 while running
  int64_t heartbeat_ns = 0, steady_offset_ns = 0;
};

struct GraphRef {
  std::string role, hash, name, format;
};
struct DatasetRef {
  std::string split, fingerprint, path;
  int64_t examples = 0;
};
struct CheckpointRecord {
  int64_t id = 0, run = 0, step = 0, wall_ns = 0;
  std::string path, checksum;
};
struct LineageEdge {
  std::string kind, from_type, from_id, to_type, to_id, note;
  // Resolved for checkpoint targets: the checkpoint and the run that wrote it (run 0: unknown).
  CheckpointRecord checkpoint;
};

struct RunDetails {
  RunRecord run;
  std::map<std::string, std::string> hyperparams;
  std::vector<GraphRef> graphs;
  std::vector<DatasetRef> datasets;
  std::vector<CheckpointRecord> checkpoints;
  int64_t spans = 0, metrics = 0, snapshots = 0, memory_events = 0;
};

struct MetricPoint {
  std::string name;
  int64_t step = 0, epoch = 0, wall_ns = 0;
  double value = 0;
};

// Per metric name: the last value and the best (lowest for names containing "loss", else highest).
struct MetricSummary {
  std::string name;
  double final_value = 0, best_value = 0;
  int64_t final_step = 0, best_step = 0, count = 0;
};

struct OpStats {
  std::string op;  // the op of kernel spans; stage/pass spans are grouped under "<kind>"
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
};

// All runs, newest first (at most `limit` when > 0).
Expected<std::vector<RunRecord>> list_runs(const Database& db, int64_t limit = 0);
// A run by id, by name (the newest of that name) or "last"; errors name what was not found.
Expected<int64_t> resolve_run(const Database& db, const std::string& ref);
Expected<RunDetails> run_details(const Database& db, int64_t run);
// Metrics in (name, step) order.
Expected<std::vector<MetricPoint>> run_metrics(const Database& db, int64_t run);
std::vector<MetricSummary> summarize_metrics(const std::vector<MetricPoint>& points);
// Edges out of the run (what it resumed from) and into it (runs that resumed from its checkpoints).
Expected<std::vector<LineageEdge>> lineage_from(const Database& db, int64_t run);
Expected<std::vector<std::pair<int64_t, LineageEdge>>> lineage_into(const Database& db, int64_t run);
// Spans overlapping [t0_ns, t1_ns) (steady-clock times as recorded), by start time.
Expected<std::vector<observe::Span>> spans_in_window(const Database& db, int64_t run, int64_t t0_ns, int64_t t1_ns);
// The first and last span times of a run ({0, 0} without spans).
Expected<std::pair<int64_t, int64_t>> span_extent(const Database& db, int64_t run);
// Kernel time by op, most total time first.
Expected<std::vector<OpStats>> op_stats(const Database& db, int64_t run);
// Per rank of a data-parallel run (kernel spans on devices "rankN/..."): time in the all-reduce
// kernels (AllReduce, AllReduceStart, AllReduceWait: handing over, waiting; packing and copying
// out for a bucket that is not a view) and in the other kernels. Empty for a one-process run. (The time MPI itself took, on its own thread, and how long
// the steps waited for it are the run's metrics dist/comm_s/rankN and dist/wait_s/rankN.)
struct RankStats {
  int rank = 0;
  int64_t allreduces = 0, comm_ns = 0, compute_ns = 0;
};
Expected<std::vector<RankStats>> rank_stats(const Database& db, int64_t run);
// Writes the run's spans (and memory events as counters) in Chrome's trace event format:
// {"traceEvents":[{"name","cat","ph":"X","ts","dur","pid","tid","args"}...]}, ts and dur in
// microseconds from the run's first span. Returns the number of events written.
Expected<int64_t> export_chrome_trace(const Database& db, int64_t run, const std::string& file);

}  // namespace tessera::insight
