// libFuzzer target: arbitrary bytes as a .npy file through formats::parse_npy (magic, version,
// the header dict, dtype and shape, fortran order, byte swapping, size checks). Any input must give
// a tensor or an Error: a crash, a sanitizer report or a leak is a finding.
#include <cstddef>
#include <cstdint>

#include "formats/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tensor = tessera::formats::parse_npy(data, size, "fuzz.npy");
  (void)tensor;
  return 0;
}
