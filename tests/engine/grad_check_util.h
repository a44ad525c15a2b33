// The gradient check behind the table-driven autodiff test: for one op with f64 inputs, builds
//   loss = sum_k sum(output_k * W_k)      (W_k fixed random weights)
// differentiates it with autodiff, runs the gradient graph on the reference kernels and compares
// every element of every checked input's gradient with a central finite difference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/autodiff/autodiff.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera::gradcheck {

struct GradCase {
  std::string op;
  std::vector<std::optional<Tensor>> inputs;  // std::nullopt: an absent optional input
  ir::Attributes attrs = {};
  int num_outputs = 1;
  std::vector<int> wrt = {};  // inputs to check; empty: every f64 input
  std::string label = {};     // tells cases of one op apart
  double atol = 1e-6, rtol = 1e-5;
  // Outer values that nested graphs (If branches, Loop bodies) capture by name: graph inputs that
  // are differentiated and checked like the node's own inputs.
  std::vector<std::pair<std::string, Tensor>> captured = {};
};

// Uniform f64 values in [lo, hi), deterministic for a seed.
inline Tensor rnd(Shape shape, uint64_t seed = 1, double lo = -1.0, double hi = 1.0) {
  Tensor t(DType::kF64, std::move(shape));
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<double>()[i] = lo + (hi - lo) * static_cast<double>(gen() >> 11) / 9007199254740992.0;
  return t;
}
inline Tensor i64s(Shape shape, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(shape), v); }
inline Tensor ints1(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
inline Tensor f64s(Shape shape, std::vector<double> v) { return Tensor::from_vector<double>(std::move(shape), v); }
inline Tensor scalar(double v) { return Tensor::scalar<double>(v); }

inline std::string case_name(const GradCase& c) { return c.op + (c.label.empty() ? "" : "[" + c.label + "]"); }
inline void PrintTo(const GradCase& c, std::ostream* os) { *os << case_name(c); }

// Builds the loss graph; `differentiate` adds the gradient outputs.
// Checked value k is node input checked[k] when checked[k] >= 0, else captured[-1 - checked[k]].
inline std::string checked_name(const GradCase& c, int k) {
  return k >= 0 ? "in" + std::to_string(k) : c.captured[static_cast<size_t>(-1 - k)].first;
}
inline const Tensor& checked_value(const GradCase& c, int k) {
  return k >= 0 ? *c.inputs[static_cast<size_t>(k)] : c.captured[static_cast<size_t>(-1 - k)].second;
}

inline Expected<ir::Graph> build_case_graph(const GradCase& c, const ops::OpRegistry& reg, bool differentiate,
                                            std::vector<int>& checked) {
  ir::Graph g("gradcheck");
  std::vector<ir::ValueId> ins, xs;
  checked.clear();
  for (size_t j = 0; j < c.captured.size(); ++j) {
    const Tensor& t = c.captured[j].second;
    xs.push_back(g.add_input(c.captured[j].first, ir::TensorType::of(t.dtype(), t.shape())));
    checked.push_back(-1 - static_cast<int>(j));
  }
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i]) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    const Tensor& t = *c.inputs[i];
    bool want = t.dtype() == DType::kF64 &&
                (c.wrt.empty() || std::find(c.wrt.begin(), c.wrt.end(), static_cast<int>(i)) != c.wrt.end());
    if (want) {
      ins.push_back(g.add_input("in" + std::to_string(i), ir::TensorType::of(t.dtype(), t.shape())));
      xs.push_back(ins.back());
      checked.push_back(static_cast<int>(i));
    } else {
      ins.push_back(g.add_param("in" + std::to_string(i), t));
    }
  }
  ir::NodeId n = g.add_node(c.op, ins, c.num_outputs, "node", c.attrs);
  RETURN_IF_ERROR(ops::infer_types(g, reg));
  std::vector<ir::ValueId> parts;
  for (int k = 0; k < c.num_outputs; ++k) {
    ir::ValueId out = g.node(n).outputs[static_cast<size_t>(k)];
    const ir::TensorType& t = g.value(out).type;
    if (t.dtype != DType::kF64 || !t.is_static()) continue;
    ir::ValueId w = g.add_param("w" + std::to_string(k), rnd(t.static_shape(), 1000 + static_cast<uint64_t>(k)));
    ir::ValueId prod = g.node(g.add_node("Mul", {out, w}, 1)).outputs[0];
    parts.push_back(g.node(g.add_node("ReduceSum", {prod}, 1, "", {{"keepdims", int64_t{0}}})).outputs[0]);
  }
  if (parts.empty()) return make_error("op " + c.op + " has no f64 output to differentiate");
  ir::ValueId loss = parts.size() == 1 ? parts[0] : g.node(g.add_node("Sum", parts, 1)).outputs[0];
  RETURN_IF_ERROR(ops::infer_types(g, reg));
  std::vector<ir::ValueId> outs{loss};
  if (differentiate) {
    TRY(std::vector<ir::ValueId> grads, autodiff::add_gradients(g, reg, {loss}, {}, xs));
    outs.insert(outs.end(), grads.begin(), grads.end());
  }
  g.set_outputs(outs);
  RETURN_IF_ERROR(ops::infer_types(g, reg));
  return g;
}

// Runs the check; failures are reported through gtest with the case name.
inline void check_gradient(const GradCase& c, const ops::OpRegistry& reg) {
  SCOPED_TRACE(case_name(c));
  std::vector<int> checked;
  auto graph = build_case_graph(c, reg, true, checked);
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  ASSERT_FALSE(checked.empty()) << "the case checks no input";
  runtime::Feeds feeds;
  for (int i : checked) feeds[checked_name(c, i)] = checked_value(c, i).clone();
  auto res = runtime::run_reference(*graph, reg, feeds);
  ASSERT_TRUE(res.has_value()) << res.error().to_string();
  std::vector<int> unused;
  auto fwd = build_case_graph(c, reg, false, unused);
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  auto loss_at = [&](const runtime::Feeds& f) -> double {
    auto r = runtime::run_reference(*fwd, reg, f);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
    return r ? (*r)[0].get(0) : NAN;
  };
  for (size_t j = 0; j < checked.size(); ++j) {
    const std::string name = checked_name(c, checked[j]);
    const Tensor& analytic = (*res)[1 + j];
    const Tensor& x = checked_value(c, checked[j]);
    ASSERT_EQ(analytic.shape(), x.shape()) << "gradient of " << name;
    int failures = 0;
    for (int64_t e = 0; e < x.numel() && failures < 5; ++e) {
      const double eps = 1e-6 * std::max(1.0, std::fabs(x.get(e)));
      runtime::Feeds fp = feeds, fm = feeds;
      fp[name] = x.clone();
      fm[name] = x.clone();
      fp[name].set(e, x.get(e) + eps);
      fm[name].set(e, x.get(e) - eps);
      double numeric = (loss_at(fp) - loss_at(fm)) / (2 * eps);
      double got = analytic.get(e);
      if (!(std::fabs(got - numeric) <= c.atol + c.rtol * std::fabs(numeric))) {
        ++failures;
        ADD_FAILURE() << case_name(c) << ": d loss / d " << name << "[" << e << "] = " << got
                      << ", finite difference " << numeric;
      }
    }
  }
}

}  // namespace tessera::gradcheck
