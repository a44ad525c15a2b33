// Tests of engine/ops/detection.cpp beyond ONNX's backend cases (conformance): properties that
// must hold whatever the data (an identity grid reproduces the image, MaxPool's indices unpool to
// the maxima's places, a constant image aligns to that constant, the box formats agree) and the
// errors of bad boxes, regions and grids.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

Tensor rand_f32(Shape shape, uint32_t seed) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(gen);
  return t;
}
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }

std::string error_of(const std::string& op, const std::vector<const Tensor*>& in, ir::Attributes attrs = {}) {
  auto r = runtime::run_single_op_with_absent(registry(), op, in, std::move(attrs), 1);
  return r ? "no error" : r.error().to_string();
}

TEST(NonMaxSuppression, SuppressesOverlapsKeepsTheRestAndBothFormatsAgree) {
  // Boxes 0 and 1 overlap (IoU 0.81), box 2 is apart; scores 0.9, 0.8, 0.7 in class 0; class 1
  // scores box 2 highest.
  const Tensor corners = f32({1, 3, 4}, {0, 0, 10, 10, 1, 1, 11, 10, 20, 20, 30, 30});
  const Tensor centers = f32({1, 3, 4}, {5, 5, 10, 10, 5.5f, 6, 9, 10, 25, 25, 10, 10});
  const Tensor scores = f32({1, 2, 3}, {0.9f, 0.8f, 0.7f, 0.1f, 0.2f, 0.95f});
  const Tensor max_out = i64({}, {10}), iou = f32({}, {0.5f}), thr = f32({}, {0.15f});
  auto a = runtime::run_single_op_with_absent(registry(), "NonMaxSuppression", {&corners, &scores, &max_out, &iou, &thr});
  ASSERT_TRUE(a) << a.error().to_string();
  expect_tensor((*a)[0], DType::kI64, {4, 3}, {0, 0, 0, 0, 0, 2, 0, 1, 2, 0, 1, 1});
  auto b = runtime::run_single_op_with_absent(registry(), "NonMaxSuppression", {&centers, &scores, &max_out, &iou, &thr},
                                              {{"center_point_box", int64_t{1}}});
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_TRUE((*a)[0].equals((*b)[0]));
  // max_output_boxes_per_class 1, and absent (0: nothing selected).
  const Tensor one = i64({}, {1});
  auto c = runtime::run_single_op_with_absent(registry(), "NonMaxSuppression", {&corners, &scores, &one, &iou});
  ASSERT_TRUE(c);
  expect_tensor((*c)[0], DType::kI64, {2, 3}, {0, 0, 0, 0, 1, 2});
  auto d = runtime::run_single_op_with_absent(registry(), "NonMaxSuppression", {&corners, &scores});
  ASSERT_TRUE(d);
  EXPECT_EQ((*d)[0].shape(), (Shape{0, 3}));
}

TEST(NonMaxSuppression, BadBoxesAndThresholdsAreErrors) {
  const Tensor boxes5 = rand_f32({1, 3, 5}, 1), scores = rand_f32({1, 1, 3}, 2), scores4 = rand_f32({1, 1, 4}, 3);
  const Tensor boxes = rand_f32({1, 3, 4}, 4), bad_iou = f32({}, {1.5f}), max_out = i64({}, {3});
  EXPECT_NE(error_of("NonMaxSuppression", {&boxes5, &scores}).find("4 coordinates"), std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {&boxes, &scores4}).find("disagree on the box count"), std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {&boxes, &scores, &max_out, &bad_iou}).find("iou_threshold must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {&boxes, &scores}, {{"center_point_box", int64_t{2}}}).find("center_point_box"),
            std::string::npos);
}

TEST(RoiAlign, AConstantImageAlignsToItsConstantAndBadIndicesAreErrors) {
  Tensor x(DType::kF32, {2, 3, 8, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i / 64);  // per (n, c) plane
  const Tensor rois = f32({2, 4}, {0.5f, 1, 6, 7.5f, 2, 2, 4, 3}), idx = i64({2}, {1, 0});
  for (const char* mode : {"avg", "max"}) {
    auto y = runtime::run_single_op(registry(), "RoiAlign", {x, rois, idx},
                                    {{"output_height", int64_t{3}}, {"output_width", int64_t{2}}, {"mode", mode}});
    ASSERT_TRUE(y) << y.error().to_string();
    ASSERT_EQ((*y)[0].shape(), (Shape{2, 3, 3, 2}));
    if (std::string(mode) == "avg")
      for (int64_t i = 0; i < (*y)[0].numel(); ++i) {
        const int64_t r = i / 18, c = (i / 6) % 3;
        EXPECT_NEAR((*y)[0].get(i), static_cast<double>((r == 0 ? 1 : 0) * 3 + c), 1e-5) << i;
      }
  }
  const Tensor bad = i64({2}, {0, 2});
  EXPECT_NE(error_of("RoiAlign", {&x, &rois, &bad}).find("batch_indices[1] = 2 is outside [0, 2)"), std::string::npos);
  const Tensor huge = f32({2, 4}, {0, 0, 1e30f, 1e30f, 0, 0, NAN, 1});
  EXPECT_NE(error_of("RoiAlign", {&x, &huge, &idx}).find("samples per bin (at most 2^20)"), std::string::npos);
}

TEST(MaxUnpool, MaxPoolIndicesUnpoolToTheMaximaPlaces) {
  const Tensor x = rand_f32({2, 3, 6, 6}, 7);
  const ir::Attributes pool{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
  auto p = runtime::run_single_op(registry(), "MaxPool", {x}, pool, 2);
  ASSERT_TRUE(p) << p.error().to_string();
  auto u = runtime::run_single_op(registry(), "MaxUnpool", {(*p)[0], (*p)[1]}, pool);
  ASSERT_TRUE(u) << u.error().to_string();
  ASSERT_EQ((*u)[0].shape(), x.shape());
  // Every non-zero of the unpooled tensor is the input at that place, and each window has one.
  int64_t nonzero = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    if ((*u)[0].get(i) != 0) {
      EXPECT_EQ((*u)[0].get(i), x.get(i));
      ++nonzero;
    }
  EXPECT_EQ(nonzero, 2 * 3 * 3 * 3);
  const Tensor bad = i64({1, 1, 1, 1}, {99}), one = f32({1, 1, 1, 1}, {1});
  EXPECT_NE(error_of("MaxUnpool", {&one, &bad}, pool).find("outside the unpooled shape"), std::string::npos);
}

TEST(GridSample, AnIdentityGridReproducesTheImageInEveryMode) {
  const int64_t H = 4, W = 5;
  const Tensor x = rand_f32({1, 2, H, W}, 9);
  Tensor grid(DType::kF32, {1, H, W, 2});
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < W; ++j) {
      grid.data<float>()[(i * W + j) * 2] = -1.f + 2.f * static_cast<float>(j) / static_cast<float>(W - 1);
      grid.data<float>()[(i * W + j) * 2 + 1] = -1.f + 2.f * static_cast<float>(i) / static_cast<float>(H - 1);
    }
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"}) {
      SCOPED_TRACE(std::string(mode) + " " + pad);
      auto y = runtime::run_single_op(registry(), "GridSample", {x, grid},
                                      {{"align_corners", int64_t{1}}, {"mode", mode}, {"padding_mode", pad}});
      ASSERT_TRUE(y) << y.error().to_string();
      for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR((*y)[0].get(i), x.get(i), 1e-5) << i;
    }
  // Far outside: zeros gives 0, border the corner pixel.
  const Tensor far = f32({1, 1, 1, 2}, {-5, -5});
  auto z = runtime::run_single_op(registry(), "GridSample", {x, far});
  auto b = runtime::run_single_op(registry(), "GridSample", {x, far}, {{"padding_mode", "border"}});
  ASSERT_TRUE(z && b);
  EXPECT_EQ((*z)[0].get(0), 0.0);
  EXPECT_NEAR((*b)[0].get(0), x.get(0), 1e-6);
  // Non-finite and absurdly far coordinates sample nothing (0), without undefined casts (UBSan).
  const Tensor odd = f32({1, 1, 3, 2}, {NAN, 0, 1e30f, 0, -INFINITY, 1e38f});
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"}) {
      auto y = runtime::run_single_op(registry(), "GridSample", {x, odd}, {{"mode", mode}, {"padding_mode", pad}});
      ASSERT_TRUE(y) << y.error().to_string();
      EXPECT_EQ((*y)[0].get(0), 0.0);
    }
  const Tensor grid3 = rand_f32({1, 2, 2, 3}, 10);
  EXPECT_NE(error_of("GridSample", {&x, &grid3}).find("must end in 2"), std::string::npos);
  EXPECT_NE(error_of("GridSample", {&x, &grid}, {{"mode", "area"}}).find("mode must be"), std::string::npos);
}

}  // namespace
}  // namespace tessera
