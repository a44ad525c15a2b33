// The `tessera` subcommands. Each returns the process exit code: 0 success, 1 a failure it has
// reported on stderr (file, place, reason).
#pragma once

#include <cstdint>
#include <map>

#include "engine/core/cpu_load.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/observe/sinks.h"
#include "engine/ops/op_def.h"
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::stages {
struct ExecutionPlan;
}

namespace tessera::data {
class Source;
}
namespace tessera::insight {
class Recorder;
}

namespace tessera::cli {

// Prints `j` and a newline on stdout, flushed (every --json output). A string that is not valid
// UTF-8 (a name in a hostile file, or in a run recorded from one) is printed with U+FFFD in place
// of the bad bytes instead of aborting the command.
void print_json(const nlohmann::json& j, int indent = -1);
// A name from a file, for a terminal: control characters (newline, NUL, escape...) written as
// C escapes ("\n", "\x00"), so a name cannot fake or hide a line of the output.
std::string printable(std::string_view text);

struct InfoOptions {
  std::string file;
  std::vector<std::string> dims;  // --dim SYMBOL=SIZE: sizes for FLOPs (default 1)
  bool json = false;
  bool devices = false;  // --devices: list the devices (FILE optional)
};
int run_info(const InfoOptions& o);

// Where `run`, `train`, `bench` and `passes` record (runs_command.cpp): main() fills `db` with
// --db or insight::default_database_path; --no-record turns recording off.
struct RecordOptions {
  std::string db;
  bool no_record = false;
  std::string command_line;  // argv joined, stored with the run
};

// One command's run in the insight database (runs_command.cpp). Inactive (every call a no-op,
// every sink null) with --no-record, or when the database cannot be used: then a warning on
// stderr names the file and why, and the command goes on without recording.
//
//   RunRecording rec = start_recording(o.record, "run", g->name(), o.seed, {{"threads", "4"}});
//   so.trace = rec.trace();
//   if (!outs) return rec.fail(outs.error());
//   return rec.finish();
class RunRecording {
 public:
  RunRecording();
  explicit RunRecording(std::unique_ptr<insight::Recorder> recorder);
  RunRecording(RunRecording&&) noexcept;
  RunRecording& operator=(RunRecording&&) noexcept;
  ~RunRecording();  // a run neither finished nor failed is recorded as failed

  bool active() const { return recorder_ != nullptr; }
  int64_t run_id() const;  // -1 when inactive
  observe::TraceSink* trace() const;
  observe::SnapshotSink* snapshots() const;
  observe::MetricsSink* metrics() const;
  // The graph's structure (IR text with params as inputs: weights belong in checkpoints), by hash.
  void log_graph(const ir::Graph& g, const std::string& role = "input");
  // The data set of a split, by its fingerprint (engine/data/fingerprint.h).
  void log_dataset(const std::string& split, const data::Source& source, const std::string& path);
  // A checkpoint the run wrote, with its XXH3 checksum.
  void log_checkpoint(const std::string& path, int64_t step);
  // The run continues from a checkpoint (`--resume`).
  void resumed_from(const std::string& checkpoint);
  void metric(const std::string& name, double value, int64_t step = 0, int64_t epoch = 0);
  // Waits until everything recorded so far is in the database.
  void flush();
  // Records the run finished; returns 0.
  int finish(bool stopped = false);  // stopped: ended early by the user (Ctrl+C), cleanly
  // Prints the error (as cli::fail), records the run failed with it; returns 1.
  int fail(const Error& e);
  // From another thread, when the process is about to end abruptly (SIGTERM from mpirun): records
  // the run failed with `why`. The recorder stays alive (the main thread may still hold it).
  void abort(const std::string& why);
  // The same for a run the user interrupted: recorded as stopped, with `why`.
  void abort_stopped(const std::string& why);

 private:
  std::unique_ptr<insight::Recorder> recorder_;
};
RunRecording start_recording(const RecordOptions& o, const std::string& kind, const std::string& graph_name,
                             uint64_t seed, const std::map<std::string, std::string>& hyperparams);
// The arena of each device a program uses, as metrics memory/DEVICE/arena_bytes ("cpu", "cuda:0").
void record_device_memory(RunRecording& rec, const stages::ExecutionPlan& plan);

struct RunOptions {
  std::string file;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> dims;    // SYMBOL=SIZE for random inputs
  std::string output_dir;
  uint64_t seed = 0;
  int threads = 0;          // 0: one per hardware thread
  int inter_op = 1;         // steps run at once
  bool reference = false;   // the reference executor instead of the six stages
  std::string device = "auto";  // cpu | cuda | cuda:N | auto
  std::string precision = "tf32";  // matrix work: tf32 (GPU tensor cores) | fp32 | bf16 (CPU)
  bool json = false;
  std::string checkpoint;   // load the params from a training checkpoint first
  RecordOptions record;
};
int run_run(const RunOptions& o);

struct TrainOptions {
  std::string file, data, test_data;
  int64_t epochs = 1, batch = 64, checkpoint_every = 0, max_steps = 0;
  int64_t accumulate = 1;  // micro-batches of `batch` per optimizer step (gradient accumulation)
  double lr = 0.01, momentum = -1, weight_decay = -1;  // -1: the optimizer's default
  bool nesterov = false;
  std::string optimizer = "sgd", loss = "softmax-cross-entropy", output, schedule = "constant";
  uint64_t seed = 0;
  int threads = 0, workers = -1;  // workers -1: auto (loader_workers in train_command.cpp)
  int inter_op = 1;  // steps run at once
  std::string device = "auto", precision = "tf32";
  std::string checkpoint_dir, resume, save;
  bool json = false, no_eval = false;
  bool deterministic = false;  // under mpirun: gradients summed in rank order (bitwise repeatable)
  bool check_numerics = false;  // stop at the first non-finite weight or state after an update, naming the node
  bool no_overlap = false;     // under mpirun: one blocking AllReduce per bucket
  bool sync_bn = false;        // under mpirun: batch norms use every rank's rows (SyncBatchNorm)
  double bucket_mb = 25, first_bucket_mb = 1;  // gradient bucket caps in MiB (DDP's bucket_cap_mb)
  double dist_timeout = 20;    // under mpirun: seconds a collective may make no progress after step 1 (0: no limit)
  RecordOptions record;
};
int run_train(const TrainOptions& o);
// MiB (--bucket-mb, --first-bucket-mb) in bytes, the split stage's bucket caps.
inline int64_t mib_bytes(double mib) { return static_cast<int64_t>(mib * 1048576.0); }
// The hyper-parameters of a training run as recorded (runs_command.cpp); over several ranks also
// the world size and the gradient buckets.
std::map<std::string, std::string> train_hyperparams(const TrainOptions& o, int world = 1);

struct PassesOptions {
  std::string file;
  std::string pipeline;     // empty: the default optimise pipeline
  std::string dump_dir;     // write every snapshot there
  std::vector<std::string> dims;
  bool print_ir = false;    // print the final IR
  bool train = false;       // compile the training step (softmax cross-entropy, SGD)
  int world_size = 1;       // with train: data parallel over this many ranks (the split's all-reduces)
  int accumulate = 1;       // with train: the last micro-batch's step under gradient accumulation
  bool sync_bn = false;     // with world_size: batch norms synchronised over the ranks
  double bucket_mb = 0, first_bucket_mb = 0;  // their bucket caps in MiB (0: not given, DDP's 25 and 1)
  std::string device = "auto";
  std::string precision = "tf32";  // as RunOptions::precision (bf16: the plan shows oneDNN's bf16 kernels)
  RecordOptions record;
};
int run_passes(const PassesOptions& o);

struct BenchOptions {
  std::string file;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  int threads = 0;
  int inter_op = 1;
  int runs = 20;
  int warmup = 3;
  uint64_t seed = 0;
  bool json = false;
  bool trace_timed = false;  // also record every kernel span of the timed runs (tracing overhead)
  std::string device = "auto", precision = "tf32";
  RecordOptions record;
};
int run_bench(const BenchOptions& o);

// `tessera generate` (generate_command.cpp): a decoder with a KV cache, token by token.
struct GenerateOptions {
  std::string file;
  std::string prompt;       // comma-separated token ids
  std::string prompt_file;  // or an .npy of integer ids
  int tokens = 32;          // new tokens
  int top_k = 1;            // 1: greedy; else sample among the k most likely
  double temperature = 1.0;
  uint64_t seed = 0;
  int threads = 0;
  std::string device = "auto";
  bool json = false;
};
int run_generate(const GenerateOptions& o);

struct ConvertOptions {
  std::string in, out;
  std::string to;              // tsr | json | tir | onnx; empty: by OUT's extension
  int opset = 0;               // ONNX output: 13..17 (0: the exporter's default, 17)
  bool external_data = false;  // .tsr output: weights of 1 KiB and more in OUT.data
};
int run_convert(const ConvertOptions& o);

int run_print(const std::string& file);

// `tessera quantize` (quantize_command.cpp).
struct QuantizeOptions {
  std::string in, out, data;
  std::string checkpoint;  // trained weights (.tsc) applied first
  std::string split = "train";
  std::string method = "minmax";
  double percentile = 99.99;
  bool per_tensor = false;
  int64_t samples = 512, batch = 64;
  int threads = 0, opset = 0;
};
int run_quantize(const QuantizeOptions& o);

// `tessera runs list|show|compare|metrics|lineage|export-trace` (runs_command.cpp).
struct RunsOptions {
  std::string action;             // list | show | compare | metrics | lineage | export-trace | check | recover
  std::string db;                 // the database (main() fills the default)
  std::vector<std::string> runs;  // RUN: an id, a name (the newest of that name) or "last"
  bool json = false, csv = false;
  std::string chrome;             // export-trace: the output file
  std::string out;                // recover: the new database
  int64_t limit = 0;              // list: at most this many (0: all)
};
int run_runs(const RunsOptions& o);

// Shared by run and bench (commands.cpp).
int fail(const Error& e);
// The message of the last fail() (for a data-parallel rank whose stderr is silenced).
const std::string& last_error();
int default_threads();

// The load other processes put on the machine while a command ran (from /proc/stat minus this
// process's own CPU time), printed by bench and train beside their figures: a run shares its
// cores with a browser or a build, and the figures mean little without it.
class LoadProbe {
 public:
  LoadProbe();  // starts the interval
  // Cores other processes kept busy on average since construction (-1: unknown).
  double others_cores() const;
  // "other processes kept 0.98 of 2 cores busy" (or "other load unknown").
  std::string describe() const;

 private:
  CpuTimes start_;
};
// Feeds from NAME=FILE.npy specs, random tensors (seeded) for the other inputs with symbolic dims
// sized by SYMBOL=SIZE specs (default 1). `source` says where each came from.
Expected<std::map<std::string, Tensor>> make_feeds(const ir::Graph& g, const std::vector<std::string>& inputs,
                                                   const std::vector<std::string>& dims, uint64_t seed,
                                                   std::map<std::string, std::string>* source);
Expected<ir::Graph> load_typed(const std::string& path, const ops::OpRegistry& reg);

}  // namespace tessera::cli
