// Tests for the host tensor and dtypes (engine/core/tensor.cpp, dtype.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/tensor.h"

namespace tessera {
namespace {

TEST(Tensor, ZeroFilledAlignedAndShaped) {
  Tensor t(DType::kF32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.f);
}

TEST(Tensor, ScalarAndEmpty) {
  Tensor s = Tensor::scalar<int64_t>(7);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.get(0), 7);
  Tensor e(DType::kF64, {0, 5});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.nbytes(), 0u);
  EXPECT_TRUE(e.equals(e.clone()));
}

TEST(Tensor, CreateRejectsHugeAndNegativeShapes) {
  auto huge = Tensor::create(DType::kF32, {1 << 20, 1 << 20, 1 << 20});
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("would need 4.61e+18 bytes"), std::string::npos);
  auto neg = Tensor::create(DType::kF32, {2, -1});
  ASSERT_FALSE(neg.has_value());
  EXPECT_NE(neg.error().message.find("negative"), std::string::npos);
}

TEST(Tensor, EmptyTensorWithHugeDimsHasSaturatedStrides) {
  // Found by onnx_fuzz: a zero dimension lets any other dimension through checked_numel, and the
  // strides of such a shape must not overflow (they saturate; nothing is addressed through them).
  const int64_t big = int64_t{1} << 40;
  auto t = Tensor::create(DType::kF32, {0, big, big, 99});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->numel(), 0);
  EXPECT_EQ(t->strides()[3], 1);
  EXPECT_EQ(t->strides()[2], 99);
  EXPECT_EQ(t->strides()[1], big * 99);
  EXPECT_EQ(t->strides()[0], INT64_MAX);
}

TEST(Tensor, ViewsShareStorageAndCloneDoesNot) {
  Tensor t = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor transposed = t.view({2, 2}, {1, 2}, 0);
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.to_doubles(), (std::vector<double>{1, 3, 2, 4}));
  Tensor c = transposed.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_doubles(), (std::vector<double>{1, 3, 2, 4}));
  t.data<float>()[1] = 20;
  EXPECT_EQ(transposed.get(2), 20);  // shared
  EXPECT_EQ(c.get(2), 2);            // copied
}

TEST(Tensor, ReshapeChecksCount) {
  Tensor t(DType::kI32, {2, 3});
  EXPECT_TRUE(t.reshape({3, 2}).has_value());
  auto bad = t.reshape({4, 2});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("cannot reshape [2, 3] to [4, 2]"), std::string::npos);
}

TEST(Tensor, CastTruncatesTowardZeroLikeOnnx) {
  Tensor t = Tensor::from_vector<float>({4}, {1.7f, -1.7f, 0.f, 2.5f});
  EXPECT_EQ(t.cast(DType::kI32).to_doubles(), (std::vector<double>{1, -1, 0, 2}));
  EXPECT_EQ(t.cast(DType::kBool).to_doubles(), (std::vector<double>{1, 1, 0, 1}));
}

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_FALSE(dtype_from_name("f128").has_value());
}

TEST(DType, HalfConversionIsCorrectlyRounded) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half(65536.f), 0x7c00);               // overflow -> inf
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -25)), 0x0000);  // tie rounds to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(3.f, -26)), 0x0001);  // above the tie
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  // Every finite half survives half -> float -> half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(DType, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.f, -8)), 0x3f80);  // tie -> even
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.f, -8)), 0x3f82);
}

// u64 elements past the type's range (+inf included) saturate instead of an undefined cast
// (the tir fuzzer's finding: a constant of inf stored as u64).
TEST(Tensor, U64BeyondItsRangeSaturates) {
  Tensor t(DType::kU64, {4});
  t.set(0, std::numeric_limits<double>::infinity());
  t.set(1, 1e30);
  t.set(2, 0x1p63);
  t.set(3, 7.0);
  EXPECT_EQ(t.data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(t.data<uint64_t>()[1], UINT64_MAX);
  EXPECT_EQ(t.data<uint64_t>()[2], uint64_t{1} << 63);
  EXPECT_EQ(t.data<uint64_t>()[3], 7u);
}

}  // namespace
}  // namespace tessera
