// libFuzzer target: arbitrary bytes as a JSON graph file, through what the CLI does after loading
// one: formats::parse_json_graph, then (when it parsed) ops::check_graph and ops::infer_types with
// the default registry, then ir::print_graph. The side .npz is looked up in a folder that does not
// exist, so no input reads real files. Any input must give a graph or an Error: a crash, a
// sanitizer report or a leak is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "formats/json_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Built once per process: the registry is immutable after construction.
  static const tessera::ops::OpRegistry registry = tessera::ops::make_default_registry();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto graph = tessera::formats::parse_json_graph(text, "fuzz.json", "/nonexistent/tessera-fuzz");
  if (!graph) return 0;
  if (!tessera::ops::check_graph(*graph, registry).is_ok()) return 0;
  const tessera::Status inferred = tessera::ops::infer_types(*graph, registry);
  (void)inferred;
  const std::string printed = tessera::ir::print_graph(*graph);
  (void)printed;
  return 0;
}
