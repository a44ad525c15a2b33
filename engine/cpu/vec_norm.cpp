// Vectorised normalisation kernels of the training step: BatchNormalization in training mode and
// its gradient (with SyncBatchNorm's all-reduced moments under data parallel), and
// LayerNormalizationGrad. Split from vec_train.cpp, which keeps the optimizer, loss, reduction and
// pooling kernels.
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/cpu/vec_internal.h"
#include "engine/dist/communicator.h"

namespace tessera::cpu {
namespace {

// ---- BatchNormalization in training mode, forward and backward, plain [N, C, ...] f32 ----------
// Per channel: the N runs of `inner` contiguous values. Sums run in 16 float lanes per run and
// are added in double across runs; channels are split over the team (each channel's order of
// additions is fixed, so the result does not depend on the thread count).

TESSERA_VEC_CLONES float run_sum(const float* p, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) acc[k] += p[i + k];
  float s = 0;
  for (int k = 0; k < 16; ++k) s += acc[k];
  for (; i < n; ++i) s += p[i];
  return s;
}

// sum((x - m)^2) and, when dy is given, sum(dy) and sum(dy * (x - m)) over one run.
TESSERA_VEC_CLONES void run_moments(const float* x, const float* dy, int64_t n, float m, float out[3]) {
  float a[16] = {}, b[16] = {}, c[16] = {};
  int64_t i = 0;
  if (dy) {
    for (; i + 16 <= n; i += 16)
      for (int k = 0; k < 16; ++k) {
        const float d = x[i + k] - m;
        a[k] += d * d;
        b[k] += dy[i + k];
        c[k] += dy[i + k] * d;
      }
  } else {
    for (; i + 16 <= n; i += 16)
      for (int k = 0; k < 16; ++k) {
        const float d = x[i + k] - m;
        a[k] += d * d;
      }
  }
  float sa = 0, sb = 0, sc = 0;
  for (int k = 0; k < 16; ++k) sa += a[k], sb += b[k], sc += c[k];
  for (; i < n; ++i) {
    const float d = x[i] - m;
    sa += d * d;
    if (dy) sb += dy[i], sc += dy[i] * d;
  }
  out[0] = sa, out[1] = sb, out[2] = sc;
}

TESSERA_VEC_CLONES void run_affine(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// dx = k * (dy - sdy_m - (x - m) * t)
TESSERA_VEC_CLONES void run_bn_dx(const float* x, const float* dy, float* dx, int64_t n, float m, float k, float sdy_m, float t) {
  for (int64_t i = 0; i < n; ++i) dx[i] = k * (dy[i] - sdy_m - (x[i] - m) * t);
}

struct ChannelShape {
  int64_t n = 0, c = 0, inner = 0;
};

bool channel_shape(const ir::TensorType& t, ChannelShape& s) {
  if (t.rank() < 2) return false;
  const Shape x = t.static_shape();
  s.n = x[0];
  s.c = x[1];
  s.inner = 1;
  for (size_t d = 2; d < x.size(); ++d) s.inner *= x[d];
  return s.n * s.c * s.inner > 0;
}

// Batch mean and population variance of channel ch (double accumulation across the N runs).
void channel_moments(const float* x, const float* dy, const ChannelShape& s, int64_t ch, double& mean, double& var,
                     double& sdy, double& sdyxc) {
  double sum = 0;
  for (int64_t i = 0; i < s.n; ++i) sum += run_sum(x + (i * s.c + ch) * s.inner, s.inner);
  const double count = static_cast<double>(s.n * s.inner);
  mean = sum / count;
  double sq = 0;
  sdy = sdyxc = 0;
  for (int64_t i = 0; i < s.n; ++i) {
    float r[3];
    const int64_t at = (i * s.c + ch) * s.inner;
    run_moments(x + at, dy ? dy + at : nullptr, s.inner, static_cast<float>(mean), r);
    sq += r[0], sdy += r[1], sdyxc += r[2];
  }
  var = sq / count;
}

// SyncBatchNorm (sync_ranks > 1, data parallel): the moments of every rank's rows. Per channel
// this rank's sum is all-reduced with its row count (blocking, from the step's thread: every rank
// runs its batch norms in the same order, each collective on its own), giving the mean; then the
// squared deviations from it (and, for the gradient, the sums of dY and dY (X - mean)), giving the
// variance. The all-reduced sums are f32 (added in double within the rank). The gradient keeps
// this rank's own sums for dScale and dB: the split stage's all-reduce adds the ranks' up.
struct SyncedMoments {
  std::vector<double> mean, var, sdy, sdyxc, local_sdy, local_sdyxc;
  double count = 0;
};

Status synced_moments(const float* x, const float* dy, const ChannelShape& s, int64_t ranks, SyncedMoments& m) {
  dist::Communicator* comm = dist::current();
  RETURN_IF_ERROR(dist::check_world_size(ranks, comm));
  const int64_t c = s.c;
  std::vector<float> sums(static_cast<size_t>(c) + 1);
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > (1 << 14))
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0;
    for (int64_t i = 0; i < s.n; ++i) sum += run_sum(x + (i * s.c + ch) * s.inner, s.inner);
    sums[static_cast<size_t>(ch)] = static_cast<float>(sum);
  }
  sums[static_cast<size_t>(c)] = static_cast<float>(s.n * s.inner);
  RETURN_IF_ERROR(comm->allreduce_sum(sums.data(), c + 1));
  m.count = sums[static_cast<size_t>(c)];
  m.mean.resize(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) m.mean[static_cast<size_t>(ch)] = sums[static_cast<size_t>(ch)] / m.count;
  const int64_t parts = dy ? 3 : 1;
  std::vector<float> moments(static_cast<size_t>(parts * c));
  m.local_sdy.assign(static_cast<size_t>(c), 0.0);
  m.local_sdyxc.assign(static_cast<size_t>(c), 0.0);
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > (1 << 14))
  for (int64_t ch = 0; ch < c; ++ch) {
    double sq = 0, sdy = 0, sdyxc = 0;
    for (int64_t i = 0; i < s.n; ++i) {
      float r[3];
      const int64_t at = (i * s.c + ch) * s.inner;
      run_moments(x + at, dy ? dy + at : nullptr, s.inner, static_cast<float>(m.mean[static_cast<size_t>(ch)]), r);
      sq += r[0], sdy += r[1], sdyxc += r[2];
    }
    moments[static_cast<size_t>(ch)] = static_cast<float>(sq);
    if (dy) {
      moments[static_cast<size_t>(c + ch)] = static_cast<float>(sdy);
      moments[static_cast<size_t>(2 * c + ch)] = static_cast<float>(sdyxc);
      m.local_sdy[static_cast<size_t>(ch)] = sdy;
      m.local_sdyxc[static_cast<size_t>(ch)] = sdyxc;
    }
  }
  RETURN_IF_ERROR(comm->allreduce_sum(moments.data(), parts * c));
  m.var.resize(static_cast<size_t>(c));
  m.sdy.assign(static_cast<size_t>(c), 0.0);
  m.sdyxc.assign(static_cast<size_t>(c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    m.var[static_cast<size_t>(ch)] = moments[static_cast<size_t>(ch)] / m.count;
    if (dy) {
      m.sdy[static_cast<size_t>(ch)] = moments[static_cast<size_t>(c + ch)];
      m.sdyxc[static_cast<size_t>(ch)] = moments[static_cast<size_t>(2 * c + ch)];
    }
  }
  return Status::ok();
}

int64_t sync_ranks(const KernelInit& init) {
  const ir::Attribute* a = init.node.attr("sync_ranks");
  return a ? a->i() : 0;
}

Expected<KernelPtr> make_batchnorm_training(const KernelInit& init) {
  const std::string impl = "cpu.vec:batchnorm_training";
  const ir::Attribute* tm = init.node.attr("training_mode");
  if (!tm || tm->i() == 0) return decline(init, impl, "inference (oneDNN's)");
  ChannelShape s;
  if (!plain_static(init) || init.in_types.size() != 5 || init.in_types[0]->dtype != DType::kF32 ||
      !channel_shape(*init.in_types[0], s))
    return decline(init, impl, "needs plain static f32 [N, C, ...]");
  for (size_t i = 1; i < 5; ++i)
    if (init.in_types[i]->dtype != DType::kF32 || init.in_types[i]->static_shape() != Shape{s.c})
      return decline(init, impl, "needs f32 [C] statistics");
  const double eps = init.node.attr("epsilon") ? init.node.attr("epsilon")->f() : 1e-5;
  const double momentum = init.node.attr("momentum") ? init.node.attr("momentum")->f() : 0.9;
  const size_t nout = init.out_types.size();
  const int64_t ranks = sync_ranks(init);
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* x = static_cast<const float*>(run.inputs[0].data);
    const float* scale = static_cast<const float*>(run.inputs[1].data);
    const float* bias = static_cast<const float*>(run.inputs[2].data);
    const float* rm = static_cast<const float*>(run.inputs[3].data);
    const float* rv = static_cast<const float*>(run.inputs[4].data);
    float* y = static_cast<float*>(run.outputs[0].data);
    float* nrm = nout > 1 ? static_cast<float*>(run.outputs[1].data) : nullptr;
    float* nrv = nout > 2 ? static_cast<float*>(run.outputs[2].data) : nullptr;
    SyncedMoments synced;
    if (ranks > 1) RETURN_IF_ERROR(synced_moments(x, nullptr, s, ranks, synced));
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > (1 << 14))
    for (int64_t ch = 0; ch < s.c; ++ch) {
      double mean, var, unused1, unused2;
      if (ranks > 1) mean = synced.mean[static_cast<size_t>(ch)], var = synced.var[static_cast<size_t>(ch)];
      else channel_moments(x, nullptr, s, ch, mean, var, unused1, unused2);
      const double a = scale[ch] / std::sqrt(var + eps), b = bias[ch] - mean * a;
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t at = (i * s.c + ch) * s.inner;
        run_affine(x + at, y + at, s.inner, static_cast<float>(a), static_cast<float>(b));
      }
      // Outputs may be written over the running statistics (read first, per channel).
      if (nrm) nrm[ch] = static_cast<float>(rm[ch] * momentum + mean * (1.0 - momentum));
      if (nrv) nrv[ch] = static_cast<float>(rv[ch] * momentum + var * (1.0 - momentum));
    }
    return Status::ok();
  });
}

Expected<KernelPtr> make_batchnorm_grad(const KernelInit& init) {
  const std::string impl = "cpu.vec:batchnorm_grad";
  ChannelShape s;
  if (!plain_static(init) || !same_f32_shape(init, 0, 1) || !channel_shape(*init.in_types[1], s) ||
      init.in_types[2]->dtype != DType::kF32 || init.in_types[2]->static_shape() != Shape{s.c})
    return decline(init, impl, "needs plain static f32 [N, C, ...] and scale [C]");
  const double eps = init.node.attr("epsilon") ? init.node.attr("epsilon")->f() : 1e-5;
  const int64_t ranks = sync_ranks(init);
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* dy = static_cast<const float*>(run.inputs[0].data);
    const float* x = static_cast<const float*>(run.inputs[1].data);
    const float* scale = static_cast<const float*>(run.inputs[2].data);
    float* dx = static_cast<float*>(run.outputs[0].data);
    float* dscale = static_cast<float*>(run.outputs[1].data);
    float* dbias = static_cast<float*>(run.outputs[2].data);
    SyncedMoments synced;
    if (ranks > 1) RETURN_IF_ERROR(synced_moments(x, dy, s, ranks, synced));
    const double count = ranks > 1 ? synced.count : static_cast<double>(s.n * s.inner);
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > (1 << 14))
    for (int64_t ch = 0; ch < s.c; ++ch) {
      double mean, var, sdy, sdyxc;
      if (ranks > 1) {
        const size_t k = static_cast<size_t>(ch);
        mean = synced.mean[k], var = synced.var[k], sdy = synced.sdy[k], sdyxc = synced.sdyxc[k];
      } else {
        channel_moments(x, dy, s, ch, mean, var, sdy, sdyxc);
      }
      const double inv = 1.0 / std::sqrt(var + eps);
      // dScale and dB from this rank's rows (the gradient all-reduce sums the ranks'); dX from all.
      dbias[ch] = static_cast<float>(ranks > 1 ? synced.local_sdy[static_cast<size_t>(ch)] : sdy);
      dscale[ch] = static_cast<float>((ranks > 1 ? synced.local_sdyxc[static_cast<size_t>(ch)] : sdyxc) * inv);
      const float k = static_cast<float>(scale[ch] * inv), sdy_m = static_cast<float>(sdy / count),
                  t = static_cast<float>(inv * inv * sdyxc / count);
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t at = (i * s.c + ch) * s.inner;
        run_bn_dx(x + at, dy + at, dx + at, s.inner, static_cast<float>(mean), k, sdy_m, t);
      }
    }
    return Status::ok();
  });
}

// ---- LayerNormalizationGrad: rows of the normalised dims, plain f32 -----------------------------

// Sums in 16 lanes (the compiler does not reorder float additions by itself).
#define TESSERA_LANE_SUM(expr, out)                                   \
  do {                                                                \
    float lanes_[16] = {};                                            \
    int64_t k = 0;                                                    \
    for (; k + 16 <= len; k += 16)                                    \
      for (int j_ = 0; j_ < 16; ++j_) {                               \
        const int64_t i = k + j_;                                     \
        lanes_[j_] += (expr);                                         \
      }                                                               \
    float s_ = 0;                                                     \
    for (int j_ = 0; j_ < 16; ++j_) s_ += lanes_[j_];                 \
    for (int64_t i = k; i < len; ++i) s_ += (expr);                   \
    out = s_;                                                         \
  } while (0)

TESSERA_VEC_CLONES void layernorm_grad_row(const float* dy, const float* x, const float* scale, float* dx, float* dscale,
                                           float* dbias, int64_t len, float eps) {
  float sum, sq, mg, mgx;
  TESSERA_LANE_SUM(x[i], sum);
  const float mean = sum / static_cast<float>(len);
  TESSERA_LANE_SUM((x[i] - mean) * (x[i] - mean), sq);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(len) + eps);
  TESSERA_LANE_SUM(dy[i] * scale[i], mg);
  TESSERA_LANE_SUM(dy[i] * scale[i] * (x[i] - mean) * inv, mgx);
  mg /= static_cast<float>(len);
  mgx /= static_cast<float>(len);
  for (int64_t k = 0; k < len; ++k) {
    const float xhat = (x[k] - mean) * inv;
    dscale[k] += dy[k] * xhat;
    dbias[k] += dy[k];
    dx[k] = inv * (dy[k] * scale[k] - mg - xhat * mgx);
  }
}

Expected<KernelPtr> make_layernorm_grad(const KernelInit& init) {
  const std::string impl = "cpu.vec:layernorm_grad";
  if (!plain_static(init) || !same_f32_shape(init, 0, 1) || init.in_types[2]->dtype != DType::kF32)
    return decline(init, impl, "needs plain static f32");
  const Shape x = init.in_types[1]->static_shape();
  int64_t axis = init.node.attr("axis") ? init.node.attr("axis")->i() : -1;
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  if (axis < 0 || axis >= static_cast<int64_t>(x.size()) || Shape(x.begin() + axis, x.end()) != init.in_types[2]->static_shape())
    return decline(init, impl, "Scale must have the normalised dims");
  int64_t rows = 1, len = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) (d < axis ? rows : len) *= x[static_cast<size_t>(d)];
  const float eps = static_cast<float>(init.node.attr("epsilon") ? init.node.attr("epsilon")->f() : 1e-5);
  return make(impl, init, [=](KernelRun& run) -> Status {
    const float* dy = static_cast<const float*>(run.inputs[0].data);
    const float* xp = static_cast<const float*>(run.inputs[1].data);
    const float* scale = static_cast<const float*>(run.inputs[2].data);
    float* dx = static_cast<float*>(run.outputs[0].data);
    float* dscale = static_cast<float*>(run.outputs[1].data);
    float* dbias = static_cast<float*>(run.outputs[2].data);
    // Rows in one chunk per thread, each with its own dScale and dB partial sums, added in chunk
    // order (the same order for a given thread count).
    const int64_t threads = rows * len > kParallelUpdate ? std::max(1, omp_get_max_threads()) : 1;
    std::vector<float> partial(static_cast<size_t>(2 * threads * len), 0.f);
    const int64_t per = (rows + threads - 1) / threads;
#pragma omp parallel for schedule(static) if (threads > 1)
    for (int64_t t = 0; t < threads; ++t) {
      float* ps = partial.data() + 2 * t * len;
      for (int64_t r = t * per; r < std::min(rows, (t + 1) * per); ++r)
        layernorm_grad_row(dy + r * len, xp + r * len, scale, dx + r * len, ps, ps + len, len, eps);
    }
    for (int64_t k = 0; k < len; ++k) {
      float a = 0, b = 0;
      for (int64_t t = 0; t < threads; ++t) a += partial[static_cast<size_t>(2 * t * len + k)], b += partial[static_cast<size_t>((2 * t + 1) * len + k)];
      dscale[k] = a;
      dbias[k] = b;
    }
    return Status::ok();
  });
}

}  // namespace

void register_vec_norm(KernelRegistry& registry) {
  // Training mode only, which oneDNN's (inference) declines.
  registry.add("BatchNormalization", "cpu.vec:batchnorm_training", kVecPriority, make_batchnorm_training);
  registry.add("BatchNormalizationGrad", "cpu.vec:batchnorm_grad", kVecPriority, make_batchnorm_grad);
  registry.add("LayerNormalizationGrad", "cpu.vec:layernorm_grad", kVecPriority, make_layernorm_grad);
}

}  // namespace tessera::cpu
