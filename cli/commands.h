// The `tessera` subcommands. Each returns the process exit code: 0 success, 1 a failure it has
// reported on stderr (file, place, reason).
#pragma once

#include <cstdint>
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
  bool json = false;
};
int run_run(const RunOptions& o);

struct ConvertOptions {
  std::string in, out;
};
int run_convert(const ConvertOptions& o);

int run_print(const std::string& file);

}  // namespace tessera::cli
