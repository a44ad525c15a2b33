// `tessera`: the command-line program (engine, formats and insight; nothing of Qt).
#include <CLI/CLI.hpp>

#include <malloc.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <new>
#include <system_error>

#include "cli/commands.h"
#include "insight/database.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Refuses an option value that is another option: `--output-dir --no-record` would otherwise make
// a folder named "--no-record" and record after all. A value may start with '-' only as a number,
// and may not be empty.
const CLI::Validator kNotAnOption(
    [](std::string& v) -> std::string {
      // An empty value reads as "not given" further on: `--save ""` would train and save nothing.
      if (v.empty()) return "an empty value";
      if (v.size() >= 2 && v[0] == '-' && !std::isdigit(static_cast<unsigned char>(v[1])) && v[1] != '.')
        return "'" + v + "' is an option, not a value (write ./" + v + " for a file of that name)";
      return {};
    },
    "", "not an option");

// Refuses NaN and infinities, which CLI11's ranges let through (every comparison with NaN is false).
const CLI::Validator kFinite(
    [](std::string& v) -> std::string {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || !std::isfinite(d)) return "'" + v + "' is not a finite number";
      return {};
    },
    "", "finite");

// SYMBOL=SIZE for --dim, SIZE from 0 to 2^31: a malformed one is a usage error (exit 2).
const CLI::Validator kDimSpec(
    [](std::string& v) -> std::string {
      const size_t eq = v.find('=');
      if (eq == 0 || eq == std::string::npos) return "'" + v + "' is not SYMBOL=SIZE";
      const std::string size = v.substr(eq + 1);
      char* end = nullptr;
      const long long n = std::strtoll(size.c_str(), &end, 10);
      if (size.empty() || *end != '\0' || n < 0 || n > (int64_t{1} << 31))
        return "'" + v + "': SIZE must be an integer from 0 to 2^31";
      return {};
    },
    "SYMBOL=SIZE", "dim spec");

// Seeds are stored as SQLite integers (signed 64-bit): 0 to 2^63-1.
const CLI::Range kSeedRange(uint64_t{0}, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));

// Adds kNotAnOption to every option of `app` and its subcommands that takes a value.
void refuse_options_as_values(CLI::App* app) {
  for (CLI::Option* o : app->get_options())
    if (o->get_type_size() != 0 && o->nonpositional()) o->check(kNotAnOption);
  for (CLI::App* sub : app->get_subcommands({})) refuse_options_as_values(sub);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::cli;
  // Training allocates the same tensor sizes every step (batches, new weights): keep freed memory
  // in the heap instead of returning it to the kernel and faulting it back in the next step.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  CLI::App app{"Tessera: a dataflow graph engine for deep learning.", "tessera"};
  app.set_version_flag("--version", std::string("tessera ") + TESSERA_VERSION);
  app.require_subcommand(1);
  // The insight database: --db, else $TESSERA_DB, $XDG_DATA_HOME/tessera, ~/.local/share/tessera.
  const std::string default_db =
      tessera::insight::default_database_path(env("TESSERA_DB"), env("XDG_DATA_HOME"), env("HOME"));
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  auto add_record = [&](CLI::App* cmd, RecordOptions& r) {
    r.db = default_db;
    r.command_line = command_line;
    cmd->add_option("--db", r.db, "Record to this insight database (default: $TESSERA_DB or " + default_db + ")");
    cmd->add_flag("--no-record", r.no_record, "Do not record this run in the insight database");
  };

  InfoOptions info;
  CLI::App* info_cmd = app.add_subcommand("info", "Print a graph's inputs, outputs, op counts, parameter count and FLOPs");
  info_cmd->add_option("FILE", info.file, "Graph file (.tsr, .json, .tir or .onnx)");
  info_cmd->add_flag("--json", info.json, "Print the same as one JSON object");
  info_cmd->add_option("--dim", info.dims, "SYMBOL=SIZE: size of a symbolic input dimension for the FLOPs (default 1)")->check(kDimSpec);
  info_cmd->add_flag("--devices", info.devices, "List the devices (CPU, CUDA GPUs) and why no GPU is usable, if none is");
  const std::string device_help = "cpu | cuda | cuda:N | auto (default: the first GPU when there is one, else cpu)";
  const std::string precision_help =
      "Matrix work: tf32 (default: TF32 tensor cores on a GPU, f32 on a CPU) | fp32 (full f32) | bf16 (CPU with "
      "AVX-512 BF16 or AMX: Conv/MatMul/Gemm on bf16, f32 accumulation and weights)";
  const auto precision_check = CLI::IsMember({"tf32", "fp32", "bf16"});

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a graph on inputs from .npy files (random from --seed for inputs not given)");
  run_cmd->add_option("FILE", run.file, "Graph file (.tsr, .json, .tir or .onnx)")->required();
  run_cmd->add_option("--input,-i", run.inputs, "NAME=FILE.npy: feed graph input NAME (repeatable)");
  run_cmd->add_option("--output-dir,-o", run.output_dir, "Write each output to DIR/<output name>.npy");
  run_cmd->add_option("--seed", run.seed, "Seed for random inputs (default 0)")->check(kSeedRange);
  run_cmd->add_option("--dim", run.dims, "SYMBOL=SIZE: size of a symbolic dimension in random inputs (default 1)")->check(kDimSpec);
  run_cmd->add_option("--device", run.device, device_help);
  run_cmd->add_option("--precision", run.precision, precision_help)->check(precision_check);
  run_cmd->add_option("--threads,-t", run.threads, "Threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
  run_cmd->add_option("--inter-op", run.inter_op, "Steps run at once, each with --threads (default 1: in order)")
      ->check(CLI::Range(1, 64));
  run_cmd->add_flag("--reference", run.reference, "Use the reference executor instead of the six stages");
  run_cmd->add_flag("--json", run.json, "Print the output summary as JSON");
  run_cmd->add_option("--checkpoint", run.checkpoint, "Load the params from a training checkpoint (.tsc) first");

  TrainOptions train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train a graph on a dataset (autodiff + optimizer through the six stages)");
  train_cmd->add_option("FILE", train.file, "Graph file (.tsr, .json, .tir or .onnx)")->required();
  train_cmd->add_option("--data", train.data, "Dataset: MNIST-style IDX folder, folder of class folders, .csv or .npz")->required();
  CLI::Option* test_data =
      train_cmd->add_option("--test-data", train.test_data, "Test split (default: the test split of --data, when it has one)");
  train_cmd->add_option("--epochs", train.epochs, "Epochs (default 1)")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  train_cmd->add_option("--batch", train.batch, "Batch size (default 64)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  train_cmd->add_option("--accumulate", train.accumulate,
                        "Gradient accumulation: each optimizer step sums the gradients of this many micro-batches of "
                        "--batch examples (default 1); the step's batch is --batch x this (x the ranks under mpirun)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  train_cmd->add_option("--lr", train.lr, "Learning rate (default 0.01)")->check(kFinite)->check(CLI::PositiveNumber);
  train_cmd->add_option("--schedule", train.schedule, "constant | step:SIZE:GAMMA | cosine[:ETA_MIN], optionally ,warmup:N");
  train_cmd->add_option("--optimizer", train.optimizer, "sgd | momentum | adam | adamw (default sgd)");
  train_cmd->add_option("--momentum", train.momentum, "SGD momentum (default 0; 0.9 for --optimizer momentum)")->check(kFinite)->check(CLI::Range(0.0, 1.0));
  train_cmd->add_flag("--nesterov", train.nesterov, "Nesterov momentum");
  train_cmd->add_option("--weight-decay", train.weight_decay, "Weight decay (default 0; 0.01 for adamw)")->check(kFinite)->check(CLI::Range(0.0, 1.0));
  train_cmd->add_option("--loss", train.loss, "softmax-cross-entropy | mse | bce-with-logits | output (the graph's output is the loss)");
  train_cmd->add_option("--output", train.output, "The graph value the loss is computed from (default: the first output)");
  train_cmd->add_option("--seed", train.seed, "Seed of the data order (default 0)")->check(kSeedRange);
  train_cmd->add_option("--device", train.device, device_help);
  train_cmd->add_option("--precision", train.precision, precision_help)->check(precision_check);
  train_cmd->add_option("--threads,-t", train.threads, "Threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
  train_cmd->add_option("--workers", train.workers, "Data loader threads (0: in the training thread; default 1, or 0 for several ranks whose threads fill this machine's cores)")->check(CLI::Range(0, 64));
  train_cmd->add_option("--inter-op", train.inter_op, "Steps run at once, each with --threads (default 1: in order)")
      ->check(CLI::Range(1, 64));
  train_cmd->add_option("--checkpoint-dir", train.checkpoint_dir, "Write checkpoints there (each epoch, and every --checkpoint-every steps)");
  train_cmd->add_option("--checkpoint-every", train.checkpoint_every, "Steps between checkpoints (default: epoch ends only)")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  train_cmd->add_option("--max-steps", train.max_steps, "Stop after this many steps in all")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  train_cmd->add_option("--resume", train.resume, "Continue from a checkpoint, bit for bit");
  train_cmd->add_option("--save", train.save, "Write the trained graph (weights included) to this file");
  train_cmd->add_flag("--no-eval", train.no_eval, "Skip the evaluation on the test split")->excludes(test_data);
  train_cmd->add_flag("--deterministic", train.deterministic,
                      "Under mpirun: sum gradients over the ranks in rank order, so runs with the same seed and "
                      "number of ranks give bitwise identical weights");
  train_cmd->add_flag("--check-numerics", train.check_numerics,
                      "Check the weights and optimizer state after every update: the first NaN or infinity stops "
                      "training with the step, the weight and the first node (forward, backward or update) that made it");
  train_cmd->add_option("--dist-timeout", train.dist_timeout,
                        "Under mpirun: seconds the ranks' communication may make no progress once the first step "
                        "is done before every rank stops and the run is recorded failed (a network link down, a "
                        "rank hung; default 20, 0: wait for ever)")
      ->check(kFinite)->check(CLI::Range(0.0, 86400.0));
  train_cmd->add_flag("--sync-bn", train.sync_bn,
                      "Under mpirun: batch norms normalise with the statistics of every rank's rows "
                      "(PyTorch's SyncBatchNorm), so a network with batch norm trains as one process with the global batch");
  train_cmd->add_flag("--no-overlap", train.no_overlap,
                      "Under mpirun: one blocking all-reduce per gradient bucket instead of starting each as soon "
                      "as its gradients exist (for comparison)");
  train_cmd->add_option("--bucket-mb", train.bucket_mb,
                        "Under mpirun: gradients are all-reduced in buckets of up to this many MiB (default 25, "
                        "PyTorch DDP's bucket_cap_mb)")
      ->check(kFinite)->check(CLI::Range(1e-3, 1e6));
  train_cmd->add_option("--first-bucket-mb", train.first_bucket_mb,
                        "Under mpirun: the first bucket (the last layers' gradients, started first) closes at this "
                        "many MiB (default 1)")
      ->check(kFinite)->check(CLI::Range(1e-3, 1e6));
  train_cmd->add_flag("--json", train.json, "Print {test_accuracy, test_loss (-1: no evaluation), train_loss, images_per_s, epochs, steps, eval_s, eval_examples, world_size, comm_s, ...} as the last line");

  PassesOptions passes;
  CLI::App* passes_cmd = app.add_subcommand(
      "passes", "Compile a graph and print each stage and each pass that changed it (name, time, node counts)");
  passes_cmd->add_option("FILE", passes.file, "Graph file (.tsr, .json, .tir or .onnx)")->required();
  passes_cmd->add_option("--device", passes.device, device_help);
  passes_cmd->add_option("--precision", passes.precision, precision_help)->check(precision_check);
  passes_cmd->add_option("--pipeline", passes.pipeline, "Optimise pipeline, e.g. \"canonicalize,constant-fold,dce,cse,fold-batchnorm,fuse,dce,layout\"");
  passes_cmd->add_option("--dump", passes.dump_dir, "Write every snapshot to DIR/NNN-stage-pass.tir");
  passes_cmd->add_option("--dim", passes.dims, "SYMBOL=SIZE: bind a symbolic input dimension (default 1)")->check(kDimSpec);
  passes_cmd->add_flag("--print", passes.print_ir, "Print the optimised IR and the execution plan");
  passes_cmd->add_flag("--train", passes.train, "Compile the training step (softmax cross-entropy, SGD) instead of inference");
  passes_cmd->add_option("--world-size", passes.world_size,
                         "With --train: data parallel over N ranks (the split stage's gradient all-reduces)")
      ->check(CLI::Range(1, 65536));
  passes_cmd->add_flag("--sync-bn", passes.sync_bn, "With --world-size: batch norms synchronised over the ranks");
  passes_cmd->add_option("--accumulate", passes.accumulate,
                         "With --train: the step that ends N micro-batches of gradient accumulation (each gradient added "
                         "to its <weight>/grad_acc, the updates scaled by 1/N)")
      ->check(CLI::Range(1, 1024));
  passes_cmd->add_option("--bucket-mb", passes.bucket_mb, "With --world-size: gradient bucket cap in MiB (default 25)")
      ->check(kFinite)->check(CLI::Range(1e-3, 1e6));
  passes_cmd->add_option("--first-bucket-mb", passes.first_bucket_mb, "With --world-size: the first bucket's cap in MiB (default 1)")
      ->check(kFinite)->check(CLI::Range(1e-3, 1e6));

  BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time a graph through the six stages on random or given inputs");
  bench_cmd->add_option("FILE", bench.file, "Graph file (.tsr, .json, .tir or .onnx)")->required();
  bench_cmd->add_option("--input,-i", bench.inputs, "NAME=FILE.npy: feed graph input NAME (repeatable)");
  bench_cmd->add_option("--dim", bench.dims, "SYMBOL=SIZE: size of a symbolic dimension (default 1)")->check(kDimSpec);
  bench_cmd->add_option("--device", bench.device, device_help);
  bench_cmd->add_option("--precision", bench.precision, precision_help)->check(precision_check);
  bench_cmd->add_option("--threads,-t", bench.threads, "Threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
  bench_cmd->add_option("--inter-op", bench.inter_op, "Steps run at once, each with --threads (default 1: in order)")
      ->check(CLI::Range(1, 64));
  bench_cmd->add_option("--runs", bench.runs, "Timed runs (default 20)")->check(CLI::Range(1, 1000000));
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs first (default 3)")->check(CLI::Range(0, 1000000));
  bench_cmd->add_option("--seed", bench.seed, "Seed for random inputs")->check(kSeedRange);
  bench_cmd->add_flag("--json", bench.json, "Print {median_ms, min_ms, compile_ms, peak_bytes, gflops, ...} as one line");
  bench_cmd->add_flag("--trace-timed", bench.trace_timed, "Record every kernel span of the timed runs too (measures the tracing overhead)");

  GenerateOptions gen;
  CLI::App* gen_cmd = app.add_subcommand("generate", "Generate tokens with a decoder exported with a KV cache (past_key_values in, presents out)");
  gen_cmd->add_option("FILE", gen.file, "Decoder (.onnx, .tsr, .json or .tir)")->required();
  gen_cmd->add_option("--prompt", gen.prompt, "Prompt token ids, comma-separated");
  gen_cmd->add_option("--prompt-file", gen.prompt_file, "Prompt token ids in an .npy (integers)");
  gen_cmd->add_option("--tokens,-n", gen.tokens, "New tokens (default 32)")->check(CLI::Range(1, 1000000));
  gen_cmd->add_option("--top-k", gen.top_k, "1: greedy (default); K: sample among the K most likely")->check(CLI::Range(1, 1000000));
  gen_cmd->add_option("--temperature", gen.temperature, "Sampling temperature with --top-k (default 1)")->check(kFinite)->check(CLI::Range(1e-3, 1e3));
  gen_cmd->add_option("--seed", gen.seed, "Seed of the sampling")->check(kSeedRange);
  gen_cmd->add_option("--threads,-t", gen.threads, "Threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
  gen_cmd->add_option("--device", gen.device, device_help);
  gen_cmd->add_flag("--json", gen.json, "Print {generated, tokens_per_second, ...} as one line");

  add_record(run_cmd, run.record);
  add_record(train_cmd, train.record);
  add_record(passes_cmd, passes.record);
  add_record(bench_cmd, bench.record);

  RunsOptions runs;
  runs.db = default_db;
  CLI::App* runs_cmd = app.add_subcommand("runs", "The runs recorded in the insight database: list, show, compare, metrics, lineage, export-trace, check, recover");
  runs_cmd->require_subcommand(1);
  auto add_runs = [&](const char* name, const char* what) {
    CLI::App* c = runs_cmd->add_subcommand(name, what);
    c->add_option("--db", runs.db, "The insight database (default: $TESSERA_DB or " + default_db + ")");
    c->callback([&runs, name] { runs.action = name; });
    return c;
  };
  CLI::App* runs_list = add_runs("list", "List the runs, newest first");
  runs_list->add_flag("--json", runs.json, "Print a JSON array");
  runs_list->add_option("--limit,-n", runs.limit, "At most this many runs (0: all, the default)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  CLI::App* runs_show = add_runs("show", "Show one run: command, graph, data, hyper-parameters, metrics, checkpoints, time by op");
  runs_show->add_option("RUN", runs.runs, "An id, a name (the newest run of that name) or 'last'")->required()->expected(1);
  runs_show->add_flag("--json", runs.json, "Print one JSON object");
  CLI::App* runs_compare = add_runs("compare", "Hyper-parameters and final/best metrics of runs side by side, differences marked");
  runs_compare->add_option("RUN", runs.runs, "Two runs or more")->required()->expected(2, 64);
  runs_compare->add_flag("--json", runs.json, "Print one JSON object");
  CLI::App* runs_metrics = add_runs("metrics", "A run's metrics by step and epoch");
  runs_metrics->add_option("RUN", runs.runs, "An id, a name or 'last'")->required()->expected(1);
  runs_metrics->add_flag("--csv", runs.csv, "Print CSV: name,step,epoch,value,wall_ns");
  runs_metrics->add_flag("--json", runs.json, "Print a JSON array");
  CLI::App* runs_lineage = add_runs("lineage", "Where a run came from (checkpoints it resumed from) and the runs that continued it");
  runs_lineage->add_option("RUN", runs.runs, "An id, a name or 'last'")->required()->expected(1);
  CLI::App* runs_export = add_runs("export-trace", "Write a run's spans as a Chrome trace (Perfetto, chrome://tracing)");
  runs_export->add_option("RUN", runs.runs, "An id, a name or 'last'")->required()->expected(1);
  runs_export->add_option("--chrome", runs.chrome, "Output file (.json)")->required();
  add_runs("check", "Check the database's integrity (SQLite's integrity check); exit 1 when it is damaged");
  CLI::App* runs_recover = add_runs("recover", "Copy every run, metric and span a damaged database still holds into a new database");
  runs_recover->add_option("--out,-o", runs.out, "The new database (must not exist)")->required();

  ConvertOptions convert;
  CLI::App* convert_cmd = app.add_subcommand(
      "convert", "Convert a graph between formats: .tsr (native), .json, .tir (IR text), .onnx (by extension, or --to)");
  convert_cmd->add_option("IN", convert.in, "Input graph file (.tsr, .json, .tir or .onnx)")->required();
  convert_cmd->add_option("OUT", convert.out, "Output graph file")->required();
  convert_cmd->add_option("--to", convert.to, "Output format whatever OUT's extension")
      ->check(CLI::IsMember({"tsr", "json", "tir", "onnx"}));
  convert_cmd->add_option("--opset", convert.opset, "ONNX opset of the output (13 to 17; default 17)")
      ->check(CLI::Range(13, 17));
  convert_cmd->add_flag("--external-data", convert.external_data,
                        "Write the weights of a .tsr to a side file OUT.data (automatic past 1 GiB)");

  QuantizeOptions quantize;
  CLI::App* quantize_cmd = app.add_subcommand(
      "quantize", "Quantize a graph to int8 (static, calibrated on data) and write it in ONNX's QDQ form");
  quantize_cmd->add_option("IN", quantize.in, "Float graph file (.tsr, .json, .tir or .onnx)")->required();
  quantize_cmd->add_option("OUT", quantize.out, "Quantized graph file (.onnx, .tsr, .json or .tir)")->required();
  quantize_cmd->add_option("--calibrate", quantize.data, "Calibration data: IDX folder, image folders, .csv or .npz")->required();
  quantize_cmd->add_option("--checkpoint", quantize.checkpoint, "Load the params from a training checkpoint (.tsc) first");
  quantize_cmd->add_option("--split", quantize.split, "Split of the data to calibrate on (default train)")
      ->check(CLI::IsMember({"train", "test"}));
  quantize_cmd->add_option("--method", quantize.method, "Activation ranges: minmax (default) or percentile")
      ->check(CLI::IsMember({"minmax", "percentile"}));
  quantize_cmd->add_option("--percentile", quantize.percentile, "Percentile kept of each tail (default 99.99)")
      ->check(CLI::Range(50.000001, 100.0));
  quantize_cmd->add_flag("--per-tensor", quantize.per_tensor, "One scale per weight tensor (default: per output channel)");
  quantize_cmd->add_option("--samples", quantize.samples, "Calibration examples (default 512; 0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  quantize_cmd->add_option("--batch", quantize.batch, "Calibration batch size (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  quantize_cmd->add_option("--threads,-t", quantize.threads, "Threads (default: one per hardware thread)")
      ->check(CLI::Range(1, 1024));
  quantize_cmd->add_option("--opset", quantize.opset, "ONNX opset of the output (13 to 17)")->check(CLI::Range(13, 17));

  std::string print_file;
  CLI::App* print_cmd = app.add_subcommand("print", "Print a graph in the IR text form, with inferred types");
  print_cmd->add_option("FILE", print_file, "Graph file (.tsr, .json, .tir or .onnx)")->required();

  refuse_options_as_values(&app);
  // Usage errors are one line on stderr, naming the subcommand: "tessera train: --lr: 'nan' is not
  // a finite number (see tessera train --help)".
  app.failure_message([](const CLI::App* root, const CLI::Error& e) {
    std::string command = "tessera";
    const CLI::App* deepest = root;
    for (const CLI::App* sub = root; sub != nullptr;) {
      const auto subs = sub->get_subcommands();
      sub = subs.empty() ? nullptr : subs.front();
      if (sub) {
        command += " " + sub->get_name();
        deepest = sub;
      }
    }
    std::string what = e.what();
    // CLI11 lists what it did not expect last first ("1 --threads"): name the first one, and say
    // an option is unknown rather than unexpected.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const std::vector<std::string> rest = deepest->remaining();
      if (!rest.empty()) {
        const std::string& first = rest.front();
        what = first.size() > 1 && first[0] == '-' && !std::isdigit(static_cast<unsigned char>(first[1]))
                   ? "'" + first + "' is not an option of " + command
                   : "unexpected argument '" + first + "'";
      }
    }
    for (char& c : what)
      if (c == '\n') c = ' ';
    return command + ": " + what + " (see " + command + " --help)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // usage errors: 2, like most Unix tools
  }
  // Errors are values in the engine; what can still escape is the C++ runtime refusing a
  // resource (memory, threads): one line and exit 1, never an abort.
  const std::string command = app.get_subcommands().empty() ? "tessera" : "tessera " + app.get_subcommands()[0]->get_name();
  try {
    if (*info_cmd) return run_info(info);
    if (*run_cmd) return run_run(run);
    if (*convert_cmd) return run_convert(convert);
    if (*quantize_cmd) return run_quantize(quantize);
    if (*print_cmd) return run_print(print_file);
    if (*passes_cmd) return run_passes(passes);
    if (*bench_cmd) return run_bench(bench);
    if (*gen_cmd) {
      if (gen.prompt.empty() == gen.prompt_file.empty()) {
        std::cerr << "tessera generate: error: give the prompt as --prompt ID,ID,... or --prompt-file FILE.npy (one of them)\n";
        return 2;
      }
      return run_generate(gen);
    }
    if (*train_cmd) return run_train(train);
    if (*runs_cmd) return run_runs(runs);
  } catch (const std::bad_alloc&) {
    std::cerr << command << ": error: out of memory (an allocation failed; try smaller inputs or --dim sizes)\n";
    return 1;
  } catch (const std::system_error& e) {
    std::cerr << command << ": error: the system refused a resource: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
