// Stages 5 (load) and 6 (execute): see program.h.
#include "engine/stages/program.h"

#include <atomic>
#include <condition_variable>
#include <thread>
#include <cstring>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "engine/cpu/cpu_backend.h"
#include "engine/ops/infer.h"
#include "engine/ir/verifier.h"
#include "engine/stages/nested.h"
#include "engine/stages/thread_pool.h"

namespace tessera::stages {

struct Program::RunState {
  std::vector<Tensor> inputs;
  std::vector<std::optional<Tensor>> dynamic;  // by value id
  std::vector<char> handed;  // by value id: 1 when dynamic[v] is a graph output handed over (no copy)
  std::vector<int> pending;
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  std::mutex mu;
  std::condition_variable cv;
  int completed = 0;
  bool failed = false;
  std::optional<Error> error;
  const RunOptions* options = nullptr;
};

Program::Program(ExecutionPlan plan, const ops::OpRegistry& registry) : plan_(std::move(plan)), registry_(registry) {}
Program::~Program() = default;

std::vector<std::string> Program::nested_summary() const {
  return nested_ ? nested_->summary() : std::vector<std::string>{};
}

Expected<std::unique_ptr<Program>> Program::load(ExecutionPlan plan, const backend::DeviceSet& devices,
                                                 const ops::OpRegistry& registry, StageContext& ctx) {
  int64_t start = observe::now_ns();
  std::unique_ptr<Program> p(new Program(std::move(plan), registry));
  ExecutionPlan& pl = p->plan_;
  const ir::Graph& g = pl.graph;
  for (const std::string& name : pl.devices) {
    backend::Device* d = devices.find(name);
    if (!d) return make_error("load: no device '" + name + "'");
    p->devices_.push_back(d);
  }
  for (size_t d = 0; d < pl.devices.size(); ++d) {
    size_t bytes = pl.memory[d].arena_bytes;
    TRY(std::shared_ptr<void> arena, p->devices_[d]->allocate(bytes));
    p->arenas_.push_back(std::move(arena));
    if (ctx.trace) ctx.trace->on_memory({pl.devices[d], "arena", observe::now_ns(), static_cast<int64_t>(bytes)});
  }
  for (const Step& st : pl.steps)
    if (st.nested && !p->nested_) p->nested_ = std::make_unique<NestedGraphs>(registry, pl.threads);
  p->graph_output_.assign(static_cast<size_t>(g.value_capacity()), 0);
  for (ir::ValueId v : g.outputs()) p->graph_output_[static_cast<size_t>(v)] = 1;
  // Weights: host params are used in place; a device the host cannot address gets its own copy.
  p->device_params_.assign(pl.devices.size(), {});
  for (ir::ValueId v : g.params()) p->weight_bytes_ += g.param_data(v)->nbytes();
  for (const Step& st : pl.steps) {
    backend::Device* dev = p->devices_[static_cast<size_t>(st.device)];
    if (dev->host_accessible()) continue;
    auto& placed = p->device_params_[static_cast<size_t>(st.device)];
    placed.resize(static_cast<size_t>(g.value_capacity()));
    for (ir::ValueId v : g.node(st.node).inputs) {
      if (v == ir::kNoValue || pl.slots[static_cast<size_t>(v)].kind != ValueSlot::Kind::kParam) continue;
      if (placed[static_cast<size_t>(v)].numel() != 0 && placed[static_cast<size_t>(v)].shape() == g.param_data(v)->shape()) continue;
      Tensor host = g.param_data(v)->contiguous();
      TRY(std::shared_ptr<void> mem, dev->allocate(host.nbytes()));
      RETURN_IF_ERROR(dev->stream().copy(mem.get(), host.raw_data(), host.nbytes()));
      placed[static_cast<size_t>(v)] = Tensor::wrap(mem.get(), host.dtype(), host.shape(), mem);
      p->weight_bytes_ += host.nbytes();
    }
    RETURN_IF_ERROR(dev->stream().synchronize());
  }
  // Kernel::load (oneDNN primitive creation, weight prepacking) on `threads` loader threads: the
  // kernels are independent and oneDNN creation is thread-safe. Each loader uses the executor's
  // intra-op thread count so primitives are tuned for the threads that will run them.
  std::vector<Step*> to_load;
  for (Step& st : pl.steps)
    if (st.kernel) to_load.push_back(&st);
  std::vector<Status> results(to_load.size());
  {
    std::atomic<size_t> next{0};
    auto loader = [&] {
      cpu::set_intra_op_threads(pl.threads);
      for (size_t i; (i = next.fetch_add(1)) < to_load.size();) results[i] = to_load[i]->kernel->load();
    };
    std::vector<std::thread> helpers;
    for (int t = 1; t < std::min<int>(pl.threads, static_cast<int>(to_load.size())); ++t) helpers.emplace_back(loader);
    loader();
    for (auto& t : helpers) t.join();
  }
  for (size_t i = 0; i < to_load.size(); ++i)
    if (!results[i].is_ok()) {
      Error e = results[i].error();
      e.node = to_load[i]->node;
      e.message = ir::describe_node(g.node(to_load[i]->node)) + ": loading kernel " + to_load[i]->impl + ": " + e.message;
      return e;
    }
  int kernels = static_cast<int>(to_load.size());
  int threads = pl.threads;
  p->pool_ = std::make_unique<ThreadPool>(std::max(1, pl.workers), [threads](int) { cpu::set_intra_op_threads(threads); });
  if (pl.workers <= 1)
    p->segments_ = capture_segments(pl, [&](int d) { return p->devices_[static_cast<size_t>(d)]->stream().captures(); });
  ctx.finish_stage("load", start, g.num_nodes(), nullptr,
                   std::to_string(kernels) + " kernels loaded, arenas " + std::to_string(pl.peak_bytes()) +
                       " bytes, weights " + std::to_string(p->weight_bytes_) + " bytes");
  return p;
}

std::string Program::print() const {
  std::ostringstream os;
  os << "loaded program: " << plan_.steps.size() << " steps on " << plan_.workers << " worker(s) of "
     << plan_.threads << " thread(s)\n";
  for (size_t d = 0; d < plan_.devices.size(); ++d)
    os << "  arena on " << plan_.devices[d] << ": " << plan_.memory[d].arena_bytes << " bytes (lower bound "
       << plan_.memory[d].lower_bound_bytes << ")\n";
  os << "  weights: " << weight_bytes_ << " bytes\n";
  for (const CaptureSegment& s : segments_)
    os << "  graph of steps " << s.begin << ".." << s.end - 1 << " on " << plan_.devices[static_cast<size_t>(s.device)] << ": "
       << (!s.failed.empty() ? "not captured: " + s.failed : s.graph ? std::string("captured, replayed each run") : std::string("captured at the second run")) << "\n";
  std::map<std::string, int> impls;
  for (const Step& s : plan_.steps) ++impls[s.impl];
  for (const auto& [impl, n] : impls) os << "  " << n << " x " << impl << "\n";
  return os.str();
}

void* Program::address(ir::ValueId v, RunState& state) const {
  const ValueSlot& s = plan_.slots[static_cast<size_t>(v)];
  switch (s.kind) {
    case ValueSlot::Kind::kArena:
      if (state.dynamic[static_cast<size_t>(v)]) return state.dynamic[static_cast<size_t>(v)]->raw_data();  // an output's own buffer
      return static_cast<std::byte*>(arenas_[static_cast<size_t>(s.device)].get()) + s.offset;
    case ValueSlot::Kind::kInput: return state.inputs[static_cast<size_t>(s.input_index)].raw_data();
    case ValueSlot::Kind::kParam: return const_cast<void*>(plan_.graph.param_data(v)->raw_data());
    case ValueSlot::Kind::kDynamic: return state.dynamic[static_cast<size_t>(v)]->raw_data();
    case ValueSlot::Kind::kNone: return nullptr;
  }
  return nullptr;
}

Tensor Program::tensor_of(ir::ValueId v, RunState& state) const {
  const ValueSlot& s = plan_.slots[static_cast<size_t>(v)];
  switch (s.kind) {
    case ValueSlot::Kind::kArena:
      if (state.dynamic[static_cast<size_t>(v)]) return *state.dynamic[static_cast<size_t>(v)];
      return Tensor::wrap(address(v, state), plan_.graph.value(v).type.dtype, plan_.graph.value(v).type.static_shape(),
                          arenas_[static_cast<size_t>(s.device)]);
    case ValueSlot::Kind::kInput: {
      const Tensor& in = state.inputs[static_cast<size_t>(s.input_index)];
      const ir::TensorType& t = plan_.graph.value(v).type;
      if (!t.is_static() || in.shape() == t.static_shape()) return in;
      auto view = in.reshape(t.static_shape());  // a view of a graph input (an alias step)
      return view ? *view : in;
    }
    case ValueSlot::Kind::kParam: return *plan_.graph.param_data(v);
    case ValueSlot::Kind::kDynamic: return *state.dynamic[static_cast<size_t>(v)];
    case ValueSlot::Kind::kNone: break;
  }
  return Tensor();
}

Status Program::run_step(int index, RunState& state, int worker) {
  const Step& st = plan_.steps[static_cast<size_t>(index)];
  const ir::Graph& g = plan_.graph;
  const ir::Node& n = g.node(st.node);
  int64_t t0 = state.options->trace ? observe::now_ns() : 0;
  auto fail = [&](const Error& e) -> Status {
    Error out = e;
    if (out.node < 0) {
      out.node = n.id;
      out.message = ir::describe_node(n) + ": " + out.message;
    }
    return out;
  };
  auto device_param = [&](ir::ValueId v) -> const Tensor* {
    const auto& placed = device_params_[static_cast<size_t>(st.device)];
    if (static_cast<size_t>(v) < placed.size() && plan_.slots[static_cast<size_t>(v)].kind == ValueSlot::Kind::kParam &&
        placed[static_cast<size_t>(v)].shape() == g.param_data(v)->shape() && placed[static_cast<size_t>(v)].numel() > 0)
      return &placed[static_cast<size_t>(v)];
    return nullptr;
  };

  if (st.kind == Step::Kind::kAlias) {
    // The output shares the input's bytes: nothing to do.
  } else if (st.kind == Step::Kind::kKernel) {
    backend::KernelRun run;
    run.thread = worker;
    run.bucket_view = st.bucket_view;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) {
        run.inputs.push_back({});
        continue;
      }
      const ValueSlot& s = plan_.slots[static_cast<size_t>(v)];
      void* p = address(v, state);
      if (const Tensor* dp = device_param(v)) p = const_cast<void*>(dp->raw_data());
      size_t bytes = s.kind == ValueSlot::Kind::kArena ? s.bytes : backend::plain_bytes(g.value(v).type);
      run.inputs.push_back({p, bytes});
    }
    for (ir::ValueId v : n.outputs) run.outputs.push_back({address(v, state), plan_.slots[static_cast<size_t>(v)].bytes});
    if (st.scratch_bytes)
      run.scratch = {static_cast<std::byte*>(arenas_[static_cast<size_t>(st.device)].get()) + st.scratch_offset, st.scratch_bytes};
    Status s = st.kernel->run(run);
    if (!s.is_ok()) return fail(s.error());
  } else if (st.kind == Step::Kind::kCopy) {
    ir::ValueId in = n.inputs[0], out = n.outputs[0];
    const ValueSlot& so = plan_.slots[static_cast<size_t>(out)];
    const ValueSlot& si = plan_.slots[static_cast<size_t>(in)];
    if (so.kind == ValueSlot::Kind::kDynamic) {
      state.dynamic[static_cast<size_t>(out)] = tensor_of(in, state).clone();
    } else {
      // The copy goes through the stream of the end the host cannot address (the device's), and
      // waits for it only when the host reads the result.
      backend::Device* dst = devices_[static_cast<size_t>(so.device)];
      backend::Device* src = devices_[static_cast<size_t>(si.device)];
      backend::Device* via = dst->host_accessible() ? src : dst;
      const void* from = address(in, state);
      Tensor staged;
      if (si.kind == ValueSlot::Kind::kDynamic) {  // a host tensor made at run time
        staged = tensor_of(in, state).contiguous();
        if (staged.nbytes() != so.bytes)
          return fail(make_error("copy of " + std::to_string(staged.nbytes()) + " bytes into a planned " +
                                 std::to_string(so.bytes) + "-byte buffer on " + plan_.devices[static_cast<size_t>(so.device)]));
        from = staged.raw_data();
      }
      Status s = via->stream().copy(address(out, state), from, so.bytes);
      if (s.is_ok() && (dst->host_accessible() || si.kind == ValueSlot::Kind::kDynamic)) s = via->stream().synchronize();
      if (!s.is_ok()) return fail(s.error());
    }
  } else {
    const ops::OpDef* def = registry_.find(n.op);
    std::vector<Tensor> held;
    held.reserve(n.inputs.size());
    ops::KernelContext kctx{n, *def, {}, {}, {}};
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) {
        kctx.inputs.push_back(nullptr);
        continue;
      }
      const Tensor* dp = device_param(v);
      held.push_back(dp ? *dp : tensor_of(v, state));
      kctx.inputs.push_back(&held.back());
    }
    runtime::NamedTensors scope;
    std::set<std::string> constants;  // captured weights: the nested graph's params
    if (st.nested) {
      for (ir::ValueId v : st.captured) {
        scope.emplace(g.value(v).name, tensor_of(v, state));
        if (plan_.slots[static_cast<size_t>(v)].kind == ValueSlot::Kind::kParam) constants.insert(g.value(v).name);
      }
      kctx.run_subgraph = [this, &scope, &constants](const ir::Graph& sub, const std::vector<Tensor>& in) {
        return nested_->run(sub, in, scope, constants);
      };
    }
    Status s;
    try {
      bool ran = false;
      if (st.specialised) {
        std::vector<const Tensor*> constants;
        for (ir::ValueId v : n.inputs) constants.push_back(v == ir::kNoValue ? nullptr : ops::constant_value(g, v));
        Expected<bool> r = st.specialised->run(n, *def, devices_[static_cast<size_t>(st.device)]->kernels(), plan_.threads,
                                               kctx.inputs, constants, kctx.outputs);
        if (!r.has_value()) return fail(r.error());
        ran = *r;
        // A graph output goes to the caller as it is: the step makes a new buffer when it runs
        // again while the caller still holds this one (a decoder's cache is not copied per token).
        if (ran)
          for (ir::ValueId v : n.outputs)
            if (graph_output_[static_cast<size_t>(v)] && plan_.slots[static_cast<size_t>(v)].kind == ValueSlot::Kind::kDynamic)
              state.handed[static_cast<size_t>(v)] = 1;
      }
      if (!ran) s = def->reference(kctx);
    } catch (const std::bad_alloc&) {
      s = make_error("out of memory");
    }
    if (!s.is_ok()) return fail(s.error());
    if (kctx.outputs.size() < n.outputs.size())
      return fail(make_error("kernel produced " + std::to_string(kctx.outputs.size()) + " outputs, the node has " +
                             std::to_string(n.outputs.size())));
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ir::ValueId v = n.outputs[i];
      const ir::TensorType& type = g.value(v).type;
      Tensor& t = kctx.outputs[i];
      if ((type.rank_known || !type.is_tensor()) && !type.accepts(t))
        return fail(make_error("output " + std::to_string(i) + " is " + runtime::describe_value(t) +
                               " but its type was inferred as " + type.to_string()));
      const ValueSlot& so = plan_.slots[static_cast<size_t>(v)];
      if (so.kind == ValueSlot::Kind::kArena) {
        Tensor c = t.is_contiguous() ? t : t.contiguous();
        if (c.nbytes() != so.bytes)
          return fail(make_error("output " + std::to_string(i) + " has " + std::to_string(c.nbytes()) + " bytes, planned " +
                                 std::to_string(so.bytes)));
        std::memcpy(address(v, state), c.raw_data(), c.nbytes());
      } else {
        state.dynamic[static_cast<size_t>(v)] = std::move(t);
      }
    }
  }
  if (state.options->trace) {
    // A device step is enqueued, not run: wait for it so that the span is the kernel's time.
    backend::Device* dev = devices_[static_cast<size_t>(st.device)];
    if (!dev->host_accessible() && st.kind != Step::Kind::kCopy) RETURN_IF_ERROR(dev->stream().synchronize());
    observe::Span span;
    span.kind = st.kind == Step::Kind::kCopy ? observe::Span::Kind::kCopy : observe::Span::Kind::kKernel;
    span.name = n.name.empty() ? "#" + std::to_string(n.id) : n.name;
    span.op = n.op;
    span.device = plan_.devices[static_cast<size_t>(st.device)];
    span.detail = st.impl;
    span.node = n.id;
    span.thread = worker;
    span.start_ns = t0;
    span.end_ns = observe::now_ns();
    span.bytes = st.bytes;
    span.flops = st.flops;
    state.options->trace->on_span(span);
  }
  return Status::ok();
}

std::vector<CaptureSegment> capture_segments(const ExecutionPlan& plan, const std::function<bool(int device)>& capturable) {
  std::vector<CaptureSegment> out;
  if (plan.workers > 1) return out;
  auto capturable_step = [&](const Step& s) {
    return s.kind != Step::Kind::kCopy && s.kind != Step::Kind::kReference && capturable(s.device);
  };
  const int n = static_cast<int>(plan.steps.size());
  for (int i = 0; i < n;) {
    if (!capturable_step(plan.steps[static_cast<size_t>(i)])) {
      ++i;
      continue;
    }
    CaptureSegment seg;
    seg.begin = i;
    seg.device = plan.steps[static_cast<size_t>(i)].device;
    int kernels = 0;
    while (i < n && capturable_step(plan.steps[static_cast<size_t>(i)]) && plan.steps[static_cast<size_t>(i)].device == seg.device) {
      kernels += plan.steps[static_cast<size_t>(i)].kind == Step::Kind::kKernel;
      ++i;
    }
    seg.end = i;
    if (kernels >= 2) out.push_back(std::move(seg));
  }
  return out;
}

Status Program::run_segment(CaptureSegment& seg, RunState& state) {
  auto run_steps = [&]() -> Status {
    for (int i = seg.begin; i < seg.end; ++i) RETURN_IF_ERROR(run_step(i, state, 0));
    return Status::ok();
  };
  backend::Stream& stream = devices_[static_cast<size_t>(seg.device)]->stream();
  if (state.options->trace || !seg.failed.empty() || seg.runs++ == 0) return run_steps();
  if (!seg.graph) {
    RETURN_IF_ERROR(stream.begin_capture());
    Status ran = run_steps();
    Expected<std::shared_ptr<void>> graph = stream.end_capture();
    if (!ran.is_ok()) return ran;
    if (!graph) {  // nothing ran while capturing: run the steps, and never try again
      seg.failed = graph.error().message;
      return run_steps();
    }
    seg.graph = std::move(*graph);
  }
  return stream.replay(seg.graph.get());
}

Expected<std::vector<Tensor>> Program::run(const runtime::Feeds& feeds, const RunOptions& options) {
  std::lock_guard<std::mutex> guard(run_mutex_);
  const ir::Graph& g = plan_.graph;
  RunState state;
  state.options = &options;
  TRY(state.inputs, runtime::bind_feeds(g, feeds));
  for (Tensor& t : state.inputs)
    if (!t.is_contiguous()) t = t.contiguous();
  // A donated input is written over: one whose bytes another input also reads gets its own copy.
  for (const auto& [out, in] : plan_.donations) {
    Tensor& t = state.inputs[static_cast<size_t>(plan_.slots[static_cast<size_t>(in)].input_index)];
    for (const Tensor& other : state.inputs)
      if (&other != &t && other.storage_id() == t.storage_id()) {
        t = t.clone();
        break;
      }
  }
  state.dynamic.resize(static_cast<size_t>(g.value_capacity()));
  state.handed.assign(static_cast<size_t>(g.value_capacity()), 0);
  // Graph outputs planned in host memory get a buffer of their own for this run, handed to the
  // caller without a copy (a training step returns every new weight and optimizer buffer).
  std::vector<char> own(static_cast<size_t>(g.value_capacity()), 0);
  for (ir::ValueId v : g.outputs()) {
    const ValueSlot& s = plan_.slots[static_cast<size_t>(v)];
    const ir::TensorType& t = g.value(v).type;
    if (s.kind != ValueSlot::Kind::kArena || !s.layout.empty() || own[static_cast<size_t>(v)] ||
        !devices_[static_cast<size_t>(s.device)]->host_accessible() || !t.is_static() || backend::plain_bytes(t) != s.bytes)
      continue;
    TRY(Tensor buf, Tensor::create(t.dtype, t.static_shape()));
    state.dynamic[static_cast<size_t>(v)] = std::move(buf);
    own[static_cast<size_t>(v)] = 1;
  }
  int n = static_cast<int>(plan_.steps.size());
  cpu::set_intra_op_threads(plan_.threads);

  if (pool_->size() == 1 || n <= 1) {
    size_t next_segment = 0;
    for (int i = 0; i < n;) {
      if (next_segment < segments_.size() && segments_[next_segment].begin == i) {
        CaptureSegment& seg = segments_[next_segment++];
        RETURN_IF_ERROR(run_segment(seg, state));
        i = seg.end;
      } else {
        RETURN_IF_ERROR(run_step(i, state, 0));
        ++i;
      }
    }
  } else {
    state.pending.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      state.pending[static_cast<size_t>(i)] = plan_.steps[static_cast<size_t>(i)].num_preds;
      if (state.pending[static_cast<size_t>(i)] == 0) state.ready.push(i);
    }
    pool_->run([&](int worker) {
      for (;;) {
        int step;
        {
          std::unique_lock<std::mutex> lock(state.mu);
          state.cv.wait(lock, [&] { return state.failed || state.completed == n || !state.ready.empty(); });
          if (state.failed || state.completed == n) return;
          step = state.ready.top();
          state.ready.pop();
        }
        Status s = run_step(step, state, worker);
        std::lock_guard<std::mutex> lock(state.mu);
        if (!s.is_ok()) {
          if (!state.failed) state.error = s.error();
          state.failed = true;
          state.cv.notify_all();
          return;
        }
        ++state.completed;
        for (int succ : plan_.steps[static_cast<size_t>(step)].succs)
          if (--state.pending[static_cast<size_t>(succ)] == 0) state.ready.push(succ);
        state.cv.notify_all();
      }
    });
    if (state.failed) return *state.error;
  }

  for (const auto& [out, in] : plan_.donations) own[static_cast<size_t>(out)] = 3;
  std::vector<Tensor> outs;
  for (ir::ValueId v : g.outputs()) {
    if (own[static_cast<size_t>(v)] == 3) {  // written over its donated input: that tensor
      outs.push_back(state.inputs[static_cast<size_t>(plan_.slots[static_cast<size_t>(v)].input_index)]);
    } else if (own[static_cast<size_t>(v)] == 1) {  // handed over once; a repeated output is copied
      outs.push_back(*state.dynamic[static_cast<size_t>(v)]);
      own[static_cast<size_t>(v)] = 2;
    } else if (state.handed[static_cast<size_t>(v)] == 1) {  // a specialised step's own new buffer
      outs.push_back(*state.dynamic[static_cast<size_t>(v)]);
      state.handed[static_cast<size_t>(v)] = 2;  // a repeated output is copied
    } else {
      outs.push_back(tensor_of(v, state).clone());
    }
  }
  return outs;
}

}  // namespace tessera::stages
