// If branches and Loop bodies compiled through the six stages, as the main graph is.
//
// The compile stage leaves a control-flow node (If, Loop, Scan) as a host step whose kernel picks
// the branch or iterates the body; before this, the branch or body then ran on the reference
// interpreter, op by op (a voice-activity detector whose whole model sits in an If ran 39x slower
// than ONNX Runtime). ONNX Runtime keeps a session state per subgraph; here each nested graph gets
// a Session of its own on first use: its captures become inputs, or params when the enclosing
// value is a weight (so kernels pack them once), and the Session compiles one program per set of
// concrete input shapes (a Loop whose carried values change shape compiles per shape, at most
// kMaxShapes of them; later shapes run on the reference interpreter).
//
// Usage (stages/program.cpp):
//   NestedGraphs nested(registry, threads);
//   kctx.run_subgraph = [&](const ir::Graph& sub, const std::vector<Tensor>& in) {
//     return nested.run(sub, in, scope, constants);
//   };
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/runtime/interpreter.h"

namespace tessera::ops {
class OpRegistry;
}

namespace tessera::stages {

class Session;

class NestedGraphs {
 public:
  static constexpr size_t kMaxShapes = 8;

  NestedGraphs(const ops::OpRegistry& registry, int threads);
  ~NestedGraphs();

  // Runs `sub` with its inputs bound positionally and its captures from `scope`; the names in
  // `constants` are weights of the enclosing graph (their tensors never change between runs).
  Expected<std::vector<Tensor>> run(const ir::Graph& sub, const std::vector<Tensor>& inputs,
                                    const runtime::NamedTensors& scope, const std::set<std::string>& constants);

  // Graphs compiled, and those on the reference interpreter with the reason (for `passes`/`bench`).
  std::vector<std::string> summary() const;

 private:
  struct Entry;
  const ops::OpRegistry& registry_;
  int threads_;
  mutable std::mutex mu_;
  std::map<const ir::Graph*, std::unique_ptr<Entry>> entries_;
};

}  // namespace tessera::stages
