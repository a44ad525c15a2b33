// Gradient rules of control flow (If, Loop).
//
// If: the gradient is another If on the same condition whose branches are the gradients of the
// forward branches (each recomputes its branch, then differentiates it with respect to the outer
// values it captures); a captured value one branch does not use gets zeros there.
//
// Loop: reverse-mode needs the loop-carried values of every iteration. The rule adds one scan
// output per carried value to the forward Loop (the value at the start of each iteration, stacked),
// then emits a backward Loop that runs the same number of iterations T in reverse: iteration i
// takes k = T-1-i, reads the saved state v_k, recomputes the body once, and differentiates it, with
// the gradients of v_{k+1} (carried) and of the scan outputs at k as seeds. It carries the gradient
// of each state and accumulates the gradient of each captured outer value (weights shared by all
// iterations). Memory is one copy of the states per iteration, as in MindSpore and JAX's scan.
#include <algorithm>

#include "engine/autodiff/autodiff.h"
#include "engine/autodiff/gradient.h"
#include "engine/ops/infer.h"
#include "engine/passes/rewrite.h"

namespace tessera::autodiff {
namespace {

using ir::ValueId;
using ops::GradientContext;

// The name a nested graph captures `v` by; gives `v` a fresh unique name when it has none.
std::string capture_name(ir::Graph& g, ValueId v, const std::string& base) {
  if (g.value(v).name.empty()) g.set_value_name(v, passes::unique_value_name(g, base));
  return g.value(v).name;
}

// The capture of `name` in nested graph `b`, added when `b` does not capture it yet.
ValueId capture_in(ir::Graph& b, const std::string& name, const ir::TensorType& type) {
  for (ValueId c : b.captures())
    if (b.value(c).name == name) return c;
  return b.add_capture(name, type);
}

ValueId add_typed(ir::Graph& b, const ops::OpRegistry& reg, const std::string& op, std::vector<ValueId> in,
                  ir::Attributes attrs, Status& st) {
  ir::NodeId id = b.add_node(op, std::move(in), 1, "grad/" + op, std::move(attrs));
  b.node(id).provenance.origin = "autodiff";
  if (st.is_ok()) st = ops::infer_node(b, id, reg);
  return b.node(id).outputs[0];
}

std::vector<std::string> wanted_captures(const GradientContext& g) {
  std::vector<std::string> out;
  for (const auto& [name, v] : g.captures())
    if (g.wants_capture(name)) out.push_back(name);
  return out;
}

Status if_grad(GradientContext& g) {
  const std::vector<std::string> wanted = wanted_captures(g);
  if (wanted.empty()) return Status::ok();
  ir::Graph& outer = g.graph();
  const std::string base = g.node().name.empty() ? "if" : g.node().name;
  std::vector<std::string> dy_names(g.num_outputs());
  for (size_t k = 0; k < g.num_outputs(); ++k)
    if (g.grad_output(k) != ir::kNoValue)
      dy_names[k] = capture_name(outer, g.grad_output(k), base + "/d_out" + std::to_string(k));

  auto branch_grad = [&](const char* attr) -> Expected<ir::Graph> {
    ir::Graph b = g.attrs().g(attr);
    b.set_name(b.name() + "/grad");
    std::vector<ValueId> ys, seeds, xs;
    for (size_t k = 0; k < dy_names.size(); ++k) {
      if (dy_names[k].empty()) continue;
      ys.push_back(b.outputs()[k]);
      seeds.push_back(b.add_capture(dy_names[k], g.type(g.grad_output(k))));
    }
    for (const std::string& name : wanted) xs.push_back(capture_in(b, name, g.type(g.captures().at(name))));
    TRY(std::vector<ValueId> grads, add_gradients(b, g.registry(), ys, seeds, xs));
    b.set_outputs(grads);
    return b;
  };
  TRY(ir::Graph then_g, branch_grad("then_branch"));
  TRY(ir::Graph else_g, branch_grad("else_branch"));
  std::vector<ValueId> outs = g.emit_n("If", {g.input(0)}, static_cast<int>(wanted.size()),
                                       {{"then_branch", std::move(then_g)}, {"else_branch", std::move(else_g)}});
  for (size_t i = 0; i < wanted.size(); ++i) {
    outer.value(outs[i]).type = g.type(g.captures().at(wanted[i]));
    g.set_capture_grad(wanted[i], outs[i]);
  }
  return Status::ok();
}

Status loop_grad(GradientContext& g) {
  ir::Graph& outer = g.graph();
  const ops::OpRegistry& reg = g.registry();
  const ir::Node& node = g.node();  // the forward node as it was (a copy)
  const ir::Graph& body = g.attrs().g("body");
  const size_t n_carried = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  const size_t n_scan = node.outputs.size() - n_carried;
  const std::vector<std::string> wanted = wanted_captures(g);
  const std::string base = node.name.empty() ? "loop" : node.name;

  // 1. The forward Loop also outputs the iteration number and every carried value at the start
  //    of each iteration, stacked.
  std::vector<ValueId> stacked;  // [0]: iteration numbers, then one per carried value
  {
    ir::Graph& fb = outer.node(node.id).attrs.at("body").g();
    std::vector<ValueId> outs = fb.outputs();
    for (size_t k = 0; k < 1 + n_carried; ++k) {
      ValueId in = fb.inputs()[k == 0 ? 0 : 1 + k];
      ir::NodeId id = fb.add_node("Identity", {in}, 1, "saved_state");
      fb.value(fb.node(id).outputs[0]).type = fb.value(in).type;
      outs.push_back(fb.node(id).outputs[0]);
    }
    fb.set_outputs(outs);
    for (size_t k = 0; k < 1 + n_carried; ++k) {
      const ir::TensorType& t = body.value(body.inputs()[k == 0 ? 0 : 1 + k]).type;
      ValueId s = outer.add_node_output(node.id, passes::unique_value_name(outer, base + "/saved" + std::to_string(k)));
      std::vector<ir::Dim> dims{ir::Dim::unknown()};
      dims.insert(dims.end(), t.dims.begin(), t.dims.end());
      outer.value(s).type = ir::TensorType(t.dtype, dims);
      stacked.push_back(s);
    }
  }
  // T, the number of iterations the forward loop ran.
  ValueId t_vec = g.emit("Shape", {stacked[0]}, {{"start", int64_t{0}}, {"end", int64_t{1}}});
  ValueId trips = g.emit("Reshape", {t_vec, g.ints({})});
  const std::string t_name = capture_name(outer, trips, base + "/trips");

  // 2. The backward body: the forward body recomputed at iteration k, then differentiated.
  ir::Graph c = body;
  c.set_name(body.name() + "/grad");
  Status st = Status::ok();
  const ValueId iter_in = c.inputs()[0], cond_in = c.inputs()[1];
  ValueId t_cap = c.add_capture(t_name, ir::TensorType::of(DType::kI64, {}));
  ValueId one = c.add_param(passes::unique_value_name(c, "grad/one"), Tensor::scalar<int64_t>(1));
  Tensor true_t(DType::kBool, {});
  true_t.set(0, 1.0);
  ValueId yes = c.add_param(passes::unique_value_name(c, "grad/true"), true_t);
  ValueId last = add_typed(c, reg, "Sub", {t_cap, one}, {}, st);
  ValueId k_val = add_typed(c, reg, "Sub", {last, iter_in}, {}, st);
  const ir::NodeId k_node = c.value(k_val).producer;
  c.replace_all_uses(iter_in, k_val);
  c.node(k_node).inputs[1] = iter_in;  // k = T-1-i itself reads the real iteration number
  c.replace_all_uses(cond_in, yes);
  std::vector<ValueId> v_k(n_carried), dv_in(n_carried);
  for (size_t k = 0; k < n_carried; ++k) {
    ValueId saved = c.add_capture(outer.value(stacked[1 + k]).name, outer.value(stacked[1 + k]).type);
    v_k[k] = add_typed(c, reg, "Gather", {saved, k_val}, {{"axis", int64_t{0}}}, st);
    dv_in[k] = c.inputs()[2 + k];
    c.replace_all_uses(dv_in[k], v_k[k]);  // the body now computes from the saved state...
  }
  RETURN_IF_ERROR(st);
  // ... and its old carried inputs become the incoming gradients d v_{k+1}.
  std::vector<ValueId> ys, seeds, xs;
  std::vector<size_t> float_states;
  for (size_t k = 0; k < n_carried; ++k) {
    if (!is_float(c.value(dv_in[k]).type.dtype)) continue;
    float_states.push_back(k);
    ys.push_back(c.outputs()[1 + k]);
    seeds.push_back(dv_in[k]);
    xs.push_back(v_k[k]);
  }
  for (size_t m = 0; m < n_scan; ++m) {
    ValueId dscan = g.grad_output(n_carried + m);
    if (dscan == ir::kNoValue || !is_float(g.dtype(dscan))) continue;
    ValueId cap = c.add_capture(capture_name(outer, dscan, base + "/d_scan" + std::to_string(m)), g.type(dscan));
    ys.push_back(c.outputs()[1 + n_carried + m]);
    seeds.push_back(add_typed(c, reg, "Gather", {cap, k_val}, {{"axis", int64_t{0}}}, st));
  }
  std::vector<ValueId> dcap_in;
  for (const std::string& name : wanted) {
    const ir::TensorType& t = g.type(g.captures().at(name));
    xs.push_back(capture_in(c, name, t));
    dcap_in.push_back(c.add_input(passes::unique_value_name(c, "grad_acc/" + name), t));
  }
  RETURN_IF_ERROR(st);
  TRY(std::vector<ValueId> grads, add_gradients(c, reg, ys, seeds, xs));
  std::vector<ValueId> body_outs{yes};
  for (size_t k = 0; k < n_carried; ++k) {
    auto pos = std::find(float_states.begin(), float_states.end(), k);
    body_outs.push_back(pos == float_states.end() ? dv_in[k] : grads[static_cast<size_t>(pos - float_states.begin())]);
  }
  for (size_t j = 0; j < wanted.size(); ++j)
    body_outs.push_back(add_typed(c, reg, "Add", {dcap_in[j], grads[float_states.size() + j]}, {}, st));
  RETURN_IF_ERROR(st);
  c.set_outputs(body_outs);

  // 3. The backward Loop, T iterations, from the gradients of the final states and zeros.
  std::vector<ValueId> ins{trips, ir::kNoValue};
  for (size_t k = 0; k < n_carried; ++k) {
    ValueId v0 = node.inputs[2 + k];
    bool is_f = std::find(float_states.begin(), float_states.end(), k) != float_states.end();
    ins.push_back(is_f ? g.grad_output_or_zeros(k) : v0);
  }
  for (const std::string& name : wanted) ins.push_back(g.zeros_like(g.captures().at(name)));
  std::vector<ValueId> outs = g.emit_n("Loop", ins, static_cast<int>(n_carried + wanted.size()), {{"body", std::move(c)}});
  for (size_t k = 0; k < n_carried; ++k) {
    outer.value(outs[k]).type = g.type(node.inputs[2 + k]);
    if (g.wants(2 + k)) g.set_grad(2 + k, outs[k]);
  }
  for (size_t j = 0; j < wanted.size(); ++j) {
    outer.value(outs[n_carried + j]).type = g.type(g.captures().at(wanted[j]));
    g.set_capture_grad(wanted[j], outs[n_carried + j]);
  }
  return Status::ok();
}

}  // namespace

void register_control_gradients(ops::OpRegistry& registry) {
  set_gradient(registry, "If", if_grad);
  set_gradient(registry, "Loop", loop_grad);
}

}  // namespace tessera::autodiff
