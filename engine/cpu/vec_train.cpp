// Vectorised kernels for the ops a training step spends its time on besides convolutions and
// matrix products: the optimizer updates (SGDUpdate, AdamUpdate over f32, written straight into
// the planned buffers; the formulas are train_ops.cpp's, term for term) and ReduceSum.
//
// ReduceSum (and ReduceMean, the sum scaled by 1 / count) over f32 with constant axes: the bias gradients of training (sum over
// [N, H, W] of a [N, C, H, W] gradient, over N of an [N, K] one), where oneDNN 2.6 picks its
// reference reduction (~100x slower at these shapes). Adjacent axes with the same role (reduced or
// kept) are merged, size-1 axes dropped, and the input walked once in memory order: a reduced
// innermost run is summed with 8 partial sums, a kept innermost run added to the output row.
// Single-threaded: the shapes this serves are small, and the order of additions is fixed.
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <optional>

#include "engine/cpu/nan_repair.h"
#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {


struct Run {
  int64_t size;
  bool reduced;
};

TESSERA_VEC_CLONES void add_row(float* o, const float* p, int64_t n) {
  for (int64_t j = 0; j < n; ++j) o[j] += p[j];
}

TESSERA_VEC_CLONES float sum_run(const float* p, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += p[i];
  return s;
}

Expected<KernelPtr> make_reduce(const KernelInit& init, bool mean) {
  const std::string impl = mean ? "cpu.vec:reduce_mean" : "cpu.vec:reduce_sum";
  if (!plain_static(init) || init.out_types.size() != 1 || init.in_types[0]->dtype != DType::kF32)
    return decline(init, impl, "needs plain static f32");
  const Shape x = init.in_types[0]->static_shape();
  const int rank = static_cast<int>(x.size());
  std::vector<bool> red(static_cast<size_t>(rank), false);
  const bool has_axes = init.in_types.size() > 1 && init.in_types[1];
  if (has_axes && !init.constants[1]) return decline(init, impl, "axes not constant");
  const Tensor* axes = has_axes ? init.constants[1] : nullptr;
  std::optional<Tensor> attr_axes;  // opsets before 18 (ReduceMean) give the axes as an attribute
  if (!has_axes && init.node.attr("axes")) {
    const std::vector<int64_t>& a = init.node.attr("axes")->ints();
    attr_axes = Tensor::from_vector<int64_t>({static_cast<int64_t>(a.size())}, a);
    axes = &*attr_axes;
  }
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
        add_row(o, p, inner.size);
      }
      for (size_t d = outer_rank; d-- > 0;) {  // advance the outer index, odometer style
        obase += ostride[d];
        if (++idx[d] < runs[d].size) break;
        obase -= ostride[d] * runs[d].size;
        idx[d] = 0;
      }
    }
    if (mean) {
      const float inv = 1.0f / static_cast<float>(in_n / out_n);
      for (int64_t j = 0; j < out_n; ++j) out[j] *= inv;
    }
    return Status::ok();
  });
}

float scalar_f32(const backend::Buffer& b) { return *static_cast<const float*>(b.data); }

// The update's optional loss input (train_ops.cpp): not finite, the step is skipped. Outputs
// written over their inputs are left alone, others get the inputs' bytes.
bool skip_step(KernelRun& run, size_t loss_input, const std::vector<std::pair<size_t, size_t>>& out_in) {
  if (run.inputs.size() <= loss_input || !run.inputs[loss_input].data || std::isfinite(scalar_f32(run.inputs[loss_input])))
    return false;
  for (const auto& [o, i] : out_in)
    if (run.outputs[o].data != run.inputs[i].data && run.outputs[o].bytes) std::memcpy(run.outputs[o].data, run.inputs[i].data, run.outputs[o].bytes);
  return true;
}

bool scalar_f32_input(const KernelInit& init, size_t i) {
  return init.in_types.size() <= i || !init.in_types[i] ||
         (init.in_types[i]->dtype == DType::kF32 && init.in_types[i]->static_numel() == 1);
}

// The update loops. The new parameter and buffers may be written over the old ones (the compile
// stage's in-place outputs): element i is read before it is written, nothing else.
//
// The weight decay's product comes first, so that GCC's contraction fuses it with the sum:
// d = fma(wd, p, g * gs), the rounding of an unscaled update of the gradient g * gs (data parallel:
// the update of the sum with grad_scale 1/2 is bit for bit the update of the mean; with gs = 1 the
// rounding of the update before grad_scale existed). Fusing g * gs instead would round wd * p
// first (CpuVec.OptimizerUpdates checks the bits).
TESSERA_VEC_CLONES void sgd_range(const float* p, const float* g, float* out, int64_t n, float lr, float wd, float gs) {
  for (int64_t i = 0; i < n; ++i) {
    const float l2 = wd * p[i];
    out[i] = p[i] - lr * (g[i] * gs + l2);
  }
}

// wd = 0 adds 0 * p (exact), nesterov = 0 multiplies d by 0 (exact for finite d), gs = 1 (the
// gradient's scale, grad_scale) is exact: one branch-free loop for every variant.
TESSERA_VEC_CLONES void sgd_momentum_range(const float* p, const float* g, const float* b, float* out, float* nb,
                                           int64_t n, float lr, float wd, float gs, float momentum, bool nesterov) {
  const float keep_d = nesterov ? 1.f : 0.f, buf_w = nesterov ? momentum : 1.f;
  for (int64_t i = 0; i < n; ++i) {
    const float l2 = wd * p[i];
    const float d = g[i] * gs + l2;
    const float buf = momentum * b[i] + d;
    nb[i] = buf;
    out[i] = p[i] - lr * (keep_d * d + buf_w * buf);
  }
}

struct AdamConstants {
  float b1, b2, one_minus_b1, one_minus_b2, eps, wd, decay, step_size, sqrt_c2, grad_scale;
  bool decoupled;
};

// Vectorised: each form of weight decay has its own loop, the constants are locals, `ivdep` says
// that no iteration reads what another writes (true in place too: po == p, mo == m, vo == v are
// read and written at the same index; seven streams are more than GCC's run-time alias checks
// cover), and -fno-math-errno (CMakeLists.txt) lets the square root vectorise.
TESSERA_VEC_CLONES void adam_range(const float* p, const float* g, const float* m, const float* v, float* po, float* mo,
                                   float* vo, int64_t n, AdamConstants k) {
  const float b1 = k.b1, b2 = k.b2, c1 = k.one_minus_b1, c2 = k.one_minus_b2, eps = k.eps, wd = k.wd,
              decay = k.decay, step = k.step_size, sqrt_c2 = k.sqrt_c2, gs = k.grad_scale;
  if (k.decoupled) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) {
      const float d = g[i] * gs, param = p[i] * decay;
      const float mi = b1 * m[i] + c1 * d;
      const float vi = b2 * v[i] + c2 * d * d;
      mo[i] = mi;
      vo[i] = vi;
      po[i] = param - step * mi / (std::sqrt(vi) / sqrt_c2 + eps);
    }
    return;
  }
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const float l2 = wd * p[i];
    const float d = g[i] * gs + l2;
    const float mi = b1 * m[i] + c1 * d;
    const float vi = b2 * v[i] + c2 * d * d;
    mo[i] = mi;
    vo[i] = vi;
    po[i] = p[i] - step * mi / (std::sqrt(vi) / sqrt_c2 + eps);
  }
}

TESSERA_VEC_CLONES void relu_grad_range(const float* dy, const float* y, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

Expected<KernelPtr> make_relu_grad(const KernelInit& init) {
  const std::string impl = "cpu.vec:relu_grad";
  if (!plain_static(init) || !same_f32_shape(init, 0, 1)) return decline(init, impl, "needs plain static f32");
  const int64_t n = init.in_types[0]->static_numel();
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* dy = static_cast<const float*>(run.inputs[0].data);
    const float* y = static_cast<const float*>(run.inputs[1].data);
    float* dx = static_cast<float*>(run.outputs[0].data);
    for_chunks(n, kParallelUpdate, [&](int64_t lo, int64_t hi) { relu_grad_range(dy + lo, y + lo, dx + lo, hi - lo); });
    return Status::ok();
  });
}

// ---- Sum of same-shape f32 tensors (gradient accumulation) ---------------------------------------

TESSERA_VEC_CLONES void add2(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

Expected<KernelPtr> make_sum(const KernelInit& init) {
  const std::string impl = "cpu.vec:sum";
  if (!plain_static(init) || init.in_types.size() < 2) return decline(init, impl, "needs plain static f32, 2 or more inputs");
  for (size_t i = 0; i < init.in_types.size(); ++i)
    if (!same_f32_shape(init, 0, i) || init.in_types[i]->static_shape() != init.out_types[0]->static_shape())
      return decline(init, impl, "inputs of the output's shape (no broadcasting)");
  const int64_t n = init.out_types[0]->static_numel();
  const size_t k = init.in_types.size();
  return make(impl, init, [=](KernelRun& run) -> Status {
    float* out = static_cast<float*>(run.outputs[0].data);
    for_chunks(n, kParallelUpdate, [&](int64_t lo, int64_t hi) {
      add2(static_cast<const float*>(run.inputs[0].data) + lo, static_cast<const float*>(run.inputs[1].data) + lo, out + lo, hi - lo);
      for (size_t i = 2; i < k; ++i) add2(out + lo, static_cast<const float*>(run.inputs[i].data) + lo, out + lo, hi - lo);
    });
    return Status::ok();
  });
}

// ---- SoftmaxCrossEntropyLoss and its gradient: f32 scores [N, C, d...], i64 targets, no weights,
// reduction mean or sum. Per position: m = max_j x_j, s = sum_j e^(x_j - m); the loss is
// log s + m - x_k, the gradient g (e^(x_j - m) / s - [j == k]). Positions of ignore_index count for
// nothing (and not in the mean's count). Along the classes when d is empty, else along d.

struct LossShape {
  int64_t n = 0, c = 0, inner = 1;
  bool mean = true, has_ignore = false;
  int64_t ignore = 0;
};

Expected<LossShape> loss_shape(const KernelInit& init, size_t scores, size_t target) {
  LossShape s;
  if (!plain_static(init) || !init.in_types[scores] || init.in_types[scores]->dtype != DType::kF32 ||
      init.in_types[scores]->rank() < 2 || !init.in_types[target] || init.in_types[target]->dtype != DType::kI64)
    return make_error("needs plain static f32 scores and i64 targets");
  if (init.in_types.size() > target + 1 && init.in_types[target + 1]) return make_error("class weights");
  const Shape x = init.in_types[scores]->static_shape();
  s.n = x[0];
  s.c = x[1];
  for (size_t d = 2; d < x.size(); ++d) s.inner *= x[d];
  const ir::Attribute* red = init.node.attr("reduction");
  const std::string r = red ? red->s() : "mean";
  if (r != "mean" && r != "sum") return make_error("reduction " + r);
  s.mean = r == "mean";
  if (const ir::Attribute* ig = init.node.attr("ignore_index")) s.has_ignore = true, s.ignore = ig->i();
  return s;
}

// Over positions [0, w) of one example: column j of the classes is x + j * stride.
TESSERA_VEC_CLONES void softmax_columns(const float* x, int64_t c, int64_t stride, int64_t w, float* m, float* s) {
  for (int64_t i = 0; i < w; ++i) m[i] = x[i], s[i] = 0.f;
  for (int64_t j = 1; j < c; ++j)
    for (int64_t i = 0; i < w; ++i) m[i] = std::max(m[i], x[j * stride + i]);
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i < w; ++i) s[i] += vexp(x[j * stride + i] - m[i]);
}

TESSERA_VEC_CLONES void softmax_grad_columns(const float* x, float* dx, int64_t c, int64_t stride, int64_t w, const float* m,
                                             const float* gs) {
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i < w; ++i) dx[j * stride + i] = gs[i] * vexp(x[j * stride + i] - m[i]);
}

TESSERA_VEC_CLONES void softmax_row(const float* x, int64_t c, float* m, float* s) {
  float mx = x[0];
  for (int64_t j = 1; j < c; ++j) mx = std::max(mx, x[j]);
  float sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += vexp(x[j] - mx);
  *m = mx, *s = sum;
}

TESSERA_VEC_CLONES void softmax_grad_row(const float* x, float* dx, int64_t c, float m, float g) {
  for (int64_t j = 0; j < c; ++j) dx[j] = g * vexp(x[j] - m);
}

// Calls f(n, first position, width, m, s) for blocks of positions of every example, m and s the
// per-position max and sum of exponentials (a row per position when there are no d dims).
constexpr int64_t kLossBlock = 256;  // positions per block of for_loss_blocks

// Examples are split over the OpenMP team when there is enough work (a language model's [N, C, T]
// logits); f must only write what belongs to its example.
constexpr int64_t kParallelLoss = 1 << 16;  // scores up to which the loss stays on one thread

template <class F>
void for_loss_blocks(const float* x, const LossShape& ls, F&& f) {
#pragma omp parallel for schedule(static) if (ls.n > 1 && ls.n * ls.c * ls.inner > kParallelLoss)
  for (int64_t b = 0; b < ls.n; ++b) {
    float m[kLossBlock], s[kLossBlock];
    const float* xb = x + b * ls.c * ls.inner;
    if (ls.inner == 1) {  // [N, C]: one row
      softmax_row(xb, ls.c, m, s);
      f(b, 0, 1, m, s);
      continue;
    }
    for (int64_t i0 = 0; i0 < ls.inner; i0 += kLossBlock) {
      const int64_t w = std::min(kLossBlock, ls.inner - i0);
      softmax_columns(xb + i0, ls.c, ls.inner, w, m, s);
      f(b, i0, w, m, s);
    }
  }
}

// The positions that count (not ignore_index), every target checked against the classes.
Expected<int64_t> counted_targets(const int64_t* t, const LossShape& ls) {
  int64_t count = 0;
  for (int64_t p = 0; p < ls.n * ls.inner; ++p) {
    if (ls.has_ignore && t[p] == ls.ignore) continue;
    if (t[p] < 0 || t[p] >= ls.c)
      return make_error("target class " + std::to_string(t[p]) + " is out of range for " + std::to_string(ls.c) + " classes");
    ++count;
  }
  return count;
}

Expected<KernelPtr> make_softmax_ce(const KernelInit& init) {
  const std::string impl = "cpu.vec:softmax_cross_entropy";
  if (init.out_types.size() != 1) return decline(init, impl, "the log_prob output");
  auto ls = loss_shape(init, 0, 1);
  if (!ls) return decline(init, impl, ls.error().message);
  const LossShape s = *ls;
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    const int64_t* t = static_cast<const int64_t*>(run.inputs[1].data);
    TRY(const int64_t count, counted_targets(t, s));
    // Each example's sum on its own, added in example order: the same total on any thread count.
    std::vector<double> part(static_cast<size_t>(s.n), 0.0);
    for_loss_blocks(x, s, [&](int64_t b, int64_t i0, int64_t w, const float* m, const float* sum) {
      for (int64_t i = 0; i < w; ++i) {
        const int64_t k = t[b * s.inner + i0 + i];
        if (!(s.has_ignore && k == s.ignore))
          part[static_cast<size_t>(b)] += std::log(static_cast<double>(sum[i])) + m[i] - x[(b * s.c + k) * s.inner + i0 + i];
      }
    });
    double total = 0;
    for (double v : part) total += v;
    *static_cast<float*>(run.outputs[0].data) =
        static_cast<float>(s.mean ? (count ? total / static_cast<double>(count) : std::nan("")) : total);
    return Status::ok();
  });
}

Expected<KernelPtr> make_softmax_ce_grad(const KernelInit& init) {
  const std::string impl = "cpu.vec:softmax_cross_entropy_grad";
  auto ls = loss_shape(init, 1, 2);
  if (!ls) return decline(init, impl, ls.error().message);
  if (init.in_types[0]->dtype != DType::kF32 || init.in_types[0]->static_numel() != 1)
    return decline(init, impl, "reduction none");
  const LossShape s = *ls;
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float g = *static_cast<const float*>(run.inputs[0].data);
    const float* x = static_cast<const float*>(run.inputs[1].data);
    const int64_t* t = static_cast<const int64_t*>(run.inputs[2].data);
    float* dx = static_cast<float*>(run.outputs[0].data);
    TRY(const int64_t count, counted_targets(t, s));
    const float scale = s.mean ? static_cast<float>(static_cast<double>(g) / static_cast<double>(count)) : g;
    for_loss_blocks(x, s, [&](int64_t b, int64_t i0, int64_t w, const float* m, const float* sum) {
      float gs[kLossBlock];
      for (int64_t i = 0; i < w; ++i) {
        const int64_t k = t[b * s.inner + i0 + i];
        gs[i] = s.has_ignore && k == s.ignore ? 0.f : scale / sum[i];
      }
      const int64_t base = b * s.c * s.inner + i0;
      if (s.inner == 1) {
        softmax_grad_row(x + base, dx + base, s.c, m[0], gs[0]);
      } else {
        softmax_grad_columns(x + base, dx + base, s.c, s.inner, w, m, gs);
      }
      for (int64_t i = 0; i < w; ++i) {
        const int64_t k = t[b * s.inner + i0 + i];
        if (!(s.has_ignore && k == s.ignore)) dx[base + k * s.inner + i] -= scale;
      }
    });
    return Status::ok();
  });
}

Expected<KernelPtr> make_sgd(const KernelInit& init) {
  const std::string impl = "cpu.vec:sgd";
  if (!plain_static(init) || !same_f32_shape(init, 0, 1) || init.in_types[2]->dtype != DType::kF32)
    return decline(init, impl, "needs plain static f32");
  const ops::AttrReader a = init.attrs();  // (the schema's defaults when unset)
  const float momentum = static_cast<float>(a.f("momentum")), wd = static_cast<float>(a.f("weight_decay"));
  const float gs = static_cast<float>(a.f("grad_scale"));
  const bool nesterov = a.i("nesterov") != 0;
  const bool has_buf = momentum != 0.f;
  if (has_buf && (init.in_types.size() < 4 || !same_f32_shape(init, 0, 3))) return decline(init, impl, "momentum buffer");
  if (!scalar_f32_input(init, 4)) return decline(init, impl, "the loss input is not an f32 scalar");
  const int64_t n = init.in_types[0]->static_numel();
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* p = static_cast<const float*>(run.inputs[0].data);
    const float* g = static_cast<const float*>(run.inputs[1].data);
    const float lr = scalar_f32(run.inputs[2]);
    float* out = static_cast<float*>(run.outputs[0].data);
    if (has_buf ? skip_step(run, 4, {{0, 0}, {1, 3}}) : skip_step(run, 4, {{0, 0}})) return Status::ok();
    const float* b = has_buf ? static_cast<const float*>(run.inputs[3].data) : nullptr;
    float* nb = has_buf ? static_cast<float*>(run.outputs[1].data) : nullptr;
    for_chunks(n, kParallelUpdate, [&](int64_t lo, int64_t hi) {
      if (has_buf) sgd_momentum_range(p + lo, g + lo, b + lo, out + lo, nb + lo, hi - lo, lr, wd, gs, momentum, nesterov);
      else sgd_range(p + lo, g + lo, out + lo, hi - lo, lr, wd, gs);
    });
    return Status::ok();
  });
}

Expected<KernelPtr> make_adam(const KernelInit& init) {
  const std::string impl = "cpu.vec:adam";
  if (!plain_static(init) || init.in_types.size() < 6 || !same_f32_shape(init, 0, 1) || !same_f32_shape(init, 0, 4) ||
      !same_f32_shape(init, 0, 5) || !scalar_f32_input(init, 6) || !scalar_f32_input(init, 2) || !scalar_f32_input(init, 3))
    return decline(init, impl, "needs plain static f32 (lr and step f32 scalars: an i64 step is read by the reference kernel)");
  auto f = [&](const char* k, double d) { return init.node.attr(k) ? init.node.attr(k)->f() : d; };
  const double b1 = f("beta1", 0.9), b2 = f("beta2", 0.999), eps = f("epsilon", 1e-8), wd = f("weight_decay", 0.0),
               gs = f("grad_scale", 1.0);
  const bool decoupled = init.node.attr("decoupled") && init.node.attr("decoupled")->i() != 0;
  const int64_t n = init.in_types[0]->static_numel();
  return make(impl, init, [=](KernelRun& run) -> Status {
    const double lr = scalar_f32(run.inputs[2]), step = scalar_f32(run.inputs[3]);
    if (skip_step(run, 6, {{0, 0}, {1, 4}, {2, 5}})) return Status::ok();
    if (step < 1) return make_error("AdamUpdate: step must be >= 1, got " + std::to_string(step));
    const double c1 = 1.0 - std::pow(b1, step), c2 = 1.0 - std::pow(b2, step);
    AdamConstants k;
    k.b1 = static_cast<float>(b1);
    k.b2 = static_cast<float>(b2);
    k.one_minus_b1 = static_cast<float>(1.0 - b1);
    k.one_minus_b2 = static_cast<float>(1.0 - b2);
    k.eps = static_cast<float>(eps);
    k.wd = static_cast<float>(wd);
    k.decay = static_cast<float>(1.0 - lr * wd);
    k.step_size = static_cast<float>(lr / c1);
    k.sqrt_c2 = static_cast<float>(std::sqrt(c2));
    k.grad_scale = static_cast<float>(gs);
    k.decoupled = decoupled;
    const float *p = static_cast<const float*>(run.inputs[0].data), *g = static_cast<const float*>(run.inputs[1].data),
                *m = static_cast<const float*>(run.inputs[4].data), *v = static_cast<const float*>(run.inputs[5].data);
    float *po = static_cast<float*>(run.outputs[0].data), *mo = static_cast<float*>(run.outputs[1].data),
          *vo = static_cast<float*>(run.outputs[2].data);
    for_chunks(n, kParallelUpdate, [&](int64_t lo, int64_t hi) {
      adam_range(p + lo, g + lo, m + lo, v + lo, po + lo, mo + lo, vo + lo, hi - lo, k);
    });
    return Status::ok();
  });
}

// Greater / Less of f32 against a one-element f32 (the masks of Relu-like gradients: Y > 0).
Expected<KernelPtr> make_compare_scalar(const KernelInit& init, bool greater) {
  const std::string impl = greater ? "cpu.vec:greater" : "cpu.vec:less";
  if (!plain_static(init) || init.in_types.size() != 2 || init.in_types[0]->dtype != DType::kF32 ||
      init.in_types[1]->dtype != DType::kF32 || init.in_types[1]->static_numel() != 1 ||
      init.in_types[0]->static_shape() != init.out_types[0]->static_shape())
    return decline(init, impl, "needs f32 compared with a one-element f32");
  const int64_t n = init.in_types[0]->static_numel();
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    const float y = *static_cast<const float*>(run.inputs[1].data);
    auto* out = static_cast<uint8_t*>(run.outputs[0].data);
    if (greater)
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] > y;
    else
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] < y;
    return Status::ok();
  });
}

// MaxPoolGrad over plain NCHW f32 without pads or dilations: each window's dY goes to the first
// maximum of X in it (PyTorch's and oneDNN's rule), windows in row-major order. One pass over X
// per window instead of oneDNN's forward-with-workspace plus backward on plain layouts.
// One row of 2x2 windows (stride 2): the gradient goes to the first maximum of each window in
// row-major order (as the forward's argmax and the general path), zeros to the other three. The
// argmax of real activations defeats branch prediction, so it is computed branch-free, 8 windows
// at a time with AVX2 where the CPU has it (GCC does not vectorise the interleaved form).
void maxpool2x2_grad_row_scalar(const float* x0, const float* x1, const float* g, float* d0, float* d1, int64_t j,
                                int64_t ow) {
  for (; j < ow; ++j) {
    const float a = x0[2 * j], b = x0[2 * j + 1], c = x1[2 * j], d = x1[2 * j + 1], gv = g[j];
    int best = 0;
    float bv = a;
    if (b > bv) bv = b, best = 1;
    if (c > bv) bv = c, best = 2;
    if (d > bv) best = 3;
    d0[2 * j] = best == 0 ? gv : 0.f;
    d0[2 * j + 1] = best == 1 ? gv : 0.f;
    d1[2 * j] = best == 2 ? gv : 0.f;
    d1[2 * j + 1] = best == 3 ? gv : 0.f;
  }
}

// Even and odd columns of 16 floats, in order: [0 2 4 .. 14] and [1 3 .. 15].
__attribute__((target("avx2"))) inline void split_even_odd(const float* p, __m256& even, __m256& odd) {
  const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}

// The inverse: even and odd interleaved back into 16 floats.
__attribute__((target("avx2"))) inline void join_even_odd(float* p, __m256 even, __m256 odd) {
  const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
  _mm256_storeu_ps(p, _mm256_permute2f128_ps(lo, hi, 0x20));
  _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

// 8 windows: x0/x1 the two rows (16 floats each), g their 8 gradients, d0/d1 where dx goes.
__attribute__((target("avx2"))) inline void maxpool2x2_grad_8(const float* x0, const float* x1, const float* g, float* d0,
                                                              float* d1) {
  __m256 a, b, c, d;
  split_even_odd(x0, a, b);
  split_even_odd(x1, c, d);
  const __m256 gv = _mm256_loadu_ps(g);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(a, b), _mm256_max_ps(c, d));
  const __m256 ea = _mm256_cmp_ps(a, m, _CMP_EQ_OQ);
  const __m256 eb = _mm256_andnot_ps(ea, _mm256_cmp_ps(b, m, _CMP_EQ_OQ));
  const __m256 eab = _mm256_or_ps(ea, eb);
  const __m256 ec = _mm256_andnot_ps(eab, _mm256_cmp_ps(c, m, _CMP_EQ_OQ));
  const __m256 ed = _mm256_andnot_ps(_mm256_or_ps(eab, ec), _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
  join_even_odd(d0, _mm256_and_ps(ea, gv), _mm256_and_ps(eb, gv));
  join_even_odd(d1, _mm256_and_ps(ec, gv), _mm256_and_ps(ed, gv));
}

__attribute__((target("avx2"))) void maxpool2x2_grad_row_avx2(const float* x0, const float* x1, const float* g,
                                                              float* d0, float* d1, int64_t ow) {
  int64_t j = 0;
  for (; j + 8 <= ow; j += 8) maxpool2x2_grad_8(x0 + 2 * j, x1 + 2 * j, g + j, d0 + 2 * j, d1 + 2 * j);
  if (j < ow) {  // the last windows through the same code, on copies padded to 8 windows
    const size_t rem = static_cast<size_t>(ow - j);
    alignas(32) float t0[16] = {}, t1[16] = {}, tg[8] = {}, o0[16], o1[16];
    std::memcpy(t0, x0 + 2 * j, 2 * rem * sizeof(float));
    std::memcpy(t1, x1 + 2 * j, 2 * rem * sizeof(float));
    std::memcpy(tg, g + j, rem * sizeof(float));
    maxpool2x2_grad_8(t0, t1, tg, o0, o1);
    std::memcpy(d0 + 2 * j, o0, 2 * rem * sizeof(float));
    std::memcpy(d1 + 2 * j, o1, 2 * rem * sizeof(float));
  }
}

void maxpool2x2_grad_row(const float* x0, const float* x1, const float* g, float* d0, float* d1, int64_t ow) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) maxpool2x2_grad_row_avx2(x0, x1, g, d0, d1, ow);
  else maxpool2x2_grad_row_scalar(x0, x1, g, d0, d1, 0, ow);
}

// MaxPool forward for 2x2 windows with stride 2 on plain NCHW f32 (LeNet's and VGG's pools when
// their input is plain, as LeNet's 6-channel maps are): oneDNN 2.6's plain pooling took 121 us
// for LeNet's pool1 at batch 64, this about 20. 8 windows at a time with AVX2.
__attribute__((target("avx2"))) void maxpool2x2_row_avx2(const float* x0, const float* x1, float* y, int64_t ow) {
  int64_t j = 0;
  for (; j + 8 <= ow; j += 8) {
    __m256 a, b, c, d;
    split_even_odd(x0 + 2 * j, a, b);
    split_even_odd(x1 + 2 * j, c, d);
    _mm256_storeu_ps(y + j, _mm256_max_ps(_mm256_max_ps(a, b), _mm256_max_ps(c, d)));
  }
  for (; j < ow; ++j)
    y[j] = std::max(std::max(x0[2 * j], x0[2 * j + 1]), std::max(x1[2 * j], x1[2 * j + 1]));
}

Expected<KernelPtr> make_maxpool2x2(const KernelInit& init) {
  const std::string impl = "cpu.vec:maxpool2x2";
  if (!__builtin_cpu_supports("avx2")) return pass_to_next("needs AVX2");
  if (!plain_static(init) || init.in_types.size() != 1 || init.out_types.size() != 1 ||
      init.in_types[0]->dtype != DType::kF32 || init.in_types[0]->rank() != 4)
    return pass_to_next("needs plain static 2-D f32 and one output");
  using Ints = std::vector<int64_t>;
  if (attr_ints(init, "kernel_shape", {}) != Ints{2, 2} || attr_ints(init, "strides", {1, 1}) != Ints{2, 2} ||
      attr_ints(init, "pads", {0, 0, 0, 0}) != Ints{0, 0, 0, 0} || attr_ints(init, "dilations", {1, 1}) != Ints{1, 1} ||
      attr_string(init, "auto_pad", "NOTSET") != "NOTSET")
    return pass_to_next("2x2 windows with stride 2 only");
  const Shape x = init.in_types[0]->static_shape(), y = init.out_types[0]->static_shape();
  if (y.size() != 4 || y[2] != x[2] / 2 || y[3] != x[3] / 2) return pass_to_next("ceil_mode");
  return make(impl, init, [x, y](KernelRun& run) -> Status {
    const float* xp = static_cast<const float*>(run.inputs[0].data);
    float* yp = static_cast<float*>(run.outputs[0].data);
    const int64_t planes = x[0] * x[1], ih = x[2], iw = x[3], oh = y[2], ow = y[3];
#pragma omp parallel for if (planes * ih * iw > (1 << 15)) schedule(static)
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t i = 0; i < oh; ++i) {
        const float* x0 = xp + (pl * ih + 2 * i) * iw;
        maxpool2x2_row_avx2(x0, x0 + iw, yp + (pl * oh + i) * ow, ow);
      }
    // _mm256_max_ps gives its second operand where either is NaN: a window holding NaN is NaN.
    if (has_nan(xp, static_cast<size_t>(planes * ih * iw)))
      for (int64_t pl = 0; pl < planes; ++pl)
        for (int64_t h = 0; h < 2 * oh; ++h)
          for (int64_t w = 0; w < 2 * ow; ++w)
            if (std::isnan(xp[(pl * ih + h) * iw + w])) yp[(pl * oh + h / 2) * ow + w / 2] = __builtin_nanf("");
    return Status::ok();
  });
}

Expected<KernelPtr> make_maxpool_grad(const KernelInit& init) {
  const std::string impl = "cpu.vec:maxpool_grad";
  if (!plain_static(init) || init.in_types.size() != 2 || init.in_types[0]->dtype != DType::kF32 ||
      init.in_types[1]->dtype != DType::kF32 || init.in_types[1]->rank() != 4)
    return decline(init, impl, "needs plain static 2-D f32");
  auto ints = [&](const char* k, std::vector<int64_t> d) {
    const ir::Attribute* a = init.node.attr(k);
    return a ? a->ints() : d;
  };
  const std::vector<int64_t> k = ints("kernel_shape", {}), st = ints("strides", {1, 1}),
                             pads = ints("pads", {0, 0, 0, 0}), dil = ints("dilations", {1, 1});
  if (k.size() != 2 || st.size() != 2) return decline(init, impl, "2-D windows only");
  for (int64_t p : pads)
    if (p != 0) return decline(init, impl, "pads");
  for (int64_t d : dil)
    if (d != 1) return decline(init, impl, "dilations");
  const Shape x = init.in_types[1]->static_shape(), y = init.in_types[0]->static_shape();
  if (y.size() != 4 || y[0] != x[0] || y[1] != x[1]) return decline(init, impl, "shapes");
  for (int d = 0; d < 2; ++d)
    if ((y[2 + d] - 1) * st[d] + k[d] > x[2 + d]) return decline(init, impl, "window runs past the input (ceil_mode)");
  // Windows that tile the input (kernel == stride, LeNet's and VGG's 2x2 pools): every input element
  // is in at most one window, so each window writes its gradient and zeros in one pass, without a
  // memset of dx and a scatter; 2x2 is unrolled. Overlapping windows accumulate into a zeroed dx.
  const bool tiles = k[0] == st[0] && k[1] == st[1];
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* dy = static_cast<const float*>(run.inputs[0].data);
    const float* xp = static_cast<const float*>(run.inputs[1].data);
    float* dx = static_cast<float*>(run.outputs[0].data);
    const int64_t planes = x[0] * x[1], ih = x[2], iw = x[3], oh = y[2], ow = y[3];
    if (tiles) {
      const int64_t kh = k[0], kw = k[1];
#pragma omp parallel for if (planes * ih * iw > (1 << 15)) schedule(static)
      for (int64_t pl = 0; pl < planes; ++pl) {
        const float* xs = xp + pl * ih * iw;
        float* ds = dx + pl * ih * iw;
        const float* g = dy + pl * oh * ow;
        for (int64_t i = 0; i < oh; ++i) {
          const float* x0 = xs + i * kh * iw;
          float* d0 = ds + i * kh * iw;
          if (kh == 2 && kw == 2) {
            maxpool2x2_grad_row(x0, x0 + iw, g + i * ow, d0, d0 + iw, ow);
          } else {
            for (int64_t j = 0; j < ow; ++j) {
              int64_t best = j * kw;
              float bv = x0[best];
              for (int64_t a = 0; a < kh; ++a)
                for (int64_t b = 0; b < kw; ++b) {
                  const int64_t at = a * iw + j * kw + b;
                  d0[at] = 0.f;
                  if (x0[at] > bv) bv = x0[at], best = at;
                }
              d0[best] = g[i * ow + j];
            }
          }
          // Columns past the last window get no gradient.
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t c = ow * kw; c < iw; ++c) d0[a * iw + c] = 0.f;
        }
        // Rows past the last window neither.
        for (int64_t r = oh * kh; r < ih; ++r)
          for (int64_t c = 0; c < iw; ++c) ds[r * iw + c] = 0.f;
      }
      return Status::ok();
    }
    std::memset(dx, 0, static_cast<size_t>(planes * ih * iw) * sizeof(float));
#pragma omp parallel for if (planes * ih * iw > (1 << 15)) schedule(static)
    for (int64_t pl = 0; pl < planes; ++pl) {
      const float* xs = xp + pl * ih * iw;
      float* ds = dx + pl * ih * iw;
      const float* g = dy + pl * oh * ow;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t best = i * st[0] * iw + j * st[1];
          float bv = xs[best];
          for (int64_t a = 0; a < k[0]; ++a)
            for (int64_t b = 0; b < k[1]; ++b) {
              const int64_t at = (i * st[0] + a) * iw + j * st[1] + b;
              if (xs[at] > bv) bv = xs[at], best = at;
            }
          ds[best] += g[i * ow + j];
        }
    }
    return Status::ok();
  });
}

// ScatterND over rows, reduction "add" (the gradient of an embedding Gather: dY's rows added into
// zeros at their token's row): data f32 [R, S...], indices i64 [I..., 1], updates f32 [I..., S...].
// Sums in double in the order of the updates, then rounded once, as the reference kernel does, so
// the result is the same to the bit; 645 us -> about 100 us for the character LM's embedding.
Expected<KernelPtr> make_scatter_rows_add(const KernelInit& init) {
  const std::string impl = "cpu.vec:scatter_rows_add";
  const ir::Attribute* red = init.node.attr("reduction");
  if (!red || red->s() != "add") return decline(init, impl, "reduction add only");
  if (!plain_static(init) || init.in_types.size() != 3 || init.in_types[0]->dtype != DType::kF32 ||
      init.in_types[1]->dtype != DType::kI64 || init.in_types[2]->dtype != DType::kF32)
    return decline(init, impl, "needs plain static f32 data and updates, i64 indices");
  const Shape d = init.in_types[0]->static_shape(), idx = init.in_types[1]->static_shape();
  if (d.empty() || idx.empty() || idx.back() != 1) return decline(init, impl, "row indices ([..., 1]) only");
  const int64_t rows = d[0], slice = init.in_types[0]->static_numel() / std::max<int64_t>(1, d[0]);
  const int64_t tuples = init.in_types[1]->static_numel();
  if (init.in_types[2]->static_numel() != tuples * slice) return decline(init, impl, "updates shape");
  const std::string name = init.node.name;
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* data = static_cast<const float*>(run.inputs[0].data);
    const int64_t* ix = static_cast<const int64_t*>(run.inputs[1].data);
    const float* upd = static_cast<const float*>(run.inputs[2].data);
    float* out = static_cast<float*>(run.outputs[0].data);
    std::vector<double> acc(static_cast<size_t>(rows * slice));
    for (int64_t k = 0; k < rows * slice; ++k) acc[static_cast<size_t>(k)] = data[k];
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t r = ix[t];
      if (r < -rows || r >= rows)
        return make_error("ScatterND '" + name + "': index " + std::to_string(r) + " is out of range for axis 0 of size " +
                          std::to_string(rows));
      if (r < 0) r += rows;
      double* a = acc.data() + r * slice;
      const float* u = upd + t * slice;
      for (int64_t e = 0; e < slice; ++e) a[e] += u[e];
    }
    for (int64_t k = 0; k < rows * slice; ++k) out[k] = static_cast<float>(acc[static_cast<size_t>(k)]);
    return Status::ok();
  });
}

}  // namespace

void register_vec_train(KernelRegistry& registry) {
  registry.add("ScatterND", "cpu.vec:scatter_rows_add", kVecPriority, make_scatter_rows_add);
  // Above oneDNN's, which recomputes the forward pass for its workspace on plain layouts.
  registry.add("MaxPoolGrad", "cpu.vec:maxpool_grad", kOneDnnPriority + 10, make_maxpool_grad);
  registry.add("MaxPool", "cpu.vec:maxpool2x2", kOneDnnPriority + 10, make_maxpool2x2);
  registry.add("Greater", "cpu.vec:greater", kVecPriority, [](const KernelInit& i) { return make_compare_scalar(i, true); });
  registry.add("Less", "cpu.vec:less", kVecPriority, [](const KernelInit& i) { return make_compare_scalar(i, false); });
  // Above oneDNN's reduction, which is its reference implementation for these shapes.
  registry.add("ReduceSum", "cpu.vec:reduce_sum", kOneDnnPriority + 10, [](const KernelInit& i) { return make_reduce(i, false); });
  registry.add("ReduceMean", "cpu.vec:reduce_mean", kOneDnnPriority + 10, [](const KernelInit& i) { return make_reduce(i, true); });
  registry.add("SGDUpdate", "cpu.vec:sgd", kVecPriority, make_sgd);
  registry.add("ReluGrad", "cpu.vec:relu_grad", kVecPriority, make_relu_grad);
  registry.add("Sum", "cpu.vec:sum", kVecPriority, make_sum);
  registry.add("SoftmaxCrossEntropyLoss", "cpu.vec:softmax_cross_entropy", kVecPriority, make_softmax_ce);
  registry.add("SoftmaxCrossEntropyLossGrad", "cpu.vec:softmax_cross_entropy_grad", kVecPriority, make_softmax_ce_grad);
  registry.add("AdamUpdate", "cpu.vec:adam", kVecPriority, make_adam);
}

}  // namespace tessera::cpu
