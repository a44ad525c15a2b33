// libFuzzer target: arbitrary bytes as a .npz archive through formats::parse_npz (libzip's
// directory, member names, stored and deflated members, sizes bounded by the compressed size, then
// each member's .npy decoding). Any input must give arrays or an Error: a crash, a sanitizer report
// or a leak is a finding.
#include <cstddef>
#include <cstdint>

#include "formats/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto arrays = tessera::formats::parse_npz(data, size, "fuzz.npz");
  (void)arrays;
  return 0;
}
