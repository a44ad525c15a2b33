// Tests of engine/ops/signal.cpp and linalg.cpp beyond ONNX's backend cases (conformance):
// identities a transform must satisfy (the inverse undoes it, an impulse has a flat spectrum,
// padding by dft_length is zero padding, STFT frames are DFTs of slices), the windows' symmetry,
// the determinant's product rule, and the errors.
#include <gtest/gtest.h>

#include <random>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

Tensor rand_f64(Shape shape, uint32_t seed) {
  Tensor t(DType::kF64, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(gen);
  return t;
}
Tensor i64s(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }

void expect_near_all(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.get(i), b.get(i), tol) << "element " << i;
}

TEST(Dft, TheInverseUndoesItAndAnImpulseIsFlat) {
  const Tensor x = rand_f64({2, 7, 3, 2}, 1);  // complex, signal axis 1
  auto f = runtime::run_single_op(registry(), "DFT", {x});
  ASSERT_TRUE(f) << f.error().to_string();
  auto back = runtime::run_single_op(registry(), "DFT", {(*f)[0]}, {{"inverse", int64_t{1}}});
  ASSERT_TRUE(back);
  expect_near_all((*back)[0], x, 1e-12);
  // A real impulse at 0 transforms to 1 + 0i everywhere.
  Tensor imp(DType::kF64, {1, 8, 1});
  imp.data<double>()[0] = 1;
  auto s = runtime::run_single_op(registry(), "DFT", {imp});
  ASSERT_TRUE(s);
  for (int64_t k = 0; k < 8; ++k) {
    EXPECT_NEAR((*s)[0].get(2 * k), 1, 1e-12);
    EXPECT_NEAR((*s)[0].get(2 * k + 1), 0, 1e-12);
  }
}

TEST(Dft, OnesidedIsTheFirstHalfAndDftLengthZeroPads) {
  const Tensor x = rand_f64({1, 6, 1}, 2);
  auto full = runtime::run_single_op(registry(), "DFT", {x});
  auto half = runtime::run_single_op(registry(), "DFT", {x}, {{"onesided", int64_t{1}}});
  ASSERT_TRUE(full && half);
  ASSERT_EQ((*half)[0].shape(), (Shape{1, 4, 2}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_NEAR((*half)[0].get(i), (*full)[0].get(i), 1e-12);
  Tensor padded(DType::kF64, {1, 10, 1});
  for (int64_t i = 0; i < 6; ++i) padded.data<double>()[i] = x.get(i);
  auto p = runtime::run_single_op(registry(), "DFT", {padded});
  auto l = runtime::run_single_op(registry(), "DFT", {x, i64s({}, {10})});
  ASSERT_TRUE(p && l);
  expect_near_all((*l)[0], (*p)[0], 1e-12);
}

TEST(Stft, FramesAreTheDftsOfWindowedSlices) {
  const Tensor x = rand_f64({1, 20, 1}, 3);
  const Tensor window = rand_f64({8}, 4);
  auto s = runtime::run_single_op(registry(), "STFT", {x, i64s({}, {5}), window});
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_EQ((*s)[0].shape(), (Shape{1, 3, 5, 2}));
  for (int64_t f = 0; f < 3; ++f) {
    Tensor slice(DType::kF64, {1, 8, 1});
    for (int64_t t = 0; t < 8; ++t) slice.data<double>()[t] = x.get(f * 5 + t) * window.get(t);
    auto d = runtime::run_single_op(registry(), "DFT", {slice}, {{"onesided", int64_t{1}}});
    ASSERT_TRUE(d);
    for (int64_t i = 0; i < 10; ++i) EXPECT_NEAR((*s)[0].get(f * 10 + i), (*d)[0].get(i), 1e-12) << f << " " << i;
  }
  const Tensor short_x = rand_f64({1, 4, 1}, 5);
  auto e = runtime::run_single_op(registry(), "STFT", {short_x, i64s({}, {2}), window});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().to_string().find("shorter than one frame"), std::string::npos);
}

TEST(Windows, SymmetricIsSymmetricAndPeriodicIsTheLongerSymmetricCut) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    SCOPED_TRACE(op);
    auto sym = runtime::run_single_op(registry(), op, {i64s({}, {9})}, {{"periodic", int64_t{0}}});
    auto per = runtime::run_single_op(registry(), op, {i64s({}, {8})});
    ASSERT_TRUE(sym && per);
    for (int64_t n = 0; n < 9; ++n) EXPECT_NEAR((*sym)[0].get(n), (*sym)[0].get(8 - n), 1e-6);
    for (int64_t n = 0; n < 8; ++n) EXPECT_NEAR((*per)[0].get(n), (*sym)[0].get(n), 1e-6);
    EXPECT_EQ((*per)[0].dtype(), DType::kF32);
  }
  auto bad = runtime::run_single_op(registry(), "HannWindow", {i64s({}, {4})}, {{"output_datatype", int64_t{8}}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("output_datatype 8"), std::string::npos);
}

TEST(MelWeightMatrix, FiltersAreTrianglesWithinTheBand) {
  auto m = runtime::run_single_op(registry(), "MelWeightMatrix",
                                  {i64s({}, {8}), i64s({}, {64}), i64s({}, {8000}), Tensor::scalar<float>(100),
                                   Tensor::scalar<float>(4000)});
  ASSERT_TRUE(m) << m.error().to_string();
  ASSERT_EQ((*m)[0].shape(), (Shape{33, 8}));
  for (int64_t i = 0; i < (*m)[0].numel(); ++i) {
    EXPECT_GE((*m)[0].get(i), 0);
    EXPECT_LE((*m)[0].get(i), 1);
  }
  auto bad = runtime::run_single_op(registry(), "MelWeightMatrix",
                                    {i64s({}, {8}), i64s({}, {64}), i64s({}, {8000}), Tensor::scalar<float>(100),
                                     Tensor::scalar<float>(5000)});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("sample_rate / 2"), std::string::npos);
}

TEST(Det, ProductRuleSingularAndErrors) {
  const Tensor a = rand_f64({4, 4}, 6), b = rand_f64({4, 4}, 7);
  auto ab = runtime::run_single_op(registry(), "MatMul", {a, b});
  ASSERT_TRUE(ab);
  auto da = runtime::run_single_op(registry(), "Det", {a});
  auto db = runtime::run_single_op(registry(), "Det", {b});
  auto dab = runtime::run_single_op(registry(), "Det", {(*ab)[0]});
  ASSERT_TRUE(da && db && dab);
  EXPECT_NEAR((*dab)[0].get(0), (*da)[0].get(0) * (*db)[0].get(0), 1e-12);
  // A batch with a singular matrix (two equal rows) and a permutation (det -1).
  const Tensor batch = Tensor::from_vector<double>({2, 2, 2}, {1, 2, 1, 2, 0, 1, 1, 0});
  auto d = runtime::run_single_op(registry(), "Det", {batch});
  ASSERT_TRUE(d);
  expect_values((*d)[0], {2}, {0, -1});
  auto bad = runtime::run_single_op(registry(), "Det", {rand_f64({2, 3}, 8)});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("square"), std::string::npos);
}

}  // namespace
}  // namespace tessera
