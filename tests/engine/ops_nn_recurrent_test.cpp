// Tests of engine/ops/nn_recurrent.cpp beyond ONNX's backend cases (conformance) and PyTorch's
// LSTM and GRU (the zoo): sequence lengths against truncated sequences run alone, batch_first
// against the default layout, and the errors of bad shapes and attributes.
#include <gtest/gtest.h>

#include <random>

#include "engine/runtime/interpreter.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

Tensor rand_f32(Shape shape, uint32_t seed) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(gen);
  return t;
}

// Elements [lo, hi) along axis 0..rank of a contiguous tensor, as a new tensor.
Tensor take(const Tensor& t, int axis, int64_t lo, int64_t hi) {
  Shape s = t.shape();
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= s[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < s.size(); ++a) inner *= s[a];
  const int64_t n = s[static_cast<size_t>(axis)];
  s[static_cast<size_t>(axis)] = hi - lo;
  Tensor out(t.dtype(), s);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t k = 0; k < inner; ++k) out.set((o * (hi - lo) + i - lo) * inner + k, t.get((o * n + i) * inner + k));
  return out;
}

struct Case {
  std::string op;
  int gates;
  ir::Attributes attrs;
};

class Recurrent : public ::testing::TestWithParam<Case> {};

// Each sequence of a batch with sequence_lens equals that sequence alone, cut to its length:
// its steps of Y and its final states; Y is zero past the length; a length of 0 leaves the
// initial state.
TEST_P(Recurrent, LengthsEqualTruncatedSequencesRunAlone) {
  const Case& c = GetParam();
  const bool lstm = c.op == "LSTM";
  const int64_t T = 4, N = 3, I = 3, H = 2, D = 2;
  const Tensor x = rand_f32({T, N, I}, 1), w = rand_f32({D, c.gates * H, I}, 2), r = rand_f32({D, c.gates * H, H}, 3),
               b = rand_f32({D, 2 * c.gates * H}, 4), h0 = rand_f32({D, N, H}, 5), c0 = rand_f32({D, N, H}, 6),
               p = rand_f32({D, 3 * H}, 7);
  const Tensor lens = Tensor::from_vector<int32_t>({N}, {4, 2, 0});
  std::vector<const Tensor*> in = {&x, &w, &r, &b, &lens, &h0};
  if (lstm) in.insert(in.end(), {&c0, &p});
  const int nout = lstm ? 3 : 2;
  auto all = runtime::run_single_op_with_absent(registry(), c.op, in, c.attrs, nout);
  ASSERT_TRUE(all) << all.error().to_string();
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = lens.data<int32_t>()[n];
    const Tensor hn = take(h0, 1, n, n + 1), cn = take(c0, 1, n, n + 1);
    std::vector<Tensor> alone;
    if (len > 0) {
      const Tensor xn = take(take(x, 1, n, n + 1), 0, 0, len);
      std::vector<const Tensor*> one = {&xn, &w, &r, &b, nullptr, &hn};
      if (lstm) one.insert(one.end(), {&cn, &p});
      auto res = runtime::run_single_op_with_absent(registry(), c.op, one, c.attrs, nout);
      ASSERT_TRUE(res) << res.error().to_string();
      alone = *res;
    }
    const Tensor y = take((*all)[0], 2, n, n + 1);  // [T, D, 1, H]
    for (int64_t t = 0; t < T; ++t) {
      const Tensor yt = take(y, 0, t, t + 1);
      const std::vector<double> got = yt.to_doubles();
      if (t < len) {
        const std::vector<double> want = take(alone[0], 0, t, t + 1).to_doubles();
        for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << "sequence " << n << " step " << t;
      } else {
        for (double v : got) EXPECT_EQ(v, 0.0) << "sequence " << n << " step " << t << " is past its length";
      }
    }
    for (int o = 1; o < nout; ++o) {
      const std::vector<double> got = take((*all)[static_cast<size_t>(o)], 1, n, n + 1).to_doubles();
      const std::vector<double> want = len > 0 ? alone[static_cast<size_t>(o)].to_doubles()
                                               : (o == 1 ? hn : cn).to_doubles();
      for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << "sequence " << n << " state " << o;
    }
  }
}

// batch_first (ONNX's layout 1) gives the default layout's results with the axes swapped.
TEST_P(Recurrent, BatchFirstIsTheTransposedLayout) {
  const Case& c = GetParam();
  const bool lstm = c.op == "LSTM";
  const int64_t T = 3, N = 2, I = 3, H = 2, D = 2;
  const Tensor x = rand_f32({T, N, I}, 11), w = rand_f32({D, c.gates * H, I}, 12), r = rand_f32({D, c.gates * H, H}, 13),
               h0 = rand_f32({D, N, H}, 14);
  const int nout = lstm ? 3 : 2;
  auto seq = runtime::run_single_op_with_absent(registry(), c.op, {&x, &w, &r, nullptr, nullptr, &h0}, c.attrs, nout);
  ASSERT_TRUE(seq) << seq.error().to_string();
  auto xt = runtime::run_single_op(registry(), "Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  auto ht = runtime::run_single_op(registry(), "Transpose", {h0}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  ASSERT_TRUE(xt && ht);
  ir::Attributes attrs = c.attrs;
  attrs.insert_or_assign("batch_first", int64_t{1});
  auto bf = runtime::run_single_op_with_absent(registry(), c.op, {&(*xt)[0], &w, &r, nullptr, nullptr, &(*ht)[0]}, attrs, nout);
  ASSERT_TRUE(bf) << bf.error().to_string();
  auto y = runtime::run_single_op(registry(), "Transpose", {(*seq)[0]}, {{"perm", std::vector<int64_t>{2, 0, 1, 3}}});
  ASSERT_TRUE(y);
  EXPECT_TRUE((*bf)[0].equals((*y)[0])) << (*bf)[0].summary() << " vs " << (*y)[0].summary();
  auto yh = runtime::run_single_op(registry(), "Transpose", {(*seq)[1]}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  ASSERT_TRUE(yh);
  EXPECT_TRUE((*bf)[1].equals((*yh)[0]));
}

INSTANTIATE_TEST_SUITE_P(Ops, Recurrent,
                         ::testing::Values(Case{"RNN", 1, {{"direction", "bidirectional"}}},
                                           Case{"LSTM", 4, {{"direction", "bidirectional"}}},
                                           Case{"GRU", 3, {{"direction", "bidirectional"}, {"linear_before_reset", int64_t{1}}}},
                                           Case{"GRU", 3, {{"direction", "bidirectional"}}}),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.op + std::to_string(i.index); });

std::string error_of(const std::string& op, const std::vector<const Tensor*>& in, ir::Attributes attrs = {}, int nout = 2) {
  auto r = runtime::run_single_op_with_absent(registry(), op, in, std::move(attrs), nout);
  return r ? "no error" : r.error().to_string();
}

TEST(Recurrent, BadShapesAndAttributesAreErrorsNamingTheInput) {
  const Tensor x = rand_f32({3, 2, 4}, 1), w = rand_f32({1, 8, 4}, 2), r = rand_f32({1, 8, 2}, 3);
  const Tensor w_bad = rand_f32({1, 8, 5}, 4), b_bad = rand_f32({1, 8}, 5), h_bad = rand_f32({1, 3, 2}, 6);
  const Tensor x64(DType::kF64, {3, 2, 4});
  const Tensor long_lens = Tensor::from_vector<int32_t>({2}, {3, 4}), neg_lens = Tensor::from_vector<int32_t>({2}, {-1, 2});
  const Tensor float_lens = rand_f32({2}, 7);
  EXPECT_NE(error_of("LSTM", {&x, &w_bad, &r}).find("input 'W'"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r, &b_bad}).find("input 'B'"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r, nullptr, nullptr, &h_bad}).find("input 'initial_h'"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x64, &w, &r}).find("element type"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r, nullptr, &float_lens}).find("sequence_lens"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r, nullptr, &long_lens}).find("sequence_lens[1] = 4 is outside [0, 3]"),
            std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r, nullptr, &neg_lens}).find("sequence_lens[0] = -1"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r}, {{"direction", "sideways"}}).find("direction"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r}, {{"clip", 0.0}}).find("clip must be > 0"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r}, {{"hidden_size", int64_t{3}}}).find("input 'W'"), std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r}, {{"activations", std::vector<std::string>{"Sigmoid", "Tanh"}}})
                .find("activations must name 3"),
            std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r}, {{"activations", std::vector<std::string>{"Sigmoid", "Tanh", "Cosh"}}})
                .find("unknown activation \"Cosh\""),
            std::string::npos);
  EXPECT_NE(error_of("LSTM", {&x, &w, &r}, {{"batch_first", int64_t{2}}}).find("batch_first must be 0 or 1"),
            std::string::npos);
  // The fuzzer's find: a hidden_size of 2^63 - 1 overflowed G * H (UBSan) before it was bounded.
  EXPECT_NE(error_of("GRU", {&x, &w, &r}, {{"hidden_size", int64_t{9223372036854775807}}}).find("hidden_size must be in [1, 2^48]"),
            std::string::npos);
  // An RNN's W must have one gate, a GRU's three: the LSTM weights are refused by both.
  EXPECT_NE(error_of("RNN", {&x, &w, &r}).find("input 'W'"), std::string::npos);
  EXPECT_NE(error_of("GRU", {&x, &w, &r}).find("input 'W'"), std::string::npos);
}

// A sequence of T = 0 steps gives an empty Y and the initial state.
TEST(Recurrent, NoStepsLeavesTheInitialState) {
  const Tensor x(DType::kF32, {0, 2, 3});
  const Tensor w = rand_f32({1, 1, 3}, 1), r = rand_f32({1, 1, 1}, 2), h0 = rand_f32({1, 2, 1}, 3);
  auto out = runtime::run_single_op_with_absent(registry(), "RNN", {&x, &w, &r, nullptr, nullptr, &h0},
                                                {{"hidden_size", int64_t{1}}}, 2);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, 1, 2, 1}));
  EXPECT_TRUE((*out)[1].equals(h0));
}

}  // namespace
}  // namespace tessera
