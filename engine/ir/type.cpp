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

TensorType TensorType::of_value(const Tensor& value) {
  switch (value.kind()) {
    case TypeKind::kTensor: return of(value.dtype(), value.shape());
    case TypeKind::kSequence: return unranked(value.dtype()).as(TypeKind::kSequence);
    default: {
      const bool seq = !value.items().empty() && value.items()[0].kind() == TypeKind::kSequence;
      return unranked(value.dtype()).as(seq ? TypeKind::kOptionalSequence : TypeKind::kOptional);
    }
  }
}

bool TensorType::is_static() const {
  if (!rank_known || !is_tensor()) return false;
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

bool TensorType::accepts(const Tensor& value) const {
  switch (kind) {
    case TypeKind::kTensor: return value.is_tensor() && accepts(value.dtype(), value.shape());
    case TypeKind::kSequence:
      // Element shapes of a sequence type are advisory (ONNX files state them loosely: a Loop
      // may grow the tensors it inserts); kind and dtype are checked.
      if (value.kind() != TypeKind::kSequence || value.dtype() != dtype) return false;
      for (const Tensor& t : value.items())
        if (!t.is_tensor() || t.dtype() != dtype) return false;
      return true;
    case TypeKind::kOptional:
    case TypeKind::kOptionalSequence:
      // A value that is present may stand for the optional (ONNX: Loop-carried optionals whose
      // body returns the value itself; OptionalHasElement and OptionalGetElement take both).
      if (value.kind() != TypeKind::kOptional)
        return as(kind == TypeKind::kOptional ? TypeKind::kTensor : TypeKind::kSequence).accepts(value);
      if (value.dtype() != dtype) return false;
      return value.items().empty() ||
             as(kind == TypeKind::kOptional ? TypeKind::kTensor : TypeKind::kSequence).accepts(value.items()[0]);
  }
  return false;
}

std::string TensorType::to_string() const {
  switch (kind) {
    case TypeKind::kTensor: break;
    case TypeKind::kSequence: return "seq(" + as(TypeKind::kTensor).to_string() + ")";
    case TypeKind::kOptional: return "opt(" + as(TypeKind::kTensor).to_string() + ")";
    case TypeKind::kOptionalSequence: return "opt(" + as(TypeKind::kSequence).to_string() + ")";
  }
  std::string s(dtype_name(dtype));
  if (!rank_known) return s + "[*]";
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].to_string();
  return s + "]";
}

}  // namespace tessera::ir
