// Tests of engine/ops/nn.cpp: MatMul, Gemm, Softmax, LogSoftmax, and the nn family's schemas.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

// ---- MatMul ----

TEST(MatMul, TwoByTwoD) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_values(run("MatMul", {a, b})[0], {2, 2}, {58, 64, 139, 154});
}

TEST(MatMul, OneDPromotion) {
  const Tensor v = f32({3}, {1, 2, 3});
  const Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_values(run("MatMul", {v, b})[0], {2}, {58, 64});  // [3] x [3, 2] -> [2]
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run("MatMul", {a, f32({3}, {1, 1, 1})})[0], {2}, {6, 15});  // [2, 3] x [3] -> [2]
  expect_values(run("MatMul", {v, f32({3}, {4, 5, 6})})[0], {}, {32});      // dot product -> scalar
}

// Naive batched matmul over explicit broadcast indices, independent of the kernel.
TEST(MatMul, BatchBroadcast) {
  std::vector<float> av(2 * 1 * 2 * 3), bv(3 * 3 * 2);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) - 4;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 7) * 0.5f;
  const Tensor a = f32({2, 1, 2, 3}, av);  // batch [2, 1]
  const Tensor b = f32({3, 3, 2}, bv);     // batch [3] -> broadcast [2, 3]
  const Tensor y = run("MatMul", {a, b})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2, 2}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          double want = 0;
          for (int k = 0; k < 3; ++k) want += av[i * 6 + m * 3 + k] * bv[j * 6 + k * 2 + n];
          EXPECT_NEAR(y.get(((i * 3 + j) * 2 + m) * 2 + n), want, 1e-5);
        }
}

TEST(MatMul, NonContiguousAndOtherTypes) {
  // A^T as a strided view of a [3, 2] tensor.
  const Tensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  const Tensor a = at.view({2, 3}, {1, 2}, 0);
  ASSERT_FALSE(a.is_contiguous());
  const Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_values(run("MatMul", {a, b})[0], {2, 2}, {58, 64, 139, 154});
  const Tensor y64 = run("MatMul", {a.cast(DType::kF64), b.cast(DType::kF64)})[0];
  EXPECT_EQ(y64.dtype(), DType::kF64);
  expect_values(y64, {2, 2}, {58, 64, 139, 154});
  const Tensor yi = run("MatMul", {a.cast(DType::kI32), b.cast(DType::kI32)})[0];
  EXPECT_EQ(yi.dtype(), DType::kI32);
  expect_values(yi, {2, 2}, {58, 64, 139, 154});
  const Tensor yh = run("MatMul", {a.cast(DType::kF16), b.cast(DType::kF16)})[0];
  EXPECT_EQ(yh.dtype(), DType::kF16);
  expect_values(yh, {2, 2}, {58, 64, 139, 154});
}

TEST(MatMul, InferSymbolicBatch) {
  const TensorType a(DType::kF32, {Dim::named("N"), Dim::known(1), Dim::known(4), Dim::known(8)});
  const TensorType b(DType::kF32, {Dim::known(3), Dim::known(8), Dim::known(5)});
  auto t = runtime::infer_single_op(registry(), "MatMul", {&a, &b});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 3, 4, 5]");
}

TEST(MatMul, InnerDimMismatchNamesNode) {
  ir::Graph g("t");
  const ir::ValueId x =
      g.add_input("x", TensorType(DType::kF32, {Dim::named("N"), Dim::known(784)}));
  const ir::ValueId w = g.add_param("w", Tensor(DType::kF32, {100, 10}));
  const ir::NodeId n = g.add_node("MatMul", {x, w}, 1, "fc1");
  g.set_outputs({g.node(n).outputs[0]});
  Status st = ops::infer_types(g, registry());
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().node, n);
  EXPECT_NE(st.error().message.find("fc1"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("784"), std::string::npos) << st.error().message;
  // The kernel itself checks too.
  auto r = runtime::run_single_op(registry(), "MatMul",
                                  {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})});
  EXPECT_FALSE(r.has_value());
}

TEST(MatMul, RankZeroRejected) {
  const TensorType s(DType::kF32, {});
  const TensorType m = TensorType::of(DType::kF32, {2, 2});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "MatMul", {&s, &m}).has_value());
}

// ---- Gemm ----

TEST(Gemm, PlainNoC) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  const std::vector<Tensor> y = run("Gemm", {a, b});
  expect_values(y[0], {2, 2}, {58, 64, 139, 154});
}

TEST(Gemm, TransposesAlphaBetaRowBroadcast) {
  const Tensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});     // A^T
  const Tensor bt = f32({2, 3}, {7, 9, 11, 8, 10, 12});  // B^T
  const Tensor c = f32({2}, {1, -1});                    // broadcast over rows
  const ir::Attributes attrs{{"transA", 1}, {"transB", 1}, {"alpha", 2.0}, {"beta", 0.5}};
  // 2 * [58, 64; 139, 154] + 0.5 * [1, -1]
  expect_values(run("Gemm", {at, bt, c}, attrs)[0], {2, 2}, {116.5, 127.5, 278.5, 307.5});
}

TEST(Gemm, ColumnAndScalarC) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_values(run("Gemm", {a, b, f32({2, 1}, {10, 20})}, {{"beta", 0.5}})[0], {2, 2},
                {63, 69, 149, 164});
  expect_values(run("Gemm", {a, b, Tensor::scalar<float>(1)}, {{"alpha", 0.0}})[0], {2, 2},
                {1, 1, 1, 1});
  expect_values(run("Gemm", {a, b, f32({2, 2}, {1, 2, 3, 4})})[0], {2, 2}, {59, 66, 142, 158});
}

TEST(Gemm, ShapeErrors) {
  const TensorType a = TensorType::of(DType::kF32, {2, 3});
  const TensorType b = TensorType::of(DType::kF32, {2, 3});
  auto t = runtime::infer_single_op(registry(), "Gemm", {&a, &b});  // K 3 vs 2
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("inner"), std::string::npos);
  t = runtime::infer_single_op(registry(), "Gemm", {&a, &b}, {{"transB", 1}});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[2, 2]");
  const TensorType c = TensorType::of(DType::kF32, {3});
  t = runtime::infer_single_op(registry(), "Gemm", {&a, &b, &c}, {{"transB", 1}});
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("'C'"), std::string::npos) << t.error().message;
}

TEST(Gemm, InferSymbolicM) {
  const TensorType a(DType::kF32, {Dim::named("N"), Dim::known(784)});
  const TensorType b = TensorType::of(DType::kF32, {10, 784});
  const TensorType c = TensorType::of(DType::kF32, {10});
  auto t = runtime::infer_single_op(registry(), "Gemm", {&a, &b, &c}, {{"transB", 1}});
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[N, 10]");
}

// ---- Softmax, LogSoftmax ----

TEST(Softmax, RowsSumToOne) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 0, 0, 0});
  const Tensor y = run("Softmax", {x})[0];
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_values(
      y, {2, 3},
      {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s, 1 / 3.0, 1 / 3.0, 1 / 3.0});
  for (int r = 0; r < 2; ++r)
    EXPECT_NEAR(y.get(r * 3) + y.get(r * 3 + 1) + y.get(r * 3 + 2), 1.0, 1e-6);
}

TEST(Softmax, LargeValuesStayFinite) {
  const Tensor x = f32({3}, {1000, 1001, 1002});
  expect_values(run("Softmax", {x})[0], {3}, {0.09003057, 0.24472847, 0.66524096});
  expect_values(run("LogSoftmax", {x})[0], {3}, {-2.40760596, -1.40760596, -0.40760596});
  const Tensor neg = f32({2}, {-1000, 0});
  expect_values(run("LogSoftmax", {neg})[0], {2}, {-1000, 0});
}

TEST(Softmax, OtherAxes) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  // Along axis 0 each column is softmax([a, a + 2]).
  const std::vector<double> want = {0.11920292, 0.11920292, 0.88079708, 0.88079708};
  expect_values(run("Softmax", {x}, {{"axis", 0}})[0], {2, 2}, want);
  expect_values(run("Softmax", {x}, {{"axis", -2}})[0], {2, 2}, want);
  expect_values(run("LogSoftmax", {x}, {{"axis", 0}})[0], {2, 2},
                {std::log(want[0]), std::log(want[1]), std::log(want[2]), std::log(want[3])});
  const Tensor x3 = f32({1, 2, 2}, {0, 0, std::log(3.0f), 0});  // axis 1, inner 2
  expect_values(run("Softmax", {x3}, {{"axis", 1}})[0], {1, 2, 2}, {0.25, 0.5, 0.75, 0.5});
  const TensorType t = TensorType::of(DType::kF32, {2, 2});
  EXPECT_FALSE(runtime::infer_single_op(registry(), "Softmax", {&t}, {{"axis", 2}}).has_value());
}

TEST(Softmax, HalfAndDouble) {
  // bf16 cannot tell 1000 from 1001 (its spacing there is 4): use small values.
  const Tensor yh = run("Softmax", {f32({3}, {1, 2, 3}).cast(DType::kBF16)})[0];
  EXPECT_EQ(yh.dtype(), DType::kBF16);
  expect_values(yh, {3}, {0.09003057, 0.24472847, 0.66524096}, 5e-3);
  const Tensor yd = run("LogSoftmax", {f32({3}, {1000, 1001, 1002}).cast(DType::kF64)})[0];
  EXPECT_EQ(yd.dtype(), DType::kF64);
  expect_values(yd, {3}, {-2.40760596, -1.40760596, -0.40760596}, 1e-8);
}

// ---- schema completeness of the family ----

TEST(NnFamily, EveryOpHasSchemaInferenceAndKernel) {
  const std::map<std::string, std::string> ops = {{"MatMul", "nn"},
                                                  {"Gemm", "nn"},
                                                  {"Conv", "nn"},
                                                  {"MaxPool", "nn"},
                                                  {"AveragePool", "nn"},
                                                  {"GlobalAveragePool", "nn"},
                                                  {"Dropout", "nn"},
                                                  {"BatchNormalization", "normalization"},
                                                  {"LayerNormalization", "normalization"},
                                                  {"Softmax", "activation"},
                                                  {"LogSoftmax", "activation"}};
  for (const auto& [name, category] : ops) {
    const ops::OpDef* def = registry().find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->category, category) << name;
    EXPECT_FALSE(def->doc.empty()) << name;
    EXPECT_FALSE(def->inputs.empty()) << name;
    EXPECT_FALSE(def->outputs.empty()) << name;
    EXPECT_FALSE(def->allowed_types.empty()) << name;
    EXPECT_TRUE(def->infer) << name;
    EXPECT_TRUE(def->reference) << name;
  }
}

}  // namespace
}  // namespace tessera
