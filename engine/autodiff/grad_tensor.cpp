// Gradient rules of the tensor, indexing and reduction families (tensor_ops.cpp, index_*.cpp,
// reduce.cpp, math_reduce.cpp, math_index.cpp).
#include "engine/autodiff/gradient.h"

#include <algorithm>

namespace tessera::autodiff {
namespace {

using ops::GradientContext;
using ir::ValueId;

// The reduced axes of a Reduce* node (axes input for ReduceSum, attribute for the others),
// normalised to [0, rank); all axes when none are given (unless noop_with_empty_axes).
Expected<std::vector<int64_t>> reduced_axes(GradientContext& g) {
  int rank = g.rank(g.input(0));
  std::vector<int64_t> axes;
  if (g.has_input(1)) {
    const Tensor* t = g.constant(g.input(1));
    if (!t) return g.fail("the axes must be known when the graph is built");
    for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(static_cast<int64_t>(t->get(i)));
  } else if (const ir::Attribute* a = g.node().attr("axes")) {
    axes = a->ints();
  }
  if (axes.empty()) {
    if (g.attrs().has("noop_with_empty_axes") && g.attrs().i("noop_with_empty_axes")) return axes;
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes)
    if (a < 0) a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// dY of a reduction, with the reduced axes back as size-1 dims (when keepdims = 0).
ValueId keep_dims(GradientContext& g, ValueId dy, const std::vector<int64_t>& axes) {
  bool keep = !g.attrs().has("keepdims") || g.attrs().i("keepdims") != 0;
  if (keep || axes.empty()) return dy;
  return g.emit("Unsqueeze", {dy, g.ints(axes)});
}

Status reduce_sum_grad(GradientContext& g) {
  TRY(std::vector<int64_t> axes, reduced_axes(g));
  if (g.attrs().has("noop_with_empty_axes") && g.attrs().i("noop_with_empty_axes") && axes.empty()) {
    g.set_grad(0, g.grad_output(0));
    return Status::ok();
  }
  ValueId dy = keep_dims(g, g.grad_output(0), axes);
  g.set_grad(0, g.emit("Expand", {dy, g.shape_of(g.input(0))}));
  return Status::ok();
}

}  // namespace

void register_tensor_gradients(ops::OpRegistry& registry) {
  set_gradient(registry, "ReduceSum", reduce_sum_grad);
}

}  // namespace tessera::autodiff
