// Kernels: the compiled form of one node on one backend, and the registry that binds them to ops.
//
// The compile stage asks the KernelRegistry for the candidates of a node's op (highest priority
// first); the first factory that returns a kernel wins, a factory returning nullptr declines
// (unsupported dtype, attribute, layout...), and the reference fallback (runtime/) takes what
// nobody handles. Kernels write into buffers the memory plan gives them: they never allocate
// activations themselves.
//
// Usage (a backend file):
//   registry.add("Relu", "cpu.vec:relu", 10, [](const KernelInit& init) -> Expected<std::unique_ptr<Kernel>> {
//     if (init.in_types[0]->dtype != DType::kF32) return std::unique_ptr<Kernel>();  // decline
//     return std::unique_ptr<Kernel>(new ReluKernel(init));
//   });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::backend {

// Physical layout of a value's buffer. The IR type keeps the logical (NCHW) shape; a blocked
// layout pads channels. "" is plain row-major; other tags are oneDNN format names ("nChw16c",
// "nChw8c"). The optimiser's layout pass writes the tag of each node's outputs into the node
// attribute "layout" (a string, one tag for all outputs) and inserts "Reorder" nodes at the edges.
using LayoutTag = std::string;
inline constexpr const char* kLayoutAttr = "layout";

// Everything known about a node when its kernel is chosen. Shapes are static (all dims known).
struct KernelInit {
  const ir::Node& node;
  const ops::OpDef& def;
  std::vector<const ir::TensorType*> in_types;   // nullptr for an absent optional input
  std::vector<const ir::TensorType*> out_types;
  std::vector<const Tensor*> constants;          // value of input i when known at compile time
                                                 // (weights, folded constants), else nullptr
  std::vector<LayoutTag> in_layouts;             // layout of each input buffer
  LayoutTag out_layout;                          // layout requested for the outputs
  int threads = 1;                               // intra-op threads the kernel may use
  // CPU matrix work (Conv, MatMul, Gemm) on bf16: inputs and weights rounded to bf16, f32
  // accumulation and f32 outputs (SessionOptions::bf16; only where cpu::bf16_unsupported() is "").
  bool bf16 = false;
  ops::AttrReader attrs() const { return ops::AttrReader(node, def); }
};

// A span of device memory (host memory on the CPU).
struct Buffer {
  void* data = nullptr;
  size_t bytes = 0;
};

struct KernelRun {
  std::vector<Buffer> inputs;   // data == nullptr for an absent optional input
  std::vector<Buffer> outputs;  // planned slots, output_bytes(i) long, in the node's out layout
  Buffer scratch;               // scratch_bytes() long (may overlap nothing else while running)
  int thread = 0;               // worker index running this kernel
  // The inputs of a gradient bucket's collective (AllReduce, AllReduceStart, AllReduceWait after
  // its token) lie in one buffer, each at the next 64-byte boundary after the previous, and nobody
  // but the bucket's own steps reads them: the kernel may sum them in place (the compile stage's
  // gradient buckets as views). Every other kernel's inputs are read-only.
  bool bucket_view = false;
};

// The boundary each gradient of a bucket view starts at (KernelRun::bucket_view).
inline constexpr size_t kBucketViewAlignment = 64;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Implementation name for traces and plans: "onednn:conv", "cpu.vec:add", "ref".
  virtual std::string name() const = 0;
  // The library's own choice inside that implementation, when it makes one: oneDNN's
  // implementation string ("jit_wino_4x3:avx512_core", "brgconv:avx512_core"); "" otherwise.
  virtual std::string detail() const { return ""; }
  // Bytes of output i in its layout.
  virtual size_t output_bytes(size_t i) const = 0;
  virtual size_t scratch_bytes() const { return 0; }
  // True when output 0 is input 0's bytes unchanged (a byte copy: Reshape and friends, a layout-only
  // Transpose): the compile stage may let the output share the input's buffer and skip the run.
  virtual bool is_view() const { return false; }
  // Once, at load: prepack weights, create primitives. Errors are values (catch library throws).
  virtual Status load() { return Status::ok(); }
  // Inputs may alias nothing the kernel writes, and are read-only (a bucket view aside:
  // KernelRun::bucket_view). Must be safe to call from any one thread at a time (the scheduler
  // never runs one node twice concurrently).
  virtual Status run(KernelRun& run) = 0;
};

using KernelFactory = std::function<Expected<std::unique_ptr<Kernel>>(const KernelInit&)>;

class KernelRegistry {
 public:
  struct Entry {
    std::string op;
    std::string impl;
    int priority = 0;
    KernelFactory factory;
  };
  void add(std::string op, std::string impl, int priority, KernelFactory factory);
  // Candidates for an op, highest priority first (stable for equal priorities).
  std::vector<const Entry*> candidates(const std::string& op) const;
  std::vector<std::string> ops() const;  // ops with at least one kernel, sorted

 private:
  std::vector<std::unique_ptr<Entry>> entries_;
};

// A factory that declines may say why (set_decline_reason); the compile stage takes the reason
// (take_decline_reason, which clears it) for steps left to the reference kernel. Per thread.
void set_decline_reason(std::string why);
std::string take_decline_reason();

// Bytes of a plain (row-major) tensor of a static type.
size_t plain_bytes(const ir::TensorType& type);

}  // namespace tessera::backend
