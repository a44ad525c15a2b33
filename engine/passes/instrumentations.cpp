// The verifier, timing and snapshot instrumentations.
#include "engine/passes/instrumentations.h"

#include <cstdio>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"

namespace tessera::passes {
namespace {

Error after(const Pass& pass, Error e) {
  e.message = "after pass '" + pass.name() + "': " + e.message;
  return e;
}

// Every ranked type stored in `g` equals the re-inferred one in `inferred` (same ids).
Status check_types_fresh(const ir::Graph& g, const ir::Graph& inferred) {
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    for (ir::ValueId v : n.outputs) {
      const ir::TensorType& stored = g.value(v).type;
      const ir::TensorType& fresh = inferred.value(v).type;
      if (stored.rank_known && stored != fresh)
        return make_error(ir::describe_node(n) + ": output %" + std::to_string(v) + " is typed " +
                              stored.to_string() + " but inference gives " + fresh.to_string(),
                          {}, n.id);
    }
  }
  return Status::ok();
}

}  // namespace

void VerifierInstrumentation::before_pass(const Pass& pass, const ir::Graph& graph) {
  (void)pass;
  if (graph.num_nodes() > kUnchangedCheckNodes) {
    hash_before_.reset();
    known_hash_.reset();
    return;
  }
  hash_before_ = known_hash_ ? *known_hash_ : hasher_.hash(graph);
}

Status VerifierInstrumentation::after_pass(const Pass& pass, const ir::Graph& graph, bool changed,
                                           int64_t duration_ns) {
  (void)duration_ns;
  known_hash_.reset();
  const bool hashed = graph.num_nodes() <= kUnchangedCheckNodes;
  if (!changed) {
    if (!hashed || !hash_before_) return Status::ok();
    const uint64_t now = hasher_.hash(graph);
    if (now != *hash_before_)
      return after(pass, make_error("the pass reported no change but the graph's structural hash changed"));
    known_hash_ = now;
    return Status::ok();
  }
  Status st = ir::verify(graph);
  if (!st.is_ok()) return after(pass, st.error());
  ir::Graph copy = graph;
  st = ops::infer_types(copy, registry_);
  if (!st.is_ok()) return after(pass, st.error());
  st = check_types_fresh(graph, copy);
  if (!st.is_ok()) return after(pass, st.error());
  if (hashed) known_hash_ = hasher_.hash(graph);
  return Status::ok();
}

void TimingInstrumentation::before_pass(const Pass& pass, const ir::Graph& graph) {
  (void)pass;
  nodes_before_ = graph.num_nodes();
}

Status TimingInstrumentation::after_pass(const Pass& pass, const ir::Graph& graph, bool changed,
                                         int64_t duration_ns) {
  records_.push_back({pass.name(), duration_ns, changed, nodes_before_, graph.num_nodes()});
  return Status::ok();
}

std::string TimingInstrumentation::report() const {
  std::string out;
  for (const PassTiming& t : records_) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-16s %9.3f ms  %-9s %d -> %d nodes\n", t.pass.c_str(),
                  static_cast<double>(t.duration_ns) / 1e6, t.changed ? "changed" : "unchanged",
                  t.nodes_before, t.nodes_after);
    out += buf;
  }
  return out;
}

void SnapshotInstrumentation::before_pass(const Pass& pass, const ir::Graph& graph) {
  (void)pass;
  nodes_before_ = graph.num_nodes();
  diagnostics_before_ = ctx_ ? ctx_->diagnostics.size() : 0;
}

Status SnapshotInstrumentation::after_pass(const Pass& pass, const ir::Graph& graph, bool changed,
                                           int64_t duration_ns) {
  if (!sink_ || !changed) return Status::ok();
  observe::Snapshot s;
  s.stage = stage_;
  s.pass = pass.name();
  s.index = next_index_ ? (*next_index_)++ : 0;
  s.ir_text = ir::print_graph(graph, ir::PrintOptions{false});  // structure: weights elided
  s.hash = hasher_.hash(graph);
  s.duration_ns = duration_ns;
  s.changed = true;
  s.nodes_before = nodes_before_;
  s.nodes_after = graph.num_nodes();
  if (ctx_)
    for (size_t i = diagnostics_before_; i < ctx_->diagnostics.size(); ++i)
      s.diagnostics.push_back(ctx_->diagnostics[i]);
  for (ir::NodeId id : graph.node_ids())
    if (!graph.node(id).provenance.from.empty())
      s.provenance.emplace_back(id, graph.node(id).provenance.from);
  sink_->on_snapshot(s);
  return Status::ok();
}

}  // namespace tessera::passes
