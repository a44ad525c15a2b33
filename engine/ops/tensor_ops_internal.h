// Pieces shared by the tensor op files (tensor_ops.cpp, tensor_index_ops.cpp); internal to
// engine/ops.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"

namespace tessera::ops {

// Registers Concat, Split, Slice and Gather (tensor_index_ops.cpp); called by register_tensor_ops.
void register_tensor_index_ops(OpRegistry& registry);

// The values of an i32 or i64 tensor of rank <= 1 (any rank when any_rank), in row-major order,
// read exactly (not through double, which would round INT64_MAX, the usual "to the end" of Slice).
// `what` names it in errors.
Expected<std::vector<int64_t>> read_ints(const Tensor& t, const ir::Node& node,
                                         const std::string& what, bool any_rank = false);
// Inference check of an index-like input i (when present): i64 (or i32 when allowed), 1-D or a
// scalar (one index).
Status check_index_input(const InferContext& ctx, size_t i, bool allow_i32);
// The compile-time values of integer input i; nullopt when not known.
Expected<std::optional<std::vector<int64_t>>> constant_ints(const InferContext& ctx, size_t i);
// The static length of a 1-D type (1 for a scalar), -1 when unknown (or t is null).
int64_t static_length(const ir::TensorType* t);
std::vector<ir::Dim> known_dims(const Shape& s);
// Product of s[begin, end).
int64_t numel_of(const Shape& s, size_t begin, size_t end);
// A deep copy of x with a new shape of the same element count; errors name the node.
Expected<Tensor> reshaped_copy(const Tensor& x, Shape shape, const ir::Node& node);
// A contiguous copy of the view (shape, element strides, element offset) of x; checks the size.
Expected<Tensor> strided_copy(const Tensor& x, Shape shape, std::vector<int64_t> strides,
                              int64_t offset, const ir::Node& node);
// The type both of two values can have (If's branches, Loop-carried values, a sequence's
// elements): same dtype and kind, equal dims kept, differing dims unknown, unranked when the ranks
// differ.
ir::TensorType union_type(const ir::TensorType& a, const ir::TensorType& b);
// A one-element result of an inference function.
std::vector<ir::TensorType> one(ir::TensorType t);

}  // namespace tessera::ops
