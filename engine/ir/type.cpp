// TensorType printing and queries.
#include "engine/ir/type.h"

#include <cstdint>

namespace tessera::ir {

std::string Dim::to_string() const {
  if (is_known()) return std::to_string(size);
  return symbol.empty() ? "?" : symbol;
}

TensorType TensorType::of(DType dt, const Shape& shape) {
  TensorType t;
  t.dtype = dt;
  for (int64_t d : shape) t.dims.push_back(Dim::known(d));
  return t;
}

bool TensorType::is_static() const {
  if (!rank_known) return false;
  for (const Dim& d : dims)
    if (!d.is_known()) return false;
  return true;
}

Shape TensorType::static_shape() const {
  Shape s;
  for (const Dim& d : dims) s.push_back(d.size);
  return s;
}

int64_t TensorType::static_numel() const {
  if (!is_static()) return -1;
  // Saturates at INT64_MAX (imported shapes are untrusted; such a tensor is refused at allocation).
  int64_t n = 1;
  for (const Dim& d : dims) {
    if (d.size == 0) return 0;
    if (__builtin_mul_overflow(n, d.size, &n)) n = INT64_MAX;
  }
  return n;
}

bool TensorType::accepts(DType dt, const Shape& shape) const {
  if (dt != dtype) return false;
  if (!rank_known) return true;
  if (shape.size() != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].is_known() && dims[i].size != shape[i]) return false;
  return true;
}

std::string TensorType::to_string() const {
  std::string s(dtype_name(dtype));
  if (!rank_known) return s + "[*]";
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].to_string();
  return s + "]";
}

}  // namespace tessera::ir
