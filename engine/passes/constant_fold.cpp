// Constant folding.
//
// Algorithm: visit nodes in topological order. A node folds when
//   - it is Shape and its input's type is static: the result comes from the type alone, or
//   - every present operand is a compile-time constant (a param or a Constant node's value), it
//     has at least one operand (or is a Constant node, which becomes a param), none of them one of
//     PassContext::variables (weights about to be trained), no graph attribute, is not random (Dropout with training_mode,
//     Random*) and is not a placement op (Copy, Reorder: they exist for devices and layouts);
// and its inferred result size does not exceed the limit. The node's reference kernel computes
// the outputs, each becomes a new param (named after the value it replaces), and the node is
// removed. Topological order makes chains fold in one run: Shape -> Gather -> Unsqueeze ->
// Concat feeding a Reshape's shape collapses into one i64 param. Inputs left unused are dce's.
// Types are refined during the walk once something folded, and re-inferred after a change: a
// folded shape makes downstream types more precise.
#include <algorithm>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

// Shape's output from a static input type (start/end clamped as ONNX opset 15 says).
Tensor shape_of(const ir::Node& n, const ir::TensorType& t) {
  const Shape s = t.static_shape();
  const int64_t r = static_cast<int64_t>(s.size());
  auto clamp = [r](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r); };
  const ir::Attribute* a_start = n.attr("start");
  const ir::Attribute* a_end = n.attr("end");
  const int64_t start = clamp(a_start ? a_start->i() : 0);
  const int64_t end = std::max(start, clamp(a_end ? a_end->i() : r));
  std::vector<int64_t> dims(s.begin() + start, s.begin() + end);
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

int64_t static_bytes(const ir::TensorType& t) {
  const int64_t n = t.static_numel();
  return n < 0 ? -1 : n * dtype_size(t.dtype);
}

class ConstantFoldPass : public Pass {
 public:
  explicit ConstantFoldPass(int64_t limit) : limit_(limit) {}
  std::string name() const override { return "constant-fold"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    int folded = 0, skipped_large = 0;
    for (ir::NodeId id : order) {
      // Once something folded, each node's types are refined from its inputs' as the walk
      // reaches it, so that a Shape downstream of a folded Reshape target folds in this same
      // run (Swin-T's shape chains needed over 10 runs, past the fixpoint's limit, without it).
      // A refinement that fails leaves the types as they were; the final inference reports it.
      if (folded && !has_graph_attribute(g.node(id))) (void)ops::infer_node(g, id, ctx.registry);
      const ir::Node& n = g.node(id);
      std::vector<Tensor> results;
      if (n.op == "Shape" && n.inputs.size() == 1 && g.value(n.inputs[0]).type.is_static()) {
        results.push_back(shape_of(n, g.value(n.inputs[0]).type));
      } else {
        if (!foldable(g, n, ctx.variables)) continue;
        bool too_big = false;
        for (ir::ValueId v : n.outputs) too_big |= static_bytes(g.value(v).type) > limit_;
        if (too_big) {
          ++skipped_large;
          continue;
        }
        auto evaluated = evaluate(g, n, ctx.registry);
        if (!evaluated) {  // it would fail at run time too; leave it there to report it
          ctx.diagnostics.push_back("constant-fold: not folding " + n.op + " #" + std::to_string(id) +
                                    ": " + evaluated.error().message);
          continue;
        }
        results = std::move(*evaluated);
        int64_t bytes = 0;
        for (const Tensor& t : results) bytes += static_cast<int64_t>(t.nbytes());
        if (bytes > limit_) {
          ++skipped_large;
          continue;
        }
      }
      if (results.size() < n.outputs.size()) continue;
      // Each result becomes a param named after the value it replaces (graph outputs and
      // captures resolve by name, so they keep working).
      const std::vector<ir::ValueId> outs = n.outputs;
      const std::string node_name = n.name.empty() ? n.op : n.name;
      g.remove_node(id);
      for (size_t i = 0; i < outs.size(); ++i) {
        const std::string old_name = g.value(outs[i]).name;
        const std::string base = old_name.empty() ? node_name + ".folded" + std::to_string(i) : old_name;
        const ir::ValueId p = g.add_param(unique_value_name(g, base), results[i]);
        g.replace_all_uses(outs[i], p);
      }
      ++folded;
    }
    if (folded) ctx.diagnostics.push_back("constant-fold: folded " + std::to_string(folded) + " nodes");
    if (skipped_large)
      ctx.diagnostics.push_back("constant-fold: left " + std::to_string(skipped_large) +
                                " nodes unfolded, results over " + std::to_string(limit_) + " bytes");
    // Folded shapes make downstream types more precise (a Reshape's target becomes known).
    if (folded) RETURN_IF_ERROR(ops::infer_types(g, ctx.registry));
    return folded > 0;
  }

 private:
  static bool foldable(const ir::Graph& g, const ir::Node& n, const std::set<ir::ValueId>& variables) {
    if (n.op == "Copy" || n.op == "Reorder") return false;
    if (is_impure(n) || has_graph_attribute(n)) return false;
    if (feeds_qdq_pattern(g, n)) return false;  // qdq-fuse's, not a float weight to precompute
    for (ir::ValueId v : n.outputs)  // params are tensors: a sequence or optional stays computed
      if (v != ir::kNoValue && !g.value(v).type.is_tensor()) return false;
    if (n.op == "Constant") return true;  // becomes a param: kernels then see it at compile time
    bool any = false;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) continue;
      if (!ops::constant_value(g, v) || variables.count(v)) return false;
      any = true;
    }
    return any;
  }

  static Expected<std::vector<Tensor>> evaluate(const ir::Graph& g, const ir::Node& n,
                                                const ops::OpRegistry& registry) {
    const ops::OpDef* def = registry.find(n.op);
    if (!def || !def->reference) return make_error("no reference kernel for op '" + n.op + "'", {}, n.id);
    ops::KernelContext kc{n, *def, {}, {}, {}};
    for (ir::ValueId v : n.inputs) kc.inputs.push_back(v == ir::kNoValue ? nullptr : ops::constant_value(g, v));
    RETURN_IF_ERROR(def->reference(kc));
    return std::move(kc.outputs);
  }

  int64_t limit_;
};

}  // namespace

std::unique_ptr<Pass> make_constant_fold_pass(int64_t max_result_bytes) {
  return std::make_unique<ConstantFoldPass>(max_result_bytes);
}

}  // namespace tessera::passes
