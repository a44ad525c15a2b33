// Common subexpression elimination.
//
// Algorithm (one walk in topological order, like MLIR's CSE without regions):
//   1. Params: small params (<= the byte limit) with the same dtype, shape and bytes are merged
//      into the first one (by list order); uses move to it, dce removes the rest.
//   2. Nodes: the key of a node is (op, operands, number of outputs, attributes), hashed with
//      attribute_hash and confirmed by full equality (tensors by value, nested graphs by their
//      printed text). Operands are compared after earlier merges, so whole duplicate chains merge
//      in one walk. A duplicate's outputs are replaced by the first node's (rewrite.h's name rule:
//      a duplicate that is a graph output or captured by name stays) and the duplicate is removed.
//   Random ops (Dropout in training, Random*) never merge: two draws are two values.
#include <unordered_map>

#include "engine/ir/hash.h"
#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

bool nodes_equal(const ir::Node& a, const ir::Node& b) {
  return a.op == b.op && a.inputs == b.inputs && a.outputs.size() == b.outputs.size() &&
         ir::same_attributes(a.attrs, b.attrs);
}

uint64_t node_key(const ir::Node& n) {
  uint64_t h = std::hash<std::string>()(n.op) ^ (n.outputs.size() * 0x9e3779b97f4a7c15ull);
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (ir::ValueId v : n.inputs) mix(static_cast<uint64_t>(static_cast<int64_t>(v)));
  for (const auto& [key, a] : n.attrs) {
    mix(std::hash<std::string>()(key));
    mix(ir::attribute_hash(a));
  }
  return h;
}

class CsePass : public Pass {
 public:
  explicit CsePass(int64_t param_limit) : param_limit_(param_limit) {}
  std::string name() const override { return "cse"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    const std::set<std::string> captured = captured_names(g);
    int merged_params = merge_params(g, captured);
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    std::unordered_multimap<uint64_t, ir::NodeId> seen;
    int merged = 0;
    for (ir::NodeId id : order) {
      const ir::Node& n = g.node(id);
      if (is_impure(n)) continue;
      const uint64_t key = node_key(n);
      ir::NodeId first = ir::kNoNode;
      auto [lo, hi] = seen.equal_range(key);
      for (auto it = lo; it != hi && first == ir::kNoNode; ++it)
        if (nodes_equal(g.node(it->second), n)) first = it->second;
      if (first == ir::kNoNode) {
        seen.emplace(key, id);
        continue;
      }
      if (!merge(g, first, id, captured)) continue;
      ctx.diagnostics.push_back("cse: merged " + n.op + " #" + std::to_string(id) + " into #" + std::to_string(first));
      g.remove_node(id);
      ++merged;
    }
    if (merged_params)
      ctx.diagnostics.push_back("cse: merged " + std::to_string(merged_params) + " duplicate params");
    return merged > 0 || merged_params > 0;
  }

 private:
  // Replaces every output of `dup` by the matching output of `first`, all or nothing.
  static bool merge(ir::Graph& g, ir::NodeId first, ir::NodeId dup, const std::set<std::string>& captured) {
    const ir::Node& d = g.node(dup);
    for (size_t i = 0; i < d.outputs.size(); ++i) {
      const ir::ValueId v = d.outputs[i], f = g.node(first).outputs[i];
      // A named output of the duplicate passes its name to first's output, which must be free.
      if ((is_graph_output(g, v) || is_captured(g, v, captured)) &&
          (is_graph_output(g, f) || is_captured(g, f, captured)))
        return false;
    }
    const std::vector<ir::ValueId> outs = d.outputs;
    for (size_t i = 0; i < outs.size(); ++i) {
      const ir::ValueId f = g.node(first).outputs[i];
      if (use_count(g, outs[i], captured) == 0) continue;
      if (!replace_value(g, outs[i], f, captured)) return false;  // checked above: not reached
    }
    return true;
  }

  int merge_params(ir::Graph& g, const std::set<std::string>& captured) {
    std::unordered_multimap<uint64_t, ir::ValueId> seen;
    int merged = 0;
    for (ir::ValueId p : g.params()) {
      const Tensor* t = g.param_data(p);
      if (!t || static_cast<int64_t>(t->nbytes()) > param_limit_) continue;
      if (is_graph_output(g, p) || is_captured(g, p, captured)) continue;
      const uint64_t h = ir::tensor_hash(*t);
      ir::ValueId first = ir::kNoValue;
      auto [lo, hi] = seen.equal_range(h);
      for (auto it = lo; it != hi && first == ir::kNoValue; ++it)
        if (g.param_data(it->second)->equals(*t)) first = it->second;
      if (first == ir::kNoValue) {
        seen.emplace(h, p);
        continue;
      }
      if (g.uses(p).empty()) continue;
      g.replace_all_uses(p, first);
      ++merged;
    }
    return merged;
  }

  int64_t param_limit_;
};

}  // namespace

std::unique_ptr<Pass> make_cse_pass(int64_t max_param_bytes) { return std::make_unique<CsePass>(max_param_bytes); }

}  // namespace tessera::passes
