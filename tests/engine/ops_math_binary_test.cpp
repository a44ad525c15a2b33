// Tests for engine/ops/math_binary.cpp: Max Min Sum Mean, Mod, BitShift, And Or Xor Not,
// LessOrEqual GreaterOrEqual and PRelu against hand-computed values, with broadcasting, NaN,
// integer edge cases, inference and error paths.
#include <gtest/gtest.h>

#include "tests/engine/ops_math_test_util.h"

namespace tessera::mathtest {
namespace {

// ---- Max Min Sum Mean ----

TEST(MathVariadic, MaxMinSumMeanOfThree) {
  const Tensor a = f32({3}, {3, 2, 1}), b = f32({3}, {1, 4, 4}), c = f32({3}, {2, 5, 3});
  expect_near(run1("Max", {a, b, c}), DType::kF32, {3}, {3, 5, 4});
  expect_near(run1("Min", {a, b, c}), DType::kF32, {3}, {1, 2, 1});
  expect_near(run1("Sum", {a, b, c}), DType::kF32, {3}, {6, 11, 8});
  expect_near(run1("Mean", {a, b, c}), DType::kF32, {3}, {2, 11.0 / 3, 8.0 / 3});
}

TEST(MathVariadic, OneInputIsACopy) {
  const Tensor a = f32({2}, {-1, 7});
  for (const char* op : {"Max", "Min", "Sum", "Mean"})
    expect_near(run1(op, {a}), DType::kF32, {2}, {-1, 7});
}

TEST(MathVariadic, BroadcastsAllInputs) {
  // [2,1] with [3] with [] -> [2,3]
  const Tensor a = f32({2, 1}, {1, 10}), b = f32({3}, {0, 5, 20}), c = f32({}, {2});
  expect_near(run1("Max", {a, b, c}), DType::kF32, {2, 3}, {2, 5, 20, 10, 10, 20});
  expect_near(run1("Sum", {a, b, c}), DType::kF32, {2, 3}, {3, 8, 23, 12, 17, 32});
  expect_near(run1("Mean", {a, b}), DType::kF32, {2, 3}, {0.5, 3, 10.5, 5, 7.5, 15});
}

TEST(MathVariadic, NaNPropagatesThroughMaxAndMin) {
  const Tensor a = f32({3}, {1, NAN, 3}), b = f32({3}, {NAN, 2, 1});
  expect_near(run1("Max", {a, b}), DType::kF32, {3}, {kNaN, kNaN, 3});
  expect_near(run1("Min", {a, b}), DType::kF32, {3}, {kNaN, kNaN, 1});
}

TEST(MathVariadic, IntegerAndHalfTypes) {
  expect_tensor(run1("Max", {i8({3}, {-128, 0, 127}), i8({3}, {127, -1, 0})}), DType::kI8, {3},
                {127, 0, 127});
  expect_tensor(run1("Min", {u8({3}, {0, 200, 7}), u8({3}, {255, 100, 7})}), DType::kU8, {3},
                {0, 100, 7});
  expect_tensor(run1("Max", {i64({2}, {int64_t{1} << 60, -5}), i64({2}, {3, -4})}), DType::kI64,
                {2}, {static_cast<double>(int64_t{1} << 60), -4});
  expect_near(run1("Sum", {of(DType::kF16, {2}, {1.5, 2}), of(DType::kF16, {2}, {0.25, -4})}),
              DType::kF16, {2}, {1.75, -2});
}

TEST(MathVariadic, Int16AndWideUnsignedTypes) {
  expect_tensor(run1("Max", {Tensor::from_vector<int16_t>({2}, {-32768, 5}), Tensor::from_vector<int16_t>({2}, {-1, 32767})}),
                DType::kI16, {2}, {-1, 32767});
  expect_tensor(run1("Min", {Tensor::from_vector<uint16_t>({2}, {65535, 1}), Tensor::from_vector<uint16_t>({}, {2})}),
                DType::kU16, {2}, {2, 1});
  expect_tensor(run1("Add", {Tensor::from_vector<uint32_t>({2}, {4000000000u, 1}), Tensor::from_vector<uint32_t>({2}, {1, 2})}),
                DType::kU32, {2}, {4000000001.0, 3});
  // u64 above 2^63: exact (compared as integers, not through double).
  const uint64_t big = (uint64_t{1} << 63) + 1;
  const Tensor m = run1("Max", {Tensor::from_vector<uint64_t>({2}, {big, 0}), Tensor::from_vector<uint64_t>({2}, {7, 9})});
  ASSERT_EQ(m.dtype(), DType::kU64);
  EXPECT_EQ(m.data<uint64_t>()[0], big);
  EXPECT_EQ(m.data<uint64_t>()[1], 9u);
  // Unsigned Mod and Cast between the new types: saturation from floats, wrapping between ints.
  expect_tensor(run1("Mod", {Tensor::from_vector<uint32_t>({2}, {7, 4000000000u}), Tensor::from_vector<uint32_t>({2}, {3, 7})}),
                DType::kU32, {2}, {1, 4000000000u % 7});
  expect_tensor(run1("Cast", {f32({3}, {-5, 70000, 12.9f})}, {{"to", "u16"}}), DType::kU16, {3}, {0, 65535, 12});
  expect_tensor(run1("Cast", {Tensor::from_vector<int32_t>({2}, {65537, -1})}, {{"to", "i16"}}), DType::kI16, {2}, {1, -1});
  expect_infer_error(infer("Max", {tt(DType::kU16, {2}), tt(DType::kI16, {2})}), "element type");
}

TEST(MathVariadic, EmptyBroadcast) {
  expect_near(run1("Sum", {f32({0, 3}, {}), f32({3}, {1, 2, 3})}), DType::kF32, {0, 3}, {});
}

TEST(MathVariadic, InferenceAndErrors) {
  auto t = infer("Max", {tt(DType::kF32, {-1, 1}), tt(DType::kF32, {4})});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ((*t)[0].to_string(), "f32[?, 4]");
  expect_infer_error(infer("Max", {tt(DType::kF32, {2}), tt(DType::kI32, {2})}), "element type");
  expect_infer_error(infer("Sum", {tt(DType::kI32, {2}), tt(DType::kI32, {2})}), "allowed");
  expect_infer_error(infer("Min", {tt(DType::kBool, {2})}), "allowed");
  expect_infer_error(infer("Mean", {tt(DType::kF32, {2}), tt(DType::kF32, {3})}), "broadcast");
  fail("Max", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
}

// ---- Mod ----

TEST(MathMod, IntegerModTakesTheDivisorsSign) {
  const Tensor a = i32({6}, {-4, 7, 5, 4, -7, 8}), b = i32({6}, {2, -3, 8, -2, 3, 5});
  expect_tensor(run1("Mod", {a, b}), DType::kI32, {6}, {0, -2, 5, 0, 2, 3});  // numpy.mod
}

TEST(MathMod, FmodTakesTheDividendsSign) {
  const Tensor a = i64({6}, {-4, 7, 5, 4, -7, 8}), b = i64({6}, {2, -3, 8, -2, 3, 5});
  expect_tensor(run1("Mod", {a, b}, {{"fmod", 1}}), DType::kI64, {6},
                {0, 1, 5, 0, -1, 3});  // numpy.fmod
  const Tensor x = f32({6}, {-4.3f, 7.2f, 5.0f, 4.3f, -7.2f, 8.0f}),
               y = f32({6}, {2.1f, -3.4f, 8.0f, -2.1f, 3.4f, 5.0f});
  expect_near(run1("Mod", {x, y}, {{"fmod", 1}}), DType::kF32, {6},
              {-0.100000381, 0.399999619, 5, 0.100000381, -0.399999619, 3});
  expect_near(run1("Mod", {f64({2}, {1, kInf}), f64({2}, {0, 2})}, {{"fmod", 1}}), DType::kF64, {2},
              {kNaN, kNaN});
}

TEST(MathMod, BroadcastUnsignedAndMinByMinusOne) {
  expect_tensor(run1("Mod", {i32({2, 2}, {5, -5, 9, 10}), i32({1}, {3})}), DType::kI32, {2, 2},
                {2, 1, 0, 1});
  expect_tensor(run1("Mod", {u8({3}, {250, 7, 0}), u8({3}, {7, 250, 3})}), DType::kU8, {3},
                {5, 7, 0});
  expect_tensor(run1("Mod", {i32({1}, {INT32_MIN}), i32({1}, {-1})}), DType::kI32, {1}, {0});
}

TEST(MathMod, Errors) {
  EXPECT_NE(fail("Mod", {i32({2}, {1, 2}), i32({2}, {1, 0})}).find("by zero"), std::string::npos);
  expect_infer_error(infer("Mod", {tt(DType::kF32, {2}), tt(DType::kF32, {2})}), "fmod=1");
  expect_infer_error(infer("Mod", {tt(DType::kI32, {2}), tt(DType::kI64, {2})}), "element type");
  expect_infer_error(infer("Mod", {tt(DType::kBool, {2}), tt(DType::kBool, {2})}), "allowed");
}

// ---- BitShift ----

TEST(MathBitShift, LeftAndRight) {
  const Tensor x = u8({3}, {16, 4, 1}), y = u8({3}, {1, 2, 3});
  expect_tensor(run1("BitShift", {x, y}, {{"direction", "LEFT"}}), DType::kU8, {3}, {32, 16, 8});
  expect_tensor(run1("BitShift", {x, y}, {{"direction", "RIGHT"}}), DType::kU8, {3}, {8, 1, 0});
}

TEST(MathBitShift, OverflowBroadcastAndWideShifts) {
  const Tensor x = u8({3}, {255, 129, 3});
  expect_tensor(run1("BitShift", {x, u8({}, {1})}, {{"direction", "LEFT"}}), DType::kU8, {3},
                {254, 2, 6});
  expect_tensor(run1("BitShift", {x, u8({1}, {8})}, {{"direction", "LEFT"}}), DType::kU8, {3},
                {0, 0, 0});
  expect_tensor(run1("BitShift", {x, u8({1}, {200})}, {{"direction", "RIGHT"}}), DType::kU8, {3},
                {0, 0, 0});
}

TEST(MathBitShift, WideUnsignedTypes) {
  const Tensor x16 = Tensor::from_vector<uint16_t>({2}, {0x8001, 3});
  expect_tensor(run1("BitShift", {x16, Tensor::from_vector<uint16_t>({}, {1})}, {{"direction", "LEFT"}}),
                DType::kU16, {2}, {2, 6});
  const Tensor x64 = Tensor::from_vector<uint64_t>({2}, {uint64_t{1} << 63, 5});
  const Tensor y = run1("BitShift", {x64, Tensor::from_vector<uint64_t>({2}, {63, 64})}, {{"direction", "RIGHT"}});
  ASSERT_EQ(y.dtype(), DType::kU64);
  EXPECT_EQ(y.data<uint64_t>()[0], 1u);
  EXPECT_EQ(y.data<uint64_t>()[1], 0u);  // the bit width or more gives 0
}

TEST(MathBitShift, Errors) {
  expect_infer_error(
      infer("BitShift", {tt(DType::kU8, {2}), tt(DType::kU8, {2})}, {{"direction", "UP"}}),
      "direction");
  expect_infer_error(
      infer("BitShift", {tt(DType::kI32, {2}), tt(DType::kI32, {2})}, {{"direction", "LEFT"}}),
      "allowed");
  expect_infer_error(infer("BitShift", {tt(DType::kU8, {2}), tt(DType::kU8, {2})}),
                     "direction");  // required
}

// ---- Logic ----

TEST(MathLogic, TruthTables) {
  const Tensor a = bools({4}, {false, false, true, true}),
               b = bools({4}, {false, true, false, true});
  expect_tensor(run1("And", {a, b}), DType::kBool, {4}, {0, 0, 0, 1});
  expect_tensor(run1("Or", {a, b}), DType::kBool, {4}, {0, 1, 1, 1});
  expect_tensor(run1("Xor", {a, b}), DType::kBool, {4}, {0, 1, 1, 0});
  expect_tensor(run1("Not", {a}), DType::kBool, {4}, {1, 1, 0, 0});
}

TEST(MathLogic, BroadcastBothWays) {
  // [1,2,1] with [3,1,2] -> [3,2,2]
  const Tensor a = bools({1, 2, 1}, {true, false});
  const Tensor b = bools({3, 1, 2}, {true, false, false, true, true, true});
  expect_tensor(run1("And", {a, b}), DType::kBool, {3, 2, 2}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0});
  expect_tensor(run1("Xor", {a, b}), DType::kBool, {3, 2, 2}, {0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1});
  expect_tensor(run1("Not", {bools({0}, {})}), DType::kBool, {0}, {});
}

TEST(MathLogic, OnlyBool) {
  expect_infer_error(infer("And", {tt(DType::kF32, {2}), tt(DType::kF32, {2})}), "allowed");
  expect_infer_error(infer("Or", {tt(DType::kBool, {2}), tt(DType::kU8, {2})}), "element type");
  expect_infer_error(infer("Not", {tt(DType::kI32, {2})}), "allowed");
  fail("Xor", {bools({2}, {true, false}), bools({3}, {true, false, true})});
}

TEST(MathCompare, LessOrEqualAndGreaterOrEqual) {
  const Tensor a = f32({4}, {1, 2, 3, NAN}), b = f32({4}, {2, 2, 2, 2});
  expect_tensor(run1("LessOrEqual", {a, b}), DType::kBool, {4}, {1, 1, 0, 0});
  expect_tensor(run1("GreaterOrEqual", {a, b}), DType::kBool, {4}, {0, 1, 1, 0});
  // i64 with broadcasting: [2,1] against [3]
  const Tensor c = i64({2, 1}, {0, 5}), d = i64({3}, {-1, 0, 5});
  expect_tensor(run1("LessOrEqual", {c, d}), DType::kBool, {2, 3}, {0, 1, 1, 0, 0, 1});
  expect_tensor(run1("GreaterOrEqual", {c, d}), DType::kBool, {2, 3}, {1, 1, 0, 1, 1, 1});
  auto t = infer("GreaterOrEqual", {tt(DType::kF32, {3, 1}), tt(DType::kF32, {4})});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "bool[3, 4]");
  expect_infer_error(infer("LessOrEqual", {tt(DType::kBool, {2}), tt(DType::kBool, {2})}),
                     "allowed");
}

// ---- PRelu ----

TEST(MathPRelu, SlopeBroadcastsOntoX) {
  const Tensor x = f32({2, 3}, {-2, -1, 0, 1, 2, -3}), slope = f32({3}, {0.1f, 0.2f, 0.3f});
  expect_near(run1("PRelu", {x, slope}), DType::kF32, {2, 3}, {-0.2, -0.2, 0, 1, 2, -0.9});
  expect_near(run1("PRelu", {x, f32({2, 1}, {0.5, 2})}), DType::kF32, {2, 3},
              {-1, -0.5, 0, 1, 2, -6});
  expect_tensor(run1("PRelu", {i32({3}, {-3, 0, 3}), i32({}, {2})}), DType::kI32, {3}, {-6, 0, 3});
}

TEST(MathPRelu, SlopeMustNotGrowX) {
  expect_infer_error(infer("PRelu", {tt(DType::kF32, {3}), tt(DType::kF32, {2, 3})}),
                     "does not broadcast");
  expect_infer_error(infer("PRelu", {tt(DType::kF32, {2, 3}), tt(DType::kF32, {2})}),
                     "does not broadcast");
  expect_infer_error(infer("PRelu", {tt(DType::kF32, {2}), tt(DType::kF64, {2})}), "element type");
  expect_infer_error(infer("PRelu", {tt(DType::kU8, {2}), tt(DType::kU8, {2})}), "allowed");
  auto t = infer("PRelu", {tt(DType::kF32, {-1, 3}), tt(DType::kF32, {3})});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[0].to_string(), "f32[?, 3]");
}

}  // namespace
}  // namespace tessera::mathtest
