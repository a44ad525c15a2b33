// Vectorised ReduceSum over f32 with constant axes: the bias gradients of training (sum over
// [N, H, W] of a [N, C, H, W] gradient, over N of an [N, K] one), where oneDNN 2.6 picks its
// reference reduction (~100x slower at these shapes). Adjacent axes with the same role (reduced or
// kept) are merged, size-1 axes dropped, and the input walked once in memory order: a reduced
// innermost run is summed with 8 partial sums, a kept innermost run added to the output row.
// Single-threaded: the shapes this serves are small, and the order of additions is fixed.
#include <cstring>

#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

struct Run {
  int64_t size;
  bool reduced;
};

float sum_run(const float* p, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += p[i];
  return s;
}

Expected<KernelPtr> make_reduce_sum(const KernelInit& init) {
  const std::string impl = "cpu.vec:reduce_sum";
  if (!plain_static(init) || init.out_types.size() != 1 || init.in_types[0]->dtype != DType::kF32)
    return decline(init, impl, "needs plain static f32");
  const Shape x = init.in_types[0]->static_shape();
  const int rank = static_cast<int>(x.size());
  std::vector<bool> red(static_cast<size_t>(rank), false);
  const bool has_axes = init.in_types.size() > 1 && init.in_types[1];
  if (has_axes && !init.constants[1]) return decline(init, impl, "axes not constant");
  const Tensor* axes = has_axes ? init.constants[1] : nullptr;
  if (!axes || axes->numel() == 0) {
    const ir::Attribute* noop = init.node.attr("noop_with_empty_axes");
    if (noop && noop->i() != 0) return decline(init, impl, "identity (noop_with_empty_axes)");
    red.assign(red.size(), true);
  } else {
    for (int64_t k = 0; k < axes->numel(); ++k) {
      int64_t a = static_cast<int64_t>(axes->get(k));
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return decline(init, impl, "axis out of range");
      red[static_cast<size_t>(a)] = true;
    }
  }
  std::vector<Run> runs;
  for (int d = 0; d < rank; ++d) {
    if (x[static_cast<size_t>(d)] == 1) continue;
    if (!runs.empty() && runs.back().reduced == red[static_cast<size_t>(d)]) runs.back().size *= x[static_cast<size_t>(d)];
    else runs.push_back({x[static_cast<size_t>(d)], red[static_cast<size_t>(d)]});
  }
  if (runs.empty()) runs.push_back({1, false});
  int64_t in_n = 1, out_n = 1;
  for (const Run& r : runs) {
    in_n *= r.size;
    if (!r.reduced) out_n *= r.size;
  }
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* in = static_cast<const float*>(run.inputs[0].data);
    float* out = static_cast<float*>(run.outputs[0].data);
    std::memset(out, 0, static_cast<size_t>(out_n) * sizeof(float));
    if (in_n == 0) return Status::ok();
    const Run inner = runs.back();
    const size_t outer_rank = runs.size() - 1;
    std::vector<int64_t> idx(outer_rank, 0);
    int64_t obase = 0;
    // Output stride of each outer run: the product of the kept sizes after it.
    std::vector<int64_t> ostride(runs.size(), 0);
    for (int64_t d = static_cast<int64_t>(runs.size()) - 1, s = 1; d >= 0; --d) {
      ostride[static_cast<size_t>(d)] = runs[static_cast<size_t>(d)].reduced ? 0 : s;
      if (!runs[static_cast<size_t>(d)].reduced) s *= runs[static_cast<size_t>(d)].size;
    }
    for (int64_t base = 0; base < in_n; base += inner.size) {
      if (inner.reduced) {
        out[obase] += sum_run(in + base, inner.size);
      } else {
        float* o = out + obase;
        const float* p = in + base;
        for (int64_t j = 0; j < inner.size; ++j) o[j] += p[j];
      }
      for (size_t d = outer_rank; d-- > 0;) {  // advance the outer index, odometer style
        obase += ostride[d];
        if (++idx[d] < runs[d].size) break;
        obase -= ostride[d] * runs[d].size;
        idx[d] = 0;
      }
    }
    return Status::ok();
  });
}

}  // namespace

void register_vec_reduce(KernelRegistry& registry) {
  // Above oneDNN's reduction, which is its reference implementation for these shapes.
  registry.add("ReduceSum", "cpu.vec:reduce_sum", kOneDnnPriority + 10, make_reduce_sum);
}

}  // namespace tessera::cpu
