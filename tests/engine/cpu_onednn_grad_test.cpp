// oneDNN backward kernels (ConvGradInput, ConvGradWeight, MaxPoolGrad, AveragePoolGrad) against
// the reference kernels on random inputs, plain and with blocked inputs; and the times of every
// kernel that takes LeNet-5's weight gradients at batch 64 (printed).
#include <algorithm>
#include <chrono>

#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;

Tensor shape_tensor(const Shape& s) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(s.size())}, s); }

// dY is random; `other` is W (input gradient) or X (weight gradient); `result` the shape wanted.
std::string check_conv_grad(bool weight, const Shape& dy_shape, const Shape& other_shape, const Shape& result,
                            const ir::Attributes& attrs, const std::string& dy_layout = "",
                            const std::string& other_layout = "") {
  const std::string op = weight ? "ConvGradWeight" : "ConvGradInput";
  SCOPED_TRACE(op + " dY " + shape_to_string(dy_shape) + " " + dy_layout + " / " + other_layout);
  const Tensor dy = random_f32(dy_shape, 61), other = random_f32(other_shape, 62), shape = shape_tensor(result);
  KernelResult got = run_cpu({op, {&dy, &other, &shape}, attrs, {false, false, true}, {dy_layout, other_layout}, ""});
  EXPECT_EQ(got.impl, weight ? "onednn:conv_grad_weight" : "onednn:conv_grad_input");
  if (got.outputs.empty()) return got.detail;
  expect_close(got.outputs[0], reference(op, {&dy, &other, &shape}, attrs)[0], 1e-4, 1e-4);
  return got.detail;
}

TEST(CpuConvGrad, Input) {
  check_conv_grad(false, {2, 4, 4, 4}, {4, 3, 3, 3}, {2, 3, 6, 6}, {});
  check_conv_grad(false, {2, 4, 3, 3}, {4, 3, 3, 3}, {2, 3, 6, 6}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 0, 0}}});
  check_conv_grad(false, {1, 6, 5, 5}, {6, 2, 3, 3}, {1, 4, 5, 5}, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
  check_conv_grad(false, {1, 2, 3, 3}, {2, 2, 2, 2}, {1, 2, 5, 5}, {{"dilations", Ints{2, 2}}});
  check_conv_grad(false, {2, 3, 4}, {3, 2, 3}, {2, 2, 9}, {{"strides", Ints{2}}});
  check_conv_grad(false, {2, 16, 10, 10}, {16, 6, 5, 5}, {2, 6, 14, 14}, {}, "nChw8c");
}

TEST(CpuConvGrad, Weight) {
  check_conv_grad(true, {2, 4, 4, 4}, {2, 3, 6, 6}, {4, 3, 3, 3}, {});
  check_conv_grad(true, {2, 4, 3, 3}, {2, 3, 6, 6}, {4, 3, 3, 3}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 0, 0}}});
  check_conv_grad(true, {1, 6, 5, 5}, {1, 4, 5, 5}, {6, 2, 3, 3}, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
  check_conv_grad(true, {2, 3, 4}, {2, 2, 9}, {3, 2, 3}, {{"strides", Ints{2}}});
  check_conv_grad(true, {2, 16, 10, 10}, {2, 8, 14, 14}, {16, 8, 5, 5}, {}, "nChw16c", "nChw8c");
}

// The backward convolutions take Winograd where the forward one does (winograd_candidate), with
// dY plain or channels-last.
TEST(CpuConvGrad, Winograd) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const ir::Attributes pad1 = {{"pads", Ints{1, 1, 1, 1}}};
  for (const char* layout : {"", "nhwc"}) {
    SCOPED_TRACE(layout);
    const std::string in = check_conv_grad(false, {3, 32, 15, 17}, {32, 16, 3, 3}, {3, 16, 15, 17}, pad1, layout);
    const std::string wt =
        check_conv_grad(true, {3, 32, 15, 17}, {3, 16, 15, 17}, {32, 16, 3, 3}, pad1, layout, layout);
    if (avx512) {
      EXPECT_NE(in.find("wino"), std::string::npos) << in;
      EXPECT_NE(wt.find("wino"), std::string::npos) << wt;
    }
  }
}

// dW and dB from one primitive (diff_bias), both against the reference.
TEST(CpuConvGrad, WeightWithBias) {
  for (const char* layout : {"", "nChw16c"}) {
    SCOPED_TRACE(layout);
    const Tensor dy = random_f32({4, 16, 10, 10}, 63), x = random_f32({4, 6, 14, 14}, 64), shape = shape_tensor({16, 6, 5, 5});
    KernelResult got = run_cpu({"ConvGradWeight", {&dy, &x, &shape}, {}, {false, false, true}, {layout, ""}, "", 2});
    ASSERT_EQ(got.impl, "onednn:conv_grad_weight");
    auto want = runtime::run_single_op_with_absent(ops_registry(), "ConvGradWeight", {&dy, &x, &shape}, {}, 2);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    ASSERT_EQ(got.outputs.size(), 2u);
    expect_close(got.outputs[0], (*want)[0], 1e-4, 1e-4);
    expect_close(got.outputs[1], (*want)[1], 1e-4, 1e-4);
  }
}

void check_pool_grad(bool max, const Shape& x_shape, const Shape& dy_shape, const ir::Attributes& attrs,
                     const std::string& x_layout = "") {
  const std::string op = max ? "MaxPoolGrad" : "AveragePoolGrad";
  SCOPED_TRACE(op + " X " + shape_to_string(x_shape) + " " + x_layout);
  const Tensor dy = random_f32(dy_shape, 71), x = random_f32(x_shape, 72), shape = shape_tensor(x_shape);
  const Tensor& second = max ? x : shape;
  const std::string impl = max ? "onednn:maxpool_grad" : "onednn:avgpool_grad";
  KernelResult got = run_cpu({op, {&dy, &second}, attrs, {false, !max}, {"", x_layout}, "", 1, impl});
  ASSERT_EQ(got.impl, impl);
  expect_close(got.outputs[0], reference(op, {&dy, &second}, attrs)[0]);
}

TEST(CpuPoolGrad, MaxPool) {
  check_pool_grad(true, {2, 3, 6, 6}, {2, 3, 3, 3}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  check_pool_grad(true, {1, 2, 7, 7}, {1, 2, 4, 4},
                  {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  // ceil_mode of the forward: one more window than the floor, over the end of the input.
  check_pool_grad(true, {1, 2, 5, 5}, {1, 2, 3, 3}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  check_pool_grad(true, {2, 16, 8, 8}, {2, 16, 4, 4}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}},
                  "nChw16c");
}

TEST(CpuPoolGrad, AveragePool) {
  const ir::Attributes pads{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  check_pool_grad(false, {2, 3, 5, 5}, {2, 3, 5, 5}, pads);
  ir::Attributes include = pads;
  include.insert_or_assign("count_include_pad", int64_t{1});
  check_pool_grad(false, {2, 3, 5, 5}, {2, 3, 5, 5}, include);
  check_pool_grad(false, {1, 2, 9}, {1, 2, 3}, {{"kernel_shape", Ints{3}}, {"strides", Ints{3}}});
}

TEST(CpuPoolGrad, DilatedPoolingDeclines) {
  const Tensor dy = random_f32({1, 1, 2, 2}, 1), x = random_f32({1, 1, 4, 4}, 2);
  EXPECT_EQ(run_cpu({"MaxPoolGrad", {&dy, &x}, {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}, {}, {}, ""})
                .impl,
            "");
}

// LeNet-5's conv2 at batch 64: X [64, 6, 14, 14], W [16, 6, 5, 5], dY [64, 16, 10, 10]. Times the
// reference kernel and the oneDNN kernel's run() (created and loaded once), 2 OpenMP threads.
// LeNet's weight gradients at batch 64 with every kernel that takes them (oneDNN's, and for conv1
// the row-vectorised one of vec_conv.cpp), each against the reference; times printed (median and
// minimum of 50 runs, 2 threads), never asserted.
void time_lenet_grad_weight(const char* what, const Shape& dy_shape, const Shape& x_shape, const Shape& w_shape,
                            const Ints& pads) {
  const Tensor dy = random_f32(dy_shape, 81), x = random_f32(x_shape, 82);
  const Tensor shape = shape_tensor(w_shape);
  const ir::Attributes attrs = {{"pads", pads}};
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  const Tensor want = reference("ConvGradWeight", {&dy, &x, &shape}, attrs)[0];
  const double ref_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("ConvGradWeight, LeNet %s at batch 64: reference %.1f ms", what, ref_ms);

  ir::Graph g("timing");
  const ir::ValueId vdy = g.add_input("dy", ir::TensorType::of(DType::kF32, dy.shape()));
  const ir::ValueId vx = g.add_input("x", ir::TensorType::of(DType::kF32, x.shape()));
  const ir::ValueId vs = g.add_param("s", shape);
  const ir::NodeId id = g.add_node("ConvGradWeight", {vdy, vx, vs}, 1, "dw", attrs);
  ASSERT_TRUE(ops::infer_types(g, ops_registry()).is_ok());
  const ir::Node& node = g.node(id);
  const ir::ValueId out = node.outputs[0];
  backend::KernelInit init{node, *ops_registry().find("ConvGradWeight"),
                           {&g.value(vdy).type, &g.value(vx).type, &g.value(vs).type},
                           {&g.value(out).type}, {nullptr, nullptr, &shape}, {"", "", ""}, "", 2};
  int taken = 0;
  for (const auto* e : kernels().candidates("ConvGradWeight")) {
    auto k = e->factory(init);
    ASSERT_TRUE(k.has_value()) << k.error().to_string();
    if (!*k) continue;
    ++taken;
    backend::Kernel& kernel = **k;
    ASSERT_TRUE(kernel.load().is_ok());
    Tensor dw(DType::kF32, w_shape);
    std::vector<char> scratch(kernel.scratch_bytes() + 1);
    backend::KernelRun run;
    run.inputs = {{const_cast<void*>(dy.raw_data()), dy.nbytes()}, {const_cast<void*>(x.raw_data()), x.nbytes()},
                  {const_cast<void*>(shape.raw_data()), shape.nbytes()}};
    run.outputs = {{dw.raw_data(), dw.nbytes()}};
    run.scratch = {scratch.data(), kernel.scratch_bytes()};
    cpu::set_intra_op_threads(2);
    ASSERT_TRUE(kernel.run(run).is_ok());  // warm-up
    expect_close(dw, want, 1e-4, 1e-3);
    std::vector<double> ms;
    for (int i = 0; i < 50; ++i) {
      t0 = Clock::now();
      ASSERT_TRUE(kernel.run(run).is_ok());
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf(", %s median %.3f ms, min %.3f ms", kernel.name().c_str(), ms[ms.size() / 2], ms[0]);
  }
  std::printf(" (2 threads)\n");
  EXPECT_GE(taken, 1);
}

TEST(CpuConvGrad, LeNetWeightGradientTimings) {
  time_lenet_grad_weight("conv1", {64, 6, 28, 28}, {64, 1, 28, 28}, {6, 1, 5, 5}, {2, 2, 2, 2});
  time_lenet_grad_weight("conv2", {64, 16, 10, 10}, {64, 6, 14, 14}, {16, 6, 5, 5}, {0, 0, 0, 0});
}

}  // namespace
}  // namespace tessera::cpu_test
