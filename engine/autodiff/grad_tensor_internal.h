// Pieces shared by the gradient rules of the tensor family (grad_tensor.cpp: data movement and
// reductions; grad_index.cpp: indexing, slicing, padding, resizing). Internal to engine/autodiff.
#pragma once

#include <string>
#include <vector>

#include "engine/autodiff/gradient.h"

namespace tessera::autodiff {

// Registers the rules of grad_index.cpp (Gather*, Scatter*, Compress, TopK, Slice, Pad, Resize);
// register_tensor_gradients calls it.
void register_index_gradients(ops::OpRegistry& registry);

namespace tensor_grad {

using ir::ValueId;
using ops::GradientContext;

// The compile-time integer values of v (a param or Constant), or an error naming `what`.
Expected<std::vector<int64_t>> const_ints(GradientContext& g, ValueId v, const std::string& what);

// The static shape of v, or an error saying the rule needs one.
Expected<Shape> static_shape(GradientContext& g, ValueId v, const std::string& what);

// Zeros of element type dt and the given static shape (one ConstantOfShape).
ValueId zeros_of(GradientContext& g, const Shape& shape, DType dt);

// `grad` (static shape `shape`) with axis `axis` scattered to size `new_dim`: slot j of the axis
// goes to position idx[j] (idx.size() == shape[axis]); reduction "add" sums repeated positions,
// "none" expects them distinct. One small index constant, an Expand and a ScatterElements.
ValueId scatter_axis(GradientContext& g, ValueId grad, const Shape& shape, int axis,
                     const std::vector<int64_t>& idx, int64_t new_dim,
                     const std::string& reduction);

}  // namespace tensor_grad
}  // namespace tessera::autodiff
