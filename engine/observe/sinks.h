// The engine's only ways to report outward: a trace sink (spans and memory events), a snapshot
// sink (the IR after each stage and pass) and a metrics sink (training scalars). The insight
// module implements them over SQLite; tests implement them in memory. All are optional: the
// engine checks for null and does no work for an absent sink.
//
// Usage:
//   struct Collect : observe::SnapshotSink { void on_snapshot(const Snapshot& s) override {...} };
//   Collect c;  SessionOptions opts;  opts.snapshots = &c;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::observe {

// A timed interval. Times are nanoseconds on the steady clock (observe::now_ns()).
struct Span {
  enum class Kind { kStage, kPass, kKernel, kCopy, kStep };
  Kind kind = Kind::kKernel;
  std::string name;     // stage or pass name, or the node name for a kernel
  std::string op;       // op of the node (kernels); empty otherwise
  std::string device;   // "cpu", "cpu:test", "cuda:0"
  std::string detail;   // kernel implementation ("onednn:conv", "ref"), pass changed or not, ...
  int32_t node = -1;    // node id in the graph being executed (-1: none)
  int32_t thread = 0;   // worker index within the executor (0 = calling thread)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;    // bytes read + written by a kernel or copy
  double flops = 0;
};

struct MemoryEvent {
  std::string device;
  std::string what;     // "arena", "weights", "dynamic"
  int64_t time_ns = 0;
  int64_t bytes = 0;    // positive: allocated, negative: freed
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Called from worker threads: implementations must be thread-safe and cheap (buffer, then flush
  // elsewhere).
  virtual void on_span(const Span& span) = 0;
  virtual void on_memory(const MemoryEvent& event) { (void)event; }
};

// The IR at one point of compilation.
struct Snapshot {
  std::string stage;          // "prepare", "split", "optimise", ...
  std::string pass;           // pass name; empty for a stage's own snapshot
  int index = 0;              // position in the whole compilation, from 0
  std::string ir_text;        // ir::print_graph output
  uint64_t hash = 0;          // structural hash of the graph
  int64_t duration_ns = 0;
  bool changed = true;
  int nodes_before = 0, nodes_after = 0;
  std::vector<std::string> diagnostics;
  // node id -> ids it came from (Provenance::from), for nodes of this snapshot
  std::vector<std::pair<int32_t, std::vector<int32_t>>> provenance;
};

class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  virtual void on_snapshot(const Snapshot& snapshot) = 0;
};

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void on_metric(const std::string& name, int64_t step, int64_t epoch, double value) = 0;
};

// Nanoseconds on the steady clock.
int64_t now_ns();

}  // namespace tessera::observe
