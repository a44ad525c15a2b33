// Per-example transforms run in the loader's worker threads: normalise, crop, flip, one-hot, cast.
//
// Usage:
//   auto t = data::make_transforms(data::RandomCrop(28, /*padding=*/2),
//                                  data::RandomHorizontalFlip(0.5),
//                                  data::Normalize({0.2860f}, {0.3530f}),
//                                  data::OneHot(10));
//   data::DataLoader loader(source, std::move(t), options);
//
// A transform names the field it works on ("x" or "labels" by default). The loader first calls
// bind() once with the source's field specs, in pipeline order: the transform checks the field
// exists with a dtype and shape it accepts, remembers where it is, and rewrites the specs to what
// it produces (OneHot: i64 [] -> f32 [K]; RandomCrop: [C, H, W] -> [C, size, size]). Then
// apply() runs per example, concurrently from several threads (it must not modify the transform).
// Random transforms draw from the example's own Rng (rng.h), seeded from (seed, epoch, example
// index), in pipeline order, a fixed number of draws per example: the result depends neither on
// thread scheduling nor on the worker count.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/data/dataset.h"
#include "engine/data/rng.h"

namespace tessera::data {

class Transform {
 public:
  virtual ~Transform() = default;
  // Validates against `fields` (what the previous step produces) and updates them in place.
  virtual Status bind(std::vector<FieldSpec>& fields) = 0;
  // Transforms one example laid out as the specs given to bind(); thread-safe, const.
  virtual Status apply(Example& example, Rng& rng) const = 0;
  virtual std::string name() const = 0;

 protected:
  // Finds `field` in `fields` or returns an error naming the transform and the fields present.
  Expected<int> resolve(const std::vector<FieldSpec>& fields, const std::string& field) const;
};

using Transforms = std::vector<std::unique_ptr<Transform>>;

// (x - mean[c]) / std[c] over a f32 field [C, ...]; mean and std have C entries or one (shared).
class Normalize final : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std, std::string field = "x");
  Status bind(std::vector<FieldSpec>& fields) override;
  Status apply(Example& example, Rng& rng) const override;
  std::string name() const override { return "Normalize"; }

 private:
  std::vector<float> mean_, std_;
  std::string field_;
  int index_ = -1;
  int64_t channels_ = 0, plane_ = 0;
};

// Pads [C, H, W] by `padding` zeros on every side, then cuts a size x size window at a uniform
// offset: top = rng.uniform_int(H + 2p - size + 1), then left = rng.uniform_int(W + 2p - size + 1).
class RandomCrop final : public Transform {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0, std::string field = "x");
  Status bind(std::vector<FieldSpec>& fields) override;
  Status apply(Example& example, Rng& rng) const override;
  std::string name() const override { return "RandomCrop"; }

 private:
  int64_t size_, padding_;
  std::string field_;
  int index_ = -1;
  DType dtype_ = DType::kF32;
  int64_t c_ = 0, h_ = 0, w_ = 0;
};

// Reverses the last dim with probability p (one rng.bernoulli(p) draw per example).
class RandomHorizontalFlip final : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5, std::string field = "x");
  Status bind(std::vector<FieldSpec>& fields) override;
  Status apply(Example& example, Rng& rng) const override;
  std::string name() const override { return "RandomHorizontalFlip"; }

 private:
  double p_;
  std::string field_;
  int index_ = -1;
};

// Integer field S -> f32 S + [num_classes] with 1 at the label. A label outside [0, num_classes)
// is an error naming the label.
class OneHot final : public Transform {
 public:
  explicit OneHot(int64_t num_classes, std::string field = "labels");
  Status bind(std::vector<FieldSpec>& fields) override;
  Status apply(Example& example, Rng& rng) const override;
  std::string name() const override { return "OneHot"; }

 private:
  int64_t num_classes_;
  std::string field_;
  int index_ = -1;
};

// Converts a field to `dtype` (Tensor::cast semantics).
class Cast final : public Transform {
 public:
  Cast(std::string field, DType dtype);
  Status bind(std::vector<FieldSpec>& fields) override;
  Status apply(Example& example, Rng& rng) const override;
  std::string name() const override { return "Cast"; }

 private:
  std::string field_;
  DType dtype_;
  int index_ = -1;
};

// Moves concrete transforms into a pipeline: make_transforms(Normalize(...), OneHot(10)).
template <class... T>
Transforms make_transforms(T&&... transforms) {
  Transforms out;
  (out.push_back(std::make_unique<std::decay_t<T>>(std::forward<T>(transforms))), ...);
  return out;
}

}  // namespace tessera::data
