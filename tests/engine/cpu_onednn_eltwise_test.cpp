// oneDNN element-wise, binary, reduction, Concat and Reorder kernels against the reference
// kernels (ops another family has not registered yet are skipped).
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

using Ints = std::vector<int64_t>;

TEST(CpuEltwise, Unary) {
  const struct {
    const char* op;
    ir::Attributes attrs;
    float lo, hi;
  } cases[] = {
      {"Relu", {}, -2, 2},
      {"LeakyRelu", {{"alpha", 0.3}}, -2, 2},
      {"Sigmoid", {}, -6, 6},
      {"Tanh", {}, -3, 3},
      {"Exp", {}, -3, 3},
      {"Log", {}, 0.01f, 5},
      {"Sqrt", {}, 0, 5},
      {"Abs", {}, -2, 2},
      {"Gelu", {}, -3, 3},
      {"Gelu", {{"approximate", "tanh"}}, -3, 3},
      {"Elu", {{"alpha", 0.7}}, -3, 3},
      {"HardSwish", {}, -5, 5},
      {"Swish", {{"alpha", 1.0}}, -6, 6},
      {"Swish", {{"alpha", 0.5}}, -6, 6},
      {"Softplus", {}, -4, 4},
      {"Neg", {}, -2, 2},
  };
  for (const auto& c : cases) {
    if (!ops_registry().find(c.op)) continue;
    SCOPED_TRACE(c.op);
    const Tensor x = random_f32({3, 7, 5}, 81, c.lo, c.hi);
    KernelResult got = run_cpu({c.op, {&x}, c.attrs, {false}, {}, ""});
    // Relu, LeakyRelu, Exp and Log are cpu.vec:unary's (they keep NaN: cpu_special_values_test).
    const std::string op = c.op;
    ASSERT_EQ(got.impl, op == "Relu" || op == "LeakyRelu" || op == "Exp" || op == "Log" ? "cpu.vec:unary" : "onednn:eltwise");
    expect_close(got.outputs[0], reference(c.op, {&x}, c.attrs)[0]);
  }
}

TEST(CpuEltwise, BlockedRelu) {
  const Tensor x = random_f32({2, 16, 3, 5}, 82);
  KernelResult got = run_cpu({"Relu", {&x}, {}, {false}, {"nChw16c"}, "nChw16c"});
  ASSERT_EQ(got.impl, "cpu.vec:unary");
  expect_close(got.outputs[0], reference("Relu", {&x})[0]);
}

TEST(CpuEltwise, ClipWithConstantBounds) {
  const Tensor x = random_f32({4, 9}, 83, -3, 3);
  const Tensor lo = Tensor::scalar<float>(-0.5f), hi = Tensor::scalar<float>(1.25f);
  for (int form = 0; form < 3; ++form) {
    std::vector<const Tensor*> in = {&x, form != 1 ? &lo : nullptr, form != 2 ? &hi : nullptr};
    KernelResult got = run_cpu({"Clip", in, {}, {false, true, true}, {}, ""});
    ASSERT_EQ(got.impl, "cpu.vec:unary");
    expect_close(got.outputs[0], reference("Clip", in)[0]);
  }
  // Run-time bounds are read when it runs.
  KernelResult run_time = run_cpu({"Clip", {&x, &lo, &hi}, {}, {false, false, false}, {}, ""});
  ASSERT_EQ(run_time.impl, "cpu.vec:unary");
  expect_close(run_time.outputs[0], reference("Clip", {&x, &lo, &hi})[0]);
}

void check_binary(const std::string& op, const Shape& a_shape, const Shape& b_shape,
                  bool expect_kernel = true) {
  if (!ops_registry().find(op)) return;
  SCOPED_TRACE(op + " " + shape_to_string(a_shape) + " " + shape_to_string(b_shape));
  const Tensor a = random_f32(a_shape, 91), b = random_f32(b_shape, 92, 0.5f, 2.f);
  // oneDNN alone (the vectorised binary kernel takes what it declines: cpu_vec_kernels_test).
  KernelResult got = run_cpu({op, {&a, &b}, {}, {false, false}, {}, "", 1, "onednn:binary"});
  if (!expect_kernel) {
    EXPECT_EQ(got.impl, "");
    return;
  }
  ASSERT_EQ(got.impl, "onednn:binary");
  expect_close(got.outputs[0], reference(op, {&a, &b})[0]);
}

TEST(CpuBinary, Broadcasting) {
  // Max and Min are cpu.vec:binary's: oneDNN's binary_max drops NaN.
  check_binary("Max", {3, 4, 5}, {3, 4, 5}, false);
  check_binary("Min", {3, 4, 5}, {5}, false);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    check_binary(op, {3, 4, 5}, {3, 4, 5});
    check_binary(op, {3, 4, 5}, {5});
    check_binary(op, {3, 4, 5}, {4, 1});
    check_binary(op, {2, 3}, {});
  }
  // A broadcast: commutative ops and Sub swap, Div declines; both broadcast declines.
  check_binary("Add", {5}, {3, 4, 5});
  check_binary("Sub", {4, 1}, {3, 4, 5});
  check_binary("Mul", {}, {2, 3});
  check_binary("Div", {5}, {3, 4, 5}, false);
  check_binary("Add", {3, 1}, {1, 4}, false);
}

TEST(CpuBinary, BlockedSameShapeAdd) {
  const Tensor a = random_f32({2, 16, 3, 3}, 93), b = random_f32({2, 16, 3, 3}, 94);
  KernelResult got =
      run_cpu({"Add", {&a, &b}, {}, {false, false}, {"nChw16c", "nChw16c"}, "nChw16c"});
  ASSERT_EQ(got.impl, "onednn:binary");
  expect_close(got.outputs[0], reference("Add", {&a, &b})[0]);
}

TEST(CpuReduce, AxesAndKeepdims) {
  const Tensor x = random_f32({3, 4, 5}, 95);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    for (const Ints& axes : {Ints{1}, Ints{0, 2}, Ints{-1}, Ints{}}) {
      for (int64_t keep : {0, 1}) {
        SCOPED_TRACE(std::string(op) + " axes " + std::to_string(axes.size()) + " keepdims " +
                     std::to_string(keep));
        ir::Attributes attrs{{"keepdims", keep}};
        std::vector<const Tensor*> in = {&x};
        const Tensor axes_t =
            Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes);
        if (std::string(op) == "ReduceSum") {
          if (!axes.empty()) in.push_back(&axes_t);
        } else if (!axes.empty()) {
          attrs.insert_or_assign("axes", axes);
        }
        // ReduceSum has a faster vectorised kernel above this one (cpu_vec_kernels_test).
        KernelResult got = run_cpu({op, in, attrs, {false, true}, {}, "", 1, "onednn:reduction"});
        ASSERT_EQ(got.impl, "onednn:reduction");
        expect_close(got.outputs[0], reference(op, in, attrs)[0]);
      }
    }
  }
}

TEST(CpuConcat, PlainAndBlocked) {
  const Tensor a = random_f32({2, 3, 4}, 96), b = random_f32({2, 5, 4}, 97),
               c = random_f32({2, 1, 4}, 98);
  KernelResult got =
      run_cpu({"Concat", {&a, &b, &c}, {{"axis", int64_t{1}}}, {false, false, false}, {}, ""});
  ASSERT_EQ(got.impl, "onednn:concat");
  expect_close(got.outputs[0], reference("Concat", {&a, &b, &c}, {{"axis", int64_t{1}}})[0], 0, 0);
  const Tensor d = random_f32({2, 16, 3, 3}, 99), e = random_f32({2, 32, 3, 3}, 100);
  got = run_cpu({"Concat",
                 {&d, &e},
                 {{"axis", int64_t{1}}},
                 {false, false},
                 {"nChw16c", "nChw16c"},
                 "nChw16c"});
  ASSERT_EQ(got.impl, "onednn:concat");
  expect_close(got.outputs[0], reference("Concat", {&d, &e}, {{"axis", int64_t{1}}})[0], 0, 0);
}

TEST(CpuReorder, BetweenLayouts) {
  const Tensor x = random_f32({2, 24, 3, 5}, 101);
  // plain -> nChw8c (unpacked by hand) and nChw8c -> plain: exact.
  KernelResult to8 = run_cpu({"Reorder", {&x}, {{"to", "nChw8c"}}, {false}, {""}, "nChw8c"});
  ASSERT_EQ(to8.impl, "onednn:reorder");
  EXPECT_TRUE(to8.outputs[0].equals(x));
  KernelResult back = run_cpu({"Reorder", {&x}, {{"to", ""}}, {false}, {"nChw8c"}, ""});
  EXPECT_TRUE(back.outputs[0].equals(x));
  // nChw8c -> nChw16c with padding (24 channels in two blocks of 16).
  KernelResult to16 =
      run_cpu({"Reorder", {&x}, {{"to", "nChw16c"}}, {false}, {"nChw8c"}, "nChw16c"});
  EXPECT_TRUE(to16.outputs[0].equals(x));
}

}  // namespace
}  // namespace tessera::cpu_test
