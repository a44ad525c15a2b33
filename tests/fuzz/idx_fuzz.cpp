// libFuzzer target: arbitrary bytes as an IDX file (plain or gzipped) through data::parse_idx,
// the decoder the MNIST reader uses, both as idx3 images and as idx1 labels (magic, dims, the
// size check, inflating, truncated and trailing data). Any input must give an array or an Error:
// a crash, a sanitizer report or a leak is a finding.
#include <cstddef>
#include <cstdint>

#include "engine/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto images = tessera::data::parse_idx(data, size, 3, "fuzz-images-idx3-ubyte");
  auto labels = tessera::data::parse_idx(data, size, 1, "fuzz-labels-idx1-ubyte");
  (void)images;
  (void)labels;
  return 0;
}
