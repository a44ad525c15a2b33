// Tests of engine/ops/tensor_ops.cpp: Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Shape,
// Expand, Constant and Identity against hand-computed values and ONNX inference rules.
#include <gtest/gtest.h>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TensorType;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
Tensor i64s(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return i64({n}, std::move(v));
}


class TensorOpsTest : public ::testing::Test {
 protected:
  std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs,
                          ir::Attributes attrs = {}, int num_outputs = 1) {
    auto r = runtime::run_single_op(reg_, op, inputs, std::move(attrs), num_outputs);
    EXPECT_TRUE(r.has_value()) << r.error().to_string();
    return r ? *r : std::vector<Tensor>(static_cast<size_t>(num_outputs));
  }
  // The error message of a run that must fail; checks it names the node.
  std::string run_error(const std::string& op, const std::vector<Tensor>& inputs,
                        ir::Attributes attrs = {}) {
    auto r = runtime::run_single_op(reg_, op, inputs, std::move(attrs));
    EXPECT_FALSE(r.has_value());
    if (r) return {};
    EXPECT_GE(r.error().node, 0);
    EXPECT_NE(r.error().message.find(op), std::string::npos) << r.error().message;
    return r.error().message;
  }
  // Inferred output type as text ("f32[N, 96]"), or "error: ..." on failure.
  std::string infer(const std::string& op, const std::vector<TensorType>& inputs,
                    ir::Attributes attrs = {}, const std::vector<const Tensor*>& constants = {}) {
    std::vector<const TensorType*> ptrs;
    for (const TensorType& t : inputs) ptrs.push_back(&t);
    auto r = runtime::infer_single_op(reg_, op, ptrs, std::move(attrs), 1, constants);
    if (!r) return "error: " + r.error().message;
    return (*r)[0].to_string();
  }

  ops::OpRegistry reg_ = ops::make_default_registry();
};

TensorType tt(DType dt, std::vector<Dim> dims) { return TensorType(dt, std::move(dims)); }
Dim n_() { return Dim::named("N"); }
Dim k(int64_t v) { return Dim::known(v); }

// ---- Flatten ----

TEST_F(TensorOpsTest, FlattenAxes) {
  const Tensor x = iota(DType::kF32, {2, 3, 4});
  std::vector<double> all(24);
  for (int i = 0; i < 24; ++i) all[i] = i;
  expect_tensor(run("Flatten", {x})[0], DType::kF32, {2, 12}, all);
  expect_tensor(run("Flatten", {x}, {{"axis", 0}})[0], DType::kF32, {1, 24}, all);
  expect_tensor(run("Flatten", {x}, {{"axis", -1}})[0], DType::kF32, {6, 4}, all);
  expect_tensor(run("Flatten", {x}, {{"axis", 3}})[0], DType::kF32, {24, 1}, all);
  run_error("Flatten", {x}, {{"axis", 4}});
  run_error("Flatten", {x}, {{"axis", -4}});
}

TEST_F(TensorOpsTest, FlattenScalarAndEmpty) {
  expect_tensor(run("Flatten", {Tensor::scalar<float>(7.f)}, {{"axis", 0}})[0], DType::kF32, {1, 1}, {7});
  expect_tensor(run("Flatten", {Tensor(DType::kI64, {0, 3, 2})})[0], DType::kI64, {0, 6}, {});
}

TEST_F(TensorOpsTest, FlattenKeepsSymbols) {
  const TensorType x = tt(DType::kF32, {n_(), k(6), k(4), k(4)});
  EXPECT_EQ(infer("Flatten", {x}), "f32[N, 96]");
  EXPECT_EQ(infer("Flatten", {x}, {{"axis", 0}}), "f32[1, ?]");
  EXPECT_EQ(infer("Flatten", {x}, {{"axis", 2}}), "f32[?, 16]");
  EXPECT_EQ(infer("Flatten", {tt(DType::kF32, {k(1), n_(), k(3)})}, {{"axis", 2}}), "f32[N, 3]");
  EXPECT_EQ(infer("Flatten", {TensorType::unranked(DType::kF16)}), "f16[?, ?]");
}

// ---- Reshape ----

TEST_F(TensorOpsTest, ReshapeKeepsRowMajorOrder) {
  expect_tensor(run("Reshape", {iota(DType::kF32, {2, 3}), i64s({3, 2})})[0], DType::kF32, {3, 2},
                {0, 1, 2, 3, 4, 5});
}

TEST_F(TensorOpsTest, ReshapeZeroCopiesAndMinusOneInfers) {
  const Tensor x = iota(DType::kI32, {2, 3, 4});
  EXPECT_EQ(run("Reshape", {x, i64s({0, -1})})[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(run("Reshape", {x, i64s({-1})})[0].shape(), (Shape{24}));
  EXPECT_EQ(run("Reshape", {x, i64s({0, 0, -1, 2})})[0].shape(), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(run("Reshape", {x, i64s({-1, 0, 4})})[0].shape(), (Shape{2, 3, 4}));
  // Scalars in and out.
  expect_tensor(run("Reshape", {f32({1, 1}, {5.f}), i64({0}, {})})[0], DType::kF32, {}, {5});
  expect_tensor(run("Reshape", {Tensor::scalar<float>(5.f), i64s({-1})})[0], DType::kF32, {1}, {5});
}

TEST_F(TensorOpsTest, ReshapeAllowZero) {
  const Tensor empty(DType::kF32, {0, 3});
  // allowzero: 0 is a real zero-sized dim.
  EXPECT_EQ(run("Reshape", {empty, i64s({3, 0})}, {{"allowzero", 1}})[0].shape(), (Shape{3, 0}));
  // Without it the 0 copies input dim 1 (3): 9 elements from 0.
  run_error("Reshape", {empty, i64s({3, 0})});
  // 0 and -1 together are invalid with allowzero.
  run_error("Reshape", {empty, i64s({0, -1})}, {{"allowzero", 1}});
  // -1 next to a zero-sized dim is ambiguous.
  run_error("Reshape", {empty, i64s({0, -1})});
}

TEST_F(TensorOpsTest, ReshapeImpossible) {
  const Tensor x = iota(DType::kF32, {2, 3});
  EXPECT_NE(run_error("Reshape", {x, i64s({4, 2})}).find("cannot reshape"), std::string::npos);
  run_error("Reshape", {x, i64s({4, -1})});
  run_error("Reshape", {x, i64s({-1, -1})});
  run_error("Reshape", {x, i64s({-2, 3})});
  run_error("Reshape", {x, i64s({2, 3, 0})});  // copies a dim the input does not have
}

TEST_F(TensorOpsTest, ReshapeInference) {
  const TensorType x = tt(DType::kF32, {n_(), k(6), k(4), k(4)});
  const Tensor s1 = i64s({0, -1}), s2 = i64s({-1, 3}), s3 = i64s({4, -1}), s4 = i64s({0, 5});
  const TensorType shape2 = TensorType::of(DType::kI64, {2});
  EXPECT_EQ(infer("Reshape", {x, shape2}, {}, {nullptr, &s1}), "f32[N, 96]");
  EXPECT_EQ(infer("Reshape", {tt(DType::kF32, {n_(), k(6)}), shape2}, {}, {nullptr, &s2}), "f32[?, 3]");
  EXPECT_EQ(infer("Reshape", {tt(DType::kF32, {n_(), k(4)}), shape2}, {}, {nullptr, &s3}), "f32[4, N]");
  EXPECT_EQ(infer("Reshape", {TensorType::of(DType::kF32, {2, 3, 4}), shape2}, {}, {nullptr, &s3}),
            "f32[4, 6]");
  // N cancels, 6 elements cannot become 5.
  EXPECT_EQ(infer("Reshape", {tt(DType::kF32, {n_(), k(6)}), shape2}, {}, {nullptr, &s4}).rfind("error:", 0), 0u);
  // Shape values unknown: rank from the shape input's length.
  EXPECT_EQ(infer("Reshape", {x, TensorType::of(DType::kI64, {3})}), "f32[?, ?, ?]");
  EXPECT_EQ(infer("Reshape", {x, tt(DType::kI64, {Dim::unknown()})}), "f32[*]");
  // The shape input must be i64.
  EXPECT_EQ(infer("Reshape", {x, TensorType::of(DType::kI32, {2})}).rfind("error:", 0), 0u);
}

// ---- Transpose ----

TEST_F(TensorOpsTest, TransposeDefaultReverses) {
  expect_tensor(run("Transpose", {iota(DType::kF32, {2, 3})})[0], DType::kF32, {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST_F(TensorOpsTest, TransposePerm) {
  // out[i][j][k] = x[k][i][j] = 12k + 4i + j
  const Tensor y = run("Transpose", {iota(DType::kI64, {2, 3, 4})}, {{"perm", std::vector<int64_t>{1, 2, 0}}})[0];
  expect_tensor(y, DType::kI64, {3, 4, 2},
                {0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23});
  // 2-byte elements are moved whole.
  const Tensor h = run("Transpose", {iota(DType::kF16, {2, 2})})[0];
  expect_tensor(h, DType::kF16, {2, 2}, {0, 2, 1, 3});
  expect_tensor(run("Transpose", {Tensor::scalar<float>(3.f)})[0], DType::kF32, {}, {3});
  EXPECT_EQ(run("Transpose", {Tensor(DType::kBool, {0, 2})})[0].shape(), (Shape{2, 0}));
}

TEST_F(TensorOpsTest, TransposeErrorsAndInference) {
  run_error("Transpose", {iota(DType::kF32, {2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}});
  run_error("Transpose", {iota(DType::kF32, {2, 3})}, {{"perm", std::vector<int64_t>{0, 1, 2}}});
  EXPECT_EQ(infer("Transpose", {tt(DType::kF32, {n_(), k(3), k(5)})}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
            "f32[5, N, 3]");
  EXPECT_EQ(infer("Transpose", {tt(DType::kF32, {n_(), k(3)})}), "f32[3, N]");
}

// ---- Squeeze / Unsqueeze ----

TEST_F(TensorOpsTest, Squeeze) {
  const Tensor x = iota(DType::kF32, {1, 3, 1, 2});
  expect_tensor(run("Squeeze", {x, i64s({0, -2})})[0], DType::kF32, {3, 2}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(run("Squeeze", {x, i64s({2})})[0].shape(), (Shape{1, 3, 2}));
  auto all = runtime::run_single_op_with_absent(reg_, "Squeeze", {&x, nullptr});
  ASSERT_TRUE(all.has_value()) << all.error().to_string();
  EXPECT_EQ((*all)[0].shape(), (Shape{3, 2}));
  expect_tensor(run("Squeeze", {f32({1, 1}, {4.f})})[0], DType::kF32, {}, {4});
  EXPECT_NE(run_error("Squeeze", {x, i64s({1})}).find("cannot squeeze"), std::string::npos);
  run_error("Squeeze", {x, i64s({4})});
  run_error("Squeeze", {x, i64s({0, -4})});  // the same axis twice
}

TEST_F(TensorOpsTest, SqueezeInference) {
  const Tensor ax = i64s({1});
  const TensorType len1 = TensorType::of(DType::kI64, {1});
  EXPECT_EQ(infer("Squeeze", {tt(DType::kF32, {n_(), k(1), k(4)}), len1}, {}, {nullptr, &ax}), "f32[N, 4]");
  EXPECT_EQ(infer("Squeeze", {tt(DType::kF32, {n_(), k(1), k(4)}), len1}), "f32[?, ?]");
  // Without axes a symbol might be 1: the rank is not known.
  const TensorType x = tt(DType::kF32, {n_(), k(1)});
  auto r = runtime::infer_single_op(reg_, "Squeeze", {&x, nullptr});
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ((*r)[0].to_string(), "f32[*]");
}

TEST_F(TensorOpsTest, Unsqueeze) {
  expect_tensor(run("Unsqueeze", {f32({3}, {1, 2, 3}), i64s({0, -1})})[0], DType::kF32, {1, 3, 1}, {1, 2, 3});
  expect_tensor(run("Unsqueeze", {Tensor::scalar<int64_t>(9), i64s({0})})[0], DType::kI64, {1}, {9});
  EXPECT_EQ(run("Unsqueeze", {iota(DType::kU8, {2, 3}), i64s({1, 3})})[0].shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(run("Unsqueeze", {Tensor(DType::kF32, {0}), i64s({0})})[0].shape(), (Shape{1, 0}));
  run_error("Unsqueeze", {f32({3}, {1, 2, 3}), i64s({0, 0})});
  run_error("Unsqueeze", {f32({3}, {1, 2, 3}), i64s({2})});
}

TEST_F(TensorOpsTest, UnsqueezeInference) {
  const Tensor ax = i64s({1}), ax2 = i64s({-1, 0});
  const TensorType x = tt(DType::kF32, {n_(), k(4)});
  EXPECT_EQ(infer("Unsqueeze", {x, TensorType::of(DType::kI64, {1})}, {}, {nullptr, &ax}), "f32[N, 1, 4]");
  EXPECT_EQ(infer("Unsqueeze", {x, TensorType::of(DType::kI64, {2})}, {}, {nullptr, &ax2}), "f32[1, N, 4, 1]");
  EXPECT_EQ(infer("Unsqueeze", {x, TensorType::of(DType::kI64, {2})}), "f32[?, ?, ?, ?]");
}

// ---- Shape ----

TEST_F(TensorOpsTest, Shape) {
  const Tensor x(DType::kBool, {2, 3, 4});
  expect_tensor(run("Shape", {x})[0], DType::kI64, {3}, {2, 3, 4});
  expect_tensor(run("Shape", {x}, {{"start", 1}})[0], DType::kI64, {2}, {3, 4});
  expect_tensor(run("Shape", {x}, {{"start", -1}})[0], DType::kI64, {1}, {4});
  expect_tensor(run("Shape", {x}, {{"end", -1}})[0], DType::kI64, {2}, {2, 3});
  expect_tensor(run("Shape", {x}, {{"start", -10}, {"end", 10}})[0], DType::kI64, {3}, {2, 3, 4});
  expect_tensor(run("Shape", {x}, {{"start", 2}, {"end", 1}})[0], DType::kI64, {0}, {});
  expect_tensor(run("Shape", {Tensor::scalar<float>(1.f)})[0], DType::kI64, {0}, {});
  expect_tensor(run("Shape", {Tensor(DType::kF32, {0, 5})})[0], DType::kI64, {2}, {0, 5});
}

TEST_F(TensorOpsTest, ShapeInference) {
  EXPECT_EQ(infer("Shape", {tt(DType::kF32, {n_(), k(3)})}), "i64[2]");
  EXPECT_EQ(infer("Shape", {tt(DType::kF32, {n_(), k(3), k(2)})}, {{"start", 1}}), "i64[2]");
  EXPECT_EQ(infer("Shape", {TensorType::unranked(DType::kF32)}), "i64[?]");
}

// ---- Expand ----

TEST_F(TensorOpsTest, Expand) {
  expect_tensor(run("Expand", {f32({3, 1}, {1, 2, 3}), i64s({2, 1, 4})})[0], DType::kF32, {2, 3, 4},
                {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  // Bidirectional: the target's 1 keeps the input's 3.
  expect_tensor(run("Expand", {f32({1, 3}, {1, 2, 3}), i64s({2, 1})})[0], DType::kF32, {2, 3},
                {1, 2, 3, 1, 2, 3});
  expect_tensor(run("Expand", {Tensor::scalar<int64_t>(7), i64s({2})})[0], DType::kI64, {2}, {7, 7});
  EXPECT_EQ(run("Expand", {Tensor(DType::kF32, {0, 1}), i64s({0, 3})})[0].shape(), (Shape{0, 3}));
  run_error("Expand", {f32({3}, {1, 2, 3}), i64s({2})});
  run_error("Expand", {f32({3}, {1, 2, 3}), i64s({-1})});
}

TEST_F(TensorOpsTest, ExpandInference) {
  const Tensor s = i64s({1, 5}), s3 = i64s({2, 1, 1});
  const TensorType x = tt(DType::kF32, {n_(), k(1)});
  EXPECT_EQ(infer("Expand", {x, TensorType::of(DType::kI64, {2})}, {}, {nullptr, &s}), "f32[N, 5]");
  EXPECT_EQ(infer("Expand", {x, TensorType::of(DType::kI64, {3})}, {}, {nullptr, &s3}), "f32[2, N, 1]");
  EXPECT_EQ(infer("Expand", {tt(DType::kF32, {k(3), k(1)}), TensorType::of(DType::kI64, {3})}),
            "f32[?, 3, ?]");
}

// ---- Constant / Identity ----

TEST_F(TensorOpsTest, Constant) {
  expect_tensor(run("Constant", {}, {{"value", f32({2}, {1.5f, -2.f})}})[0], DType::kF32, {2}, {1.5, -2});
  expect_tensor(run("Constant", {}, {{"value_float", 0.25}})[0], DType::kF32, {}, {0.25});
  expect_tensor(run("Constant", {}, {{"value_floats", std::vector<double>{1, 2}}})[0], DType::kF32, {2}, {1, 2});
  expect_tensor(run("Constant", {}, {{"value_int", 42}})[0], DType::kI64, {}, {42});
  expect_tensor(run("Constant", {}, {{"value_ints", std::vector<int64_t>{3, -4, 5}}})[0], DType::kI64, {3},
                {3, -4, 5});
  run_error("Constant", {});
  run_error("Constant", {}, {{"value_int", 1}, {"value_float", 1.0}});
  EXPECT_EQ(infer("Constant", {}, {{"value_ints", std::vector<int64_t>{3, 4}}}), "i64[2]");
}

TEST_F(TensorOpsTest, IdentityCopiesAnyType) {
  expect_tensor(run("Identity", {i64({2}, {-5, 6})})[0], DType::kI64, {2}, {-5, 6});
  expect_tensor(run("Identity", {Tensor::from_bools({3}, {true, false, true})})[0], DType::kBool, {3}, {1, 0, 1});
  EXPECT_EQ(infer("Identity", {tt(DType::kBF16, {n_(), k(2)})}), "bf16[N, 2]");
}

TEST_F(TensorOpsTest, EveryOpHasSchemaInferenceAndKernel) {
  for (const char* name : {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Shape", "Expand",
                           "Constant", "Identity"}) {
    const ops::OpDef* def = reg_.find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->category, "tensor") << name;
    EXPECT_FALSE(def->doc.empty()) << name;
    EXPECT_TRUE(def->infer) << name;
    EXPECT_TRUE(def->reference) << name;
  }
}

}  // namespace
}  // namespace tessera
