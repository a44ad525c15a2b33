// Stage 3, optimise (see optimise.h).
#include "engine/stages/optimise.h"

#include "engine/passes/pass_manager.h"

namespace tessera::stages {

std::string default_optimise_pipeline(bool host_only) {
  return std::string(passes::kDefaultPipeline) + (host_only ? ",layout" : "");
}

Expected<PlacedGraph> optimise(PlacedGraph placed, const std::string& pipeline, StageContext& ctx) {
  int64_t start = observe::now_ns();
  int before = placed.graph.num_nodes();
  size_t first_pass = ctx.passes.size();
  TRY(bool changed, run_pipeline(placed.graph, pipeline, "optimise", ctx));
  placed.place_new_nodes();
  int changed_passes = 0;
  for (size_t i = first_pass; i < ctx.passes.size(); ++i) changed_passes += ctx.passes[i].changed;
  ctx.finish_stage("optimise", start, before, &placed.graph,
                   std::to_string(before) + " -> " + std::to_string(placed.graph.num_nodes()) + " nodes, " +
                       std::to_string(changed_passes) + " passes changed the graph" + (changed ? "" : " (nothing to do)"));
  return placed;
}

}  // namespace tessera::stages
