// Kernels with no setup cost for the small shapes of a decoder's step: MatMul of a few rows by a
// run-time right operand, Softmax over the last axis, plain Concat.
//
// Why: generating token by token, a decoder's attention shapes grow by one every step (the KV
// cache), so the steps they reach get a kernel made for each new shape (stages/specialise.h).
// oneDNN's matmul, softmax and concat JIT-compile a primitive for every new shape: most of a
// token's 1.3 ms went there. These loops need no setup and are as fast at these sizes; larger
// shapes decline.
#include <cstring>
#include <vector>

#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

// After oneDNN: a program compiled for static shapes keeps oneDNN's kernels (made once); a step
// whose shapes keep changing takes these first (stages/specialise.cpp).
constexpr int kSmallPriority = kVecPriority;
constexpr int64_t kMaxRows = 8;                      // MatMul: rows of A (a decoder step has 1)
constexpr int64_t kMaxMacs = int64_t{1} << 22;
constexpr int64_t kMaxSoftmax = int64_t{1} << 16;
constexpr int64_t kMaxConcatBytes = int64_t{4} << 20;

// y[0, n) += a * b[0, n)
TESSERA_VEC_CLONES void axpy(float a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * b[i];
}

Expected<KernelPtr> make_small_matmul(const KernelInit& init) {
  const std::string impl = "cpu.vec:small_matmul";
  if (!plain_static(init) || init.in_types.size() != 2 || init.out_types.size() != 1) return pass_to_next("needs plain static types");
  const ir::TensorType *at = init.in_types[0], *bt = init.in_types[1];
  if (at->dtype != DType::kF32 || bt->dtype != DType::kF32 || at->rank() < 2 || bt->rank() < 2 || init.constants[1])
    return pass_to_next("f32 operands of rank 2 or more, the right one known at run time only");
  const Shape a = at->static_shape(), b = bt->static_shape(), y = init.out_types[0]->static_shape();
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k || m > kMaxRows) return pass_to_next("more than 8 rows");
  // Batch axes: y's, with each operand's broadcast (equal rank after the exporter's matmul).
  const size_t batch_rank = y.size() - 2;
  if (a.size() != y.size() || b.size() != y.size()) return pass_to_next("operands of different ranks");
  int64_t batches = 1;
  for (size_t d = 0; d < batch_rank; ++d) batches *= y[d];
  if (batches * m * n * k > kMaxMacs) return pass_to_next("large");
  // Offsets of each batch's A and B (broadcast axes of size 1 repeat).
  std::vector<int64_t> a_off(static_cast<size_t>(batches)), b_off(static_cast<size_t>(batches));
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rest = i, ao = 0, bo = 0, as = m * k, bs = k * n;
    for (size_t d = batch_rank; d-- > 0;) {
      const int64_t idx = rest % y[d];
      rest /= y[d];
      ao += (a[d] == 1 ? 0 : idx) * as;
      bo += (b[d] == 1 ? 0 : idx) * bs;
      as *= a[d];
      bs *= b[d];
    }
    a_off[static_cast<size_t>(i)] = ao;
    b_off[static_cast<size_t>(i)] = bo;
  }
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* pa = static_cast<const float*>(run.inputs[0].data);
    const float* pb = static_cast<const float*>(run.inputs[1].data);
    float* py = static_cast<float*>(run.outputs[0].data);
    std::memset(py, 0, static_cast<size_t>(batches * m * n) * sizeof(float));
    for (int64_t i = 0; i < batches; ++i)
      for (int64_t r = 0; r < m; ++r) {
        const float* arow = pa + a_off[static_cast<size_t>(i)] + r * k;
        float* yrow = py + (i * m + r) * n;
        for (int64_t j = 0; j < k; ++j) axpy(arow[j], pb + b_off[static_cast<size_t>(i)] + j * n, yrow, n);
      }
    return Status::ok();
  });
}

TESSERA_VEC_CLONES void softmax_rows(const float* x, float* y, int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    float mx = -__builtin_inff();
    bool nan = false;
    for (int64_t j = 0; j < c; ++j) {
      mx = xr[j] > mx ? xr[j] : mx;
      nan |= xr[j] != xr[j];
    }
    float sum = 0;
    for (int64_t j = 0; j < c; ++j) {
      yr[j] = vexp(xr[j] - mx);
      sum += yr[j];
    }
    const float inv = nan ? __builtin_nanf("") : 1.0f / sum;
    for (int64_t j = 0; j < c; ++j) yr[j] *= inv;
  }
}

Expected<KernelPtr> make_small_softmax(const KernelInit& init) {
  const std::string impl = "cpu.vec:small_softmax";
  if (!plain_static(init) || init.in_types.size() != 1 || init.in_types[0]->dtype != DType::kF32 || init.in_types[0]->rank() == 0)
    return pass_to_next("needs plain static f32");
  const Shape x = init.in_types[0]->static_shape();
  int64_t axis = init.attrs().i("axis");
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  if (axis != static_cast<int64_t>(x.size()) - 1) return pass_to_next("not the last axis");
  const int64_t total = init.in_types[0]->static_numel(), c = x.back();
  if (total > kMaxSoftmax || c == 0) return pass_to_next("large");
  return make(impl, init, [=](KernelRun& run) -> Status {
    softmax_rows(static_cast<const float*>(run.inputs[0].data), static_cast<float*>(run.outputs[0].data), total / c, c);
    return Status::ok();
  });
}

Expected<KernelPtr> make_plain_concat(const KernelInit& init) {
  const std::string impl = "cpu.vec:concat";
  if (!plain_static(init) || init.out_types.size() != 1) return pass_to_next("needs plain static types");
  const Shape y = init.out_types[0]->static_shape();
  if (y.empty()) return pass_to_next("scalar");
  int64_t axis = init.attrs().i("axis");
  if (axis < 0) axis += static_cast<int64_t>(y.size());
  const int esize = dtype_size(init.out_types[0]->dtype);
  if (init.out_types[0]->dtype == DType::kString) return pass_to_next("strings");
  int64_t outer = 1, inner = esize;
  for (int64_t d = 0; d < axis; ++d) outer *= y[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < y.size(); ++d) inner *= y[d];
  if (outer * y[static_cast<size_t>(axis)] * inner > kMaxConcatBytes) return pass_to_next("large");
  std::vector<int64_t> block;  // bytes of each input per outer index
  for (const ir::TensorType* t : init.in_types) {
    if (!t || t->dtype != init.out_types[0]->dtype) return pass_to_next("mixed types");
    block.push_back(t->static_shape()[static_cast<size_t>(axis)] * inner);
  }
  int64_t row = 0;
  for (int64_t b : block) row += b;
  return make(impl, init, [=](KernelRun& run) -> Status {
    auto* py = static_cast<std::byte*>(run.outputs[0].data);
    for (int64_t o = 0; o < outer; ++o) {
      std::byte* dst = py + o * row;
      for (size_t i = 0; i < block.size(); ++i) {
        if (block[i] == 0) continue;
        std::memcpy(dst, static_cast<const std::byte*>(run.inputs[i].data) + o * block[i], static_cast<size_t>(block[i]));
        dst += block[i];
      }
    }
    return Status::ok();
  });
}

}  // namespace

void register_vec_small(KernelRegistry& registry) {
  registry.add("MatMul", "cpu.vec:small_matmul", kSmallPriority, make_small_matmul);
  registry.add("Softmax", "cpu.vec:small_softmax", kSmallPriority, make_small_softmax);
  registry.add("Concat", "cpu.vec:concat", kSmallPriority, make_plain_concat);
}

}  // namespace tessera::cpu
