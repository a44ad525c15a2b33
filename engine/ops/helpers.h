// Shared pieces for op definitions: type lists, broadcasting, axis handling, dtype dispatch and
// error helpers. Internal to engine/ops (not part of the public engine interface).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"

namespace tessera::ops {

// 1 / (1 + e^-x) without overflow for either sign of x (Sigmoid, Swish, fused activations).
template <class T>
T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

using ir::Dim;

// SplitMix64's output function (Steele, Lea, Flood 2014): counter-based random bits, so a value
// is a pure function of (key, index) whatever the threads (Dropout's mask, the random ops).
inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline const std::vector<DType> kFloatTypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
inline const std::vector<DType> kNumericTypes = {
    DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8,  DType::kU8, DType::kI16,
    DType::kU16, DType::kI32, DType::kU32,  DType::kI64, DType::kU64};
// Every dtype Tessera has (numeric plus bool: for data movement and comparisons).
inline const std::vector<DType> kAllTypes = {
    DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8,  DType::kU8,  DType::kI16,
    DType::kU16, DType::kI32, DType::kU32,  DType::kI64, DType::kU64, DType::kBool};

// An error about the node being inferred or executed ("Conv 'conv1': <msg>"), with its id.
Error node_error(const ir::Node& node, const std::string& msg);

// ONNX multidirectional broadcasting of two (possibly symbolic) shapes. Known sizes must match or
// be 1; a symbol against 1 keeps the symbol; a symbol against a known size > 1 takes the size;
// two different symbols give an unknown dim.
Expected<std::vector<Dim>> broadcast_dims(const std::vector<Dim>& a, const std::vector<Dim>& b);
// The same for concrete shapes.
Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// Element strides to read `in` while walking `out` in row-major order (0 on broadcast axes).
// Requires `in` to be broadcastable to `out` and `in` contiguous.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Maps axis in [-rank, rank-1] to [0, rank-1]; error otherwise.
Expected<int> normalize_axis(int64_t axis, int rank, const ir::Node& node);

// Calls f(T{}) with T the C++ type for dt, for f32/f64 only; f16/bf16 callers convert through f32.
template <class F>
Status dispatch_float(DType dt, const ir::Node& node, F&& f) {
  switch (dt) {
    case DType::kF32: return f(float{});
    case DType::kF64: return f(double{});
    default: return node_error(node, "element type " + std::string(dtype_name(dt)) + " not supported by the reference kernel");
  }
}
// Calls f(T{}) for f32, f64, i8, u8, i32, i64 (bool as uint8_t when allow_bool).
template <class F>
Status dispatch_numeric(DType dt, const ir::Node& node, F&& f) {
  switch (dt) {
    case DType::kF32: return f(float{});
    case DType::kF64: return f(double{});
    case DType::kI8: return f(int8_t{});
    case DType::kU8: return f(uint8_t{});
    case DType::kI32: return f(int32_t{});
    case DType::kI64: return f(int64_t{});
    case DType::kI16: return f(int16_t{});
    case DType::kU16: return f(uint16_t{});
    case DType::kU32: return f(uint32_t{});
    case DType::kU64: return f(uint64_t{});
    default: return node_error(node, "element type " + std::string(dtype_name(dt)) + " not supported by the reference kernel");
  }
}

// f16/bf16 inputs are computed in f32 by reference kernels: widen() returns an f32 copy of a
// half tensor (or the tensor itself), narrow() converts a result back to the original dtype.
Tensor widen(const Tensor& t);
Tensor narrow(const Tensor& t, DType to);

// Reads a 1-D integer tensor (i32 or i64) as int64 values.
std::vector<int64_t> to_int64s(const Tensor& t);

// Common inference functions.
// Output 0 has the type of input 0.
Expected<std::vector<TensorType>> infer_same_as_first(const InferContext& ctx);
// Output 0 is the broadcast of all inputs; dtype of input 0 (or kBool when bool_result).
Expected<std::vector<TensorType>> infer_broadcast(const InferContext& ctx, bool bool_result);

// Checks input 0's dtype against def.allowed_types (empty list allows all).
Status check_allowed_type(const InferContext& ctx);
// All present inputs in [first, last] share input first's dtype.
Status check_same_dtype(const InferContext& ctx, size_t first, size_t last);

}  // namespace tessera::ops
