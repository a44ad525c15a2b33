// Stages 5 and 6: load (plan -> loaded program) and execute (loaded program + inputs -> outputs).
//
// load allocates one arena per device, places weights (host params stay where they are; devices
// the host cannot address get their own copy), and calls Kernel::load once per kernel (oneDNN
// primitives, prepacked weights). execute runs the steps in order on the calling thread when the
// plan has one worker (the default), else the step DAG on a pool of plan.workers threads: a step
// becomes ready when all its producers are done, ready steps run in step order on the first free
// worker (the calling thread is worker 0), so independent branches overlap. Kernels are deterministic
// and the memory plan is valid for every schedule, so results do not depend on the thread count.
//
// Usage:
//   TRY(std::unique_ptr<Program> prog, Program::load(std::move(plan), devices, registry, ctx));
//   TRY(std::vector<Tensor> outs, prog->run({{"x", x}}));
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/interpreter.h"
#include "engine/stages/compile.h"

namespace tessera::stages {

class ThreadPool;
class NestedGraphs;

struct RunOptions {
  observe::TraceSink* trace = nullptr;  // spans for every step, when set
};

// A run of consecutive steps on one device whose stream captures work (CUDA graphs): the first
// run executes them (libraries initialise lazily), the second captures and replays them, later
// runs replay them in one launch. Traced runs execute step by step (a span each).
struct CaptureSegment {
  int begin = 0, end = 0;  // steps [begin, end)
  int device = 0;
  std::shared_ptr<void> graph;
  int runs = 0;
  std::string failed;      // why capture failed ("": it did not); then the steps run one by one
};
// The segments of `plan` that are worth a graph: at least two steps, none a copy (copies touch
// host memory) or a host-side step, on a device `capturable` says yes to; sequential plans only.
std::vector<CaptureSegment> capture_segments(const ExecutionPlan& plan, const std::function<bool(int device)>& capturable);

class Program {
 public:
  static Expected<std::unique_ptr<Program>> load(ExecutionPlan plan, const backend::DeviceSet& devices,
                                                 const ops::OpRegistry& registry, StageContext& ctx);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Runs once. Feeds are checked against the graph inputs (names, dtypes, shapes). One run at a
  // time per program (a second concurrent caller waits).
  Expected<std::vector<Tensor>> run(const runtime::Feeds& feeds, const RunOptions& options = {});

  const ExecutionPlan& plan() const { return plan_; }
  // Arenas, placed weights, kernels by implementation.
  std::string print() const;
  size_t weight_bytes() const { return weight_bytes_; }
  const std::vector<CaptureSegment>& segments() const { return segments_; }
  // The nested graphs run so far: compiled (for how many shapes) or interpreted, with the reason.
  std::vector<std::string> nested_summary() const;

 private:
  Program(ExecutionPlan plan, const ops::OpRegistry& registry);
  struct RunState;
  Status run_step(int index, RunState& state, int worker);
  Status run_segment(CaptureSegment& seg, RunState& state);
  void* address(ir::ValueId v, RunState& state) const;
  Tensor tensor_of(ir::ValueId v, RunState& state) const;

  ExecutionPlan plan_;
  const ops::OpRegistry& registry_;
  std::vector<backend::Device*> devices_;
  std::vector<std::shared_ptr<void>> arenas_;           // per device
  std::vector<std::vector<Tensor>> device_params_;      // per device: params copied there (by value id), else empty
  size_t weight_bytes_ = 0;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<CaptureSegment> segments_;
  std::mutex run_mutex_;
  std::unique_ptr<NestedGraphs> nested_;
  std::vector<char> graph_output_;  // by value id: 1 for the graph's outputs  // If branches and Loop bodies, compiled on first use
};

}  // namespace tessera::stages
