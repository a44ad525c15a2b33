// Instrumentations hooked around passes by the PassManager: the invariant verifier (with the
// "unchanged means unchanged" hash check), timing, and IR snapshots for the studio and insight.
//
// Usage:
//   pm.add_instrumentation(std::make_unique<VerifierInstrumentation>(ops_registry));
//   auto* timing = pm.add_instrumentation(std::make_unique<TimingInstrumentation>());
//   int next = 0;
//   pm.add_instrumentation(std::make_unique<SnapshotInstrumentation>(sink, "optimise", &next));
//   ... pm.run(...); for (const PassTiming& t : timing->records()) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/hash.h"
#include "engine/observe/sinks.h"
#include "engine/passes/pass_manager.h"

namespace tessera::passes {

// After a pass that changed the graph: ir::verify, then ops::infer_types on a copy, and every
// ranked type stored in the graph must equal the re-inferred one (a pass that rewired a node but
// left a stale type is caught here). After a pass that reported no change: the structural hash
// must equal the one taken before it, for graphs of up to kUnchangedCheckNodes nodes (hashing a
// 100,000-node graph twice per pass was half the optimise stage of a pipeline with nothing to do;
// the tests' graphs are all below the cap, so a pass that lies is still caught). Errors read "after pass 'cse': <problem>" and keep the
// offending node id.
class VerifierInstrumentation : public PassInstrumentation {
 public:
  static constexpr int kUnchangedCheckNodes = 20000;
  explicit VerifierInstrumentation(const ops::OpRegistry& registry) : registry_(registry) {}
  void run_begin(const PassContext& ctx) override {
    (void)ctx;
    known_hash_.reset();
  }
  void before_pass(const Pass& pass, const ir::Graph& graph) override;
  Status after_pass(const Pass& pass, const ir::Graph& graph, bool changed, int64_t duration_ns) override;

 private:
  const ops::OpRegistry& registry_;
  ir::GraphHasher hasher_;
  std::optional<uint64_t> hash_before_;
  std::optional<uint64_t> known_hash_;  // the graph's hash after the last pass, when known
};

struct PassTiming {
  std::string pass;
  int64_t duration_ns = 0;
  bool changed = false;
  int nodes_before = 0, nodes_after = 0;
};

// Records one PassTiming per pass run, in order (passes inside fixpoint(...) once per round).
class TimingInstrumentation : public PassInstrumentation {
 public:
  void before_pass(const Pass& pass, const ir::Graph& graph) override;
  Status after_pass(const Pass& pass, const ir::Graph& graph, bool changed, int64_t duration_ns) override;
  const std::vector<PassTiming>& records() const { return records_; }
  // One line per pass: "cse  0.12 ms  changed  42 -> 40 nodes".
  std::string report() const;

 private:
  std::vector<PassTiming> records_;
  int nodes_before_ = 0;
};

// After each pass that changed the graph, sends an observe::Snapshot to `sink` with the printed
// IR, structural hash, duration, node counts, the diagnostics the pass added and the provenance of
// every node that has one. `next_index` (shared across stages, not owned) numbers snapshots in the
// whole compilation and is incremented per snapshot. A null sink makes this a no-op.
class SnapshotInstrumentation : public PassInstrumentation {
 public:
  SnapshotInstrumentation(observe::SnapshotSink* sink, std::string stage, int* next_index)
      : sink_(sink), stage_(std::move(stage)), next_index_(next_index) {}
  void run_begin(const PassContext& ctx) override { ctx_ = &ctx; }
  void before_pass(const Pass& pass, const ir::Graph& graph) override;
  Status after_pass(const Pass& pass, const ir::Graph& graph, bool changed, int64_t duration_ns) override;

 private:
  observe::SnapshotSink* sink_;
  std::string stage_;
  int* next_index_;
  const PassContext* ctx_ = nullptr;
  size_t diagnostics_before_ = 0;
  int nodes_before_ = 0;
  ir::GraphHasher hasher_;
};

}  // namespace tessera::passes
