// libFuzzer target: arbitrary bytes as an ONNX model through import_onnx_bytes (protobuf parsing,
// tensor decoding, attribute conversion, old-opset rules, nested graphs, type inference). Any
// input must give a graph or an Error: a crash, a sanitizer report or a leak is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/ops/op_def.h"
#include "formats/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Built once per process: the registry is immutable after construction.
  static const tessera::ops::OpRegistry registry = tessera::ops::make_default_registry();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // External data is looked up in a folder that does not exist, so no input reads real files.
  auto graph = tessera::formats::import_onnx_bytes(bytes, "fuzz.onnx", "/nonexistent/tessera-fuzz", registry);
  (void)graph;
  return 0;
}
