// Helpers of the runs dashboard tests: real insight databases written through insight::Recorder in a
// temporary folder (runs with hyper-parameters, metrics by step, a graph, checkpoints, lineage).
#pragma once

#include <QTest>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/paths.h"
#include "engine/ir/text.h"
#include "formats/document.h"
#include "insight/recorder.h"

namespace runs_test {

struct RunSpec {
  std::string name = "mlp";
  std::map<std::string, std::string> hyperparams;
  std::vector<std::tuple<std::string, int64_t, double>> metrics;  // name, step, value
  std::string graph_body;                                          // "" : no graph recorded
  std::vector<std::pair<std::string, int64_t>> checkpoints;        // path, step
  std::string resumed_from;                                        // a checkpoint path
  tessera::insight::RunStatus status = tessera::insight::RunStatus::kFinished;
};

// Records one run; returns its id (0 and a test failure on error).
inline int64_t record_run(const std::string& db, const RunSpec& spec) {
  using namespace tessera::insight;
  auto rec = Recorder::open(db);
  if (!rec) {
    qWarning("%s", rec.error().to_string().c_str());
    return 0;
  }
  RunInfo info;
  info.name = spec.name;
  info.kind = "train";
  info.graph_name = spec.name;
  info.command = "tessera train " + spec.name;
  info.hyperparams = spec.hyperparams;
  auto id = (*rec)->start_run(info);
  if (!id) return 0;
  if (!spec.graph_body.empty()) (*rec)->log_graph(spec.name, "tir", spec.graph_body);
  if (!spec.resumed_from.empty()) (*rec)->add_lineage(LineageKind::kResumedFrom, "", spec.resumed_from);
  for (const auto& [name, step, value] : spec.metrics) (*rec)->on_metric(name, step, 0, value);
  for (const auto& [path, step] : spec.checkpoints) (*rec)->log_checkpoint(path, step, "0123456789abcdef");
  if (!(*rec)->finish_run(spec.status).is_ok()) return 0;
  return *id;
}

// The MLP sample as the recorder stores it: IR text with params as inputs.
inline std::string mlp_body() {
  auto doc = tessera::formats::load_document(tessera::test::source_dir() + "/samples/mlp.json");
  if (!doc) return {};
  tessera::ir::Graph g = doc->graph;
  for (tessera::ir::ValueId p : std::vector<tessera::ir::ValueId>(g.params())) g.make_input(p);
  return tessera::ir::print_graph(g);
}

}  // namespace runs_test
