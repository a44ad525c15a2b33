// `tessera`: the command-line program (engine, formats and insight; nothing of Qt).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace tessera::cli;
  CLI::App app{"Tessera: a dataflow graph engine for deep learning.", "tessera"};
  app.set_version_flag("--version", std::string("tessera ") + TESSERA_VERSION);
  app.require_subcommand(1);

  InfoOptions info;
  CLI::App* info_cmd = app.add_subcommand("info", "Print a graph's inputs, outputs, op counts, parameter count and FLOPs");
  info_cmd->add_option("FILE", info.file, "Graph file (.json, .tir or .onnx)")->required();
  info_cmd->add_flag("--json", info.json, "Print the same as one JSON object");

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a graph on inputs from .npy files (random from --seed for inputs not given)");
  run_cmd->add_option("FILE", run.file, "Graph file (.json, .tir or .onnx)")->required();
  run_cmd->add_option("--input,-i", run.inputs, "NAME=FILE.npy: feed graph input NAME (repeatable)");
  run_cmd->add_option("--output-dir,-o", run.output_dir, "Write each output to DIR/<output name>.npy");
  run_cmd->add_option("--seed", run.seed, "Seed for random inputs (default 0)");
  run_cmd->add_option("--dim", run.dims, "SYMBOL=SIZE: size of a symbolic dimension in random inputs (default 1)");
  run_cmd->add_option("--threads,-t", run.threads, "Threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
  run_cmd->add_flag("--reference", run.reference, "Use the reference executor instead of the six stages");
  run_cmd->add_flag("--json", run.json, "Print the output summary as JSON");

  PassesOptions passes;
  CLI::App* passes_cmd = app.add_subcommand(
      "passes", "Compile a graph and print each stage and each pass that changed it (name, time, node counts)");
  passes_cmd->add_option("FILE", passes.file, "Graph file (.json, .tir or .onnx)")->required();
  passes_cmd->add_option("--pipeline", passes.pipeline, "Optimise pipeline, e.g. \"canonicalize,constant-fold,dce,cse,fold-batchnorm,fuse,dce,layout\"");
  passes_cmd->add_option("--dump", passes.dump_dir, "Write every snapshot to DIR/NNN-stage-pass.tir");
  passes_cmd->add_option("--dim", passes.dims, "SYMBOL=SIZE: bind a symbolic input dimension (default 1)");
  passes_cmd->add_flag("--print", passes.print_ir, "Print the optimised IR and the execution plan");

  BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time a graph through the six stages on random or given inputs");
  bench_cmd->add_option("FILE", bench.file, "Graph file (.json, .tir or .onnx)")->required();
  bench_cmd->add_option("--input,-i", bench.inputs, "NAME=FILE.npy: feed graph input NAME (repeatable)");
  bench_cmd->add_option("--dim", bench.dims, "SYMBOL=SIZE: size of a symbolic dimension (default 1)");
  bench_cmd->add_option("--threads,-t", bench.threads, "Threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
  bench_cmd->add_option("--runs", bench.runs, "Timed runs (default 20)")->check(CLI::Range(1, 1000000));
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs first (default 3)")->check(CLI::Range(0, 1000000));
  bench_cmd->add_option("--seed", bench.seed, "Seed for random inputs");
  bench_cmd->add_flag("--json", bench.json, "Print {median_ms, min_ms, compile_ms, peak_bytes, gflops, ...} as one line");

  ConvertOptions convert;
  CLI::App* convert_cmd = app.add_subcommand("convert", "Convert a graph between formats (by extension: .json, .tir)");
  convert_cmd->add_option("IN", convert.in, "Input graph file")->required();
  convert_cmd->add_option("OUT", convert.out, "Output graph file")->required();

  std::string print_file;
  CLI::App* print_cmd = app.add_subcommand("print", "Print a graph in the IR text form, with inferred types");
  print_cmd->add_option("FILE", print_file, "Graph file (.json, .tir or .onnx)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // usage errors: 2, like most Unix tools
  }
  if (*info_cmd) return run_info(info);
  if (*run_cmd) return run_run(run);
  if (*convert_cmd) return run_convert(convert);
  if (*print_cmd) return run_print(print_file);
  if (*passes_cmd) return run_passes(passes);
  if (*bench_cmd) return run_bench(bench);
  return 2;
}
