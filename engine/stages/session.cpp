// Session: the six stages end to end (see session.h).
#include "engine/stages/session.h"

namespace tessera::stages {

Expected<Compilation> compile_all(ir::Graph graph, const ops::OpRegistry& registry, const InputShapes& shapes,
                                  const SessionOptions& options, const backend::DeviceSet& devices, bool keep_text) {
  Compilation c;
  c.context = std::make_unique<StageContext>(registry);
  StageContext& ctx = *c.context;
  ctx.trace = options.trace;
  ctx.snapshots = options.snapshots;
  ctx.training = options.training;
  ctx.donate_inputs = options.donate_inputs;
  ctx.data_parallel = options.data_parallel;
  TRY(PreparedGraph prepared, prepare(std::move(graph), shapes, ctx));
  if (keep_text) c.prepared = prepared.print();
  TRY(PlacedGraph placed, split(std::move(prepared), devices, options.device, ctx));
  if (keep_text) c.placed = placed.print();
  std::string pipeline = options.pipeline.empty() ? default_optimise_pipeline() : options.pipeline;
  TRY(PlacedGraph optimised, optimise(std::move(placed), pipeline, ctx));
  if (keep_text) c.optimised = optimised.print();
  c.device_of = optimised.device_of;
  c.fallbacks = optimised.fallbacks;
  c.preferred = optimised.preferred;
  TRY(ExecutionPlan plan, compile(std::move(optimised), devices, options.threads, ctx));
  plan.workers = std::max(1, options.inter_op_threads);
  TRY(c.program, Program::load(std::move(plan), devices, registry, ctx));
  return c;
}

Session::Session(ir::Graph graph, const ops::OpRegistry& registry, SessionOptions options)
    : graph_(std::move(graph)),
      registry_(registry),
      options_(std::move(options)),
      devices_(backend::DeviceSet::standard(options_.test_device)),
      last_context_(std::make_unique<StageContext>(registry)) {}

Session::~Session() = default;

Expected<Program*> Session::compile(const InputShapes& shapes) {
  if (auto it = programs_.find(shapes); it != programs_.end()) return it->second.get();
  int64_t start = observe::now_ns();
  TRY(Compilation c, compile_all(graph_, registry_, shapes, options_, devices_, false));
  last_compile_ns_ = observe::now_ns() - start;
  last_context_ = std::move(c.context);
  Program* p = c.program.get();
  programs_.emplace(shapes, std::move(c.program));
  return p;
}

Expected<std::vector<Tensor>> Session::run(const runtime::Feeds& feeds) {
  InputShapes shapes;
  for (const auto& [name, t] : feeds)
    if (t.is_tensor()) shapes[name] = t.shape();  // a sequence's length does not specialise the program
  TRY(Program * p, compile(shapes));
  last_program_ = p;
  RunOptions ro;
  ro.trace = options_.trace;
  if (options_.adapt_threads) {
    if (!governor_) governor_ = std::make_unique<LoadGovernor>();
    ro.threads = governor_->threads_for(options_.threads);
  }
  return p->run(feeds, ro);
}

}  // namespace tessera::stages
