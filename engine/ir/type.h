// TensorType: a dtype and a shape whose dimensions are known sizes, named symbols or unknown.
//
//   f32[N, 1, 28, 28]   N is a symbolic dimension (the batch)
//   i64[?]              one dimension of unknown size
//   f32[*]              unknown rank
//   f32[]               a scalar
//   seq(f32[?, 3])      a sequence of such tensors (ONNX sequence types)
//   opt(f32[2])         an optional tensor; opt(seq(f32[*])) an optional sequence
// For sequences and optionals, dtype and dims describe the element tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/tensor.h"

namespace tessera::ir {

struct Dim {
  int64_t size = -1;   // >= 0 when known
  std::string symbol;  // non-empty for a named symbolic dimension (then size is -1)

  static Dim known(int64_t n) { return Dim{n, {}}; }
  static Dim named(std::string s) { return Dim{-1, std::move(s)}; }
  static Dim unknown() { return Dim{}; }
  bool is_known() const { return size >= 0; }
  bool is_symbolic() const { return size < 0 && !symbol.empty(); }
  bool operator==(const Dim& o) const { return size == o.size && symbol == o.symbol; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string to_string() const;  // "3", "N" or "?"
};

struct TensorType {
  DType dtype = DType::kF32;
  std::vector<Dim> dims;
  bool rank_known = true;
  TypeKind kind = TypeKind::kTensor;

  TensorType() = default;
  TensorType(DType dt, std::vector<Dim> d) : dtype(dt), dims(std::move(d)) {}
  static TensorType of(DType dt, const Shape& shape);  // fully known
  // The type of a runtime value: a tensor's exact type; seq(T[*]), opt(T[*]) or opt(seq(T[*]))
  // for the others (an empty optional is taken for an optional tensor).
  static TensorType of_value(const Tensor& value);
  static TensorType unranked(DType dt) {
    TensorType t;
    t.dtype = dt;
    t.rank_known = false;
    return t;
  }

  // The same element type as another kind of value.
  TensorType as(TypeKind k) const {
    TensorType t = *this;
    t.kind = k;
    return t;
  }
  bool is_tensor() const { return kind == TypeKind::kTensor; }

  int rank() const { return static_cast<int>(dims.size()); }
  bool is_static() const;                 // a tensor whose rank and every dimension are known
  Shape static_shape() const;             // requires is_static()
  int64_t static_numel() const;           // -1 unless is_static()
  // Does a concrete tensor fit this type? Symbols match any size (binding is the caller's job).
  bool accepts(DType dt, const Shape& shape) const;
  // The same for any runtime value: its kind and dtype; a tensor's shape; a sequence's items'
  // dtype (element shapes of sequence types are advisory). A present value stands for an optional.
  bool accepts(const Tensor& value) const;
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && rank_known == o.rank_known && dims == o.dims && kind == o.kind;
  }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string to_string() const;  // "f32[N, 10]", "seq(f32[N, 10])"
};

}  // namespace tessera::ir
