// Operator fusion into FusedConv / FusedMatMul / FusedGemm (engine/ops/fused.cpp).
//
// Algorithm: for each Conv, MatMul or Gemm (float types) in topological order, follow the chain
// of single uses from its output (a value used once, by one node operand, not a graph output,
// not captured) and absorb, in any order, at most:
//   - one bias Add with a constant operand broadcasting along the channel axis (Conv: [C, 1, .., 1]
//     or [1, C, 1, .., 1] or [C] for 1 spatial axis; MatMul / Gemm: [N] or [1.., N]). A Conv's
//     existing bias is summed with it; a Gemm takes it as C only when it has none (beta := 1);
//     a MatMul also takes a non-constant [N] (a trained bias, fed to a training step) as its Bias;
//   - one residual Add whose other operand is not constant and has exactly the output's type;
// then at most one activation (Relu, LeakyRelu, Clip with constant bounds, Sigmoid, Tanh,
// Gelu with approximate "none", HardSwish), which ends the chain. The chain is fused when it
// absorbed anything: one new node (the main node's name and origin, provenance from every
// absorbed node) replaces the chain's last value, taking its name, and the chain is removed.
// No cycle can appear: every intermediate has its single use inside the chain, so the residual
// operand cannot depend on the chain.
#include <limits>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

struct Chain {
  ir::NodeId main = ir::kNoNode;
  std::vector<ir::NodeId> absorbed;  // in chain order
  ir::ValueId bias = ir::kNoValue;   // the constant operand of the bias Add
  ir::ValueId residual = ir::kNoValue;
  std::string activation;
  double alpha = 0, beta = 0;
  ir::ValueId last = ir::kNoValue;   // the value the fused node replaces
};

// Reads a constant scalar bound of Clip (absent: +-inf).
bool clip_bound(const ir::Graph& g, const ir::Node& n, size_t i, double dflt, double& out) {
  out = dflt;
  if (i >= n.inputs.size() || n.inputs[i] == ir::kNoValue) return true;
  const Tensor* t = ops::constant_value(g, n.inputs[i]);
  if (!t || t->numel() != 1) return false;
  out = t->get(0);
  return true;
}

// Fills the activation of `chain` from node `n`, if it is a supported activation.
bool activation_of(const ir::Graph& g, const ir::Node& n, Chain& chain) {
  const std::string& op = n.op;
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") {
    chain.activation = op;
    return true;
  }
  if (op == "LeakyRelu" || op == "Swish") {
    chain.activation = op;
    chain.alpha = n.attr("alpha") ? n.attr("alpha")->f() : op == "Swish" ? 1.0 : 0.01;
    return true;
  }
  if (op == "HardSigmoid") {
    chain.activation = op;
    chain.alpha = n.attr("alpha") ? n.attr("alpha")->f() : 0.2;
    chain.beta = n.attr("beta") ? n.attr("beta")->f() : 0.5;
    return true;
  }
  if (op == "Gelu") {
    if (n.attr("approximate") && n.attr("approximate")->s() != "none") return false;
    chain.activation = op;
    return true;
  }
  if (op == "Clip") {
    const double inf = std::numeric_limits<double>::infinity();
    if (!clip_bound(g, n, 1, -inf, chain.alpha) || !clip_bound(g, n, 2, inf, chain.beta)) return false;
    chain.activation = op;
    return true;
  }
  return false;
}

// Is constant `t` a bias along the channel axis for an output of rank `rank` with `c` channels?
bool is_channel_bias(const Tensor& t, bool conv, int rank, int64_t c) {
  if (t.numel() != c || t.rank() > rank) return false;
  // Position of the channel axis in t's shape when right-aligned against the output.
  const int axis = conv ? 1 - (rank - t.rank()) : t.rank() - 1;
  if (axis < 0 || axis >= t.rank()) return false;
  for (int d = 0; d < t.rank(); ++d)
    if (d != axis && t.dim(d) != 1) return false;
  return t.dim(axis) == c || c == 1;
}

class FusePass : public Pass {
 public:
  std::string name() const override { return "fuse"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    const std::set<std::string> captured = captured_names(g);
    int fused = 0;
    for (ir::NodeId id : order) {
      if (!g.has_node(id)) continue;
      const std::string& op = g.node(id).op;
      if (op != "Conv" && op != "MatMul" && op != "Gemm") continue;
      Chain chain = follow(g, id, captured, ctx.registry);
      if (chain.absorbed.empty()) continue;
      emit(g, chain, ctx);
      ++fused;
    }
    return fused > 0;
  }

 private:
  static Chain follow(const ir::Graph& g, ir::NodeId id, const std::set<std::string>& captured,
                      const ops::OpRegistry& registry) {
    Chain chain;
    chain.main = id;
    const ir::Node& main = g.node(id);
    chain.last = main.outputs[0];
    const ir::TensorType& out = g.value(chain.last).type;
    if (!is_float(out.dtype) || !out.rank_known || out.rank() < 1) return chain;
    const bool conv = main.op == "Conv";
    const int channel_axis = conv ? 1 : out.rank() - 1;
    if (channel_axis >= out.rank() || !out.dims[channel_axis].is_known()) return chain;
    const int64_t channels = out.dims[channel_axis].size;
    const bool has_bias_input = main.inputs.size() > 2 && main.inputs[2] != ir::kNoValue;
    // A Gemm's C and a non-constant Conv bias cannot absorb a bias Add.
    const bool bias_closed = has_bias_input && (main.op == "Gemm" || !ops::constant_value(g, main.inputs[2]));
    for (;;) {
      const ir::NodeId user = sole_user(g, chain.last, captured);
      if (user == ir::kNoNode) break;
      const ir::Node& u = g.node(user);
      if (g.value(u.outputs[0]).type != out || u.outputs.size() != 1) break;
      if (u.op == "Add") {
        const ir::ValueId other = u.inputs[0] == chain.last ? u.inputs[1] : u.inputs[0];
        if (other == chain.last) break;  // x + x
        const Tensor* k = ops::constant_value(g, other);
        if (k) {
          if (chain.bias != ir::kNoValue || bias_closed || !is_channel_bias(*k, conv, out.rank(), channels) ||
              k->dtype() != out.dtype)
            break;
          chain.bias = other;
        } else if (main.op == "MatMul" && !has_bias_input && chain.bias == ir::kNoValue && out.rank() > 1 &&
                   g.value(other).type == ir::TensorType::of(out.dtype, {channels})) {
          chain.bias = other;  // a bias computed or fed at run time (a trained one: a training step's input)
        } else {
          if (chain.residual != ir::kNoValue || g.value(other).type != out) break;
          chain.residual = other;
        }
      } else if (!(registry.find(u.op) && activation_of(g, u, chain))) {
        break;
      }
      chain.absorbed.push_back(user);
      chain.last = u.outputs[0];
      if (!chain.activation.empty()) break;
    }
    return chain;
  }

  static void emit(ir::Graph& g, const Chain& chain, PassContext& ctx) {
    const ir::Node& main = g.node(chain.main);
    const std::string fused_op = "Fused" + main.op;
    std::vector<ir::ValueId> inputs(main.inputs.begin(), main.inputs.begin() + std::min<size_t>(main.inputs.size(), 3));
    while (inputs.size() < 3) inputs.push_back(ir::kNoValue);
    ir::Attributes attrs = main.attrs;
    if (chain.bias != ir::kNoValue && !ops::constant_value(g, chain.bias)) {
      inputs[2] = chain.bias;
    } else if (chain.bias != ir::kNoValue) {
      const Tensor& k = *ops::constant_value(g, chain.bias);
      const int64_t c = k.numel();
      const ir::ValueId old_b = main.op == "Conv" ? inputs[2] : ir::kNoValue;
      const Tensor* b = old_b == ir::kNoValue ? nullptr : ops::constant_value(g, old_b);
      Tensor sum(k.dtype(), {c});
      for (int64_t i = 0; i < c; ++i) sum.set(i, k.get(i) + (b ? b->get(b->numel() == 1 ? 0 : i) : 0.0));
      const std::string base = (main.name.empty() ? main.op : main.name) + ".bias";
      inputs[2] = g.add_param(unique_value_name(g, base), sum);
      if (main.op == "Gemm") attrs.insert_or_assign("beta", ir::Attribute(1.0));
    }
    if (chain.residual != ir::kNoValue) inputs.push_back(chain.residual);
    while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
    if (!chain.activation.empty()) {
      attrs.insert_or_assign("activation", ir::Attribute(chain.activation));
      const bool beta = chain.activation == "Clip" || chain.activation == "HardSigmoid";
      if (beta || chain.activation == "LeakyRelu" || chain.activation == "Swish")
        attrs.insert_or_assign("activation_alpha", ir::Attribute(chain.alpha));
      if (beta) attrs.insert_or_assign("activation_beta", ir::Attribute(chain.beta));
    }
    const std::string name = main.name;
    const std::string origin = main.provenance.origin;
    const ir::NodeId n = g.add_node(fused_op, inputs, 1, name, std::move(attrs));
    ir::Node& f = g.node(n);
    f.provenance.origin = origin;
    f.provenance.from.push_back(chain.main);
    for (ir::NodeId a : chain.absorbed) f.provenance.from.push_back(a);
    g.value(f.outputs[0]).type = g.value(chain.last).type;
    take_over(g, chain.last, f.outputs[0]);
    std::string what = g.node(chain.main).op;
    for (ir::NodeId a : chain.absorbed) what += "+" + g.node(a).op;
    ctx.diagnostics.push_back("fuse: " + what + " -> " + fused_op + " #" + std::to_string(n));
    g.remove_node(chain.main);
    for (ir::NodeId a : chain.absorbed) g.remove_node(a);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_pass() { return std::make_unique<FusePass>(); }

}  // namespace tessera::passes
