// oneDNN MatMul / FusedMatMul / Gemm / FusedGemm kernels against the reference kernels: batched
// and broadcast batch axes, 1-D operands, K = 1, non-multiple-of-16 sizes, constant (prepacked)
// and run-time weights, transposes, alpha / beta, every C shape, bias, residual, activations.
// DISABLED_Gflops1024 prints the 1024^3 throughput (run with --gtest_also_run_disabled_tests).
#include <chrono>

#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

void check_matmul(const Shape& a_shape, const Shape& b_shape, bool b_constant) {
  SCOPED_TRACE(shape_to_string(a_shape) + " x " + shape_to_string(b_shape) +
               (b_constant ? " const" : ""));
  const Tensor a = random_f32(a_shape, 11), b = random_f32(b_shape, 12);
  KernelResult got = run_cpu({"MatMul", {&a, &b}, {}, {false, b_constant}, {}, ""});
  ASSERT_EQ(got.impl, "onednn:matmul");
  expect_close(got.outputs[0], reference("MatMul", {&a, &b})[0]);
}

TEST(CpuMatMul, Shapes) {
  for (bool c : {true, false}) {
    check_matmul({5, 7}, {7, 3}, c);
    check_matmul({17, 1}, {1, 33}, c);          // K = 1
    check_matmul({2, 3, 19, 23}, {23, 29}, c);  // batched A, 2-D weights
    check_matmul({3, 4, 5}, {3, 5, 6}, c);      // batched both
    check_matmul({2, 1, 4, 5}, {3, 5, 6}, c);   // broadcast batch axes
    check_matmul({7}, {7, 4}, c);               // 1-D A
    check_matmul({2, 3, 7}, {7}, c);            // 1-D B
    check_matmul({64, 96}, {96, 48}, c);
  }
}

TEST(CpuMatMul, NonF32Declines) {
  const Tensor a = Tensor(DType::kI64, {2, 3}), b = Tensor(DType::kI64, {3, 2});
  EXPECT_EQ(run_cpu({"MatMul", {&a, &b}, {}, {false, true}, {}, ""}).impl, "");
}

void check_gemm(const Shape& a_shape, const Shape& b_shape, const Shape* c_shape,
                ir::Attributes attrs, bool fused = false, const std::string& act = "",
                bool residual = false) {
  SCOPED_TRACE(shape_to_string(a_shape) + " x " + shape_to_string(b_shape) +
               (c_shape ? " + C" + shape_to_string(*c_shape) : "") + " " + act +
               (residual ? " + Z" : ""));
  const Tensor a = random_f32(a_shape, 21), b = random_f32(b_shape, 22);
  const Tensor c = c_shape ? random_f32(*c_shape, 23) : Tensor();
  const Tensor y = reference("Gemm", {&a, &b, c_shape ? &c : nullptr}, attrs)[0];
  const Tensor z = random_f32(y.shape(), 24);
  Tensor want = y;
  if (residual) want = reference("Add", {&y, &z})[0];
  if (!act.empty()) want = reference(act, {&want})[0];
  if (fused) {
    attrs.insert_or_assign("activation", act);
    KernelResult got = run_cpu({"FusedGemm",
                                {&a, &b, c_shape ? &c : nullptr, residual ? &z : nullptr},
                                attrs,
                                {false, true, true, false},
                                {},
                                ""});
    ASSERT_EQ(got.impl, "onednn:fused_gemm");
    expect_close(got.outputs[0], want);
  } else {
    KernelResult got =
        run_cpu({"Gemm", {&a, &b, c_shape ? &c : nullptr}, attrs, {false, true, true}, {}, ""});
    ASSERT_EQ(got.impl, "onednn:gemm");
    expect_close(got.outputs[0], want);
  }
}

TEST(CpuGemm, TransposesAlphaBetaAndCShapes) {
  const Shape c_full{9, 5}, c_row{5}, c_col{9, 1}, c_one{1};
  check_gemm({9, 13}, {13, 5}, nullptr, {});
  check_gemm({13, 9}, {13, 5}, &c_row, {{"transA", int64_t{1}}});
  check_gemm({9, 13}, {5, 13}, &c_full, {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  check_gemm({13, 9}, {5, 13}, &c_col,
             {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"beta", 0.25}});
  check_gemm({9, 13}, {13, 5}, &c_one, {{"alpha", -1.5}});
  check_gemm({9, 13}, {13, 5}, &c_full, {{"beta", 0.0}});
  check_gemm({9, 1}, {1, 5}, &c_col, {});  // K = 1, C as a column bias
}

TEST(CpuGemm, RunTimeCWithBetaDeclinesOrMatches) {
  const Tensor a = random_f32({4, 3}, 1), b = random_f32({3, 5}, 2), c = random_f32({5}, 3);
  const ir::Attributes attrs{{"beta", 0.5}};
  KernelResult got = run_cpu({"Gemm", {&a, &b, &c}, attrs, {false, true, false}, {}, ""});
  EXPECT_EQ(got.impl, "");  // the reference takes it
  KernelResult unit = run_cpu({"Gemm", {&a, &b, &c}, {}, {false, true, false}, {}, ""});
  ASSERT_EQ(unit.impl, "onednn:gemm");
  expect_close(unit.outputs[0], reference("Gemm", {&a, &b, &c})[0]);
}

TEST(CpuFusedGemm, ActivationsAndResidual) {
  const Shape c_row{5};
  for (const char* act : {"", "Relu", "Sigmoid", "Tanh", "Gelu"}) {
    check_gemm({9, 13}, {13, 5}, &c_row, {}, true, act, false);
    check_gemm({9, 13}, {5, 13}, &c_row, {{"transB", int64_t{1}}, {"alpha", 2.0}, {"beta", 0.5}},
               true, act, true);
  }
}

TEST(CpuFusedMatMul, BiasResidualActivation) {
  const Tensor a = random_f32({2, 7, 19}, 31), b = random_f32({19, 21}, 32),
               bias = random_f32({21}, 33);
  const Tensor y = reference("MatMul", {&a, &b})[0];
  const Tensor z = random_f32(y.shape(), 34);
  for (const char* act : {"", "Relu", "LeakyRelu", "Tanh"}) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(act) + (residual ? " + Z" : ""));
      Tensor want = reference("Add", {&y, &bias})[0];
      if (residual) want = reference("Add", {&want, &z})[0];
      ir::Attributes attrs{{"activation", act}, {"activation_alpha", 0.1}};
      if (std::string(act) == "LeakyRelu")
        want = reference("LeakyRelu", {&want}, {{"alpha", 0.1}})[0];
      else if (*act)
        want = reference(act, {&want})[0];
      KernelResult got = run_cpu({"FusedMatMul",
                                  {&a, &b, &bias, residual ? &z : nullptr},
                                  attrs,
                                  {false, true, true, false},
                                  {},
                                  ""});
      ASSERT_EQ(got.impl, "onednn:fused_matmul");
      expect_close(got.outputs[0], want);
    }
  }
}

// A benchmark, not a check: prints GFLOP/s of the prepacked 1024^3 MatMul kernel.
TEST(CpuMatMulBench, DISABLED_Gflops1024) {
  const int64_t n = 1024;
  const Tensor a = random_f32({n, n}, 1), b = random_f32({n, n}, 2);
  ir::Graph g("bench");
  const ir::ValueId va = g.add_input("a", ir::TensorType::of(DType::kF32, {n, n}));
  const ir::ValueId vb = g.add_param("b", b);
  const ir::NodeId id = g.add_node("MatMul", {va, vb}, 1, "mm");
  g.set_outputs(g.node(id).outputs);
  ASSERT_TRUE(ops::infer_types(g, ops_registry()).is_ok());
  const ir::TensorType& out = g.value(g.node(id).outputs[0]).type;
  backend::KernelInit init{g.node(id),
                           *ops_registry().find("MatMul"),
                           {&g.value(va).type, &g.value(vb).type},
                           {&out},
                           {nullptr, &b},
                           {"", ""},
                           "",
                           2};
  auto k = kernels().candidates("MatMul")[0]->factory(init);
  ASSERT_TRUE(k.has_value() && *k);
  backend::Kernel& kernel = **k;
  ASSERT_TRUE(kernel.load().is_ok());
  std::vector<float> y(static_cast<size_t>(n * n)), scratch(kernel.scratch_bytes() / 4 + 16);
  backend::KernelRun run;
  run.inputs = {{const_cast<void*>(a.raw_data()), a.nbytes()},
                {const_cast<void*>(b.raw_data()), b.nbytes()}};
  run.outputs = {{y.data(), y.size() * 4}};
  run.scratch = {scratch.data(), kernel.scratch_bytes()};
  for (int threads : {1, 2}) {
    cpu::set_intra_op_threads(threads);
    ASSERT_TRUE(kernel.run(run).is_ok());  // warm up
    const int iters = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) ASSERT_TRUE(kernel.run(run).is_ok());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    std::printf("MatMul 1024^3 (%s), %d thread(s): %.2f ms, %.1f GFLOP/s\n", kernel.name().c_str(),
                threads, s * 1e3, 2.0 * n * n * n / s / 1e9);
  }
}

}  // namespace
}  // namespace tessera::cpu_test
