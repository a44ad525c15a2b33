// Stage 4, compile: optimised graph -> execution plan. Chooses a kernel for every node (the
// device's fast kernels in priority order, else the op's reference kernel), plans memory from
// value lifetimes (one arena per device, buffers reused; see memory_plan.h), and orders the work
// as a dependency DAG of steps for the dataflow executor.
//
// Values whose shapes are only known at run time (data-dependent ops such as NonZero) are kept
// out of the arena: their producers and consumers run reference kernels and the executor holds
// them as tensors.
//
// Usage:
//   TRY(ExecutionPlan plan, compile(std::move(optimised), devices, /*threads=*/2, ctx));
//   std::cout << plan.print();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/device.h"
#include "engine/stages/memory_plan.h"
#include "engine/stages/specialise.h"
#include "engine/stages/split.h"

namespace tessera::stages {

// Where a value lives during execution.
struct ValueSlot {
  enum class Kind { kNone, kInput, kParam, kArena, kDynamic };
  Kind kind = Kind::kNone;
  int device = 0;               // index into ExecutionPlan::devices
  size_t offset = 0;            // arena offset (kArena)
  size_t bytes = 0;             // buffer size in its layout (kArena)
  backend::LayoutTag layout;    // "" plain
  int input_index = -1;         // kInput: position among the graph inputs
  int request = -1;             // index into the device's memory requests (kArena)
};

struct Step {
  // kAlias: a view (Reshape, Flatten, Squeeze, Unsqueeze, Identity of a plain buffer) whose
  // output shares its input's bytes: nothing runs.
  enum class Kind { kKernel, kReference, kCopy, kAlias };
  Kind kind = Kind::kReference;
  ir::NodeId node = ir::kNoNode;
  int device = 0;
  std::string impl;                          // kernel name, "ref", "copy" or "alias"
  std::string detail;                        // the kernel's Kernel::detail() ("jit_wino_4x3:avx512_core")
  std::string why_reference;                 // kReference: why no fast kernel took the node
  std::unique_ptr<backend::Kernel> kernel;   // kKernel
  std::vector<ir::ValueId> captured;         // values nested graphs read by name (kReference)
  bool nested = false;                       // the node has graph attributes (If, Loop, Scan)
  // A host step whose types were not all static: kernels made per shape at run time (specialise.h).
  std::unique_ptr<ShapeSpecialised> specialised;
  size_t scratch_offset = 0, scratch_bytes = 0;
  int scratch_request = -1;
  // The node's gradient inputs are views into one bucket buffer it may sum in place
  // (backend::KernelRun::bucket_view; AllReduce, AllReduceStart and its AllReduceWait).
  bool bucket_view = false;
  std::vector<int> succs;                    // steps that wait for this one
  int num_preds = 0;
  double flops = 0;
  int64_t bytes = 0;                         // bytes read + written
};

struct ExecutionPlan {
  ir::Graph graph;                           // the optimised graph the steps refer to
  std::vector<std::string> devices;          // device names, index = ValueSlot::device
  std::vector<ValueSlot> slots;              // by value id
  std::vector<Step> steps;                   // in a topological order
  std::vector<std::vector<BufferRequest>> requests;  // per device
  std::vector<MemoryPlan> memory;            // per device
  int threads = 1;                           // intra-op threads of every kernel
  int workers = 1;                           // steps run at once (the executor's thread pool)
  double total_flops = 0;
  int memory_edges = 0;                      // step edges added because buffers share bytes
  // Outputs written in place into a donated graph input's buffer (StageContext::donate_inputs):
  // (output value, input value). The output's slot is the input's.
  std::vector<std::pair<ir::ValueId, ir::ValueId>> donations;
  std::string preferred;                     // the device the split preferred
  std::vector<Placement> fallbacks;          // nodes kept off it, with the reason (split, refit)

  size_t peak_bytes() const;                 // sum of arena sizes
  size_t lower_bound_bytes() const;
  // Steps with kernel, device and buffers; then the memory plan of each device.
  std::string print() const;
};

Expected<ExecutionPlan> compile(PlacedGraph placed, const backend::DeviceSet& devices, int threads,
                                StageContext& ctx);

}  // namespace tessera::stages
