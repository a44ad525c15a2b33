// Reverse-mode autodiff over the IR (see autodiff.h) and GradientContext's methods (gradient.h).
#include "engine/autodiff/autodiff.h"

#include <cassert>
#include <set>

#include "engine/autodiff/gradient.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/runtime/interpreter.h"

namespace tessera::autodiff {

using ir::kNoValue;
using ir::ValueId;

// ---------------------------------------------------------------------------------------------
// Emitter

std::vector<ValueId> Emitter::emit(const std::string& op, std::vector<ValueId> inputs, int num_outputs,
                                   ir::Attributes attrs) {
  ir::NodeId id = graph_.add_node(op, std::move(inputs), num_outputs, name_, std::move(attrs));
  ir::Node& n = graph_.node(id);
  if (forward_ != ir::kNoNode) n.provenance.from = {forward_};
  n.provenance.origin = "autodiff";
  std::vector<ValueId> outs = n.outputs;
  bool nested = false;
  for (const auto& [key, a] : n.attrs) nested |= a.kind() == ir::AttrKind::kGraph;
  if (!nested && status_.is_ok()) {
    Status st = ops::infer_node(graph_, id, registry_);
    if (!st.is_ok()) {
      Error e = st.error();
      e.message = "gradient rule emitted an invalid node: " + e.message;
      status_ = e;
    }
  }
  return outs;
}

ValueId Emitter::constant(Tensor t) {
  ValueId v = graph_.add_param(name_.empty() ? "grad_const" : name_ + "/const", std::move(t));
  // Param names must be unique within a graph for the text form: suffix with the id.
  graph_.set_value_name(v, graph_.value(v).name + "_" + std::to_string(v));
  return v;
}

Status Emitter::take_status() {
  Status s = status_;
  status_ = Status::ok();
  return s;
}

}  // namespace tessera::autodiff

namespace tessera::ops {

using autodiff::Emitter;

GradientContext::GradientContext(Emitter& emitter, ir::Node node, const OpDef& def, std::vector<ValueId> grad_outputs,
                                 std::vector<bool> wanted, std::map<std::string, ValueId> captures,
                                 std::map<std::string, bool> wanted_captures)
    : emitter_(emitter),
      node_(std::move(node)),
      def_(def),
      grad_outputs_(std::move(grad_outputs)),
      wanted_(std::move(wanted)),
      input_grads_(node_.inputs.size(), ir::kNoValue),
      captures_(std::move(captures)),
      wanted_captures_(std::move(wanted_captures)) {}

ir::TensorType GradientContext::type(ValueId v) const { return emitter_.graph().value(v).type; }

const Tensor* GradientContext::constant(ValueId v) const { return constant_value(emitter_.graph(), v); }

ValueId GradientContext::grad_output_or_zeros(size_t i) {
  ValueId g = grad_output(i);
  return g != ir::kNoValue ? g : zeros_like(output(i));
}

void GradientContext::set_grad(size_t i, ValueId g) {
  if (i < input_grads_.size()) input_grads_[i] = g;
}

bool GradientContext::wants_capture(const std::string& name) const {
  auto it = wanted_captures_.find(name);
  return it != wanted_captures_.end() && it->second;
}

void GradientContext::set_capture_grad(const std::string& name, ValueId g) { capture_grads_[name] = g; }

ValueId GradientContext::emit(const std::string& op, std::vector<ValueId> inputs, ir::Attributes attrs) {
  return emitter_.emit(op, std::move(inputs), 1, std::move(attrs))[0];
}

std::vector<ValueId> GradientContext::emit_n(const std::string& op, std::vector<ValueId> inputs, int num_outputs,
                                             ir::Attributes attrs) {
  return emitter_.emit(op, std::move(inputs), num_outputs, std::move(attrs));
}

namespace {
// A rank-0 tensor of `dt` holding v (converted as Cast converts; zero if Cast refuses the type).
Tensor scalar_of_type(const OpRegistry& registry, double v, DType dt) {
  auto cast = runtime::run_single_op(registry, "Cast", {Tensor::scalar<double>(v)}, {{"to", std::string(dtype_name(dt))}});
  return cast ? (*cast)[0] : Tensor(dt, {});
}
}  // namespace

ValueId GradientContext::scalar(double v, DType dt) {
  return emitter_.constant(scalar_of_type(emitter_.registry(), v, dt));
}

ValueId GradientContext::ints(const std::vector<int64_t>& v) {
  return emitter_.constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

ValueId GradientContext::constant_tensor(Tensor t) { return emitter_.constant(std::move(t)); }

ValueId GradientContext::shape_of(ValueId v) {
  const ir::TensorType& t = type(v);
  if (t.is_static()) return ints(t.static_shape());
  return emit("Shape", {v});
}

namespace {
ValueId filled_like(GradientContext& g, ValueId v, double x) {
  Tensor value = scalar_of_type(g.registry(), x, g.dtype(v));
  auto flat = value.reshape({1});
  return g.emit("ConstantOfShape", {g.shape_of(v)}, {{"value", flat ? *flat : value}});
}
}  // namespace

ValueId GradientContext::zeros_like(ValueId v) { return filled_like(*this, v, 0.0); }
ValueId GradientContext::ones_like(ValueId v) { return filled_like(*this, v, 1.0); }

ValueId GradientContext::unbroadcast(ValueId g, ValueId like) {
  const ir::TensorType gt = type(g);
  const ir::TensorType lt = type(like);
  if (gt.rank_known && lt.rank_known && gt.dims == lt.dims && gt.is_static()) return g;
  if (gt.is_static() && lt.is_static()) {
    Shape gs = gt.static_shape(), ls = lt.static_shape();
    if (gs == ls) return g;
    size_t lead = gs.size() - ls.size();
    std::vector<int64_t> axes;
    for (size_t d = 0; d < gs.size(); ++d)
      if (d < lead || (ls[d - lead] == 1 && gs[d] != 1)) axes.push_back(static_cast<int64_t>(d));
    ValueId summed = axes.empty() ? g : emit("ReduceSum", {g, ints(axes)}, {{"keepdims", int64_t{1}}});
    if (type(summed).is_static() && type(summed).static_shape() == ls) return summed;
    return emit("Reshape", {summed, ints(ls)});
  }
  return emit("SumToShape", {g, shape_of(like)});
}

Error GradientContext::fail(const std::string& message) const {
  return make_error(ir::describe_node(node_) + ": gradient: " + message, {}, node_.id);
}

ir::Graph& GradientContext::graph() { return emitter_.graph(); }
const OpRegistry& GradientContext::registry() const { return emitter_.registry(); }

}  // namespace tessera::ops

namespace tessera::autodiff {
namespace {


// Outer values a node's nested graphs capture, by name.
std::map<std::string, ValueId> implicit_inputs(const ir::Graph& g, const ir::Node& n) {
  std::map<std::string, ValueId> out;
  bool nested = false;
  for (const auto& [k, a] : n.attrs) nested |= a.kind() == ir::AttrKind::kGraph;
  if (!nested) return out;
  std::vector<std::string> names;
  runtime::nested_captures(n, names);
  for (const std::string& name : names)
    if (auto v = g.find_value(name)) out[name] = *v;
  return out;
}

ValueId accumulate(Emitter& em, std::vector<ValueId>& parts) {
  if (parts.empty()) return kNoValue;
  if (parts.size() > 1) {
    ValueId sum = em.emit("Sum", parts, 1, {})[0];
    parts = {sum};
  }
  return parts[0];
}

}  // namespace

void set_gradient(ops::OpRegistry& registry, const std::string& op, ops::GradientFn rule) {
  ops::OpDef* def = registry.find_mutable(op);
  assert(def && "gradient rule for an unregistered op");
  if (def) def->gradient = std::move(rule);
}

void set_no_gradient(ops::OpRegistry& registry, const std::string& op, std::string reason) {
  ops::OpDef* def = registry.find_mutable(op);
  assert(def && "no-gradient reason for an unregistered op");
  if (def) def->no_gradient_reason = std::move(reason);
}

Expected<std::vector<ValueId>> add_gradients(ir::Graph& graph, const ops::OpRegistry& registry,
                                             const std::vector<ValueId>& ys, const std::vector<ValueId>& seeds,
                                             const std::vector<ValueId>& xs) {
  for (ValueId x : xs) {
    if (!graph.has_value(x)) return make_error("gradient requested for value %" + std::to_string(x) + ", which does not exist");
    if (!is_float(graph.value(x).type.dtype))
      return make_error("gradient requested for '" + graph.value(x).name + "', of element type " +
                        std::string(dtype_name(graph.value(x).type.dtype)) + " (only floating-point values have gradients)");
  }
  for (ValueId y : ys)
    if (!graph.has_value(y)) return make_error("gradient of value %" + std::to_string(y) + ", which does not exist");
  TRY(std::vector<ir::NodeId> order, graph.topological_order());

  // Values reachable forward from the xs, and values the ys depend on: a node is differentiated
  // only when it lies on a path between them.
  std::vector<char> from_x(static_cast<size_t>(graph.value_capacity()), 0);
  std::vector<char> to_y(static_cast<size_t>(graph.value_capacity()), 0);
  for (ValueId x : xs) from_x[static_cast<size_t>(x)] = 1;
  std::map<ir::NodeId, std::map<std::string, ValueId>> implicit;
  for (ir::NodeId id : order) {
    const ir::Node& n = graph.node(id);
    auto imp = implicit_inputs(graph, n);
    bool reached = false;
    for (ValueId v : n.inputs) reached |= v != kNoValue && from_x[static_cast<size_t>(v)];
    for (const auto& [name, v] : imp) reached |= from_x[static_cast<size_t>(v)] != 0;
    if (reached)
      for (ValueId o : n.outputs) from_x[static_cast<size_t>(o)] = is_float(graph.value(o).type.dtype);
    if (!imp.empty()) implicit[id] = std::move(imp);
  }
  for (ValueId y : ys) to_y[static_cast<size_t>(y)] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Node& n = graph.node(*it);
    bool needed = false;
    for (ValueId o : n.outputs) needed |= to_y[static_cast<size_t>(o)] != 0;
    if (!needed) continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue) to_y[static_cast<size_t>(v)] = 1;
    if (auto imp = implicit.find(*it); imp != implicit.end())
      for (const auto& [name, v] : imp->second) to_y[static_cast<size_t>(v)] = 1;
  }
  auto on_path = [&](ValueId v) {
    return v != kNoValue && from_x[static_cast<size_t>(v)] && to_y[static_cast<size_t>(v)] &&
           is_float(graph.value(v).type.dtype);
  };

  Emitter em(graph, registry);
  std::map<ValueId, std::vector<ValueId>> grads;
  for (size_t k = 0; k < ys.size(); ++k) {
    ValueId seed = k < seeds.size() ? seeds[k] : kNoValue;
    if (seed == kNoValue) {
      em.set_origin(ir::kNoNode, "loss/grad");
      ir::Node dummy;
      ops::GradientContext ctx(em, dummy, *registry.find("Identity"), {}, {}, {}, {});
      seed = ctx.ones_like(ys[k]);
      RETURN_IF_ERROR(em.take_status());
    }
    grads[ys[k]].push_back(seed);
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node node = graph.node(*it);  // a copy: emitting grows the node vector
    std::vector<ValueId> gouts;
    bool any_grad = false;
    std::string name = (node.name.empty() ? node.op + "_" + std::to_string(node.id) : node.name) + "/grad";
    em.set_origin(node.id, name);
    for (ValueId o : node.outputs) {
      auto g = grads.find(o);
      ValueId acc = g == grads.end() ? kNoValue : accumulate(em, g->second);
      gouts.push_back(acc);
      any_grad |= acc != kNoValue;
    }
    if (!any_grad) continue;
    std::vector<bool> wanted;
    bool any_wanted = false;
    for (ValueId v : node.inputs) {
      wanted.push_back(on_path(v));
      any_wanted |= wanted.back();
    }
    std::map<std::string, ValueId> caps;
    std::map<std::string, bool> wanted_caps;
    if (auto imp = implicit.find(node.id); imp != implicit.end()) {
      caps = imp->second;
      for (const auto& [cname, v] : caps) {
        wanted_caps[cname] = on_path(v);
        any_wanted |= wanted_caps[cname];
      }
    }
    if (!any_wanted) continue;
    const ops::OpDef* def = registry.find(node.op);
    if (!def) return make_error(ir::describe_node(node) + ": unknown op " + node.op, {}, node.id);
    if (!def->gradient) {
      std::string why = def->no_gradient_reason.empty() ? "no gradient rule is defined" : def->no_gradient_reason;
      return make_error(ir::describe_node(node) + " lies between the loss and a trained value, but op " + node.op +
                            " has no gradient: " + why, {}, node.id);
    }
    ops::GradientContext ctx(em, node, *def, gouts, wanted, caps, wanted_caps);
    Status st = def->gradient(ctx);
    if (!st.is_ok()) {
      Error e = st.error();
      if (e.node < 0) e.node = node.id;
      return e;
    }
    RETURN_IF_ERROR(em.take_status());
    auto add = [&](ValueId target, ValueId g, const std::string& what) -> Status {
      if (g == kNoValue) return Status::ok();
      const ir::TensorType& want = graph.value(target).type;
      const ir::TensorType& got = graph.value(g).type;
      bool same = got.dtype == want.dtype;
      if (same && want.is_static() && got.is_static()) same = want.static_shape() == got.static_shape();
      if (!same)
        return make_error(ir::describe_node(node) + ": gradient rule of " + node.op + " gave " + what + " the type " +
                              got.to_string() + ", expected " + want.to_string(), {}, node.id);
      grads[target].push_back(g);
      return Status::ok();
    };
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (wanted[i]) RETURN_IF_ERROR(add(node.inputs[i], ctx.input_grads()[i], "input " + std::to_string(i)));
    for (const auto& [cname, g] : ctx.capture_grads())
      if (wanted_caps[cname]) RETURN_IF_ERROR(add(caps[cname], g, "captured value '" + cname + "'"));
  }

  std::vector<ValueId> out;
  for (ValueId x : xs) {
    em.set_origin(ir::kNoNode, graph.value(x).name + "/grad");
    auto g = grads.find(x);
    ValueId acc = g == grads.end() ? kNoValue : accumulate(em, g->second);
    if (acc == kNoValue) {
      ir::Node dummy;
      ops::GradientContext ctx(em, dummy, *registry.find("Identity"), {}, {}, {}, {});
      acc = ctx.zeros_like(x);
    }
    out.push_back(acc);
  }
  RETURN_IF_ERROR(em.take_status());
  return out;
}

}  // namespace tessera::autodiff
