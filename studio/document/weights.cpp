// Initial weights: zeros or PyTorch's default uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
#include "studio/document/weights.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tessera::studio {

Expected<Tensor> make_weight(const Shape& shape, WeightInit init, int64_t fan_in, uint64_t seed) {
  TRY(Tensor t, Tensor::create(DType::kF32, shape));
  if (init == WeightInit::kZeros) return t;
  if (fan_in < 1) return make_error("fan_in must be at least 1, got " + std::to_string(fan_in));
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  std::mt19937_64 rng(seed);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    // (rng() >> 11) * 2^-53 is uniform in [0, 1); std::uniform_real_distribution is not the same
    // on every standard library.
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    p[i] = static_cast<float>((2.0 * u - 1.0) * bound);
  }
  return t;
}

int64_t fan_in_of(const Shape& weight_shape) {
  if (weight_shape.empty()) return 1;
  if (weight_shape.size() == 1) return weight_shape[0];
  int64_t fan_in = weight_shape[1];
  for (size_t i = 2; i < weight_shape.size(); ++i) fan_in *= weight_shape[i];
  return fan_in;
}

namespace {

// The dims of an input of `n` when all of them are known.
std::optional<Shape> known_dims(const ir::Graph& g, const ir::Node& n, size_t port) {
  if (port >= n.inputs.size() || n.inputs[port] == ir::kNoValue || !g.has_value(n.inputs[port])) return std::nullopt;
  const ir::TensorType& t = g.value(n.inputs[port]).type;
  if (!t.rank_known) return std::nullopt;
  Shape out;
  for (const ir::Dim& d : t.dims) out.push_back(d.is_known() ? d.size : -1);
  return out;
}

int64_t int_attr(const ir::Node& n, const char* key, int64_t fallback) {
  const ir::Attribute* a = n.attr(key);
  return a && a->kind() == ir::AttrKind::kInt ? a->i() : fallback;
}

}  // namespace

std::optional<Shape> suggested_weight_shape(const ir::Graph& g, const ir::Node& n, int input) {
  const std::optional<Shape> x = known_dims(g, n, 0);
  auto known = [](int64_t d) { return d > 0; };
  if ((n.op == "Conv" || n.op == "ConvTranspose") && input == 1) {
    if (!x || x->size() < 3 || !known((*x)[1])) return std::nullopt;
    const int64_t group = std::max<int64_t>(1, int_attr(n, "group", 1));
    const size_t spatial = x->size() - 2;
    Shape w = n.op == "Conv" ? Shape{16, (*x)[1] / group} : Shape{(*x)[1], 16 / group};
    const ir::Attribute* k = n.attr("kernel_shape");
    for (size_t i = 0; i < spatial; ++i)
      w.push_back(k && k->kind() == ir::AttrKind::kInts && i < k->ints().size() ? k->ints()[i] : 3);
    return w;
  }
  if ((n.op == "Conv" || n.op == "ConvTranspose") && input == 2) {
    const std::optional<Shape> w = known_dims(g, n, 1);
    if (!w || w->size() < 2) return std::nullopt;
    const int64_t out = n.op == "Conv" ? (*w)[0] : (*w)[1] * std::max<int64_t>(1, int_attr(n, "group", 1));
    return known(out) ? std::optional<Shape>(Shape{out}) : std::nullopt;
  }
  if (n.op == "Gemm" && input == 1) {  // [K, N] ([N, K] with transB); N taken as K
    if (!x || x->size() != 2) return std::nullopt;
    const int64_t k = int_attr(n, "transA", 0) ? (*x)[0] : (*x)[1];
    return known(k) ? std::optional<Shape>(Shape{k, k}) : std::nullopt;
  }
  if (n.op == "Gemm" && input == 2) {
    const std::optional<Shape> b = known_dims(g, n, 1);
    if (!b || b->size() != 2) return std::nullopt;
    const int64_t cols = int_attr(n, "transB", 0) ? (*b)[0] : (*b)[1];
    return known(cols) ? std::optional<Shape>(Shape{cols}) : std::nullopt;
  }
  if (n.op == "MatMul" && input == 1) {
    if (!x || x->empty() || !known(x->back())) return std::nullopt;
    return Shape{x->back(), x->back()};
  }
  if ((n.op == "BatchNormalization" || n.op == "InstanceNormalization") && input >= 1) {
    if (!x || x->size() < 2 || !known((*x)[1])) return std::nullopt;
    return Shape{(*x)[1]};
  }
  if (n.op == "LayerNormalization" && input >= 1) {
    if (!x || x->empty()) return std::nullopt;
    int64_t axis = int_attr(n, "axis", -1);
    if (axis < 0) axis += static_cast<int64_t>(x->size());
    if (axis < 0 || axis >= static_cast<int64_t>(x->size())) return std::nullopt;
    Shape s(x->begin() + axis, x->end());
    for (int64_t d : s)
      if (!known(d)) return std::nullopt;
    return s;
  }
  return std::nullopt;
}

}  // namespace tessera::studio
