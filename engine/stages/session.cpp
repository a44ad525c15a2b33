// Session: the six stages end to end (see session.h).
#include "engine/stages/session.h"

#include "engine/cpu/cpu_backend.h"

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
  ctx.bf16 = options.bf16;
  if (options.bf16) {
    if (std::string why = cpu::bf16_unsupported(); !why.empty()) return make_error("bf16 precision: " + why);
  }
  ctx.data_parallel = options.data_parallel;
  TRY(PreparedGraph prepared, prepare(std::move(graph), shapes, ctx));
  if (keep_text) c.prepared = prepared.print();
  TRY(std::string device, devices.resolve(options.device));
  TRY(PlacedGraph placed, split(std::move(prepared), devices, device, ctx));
  if (options.bf16 && device != kHostDevice)
    return make_error("bf16 precision is for the CPU (AVX-512 BF16 / AMX); on " + device + " use tf32 or fp32");
  if (keep_text) c.placed = placed.print();
  bool host_only = true;
  for (ir::NodeId id : placed.graph.node_ids()) host_only &= placed.device(id) == kHostDevice;
  std::string pipeline = options.pipeline.empty() ? default_optimise_pipeline(host_only) : options.pipeline;
  c.pipeline = pipeline;
  TRY(PlacedGraph optimised, optimise(std::move(placed), pipeline, ctx));
  RETURN_IF_ERROR(refit(optimised, devices, registry));
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
      devices_(backend::DeviceSet::discover(options_.test_device, options_.device.rfind("cpu", 0) != 0, options_.tf32)),
      last_context_(std::make_unique<StageContext>(registry)) {}

Session::~Session() = default;

Expected<Program*> Session::compile(const InputShapes& shapes) { return compile_for(shapes, options_.threads); }

Expected<Program*> Session::compile_for(const InputShapes& shapes, int threads) {
  const auto key = std::make_pair(shapes, threads);
  if (auto it = programs_.find(key); it != programs_.end()) return it->second.get();
  int64_t start = observe::now_ns();
  SessionOptions options = options_;
  options.threads = threads;
  TRY(Compilation c, compile_all(graph_, registry_, shapes, options, devices_, false));
  last_compile_ns_ = observe::now_ns() - start;
  last_context_ = std::move(c.context);
  Program* p = c.program.get();
  programs_.emplace(key, std::move(c.program));
  return p;
}

InputShapes Session::key_of(const runtime::Feeds& feeds, int threads) {
  InputShapes shapes;
  for (const auto& [name, t] : feeds)
    if (t.is_tensor()) shapes[name] = t.shape();  // a sequence's length does not specialise the program
  if (options_.sizes_before_dynamic <= 0 || options_.training) return shapes;
  // A program compiled for these very shapes stays the fastest (blocked layouts, static kernels).
  if (programs_.count(std::make_pair(shapes, threads))) return shapes;
  for (ir::ValueId v : graph_.inputs()) {
    const ir::Value& in = graph_.value(v);
    auto it = shapes.find(in.name);
    if (it == shapes.end() || !in.type.rank_known || in.type.dims.size() != it->second.size()) continue;
    for (size_t d = 0; d < in.type.dims.size(); ++d) {
      const ir::Dim& dim = in.type.dims[d];
      if (!dim.is_symbolic()) continue;
      std::set<int64_t>& seen = sizes_seen_[dim.symbol];
      if (seen.size() <= static_cast<size_t>(options_.sizes_before_dynamic)) seen.insert(it->second[d]);
      if (seen.size() > static_cast<size_t>(options_.sizes_before_dynamic)) dynamic_symbols_.insert(dim.symbol);
    }
  }
  for (ir::ValueId v : graph_.inputs()) {
    const ir::Value& in = graph_.value(v);
    auto it = shapes.find(in.name);
    if (it == shapes.end() || !in.type.rank_known || in.type.dims.size() != it->second.size()) continue;
    for (size_t d = 0; d < in.type.dims.size(); ++d)
      if (in.type.dims[d].is_symbolic() && dynamic_symbols_.count(in.type.dims[d].symbol)) it->second[d] = kDynamicDim;
  }
  return shapes;
}

Expected<std::vector<Tensor>> Session::run(const runtime::Feeds& feeds) {
  // With adapt_threads, a program per thread count the load calls for: oneDNN's primitives keep
  // the thread count they were created for (their parallel regions name it), so fewer threads
  // need primitives made for fewer.
  int threads = options_.threads;
  if (options_.adapt_threads) {
    if (!governor_) governor_ = std::make_unique<LoadGovernor>();
    threads = governor_->threads_for(options_.threads);
  }
  InputShapes shapes = key_of(feeds, threads);
  TRY(Program * p, compile_for(shapes, threads));
  last_program_ = p;
  RunOptions ro;
  ro.trace = options_.trace;
  return p->run(feeds, ro);
}

}  // namespace tessera::stages
