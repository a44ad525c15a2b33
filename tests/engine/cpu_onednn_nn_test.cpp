// oneDNN pooling, BatchNormalization, LayerNormalization and Softmax kernels against the
// reference kernels, plain and blocked.
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;

void check_pool(const std::string& op, const Shape& x_shape, const ir::Attributes& attrs,
                const std::string& layout = "", const std::string& impl = "") {
  SCOPED_TRACE(op + " " + shape_to_string(x_shape) + " " + layout);
  const Tensor x = random_f32(x_shape, 41);
  KernelResult got = run_cpu({op, {&x}, attrs, {false}, {layout}, layout});
  if (!impl.empty()) {
    ASSERT_EQ(got.impl, impl);
  }
  ASSERT_FALSE(got.impl.empty());
  expect_close(got.outputs[0], reference(op, {&x}, attrs)[0]);
}

TEST(CpuPool, MaxPool) {
  check_pool("MaxPool", {2, 3, 7, 5}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}, "",
             "onednn:maxpool");
  check_pool("MaxPool", {1, 3, 8, 8}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  check_pool("MaxPool", {1, 3, 7, 7},
             {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  check_pool("MaxPool", {1, 2, 9, 6},
             {{"kernel_shape", Ints{3, 2}}, {"auto_pad", "SAME_UPPER"}, {"strides", Ints{2, 2}}});
  check_pool("MaxPool", {2, 16, 6, 6}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}},
             "nChw16c");
  check_pool("MaxPool", {2, 8, 7, 7}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}},
             "nChw8c");
}

TEST(CpuPool, AveragePool) {
  const ir::Attributes pads{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  check_pool("AveragePool", {2, 3, 7, 5}, pads, "", "onednn:avgpool");
  ir::Attributes include = pads;
  include.insert_or_assign("count_include_pad", int64_t{1});
  check_pool("AveragePool", {2, 3, 7, 5}, include, "", "onednn:avgpool");
  check_pool("AveragePool", {1, 3, 7, 7},
             {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  check_pool("AveragePool", {1, 16, 9, 9}, include, "nChw16c");
  check_pool("AveragePool", {1, 3, 10}, {{"kernel_shape", Ints{4}}, {"strides", Ints{3}}});
}

TEST(CpuPool, AverageCountingPadsWithCeilOverhangDeclines) {
  const Tensor x = random_f32({1, 1, 6, 6}, 1);
  const ir::Attributes a{{"kernel_shape", Ints{3, 3}},
                         {"strides", Ints{2, 2}},
                         {"pads", Ints{1, 1, 1, 1}},
                         {"ceil_mode", int64_t{1}},
                         {"count_include_pad", int64_t{1}}};
  EXPECT_EQ(run_cpu({"AveragePool", {&x}, a, {false}, {}, ""}).impl, "");
}

TEST(CpuPool, MaxPoolWithIndicesDeclines) {
  const Tensor x = random_f32({1, 1, 4, 4}, 1);
  EXPECT_EQ(run_cpu({"MaxPool", {&x}, {{"kernel_shape", Ints{2, 2}}}, {false}, {}, "", 2}).impl,
            "");
}

TEST(CpuPool, GlobalAveragePool) {
  check_pool("GlobalAveragePool", {3, 5, 7, 3}, {}, "", "onednn:global_avgpool");
  check_pool("GlobalAveragePool", {2, 32, 5, 5}, {}, "nChw16c");
}

void check_batchnorm(const Shape& x_shape, const std::string& layout, bool constant_params) {
  SCOPED_TRACE(shape_to_string(x_shape) + " " + layout);
  const int64_t c = x_shape[1];
  const Tensor x = random_f32(x_shape, 51), scale = random_f32({c}, 52), b = random_f32({c}, 53);
  const Tensor mean = random_f32({c}, 54), var = random_f32({c}, 55, 0.1f, 2.f);
  const ir::Attributes attrs{{"epsilon", 1e-3}};
  const bool k = constant_params;
  KernelResult got = run_cpu({"BatchNormalization",
                              {&x, &scale, &b, &mean, &var},
                              attrs,
                              {false, k, k, k, k},
                              {layout},
                              layout});
  ASSERT_EQ(got.impl, "onednn:batchnorm");
  expect_close(got.outputs[0],
               reference("BatchNormalization", {&x, &scale, &b, &mean, &var}, attrs)[0]);
}

TEST(CpuBatchNorm, PlainAndBlocked) {
  check_batchnorm({2, 3, 5, 7}, "", true);
  check_batchnorm({2, 3, 5, 7}, "", false);
  check_batchnorm({3, 6}, "", true);
  check_batchnorm({1, 16, 4, 5}, "nChw16c", true);
  check_batchnorm({2, 24, 3, 3}, "nChw8c", false);
}

TEST(CpuLayerNorm, Axes) {
  for (int64_t axis : {-1, 1, 2}) {
    for (bool with_b : {true, false}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (with_b ? " with B" : ""));
      const Tensor x = random_f32({2, 3, 5, 7}, 61);
      Shape norm(x.shape().begin() + (axis < 0 ? axis + 4 : axis), x.shape().end());
      const Tensor scale = random_f32(norm, 62), b = random_f32(norm, 63);
      const ir::Attributes attrs{{"axis", axis}, {"epsilon", 1e-4}};
      KernelResult got = run_cpu({"LayerNormalization",
                                  {&x, &scale, with_b ? &b : nullptr},
                                  attrs,
                                  {false, true, true},
                                  {},
                                  ""});
      ASSERT_EQ(got.impl, "onednn:layernorm");
      expect_close(got.outputs[0],
                   reference("LayerNormalization", {&x, &scale, with_b ? &b : nullptr}, attrs)[0]);
    }
  }
}

TEST(CpuSoftmax, AxesAndLog) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {-1, 0, 1}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      const Tensor x = random_f32({3, 17, 5}, 71, -5.f, 5.f);
      KernelResult got = run_cpu({op, {&x}, {{"axis", axis}}, {false}, {}, ""});
      ASSERT_FALSE(got.impl.empty());
      expect_close(got.outputs[0], reference(op, {&x}, {{"axis", axis}})[0]);
    }
  }
}

}  // namespace
}  // namespace tessera::cpu_test
