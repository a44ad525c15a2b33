// What the structure-aware fuzz targets (onnx_engine_fuzz, tsr_fuzz) share: the custom mutator's
// frame (parse the message, mutate fields, serialise), and what they do with a graph that loaded:
// the six stages and one execution on zero inputs (symbolic dims 2), for small graphs only, and
// counters of how far inputs got. Header-only: each target is one translation unit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <cstdlib>
#include <string>
#include <utility>

#include "engine/ops/cost.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/stages/session.h"

// A model may ask for more memory than the fuzzer's limit (a Conv in an If branch wanting 21 GB:
// nested graphs run on reference kernels with sizes known only then, past the plan checks below):
// allocations over 512 MB fail as malloc fails on a machine without that memory, Tensor::create
// turns that into an Error, and only what escapes that is a finding.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=512"; }

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tessera::fuzz {

// The body of LLVMFuzzerCustomMutator for a protobuf message type: parses the input as a Message
// (byte mutations when it does not parse, lacks a graph, or one time in eight), applies
// `mutate(message, rng)` one to three times and serialises the result in place.
template <class Message, class Mutate>
size_t mutate_message(uint8_t* data, size_t size, size_t max_size, unsigned int seed, Mutate&& mutate) {
  Message message;
  if (!message.ParseFromArray(data, static_cast<int>(size)) || !message.has_graph()) return LLVMFuzzerMutate(data, size, max_size);
  std::mt19937_64 rng(seed);
  if (rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);  // some byte-level noise as well
  for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i) mutate(message, rng);
  std::string out;
  if (!message.SerializeToString(&out) || out.size() > max_size) return size;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

// How far inputs get (imported, compiled, run), printed at exit when ONNX_ENGINE_FUZZ_STATS is
// set: the target is only worth its CI time if mutants reach the engine.
struct Reach {
  const char* target;
  long inputs = 0, imported = 0, compiled = 0, ran = 0, ran_ok = 0;
  explicit Reach(const char* name) : target(name) {}
  ~Reach() {
    if (std::getenv("ONNX_ENGINE_FUZZ_STATS") || std::getenv("FUZZ_STATS"))
      std::fprintf(stderr, "%s: %ld inputs, %ld loaded, %ld compiled, %ld run (%ld without error)\n", target, inputs,
                   imported, compiled, ran, ran_ok);
  }
};

// FLOPs of the graphs nested in g's nodes (If branches, Loop and Scan bodies), which run on the
// reference interpreter with sizes the top-level plan does not see: a ConvTranspose of 3.6 GFLOPs
// in an If branch is legitimately slow, not a finding. Loop bodies count their constant trip
// count; a Loop without one, or a Scan, may run without bound: `bounded` turns false.
inline double nested_flops(const tessera::ir::Graph& g, const tessera::ops::OpRegistry& registry, bool& bounded, int depth = 0) {
  using namespace tessera;
  double total = 0;
  if (depth > 8) return bounded = false, 0;
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    for (const auto& [key, a] : n.attrs) {
      if (a.kind() != ir::AttrKind::kGraph) continue;
      auto cost = ops::graph_cost(a.g(), registry, 2);
      double f = (cost ? cost->flops : 1e18) + nested_flops(a.g(), registry, bounded, depth + 1);
      if (n.op == "Scan") bounded = false;
      if (n.op == "Loop") {
        const Tensor* trips = n.inputs.empty() || n.inputs[0] == ir::kNoValue ? nullptr : ops::constant_value(g, n.inputs[0]);
        if (trips == nullptr || trips->numel() != 1 || trips->get(0) > 64) bounded = false;
        else f *= std::max(1.0, trips->get(0));
      }
      total += f;
    }
  }
  return total;
}

// Compiles `graph` for zero inputs and runs it once when it is small: at most 64 nodes, inputs of
// at most 65,536 elements, 50 MFLOPs (nested graphs included) and 64 MB of arena. Errors are fine.
inline void compile_and_run(ir::Graph graph, const ops::OpRegistry& registry, Reach& reach) {
  if (graph.num_nodes() > 64) return;
  stages::InputShapes shapes;
  runtime::Feeds feeds;
  for (ir::ValueId v : graph.inputs()) {
    const ir::Value& in = graph.value(v);
    if (!in.type.rank_known && in.type.is_tensor()) return;  // a sequence's unknown elements: scalars
    Shape shape;
    int64_t numel = 1;
    for (const ir::Dim& d : in.type.dims) {
      shape.push_back(d.is_known() ? d.size : 2);
      numel *= std::max<int64_t>(shape.back(), 1);
      if (numel > (1 << 16)) return;
    }
    auto t = Tensor::create(in.type.dtype, shape);
    if (!t) return;
    if (in.type.is_tensor()) {
      shapes[in.name] = shape;
      feeds.emplace(in.name, std::move(*t));
      continue;
    }
    // Sequences get two such tensors; optionals hold their value.
    const bool seq = in.type.kind == TypeKind::kSequence || in.type.kind == TypeKind::kOptionalSequence;
    Tensor value = seq ? Tensor::sequence(in.type.dtype, {*t, *t}) : *t;
    if (in.type.kind == TypeKind::kOptional || in.type.kind == TypeKind::kOptionalSequence)
      value = Tensor::optional(in.type.dtype, {value});
    feeds.emplace(in.name, std::move(value));
  }
  stages::SessionOptions options;
  stages::Session session(std::move(graph), registry, options);
  auto program = session.compile(shapes);
  if (!program) return;
  ++reach.compiled;
  bool bounded = true;
  const double nested = nested_flops((*program)->plan().graph, registry, bounded);
  if (!bounded || (*program)->plan().total_flops + nested > 50'000'000 || (*program)->plan().peak_bytes() > (size_t{64} << 20))
    return;
  ++reach.ran;
  if ((*program)->run(feeds)) ++reach.ran_ok;
}

}  // namespace tessera::fuzz
