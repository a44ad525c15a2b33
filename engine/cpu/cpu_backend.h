// The CPU backend: oneDNN kernels, vectorised C++ kernels, and the layout choice for blocked
// (nChw16c / nChw8c) activations. See engine/cpu/README.md for what runs where.
//
// Usage (the compile stage and the optimiser):
//   backend::KernelRegistry kernels;
//   cpu::register_cpu_kernels(kernels);                 // oneDNN first, then vectorised kernels
//   TRY(bool changed, cpu::assign_layouts(graph, ops)); // the body of the "layout" pass
//   cpu::set_intra_op_threads(2);                        // on each executor worker thread
#pragma once

#include "engine/backend/kernel.h"
#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::cpu {

// Priorities the CPU kernels register with (higher wins; the reference fallback is below all).
inline constexpr int kOneDnnPriority = 100;
inline constexpr int kVecPriority = 50;

// Adds every CPU kernel (oneDNN and vectorised) to `registry`. Each factory declines (nullptr)
// what it does not support for plain layouts, and returns an error when asked for a blocked
// layout it cannot honour (the reference kernels only understand plain buffers). If oneDNN cannot
// create its CPU engine only the vectorised kernels are added.
void register_cpu_kernels(backend::KernelRegistry& registry);

// The most intra-op threads a session or trainer takes (the range of the CLI's --threads and of
// the Python package's threads=): far beyond the cores it only slows, and at 1024 libgomp fails
// to create its threads and exits the process. Inter-op workers likewise.
inline constexpr int kMaxThreads = 256;
inline constexpr int kMaxInterOpThreads = 64;

// Sets the intra-op thread count for kernels run by the calling thread (clamped to
// [1, kMaxThreads]): oneDNN's and the vectorised kernels' OpenMP regions (omp_set_num_threads, a
// per-thread setting).
void set_intra_op_threads(int n);

// Why this CPU cannot run SessionOptions::bf16 ("" when it can): oneDNN's bf16 kernels need
// AVX-512 BF16 (Zen 4, Cooper Lake) or AMX (Sapphire Rapids); elsewhere oneDNN would emulate bf16
// at a loss. Honours ONEDNN_MAX_CPU_ISA (a lower cap refuses).
std::string bf16_unsupported();

// The layout pass body. Requires inferred types. Sets node attribute backend::kLayoutAttr on
// 4-D f32 nodes whose output stays in oneDNN's layout ("nhwc": channels-last, what its AVX-512
// brgemm convolutions pick, so conv chains never reorder; blocked nChw16c/nChw8c stay supported
// by the kernels), removes stale ones, and inserts Reorder nodes where a blocked value meets a
// consumer (or a graph output) that needs plain, or a plain value meets a blocked Add / Mul /
// Concat. A node is only marked when its CPU kernel accepts the layouts (the pass asks the
// factories). Logical value types never change. Returns whether the graph changed; running it
// twice changes nothing the second time.
Expected<bool> assign_layouts(ir::Graph& graph, const ops::OpRegistry& registry);

}  // namespace tessera::cpu
