// The optimiser's machinery: Pass (one rewrite with a stable short name), PassRegistry (name ->
// factory), PassManager (runs a textual pipeline) and PassInstrumentation (hooks around every
// pass: verification, timing, snapshots live in instrumentations.h, never in the manager).
//
// Usage:
//   passes::PassRegistry passes = passes::default_pass_registry();
//   TRY(passes::PassManager pm, passes::PassManager::parse("canonicalize,fixpoint(cse,dce)", passes));
//   pm.add_instrumentation(std::make_unique<passes::VerifierInstrumentation>(ops_registry));
//   passes::PassContext ctx{ops_registry, {}};
//   TRY(bool changed, pm.run(graph, ctx));
//
// Pipeline grammar (whitespace ignored):
//   pipeline := item (',' item)*
//   item     := NAME | 'fixpoint' '(' pipeline ')'      NAME := [a-z0-9-]+ (a registered pass)
// fixpoint(...) repeats its group until no pass in it reports a change, at most kMaxFixpointRounds
// times (then it stops and leaves a diagnostic; not an error).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::passes {

// What a pass may read besides the graph, and where it leaves notes for people.
struct PassContext {
  const ops::OpRegistry& registry;
  std::vector<std::string> diagnostics;  // human-readable notes ("cse: merged #7 into #3")
  // Params that constant-fold must treat as unknown (the weights of a training step not built yet:
  // folding through them would cut them off from their gradients).
  std::set<ir::ValueId> variables;
};

// One graph rewrite. Contract: run() returns true iff it changed the graph (the verifier's hash
// check enforces it); on success the graph verifies (ir::verify), type-checks (ops::infer_types)
// and every value it created carries its type; on error the graph may be half rewritten and the
// caller discards it. Passes hold no state between runs.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;  // "dce", "cse", "constant-fold", ...
  virtual Expected<bool> run(ir::Graph& graph, PassContext& ctx) = 0;
};

// Hooks around every pass the manager runs. Instrumentations observe; only after_pass may stop
// the pipeline, by returning an error (the verifier does).
class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  // Called once at the start of PassManager::run; `ctx` outlives the run.
  virtual void run_begin(const PassContext& ctx) { (void)ctx; }
  virtual void before_pass(const Pass& pass, const ir::Graph& graph) {
    (void)pass;
    (void)graph;
  }
  virtual Status after_pass(const Pass& pass, const ir::Graph& graph, bool changed, int64_t duration_ns) {
    (void)pass;
    (void)graph;
    (void)changed;
    (void)duration_ns;
    return Status::ok();
  }
};

using PassFactory = std::function<std::unique_ptr<Pass>()>;

class PassRegistry {
 public:
  // A second factory under the same name replaces the first.
  void add(std::string name, PassFactory factory);
  // A fresh pass, or an error naming the unknown pass and listing the known ones.
  Expected<std::unique_ptr<Pass>> create(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted

 private:
  std::vector<std::pair<std::string, PassFactory>> factories_;
};

// Every built-in pass: canonicalize, constant-fold, cse, dce, fold-batchnorm, fuse.
PassRegistry default_pass_registry();
// The optimise stage's pipeline.
extern const char* const kDefaultPipeline;

class PassManager {
 public:
  static constexpr int kMaxFixpointRounds = 10;

  // Parses a pipeline. Errors carry "pipeline:1:COL" in Error::where and name the unknown pass or
  // the unexpected character.
  static Expected<PassManager> parse(std::string_view pipeline, const PassRegistry& registry);

  // Instrumentations run in the order added (before_pass) and in reverse order (after_pass), as
  // MLIR nests them. Returns the instrumentation, still owned by the manager, for reading results.
  template <class T>
  T* add_instrumentation(std::unique_ptr<T> inst) {
    T* raw = inst.get();
    instrumentations_.push_back(std::move(inst));
    return raw;
  }

  // Runs the pipeline on `graph`. Returns whether any pass changed it. Stops at the first error
  // of a pass ("pass 'cse': ...") or of an instrumentation.
  Expected<bool> run(ir::Graph& graph, PassContext& ctx);
  // The pipeline in normal form: "canonicalize,fixpoint(cse,dce)".
  std::string pipeline_text() const;

 private:
  struct Item {
    std::unique_ptr<Pass> pass;  // set for a single pass
    std::vector<Item> group;     // set for fixpoint(...)
  };
  Expected<bool> run_items(std::vector<Item>& items, ir::Graph& graph, PassContext& ctx);
  Expected<bool> run_pass(Pass& pass, ir::Graph& graph, PassContext& ctx);
  static std::string items_text(const std::vector<Item>& items);
  friend class PipelineParser;

  std::vector<Item> items_;
  std::vector<std::unique_ptr<PassInstrumentation>> instrumentations_;
};

}  // namespace tessera::passes
