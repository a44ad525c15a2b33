// Element-wise activations that keep NaN as ONNX does, on any layout (the buffer's elements one by
// one, so blocked layouts need no unpacking): Relu (x < 0 ? 0 : x), LeakyRelu, Clip (constant or
// run-time bounds; min > max gives max), Exp, Log, HardSigmoid; the loops are nan_repair.h's
// apply_activation. Registered above oneDNN's eltwise, which gives 0 for NaN in Relu, a bound in
// Clip and +inf in Exp, and whose log is 1.4e-6 off at 1.
#include <cmath>

#include "engine/cpu/nan_repair.h"
#include "engine/cpu/vec_internal.h"

namespace tessera::cpu {
namespace {

Expected<KernelPtr> make_unary(const KernelInit& init) {
  const std::string impl = "cpu.vec:unary";
  const std::string& op = init.node.op;
  if (init.in_types.empty() || !is_static_f32(init.in_types[0]) || init.out_types.size() != 1)
    return decline(init, impl, "needs static f32");
  if (layout_at(init, 0) != init.out_layout) return decline(init, impl, "input and output layouts differ");
  // Plain: the type's bytes (oneDNN's descriptors stop at rank 12); blocked: oneDNN's size.
  size_t bytes = backend::plain_bytes(*init.out_types[0]);
  if (!init.out_layout.empty()) {
    Expected<memory::desc> md = make_error("");
    Status st = guarded(impl, [&] { md = layout_md(dims_of(*init.in_types[0]), init.out_layout); });
    if (!st) return decline(init, impl, st.error().message);
    if (!md) return decline(init, impl, md.error().message);
    bytes = md->get_size();
  }
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  ExactActivation act;
  std::vector<bool> run_time_bound(3, false);  // Clip's bounds read each run
  if (op == "Clip") {
    act.fn = ActFn::kClip;
    act.a = -INFINITY, act.b = INFINITY;
    for (size_t i = 1; i < 3; ++i) {
      const ir::TensorType* t = input_type(init, i);
      if (!t) continue;
      if (t->dtype != DType::kF32 || t->static_numel() != 1) return decline(init, impl, "Clip bounds must be one f32");
      if (const Tensor* c = constant_at(init, i))
        (i == 1 ? act.a : act.b) = static_cast<float>(c->get(0));
      else
        run_time_bound[i] = true;
    }
  } else if (op == "LeakyRelu") {
    act = {ActFn::kLeakyRelu, static_cast<float>(init.attrs().f("alpha"))};
  } else if (op == "Exp") {
    act.fn = ActFn::kExp;
  } else if (op == "Log") {
    act.fn = ActFn::kLog;
  } else if (op == "HardSigmoid") {
    const ops::AttrReader attrs = init.attrs();
    act = {ActFn::kHardSigmoid, static_cast<float>(attrs.f("alpha")), static_cast<float>(attrs.f("beta"))};
  } else if (op != "Relu") {
    return decline(init, impl, "op");
  }
  return KernelPtr(new VecKernel(impl, {bytes}, [=](KernelRun& run) -> Status {
    ExactActivation now = act;
    if (run_time_bound[1]) now.a = *static_cast<const float*>(run.inputs[1].data);
    if (run_time_bound[2]) now.b = *static_cast<const float*>(run.inputs[2].data);
    apply_activation(now, static_cast<const float*>(run.inputs[0].data), static_cast<float*>(run.outputs[0].data), n);
    return Status::ok();
  }));
}

}  // namespace

void register_vec_unary(KernelRegistry& registry) {
  for (const char* op : {"Relu", "LeakyRelu", "Clip", "Exp", "Log", "HardSigmoid"})
    registry.add(op, "cpu.vec:unary", kOneDnnPriority + 10, make_unary);
}

}  // namespace tessera::cpu
