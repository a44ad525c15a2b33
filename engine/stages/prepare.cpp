// Stage 1, prepare (see prepare.h).
#include "engine/stages/prepare.h"

#include <set>

#include "engine/autodiff/training_step.h"
#include "engine/ir/hash.h"
#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/passes/instrumentations.h"
#include "engine/passes/pass_manager.h"

namespace tessera::stages {
namespace {

// Sends a snapshot of `g` after a pass that changed it (when a snapshot sink is attached).
void record_snapshot(StageContext& ctx, const std::string& stage, const std::string& pass, const ir::Graph& g,
                     int64_t duration_ns, int nodes_before) {
  if (!ctx.snapshots) return;
  observe::Snapshot snap;
  snap.stage = stage;
  snap.pass = pass;
  snap.index = ctx.next_snapshot++;
  snap.ir_text = ir::print_graph(g, ir::PrintOptions{false});  // structure: weights elided
  snap.hash = ir::structural_hash(g);
  snap.duration_ns = duration_ns;
  snap.nodes_before = nodes_before;
  snap.nodes_after = g.num_nodes();
  for (ir::NodeId id : g.node_ids())
    if (!g.node(id).provenance.from.empty()) snap.provenance.emplace_back(id, g.node(id).provenance.from);
  ctx.snapshots->on_snapshot(snap);
}

// Feeds pass timings, spans and snapshots into the StageContext.
class StageInstrumentation : public passes::PassInstrumentation {
 public:
  StageInstrumentation(StageContext& ctx, std::string stage) : ctx_(ctx), stage_(std::move(stage)) {}
  void before_pass(const passes::Pass&, const ir::Graph& g) override {
    nodes_before_ = g.num_nodes();
    start_ = observe::now_ns();
  }
  Status after_pass(const passes::Pass& pass, const ir::Graph& g, bool changed, int64_t duration_ns) override {
    ctx_.passes.push_back({stage_, pass.name(), duration_ns, changed, nodes_before_, g.num_nodes()});
    if (ctx_.trace) {
      observe::Span s;
      s.kind = observe::Span::Kind::kPass;
      s.name = pass.name();
      s.detail = stage_ + (changed ? ": changed" : ": unchanged");
      s.start_ns = start_;
      s.end_ns = start_ + duration_ns;
      ctx_.trace->on_span(s);
    }
    if (changed) record_snapshot(ctx_, stage_, pass.name(), g, duration_ns, nodes_before_);
    return Status::ok();
  }

 private:
  StageContext& ctx_;
  std::string stage_;
  int nodes_before_ = 0;
  int64_t start_ = 0;
};

// The CPU backend's layout choice as a pass (engine/cpu/cpu_backend.h).
class LayoutPass : public passes::Pass {
 public:
  std::string name() const override { return "layout"; }
  Expected<bool> run(ir::Graph& graph, passes::PassContext& ctx) override {
    return cpu::assign_layouts(graph, ctx.registry);
  }
};

Status bind_shapes(ir::Graph& g, const InputShapes& shapes) {
  std::string names;
  for (ir::ValueId v : g.inputs()) names += (names.empty() ? "" : ", ") + g.value(v).name;
  for (const auto& [name, shape] : shapes) {
    bool found = false;
    for (ir::ValueId v : g.inputs()) found |= g.value(v).name == name;
    if (!found) return make_error("the graph has no input named '" + name + "' (inputs: " + names + ")");
  }
  std::map<std::string, int64_t> symbols;
  for (ir::ValueId v : g.inputs()) {
    ir::Value& in = g.value(v);
    auto it = shapes.find(in.name);
    if (it == shapes.end()) continue;
    const Shape& s = it->second;
    if (!in.type.is_tensor())
      return make_error("input '" + in.name + "' expects " + in.type.to_string() + " but was given a tensor of shape " +
                        shape_to_string(s));
    // kDynamicDim: a symbolic dimension the Session keeps symbolic (it changes from run to run).
    Shape probe = s;
    for (int64_t& d : probe) d = d == kDynamicDim ? 0 : d;
    if (!in.type.accepts(in.type.dtype, probe) ||
        (in.type.rank_known && [&] {
          for (size_t d = 0; d < s.size(); ++d)
            if (s[d] == kDynamicDim && !in.type.dims[d].is_symbolic()) return true;
          return false;
        }()))
      return make_error("input '" + in.name + "' expects " + in.type.to_string() + " but was given shape " +
                        shape_to_string(s));
    if (in.type.rank_known)
      for (size_t d = 0; d < s.size(); ++d)
        if (in.type.dims[d].is_symbolic() && s[d] != kDynamicDim) {
          auto [pos, inserted] = symbols.emplace(in.type.dims[d].symbol, s[d]);
          if (!inserted && pos->second != s[d])
            return make_error("input '" + in.name + "' has " + in.type.dims[d].symbol + " = " + std::to_string(s[d]) +
                              " but another input has " + in.type.dims[d].symbol + " = " + std::to_string(pos->second));
        }
    std::vector<ir::Dim> dims;
    for (size_t d = 0; d < s.size(); ++d) dims.push_back(s[d] == kDynamicDim ? in.type.dims[d] : ir::Dim::known(s[d]));
    in.type = ir::TensorType(in.type.dtype, std::move(dims));
  }
  return Status::ok();
}

}  // namespace

std::string PreparedGraph::print() const { return ir::print_graph(graph); }

Expected<bool> run_pipeline(ir::Graph& graph, const std::string& pipeline, const std::string& stage,
                            StageContext& ctx, std::set<ir::ValueId> variables) {
  passes::PassRegistry reg = passes::default_pass_registry();
  reg.add("layout", [] { return std::make_unique<LayoutPass>(); });
  TRY(passes::PassManager pm, passes::PassManager::parse(pipeline, reg));
  pm.add_instrumentation(std::make_unique<passes::VerifierInstrumentation>(ctx.registry));
  pm.add_instrumentation(std::make_unique<StageInstrumentation>(ctx, stage));
  passes::PassContext pctx{ctx.registry, {}, std::move(variables)};
  return pm.run(graph, pctx);
}

Expected<PreparedGraph> prepare(ir::Graph graph, const InputShapes& shapes, StageContext& ctx) {
  int64_t start = observe::now_ns();
  int before = graph.num_nodes();
  RETURN_IF_ERROR(ops::check_graph(graph, ctx.registry));
  if (ctx.training) {
    // The caller feeds the training step, whose extra inputs (labels, lr, state...) the forward
    // graph does not have yet: bind only the forward graph's inputs here.
    InputShapes forward_shapes;
    for (ir::ValueId v : graph.inputs())
      if (auto it = shapes.find(graph.value(v).name); it != shapes.end()) forward_shapes.insert(*it);
    RETURN_IF_ERROR(bind_shapes(graph, forward_shapes));
  } else {
    RETURN_IF_ERROR(bind_shapes(graph, shapes));
  }
  RETURN_IF_ERROR(ops::infer_types(graph, ctx.registry));
  if (ctx.training) {
    // Autodiff runs before constant folding proper: folding would turn weight-only subgraphs (a
    // transposed weight) into new constants and cut them off from training. What does not depend
    // on a trained weight folds first (shape chains into a Reshape's target, a Slice's bounds), so
    // that the gradient rules see static shapes and known starts (ViT's attention Slices, Swin-T's
    // pooling after shape-computed Reshapes); the float constants it makes are not weights. The
    // exporters' decomposed LayerNorm, GELU and Swish are fused here too, so that autodiff
    // differentiates one op with one backward kernel (LayerNormalizationGrad, GeluGrad) instead
    // of a dozen element-wise ones (training steps of Swin-T 13%, ConvNeXt-T 24% faster).
    const std::vector<std::string> trained = autodiff::trainable_params(graph, *ctx.training);
    std::set<ir::ValueId> variables;
    for (const std::string& name : trained) variables.insert(*graph.find_value(name));
    TRY(bool shapes_folded, run_pipeline(graph, "constant-fold,fuse-patterns", "prepare", ctx, std::move(variables)));
    autodiff::TrainingSpec spec = *ctx.training;
    if (shapes_folded) {
      const std::set<std::string> was(trained.begin(), trained.end());
      for (const std::string& name : autodiff::trainable_params(graph, spec))
        if (!was.count(name)) spec.frozen.push_back(name);
    }
    int64_t t0 = observe::now_ns();
    int nodes = graph.num_nodes();
    TRY(graph, autodiff::build_training_step(graph, spec, ctx.registry));
    int64_t t1 = observe::now_ns();
    ctx.passes.push_back({"prepare", "autodiff", t1 - t0, true, nodes, graph.num_nodes()});
    record_snapshot(ctx, "prepare", "autodiff", graph, t1 - t0, nodes);
  }
  TRY(bool folded, run_pipeline(graph, "constant-fold,dce", "prepare", ctx));
  int dynamic = 0;
  for (ir::NodeId id : graph.node_ids())
    for (ir::ValueId v : graph.node(id).outputs)
      if (!graph.value(v).type.is_static()) ++dynamic;
  std::string summary = std::to_string(graph.num_nodes()) + " nodes" + (folded ? ", constants folded" : "") +
                        (dynamic ? ", " + std::to_string(dynamic) + " values with run-time shapes" : ", all shapes static");
  ctx.finish_stage("prepare", start, before, &graph, summary);
  return PreparedGraph{std::move(graph)};
}

}  // namespace tessera::stages
