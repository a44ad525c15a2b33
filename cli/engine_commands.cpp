// `tessera passes` (every stage and pass that changed the graph, with snapshots) and
// `tessera bench` (latency, compile time, peak arena bytes, GFLOP/s).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "engine/autodiff/training_step.h"
#include "engine/dist/communicator.h"
#include "engine/stages/session.h"

namespace tessera::cli {
namespace {

// Writes each snapshot as DIR/NNN-stage[-pass].tir.
class DumpSink : public observe::SnapshotSink {
 public:
  explicit DumpSink(std::string dir) : dir_(std::move(dir)) {}
  void on_snapshot(const observe::Snapshot& s) override {
    char name[64];
    std::snprintf(name, sizeof name, "%03d-", s.index);
    std::string file = name + s.stage + (s.pass.empty() ? "" : "-" + s.pass) + ".tir";
    std::ofstream out(std::filesystem::path(dir_) / file);
    out << "// stage " << s.stage << (s.pass.empty() ? "" : ", pass " + s.pass) << ", " << s.nodes_before << " -> "
        << s.nodes_after << " nodes, " << s.duration_ns / 1000 << " us, hash " << std::hex << s.hash << std::dec << "\n";
    out << s.ir_text;
    if (!out) failed_ = true;
    ++written_;
  }
  int written_ = 0;
  bool failed_ = false;

 private:
  std::string dir_;
};

// Sends each snapshot to both sinks (either may be null).
struct TeeSnapshots : observe::SnapshotSink {
  TeeSnapshots(observe::SnapshotSink* a, observe::SnapshotSink* b) : first(a), second(b) {}
  void on_snapshot(const observe::Snapshot& s) override {
    if (first) first->on_snapshot(s);
    if (second) second->on_snapshot(s);
  }
  observe::SnapshotSink* first;
  observe::SnapshotSink* second;
};

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

stages::InputShapes shapes_of(const std::map<std::string, Tensor>& feeds) {
  stages::InputShapes s;
  for (const auto& [name, t] : feeds) s[name] = t.shape();
  return s;
}

}  // namespace

int run_passes(const PassesOptions& o) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = load_typed(o.file, reg);
  if (!g) return fail(g.error());
  auto feeds = make_feeds(*g, {}, o.dims, 0, nullptr);
  if (!feeds) return fail(feeds.error());
  std::unique_ptr<DumpSink> sink;
  if (!o.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.dump_dir, ec);
    if (ec) return fail(make_error("cannot create the dump directory: " + ec.message(), o.dump_dir));
    sink = std::make_unique<DumpSink>(o.dump_dir);
  }
  RunRecording rec = start_recording(o.record, "passes", g->name(), 0,
                                     {{"file", o.file}, {"pipeline", o.pipeline.empty() ? "default" : o.pipeline}});
  rec.log_graph(*g);
  TeeSnapshots tee{sink.get(), rec.snapshots()};
  stages::SessionOptions so;
  so.pipeline = o.pipeline;
  so.snapshots = tee.first || tee.second ? &tee : nullptr;
  autodiff::TrainingSpec spec;
  dist::DataParallel dp;
  if (o.world_size > 1 && !o.train) return fail(make_error("--world-size needs --train (data parallel splits the training step)"));
  if (o.accumulate > 1 && !o.train) return fail(make_error("--accumulate needs --train (gradient accumulation is part of the training step)"));
  if (o.sync_bn && o.world_size <= 1) return fail(make_error("--sync-bn needs --world-size above 1 (it synchronises batch norms over ranks)"));
  if ((o.bucket_mb > 0 || o.first_bucket_mb > 0) && o.world_size <= 1)
    return fail(make_error(std::string(o.bucket_mb > 0 ? "--bucket-mb" : "--first-bucket-mb") +
                           " needs --world-size above 1 (it caps the gradient buckets the ranks all-reduce)"));
  spec.accumulate = o.accumulate;
  stages::InputShapes shapes = shapes_of(*feeds);
  if (o.train) {
    so.training = &spec;
    dp.world_size = o.world_size;
    if (o.bucket_mb > 0) dp.bucket_bytes = mib_bytes(o.bucket_mb);
    if (o.first_bucket_mb > 0) dp.first_bucket_bytes = mib_bytes(o.first_bucket_mb);
    dp.sync_batchnorm = o.sync_bn;
    if (o.world_size > 1) so.data_parallel = &dp;
    // The step's own inputs: labels, the learning rate, the step, the trained state.
    if (Status st = autodiff::add_step_input_shapes(*g, spec, shapes); !st) return rec.fail(st.error().within(o.file));
  }
  so.trace = rec.trace();
  so.device = o.device;
  so.tf32 = o.precision == "tf32";
  so.bf16 = o.precision == "bf16";
  backend::DeviceSet devices = backend::DeviceSet::discover(false, o.device.rfind("cpu", 0) != 0, so.tf32);
  auto c = stages::compile_all(*g, reg, shapes, so, devices, o.print_ir);
  if (!c) return rec.fail(c.error().within(o.file));
  const stages::StageContext& ctx = *c->context;
  std::cout << "compiled '" << printable(g->name()) << "' (" << printable(o.file) << ")\n";
  std::cout << "pipeline: " << c->pipeline << "\n";
  std::cout << "device: " << (c->preferred.empty() ? std::string("cpu") : c->preferred) << "\n";
  for (const stages::StageReport& s : ctx.stages) {
    std::printf("%-9s %12s  %5d -> %5d nodes  %s\n", s.stage.c_str(), ms(s.duration_ns).c_str(), s.nodes_before,
                s.nodes_after, s.summary.c_str());
    for (const stages::PassReport& p : ctx.passes)
      if (p.stage == s.stage && p.changed)
        std::printf("  %-20s %12s  %5d -> %5d nodes\n", p.pass.c_str(), ms(p.duration_ns).c_str(), p.nodes_before,
                    p.nodes_after);
  }
  int unchanged = 0;
  for (const stages::PassReport& p : ctx.passes) unchanged += !p.changed;
  std::cout << unchanged << " pass runs changed nothing (not listed)\n";
  if (sink) {
    if (sink->failed_) return rec.fail(make_error("could not write every snapshot", o.dump_dir));
    std::cout << "wrote " << sink->written_ << " snapshots to " << o.dump_dir << "\n";
  }
  if (o.print_ir) std::cout << c->optimised << c->program->plan().print();
  return rec.finish();
}

int run_bench(const BenchOptions& o) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = load_typed(o.file, reg);
  if (!g) return fail(g.error());
  if (o.runs < 1) return fail(make_error("--runs must be at least 1"));
  auto feeds = make_feeds(*g, o.inputs, o.dims, o.seed, nullptr);
  if (!feeds) return fail(feeds.error());
  stages::SessionOptions so;
  so.threads = o.threads > 0 ? o.threads : default_threads();
  so.inter_op_threads = o.inter_op;
  so.device = o.device;
  so.tf32 = o.precision == "tf32";
  so.bf16 = o.precision == "bf16";
  RunRecording rec = start_recording(o.record, "bench", g->name(), o.seed,
                                     {{"file", o.file}, {"threads", std::to_string(so.threads)}, {"device", o.device},
                                      {"runs", std::to_string(o.runs)}, {"warmup", std::to_string(o.warmup)},
                                      {"precision", o.precision}});
  rec.log_graph(*g);
  so.trace = rec.trace();  // compile stages and passes
  stages::Session session(*g, reg, so);
  auto prog = session.compile(shapes_of(*feeds));
  if (!prog) return rec.fail(prog.error().within(o.file));
  const double compile_ms = static_cast<double>(session.last_compile_ns()) / 1e6;
  // The warm-up runs are traced (recorded); the timed runs are not (unless --trace-timed, which
  // measures what tracing costs), and start after the writer has stored the warm-up's spans.
  stages::RunOptions traced;
  traced.trace = rec.trace();
  for (int i = 0; i < o.warmup; ++i) {
    auto r = (*prog)->run(*feeds, traced);
    if (!r) return rec.fail(r.error().within(o.file));
  }
  rec.flush();
  std::vector<double> times;
  const LoadProbe load;  // what other processes took of the cores during the timed runs
  for (int i = 0; i < o.runs; ++i) {
    int64_t t0 = observe::now_ns();
    auto r = o.trace_timed ? (*prog)->run(*feeds, traced) : (*prog)->run(*feeds);
    if (!r) return rec.fail(r.error().within(o.file));
    times.push_back(static_cast<double>(observe::now_ns() - t0) / 1e6);
  }
  std::sort(times.begin(), times.end());
  const double median = times.size() % 2 ? times[times.size() / 2] : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  const double min = times.front();
  const stages::ExecutionPlan& plan = (*prog)->plan();
  const double gflops = plan.total_flops / (median * 1e-3) / 1e9;
  rec.metric("bench/median_ms", median);
  rec.metric("bench/min_ms", min);
  rec.metric("bench/compile_ms", compile_ms);
  rec.metric("bench/gflops", gflops);
  rec.metric("bench/peak_bytes", static_cast<double>(plan.peak_bytes()));
  record_device_memory(rec, plan);
  const double others = load.others_cores();
  if (others >= 0) rec.metric("bench/other_load_cores", others);
  // Steps on the reference kernel, counted by op and reason.
  // A step whose shapes were known only at run time counts when a run fell back to its reference
  // kernel; one that always found a kernel made for its shapes counts as specialised.
  std::map<std::string, int> reference;
  int reference_steps = 0, specialised_steps = 0;
  size_t specialised_kernels = 0;
  for (const stages::Step& s : plan.steps)
    if (s.kind == stages::Step::Kind::kReference) {
      if (s.specialised) specialised_kernels += s.specialised->kernels_made();
      if (s.specialised && s.specialised->reference_runs() == 0 && s.specialised->kernel_runs() > 0) {
        ++specialised_steps;
        continue;
      }
      std::string why = s.why_reference;
      if (s.specialised && !s.specialised->why_reference().empty()) why += " (" + s.specialised->why_reference() + ")";
      ++reference[why];
      ++reference_steps;
    }
  // The device, and why there is no GPU when auto found none.
  const std::string device = session.device() ? *session.device() : std::string("cpu");
  std::string device_line = device;
  if (const backend::Device* d = session.devices().find(device)) device_line += " (" + d->description() + ")";
  if (!session.devices().cuda_unavailable().empty()) device_line += "; no CUDA device: " + session.devices().cuda_unavailable();
  // Steps off the chosen device (a GPU's), by op and the split's reason.
  int off_device = 0;
  std::map<std::string, int> off_reasons;
  for (const stages::Step& s : plan.steps) {
    if (s.kind == stages::Step::Kind::kCopy || plan.devices[static_cast<size_t>(s.device)] == device) continue;
    ++off_device;
    std::string why = "placed by the optimiser";
    for (const stages::Placement& p : plan.fallbacks)
      if (p.node == s.node) why = p.reason;
    ++off_reasons[plan.graph.node(s.node).op + ": " + why];
  }
  if (o.json) {
    nlohmann::json arenas = nlohmann::json::object();
    for (size_t d = 0; d < plan.devices.size(); ++d) arenas[plan.devices[d]] = plan.memory[d].arena_bytes;
    nlohmann::json j{{"median_ms", median},       {"min_ms", min}, {"device", device},
                     {"cuda_unavailable", session.devices().cuda_unavailable()}, {"arena_bytes", arenas},
                     {"steps_off_device", off_device}, {"off_device", off_reasons},
                     {"compile_ms", compile_ms},  {"peak_bytes", plan.peak_bytes()},
                     {"gflops", gflops},          {"lower_bound_bytes", plan.lower_bound_bytes()},
                     {"threads", so.threads},     {"inter_op", so.inter_op_threads}, {"runs", o.runs},
                     {"flops", plan.total_flops}, {"steps", plan.steps.size()},
                     {"reference_steps", reference_steps}, {"reference_ops", reference},
                     {"specialised_steps", specialised_steps}, {"specialised_kernels", specialised_kernels},
                     {"other_load_cores", others}};
    print_json(j);
    return rec.finish();
  }
  int fast = 0;
  for (const stages::Step& s : plan.steps) fast += s.kind == stages::Step::Kind::kKernel;
  std::printf("%s: %d runs on %d thread(s)\n", o.file.c_str(), o.runs, so.threads);
  std::printf("  device: %s\n", printable(device_line).c_str());
  if (plan.devices.size() > 1) {
    for (size_t d = 0; d < plan.devices.size(); ++d)
      std::printf("  arena on %s: %.2f MB\n", plan.devices[d].c_str(), static_cast<double>(plan.memory[d].arena_bytes) / 1e6);
    std::printf("  %d step(s) not on %s:\n", off_device, device.c_str());
    for (const auto& [why, count] : off_reasons) std::printf("    %4d x %s\n", count, printable(why).c_str());
  }
  std::printf("  median %.3f ms, min %.3f ms\n", median, min);
  std::printf("  compile (prepare..load) %.1f ms; %zu steps, %d fast kernels\n", compile_ms, plan.steps.size(), fast);
  std::printf("  peak arena %.2f MB (lifetime lower bound %.2f MB)\n", static_cast<double>(plan.peak_bytes()) / 1e6,
              static_cast<double>(plan.lower_bound_bytes()) / 1e6);
  std::printf("  %.3f GFLOP per run, %.1f GFLOP/s\n", plan.total_flops / 1e9, gflops);
  std::printf("  load: %s during the timed runs\n", load.describe().c_str());
  if (specialised_steps > 0)
    std::printf("  %d step(s) with shapes known only at run time, on %zu kernel(s) made for the shapes seen\n",
                specialised_steps, specialised_kernels);
  if (reference_steps > 0) {
    std::printf("  %d step(s) on reference kernels:\n", reference_steps);
    for (const auto& [why, count] : reference) std::printf("    %4d x %s\n", count, printable(why).c_str());
  }
  return rec.finish();
}

}  // namespace tessera::cli
