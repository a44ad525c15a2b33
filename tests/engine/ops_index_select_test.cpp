// Tests of engine/ops/index_select.cpp: NonZero, Unique, Trilu, ReverseSequence. Expected values
// are worked out by hand (NumPy semantics: np.nonzero, np.unique, np.triu / np.tril).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(s), v);
}

std::string infer_str(const std::string& op, const TensorType& in, ir::Attributes attrs = {},
                      int nout = 1, int which = 0) {
  auto t = runtime::infer_single_op(registry(), op, {&in}, std::move(attrs), nout);
  return t ? (*t)[static_cast<size_t>(which)].to_string() : "error: " + t.error().message;
}

TEST(NonZero, PositionsAndInference) {
  const Tensor x = f32({2, 3}, {0, 1, 0, 2, 0, 3});
  expect_tensor(run("NonZero", {x})[0], DType::kI64, {2, 3}, {0, 1, 1, 1, 0, 2});
  expect_tensor(run("NonZero", {Tensor::from_bools({3}, {false, false, false})})[0], DType::kI64,
                {1, 0}, {});
  EXPECT_EQ(infer_str("NonZero", TensorType(DType::kBool, {Dim::named("N"), Dim::known(4)})),
            "i64[2, ?]");
}

TEST(Unique, SortedFlat) {
  const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  auto out = run("Unique", {x}, {}, 4);
  expect_tensor(out[0], DType::kF32, {4}, {1, 2, 3, 4});
  expect_tensor(out[1], DType::kI64, {4}, {1, 0, 3, 4});
  expect_tensor(out[2], DType::kI64, {6}, {1, 0, 0, 2, 3, 2});
  expect_tensor(out[3], DType::kI64, {4}, {2, 1, 2, 1});
}

TEST(Unique, FirstOccurrenceOrder) {
  const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  auto out = run("Unique", {x}, {{"sorted", 0}}, 4);
  expect_tensor(out[0], DType::kF32, {4}, {2, 1, 3, 4});
  expect_tensor(out[1], DType::kI64, {4}, {0, 1, 3, 4});
  expect_tensor(out[2], DType::kI64, {6}, {0, 1, 1, 2, 3, 2});
  expect_tensor(out[3], DType::kI64, {4}, {1, 2, 2, 1});
}

TEST(Unique, RowsAndColumns) {
  const Tensor x = Tensor::from_vector<int64_t>({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  auto rows = run("Unique", {x}, {{"axis", 0}}, 4);
  expect_tensor(rows[0], DType::kI64, {2, 3}, {1, 0, 0, 2, 3, 4});
  expect_tensor(rows[2], DType::kI64, {3}, {0, 0, 1});
  expect_tensor(rows[3], DType::kI64, {2}, {2, 1});
  // Columns [1 1 2], [0 0 3], [0 0 4]: sorted lexicographically [0 0 3] < [0 0 4] < [1 1 2].
  auto cols = run("Unique", {x}, {{"axis", -1}}, 4);
  expect_tensor(cols[0], DType::kI64, {3, 3}, {0, 0, 1, 0, 0, 1, 3, 4, 2});
  expect_tensor(cols[1], DType::kI64, {3}, {1, 2, 0});
  expect_tensor(cols[2], DType::kI64, {3}, {2, 0, 1});
}

TEST(Unique, NaNsCountAsOneValueAfterTheNumbers) {
  auto out = run("Unique", {f32({4}, {NAN, 1, NAN, -2})}, {}, 4);
  ASSERT_EQ(out[0].shape(), (Shape{3}));
  EXPECT_EQ(out[0].get(0), -2);
  EXPECT_EQ(out[0].get(1), 1);
  EXPECT_TRUE(std::isnan(out[0].get(2)));
  expect_tensor(out[3], DType::kI64, {3}, {1, 1, 2});
}

TEST(Unique, Inference) {
  const TensorType x(DType::kF32, {Dim::known(3), Dim::known(4)});
  EXPECT_EQ(infer_str("Unique", x, {}, 4, 0), "f32[?]");
  EXPECT_EQ(infer_str("Unique", x, {}, 4, 2), "i64[12]");
  EXPECT_EQ(infer_str("Unique", x, {{"axis", 1}}, 4, 0), "f32[3, ?]");
  EXPECT_EQ(infer_str("Unique", x, {{"axis", 1}}, 4, 2), "i64[4]");
  EXPECT_NE(infer_str("Unique", x, {{"axis", 2}}).find("error"), std::string::npos);
}

TEST(Trilu, UpperLowerAndOffsets) {
  const Tensor x = iota(DType::kI64, {3, 4});  // rows 0..3, 4..7, 8..11
  expect_tensor(run("Trilu", {x})[0], DType::kI64, {3, 4}, {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11});
  expect_tensor(run("Trilu", {x, Tensor::scalar<int64_t>(1)})[0], DType::kI64, {3, 4},
                {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11});
  expect_tensor(run("Trilu", {x, Tensor::scalar<int64_t>(-1)}, {{"upper", 0}})[0], DType::kI64,
                {3, 4}, {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0});
  expect_tensor(run("Trilu", {x, Tensor::scalar<int64_t>(5)}, {{"upper", 0}})[0], DType::kI64,
                {3, 4}, x.to_doubles());
  // Batched: each matrix separately.
  expect_tensor(run("Trilu", {iota(DType::kF32, {2, 2, 2})}, {{"upper", 0}})[0], DType::kF32,
                {2, 2, 2}, {0, 0, 2, 3, 4, 0, 6, 7});
  EXPECT_NE(infer_str("Trilu", TensorType(DType::kF32, {Dim::known(3)})).find("error"),
            std::string::npos);
}

TEST(ReverseSequence, TimeMajorAndBatchMajor) {
  // [time 3, batch 2, 1]: batch 0 reverses 3 steps, batch 1 only 2.
  const Tensor x = iota(DType::kF32, {3, 2, 1});  // t0: 0 1, t1: 2 3, t2: 4 5
  expect_tensor(run("ReverseSequence", {x, i64({2}, {3, 2})})[0], DType::kF32, {3, 2, 1},
                {4, 3, 2, 1, 0, 5});
  const Tensor y = iota(DType::kF32, {2, 3});  // batch-major
  expect_tensor(
      run("ReverseSequence", {y, i64({2}, {1, 3})}, {{"batch_axis", 0}, {"time_axis", 1}})[0],
      DType::kF32, {2, 3}, {0, 1, 2, 5, 4, 3});
  auto bad = runtime::run_single_op(registry(), "ReverseSequence", {y, i64({2}, {4, 1})},
                                    {{"batch_axis", 0}, {"time_axis", 1}});
  EXPECT_FALSE(bad.has_value());
  auto same = runtime::run_single_op(registry(), "ReverseSequence", {y, i64({3}, {1, 1, 1})},
                                     {{"batch_axis", 1}, {"time_axis", 1}});
  EXPECT_FALSE(same.has_value());
}

}  // namespace
}  // namespace tessera
