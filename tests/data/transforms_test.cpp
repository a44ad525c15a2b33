// Tests for engine/data/transforms.cpp: hand-computed outputs, binding errors, determinism.
#include "engine/data/transforms.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera::data {
namespace {

std::vector<float> values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

// f32 [C, H, W] holding 1, 2, 3, ...
Tensor iota(int64_t c, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(c * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return Tensor::from_vector<float>({c, h, w}, v);
}

const std::vector<FieldSpec> kImageFields = {{"x", DType::kF32, {2, 2, 3}},
                                             {"labels", DType::kI64, {}}};

TEST(Transforms, NormalizePerChannel) {
  Normalize n({1.f, 10.f}, {2.f, 0.5f});
  std::vector<FieldSpec> f = kImageFields;
  ASSERT_TRUE(n.bind(f).is_ok());
  EXPECT_EQ(f[0].shape, (Shape{2, 2, 3}));  // unchanged specs
  Example ex = {iota(2, 2, 3), Tensor::scalar<int64_t>(1)};
  Rng rng(0);
  ASSERT_TRUE(n.apply(ex, rng).is_ok());
  EXPECT_EQ(values(ex[0]), (std::vector<float>{0.f, 0.5f, 1.f, 1.5f, 2.f, 2.5f,     // (v - 1) / 2
                                               -6.f, -4.f, -2.f, 0.f, 2.f, 4.f}));  // (v - 10) * 2

  Normalize shared({1.f}, {4.f});
  ASSERT_TRUE(shared.bind(f).is_ok());
  Example ex2 = {iota(2, 2, 3), Tensor::scalar<int64_t>(1)};
  ASSERT_TRUE(shared.apply(ex2, rng).is_ok());
  EXPECT_FLOAT_EQ(ex2[0].data<float>()[11], 2.75f);

  std::vector<FieldSpec> g = kImageFields;
  Status wrong = Normalize({1.f, 2.f, 3.f}, {1.f}).bind(g);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.error().message.find("mean has 3 values"), std::string::npos)
      << wrong.to_string();
  EXPECT_FALSE(Normalize({0.f}, {0.f}).bind(g).is_ok());
  Status missing = Normalize({0.f}, {1.f}, "pixels").bind(g);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.error().message.find("no field 'pixels' (fields: x, labels)"),
            std::string::npos);
  EXPECT_FALSE(Normalize({0.f}, {1.f}, "labels").bind(g).is_ok());  // i64
}

TEST(Transforms, RandomCropFullWindowIsThePaddedImage) {
  // 2x2 image, padding 1, size 4: the only window is the whole padded image.
  RandomCrop crop(4, 1);
  std::vector<FieldSpec> f = {{"x", DType::kF32, {1, 2, 2}}};
  ASSERT_TRUE(crop.bind(f).is_ok());
  EXPECT_EQ(f[0].shape, (Shape{1, 4, 4}));
  Example ex = {iota(1, 2, 2)};
  Rng rng(5);
  ASSERT_TRUE(crop.apply(ex, rng).is_ok());
  EXPECT_EQ(values(ex[0]), (std::vector<float>{0, 0, 0, 0,  //
                                               0, 1, 2, 0,  //
                                               0, 3, 4, 0,  //
                                               0, 0, 0, 0}));
}

TEST(Transforms, RandomCropWindowsCoverEveryOffset) {
  // 1x3x3 image 1..9, padding 1, size 3: 9 possible offsets (top, left) in {0,1,2}^2. The output
  // at (i, j) is input (top + i - 1, left + j - 1) or 0 outside.
  RandomCrop crop(3, 1);
  std::vector<FieldSpec> f = {{"x", DType::kF32, {1, 3, 3}}};
  ASSERT_TRUE(crop.bind(f).is_ok());
  std::set<std::vector<float>> seen;
  for (int64_t index = 0; index < 200; ++index) {
    Example ex = {iota(1, 3, 3)};
    Rng rng = Rng::for_example(1, 0, index);
    Rng copy = rng;
    ASSERT_TRUE(crop.apply(ex, rng).is_ok());
    const int64_t top = copy.uniform_int(3), left = copy.uniform_int(3);  // the documented draws
    std::vector<float> want;
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t y = top + i - 1, x = left + j - 1;
        want.push_back(y < 0 || y > 2 || x < 0 || x > 2 ? 0.f : static_cast<float>(y * 3 + x + 1));
      }
    }
    ASSERT_EQ(values(ex[0]), want) << "top " << top << " left " << left;
    seen.insert(want);
  }
  EXPECT_EQ(seen.size(), 9u);
  // Offset (0, 0) by hand: rows -1..1, cols -1..1.
  EXPECT_EQ(seen.count({0, 0, 0, 0, 1, 2, 0, 4, 5}), 1u);

  std::vector<FieldSpec> small = {{"x", DType::kF32, {1, 2, 2}}};
  EXPECT_FALSE(RandomCrop(5, 1).bind(small).is_ok());
  std::vector<FieldSpec> flat = {{"x", DType::kF32, {4}}};
  EXPECT_FALSE(RandomCrop(2).bind(flat).is_ok());
}

TEST(Transforms, HorizontalFlip) {
  RandomHorizontalFlip always(1.0), never(0.0);
  std::vector<FieldSpec> f = kImageFields;
  ASSERT_TRUE(always.bind(f).is_ok());
  ASSERT_TRUE(never.bind(f).is_ok());
  Rng rng(1);
  Example ex = {iota(2, 2, 3), Tensor::scalar<int64_t>(0)};
  ASSERT_TRUE(never.apply(ex, rng).is_ok());
  EXPECT_EQ(values(ex[0]), values(iota(2, 2, 3)));
  ASSERT_TRUE(always.apply(ex, rng).is_ok());
  EXPECT_EQ(values(ex[0]), (std::vector<float>{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10}));

  // p = 0.5: about half of the examples flip, each decided by its own generator.
  RandomHorizontalFlip half(0.5);
  ASSERT_TRUE(half.bind(f).is_ok());
  int flipped = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    Example e = {iota(2, 2, 3), Tensor::scalar<int64_t>(0)};
    Rng r = Rng::for_example(9, 0, i);
    ASSERT_TRUE(half.apply(e, r).is_ok());
    flipped += e[0].data<float>()[0] == 3.f ? 1 : 0;
  }
  EXPECT_NEAR(flipped, 500, 60);
}

TEST(Transforms, OneHotAndCast) {
  OneHot one_hot(4);
  std::vector<FieldSpec> f = kImageFields;
  ASSERT_TRUE(one_hot.bind(f).is_ok());
  EXPECT_EQ(f[1].dtype, DType::kF32);
  EXPECT_EQ(f[1].shape, (Shape{4}));
  Rng rng(0);
  Example ex = {iota(2, 2, 3), Tensor::scalar<int64_t>(2)};
  ASSERT_TRUE(one_hot.apply(ex, rng).is_ok());
  EXPECT_EQ(values(ex[1]), (std::vector<float>{0, 0, 1, 0}));
  Example bad = {iota(2, 2, 3), Tensor::scalar<int64_t>(4)};
  Status st = one_hot.apply(bad, rng);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("label 4 of field 'labels' is outside [0, 4)"),
            std::string::npos);
  std::vector<FieldSpec> g = kImageFields;
  EXPECT_FALSE(OneHot(4, "x").bind(g).is_ok());  // f32 labels

  Cast cast("labels", DType::kF32);
  std::vector<FieldSpec> h = kImageFields;
  ASSERT_TRUE(cast.bind(h).is_ok());
  EXPECT_EQ(h[1].dtype, DType::kF32);
  Example ex2 = {iota(2, 2, 3), Tensor::scalar<int64_t>(7)};
  ASSERT_TRUE(cast.apply(ex2, rng).is_ok());
  EXPECT_EQ(ex2[1].dtype(), DType::kF32);
  EXPECT_EQ(ex2[1].data<float>()[0], 7.f);
}

TEST(Transforms, MakeTransformsKeepsOrder) {
  Transforms t = make_transforms(RandomCrop(2), RandomHorizontalFlip(0.5), OneHot(3));
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0]->name(), "RandomCrop");
  EXPECT_EQ(t[1]->name(), "RandomHorizontalFlip");
  EXPECT_EQ(t[2]->name(), "OneHot");
}

}  // namespace
}  // namespace tessera::data
