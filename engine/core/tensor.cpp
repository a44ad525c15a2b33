// Host tensor storage, element access and conversions.
#include "engine/core/tensor.h"

#include "engine/core/strings.h"

#include <cstdint>
#include <cstdio>

#include <cmath>
#include <atomic>
#include <cstdlib>
#include <new>
#include <sstream>

namespace tessera {
namespace {

std::atomic<int64_t> g_allocations{0}, g_allocated_bytes{0};

std::shared_ptr<std::byte> allocate(size_t bytes, bool zero = true) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (zero) std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

}  // namespace

TensorAllocations tensor_allocations() {
  return {g_allocations.load(std::memory_order_relaxed), g_allocated_bytes.load(std::memory_order_relaxed)};
}

Expected<int64_t> checked_numel(const Shape& shape, DType dtype) {
  int64_t n = 1;
  const int64_t limit = kMaxTensorBytes / dtype_size(dtype);
  for (int64_t d : shape) {
    if (d < 0) return make_error("negative dimension " + std::to_string(d) + " in shape " + shape_to_string(shape));
    if (d != 0 && n > limit / d) {
      // The size it would need, in floating point (the integer product may overflow).
      double bytes = static_cast<double>(dtype_size(dtype));
      for (int64_t e : shape) bytes *= static_cast<double>(e);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g", bytes);
      return make_error("tensor of shape " + shape_to_string(shape) + " would need " + buf + " bytes, over the " +
                        std::to_string(kMaxTensorBytes >> 30) + " GiB limit");
    }
    n *= d;
  }
  return n;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  // Saturates instead of overflowing: a shape with a zero dimension passes checked_numel with any
  // other dimensions, and its strides are never used to address memory.
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    if (__builtin_mul_overflow(s[i + 1], shape[i + 1], &s[i])) s[i] = INT64_MAX;
  }
  return s;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor() : Tensor(DType::kF32, {}) {}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  auto n = checked_numel(shape_, dtype_);
  assert(n.has_value());
  numel_ = *n;
  strides_ = contiguous_strides(shape_);
  storage_ = allocate(nbytes());
}

Tensor::Tensor(DType dtype, Shape shape, Uninitialized) : dtype_(dtype), shape_(std::move(shape)) {
  auto n = checked_numel(shape_, dtype_);
  assert(n.has_value());
  numel_ = *n;
  strides_ = contiguous_strides(shape_);
  storage_ = allocate(nbytes(), /*zero=*/false);
}

Expected<Tensor> Tensor::create(DType dtype, Shape shape) {
  TRY(int64_t n, checked_numel(shape, dtype));
  (void)n;
  const std::string text = shape_to_string(shape);  // shape is moved from below
  try {
    return Tensor(dtype, std::move(shape));
  } catch (const std::bad_alloc&) {
    return make_error("out of memory allocating a tensor of shape " + text);
  }
}

Expected<Tensor> Tensor::create_uninitialized(DType dtype, Shape shape) {
  TRY(int64_t n, checked_numel(shape, dtype));
  (void)n;
  const std::string text = shape_to_string(shape);
  try {
    return Tensor(dtype, std::move(shape), Uninitialized{});
  } catch (const std::bad_alloc&) {
    return make_error("out of memory allocating a tensor of shape " + text);
  }
}

Tensor Tensor::sequence(DType elem, std::vector<Tensor> items) {
  Tensor t(elem, {0});
  t.kind_ = TypeKind::kSequence;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::optional(DType elem, std::vector<Tensor> item) {
  assert(item.size() <= 1);
  Tensor t(elem, {0});
  t.kind_ = TypeKind::kOptional;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(item));
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return items_ ? *items_ : kNone;
}

Tensor Tensor::from_strings(Shape shape, const std::vector<std::string>& values) {
  Tensor t(DType::kString, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.data<uint64_t>()[i] = intern_string(values[i]);
  return t;
}

const std::string& Tensor::string_at(int64_t i) const {
  assert(dtype_ == DType::kString);
  const int64_t e = is_contiguous() ? i : offset_of(i);
  return interned_string(reinterpret_cast<const uint64_t*>(storage_.get() + offset_)[e]);
}

std::vector<std::string> Tensor::to_strings() const {
  std::vector<std::string> out;
  for (int64_t i = 0; i < numel_; ++i) out.push_back(string_at(i));
  return out;
}

Tensor Tensor::from_bools(Shape shape, const std::vector<bool>& values) {
  Tensor t(DType::kBool, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.data<uint8_t>()[i] = values[i] ? 1 : 0;
  return t;
}

Tensor Tensor::from_doubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

int64_t Tensor::offset_of(int64_t logical) const {
  int64_t off = 0;
  for (int d = rank() - 1; d >= 0; --d) {
    const int64_t extent = shape_[d];
    off += (logical % extent) * strides_[d];
    logical /= extent;
  }
  return off;
}

double Tensor::get(int64_t i) const {
  const std::byte* base = storage_.get() + offset_;
  const int64_t e = is_contiguous() ? i : offset_of(i);
  switch (dtype_) {
    case DType::kF32: return reinterpret_cast<const float*>(base)[e];
    case DType::kF64: return reinterpret_cast<const double*>(base)[e];
    case DType::kF16: return half_to_float(reinterpret_cast<const uint16_t*>(base)[e]);
    case DType::kBF16: return bf16_to_float(reinterpret_cast<const uint16_t*>(base)[e]);
    case DType::kI8: return reinterpret_cast<const int8_t*>(base)[e];
    case DType::kU8:
    case DType::kBool: return reinterpret_cast<const uint8_t*>(base)[e];
    case DType::kI32: return reinterpret_cast<const int32_t*>(base)[e];
    case DType::kI64: return static_cast<double>(reinterpret_cast<const int64_t*>(base)[e]);
    case DType::kI16: return reinterpret_cast<const int16_t*>(base)[e];
    case DType::kU16: return reinterpret_cast<const uint16_t*>(base)[e];
    case DType::kU32: return reinterpret_cast<const uint32_t*>(base)[e];
    case DType::kU64:
    case DType::kString: return static_cast<double>(reinterpret_cast<const uint64_t*>(base)[e]);
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  std::byte* base = storage_.get() + offset_;
  const int64_t e = is_contiguous() ? i : offset_of(i);
  switch (dtype_) {
    case DType::kF32: reinterpret_cast<float*>(base)[e] = static_cast<float>(v); break;
    case DType::kF64: reinterpret_cast<double*>(base)[e] = v; break;
    case DType::kF16: reinterpret_cast<uint16_t*>(base)[e] = float_to_half(static_cast<float>(v)); break;
    case DType::kBF16: reinterpret_cast<uint16_t*>(base)[e] = float_to_bf16(static_cast<float>(v)); break;
    case DType::kI8: reinterpret_cast<int8_t*>(base)[e] = static_cast<int8_t>(std::llround(v)); break;
    case DType::kU8: reinterpret_cast<uint8_t*>(base)[e] = static_cast<uint8_t>(std::llround(v)); break;
    case DType::kBool: reinterpret_cast<uint8_t*>(base)[e] = v != 0 ? 1 : 0; break;
    case DType::kI32: reinterpret_cast<int32_t*>(base)[e] = static_cast<int32_t>(std::llround(v)); break;
    case DType::kI64: reinterpret_cast<int64_t*>(base)[e] = static_cast<int64_t>(std::llround(v)); break;
    case DType::kI16: reinterpret_cast<int16_t*>(base)[e] = static_cast<int16_t>(std::llround(v)); break;
    case DType::kU16: reinterpret_cast<uint16_t*>(base)[e] = static_cast<uint16_t>(std::llround(v)); break;
    case DType::kU32: reinterpret_cast<uint32_t*>(base)[e] = static_cast<uint32_t>(std::llround(v)); break;
    case DType::kU64:
    case DType::kString:
      // Past u64's range (+inf included) saturates: the cast would be undefined (fuzzing found a
      // .tir constant of inf stored as u64).
      reinterpret_cast<uint64_t*>(base)[e] = v >= 0x1p64  ? UINT64_MAX
                                             : v >= 0x1p63 ? static_cast<uint64_t>(v)
                                                           : static_cast<uint64_t>(std::llround(v));
      break;
  }
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = get(i);
  return out;
}

Expected<Tensor> Tensor::reshape(Shape shape) const {
  TRY(int64_t n, checked_numel(shape, dtype_));
  if (n != numel_)
    return make_error("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = is_contiguous() ? *this : contiguous();
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

Tensor Tensor::wrap(void* data, DType dtype, Shape shape, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  t.numel_ = 1;
  for (int64_t d : t.shape_) t.numel_ *= d;
  t.offset_ = 0;
  // Aliasing constructor: shares ownership of keep_alive, points at data.
  t.storage_ = std::shared_ptr<std::byte>(std::move(keep_alive), static_cast<std::byte*>(data));
  return t;
}

Tensor Tensor::view(Shape shape, std::vector<int64_t> strides, int64_t offset_elems) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset_ + offset_elems * dtype_size(dtype_);
  t.numel_ = 1;
  for (int64_t d : t.shape_) t.numel_ *= d;
  return t;
}

Tensor Tensor::clone() const {
  if (!is_tensor()) return *this;  // items are immutable: sharing them is a copy
  Tensor t(dtype_, shape_, Uninitialized{});
  if (is_contiguous()) {
    std::memcpy(t.raw_data(), raw_data(), nbytes());
  } else {
    const int sz = dtype_size(dtype_);
    for (int64_t i = 0; i < numel_; ++i)
      std::memcpy(static_cast<std::byte*>(t.raw_data()) + i * sz,
                  storage_.get() + offset_ + offset_of(i) * sz, static_cast<size_t>(sz));
  }
  return t;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return clone();
  Tensor t(to, shape_);
  for (int64_t i = 0; i < numel_; ++i) {
    double v = get(i);
    if (is_integer(to) && std::isnan(v)) v = 0;
    if (is_integer(to)) v = std::trunc(v);  // ONNX Cast truncates toward zero
    t.set(i, v);
  }
  return t;
}

bool Tensor::equals(const Tensor& other) const {
  if (kind_ != other.kind_) return false;
  if (!is_tensor()) {
    if (dtype_ != other.dtype_ || items().size() != other.items().size()) return false;
    for (size_t i = 0; i < items().size(); ++i)
      if (!items()[i].equals(other.items()[i])) return false;
    return true;
  }
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  for (int64_t i = 0; i < numel_; ++i) {
    const double a = get(i), b = other.get(i);
    if (a != b && !(std::isnan(a) && std::isnan(b))) return false;
  }
  return true;
}

std::string Tensor::summary(int max_values) const {
  std::ostringstream os;
  if (!is_tensor()) {
    os << (kind_ == TypeKind::kSequence ? "seq(" : "opt(");
    for (size_t i = 0; i < items().size(); ++i) os << (i ? ", " : "") << items()[i].summary(max_values);
    os << ")";
    return os.str();
  }
  os << dtype_name(dtype_) << shape_to_string(shape_) << " {";
  const int64_t n = std::min<int64_t>(numel_, max_values);
  for (int64_t i = 0; i < n; ++i) {
    os << (i ? ", " : "");
    if (dtype_ == DType::kString) os << '"' << string_at(i) << '"';
    else os << get(i);
  }
  if (numel_ > n) os << ", ...";
  os << "}";
  return os.str();
}

}  // namespace tessera
