// Stage 3, optimise: placed graph -> optimised graph. Runs a textual pass pipeline (see
// engine/passes/pass_manager.h) with instrumentations that record timing, spans and snapshots.
// The default pipeline ends with "layout", which keeps oneDNN blocked formats across consecutive
// CPU ops and inserts Reorders at the edges (engine/cpu/layout.h).
//
// Usage:
//   TRY(PlacedGraph opt, optimise(std::move(placed), kDefaultOptimisePipeline, ctx));
#pragma once

#include <string>

#include "engine/stages/split.h"

namespace tessera::stages {

// The default pipeline of the optimise stage. The layout pass (oneDNN's blocked formats) runs
// only when every node is on the host: other devices read plain buffers.
std::string default_optimise_pipeline(bool host_only = true);

Expected<PlacedGraph> optimise(PlacedGraph placed, const std::string& pipeline, StageContext& ctx);

}  // namespace tessera::stages
