// TensorType: a dtype and a shape whose dimensions are known sizes, named symbols or unknown.
//
//   f32[N, 1, 28, 28]   N is a symbolic dimension (the batch)
//   i64[?]              one dimension of unknown size
//   f32[*]              unknown rank
//   f32[]               a scalar
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

  TensorType() = default;
  TensorType(DType dt, std::vector<Dim> d) : dtype(dt), dims(std::move(d)) {}
  static TensorType of(DType dt, const Shape& shape);  // fully known
  static TensorType unranked(DType dt) {
    TensorType t;
    t.dtype = dt;
    t.rank_known = false;
    return t;
  }

  int rank() const { return static_cast<int>(dims.size()); }
  bool is_static() const;                 // rank and every dimension known
  Shape static_shape() const;             // requires is_static()
  int64_t static_numel() const;           // -1 unless is_static()
  // Does a concrete tensor fit this type? Symbols match any size (binding is the caller's job).
  bool accepts(DType dt, const Shape& shape) const;
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && rank_known == o.rank_known && dims == o.dims;
  }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string to_string() const;  // "f32[N, 10]"
};

}  // namespace tessera::ir
