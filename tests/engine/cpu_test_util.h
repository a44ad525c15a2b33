// Harness for the CPU kernel tests: builds the KernelInit of a one-node graph, runs the chosen CPU
// kernel on planner-like buffers (outputs pre-filled with NaN sentinels) and returns plain tensors;
// blocked layouts are packed and unpacked here by hand (independently of oneDNN), and the
// reference kernels (runtime::run_single_op) give the expected values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/kernel.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"

namespace tessera::cpu_test {

// The op registry, plus test stand-ins for the fused ops when engine/ops/fused.cpp lacks them
// (schema only: Conv / MatMul / Gemm inference and attributes plus the activation attributes).
inline const ops::OpRegistry& ops_registry() {
  static const ops::OpRegistry r = [] {
    ops::OpRegistry reg = ops::make_default_registry();
    const auto add_fused = [&reg](const char* name, const char* base, int extra_inputs) {
      if (reg.find(name)) return;
      ops::OpDef def = *reg.find(base);
      def.name = name;
      def.reference = nullptr;
      if (extra_inputs == 2) def.input("Bias", "", /*optional=*/true);
      def.input("Z", "residual of Y's shape", /*optional=*/true);
      def.attr("activation", ir::AttrKind::kString, ir::Attribute(""), "")
          .attr("activation_alpha", ir::AttrKind::kFloat, ir::Attribute(0.01), "")
          .attr("activation_beta", ir::AttrKind::kFloat, ir::Attribute(0.0), "");
      reg.add(std::move(def));
    };
    add_fused("FusedConv", "Conv", 1);      // X W B? + Z?
    add_fused("FusedMatMul", "MatMul", 2);  // A B + Bias? Z?
    add_fused("FusedGemm", "Gemm", 1);      // A B C? + Z?
    return reg;
  }();
  return r;
}

inline const backend::KernelRegistry& kernels() {
  static const backend::KernelRegistry r = [] {
    backend::KernelRegistry k;
    cpu::register_cpu_kernels(k);
    return k;
  }();
  return r;
}

inline Tensor random_f32(Shape shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// Uniform 8-bit integers over the whole range of u8 or i8 (the int8 kernels' tests).
inline Tensor random_q(DType dt, Shape s, uint32_t seed) {
  std::mt19937 gen(seed);
  const int lo = dt == DType::kU8 ? 0 : -128, hi = dt == DType::kU8 ? 255 : 127;
  std::uniform_int_distribution<int> u(lo, hi);
  Tensor t(dt, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(gen));
  return t;
}
inline Tensor scalar_f32(float v) { return Tensor::from_vector<float>({}, {v}); }
inline Tensor scalar_q(DType dt, double v) { return Tensor::from_doubles(dt, {}, {v}); }

// The channel block of a layout for a tensor of `shape`: 0 for plain; channels-last ("nhwc") is
// one block of all the channels.
inline int block_of(const std::string& layout, const Shape& shape) {
  if (layout.empty()) return 0;
  if (layout == "nhwc") return static_cast<int>(shape.size() > 1 ? shape[1] : 1);
  return layout.find("16c") != std::string::npos ? 16 : 8;
}

// Plain NC... <-> nC...Bc (channel blocks of B, padded with zeros), by hand.
inline std::vector<float> to_blocked(const Tensor& t, int b) {
  const int64_t n = t.dim(0), c = t.dim(1), sp = t.numel() / std::max<int64_t>(1, n * c);
  const int64_t cb = (c + b - 1) / b;
  std::vector<float> out(static_cast<size_t>(n * cb * sp * b), 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < sp; ++s)
        out[static_cast<size_t>(((i * cb + ch / b) * sp + s) * b + ch % b)] =
            t.data<float>()[(i * c + ch) * sp + s];
  return out;
}
inline Tensor from_blocked(const float* p, const Shape& shape, int b) {
  Tensor t(DType::kF32, shape);
  const int64_t n = shape[0], c = shape[1], sp = t.numel() / std::max<int64_t>(1, n * c);
  const int64_t cb = (c + b - 1) / b;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < sp; ++s)
        t.data<float>()[(i * c + ch) * sp + s] = p[((i * cb + ch / b) * sp + s) * b + ch % b];
  return t;
}

struct KernelResult {
  std::vector<Tensor> outputs;
  std::string impl;  // the kernel that ran, "" when every CPU kernel declined
  std::string detail;  // its Kernel::detail() (oneDNN's implementation)
  std::string error;  // the run's error (Case::expect_run_error)
};

struct Case {
  std::string op;
  std::vector<const Tensor*> inputs;  // nullptr: absent optional input
  ir::Attributes attrs;
  std::vector<bool> constant;  // per input: a param (compile-time constant) or a graph input
  std::vector<std::string> in_layouts;
  std::string out_layout;
  int num_outputs = 1;
  std::string impl = {};  // only this implementation (when several kernels serve the op)
  bool expect_run_error = false;  // the run fails (bad data): KernelResult::error, no outputs
  bool bf16 = false;              // KernelInit::bf16
};

// Runs the highest-priority CPU kernel that accepts the case. Declining everywhere gives an empty
// impl; a factory, load or run error fails the test.
inline KernelResult run_cpu(const Case& c) {
  KernelResult res;
  ir::Graph g("case");
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!c.inputs[i])
      ins.push_back(ir::kNoValue);
    else if (i < c.constant.size() && c.constant[i])
      ins.push_back(g.add_param(name, *c.inputs[i]));
    else
      ins.push_back(
          g.add_input(name, ir::TensorType::of(c.inputs[i]->dtype(), c.inputs[i]->shape())));
  }
  const ir::NodeId id = g.add_node(c.op, ins, c.num_outputs, "n0", c.attrs);
  g.set_outputs(g.node(id).outputs);
  Status st = ops::infer_types(g, ops_registry());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (!st) return res;
  const ir::Node& node = g.node(id);
  backend::KernelInit init{node, *ops_registry().find(c.op), {}, {}, {}, {}, c.out_layout, 2};
  init.bf16 = c.bf16;
  for (size_t i = 0; i < ins.size(); ++i) {
    init.in_types.push_back(ins[i] == ir::kNoValue ? nullptr : &g.value(ins[i]).type);
    init.constants.push_back(ins[i] == ir::kNoValue ? nullptr : ops::constant_value(g, ins[i]));
    init.in_layouts.push_back(i < c.in_layouts.size() ? c.in_layouts[i] : "");
  }
  for (ir::ValueId v : node.outputs) init.out_types.push_back(&g.value(v).type);
  std::unique_ptr<backend::Kernel> kernel;
  for (const auto* e : kernels().candidates(c.op)) {
    if (!c.impl.empty() && e->impl != c.impl) continue;
    auto k = e->factory(init);
    EXPECT_TRUE(k.has_value()) << k.error().to_string();
    if (!k) return res;
    if (*k) {
      kernel = std::move(*k);
      break;
    }
  }
  if (!kernel) return res;
  res.impl = kernel->name();
  res.detail = kernel->detail();
  st = kernel->load();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (!st) return res;
  // Buffers: inputs in their layouts, outputs and scratch filled with NaN sentinels.
  std::vector<std::vector<float>> in_store(ins.size());
  backend::KernelRun run;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Tensor* t = c.inputs[i];
    if (!t) {
      run.inputs.push_back({});
      continue;
    }
    const int b = block_of(init.in_layouts[i], t->shape());
    if (b) {
      in_store[i] = to_blocked(*t, b);
      run.inputs.push_back({in_store[i].data(), in_store[i].size() * 4});
    } else {
      run.inputs.push_back({const_cast<void*>(t->raw_data()), t->nbytes()});
    }
  }
  std::vector<std::vector<float>> out_store;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    out_store.emplace_back((kernel->output_bytes(i) + 3) / 4, std::nanf(""));
    run.outputs.push_back({out_store.back().data(), kernel->output_bytes(i)});
  }
  std::vector<float> scratch((kernel->scratch_bytes() + 3) / 4 + 1, std::nanf(""));
  run.scratch = {scratch.data(), kernel->scratch_bytes()};
  st = kernel->run(run);
  if (c.expect_run_error) {
    EXPECT_FALSE(st.is_ok()) << "the run succeeded";
    if (!st) res.error = st.to_string();
    return res;
  }
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (!st) return res;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ir::TensorType& t = g.value(node.outputs[i]).type;
    const int b = block_of(c.out_layout, t.static_shape());
    if (b) {
      res.outputs.push_back(from_blocked(out_store[i].data(), t.static_shape(), b));
    } else {
      Tensor o(t.dtype, t.static_shape());
      if (o.nbytes()) std::memcpy(o.raw_data(), out_store[i].data(), o.nbytes());
      res.outputs.push_back(o);
    }
  }
  return res;
}

// The reference kernels' answer for a plain op.
inline std::vector<Tensor> reference(const std::string& op,
                                     const std::vector<const Tensor*>& inputs,
                                     ir::Attributes attrs = {}, int num_outputs = 1) {
  auto r =
      runtime::run_single_op_with_absent(ops_registry(), op, inputs, std::move(attrs), num_outputs);
  EXPECT_TRUE(r.has_value()) << r.error().to_string();
  return r ? *r : std::vector<Tensor>(static_cast<size_t>(num_outputs));
}

// |got - want| <= atol + rtol * |want| everywhere (NaN only where want is NaN).
inline void expect_close(const Tensor& got, const Tensor& want, double rtol = 1e-4,
                         double atol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.get(i), w = want.get(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
      ++bad;
    }
  }
}

}  // namespace tessera::cpu_test
