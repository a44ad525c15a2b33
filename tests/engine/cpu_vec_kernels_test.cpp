// The vectorised CPU kernels against the reference kernels: copies, Transpose, Slice, Expand, Gather, Where,
// Cast, Erf, Pow; blocked layouts are refused with an error.
#include <cmath>

#include "engine/cpu/vec_internal.h"
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;

Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(s), v);
}
Tensor iota_i64(Shape s) {
  Tensor t(DType::kI64, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = i;
  return t;
}

void check(const std::string& op, const std::vector<const Tensor*>& in, const ir::Attributes& attrs,
           const std::vector<bool>& constant, const std::string& impl) {
  SCOPED_TRACE(op);
  KernelResult got = run_cpu({op, in, attrs, constant, {}, ""});
  ASSERT_EQ(got.impl, impl);
  const Tensor want = reference(op, in, attrs)[0];
  if (want.dtype() == DType::kF32)
    expect_close(got.outputs[0], want, 1e-6, 1e-6);
  else
    EXPECT_TRUE(got.outputs[0].equals(want))
        << got.outputs[0].summary() << " vs " << want.summary();
}

TEST(CpuVec, Copies) {
  const Tensor x = random_f32({2, 3, 4}, 1);
  const Tensor shape = i64({2}, {4, 6}), axes = i64({1}, {1});
  check("Reshape", {&x, &shape}, {}, {false, true}, "cpu.vec:copy");
  check("Flatten", {&x}, {{"axis", int64_t{2}}}, {false}, "cpu.vec:copy");
  check("Identity", {&x}, {}, {false}, "cpu.vec:copy");
  check("Unsqueeze", {&x, &axes}, {}, {false, true}, "cpu.vec:copy");
  const Tensor y = random_f32({2, 1, 4}, 2);
  check("Squeeze", {&y, &axes}, {}, {false, true}, "cpu.vec:copy");
}

TEST(CpuVec, Transpose) {
  const Tensor x = random_f32({3, 37, 45}, 3);
  check("Transpose", {&x}, {}, {false}, "cpu.vec:transpose");
  check("Transpose", {&x}, {{"perm", Ints{0, 2, 1}}}, {false}, "cpu.vec:transpose");
  check("Transpose", {&x}, {{"perm", Ints{1, 0, 2}}}, {false}, "cpu.vec:transpose");
  const Tensor big = random_f32({2, 3, 70, 66}, 4);
  check("Transpose", {&big}, {{"perm", Ints{0, 2, 3, 1}}}, {false}, "cpu.vec:transpose");
  // Attention's heads: [B, T, H, D] -> [B, H, T, D] keeps the last axis (rows copied whole).
  check("Transpose", {&big}, {{"perm", Ints{0, 2, 1, 3}}}, {false}, "cpu.vec:transpose");
  const Tensor ints = iota_i64({5, 7});
  check("Transpose", {&ints}, {}, {false}, "cpu.vec:transpose");
}

TEST(CpuVec, Slice) {
  const Tensor x = random_f32({4, 37, 45}, 6);
  const std::vector<bool> c5 = {false, true, true, true, true};
  // Last axis, as a transformer's fused QKV projection is split.
  Tensor s1 = i64({1}, {15}), e1 = i64({1}, {30}), a1 = i64({1}, {-1}), st1 = i64({1}, {1});
  check("Slice", {&x, &s1, &e1, &a1, &st1}, {}, c5, "cpu.vec:slice");
  // Several axes, negative start, step 2, clamped end.
  Tensor s2 = i64({2}, {-30, 1}), e2 = i64({2}, {1000, 4}), a2 = i64({2}, {1, 0}), st2 = i64({2}, {2, 1});
  check("Slice", {&x, &s2, &e2, &a2, &st2}, {}, c5, "cpu.vec:slice");
  // Negative step (reversal) and an empty result.
  Tensor s3 = i64({1}, {40}), e3 = i64({1}, {2}), a3 = i64({1}, {2}), st3 = i64({1}, {-3});
  check("Slice", {&x, &s3, &e3, &a3, &st3}, {}, c5, "cpu.vec:slice");
  Tensor s4 = i64({1}, {5}), e4 = i64({1}, {5});
  check("Slice", {&x, &s4, &e4}, {}, {false, true, true}, "cpu.vec:slice");
  // int32 indices, i64 data.
  const Tensor ints = iota_i64({6, 5});
  Tensor s5 = Tensor::from_vector<int32_t>({1}, {1}), e5 = Tensor::from_vector<int32_t>({1}, {-1});
  check("Slice", {&ints, &s5, &e5}, {}, {false, true, true}, "cpu.vec:slice");
}

TEST(CpuVec, Expand) {
  // Swin-T's LayerNorm gradient: a per-row mean [1, 56, 56, 1] broadcast over the channels.
  const Tensor mean = random_f32({1, 56, 56, 1}, 8);
  Tensor to = i64({4}, {1, 56, 56, 96});
  check("Expand", {&mean, &to}, {}, {false, true}, "cpu.vec:expand");
  // A bias row over new leading axes (whole rows copied), a middle axis, and ones kept as ones.
  const Tensor row = random_f32({1, 45}, 9), mid = random_f32({3, 1, 5}, 10);
  Tensor to2 = i64({3}, {2, 7, 45}), to3 = i64({3}, {3, 4, 5}), to4 = i64({2}, {1, 1});
  check("Expand", {&row, &to2}, {}, {false, true}, "cpu.vec:expand");
  check("Expand", {&mid, &to3}, {}, {false, true}, "cpu.vec:expand");
  check("Expand", {&mid, &to4}, {}, {false, true}, "cpu.vec:expand");  // the shape may be smaller than X's
  const Tensor ints = iota_i64({1, 3});
  Tensor to5 = i64({2}, {4, 3});
  check("Expand", {&ints, &to5}, {}, {false, true}, "cpu.vec:expand");
}

TEST(CpuVec, Split) {
  auto check_split = [](const std::vector<const Tensor*>& in, const ir::Attributes& attrs, int pieces) {
    KernelResult got = run_cpu({"Split", in, attrs, std::vector<bool>(in.size(), true), {}, "", pieces});
    ASSERT_EQ(got.impl, "cpu.vec:split");
    const std::vector<Tensor> want = reference("Split", in, attrs, pieces);
    ASSERT_EQ(got.outputs.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(got.outputs[k].equals(want[k])) << "piece " << k;
  };
  // DenseNet's Concat gradient: channels of a [N, C, H, W] gradient in unequal pieces.
  const Tensor x = random_f32({2, 48, 7, 5}, 11);
  Tensor sizes = i64({3}, {16, 8, 24});
  check_split({&x, &sizes}, {{"axis", int64_t{1}}}, 3);
  // Equal pieces of the last axis (no sizes), a negative axis, i64 data on axis 0.
  check_split({&x}, {{"axis", int64_t{-1}}}, 5);
  const Tensor ints = iota_i64({6, 4});
  check_split({&ints}, {}, 2);
}

TEST(CpuVec, GatherRows) {
  const Tensor table = random_f32({10, 6}, 5);
  const Tensor idx = i64({2, 3}, {0, 9, -1, 4, 4, -10});
  check("Gather", {&table, &idx}, {}, {true, false}, "cpu.vec:gather");
  const Tensor idx32 = Tensor::from_vector<int32_t>({4}, {3, 1, 0, 2});
  check("Gather", {&table, &idx32}, {}, {false, false}, "cpu.vec:gather");
  // Other axes (ViT's class token: x[:, 0] of [1, 197, 768]), scalar and negative indices.
  const Tensor x = random_f32({2, 5, 3, 4}, 6);
  const Tensor zero = Tensor::scalar<int64_t>(0), pick = i64({3}, {2, -1, 1});
  check("Gather", {&x, &zero}, {{"axis", int64_t{1}}}, {false, true}, "cpu.vec:gather");
  check("Gather", {&x, &pick}, {{"axis", int64_t{-2}}}, {false, false}, "cpu.vec:gather");
  check("Gather", {&x, &pick}, {{"axis", int64_t{3}}}, {false, false}, "cpu.vec:gather");
}

TEST(CpuVec, GatherOutOfRangeIsARunError) {
  const Tensor table = random_f32({10, 6}, 5);
  int64_t bad[2] = {3, 10};
  ir::Graph g("t");
  const ir::ValueId t = g.add_input("t", ir::TensorType::of(DType::kF32, {10, 6}));
  const ir::ValueId i = g.add_input("i", ir::TensorType::of(DType::kI64, {2}));
  const ir::NodeId id = g.add_node("Gather", {t, i}, 1, "g");
  ASSERT_TRUE(ops::infer_types(g, ops_registry()).is_ok());
  const ir::TensorType& out = g.value(g.node(id).outputs[0]).type;
  backend::KernelInit init{g.node(id),
                           *ops_registry().find("Gather"),
                           {&g.value(t).type, &g.value(i).type},
                           {&out},
                           {nullptr, nullptr},
                           {"", ""},
                           "",
                           1};
  auto k = kernels().candidates("Gather")[0]->factory(init);
  ASSERT_TRUE(k.has_value() && *k);
  std::vector<float> y(12);
  backend::KernelRun run;
  run.inputs = {{const_cast<void*>(table.raw_data()), table.nbytes()}, {bad, sizeof bad}};
  run.outputs = {{y.data(), y.size() * 4}};
  const Status st = (*k)->run(run);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("10"), std::string::npos) << st.to_string();
}

TEST(CpuVec, Where) {
  const Tensor c = Tensor::from_bools({2, 3}, {true, false, true, false, false, true});
  const Tensor x = random_f32({2, 3}, 6), y = random_f32({2, 3}, 7), row = random_f32({3}, 8);
  check("Where", {&c, &x, &y}, {}, {false, false, false}, "cpu.vec:where");
  check("Where", {&c, &row, &y}, {}, {false, false, false}, "cpu.vec:where");
  const Tensor col = Tensor::from_bools({2, 1}, {true, false});
  check("Where", {&col, &x, &row}, {}, {false, false, false}, "cpu.vec:where");
}

TEST(CpuVec, Where_ScalarOtherwise) {
  // autodiff's Relu mask: Where(Y > 0, dY, 0) with a scalar 0.
  const Tensor c = Tensor::from_bools({2, 3}, {true, false, true, false, false, true});
  const Tensor x = random_f32({2, 3}, 6), zero = Tensor::scalar<float>(0.f);
  check("Where", {&c, &x, &zero}, {}, {false, false, true}, "cpu.vec:where");
  const Tensor y = random_f32({4, 33}, 15);
  check("Greater", {&y, &zero}, {}, {false, true}, "cpu.vec:greater");
  check("Less", {&y, &zero}, {}, {false, false}, "cpu.vec:less");
}

TEST(CpuVec, ReduceSumAnyAxes) {
  const Tensor x = random_f32({4, 6, 5, 7}, 12);
  for (std::vector<int64_t> axes : std::vector<std::vector<int64_t>>{
           {0, 2, 3}, {0}, {3}, {1}, {1, 2}, {0, 1, 2, 3}, {-1, 0}, {2}}) {
    const Tensor a = i64({static_cast<int64_t>(axes.size())}, axes);
    for (int64_t keep : {0, 1}) check("ReduceSum", {&x, &a}, {{"keepdims", keep}}, {false, true}, "cpu.vec:reduce_sum");
  }
  const Tensor gemm_grad = random_f32({64, 120}, 13), axis0 = i64({1}, {0});
  check("ReduceSum", {&gemm_grad, &axis0}, {{"keepdims", int64_t{0}}}, {false, true}, "cpu.vec:reduce_sum");
  const Tensor ones = random_f32({3, 1, 4}, 14), mid = i64({1}, {1});
  check("ReduceSum", {&ones, &mid}, {}, {false, true}, "cpu.vec:reduce_sum");
  check("ReduceSum", {&x}, {}, {false}, "cpu.vec:reduce_sum");  // no axes: everything
}

// Every output of an optimizer update against the reference kernel.
void check_update(const std::string& op, const std::vector<const Tensor*>& in, const ir::Attributes& attrs, int nout,
                  const std::string& impl) {
  SCOPED_TRACE(op);
  std::vector<bool> constant(in.size(), false);
  KernelResult got = run_cpu({op, in, attrs, constant, {}, "", nout});
  ASSERT_EQ(got.impl, impl);
  auto want = runtime::run_single_op_with_absent(ops_registry(), op, in, attrs, nout);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  for (int k = 0; k < nout; ++k)
    if ((*want)[static_cast<size_t>(k)].numel() > 0) expect_close(got.outputs[static_cast<size_t>(k)], (*want)[static_cast<size_t>(k)], 1e-6, 1e-6);
}

TEST(CpuVec, MaxPoolGrad) {
  const Tensor x = random_f32({2, 3, 8, 9}, 30), dy = random_f32({2, 3, 4, 4}, 31), dy_overlap = random_f32({2, 3, 3, 4}, 32);
  check("MaxPoolGrad", {&dy, &x}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
        {false, false}, "cpu.vec:maxpool_grad");
  // Rows and columns past the last window, ties (the first maximum takes dY), and planes enough
  // to split over threads.
  Tensor x_odd = random_f32({2, 3, 9, 9}, 33);
  for (int64_t i = 0; i < 9; ++i) x_odd.data<float>()[i] = 1.f;  // the first row ties
  check("MaxPoolGrad", {&dy, &x_odd}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
        {false, false}, "cpu.vec:maxpool_grad");
  const Tensor x_big = random_f32({64, 6, 28, 28}, 34), dy_big = random_f32({64, 6, 14, 14}, 35);
  check("MaxPoolGrad", {&dy_big, &x_big}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
        {false, false}, "cpu.vec:maxpool_grad");
  // Tiling windows other than 2x2 (3x3, stride 3; a row and no column left over).
  const Tensor dy3 = random_f32({2, 3, 2, 3}, 36);
  check("MaxPoolGrad", {&dy3, &x}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{3, 3}}},
        {false, false}, "cpu.vec:maxpool_grad");
  // Overlapping windows (3x3, stride 2x2) accumulate.
  check("MaxPoolGrad", {&dy_overlap, &x},
        {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}}, {false, false},
        "cpu.vec:maxpool_grad");
}

// MaxPool 2x2 / 2 on plain f32 (cpu.vec:maxpool2x2): odd sizes (the last row and column left
// out, as floor mode does), planes enough to split over threads; channels-last goes to oneDNN.
TEST(CpuVec, MaxPool2x2) {
  const ir::Attributes attrs = {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
  const Tensor x = random_f32({2, 3, 9, 37}, 37), big = random_f32({64, 6, 28, 28}, 38);
  check("MaxPool", {&x}, attrs, {false}, "cpu.vec:maxpool2x2");
  check("MaxPool", {&big}, attrs, {false}, "cpu.vec:maxpool2x2");
  KernelResult nhwc = run_cpu({"MaxPool", {&big}, attrs, {false}, {"nhwc"}, "nhwc"});
  EXPECT_EQ(nhwc.impl, "onednn:maxpool");
  KernelResult three = run_cpu({"MaxPool", {&x}, {{"kernel_shape", std::vector<int64_t>{3, 3}}}, {false}, {}, ""});
  EXPECT_EQ(three.impl, "onednn:maxpool");
}

// Conv / FusedConv with fewer than 8 output channels (cpu.vec:conv_rows, AVX-512): LeNet's conv1,
// several input channels with asymmetric pads, rows of 8, 17 and 40 columns (one masked vector,
// a pair, a pair and a masked one), no bias, Relu with a NaN that must stay NaN, weights that
// change every run; the cases it leaves to oneDNN.
TEST(CpuVec, ConvRowsForFewOutputChannels) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "needs AVX-512";
  struct Spec {
    Shape x, w;
    std::vector<int64_t> pads;
    bool bias;
  };
  for (const Spec& s : {Spec{{64, 1, 28, 28}, {6, 1, 5, 5}, {2, 2, 2, 2}, true},
                        Spec{{3, 3, 10, 8}, {5, 3, 3, 3}, {1, 1, 1, 1}, true},
                        Spec{{2, 4, 9, 17}, {7, 4, 3, 2}, {0, 1, 2, 0}, false},
                        Spec{{2, 2, 6, 40}, {1, 2, 1, 1}, {0, 0, 0, 0}, true}}) {
    for (const char* op : {"Conv", "FusedConv"}) {
      SCOPED_TRACE(std::string(op) + " " + shape_to_string(s.x) + " * " + shape_to_string(s.w));
      Tensor x = random_f32(s.x, 40);
      x.data<float>()[0] = std::nanf("");  // in the window of output 0 for every spec
      const Tensor w = random_f32(s.w, 41), b = random_f32({s.w[0]}, 42);
      ir::Attributes attrs = {{"pads", s.pads}};
      const std::vector<Tensor> conv = reference("Conv", {&x, &w, s.bias ? &b : nullptr}, attrs);
      Tensor want = conv[0];
      if (std::string(op) == "FusedConv") {
        attrs.insert_or_assign("activation", std::string("Relu"));
        want = reference("Relu", {&conv[0]})[0];
      }
      KernelResult got = run_cpu({op, {&x, &w, s.bias ? &b : nullptr}, attrs, {false, false, true}, {}, ""});
      ASSERT_EQ(got.impl, "cpu.vec:conv_rows");
      expect_close(got.outputs[0], want, 1e-5, 1e-5);
      // The NaN reaches the outputs whose windows cover it, through Relu too.
      EXPECT_TRUE(std::isnan(got.outputs[0].data<float>()[0]));
    }
  }
  const Tensor x = random_f32({2, 3, 12, 12}, 43), w8 = random_f32({8, 3, 3, 3}, 44), w6 = random_f32({6, 3, 3, 3}, 45);
  // 8 output channels, stride 2, a channels-last output, two groups: oneDNN's.
  EXPECT_EQ(run_cpu({"Conv", {&x, &w8}, {}, {false, true}, {}, ""}).impl, "onednn:conv");
  EXPECT_EQ(run_cpu({"Conv", {&x, &w6}, {{"strides", std::vector<int64_t>{2, 2}}}, {false, true}, {}, ""}).impl,
            "onednn:conv");
  EXPECT_EQ(run_cpu({"Conv", {&x, &w6}, {}, {false, true}, {"nhwc"}, "nhwc"}).impl, "onednn:conv");
}

TEST(CpuVec, OptimizerUpdates) {
  const Tensor p = random_f32({37, 5}, 20), g = random_f32({37, 5}, 21), buf = random_f32({37, 5}, 22);
  const Tensor lr = Tensor::scalar<float>(0.05f), step = Tensor::scalar<float>(3.f);
  check_update("SGDUpdate", {&p, &g, &lr, &buf}, {{"momentum", 0.9}}, 2, "cpu.vec:sgd");
  check_update("SGDUpdate", {&p, &g, &lr, &buf}, {{"momentum", 0.9}, {"nesterov", int64_t{1}}, {"weight_decay", 0.01}}, 2,
               "cpu.vec:sgd");
  check_update("SGDUpdate", {&p, &g, &lr, nullptr}, {{"weight_decay", 0.1}}, 2, "cpu.vec:sgd");
  check_update("SGDUpdate", {&p, &g, &lr, &buf}, {{"momentum", 0.9}, {"grad_scale", 1.0 / 3}}, 2, "cpu.vec:sgd");
  check_update("SGDUpdate", {&p, &g, &lr, nullptr}, {{"grad_scale", 0.5}}, 2, "cpu.vec:sgd");
  const Tensor m = random_f32({37, 5}, 23), v = random_f32({37, 5}, 24, 0.f, 1.f);
  check_update("AdamUpdate", {&p, &g, &lr, &step, &m, &v}, {}, 3, "cpu.vec:adam");
  check_update("AdamUpdate", {&p, &g, &lr, &step, &m, &v}, {{"weight_decay", 0.01}, {"decoupled", int64_t{1}}}, 3, "cpu.vec:adam");
  check_update("AdamUpdate", {&p, &g, &lr, &step, &m, &v}, {{"weight_decay", 0.01}}, 3, "cpu.vec:adam");
  check_update("AdamUpdate", {&p, &g, &lr, &step, &m, &v}, {{"grad_scale", 0.25}}, 3, "cpu.vec:adam");
  // grad_scale is the data-parallel mean: the update of a summed gradient with grad_scale 1/2 is,
  // bit for bit, the update of the halved gradient, with weight decay too (the scale's product is
  // never fused with the decay's).
  Tensor half = g.clone();
  for (int64_t i = 0; i < half.numel(); ++i) half.data<float>()[i] *= 0.5f;
  const std::vector<bool> inputs(6, false);
  for (const ir::Attributes& attrs : std::vector<ir::Attributes>{
           {{"momentum", 0.9}, {"weight_decay", 0.01}}, {{"weight_decay", 0.1}}, {{"momentum", 0.9}, {"nesterov", int64_t{1}}, {"weight_decay", 0.01}}}) {
    ir::Attributes scaled = attrs;
    scaled.insert_or_assign("grad_scale", 0.5);
    const bool buffered = attrs.count("momentum") > 0;
    const KernelResult a = run_cpu({"SGDUpdate", {&p, &g, &lr, buffered ? &buf : nullptr}, scaled, inputs, {}, "", 2});
    const KernelResult b = run_cpu({"SGDUpdate", {&p, &half, &lr, buffered ? &buf : nullptr}, attrs, inputs, {}, "", 2});
    ASSERT_EQ(a.impl, "cpu.vec:sgd");
    for (size_t k = 0; k < (buffered ? 2u : 1u); ++k)
      for (int64_t i = 0; i < p.numel(); ++i)
        ASSERT_EQ(a.outputs[k].data<float>()[i], b.outputs[k].data<float>()[i]) << "output " << k << " element " << i;
  }
  {
    const KernelResult a = run_cpu({"AdamUpdate", {&p, &g, &lr, &step, &m, &v}, {{"weight_decay", 0.01}, {"grad_scale", 0.5}}, inputs, {}, "", 3});
    const KernelResult b = run_cpu({"AdamUpdate", {&p, &half, &lr, &step, &m, &v}, {{"weight_decay", 0.01}}, inputs, {}, "", 3});
    ASSERT_EQ(a.impl, "cpu.vec:adam");
    for (int k = 0; k < 3; ++k)
      for (int64_t i = 0; i < p.numel(); ++i)
        ASSERT_EQ(a.outputs[static_cast<size_t>(k)].data<float>()[i], b.outputs[static_cast<size_t>(k)].data<float>()[i]) << "output " << k << " element " << i;
  }
  // Past the single-thread limit: chunks over the OpenMP team.
  const Tensor bp = random_f32({300, 200}, 25), bg = random_f32({300, 200}, 26), bb = random_f32({300, 200}, 27);
  check_update("SGDUpdate", {&bp, &bg, &lr, &bb}, {{"momentum", 0.9}}, 2, "cpu.vec:sgd");
  check_update("AdamUpdate", {&bp, &bg, &lr, &step, &bb, &bb}, {}, 3, "cpu.vec:adam");
}

// The fused gradients and training-mode kernels, every output against the reference kernel.
TEST(CpuVec, TrainingKernelsMatchTheReference) {
  using Ints = std::vector<int64_t>;
  const Tensor x = random_f32({8, 6, 5, 7}, 50), dy = random_f32({8, 6, 5, 7}, 51);
  const Tensor scale = random_f32({6}, 52), bias = random_f32({6}, 53), mean = random_f32({6}, 54),
               var = random_f32({6}, 55, 0.5f, 2.f);
  check_update("BatchNormalization", {&x, &scale, &bias, &mean, &var}, {{"training_mode", int64_t{1}}, {"momentum", 0.8}}, 3,
               "cpu.vec:batchnorm_training");
  check_update("BatchNormalizationGrad", {&dy, &x, &scale}, {{"epsilon", 1e-3}}, 3, "cpu.vec:batchnorm_grad");
  const Tensor ln_x = random_f32({4, 9, 32}, 56), ln_dy = random_f32({4, 9, 32}, 57), ln_s = random_f32({32}, 58),
               ln_s2 = random_f32({9, 32}, 59);
  check_update("LayerNormalizationGrad", {&ln_dy, &ln_x, &ln_s}, {}, 3, "cpu.vec:layernorm_grad");
  check_update("LayerNormalizationGrad", {&ln_dy, &ln_x, &ln_s2}, {{"axis", int64_t{1}}}, 3, "cpu.vec:layernorm_grad");
  const Tensor a = random_f32({300, 200}, 60), b = random_f32({300, 200}, 61), c = random_f32({300, 200}, 62);
  check_update("Sum", {&a, &b, &c}, {}, 1, "cpu.vec:sum");
  check_update("Sum", {&a, &b}, {}, 1, "cpu.vec:sum");
  // Cross-entropy over [N, C] rows and over [N, C, T] sequences, with an ignored position.
  Tensor rows = random_f32({16, 10}, 63, -4.f, 4.f), seq = random_f32({3, 50, 300}, 64, -4.f, 4.f);
  Tensor rows_t(DType::kI64, {16}), seq_t(DType::kI64, {3, 300});
  for (int64_t i = 0; i < 16; ++i) rows_t.data<int64_t>()[i] = (i * 7) % 10;
  for (int64_t i = 0; i < 900; ++i) seq_t.data<int64_t>()[i] = (i * 13) % 50;
  seq_t.data<int64_t>()[5] = -100;
  const Tensor g = Tensor::scalar<float>(0.7f);
  for (const char* red : {"mean", "sum"}) {
    SCOPED_TRACE(red);
    check_update("SoftmaxCrossEntropyLoss", {&rows, &rows_t}, {{"reduction", std::string(red)}}, 1, "cpu.vec:softmax_cross_entropy");
    check_update("SoftmaxCrossEntropyLoss", {&seq, &seq_t}, {{"reduction", std::string(red)}, {"ignore_index", int64_t{-100}}}, 1,
                 "cpu.vec:softmax_cross_entropy");
    check_update("SoftmaxCrossEntropyLossGrad", {&g, &rows, &rows_t}, {{"reduction", std::string(red)}}, 1,
                 "cpu.vec:softmax_cross_entropy_grad");
    check_update("SoftmaxCrossEntropyLossGrad", {&g, &seq, &seq_t}, {{"reduction", std::string(red)}, {"ignore_index", int64_t{-100}}},
                 1, "cpu.vec:softmax_cross_entropy_grad");
  }
  // Enough positions to split the examples over the threads (a character LM's logits).
  Tensor lm = random_f32({4, 60, 300}, 67, -4.f, 4.f), lm_t(DType::kI64, {4, 300});
  for (int64_t i = 0; i < 1200; ++i) lm_t.data<int64_t>()[i] = (i * 11) % 60;
  check_update("SoftmaxCrossEntropyLoss", {&lm, &lm_t}, {}, 1, "cpu.vec:softmax_cross_entropy");
  check_update("SoftmaxCrossEntropyLossGrad", {&g, &lm, &lm_t}, {}, 1, "cpu.vec:softmax_cross_entropy_grad");
  // An embedding's gradient: dY's rows added at their tokens' rows, repeated and negative indices.
  const Tensor table = random_f32({10, 24}, 68), upd = random_f32({3, 5, 24}, 69);
  Tensor rows_i(DType::kI64, {3, 5, 1});
  for (int64_t i = 0; i < 15; ++i) rows_i.data<int64_t>()[i] = (i * 3) % 10 - (i == 4 ? 10 : 0);
  check("ScatterND", {&table, &rows_i, &upd}, {{"reduction", std::string("add")}}, {false, false, false},
        "cpu.vec:scatter_rows_add");
  Tensor far = rows_i.clone();
  far.data<int64_t>()[7] = 10;
  KernelResult far_run = run_cpu({"ScatterND", {&table, &far, &upd}, {{"reduction", std::string("add")}}, {false, false, false}, {},
                                  "", 1, "", true});
  EXPECT_NE(far_run.error.find("index 10 is out of range for axis 0 of size 10"), std::string::npos) << far_run.error;
  // A target out of range is an error naming it, not a read past the row.
  Tensor bad_t = rows_t.clone();
  bad_t.data<int64_t>()[3] = 10;
  KernelResult bad = run_cpu({"SoftmaxCrossEntropyLoss", {&rows, &bad_t}, {}, {false, false}, {}, "", 1, "", true});
  EXPECT_NE(bad.error.find("out of range"), std::string::npos) << bad.error;
  // A diverged score makes the loss NaN (the trainer's diagnosis starts there), not a crash.
  Tensor nan_rows = rows.clone();
  nan_rows.data<float>()[7] = NAN;
  KernelResult nan_loss = run_cpu({"SoftmaxCrossEntropyLoss", {&nan_rows, &rows_t}, {}, {false, false}, {}, "", 1});
  ASSERT_EQ(nan_loss.outputs.size(), 1u);
  EXPECT_TRUE(std::isnan(nan_loss.outputs[0].get(0)));
  // ReduceMean with the axes as an attribute (opsets before 18, as autodiff emits it).
  check_update("ReduceMean", {&x}, {{"axes", Ints{0, 2, 3}}, {"keepdims", int64_t{1}}}, 1, "cpu.vec:reduce_mean");
  // oneDNN's backward activations.
  const Tensor big = random_f32({4, 64, 33}, 65, -3.f, 3.f), big_dy = random_f32({4, 64, 33}, 66);
  check_update("GeluGrad", {&big_dy, &big}, {}, 1, "onednn:gelu_grad");
  check_update("GeluGrad", {&big_dy, &big}, {{"approximate", std::string("tanh")}}, 1, "onednn:gelu_grad");
  Tensor soft = random_f32({4, 64, 33}, 67, 0.f, 1.f);
  check_update("SoftmaxGrad", {&big_dy, &soft}, {{"axis", int64_t{-1}}}, 1, "onednn:softmax_grad");
  check_update("SoftmaxGrad", {&big_dy, &soft}, {{"axis", int64_t{1}}}, 1, "onednn:softmax_grad");
}

// The vectorisable exp of the loss kernels: within 2 ulp of std::exp over its range, 0 below it,
// inf above, NaN for NaN (a diverged loss must stay NaN, and never reach the exponent's int cast).
TEST(CpuVec, VexpMatchesStdExp) {
  for (float x = -87.f; x < 88.f; x += 0.37f) {
    const float want = std::exp(x), got = cpu::vexp(x);
    EXPECT_LE(std::fabs(got - want), 2.5f * std::fabs(std::nextafter(want, INFINITY) - want)) << x;
  }
  EXPECT_EQ(cpu::vexp(-100.f), 0.f);
  EXPECT_EQ(cpu::vexp(-INFINITY), 0.f);
  EXPECT_EQ(cpu::vexp(100.f), INFINITY);
  EXPECT_TRUE(std::isnan(cpu::vexp(NAN)));
}

TEST(CpuVec, ReluGrad) {
  Tensor y = random_f32({4, 6, 5, 5}, 40), dy = random_f32({4, 6, 5, 5}, 41);
  y.data<float>()[0] = 0.f;  // the kink: 0, as PyTorch
  check("ReluGrad", {&dy, &y}, {}, {false, false}, "cpu.vec:relu_grad");
  const Tensor big_y = random_f32({64, 6, 28, 28}, 42), big_dy = random_f32({64, 6, 28, 28}, 43);
  check("ReluGrad", {&big_dy, &big_y}, {}, {false, false}, "cpu.vec:relu_grad");
}

TEST(CpuVec, CastErfPow) {
  const Tensor x = Tensor::from_vector<float>({6}, {-2.7f, -0.5f, 0.f, 0.9f, 3.5f, NAN});
  check("Cast", {&x}, {{"to", "i64"}}, {false}, "cpu.vec:cast");
  const Tensor n = i64({4}, {-3, 0, 7, 1 << 20});
  check("Cast", {&n}, {{"to", "f32"}}, {false}, "cpu.vec:cast");
  const Tensor e = random_f32({5, 9}, 9, -3, 3);
  check("Erf", {&e}, {}, {false}, "cpu.vec:erf");
  const Tensor pos = random_f32({5, 9}, 10, 0.1f, 3);
  for (float p : {2.f, 3.f, 0.5f, 1.7f}) {
    const Tensor exponent = Tensor::scalar<float>(p);
    check("Pow", {&pos, &exponent}, {}, {false, true}, "cpu.vec:pow");
  }
}

TEST(CpuVec, HardSigmoid) {
  const Tensor x = random_f32({3, 50}, 12, -8, 8);
  check("HardSigmoid", {&x}, {}, {false}, "cpu.vec:unary");
  check("HardSigmoid", {&x}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}}, {false}, "cpu.vec:unary");
}

// Resize of the last two axes against the reference kernel: every mode and coordinate transform
// the zoo's exporters write, up and down, with scales and with sizes.
TEST(CpuVec, Resize) {
  const Tensor x = random_f32({2, 3, 5, 7}, 13);
  const Tensor no_roi = Tensor::from_vector<float>({0}, {});
  const struct {
    const char* mode;
    const char* coord;
    std::vector<float> scales;
  } cases[] = {
      {"linear", "pytorch_half_pixel", {1, 1, 2, 2}},  {"linear", "half_pixel", {1, 1, 0.6f, 1.5f}},
      {"linear", "align_corners", {1, 1, 2, 3}},       {"nearest", "asymmetric", {1, 1, 2, 2}},
      {"nearest", "half_pixel", {1, 1, 0.5f, 3}},      {"cubic", "half_pixel", {1, 1, 2, 1.5f}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " " + c.coord);
    const Tensor scales = Tensor::from_vector<float>({4}, c.scales);
    const ir::Attributes attrs{{"mode", c.mode}, {"coordinate_transformation_mode", c.coord}};
    check("Resize", {&x, &no_roi, &scales}, attrs, {false, true, true}, "cpu.vec:resize");
  }
  const Tensor sizes = i64({4}, {2, 3, 9, 4});
  check("Resize", {&x, &no_roi, nullptr, &sizes}, {{"mode", "linear"}}, {false, true, true, true}, "cpu.vec:resize");
  // Resizing a leading axis, or run-time scales, stays with the reference kernel.
  const Tensor lead = Tensor::from_vector<float>({4}, {2, 1, 1, 1});
  EXPECT_EQ(run_cpu({"Resize", {&x, &no_roi, &lead}, {}, {false, true, true}, {}, ""}).impl, "");
  const Tensor up = Tensor::from_vector<float>({4}, {1, 1, 2, 2});
  EXPECT_EQ(run_cpu({"Resize", {&x, &no_roi, &up}, {}, {false, true, false}, {}, ""}).impl, "");
}

TEST(CpuVec, PadConstant) {
  const Tensor x = random_f32({2, 3, 4, 5}, 14);
  const Tensor pads = i64({8}, {0, 1, 2, 3, 1, 0, 1, 2});
  check("Pad", {&x, &pads}, {}, {false, true}, "cpu.vec:pad");
  const Tensor value = Tensor::scalar<float>(-1.5f);
  const Tensor crop = i64({8}, {0, 0, -1, 2, 0, -1, 1, -2});  // negative pads crop
  check("Pad", {&x, &crop, &value}, {}, {false, true, true}, "cpu.vec:pad");
  const Tensor axes = i64({2}, {-1, 1}), two = i64({4}, {3, 1, 0, 2});
  check("Pad", {&x, &two, &value, &axes}, {}, {false, true, true, true}, "cpu.vec:pad");
  EXPECT_EQ(run_cpu({"Pad", {&x, &pads}, {{"mode", "reflect"}}, {false, true}, {}, ""}).impl, "");
}

// The vectorised binary kernel: every numpy broadcast, both operands broadcasting included (what
// oneDNN 2.6 leaves to its reference implementation or declines).
TEST(CpuVec, BinaryBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{1, 64, 3, 7, 7}, {1, 64, 1, 7, 7}},  // Swin-T's window mask
      {{4, 1, 5}, {1, 3, 1}},                // both broadcast
      {{2, 3, 4}, {4}},
      {{2, 3, 4}, {}},
      {{3, 1}, {3, 4}},
      {{5}, {5}},
  };
  for (const auto& [sa, sb] : shapes)
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
      SCOPED_TRACE(std::string(op) + " " + shape_to_string(sa) + " " + shape_to_string(sb));
      const Tensor a = random_f32(sa, 15), b = random_f32(sb, 16, 0.5f, 2.f);
      KernelResult got = run_cpu({op, {&a, &b}, {}, {false, false}, {}, "", 1, "cpu.vec:binary"});
      ASSERT_EQ(got.impl, "cpu.vec:binary");
      expect_close(got.outputs[0], reference(op, {&a, &b})[0], 1e-6, 1e-6);
    }
}

TEST(CpuVec, EqualBroadcasting) {
  // Clip's gradient: Equal(X, Clip(X)) is true where X passed unchanged; and a scalar bound.
  const Tensor x = random_f32({3, 5, 7}, 20);
  Tensor clipped = x.clone();
  for (int64_t i = 0; i < clipped.numel(); ++i)
    clipped.data<float>()[i] = std::clamp(clipped.data<float>()[i], -0.5f, 0.5f);
  const Tensor zero = Tensor::scalar<float>(0.f), row = random_f32({7}, 21);
  for (const char* op : {"Equal"})
    for (const Tensor* other : std::vector<const Tensor*>{&clipped, &zero, &row}) {
      SCOPED_TRACE(std::string(op) + " " + shape_to_string(other->shape()));
      KernelResult got = run_cpu({op, {&x, other}, {}, {false, false}, {}, "", 1, "cpu.vec:binary"});
      ASSERT_EQ(got.impl, "cpu.vec:binary");
      const Tensor want = reference(op, {&x, other})[0];
      EXPECT_TRUE(got.outputs[0].equals(want)) << got.outputs[0].summary() << " vs " << want.summary();
    }
}

TEST(CpuVec, ConcatChannelsLast) {
  const Tensor a = random_f32({2, 3, 4, 5}, 17), b = random_f32({2, 5, 4, 5}, 18), c = random_f32({2, 1, 4, 5}, 19);
  KernelResult got = run_cpu({"Concat", {&a, &b, &c}, {{"axis", int64_t{1}}}, {false, false, false}, {"nhwc", "nhwc", "nhwc"}, "nhwc"});
  ASSERT_EQ(got.impl, "cpu.vec:concat_nhwc");
  expect_close(got.outputs[0], reference("Concat", {&a, &b, &c}, {{"axis", int64_t{1}}})[0], 0, 0);
  // Plain buffers stay with oneDNN's concat.
  EXPECT_EQ(run_cpu({"Concat", {&a, &b}, {{"axis", int64_t{1}}}, {false, false}, {}, ""}).impl, "onednn:concat");
}

TEST(CpuVec, BlockedLayoutIsAnError) {
  const Tensor x = random_f32({1, 16, 2, 2}, 11);
  ir::Graph g("t");
  const ir::ValueId v = g.add_input("x", ir::TensorType::of(DType::kF32, x.shape()));
  const ir::NodeId id = g.add_node("Identity", {v}, 1, "id");
  g.set_outputs(g.node(id).outputs);
  ASSERT_TRUE(ops::infer_types(g, ops_registry()).is_ok());
  backend::KernelInit init{g.node(id),
                           *ops_registry().find("Identity"),
                           {&g.value(v).type},
                           {&g.value(g.node(id).outputs[0]).type},
                           {nullptr},
                           {"nChw16c"},
                           "",
                           1};
  auto k = kernels().candidates("Identity")[0]->factory(init);
  EXPECT_FALSE(k.has_value());
}

}  // namespace
}  // namespace tessera::cpu_test

namespace tessera::cpu_test {
namespace {

// RoiAlign (Faster R-CNN's heads): regions inside, across the border and outside the image, in
// both modes and both coordinate conventions, with and without a sampling ratio, against the
// reference kernel (double) to float rounding; a bad batch index is the reference's error.
TEST(CpuVec, RoiAlignMatchesTheReference) {
  const Tensor x = random_f32({2, 5, 13, 11}, 1, -2, 2);
  const Tensor rois = Tensor::from_vector<float>({5, 4}, {0.5f, 1.f, 8.f, 9.5f,   -3.f, -2.f, 4.f, 3.f,  2.f, 2.f, 2.4f, 2.2f,
                                                          10.f, 12.f, 30.f, 40.f, 20.f, 20.f, 25.f, 28.f});
  const Tensor batch = Tensor::from_vector<int64_t>({5}, {0, 1, 1, 0, 1});
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2}) {
        SCOPED_TRACE(std::string(mode) + " " + ctm + " ratio " + std::to_string(ratio));
        const ir::Attributes attrs = {{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string(ctm)},
                                      {"output_height", int64_t{3}}, {"output_width", int64_t{4}},
                                      {"sampling_ratio", ratio}, {"spatial_scale", 0.5}};
        const std::vector<const Tensor*> in = {&x, &rois, &batch};
        const KernelResult got = run_cpu({"RoiAlign", in, attrs, {false, false, false}, {}, ""});
        ASSERT_EQ(got.impl, "cpu.vec:roi_align");
        expect_close(got.outputs[0], reference("RoiAlign", in, attrs)[0], 1e-5, 1e-6);
      }
  const Tensor bad = Tensor::from_vector<int64_t>({5}, {0, 1, 2, 0, 1});
  Case c{"RoiAlign", {&x, &rois, &bad}, {{"output_height", int64_t{2}}, {"output_width", int64_t{2}}}, {false, false, false}, {}, ""};
  c.expect_run_error = true;
  EXPECT_NE(run_cpu(c).error.find("batch_indices[2] = 2 is outside [0, 2)"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cpu_test

namespace tessera::cpu_test {
namespace {

// The setup-free kernels of a decoder step (vec_small.cpp) against the reference kernels: MatMul
// of a few rows by a run-time operand with broadcast batch axes, Softmax over the last axis (a
// NaN row stays NaN), Concat of plain buffers on every axis; larger shapes go to oneDNN.
TEST(CpuVec, SmallKernelsMatchTheReference) {
  const Tensor a = random_f32({2, 4, 1, 64}, 1), b = random_f32({2, 4, 64, 37}, 2), b1 = random_f32({1, 4, 64, 37}, 3);
  for (const Tensor* rhs : {&b, &b1}) {
    const KernelResult got = run_cpu({"MatMul", {&a, rhs}, {}, {false, false}, {}, "", 1, "cpu.vec:small_matmul"});
    ASSERT_EQ(got.impl, "cpu.vec:small_matmul");
    expect_close(got.outputs[0], reference("MatMul", {&a, rhs})[0], 1e-5, 1e-6);
  }
  const Tensor big = random_f32({64, 64}, 4);
  EXPECT_EQ(run_cpu({"MatMul", {&big, &big}, {}, {false, false}, {}, "", 1, "cpu.vec:small_matmul"}).impl, "") << "64 rows decline";
  EXPECT_EQ(run_cpu({"MatMul", {&a, &b}, {}, {false, false}, {}, ""}).impl, "onednn:matmul") << "static programs keep oneDNN";
  Tensor s = random_f32({3, 5, 19}, 5, -30, 30);
  s.data<float>()[19 + 4] = std::nanf("");
  const KernelResult sm = run_cpu({"Softmax", {&s}, {{"axis", int64_t{-1}}}, {false}, {}, "", 1, "cpu.vec:small_softmax"});
  ASSERT_EQ(sm.impl, "cpu.vec:small_softmax");
  expect_close(sm.outputs[0], reference("Softmax", {&s}, {{"axis", int64_t{-1}}})[0], 1e-5, 1e-7);
  EXPECT_TRUE(std::isnan(sm.outputs[0].data<float>()[19 + 7])) << "a row with a NaN is NaN";
  const Tensor c1 = random_f32({2, 3, 4}, 6), c2 = random_f32({2, 3, 1}, 7), c3 = random_f32({2, 3, 0}, 8);
  const KernelResult cat = run_cpu({"Concat", {&c1, &c2, &c3}, {{"axis", int64_t{2}}}, {false, false, false}, {}, "", 1, "cpu.vec:concat"});
  ASSERT_EQ(cat.impl, "cpu.vec:concat");
  EXPECT_TRUE(cat.outputs[0].equals(reference("Concat", {&c1, &c2, &c3}, {{"axis", int64_t{2}}})[0]));
  const Tensor d1 = random_f32({1, 4, 7, 8}, 9), d2 = random_f32({1, 4, 1, 8}, 10);
  const KernelResult cat2 = run_cpu({"Concat", {&d1, &d2}, {{"axis", int64_t{-2}}}, {false, false}, {}, "", 1, "cpu.vec:concat"});
  ASSERT_EQ(cat2.impl, "cpu.vec:concat");
  EXPECT_TRUE(cat2.outputs[0].equals(reference("Concat", {&d1, &d2}, {{"axis", int64_t{-2}}})[0]));
}

}  // namespace
}  // namespace tessera::cpu_test
