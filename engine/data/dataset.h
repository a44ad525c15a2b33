// Examples, sources and batches: the vocabulary of the data pipeline.
//
// Usage:
//   TRY(auto src, data::open_mnist_dir("/usr/share/datasets/fashion-mnist", "train"));
//   data::Example ex;
//   RETURN_IF_ERROR(src->get(0, ex));        // ex[0]: f32 [1, 28, 28] "x", ex[1]: i64 [] "labels"
//   // an in-memory source over tensors whose first dim is the example index:
//   TRY(auto mem, data::TensorSource::create({{"x", x}, {"labels", y}}, "my arrays"));
//
// A Source is random access and immutable once opened: get() is called concurrently from the
// loader's worker threads and must be thread-safe. Each get() returns tensors with storage of
// their own (transforms modify them in place), in the order and with the dtype and shape that
// fields() promises. A Batch maps field names to tensors stacked along a new leading batch dim,
// so it can be fed directly as runtime::Feeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace tessera::data {

// One example: one tensor per field, in the order of Source::fields().
using Example = std::vector<Tensor>;
// Field name -> f32/i64/... tensor [batch, per-example shape...].
using Batch = std::map<std::string, Tensor>;

struct FieldSpec {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;  // per example, without the batch dim
};

class Source {
 public:
  virtual ~Source() = default;
  // Number of examples; get() accepts 0 <= index < size().
  virtual int64_t size() const = 0;
  virtual std::vector<FieldSpec> fields() const = 0;
  // Replaces `out` with example `index`. Thread-safe. Errors name the file (Error.where) and index.
  virtual Status get(int64_t index, Example& out) const = 0;
  // Short human description for errors and lineage, e.g. "idx(train-images-idx3-ubyte.gz)".
  virtual std::string name() const = 0;
  // The files the examples come from (for fingerprint()); empty for purely in-memory data.
  virtual std::vector<std::string> files() const { return {}; }
  // Optional fast path for a batch without transforms: writes examples indices[0..count) straight
  // into `out` (one tensor per field, [count, field shape], fields() order), as get() would give
  // them. false: not offered (the loader calls get() per example). Thread-safe.
  virtual Expected<bool> gather(const int64_t* indices, int64_t count, std::vector<Tensor>& out) const {
    (void)indices, (void)count, (void)out;
    return false;
  }
};

// Index of the field called `name` in `fields`, or -1.
inline int find_field(const std::vector<FieldSpec>& fields, const std::string& name) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// An in-memory source over named tensors whose first dim is the example index (all equal).
// Header-only so that formats/ can build one without linking tessera_data.
class TensorSource final : public Source {
 public:
  // Fails when `columns` is empty, a tensor is a scalar, names repeat or first dims differ.
  // `files` are recorded for fingerprint() (the files the tensors were read from, if any).
  static Expected<std::shared_ptr<TensorSource>> create(
      std::vector<std::pair<std::string, Tensor>> columns, std::string name,
      std::vector<std::string> files = {}) {
    if (columns.empty()) return make_error("a tensor source needs at least one field", name);
    auto src = std::shared_ptr<TensorSource>(new TensorSource());
    src->name_ = std::move(name);
    src->files_ = std::move(files);
    for (auto& [field, t] : columns) {
      if (t.rank() == 0) {
        return make_error("field '" + field + "' is a scalar; its first dim must index examples",
                          src->name_);
      }
      if (find_field(src->fields_, field) >= 0) {
        return make_error("field '" + field + "' appears twice", src->name_);
      }
      if (!src->fields_.empty() && t.dim(0) != src->size_) {
        return make_error("field '" + field + "' has " + std::to_string(t.dim(0)) +
                              " examples but '" + src->fields_[0].name + "' has " +
                              std::to_string(src->size_),
                          src->name_);
      }
      src->size_ = t.dim(0);
      src->fields_.push_back({field, t.dtype(), Shape(t.shape().begin() + 1, t.shape().end())});
      src->columns_.push_back(t.contiguous());
    }
    return src;
  }

  int64_t size() const override { return size_; }
  std::vector<FieldSpec> fields() const override { return fields_; }
  std::string name() const override { return name_; }
  std::vector<std::string> files() const override { return files_; }
  Status get(int64_t index, Example& out) const override {
    if (index < 0 || index >= size_) {
      return make_error("example index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(size_) + ")",
                        name_);
    }
    out.clear();
    for (size_t f = 0; f < columns_.size(); ++f) {
      Tensor t(fields_[f].dtype, fields_[f].shape);  // fresh storage: transforms write in place
      const auto* base = static_cast<const unsigned char*>(columns_[f].raw_data());
      std::memcpy(t.raw_data(), base + static_cast<size_t>(index) * t.nbytes(), t.nbytes());
      out.push_back(std::move(t));
    }
    return Status::ok();
  }
  Expected<bool> gather(const int64_t* indices, int64_t count, std::vector<Tensor>& out) const override {
    for (size_t f = 0; f < columns_.size(); ++f) {
      const size_t row = columns_[f].nbytes() / static_cast<size_t>(std::max<int64_t>(1, size_));
      const auto* base = static_cast<const unsigned char*>(columns_[f].raw_data());
      auto* dst = static_cast<unsigned char*>(out[f].raw_data());
      for (int64_t j = 0; j < count; ++j) {
        if (indices[j] < 0 || indices[j] >= size_)
          return make_error("example index " + std::to_string(indices[j]) + " out of range [0, " + std::to_string(size_) + ")",
                            name_);
        std::memcpy(dst + static_cast<size_t>(j) * row, base + static_cast<size_t>(indices[j]) * row, row);
      }
    }
    return true;
  }

 private:
  TensorSource() = default;
  std::string name_;
  std::vector<std::string> files_;
  std::vector<FieldSpec> fields_;
  std::vector<Tensor> columns_;  // contiguous, [size, ...]
  int64_t size_ = 0;
};

}  // namespace tessera::data
