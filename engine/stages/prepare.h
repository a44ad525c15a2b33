// Stage 1, prepare: user graph -> typed graph. Verifies the graph, binds the graph inputs to
// concrete shapes where the caller knows them (symbolic dims become sizes), infers every type,
// and folds the subgraphs that depend only on constants (constant-fold + dce).
//
// Usage:
//   StageContext ctx(registry);
//   TRY(PreparedGraph p, prepare(std::move(graph), {{"x", {64, 1, 28, 28}}}, ctx));
//   std::cout << p.print();
#pragma once

#include <map>
#include <set>
#include <string>

#include "engine/stages/stage.h"

namespace tessera::stages {

using InputShapes = std::map<std::string, Shape>;  // graph input name -> concrete shape
// In an InputShapes entry: a symbolic dimension left symbolic (Session: a size that keeps changing).
inline constexpr int64_t kDynamicDim = -1;

struct PreparedGraph {
  ir::Graph graph;
  std::string print() const;  // the IR text
};

// Errors name the input whose shape does not fit, or the node that fails inference.
Expected<PreparedGraph> prepare(ir::Graph graph, const InputShapes& shapes, StageContext& ctx);

// Runs a pass pipeline over `graph` for `stage`, recording PassReports, trace spans and a snapshot
// after every pass that changed the graph. Returns whether anything changed. (Shared by prepare and
// optimise.) `variables`: params constant-fold must not fold through (PassContext::variables).
Expected<bool> run_pipeline(ir::Graph& graph, const std::string& pipeline, const std::string& stage,
                            StageContext& ctx, std::set<ir::ValueId> variables = {});

}  // namespace tessera::stages
