// The insight recorder: the engine's trace, snapshot and metrics sinks over the SQLite store, with
// one writer thread so that a training step never waits on disk.
//
//   TRY(auto rec, insight::Recorder::open(db_path));
//   RunInfo info;  info.kind = "train";  info.name = "lenet";  info.command = "tessera train ...";
//   TRY(int64_t run, rec->start_run(info));
//   cfg.trace = rec.get();  cfg.metrics = rec.get();       // the engine calls the sinks
//   rec->log_checkpoint(path, step, checksum);
//   RETURN_IF_ERROR(rec->finish_run(RunStatus::kFinished));
//
// Threads: the sink calls and the log_* / add_* calls may come from any thread; each copies its
// record into a queue under a mutex and returns. The writer thread wakes every flush interval (or
// when a batch is full), swaps the queue out and writes it in one transaction, then updates the
// run's heartbeat. A transaction that meets a passing failure (another writer's lock held past the
// busy timeout, a full disk) is kept and written again with the next batch; at the end of the run
// the writer tries a few more times before the run is recorded "failed: incomplete record". Spans
// and memory events beyond the queue capacity are dropped (counted, reported in the run's error
// column at the end); metrics, snapshots, checkpoints and lineage never are.
//
// Fork: SQLite connections must not cross fork(). In a forked child (a Python DataLoader worker
// that inherited a run) every call refuses ("a child it forked ...") or drops its record, and the
// destructor touches neither the connection nor the writer thread (which the child does not have).
//
// Durability: everything committed survives a SIGKILL of the process (WAL); a killed run keeps
// what was flushed up to the kill (at most one flush interval old) and is marked "crashed" by the
// next Database::open (its pid is gone or its heartbeat stale).
#pragma once

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/observe/sinks.h"
#include "insight/database.h"

namespace tessera::insight {

// kStopped: ended early by the user (the Train panel's Stop, Ctrl+C of `tessera train`), cleanly.
enum class RunStatus { kRunning, kFinished, kFailed, kCrashed, kStopped };
const char* run_status_name(RunStatus s);

enum class LineageKind { kResumedFrom, kFineTunedFrom, kDerivedFrom };
const char* lineage_kind_name(LineageKind k);

struct RunInfo {
  std::string name;            // shown by `runs list`; default: the graph's name
  std::string kind;            // train | run | bench | passes
  std::string command;         // the command line, as typed
  std::string graph_name;
  std::string engine_version;  // TESSERA_VERSION
  uint64_t seed = 0;
  std::map<std::string, std::string> hyperparams;
};

struct RecorderOptions {
  int64_t flush_interval_ms = 200;   // the writer commits at least this often while records wait
  size_t batch_records = 20000;      // ... and as soon as this many are queued
  size_t max_queued_spans = 1 << 21; // spans + memory events waiting; beyond: dropped and counted
  int64_t heartbeat_ms = 1000;       // the run's heartbeat, written even when idle
  OpenOptions open;
};

// XXH3-64 of bytes as 16 lowercase hex digits (graph and IR hashes, checkpoint checksums).
std::string content_hash(const std::string& bytes);
// XXH3-64 of a file's bytes; errors name the file.
Expected<std::string> file_checksum(const std::string& path);
// The name a run of `graph_name` loaded from `file` is recorded under: the graph's name, unless it
// is empty or one that exporters give every graph ("torch_jit", "main_graph", "main", "graph"),
// where the file's stem says more (resnet50.onnx -> "resnet50").
std::string run_name(const std::string& graph_name, const std::string& file);

class Recorder final : public observe::TraceSink, public observe::SnapshotSink, public observe::MetricsSink {
 public:
  // Opens (or creates) the database; errors as Database::open.
  static Expected<std::unique_ptr<Recorder>> open(const std::string& path, RecorderOptions options = {});
  // Finishes a run still open as "failed" (an error path that forgot finish_run), then closes.
  ~Recorder() override;

  // Records the run (status running) with its hyper-parameters and starts the writer thread.
  // One run per recorder; a second call is an error.
  Expected<int64_t> start_run(const RunInfo& info);
  // Records into run `run`, started by another process (the other ranks of a data-parallel job
  // write their spans into rank 0's run): spans, memory events and metrics only; detach() (or the
  // destructor) stops without touching the run's status.
  Status attach_run(int64_t run);
  Status detach();
  // For an attached recorder whose run's owner is gone (its process, on this host, no longer
  // exists: killed) while the run is still "running": records it failed with `why`, so that the
  // status and the reason come from whichever rank survives. Returns whether it did.
  Expected<bool> record_if_owner_gone(const std::string& why);
  int64_t run_id() const { return run_id_; }
  const std::string& path() const { return db_.path(); }

  // Sinks (any thread, never blocking on disk).
  void on_span(const observe::Span& span) override;
  void on_memory(const observe::MemoryEvent& event) override;
  void on_snapshot(const observe::Snapshot& snapshot) override;
  void on_metric(const std::string& name, int64_t step, int64_t epoch, double value) override;

  // The run's graph (its text in `format`, "tir" or "json"), stored once per content hash, linked
  // with `role` ("input", "trained"). Returns the hash.
  std::string log_graph(const std::string& name, const std::string& format, const std::string& body,
                        const std::string& role = "input");
  // The graph's structure: its IR text with params turned into inputs (weights belong in
  // checkpoints), as log_graph. Every recording caller (CLI, studio) stores graphs this way, so a
  // run's graph opens and diffs the same wherever it was recorded.
  std::string log_graph_structure(const ir::Graph& graph, const std::string& role = "input");
  // The data set seen by the run, by its fingerprint (engine/data/fingerprint.h).
  void log_dataset(const std::string& split, const std::string& fingerprint, const std::string& path, int64_t examples);
  // A checkpoint written by the run, with its checksum (file_checksum).
  void log_checkpoint(const std::string& path, int64_t step, const std::string& checksum);
  // A lineage edge from this run (resumed_from, fine_tuned_from: `to` is a checkpoint path, linked
  // to the recorded checkpoint when one has that path) or between graphs (derived_from: `from` and
  // `to` are graph hashes).
  void add_lineage(LineageKind kind, const std::string& from, const std::string& to, const std::string& note = {});
  // Adds or replaces one hyper-parameter after start_run.
  void log_hyperparam(const std::string& key, const std::string& value);

  // Blocks until the writer has tried to commit everything queued so far; returns its error when
  // the records are not committed yet (kept for the next attempt: another writer held the lock
  // past the busy timeout, the disk is full) or were lost.
  Status flush();
  // Flushes, stops the writer thread and records the status and end time (and `error`, if any).
  Status finish_run(RunStatus status, const std::string& error = {});
  // The writer's failure while records await a retry or were lost (ok once a retry commits them).
  Status write_status() const;
  int64_t dropped_spans() const { return dropped_.load(); }
  // Whether this is a forked child's copy of the recorder (every call then refuses or drops).
  bool forked() const { return ::getpid() != owner_pid_; }

 private:
  struct Metric {
    std::string name;
    int64_t step, epoch, wall_ns;
    double value;
  };
  struct Other;  // graphs, datasets, checkpoints, lineage, hyper-parameters
  struct Batch;

  Recorder(Database db, RecorderOptions options);
  void writer_loop();
  Status write_batch(Batch& batch);
  Status prepare_statements();
  void enqueue_other(Other o);
  int64_t intern(const std::string& text);  // writer thread: the strings row of `text` (-1: error)

  Status forked_error() const;

  Database db_;
  RecorderOptions options_;
  pid_t owner_pid_;  // the process that opened the connection
  int64_t run_id_ = -1;
  bool finished_ = false;
  bool attached_ = false;

  // The writer's synchronisation, on the heap: a forked child's copy may hold a condition
  // variable the parent's writer was waiting on, whose destruction would wait for ever there; the
  // child's destructor leaks it instead.
  struct Sync {
    std::mutex mu;
    std::condition_variable wake;     // the writer: records waiting, a flush asked, or stop
    std::condition_variable flushed;  // flush(): the writer committed up to a sequence number
  };
  std::unique_ptr<Sync> sync_ = std::make_unique<Sync>();
  std::unique_ptr<Batch> pending_, spare_;
  size_t pending_count_ = 0;
  uint64_t enqueued_seq_ = 0, committed_seq_ = 0;  // committed: written, or lost for good
  uint64_t attempts_ = 0;                           // the writer's transactions tried so far
  bool flush_asked_ = false, stop_ = false;
  Status write_status_;   // the last failure while records await a retry or were lost, else ok
  bool lost_ = false;     // records were dropped after a failure that does not pass
  int last_failure_ = 0;  // writer thread: SQLite's code for write_batch's failure
  std::atomic<int64_t> dropped_{0};
  std::thread writer_;

  struct Statements;
  std::unique_ptr<Statements> stmts_;
  int64_t max_span_ns_ = 0;                              // writer thread only
  std::unordered_map<std::string, int64_t> string_ids_;  // writer thread only
};

}  // namespace tessera::insight
