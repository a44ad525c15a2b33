// Host tensor: 64-byte aligned shared storage, a dtype, a shape and element strides.
//
// Usage:
//   TRY(Tensor t, Tensor::create(DType::kF32, {2, 3}));   // zero-filled, checked size
//   float* p = t.data<float>();
//   Tensor v = Tensor::from_vector<float>({2}, {1.f, 2.f});
//
// Copies share storage (like a NumPy view); clone() makes a deep copy. Kernels expect contiguous
// tensors; contiguous() returns one (a copy when the strides say otherwise).
//
// A runtime value may also be one of ONNX's sequences or optionals (TypeKind): an immutable
// list of values (items()) with the elements' dtype and no bytes of its own (shape [0]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/status.h"

namespace tessera {

using Shape = std::vector<int64_t>;

// Largest tensor we agree to allocate (bytes); anything read from a file is checked against it.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;  // 64 GiB

// Element count of a shape, or an error on a negative dimension or overflow past kMaxTensorBytes.
Expected<int64_t> checked_numel(const Shape& shape, DType dtype);
// Tensor storage allocated so far in this process (every thread): count and bytes. For tests that
// a loop allocates nothing per iteration (the training step's buffers are the arena's).
struct TensorAllocations {
  int64_t count = 0, bytes = 0;
};
TensorAllocations tensor_allocations();
// Row-major element strides for a shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);
// "[2, 3]"
std::string shape_to_string(const Shape& shape);

// What a value is. Runtime values are tensors, sequences (items: tensors) or optionals (items: 0 or
// 1 tensor or sequence); the IR also names an optional sequence (kOptionalSequence).
enum class TypeKind : uint8_t { kTensor, kSequence, kOptional, kOptionalSequence };

class Tensor {
 public:
  // An f32 scalar holding 0 (valid, one element).
  Tensor();
  // Zero-filled; asserts the size is sane (use create() for sizes from outside).
  Tensor(DType dtype, Shape shape);
  static Expected<Tensor> create(DType dtype, Shape shape);
  // As create(), without zero-filling: for buffers the caller overwrites entirely.
  static Expected<Tensor> create_uninitialized(DType dtype, Shape shape);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }
  static Tensor from_bools(Shape shape, const std::vector<bool>& values);
  // A string tensor (engine/core/strings.h); string_at reads element i in row-major order.
  static Tensor from_strings(Shape shape, const std::vector<std::string>& values);
  const std::string& string_at(int64_t i) const;
  std::vector<std::string> to_strings() const;
  // Converts doubles to `dtype` (rounding for integers, saturation is not applied).
  static Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& values);

  // A sequence of tensors whose element type is `elem` (each item a tensor of that dtype).
  static Tensor sequence(DType elem, std::vector<Tensor> items);
  // An optional holding `item` (a tensor or a sequence) or nothing; `elem` is the element dtype.
  static Tensor optional(DType elem, std::vector<Tensor> item);
  TypeKind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == TypeKind::kTensor; }
  // A sequence's items, an optional's 0 or 1 value; empty for a tensor.
  const std::vector<Tensor>& items() const;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * static_cast<size_t>(dtype_size(dtype_)); }
  bool is_contiguous() const;

  // The allocation the tensor's bytes live in: equal for tensors that share storage.
  const void* storage_id() const { return storage_.get(); }
  // No other tensor shares this one's bytes (a kept buffer nobody else holds may be written over).
  bool storage_unique() const { return storage_.use_count() == 1; }
  void* raw_data() { return storage_.get() + offset_; }
  const void* raw_data() const { return storage_.get() + offset_; }
  template <class T>
  T* data() {
    check_type<T>();
    return reinterpret_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    check_type<T>();
    return reinterpret_cast<const T*>(raw_data());
  }

  // Element i in row-major logical order as a double (bool -> 0/1, halves converted; a string's
  // intern id, which only equality may use).
  double get(int64_t i) const;
  void set(int64_t i, double v);
  std::vector<double> to_doubles() const;

  // Same storage, new shape with the same element count (requires contiguity).
  Expected<Tensor> reshape(Shape shape) const;
  // A contiguous tensor over memory it does not own (an arena slot, a device staging buffer).
  // `keep_alive` (may be null) is held for the tensor's lifetime; the caller guarantees `data`
  // stays valid and 64-byte alignment is not required.
  static Tensor wrap(void* data, DType dtype, Shape shape, std::shared_ptr<void> keep_alive = nullptr);
  // Same storage with explicit strides (no checks beyond the count); used for views.
  Tensor view(Shape shape, std::vector<int64_t> strides, int64_t offset_elems) const;
  Tensor clone() const;
  Tensor contiguous() const;
  // Element-wise conversion to another dtype.
  Tensor cast(DType to) const;
  // Same dtype, shape and values (NaN equals NaN at the same place).
  bool equals(const Tensor& other) const;
  // Short description: "f32[2, 3] {1, 2, 3, ...}".
  std::string summary(int max_values = 6) const;

 private:
  struct Uninitialized {};
  Tensor(DType dtype, Shape shape, Uninitialized);  // for copies that overwrite every byte
  template <class T>
  void check_type() const;
  int64_t offset_of(int64_t logical) const;

  std::shared_ptr<std::byte> storage_;
  int64_t offset_ = 0;  // bytes
  DType dtype_ = DType::kF32;
  TypeKind kind_ = TypeKind::kTensor;
  std::shared_ptr<const std::vector<Tensor>> items_;  // sequences and optionals
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t numel_ = 1;
};

template <class T>
void Tensor::check_type() const {
  if constexpr (std::is_same_v<T, uint8_t>) {
    assert(dtype_ == DType::kU8 || dtype_ == DType::kBool);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    assert(dtype_ == DType::kU64 || dtype_ == DType::kString);
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    assert(dtype_ == DType::kF16 || dtype_ == DType::kBF16 || dtype_ == DType::kU16);
  } else if constexpr (!std::is_same_v<T, std::byte>) {
    assert(dtype_ == DTypeOf<T>::value);
  }
}

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

}  // namespace tessera
