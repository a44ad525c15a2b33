// StageContext: stage reports, spans and snapshots.
#include "engine/stages/stage.h"

#include "engine/ir/hash.h"
#include "engine/ir/text.h"

namespace tessera::stages {

void StageContext::finish_stage(const std::string& stage, int64_t start_ns, int nodes_before, const ir::Graph* graph,
                                std::string summary) {
  int64_t end = observe::now_ns();
  StageReport r{stage, end - start_ns, nodes_before, graph ? graph->num_nodes() : nodes_before, std::move(summary)};
  if (trace) {
    observe::Span s;
    s.kind = observe::Span::Kind::kStage;
    s.name = stage;
    s.detail = r.summary;
    s.start_ns = start_ns;
    s.end_ns = end;
    trace->on_span(s);
  }
  if (snapshots && graph) {
    observe::Snapshot snap;
    snap.stage = stage;
    snap.index = next_snapshot++;
    snap.ir_text = ir::print_graph(*graph, ir::PrintOptions{false});  // structure: weights elided
    snap.hash = ir::structural_hash(*graph);
    snap.duration_ns = r.duration_ns;
    snap.nodes_before = nodes_before;
    snap.nodes_after = r.nodes_after;
    snap.diagnostics.push_back(r.summary);
    for (ir::NodeId id : graph->node_ids())
      if (!graph->node(id).provenance.from.empty()) snap.provenance.emplace_back(id, graph->node(id).provenance.from);
    snapshots->on_snapshot(snap);
  }
  stages.push_back(std::move(r));
}

}  // namespace tessera::stages
