// libFuzzer target: arbitrary bytes as the IR's text form (.tir) through ir::parse_graph, then
// ir::verify and ir::print_graph when it parsed. Any input must give a graph or an Error: a crash,
// a sanitizer report or a leak is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto graph = tessera::ir::parse_graph(text, "fuzz.tir");
  if (!graph) return 0;
  const tessera::Status verified = tessera::ir::verify(*graph);
  (void)verified;
  const std::string printed = tessera::ir::print_graph(*graph);
  (void)printed;
  return 0;
}
