// The oneDNN RNN, LSTM and GRU kernels (engine/cpu/onednn_rnn.cpp) against the reference kernels:
// every direction, batch first, initial states, peepholes, both GRU reset orders, weights as
// constants (packed at load) and as graph inputs (packed every run), and what they decline.
#include "tests/engine/cpu_test_util.h"

namespace tessera::cpu_test {
namespace {

struct RnnCase {
  std::string op;
  ir::Attributes attrs;
  bool initial = false;   // initial_h (and initial_c)
  bool peephole = false;  // LSTM's P
  bool constant_weights = true;
};

void check_rnn(const RnnCase& c, const std::string& want_impl) {
  SCOPED_TRACE(c.op + (c.constant_weights ? " constant weights" : " weights as inputs"));
  const bool lstm = c.op == "LSTM";
  const int64_t G = lstm ? 4 : c.op == "GRU" ? 3 : 1;
  const int64_t T = 5, N = 3, I = 7, H = 6;
  const bool bidi = c.attrs.count("direction") && c.attrs.at("direction").s() == "bidirectional";
  const bool bf = c.attrs.count("batch_first") && c.attrs.at("batch_first").i() == 1;
  const int64_t D = bidi ? 2 : 1;
  const Tensor x = random_f32(bf ? Shape{N, T, I} : Shape{T, N, I}, 1);
  const Tensor w = random_f32({D, G * H, I}, 2, -0.5f, 0.5f), r = random_f32({D, G * H, H}, 3, -0.5f, 0.5f);
  const Tensor b = random_f32({D, 2 * G * H}, 4), h0 = random_f32(bf ? Shape{N, D, H} : Shape{D, N, H}, 5);
  const Tensor c0 = random_f32(bf ? Shape{N, D, H} : Shape{D, N, H}, 6), p = random_f32({D, 3 * H}, 7);
  std::vector<const Tensor*> in = {&x, &w, &r, &b, nullptr, c.initial ? &h0 : nullptr};
  if (lstm) in.insert(in.end(), {c.initial ? &c0 : nullptr, c.peephole ? &p : nullptr});
  while (!in.empty() && in.back() == nullptr) in.pop_back();
  const int nout = lstm ? 3 : 2;
  std::vector<bool> constant(in.size(), false);
  for (size_t i = 1; i < in.size(); ++i) constant[i] = c.constant_weights && i != 5 && i != 6;
  const KernelResult got = run_cpu({c.op, in, c.attrs, constant, {}, "", nout});
  EXPECT_EQ(got.impl, want_impl);
  if (want_impl.empty()) return;
  const std::vector<Tensor> want = reference(c.op, in, c.attrs, nout);
  ASSERT_EQ(got.outputs.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    SCOPED_TRACE("output " + std::to_string(o));
    expect_close(got.outputs[o], want[o], 1e-4, 1e-5);
  }
}

TEST(CpuRnn, MatchesTheReference) {
  const ir::Attributes bidi{{"direction", "bidirectional"}};
  for (bool constant : {true, false}) {
    check_rnn({"RNN", {}, false, false, constant}, "onednn:rnn");
    check_rnn({"RNN", {{"direction", "reverse"}, {"activations", std::vector<std::string>{"Relu"}}}, true, false, constant},
              "onednn:rnn");
    check_rnn({"LSTM", {}, false, false, constant}, "onednn:lstm");
    check_rnn({"LSTM", bidi, true, true, constant}, "onednn:lstm");
    check_rnn({"LSTM", {{"direction", "bidirectional"}, {"batch_first", int64_t{1}}}, true, false, constant},
              "onednn:lstm");
    check_rnn({"GRU", {{"direction", "reverse"}}, true, false, constant}, "onednn:gru");
    check_rnn({"GRU", {{"direction", "bidirectional"}, {"linear_before_reset", int64_t{1}}}, true, false, constant},
              "onednn:gru");
    check_rnn({"GRU", {{"batch_first", int64_t{1}}, {"linear_before_reset", int64_t{1}}}, false, false, constant},
              "onednn:gru");
  }
}

TEST(CpuRnn, WhatOneDnnDoesNotComputeDeclines) {
  check_rnn({"LSTM", {{"clip", 0.5}}}, "");
  check_rnn({"LSTM", {{"input_forget", int64_t{1}}}}, "");
  check_rnn({"GRU", {{"activations", std::vector<std::string>{"HardSigmoid", "Tanh"}}}}, "");
  check_rnn({"RNN", {{"activations", std::vector<std::string>{"Softsign"}}}}, "");
  // Sequences of different lengths.
  const Tensor x = random_f32({4, 2, 3}, 1), w = random_f32({1, 8, 3}, 2), r = random_f32({1, 8, 2}, 3);
  const Tensor lens = Tensor::from_vector<int32_t>({2}, {4, 2}), full = Tensor::from_vector<int32_t>({2}, {4, 4});
  EXPECT_EQ(run_cpu({"LSTM", {&x, &w, &r, nullptr, &lens}, {}, {false, true, true, false, true}, {}, "", 2}).impl, "");
  EXPECT_EQ(run_cpu({"LSTM", {&x, &w, &r, nullptr, &full}, {}, {false, true, true, false, true}, {}, "", 2}).impl,
            "onednn:lstm");
}

}  // namespace
}  // namespace tessera::cpu_test
