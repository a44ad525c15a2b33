// The `tessera` subcommands. Each returns the process exit code: 0 success, 1 a failure it has
// reported on stderr (file, place, reason).
#pragma once

#include <cstdint>
#include <map>

#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"
#include <string>
#include <vector>

namespace tessera::cli {

struct InfoOptions {
  std::string file;
  bool json = false;
};
int run_info(const InfoOptions& o);

struct RunOptions {
  std::string file;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> dims;    // SYMBOL=SIZE for random inputs
  std::string output_dir;
  uint64_t seed = 0;
  int threads = 0;          // 0: one per hardware thread
  bool reference = false;   // the reference executor instead of the six stages
  bool json = false;
  std::string checkpoint;   // load the params from a training checkpoint first
};
int run_run(const RunOptions& o);

struct TrainOptions {
  std::string file, data, test_data;
  int64_t epochs = 1, batch = 64, checkpoint_every = 0, max_steps = 0;
  double lr = 0.01, momentum = -1, weight_decay = -1;  // -1: the optimizer's default
  bool nesterov = false;
  std::string optimizer = "sgd", loss = "softmax-cross-entropy", output, schedule = "constant";
  uint64_t seed = 0;
  int threads = 0, workers = 1;
  std::string checkpoint_dir, resume, save;
  bool json = false, no_eval = false;
};
int run_train(const TrainOptions& o);
// Loads a checkpoint's tensors into the graph's params of the same names (train_command.cpp).
Status apply_checkpoint(ir::Graph& g, const std::string& path);

struct PassesOptions {
  std::string file;
  std::string pipeline;     // empty: the default optimise pipeline
  std::string dump_dir;     // write every snapshot there
  std::vector<std::string> dims;
  bool print_ir = false;    // print the final IR
};
int run_passes(const PassesOptions& o);

struct BenchOptions {
  std::string file;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  int threads = 0;
  int runs = 20;
  int warmup = 3;
  uint64_t seed = 0;
  bool json = false;
};
int run_bench(const BenchOptions& o);

struct ConvertOptions {
  std::string in, out;
};
int run_convert(const ConvertOptions& o);

int run_print(const std::string& file);

// Shared by run and bench (commands.cpp).
int fail(const Error& e);
int default_threads();
// Feeds from NAME=FILE.npy specs, random tensors (seeded) for the other inputs with symbolic dims
// sized by SYMBOL=SIZE specs (default 1). `source` says where each came from.
Expected<std::map<std::string, Tensor>> make_feeds(const ir::Graph& g, const std::vector<std::string>& inputs,
                                                   const std::vector<std::string>& dims, uint64_t seed,
                                                   std::map<std::string, std::string>* source);
Expected<ir::Graph> load_typed(const std::string& path, const ops::OpRegistry& reg);

}  // namespace tessera::cli
