// The engine's front door: a graph, compiled through the six stages for the input shapes it is
// run with (one compiled program cached per set of shapes), then executed.
//
// Usage:
//   ops::OpRegistry reg = ops::make_default_registry();
//   SessionOptions opts;  opts.threads = 2;                // opts.inter_op_threads: steps at once
//   Session session(std::move(graph), reg, opts);
//   TRY(std::vector<Tensor> outs, session.run({{"x", x}}));
//   for (const StageReport& r : session.context().stages) ...   // what each stage did
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>

#include "engine/core/cpu_load.h"
#include "engine/stages/optimise.h"
#include "engine/stages/program.h"

namespace tessera::stages {

struct SessionOptions {
  int threads = 1;                      // intra-op threads of every kernel
  // Steps run at once. 1 (the default, as ONNX Runtime's sequential mode): steps in order on the
  // calling thread, each kernel using `threads`. On 2 cores, 2 workers of 2 intra-op threads each
  // were 1.2x (LeNet, GoogLeNet) to 4x (MobileNetV3-Small) slower: thread wake-ups per step and
  // two OpenMP teams contending for the cores.
  int inter_op_threads = 1;
  std::string pipeline;                 // optimise pipeline; empty: default_optimise_pipeline()
  // Preferred device: cpu, cuda, cuda:N, auto (the first GPU, else cpu) or cpu:test. Nodes go
  // there when it has a kernel for them, else to the CPU with the reason (Compilation::fallbacks).
  std::string device = kHostDevice;
  bool tf32 = true;  // CUDA: f32 matrix work (cuBLAS, cuDNN) on TF32 tensor cores; false: full f32
  // CPU: Conv, MatMul and Gemm on bf16 (values rounded to bf16, f32 accumulation, f32 storage and
  // master weights), through oneDNN's AVX-512 BF16 / AMX kernels. Compiling fails on a CPU without
  // them (cpu::bf16_unsupported) and for graphs placed on another device.
  bool bf16 = false;
  bool test_device = false;             // add the CPU-side test device "cpu:test"
  observe::TraceSink* trace = nullptr;
  observe::SnapshotSink* snapshots = nullptr;
  const autodiff::TrainingSpec* training = nullptr;  // compile the training step of the graph
  bool donate_inputs = false;           // StageContext::donate_inputs: fed tensors may be overwritten
  const dist::DataParallel* data_parallel = nullptr;  // StageContext::data_parallel
  // Each run takes fewer intra-op threads while other processes keep cores busy (LoadGovernor):
  // with one of two cores taken, 2 threads were 3x slower than 1. A program is compiled for each
  // thread count used (an arena each; weights fed, as in training, are not duplicated). Off:
  // always `threads` (bench, inference).
  bool adapt_threads = false;
  // A symbolic input dimension that has taken more than this many sizes stays symbolic in the
  // programs compiled after for new sizes: their steps get kernels made per shape at run time
  // (specialise.h) instead of one compilation per size (a decoder's growing cache, OCR lines of
  // every width). Sizes that already have a program keep it: a static program is the faster (a
  // ResNet-18 at a size it was compiled for ran 1.45x slower in the symbolic program: no blocked
  // layouts). 0: always compile per size.
  int sizes_before_dynamic = 4;
};

// Every artefact of one compilation, for printing (`tessera passes`, the studio's pass stepper).
struct Compilation {
  std::unique_ptr<StageContext> context;
  std::string prepared, placed, optimised;  // printed artefacts (filled when keep_text)
  std::string pipeline;                     // the optimise pipeline that ran
  std::unique_ptr<Program> program;
  // The placement of the optimised graph (by its node ids; program->plan().graph has the same
  // ids), and the nodes the split kept off the preferred device, with the reason.
  std::vector<std::string> device_of;
  std::vector<Placement> fallbacks;
  std::string preferred;
};

class Session {
 public:
  Session(ir::Graph graph, const ops::OpRegistry& registry, SessionOptions options);
  ~Session();

  // Compiles (prepare .. load) for these shapes unless a program for them exists.
  Expected<Program*> compile(const InputShapes& shapes);
  // Compiles for the feeds' shapes when needed, then executes.
  Expected<std::vector<Tensor>> run(const runtime::Feeds& feeds);

  // Symbols left symbolic because their sizes kept changing (SessionOptions::sizes_before_dynamic).
  const std::set<std::string>& dynamic_symbols() const { return dynamic_symbols_; }
  // The program the last run() used (nullptr before the first).
  Program* last_program() const { return last_program_; }
  // Reports of the last compilation (stages and passes).
  const StageContext& context() const { return *last_context_; }
  int64_t last_compile_ns() const { return last_compile_ns_; }
  const backend::DeviceSet& devices() const { return devices_; }
  // The device options.device names here ("auto" resolved), or why it names none.
  Expected<std::string> device() const { return devices_.resolve(options_.device); }

 private:
  ir::Graph graph_;
  const ops::OpRegistry& registry_;
  SessionOptions options_;
  backend::DeviceSet devices_;
  Expected<Program*> compile_for(const InputShapes& shapes, int threads);
  std::map<std::pair<InputShapes, int>, std::unique_ptr<Program>> programs_;  // by shapes and threads
  std::unique_ptr<StageContext> last_context_;
  int64_t last_compile_ns_ = 0;
  Program* last_program_ = nullptr;
  std::unique_ptr<LoadGovernor> governor_;  // when options_.adapt_threads
  std::map<std::string, std::set<int64_t>> sizes_seen_;  // by input symbol
  std::set<std::string> dynamic_symbols_;                // left symbolic from now on
  InputShapes key_of(const runtime::Feeds& feeds, int threads);
};

// Runs the six stages' first five on `graph` and keeps every printed artefact.
Expected<Compilation> compile_all(ir::Graph graph, const ops::OpRegistry& registry, const InputShapes& shapes,
                                  const SessionOptions& options, const backend::DeviceSet& devices, bool keep_text);

}  // namespace tessera::stages
