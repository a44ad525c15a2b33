// Kernels made at run time for the shapes a step actually sees (ONNX Runtime's way).
//
// A Session compiles one program per set of input shapes, so a model's symbolic input dimensions
// are static by the compile stage. What stays unknown there is what the data decides: the boxes a
// detector keeps (NonMaxSuppression's count flows into Gather, TopK, RoIAlign, Concat...), a
// Reshape whose target is computed from such a count. Those steps ran on the reference kernels.
// A shape-specialised step instead builds, on each new set of input shapes (and the values of its
// small integer inputs, which act as shape arguments: Reshape's target, Slice's bounds), the same
// fast kernel the compile stage would have chosen for static types, loads it, and keeps it with
// its output buffers: a repeated shape costs one lookup and no allocation (unless the last run's
// output is still held elsewhere). At most kMaxShapes
// kernels are kept per step (least recently used out). Shapes no fast kernel takes (or whose
// output shapes depend on the data) run on the reference kernel, as before. A step whose shapes
// keep changing prefers the vectorised kernels, which cost nothing to make, over oneDNN's, which
// JIT-compile a primitive per shape.
//
// Usage (stages/program.cpp, a host step the compile stage marked `specialise`):
//   TRY(bool ran, st.specialised->run(node, def, kernels, threads, inputs, constants, outputs));
//   if (!ran) ... the reference kernel
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/kernel.h"

namespace tessera::stages {

class ShapeSpecialised {
 public:
  static constexpr size_t kMaxShapes = 16;
  // Integer inputs of at most this many elements are shape arguments: their values are part of
  // the key and reach the kernel as constants.
  static constexpr int64_t kMaxValueElements = 16;

  ShapeSpecialised();
  ~ShapeSpecialised();

  // Runs `node` on `inputs` (nullptr: an absent optional input; `constants[i]` the input's value
  // when known at compile time) through a kernel made for their shapes; false when no fast kernel
  // takes them (the caller runs the reference kernel). `outputs` alias buffers kept for the next
  // run with these shapes: valid until then.
  // A kept output buffer that someone still holds when the step runs again (a graph output the
  // caller kept, a tensor a sequence took) is left to them and replaced by a new one: outputs
  // never need a copy, and a buffer is reused only when nobody else can see it.
  Expected<bool> run(const ir::Node& node, const ops::OpDef& def, const backend::KernelRegistry& kernels, int threads,
                     const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& constants,
                     std::vector<Tensor>& outputs);

  int64_t kernel_runs() const { return kernel_runs_; }
  int64_t reference_runs() const { return reference_runs_; }
  size_t kernels_made() const { return kernels_made_; }
  const std::string& why_reference() const { return why_reference_; }  // the last decline

 private:
  struct Entry;
  std::list<std::pair<std::vector<int64_t>, std::unique_ptr<Entry>>> cache_;  // most recent first
  int64_t kernel_runs_ = 0, reference_runs_ = 0;
  size_t kernels_made_ = 0;
  std::string why_reference_;
};

}  // namespace tessera::stages
