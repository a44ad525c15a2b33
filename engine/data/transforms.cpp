// The per-example transforms: binding against field specs, then in-place work per example.
#include "engine/data/transforms.h"

#include <algorithm>
#include <cstring>

namespace tessera::data {

Expected<int> Transform::resolve(const std::vector<FieldSpec>& fields,
                                 const std::string& field) const {
  const int i = find_field(fields, field);
  if (i >= 0) return i;
  std::string have;
  for (const FieldSpec& f : fields) have += (have.empty() ? "" : ", ") + f.name;
  return make_error(name() + ": no field '" + field + "' (fields: " + have + ")");
}

// ---- Normalize ----

Normalize::Normalize(std::vector<float> mean, std::vector<float> std, std::string field)
    : mean_(std::move(mean)), std_(std::move(std)), field_(std::move(field)) {}

Status Normalize::bind(std::vector<FieldSpec>& fields) {
  TRY(index_, resolve(fields, field_));
  const FieldSpec& f = fields[static_cast<size_t>(index_)];
  if (f.dtype != DType::kF32 || f.shape.empty()) {
    return make_error("Normalize: field '" + field_ + "' must be f32 [C, ...], is " +
                      std::string(dtype_name(f.dtype)) + shape_to_string(f.shape));
  }
  channels_ = f.shape[0];
  plane_ = 1;
  for (size_t d = 1; d < f.shape.size(); ++d) plane_ *= f.shape[d];
  for (const auto* v : {&mean_, &std_}) {
    if (v->size() != 1 && static_cast<int64_t>(v->size()) != channels_) {
      return make_error("Normalize: " + std::string(v == &mean_ ? "mean" : "std") + " has " +
                        std::to_string(v->size()) + " values; field '" + field_ + "' has " +
                        std::to_string(channels_) + " channels (give 1 or " +
                        std::to_string(channels_) + ")");
    }
  }
  for (float s : std_) {
    if (!(s != 0.0f))
      return make_error("Normalize: std must be non-zero, got " + std::to_string(s));
  }
  return Status::ok();
}

Status Normalize::apply(Example& example, Rng& /*rng*/) const {
  float* p = example[static_cast<size_t>(index_)].data<float>();  // f32 [C, plane]
  for (int64_t c = 0; c < channels_; ++c) {
    const float m = mean_.size() == 1 ? mean_[0] : mean_[static_cast<size_t>(c)];
    const float inv = 1.0f / (std_.size() == 1 ? std_[0] : std_[static_cast<size_t>(c)]);
    float* row = p + c * plane_;
    for (int64_t i = 0; i < plane_; ++i) row[i] = (row[i] - m) * inv;
  }
  return Status::ok();
}

// ---- RandomCrop ----

RandomCrop::RandomCrop(int64_t size, int64_t padding, std::string field)
    : size_(size), padding_(padding), field_(std::move(field)) {}

Status RandomCrop::bind(std::vector<FieldSpec>& fields) {
  TRY(index_, resolve(fields, field_));
  FieldSpec& f = fields[static_cast<size_t>(index_)];
  if (f.shape.size() != 3) {
    return make_error("RandomCrop: field '" + field_ + "' must be [C, H, W], is " +
                      shape_to_string(f.shape));
  }
  if (size_ < 1 || padding_ < 0) {
    return make_error("RandomCrop: size must be >= 1 and padding >= 0, got size " +
                      std::to_string(size_) + ", padding " + std::to_string(padding_));
  }
  c_ = f.shape[0];
  h_ = f.shape[1];
  w_ = f.shape[2];
  if (h_ + 2 * padding_ < size_ || w_ + 2 * padding_ < size_) {
    return make_error("RandomCrop: a " + std::to_string(size_) + "x" + std::to_string(size_) +
                      " window does not fit in " + shape_to_string(f.shape) + " padded by " +
                      std::to_string(padding_));
  }
  dtype_ = f.dtype;
  f.shape = {c_, size_, size_};
  return Status::ok();
}

Status RandomCrop::apply(Example& example, Rng& rng) const {
  const int64_t top = rng.uniform_int(h_ + 2 * padding_ - size_ + 1);
  const int64_t left = rng.uniform_int(w_ + 2 * padding_ - size_ + 1);
  Tensor& in = example[static_cast<size_t>(index_)];
  Tensor out(dtype_, {c_, size_, size_});  // zero-filled: the padding
  const size_t es = static_cast<size_t>(dtype_size(dtype_));
  const auto* src = static_cast<const unsigned char*>(in.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  // Output column j reads input column left + j - padding; the valid j form one run per row.
  const int64_t j0 = std::max<int64_t>(0, padding_ - left);
  const int64_t j1 = std::min<int64_t>(size_, w_ + padding_ - left);
  for (int64_t c = 0; c < c_; ++c) {
    for (int64_t i = 0; i < size_; ++i) {
      const int64_t y = top + i - padding_;
      if (y < 0 || y >= h_ || j1 <= j0) continue;
      const int64_t x = left + j0 - padding_;
      std::memcpy(dst + static_cast<size_t>((c * size_ + i) * size_ + j0) * es,
                  src + static_cast<size_t>((c * h_ + y) * w_ + x) * es,
                  static_cast<size_t>(j1 - j0) * es);
    }
  }
  in = std::move(out);
  return Status::ok();
}

// ---- RandomHorizontalFlip ----

RandomHorizontalFlip::RandomHorizontalFlip(double p, std::string field)
    : p_(p), field_(std::move(field)) {}

Status RandomHorizontalFlip::bind(std::vector<FieldSpec>& fields) {
  TRY(index_, resolve(fields, field_));
  if (fields[static_cast<size_t>(index_)].shape.empty()) {
    return make_error("RandomHorizontalFlip: field '" + field_ + "' is a scalar");
  }
  return Status::ok();
}

Status RandomHorizontalFlip::apply(Example& example, Rng& rng) const {
  if (!rng.bernoulli(p_)) return Status::ok();
  Tensor& t = example[static_cast<size_t>(index_)];
  const int64_t w = t.dim(t.rank() - 1);
  const int64_t rows = w == 0 ? 0 : t.numel() / w;
  const size_t es = static_cast<size_t>(dtype_size(t.dtype()));
  auto* p = static_cast<unsigned char*>(t.raw_data());
  unsigned char tmp[16];
  for (int64_t r = 0; r < rows; ++r) {
    unsigned char* row = p + static_cast<size_t>(r * w) * es;
    for (int64_t a = 0, b = w - 1; a < b; ++a, --b) {
      std::memcpy(tmp, row + static_cast<size_t>(a) * es, es);
      std::memcpy(row + static_cast<size_t>(a) * es, row + static_cast<size_t>(b) * es, es);
      std::memcpy(row + static_cast<size_t>(b) * es, tmp, es);
    }
  }
  return Status::ok();
}

// ---- OneHot ----

OneHot::OneHot(int64_t num_classes, std::string field)
    : num_classes_(num_classes), field_(std::move(field)) {}

Status OneHot::bind(std::vector<FieldSpec>& fields) {
  TRY(index_, resolve(fields, field_));
  FieldSpec& f = fields[static_cast<size_t>(index_)];
  if (!is_integer(f.dtype)) {
    return make_error("OneHot: field '" + field_ + "' must hold integers, is " +
                      std::string(dtype_name(f.dtype)));
  }
  if (num_classes_ < 1) {
    return make_error("OneHot: num_classes must be >= 1, got " + std::to_string(num_classes_));
  }
  f.dtype = DType::kF32;
  f.shape.push_back(num_classes_);
  return Status::ok();
}

Status OneHot::apply(Example& example, Rng& /*rng*/) const {
  Tensor& in = example[static_cast<size_t>(index_)];
  Shape shape = in.shape();
  shape.push_back(num_classes_);
  Tensor out(DType::kF32, shape);  // f32 [..., K]
  float* dst = out.data<float>();
  for (int64_t i = 0; i < in.numel(); ++i) {
    const double label = in.get(i);
    if (label < 0 || label >= static_cast<double>(num_classes_)) {
      return make_error("OneHot: label " + std::to_string(static_cast<int64_t>(label)) +
                        " of field '" + field_ + "' is outside [0, " +
                        std::to_string(num_classes_) + ")");
    }
    dst[i * num_classes_ + static_cast<int64_t>(label)] = 1.0f;
  }
  in = std::move(out);
  return Status::ok();
}

// ---- Cast ----

Cast::Cast(std::string field, DType dtype) : field_(std::move(field)), dtype_(dtype) {}

Status Cast::bind(std::vector<FieldSpec>& fields) {
  TRY(index_, resolve(fields, field_));
  fields[static_cast<size_t>(index_)].dtype = dtype_;
  return Status::ok();
}

Status Cast::apply(Example& example, Rng& /*rng*/) const {
  Tensor& t = example[static_cast<size_t>(index_)];
  if (t.dtype() != dtype_) t = t.cast(dtype_);
  return Status::ok();
}

}  // namespace tessera::data
