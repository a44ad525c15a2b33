// What every stage shares: the registry, the devices, the sinks, and a report per stage.
//
// A stage is a function from one artefact to the next (prepare.h, split.h, optimise.h,
// compile.h, load.h); each artefact prints. StageContext carries what they all need and records
// each stage's timing, so `tessera passes` and the studio can show them and the trace gets a span
// per stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/observe/sinks.h"
#include "engine/ops/op_def.h"

namespace tessera::autodiff {
struct TrainingSpec;
}
namespace tessera::dist {
struct DataParallel;
}

namespace tessera::stages {

struct StageReport {
  std::string stage;       // "prepare", "split", ...
  int64_t duration_ns = 0;
  int nodes_before = 0, nodes_after = 0;
  std::string summary;     // one line: what the stage decided
};

struct PassReport {
  std::string stage, pass;
  int64_t duration_ns = 0;
  bool changed = false;
  int nodes_before = 0, nodes_after = 0;
};

struct StageContext {
  explicit StageContext(const ops::OpRegistry& r) : registry(r) {}
  const ops::OpRegistry& registry;
  observe::TraceSink* trace = nullptr;        // optional
  observe::SnapshotSink* snapshots = nullptr;  // optional
  // When set, prepare builds the training step (autodiff/training_step.h) from the typed graph.
  const autodiff::TrainingSpec* training = nullptr;
  // Graph inputs the caller gives up: an output an op may write over its input (OpDef::in_place)
  // is written into that input's buffer, and the caller gets the input's tensor back as the output
  // (the training step's weights and optimizer state, updated in place).
  bool donate_inputs = false;
  // Data-parallel training over several ranks: the split stage inserts the gradient all-reduces.
  const dist::DataParallel* data_parallel = nullptr;
  bool bf16 = false;  // SessionOptions::bf16: the CPU kernels' matrix work on bf16
  int next_snapshot = 0;
  std::vector<StageReport> stages;
  std::vector<PassReport> passes;

  // Records a finished stage: report, trace span, and a snapshot of `graph` when given.
  void finish_stage(const std::string& stage, int64_t start_ns, int nodes_before, const ir::Graph* graph,
                    std::string summary);
};

}  // namespace tessera::stages
