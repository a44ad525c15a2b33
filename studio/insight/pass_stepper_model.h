// The pass stepper's model (headless, tested without a window): compiles a graph through the
// engine's stages with a snapshot sink and keeps every snapshot (stage, pass, index, time,
// changed, node counts, diagnostics, provenance), the placement of the optimised graph (device
// per node, fallbacks with their reasons) and the memory plan of every device. Or it loads the
// snapshots a recorded run left in the insight store.
//
// Snapshots are kept without weight data: each top-level `param` line of the IR text becomes an
// `input` line with the same id, name and type (strip_param_data). The stepper shows structure,
// and ResNet-50's weights printed as text take 370 MB per snapshot.
//
// Compilation runs on a worker thread (compile()); the result is delivered on the model's thread
// and announced by finished(ok). Every failure (a graph that does not type, a pass error, an
// exception) becomes message(), never a crash. compile_now() does the same synchronously.
//
// Usage:
//   PassStepperModel model(registry);        // the registry outlives the model
//   model.set_graph(graph, {{"x", {1, 1, 28, 28}}});
//   model.set_mode({/*training=*/true, /*world_size=*/4});  // optional: the training step
//   model.compile();                         // ... finished(true)
//   model.snapshots()[3].pass;               // "fuse-conv-relu"
//   TRY(ir::Graph g, model.snapshot_graph(3));
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/observe/sinks.h"
#include "engine/ops/op_def.h"
#include "studio/insight/memory_plan_chart.h"

namespace tessera::studio {

// Graph input name -> concrete shape (stages::InputShapes).
using StepperShapes = std::map<std::string, Shape>;

// What to compile: the graph for inference, or its training step (forward, softmax cross-entropy
// loss, gradients, SGD with momentum, as `tessera train` builds by default), and with more than
// one rank the data-parallel step whose split stage inserts the gradient all-reduces (what
// `tessera passes --train --world-size N` shows).
struct StepperMode {
  bool training = false;
  int world_size = 1;
};

// Where the compiled graph's nodes run.
struct StepperPlacement {
  std::string preferred;
  std::vector<std::string> device_of;  // by node id of the optimised graph ("" for none)
  std::map<ir::NodeId, std::string> fallback_reason;  // nodes kept off the preferred device
  const std::string& device(ir::NodeId id) const;     // "" when unknown
};

// The IR text with every top-level param's data dropped and the param declared as an input of
// the same id, name and type (nested graphs' params are kept). Parses as the same structure.
std::string strip_param_data(const std::string& ir_text);

class PassStepperModel : public QObject {
  Q_OBJECT

 public:
  explicit PassStepperModel(const ops::OpRegistry& registry, QObject* parent = nullptr);
  // Never waits: a running compilation finishes on its own and its result is dropped.
  ~PassStepperModel() override;

  // The graph to compile and the shapes of its inputs; inputs not listed take their declared
  // dims, each symbolic or unknown dim taking symbolic_default() (1 unless set).
  void set_graph(ir::Graph graph, StepperShapes shapes = {});
  void set_symbolic_default(int64_t size) { symbolic_default_ = size; }
  int64_t symbolic_default() const { return symbolic_default_; }
  const ir::Graph& graph() const { return graph_; }
  void set_mode(StepperMode mode) { mode_ = mode; }
  StepperMode mode() const { return mode_; }
  // The concrete input shapes compile() will use.
  Expected<StepperShapes> input_shapes() const;

  // Starts compiling on a worker thread; false (and nothing starts) while one is running.
  // Emits started() now and finished(ok) on this object's thread when done.
  bool compile();
  // Compiles on this thread; returns the error that message() also holds. Emits finished(ok).
  Status compile_now();
  bool is_busy() const { return busy_.load(); }
  // Waits for a running compilation and delivers its result (tests).
  void wait();

  // Replaces the snapshots with those of run `run` in the insight database at `db_path` (no
  // placement or memory plan: the store keeps neither). Emits finished(ok).
  Status load_run(const std::string& db_path, int64_t run);

  // ---- results (empty until a compilation or load succeeded) ----
  const std::vector<observe::Snapshot>& snapshots() const { return snapshots_; }
  // Snapshot `index`'s graph, parsed from its IR text (params as inputs, see above). An error names the run (when loaded), the
  // snapshot, and the engine versions when the text does not parse.
  Expected<ir::Graph> snapshot_graph(int index) const;
  const StepperPlacement& placement() const { return placement_; }
  const std::vector<DeviceMemory>& memory() const { return memory_; }
  int64_t compile_ns() const { return compile_ns_; }
  // The last failure ("" after a success), and where the snapshots came from ("compiled LeNet",
  // "run 12 (passes lenet, engine 0.4.0)").
  const QString& message() const { return message_; }
  const QString& source() const { return source_; }
  int64_t run() const { return run_; }  // -1 unless loaded from a run
  const std::string& run_engine_version() const { return run_engine_version_; }

 Q_SIGNALS:
  void started();
  void finished(bool ok);

 private:
  struct Result;
  static Result compile_graph(ir::Graph graph, const ops::OpRegistry& registry, Expected<StepperShapes> shapes,
                              StepperMode mode);
  void apply(Result result);
  void join();

  const ops::OpRegistry& registry_;
  ir::Graph graph_;
  StepperShapes shapes_;
  int64_t symbolic_default_ = 1;
  StepperMode mode_;
  std::vector<observe::Snapshot> snapshots_;
  StepperPlacement placement_;
  std::vector<DeviceMemory> memory_;
  int64_t compile_ns_ = 0;
  QString message_, source_;
  int64_t run_ = -1;
  std::string run_engine_version_;
  std::atomic<bool> busy_{false};
  std::thread worker_;
};

}  // namespace tessera::studio
