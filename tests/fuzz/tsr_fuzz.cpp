// libFuzzer target: arbitrary bytes as a native .tsr file through formats::parse_tsr (protobuf
// parsing, ids, nested graphs, tensors and checksums, metadata, layout). Whatever parses must
// encode again to a file that parses to the same graph (the round trip is checked, not assumed),
// and then pass check_graph / infer_types without a crash. A crash, a sanitizer report, a leak
// or a failed round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "formats/tsr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::ops::OpRegistry registry = tessera::ops::make_default_registry();
  // Side files are looked up in a folder that does not exist: no input reads real files.
  auto doc = tessera::formats::parse_tsr(data, size, "fuzz.tsr", "/nonexistent/tessera-fuzz");
  if (!doc) return 0;
  auto bytes = tessera::formats::encode_tsr(*doc);
  if (!bytes) return 0;  // e.g. over protobuf's 2 GiB: refused with an Error, fine
  auto again = tessera::formats::parse_tsr(bytes->data(), bytes->size(), "again.tsr", "");
  if (!again || tessera::ir::print_graph(again->graph) != tessera::ir::print_graph(doc->graph)) std::abort();
  (void)tessera::ops::infer_types(doc->graph, registry);
  return 0;
}
