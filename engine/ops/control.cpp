// Control flow with nested graphs (ONNX opset 17): If and Loop.
//
// Nested graphs see values of the enclosing graph through captures (ir::Graph::add_capture, by
// name). The reference kernels run a branch or body through KernelContext::run_subgraph, which
// binds the nested graph's inputs positionally and resolves its captures in the enclosing scope.
// Inference reads the nested graphs' output types, which the caller infers before the node.
#include <cstring>
#include <limits>

#include "engine/ops/helpers.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

// Iterations after which a Loop stops with an error (a condition that never turns false).
constexpr int64_t kMaxLoopTrips = int64_t{1} << 24;

Expected<const ir::Graph*> graph_attr(const Node& node, const std::string& name) {
  const Attribute* a = node.attr(name);
  if (a == nullptr) return node_error(node, "attribute '" + name + "' is missing");
  if (a->kind() != AttrKind::kGraph) return node_error(node, "attribute '" + name + "' is not a graph");
  return &a->g();
}


// Checks that an input type can hold a one-element tensor of dtype `dt`.
Status check_scalar_input(const InferContext& ctx, size_t i, DType dt) {
  if (!ctx.has_input(i)) return Status::ok();
  const TensorType& t = *ctx.inputs[i];
  bool single = true;
  for (const Dim& d : t.dims) single = single && !(d.is_known() && d.size != 1);
  if (t.dtype != dt || !single)
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be a " +
                                    std::string(dtype_name(dt)) + " scalar, got " + t.to_string());
  return Status::ok();
}

// The single value of a one-element tensor.
Expected<double> scalar_value(const Tensor& t, const Node& node, const std::string& what) {
  if (t.numel() != 1)
    return node_error(node, what + " must hold one element, got shape " + shape_to_string(t.shape()));
  return t.get(0);
}

Status require_runner(const KernelContext& ctx) {
  if (!ctx.run_subgraph) return node_error(ctx.node, "the executor supplied no subgraph runner");
  return Status::ok();
}

// ---- If ----

Status verify_if(const Node& node, const OpDef&) {
  for (const char* name : {"then_branch", "else_branch"}) {
    TRY(const ir::Graph* g, graph_attr(node, name));
    if (!g->inputs().empty())
      return node_error(node, std::string(name) + " has " + std::to_string(g->inputs().size()) +
                                  " inputs; If branches take none");
    if (g->outputs().size() != node.outputs.size())
      return node_error(node, std::string(name) + " has " + std::to_string(g->outputs().size()) +
                                  " outputs but the node has " + std::to_string(node.outputs.size()));
  }
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_if(const InferContext& ctx) {
  RETURN_IF_ERROR(verify_if(ctx.node, ctx.def));
  RETURN_IF_ERROR(check_scalar_input(ctx, 0, DType::kBool));
  TRY(const ir::Graph* then_g, graph_attr(ctx.node, "then_branch"));
  TRY(const ir::Graph* else_g, graph_attr(ctx.node, "else_branch"));
  std::vector<TensorType> out;
  for (size_t i = 0; i < then_g->outputs().size(); ++i) {
    const TensorType& t = then_g->value(then_g->outputs()[i]).type;
    const TensorType& e = else_g->value(else_g->outputs()[i]).type;
    if (t.dtype != e.dtype || t.kind != e.kind)
      return node_error(ctx.node, "output " + std::to_string(i) + " is " + t.to_string() +
                                      " in then_branch but " + e.to_string() + " in else_branch");
    out.push_back(union_type(t, e));
  }
  return out;
}

Status if_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(require_runner(ctx));
  TRY(double cond, scalar_value(ctx.in(0), ctx.node, "cond"));
  const char* name = cond != 0 ? "then_branch" : "else_branch";
  TRY(const ir::Graph* branch, graph_attr(ctx.node, name));
  auto outs = ctx.run_subgraph(*branch, {});
  if (!outs) return outs.error();
  if (outs->size() != ctx.node.outputs.size())
    return node_error(ctx.node, std::string(name) + " produced " + std::to_string(outs->size()) +
                                    " outputs for " + std::to_string(ctx.node.outputs.size()));
  ctx.outputs = std::move(*outs);
  return Status::ok();
}

// ---- Loop ----

// N loop-carried values, K scan outputs; the body's signature is (i, cond, v...) -> (cond, v..., s...).
struct LoopShape {
  size_t carried = 0;
  size_t scans = 0;
};

Expected<LoopShape> loop_shape(const Node& node) {
  if (node.inputs.size() < 2)
    return node_error(node, "needs inputs M and cond (either may be absent) before the loop-carried "
                            "values; got " + std::to_string(node.inputs.size()) + " inputs");
  LoopShape s;
  s.carried = node.inputs.size() - 2;
  if (node.outputs.size() < s.carried)
    return node_error(node, "has " + std::to_string(node.outputs.size()) + " outputs for " +
                                std::to_string(s.carried) + " loop-carried values");
  s.scans = node.outputs.size() - s.carried;
  return s;
}

Status verify_loop(const Node& node, const OpDef&) {
  TRY(LoopShape s, loop_shape(node));
  TRY(const ir::Graph* body, graph_attr(node, "body"));
  if (body->inputs().size() != 2 + s.carried)
    return node_error(node, "body has " + std::to_string(body->inputs().size()) + " inputs; expected " +
                                std::to_string(2 + s.carried) +
                                " (iteration_num, condition, then one per loop-carried value)");
  if (body->outputs().size() != 1 + s.carried + s.scans)
    return node_error(node, "body has " + std::to_string(body->outputs().size()) +
                                " outputs; expected " + std::to_string(1 + s.carried + s.scans) +
                                " (condition, " + std::to_string(s.carried) + " loop-carried, " +
                                std::to_string(s.scans) + " scan outputs)");
  if (node.inputs[0] == ir::kNoValue && node.inputs[1] == ir::kNoValue)
    return node_error(node, "neither the trip count M nor cond is given: the loop would never end");
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_loop(const InferContext& ctx) {
  RETURN_IF_ERROR(verify_loop(ctx.node, ctx.def));
  RETURN_IF_ERROR(check_scalar_input(ctx, 0, DType::kI64));
  RETURN_IF_ERROR(check_scalar_input(ctx, 1, DType::kBool));
  TRY(LoopShape s, loop_shape(ctx.node));
  TRY(const ir::Graph* body, graph_attr(ctx.node, "body"));
  std::vector<TensorType> out;
  for (size_t j = 0; j < s.carried; ++j) {
    if (!ctx.has_input(2 + j))
      return node_error(ctx.node, "loop-carried input " + std::to_string(j) + " is absent");
    const TensorType& init = *ctx.inputs[2 + j];
    const TensorType& next = body->value(body->outputs()[1 + j]).type;
    // An optional may start the loop and the body return the value itself (ONNX's Loop-16).
    const bool unwrapped = (init.kind == TypeKind::kOptional && next.kind == TypeKind::kTensor) ||
                           (init.kind == TypeKind::kOptionalSequence && next.kind == TypeKind::kSequence);
    if (init.dtype != next.dtype || (init.kind != next.kind && !unwrapped))
      return node_error(ctx.node, "loop-carried value " + std::to_string(j) + " starts as " +
                                      init.to_string() + " but the body makes it " + next.to_string());
    out.push_back(union_type(init, next).as(next.kind));  // the shape may change from one iteration to the next
  }
  for (size_t k = 0; k < s.scans; ++k) {
    TensorType t = body->value(body->outputs()[1 + s.carried + k]).type;
    if (!t.is_tensor())
      return node_error(ctx.node, "scan output " + std::to_string(k) + " is " + t.to_string() +
                                      "; scan outputs stack tensors (carry a sequence instead)");
    if (t.rank_known) t.dims.insert(t.dims.begin(), Dim::unknown());
    out.push_back(t);
  }
  return out;
}

// Stacks one scan output's per-iteration tensors along a new axis 0. With no iteration the shape
// comes from the body's declared type (unknown dims as 0).
Expected<Tensor> stack_scan(const std::vector<Tensor>& items, const TensorType& type,
                            const Node& node, size_t k) {
  Shape shape;
  DType dt = type.dtype;
  if (items.empty()) {
    for (const Dim& d : type.dims) shape.push_back(d.is_known() ? d.size : 0);
  } else {
    shape = items[0].shape();
    dt = items[0].dtype();
  }
  shape.insert(shape.begin(), static_cast<int64_t>(items.size()));
  for (size_t i = 1; i < items.size(); ++i)
    if (items[i].dtype() != dt || items[i].shape() != items[0].shape())
      return node_error(node, "scan output " + std::to_string(k) + " is " + items[i].summary(0) +
                                  " in iteration " + std::to_string(i) + " but " +
                                  items[0].summary(0) + " in iteration 0");
  auto y = Tensor::create(dt, shape);
  if (!y) return node_error(node, y.error().message);
  auto* dst = static_cast<std::byte*>(y->raw_data());
  for (const Tensor& item : items) {
    const Tensor c = item.contiguous();
    std::memcpy(dst, c.raw_data(), c.nbytes());
    dst += c.nbytes();
  }
  return std::move(y).value();
}

Status loop_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(require_runner(ctx));
  TRY(LoopShape s, loop_shape(ctx.node));
  TRY(const ir::Graph* body, graph_attr(ctx.node, "body"));
  const bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
  if (!has_m && !has_cond)
    return node_error(ctx.node, "neither the trip count M nor cond is given: the loop would never end");
  int64_t trips = std::numeric_limits<int64_t>::max();
  if (has_m) {
    const Tensor& m = ctx.in(0);
    if (m.dtype() != DType::kI64 || m.numel() != 1)
      return node_error(ctx.node, "M must be an i64 scalar, got " + m.summary(0));
    trips = m.contiguous().data<int64_t>()[0];
  }
  bool cond = true;
  if (has_cond) {
    TRY(double c, scalar_value(ctx.in(1), ctx.node, "cond"));
    cond = c != 0;
  }
  if (!has_cond && trips > kMaxLoopTrips)
    return node_error(ctx.node, "trip count " + std::to_string(trips) + " exceeds the limit of " +
                                    std::to_string(kMaxLoopTrips) + " iterations");
  std::vector<Tensor> carried;
  for (size_t j = 0; j < s.carried; ++j) {
    if (!ctx.has_input(2 + j))
      return node_error(ctx.node, "loop-carried input " + std::to_string(j) + " is absent");
    carried.push_back(ctx.in(2 + j));
  }
  std::vector<std::vector<Tensor>> scans(s.scans);
  for (int64_t i = 0; i < trips && cond; ++i) {
    if (i >= kMaxLoopTrips)
      return node_error(ctx.node, "stopped after " + std::to_string(kMaxLoopTrips) +
                                      " iterations: the condition never turned false");
    std::vector<Tensor> args{Tensor::scalar<int64_t>(i), Tensor::from_bools({}, {cond})};
    args.insert(args.end(), carried.begin(), carried.end());
    auto outs = ctx.run_subgraph(*body, args);
    if (!outs) return outs.error();
    if (outs->size() != 1 + s.carried + s.scans)
      return node_error(ctx.node, "body produced " + std::to_string(outs->size()) + " outputs; expected " +
                                      std::to_string(1 + s.carried + s.scans));
    if (has_cond) {  // without a cond input the body's condition output is ignored (ONNX)
      TRY(double c, scalar_value((*outs)[0], ctx.node, "the body's condition output"));
      cond = c != 0;
    }
    for (size_t j = 0; j < s.carried; ++j) {
      Tensor& next = (*outs)[1 + j];
      if (next.dtype() != carried[j].dtype())
        return node_error(ctx.node, "the body turned loop-carried value " + std::to_string(j) +
                                        " from " + std::string(dtype_name(carried[j].dtype())) +
                                        " into " + std::string(dtype_name(next.dtype())));
      carried[j] = std::move(next);
    }
    for (size_t k = 0; k < s.scans; ++k) scans[k].push_back(std::move((*outs)[1 + s.carried + k]));
  }
  ctx.outputs = std::move(carried);
  for (size_t k = 0; k < s.scans; ++k) {
    const TensorType& type = body->value(body->outputs()[1 + s.carried + k]).type;
    TRY(Tensor y, stack_scan(scans[k], type, ctx.node, k));
    ctx.outputs.push_back(std::move(y));
  }
  return Status::ok();
}

}  // namespace

void register_control_ops(OpRegistry& registry) {
  {
    OpDef def("If", "control",
              "Runs then_branch when cond is true, else else_branch; the outputs are the outputs of "
              "the branch taken. Branches take no inputs and see outer values through captures.");
    def.input("cond", "bool scalar (one element)");
    def.output("outputs", "the outputs of the branch taken", false, true);
    def.required_attr("then_branch", AttrKind::kGraph,
                      "graph with no inputs and one output per node output, run when cond is true");
    def.required_attr("else_branch", AttrKind::kGraph,
                      "graph with no inputs and one output per node output, run when cond is false");
    def.allowed_types = {DType::kBool};
    def.verify = verify_if;
    def.infer = infer_if;
    def.reference = if_kernel;
    registry.add(std::move(def));
  }
  {
    OpDef def("Loop", "control",
              "for (i = 0; i < M && cond; ++i) (cond, v..., s...) = body(i, cond, v...). M absent: "
              "no limit; cond absent: always true and the body's condition is ignored; one of them "
              "must be given. Outputs: the final v..., then each scan output s stacked along a new "
              "axis 0. Stops with an error after 2^24 iterations.");
    def.input("M", "i64 scalar: maximum trip count; absent for no limit", true);
    def.input("cond", "bool scalar: the condition before the first iteration; absent for true", true);
    def.input("v_initial", "initial values of the loop-carried values", true, true);
    def.output("v_final_and_scan_outputs",
               "final loop-carried values, then scan outputs stacked along a new axis 0", false, true);
    def.required_attr("body", AttrKind::kGraph,
                      "graph (iteration_num i64, condition bool, v...) -> (condition, v..., scans...)");
    def.takes_sequences = true;  // loop-carried values may be sequences and optionals
    def.verify = verify_loop;
    def.infer = infer_loop;
    def.reference = loop_kernel;
    registry.add(std::move(def));
  }
}

}  // namespace tessera::ops
