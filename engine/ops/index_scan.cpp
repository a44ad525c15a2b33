// Scan (ONNX opset 9 to 17): runs a body graph once per slice of the scan inputs, threading
// state values through the iterations and stacking per-iteration scan outputs. Registered by
// register_index_ops (index_ops.cpp).
//
//   inputs  = N initial states, then M scan inputs (M = num_scan_inputs)
//   body    : (state_1..N, slice_1..M) -> (state_1..N, out_1..K)
//   outputs = N final states, then K scan outputs
// Slice t of scan input j is taken along scan_input_axes[j] at t (direction 0) or T-1-t
// (direction 1); every scan input must have the same length T on its axis. Scan output k stacks
// the K per-iteration values along a new axis scan_output_axes[k], in iteration order (direction
// 0) or reversed (direction 1). The body runs through KernelContext::run_subgraph, as Loop does.
#include <algorithm>
#include <cstring>

#include "engine/ops/index_internal.h"

namespace tessera::ops {
namespace {

using ir::Node;

struct ScanShape {
  size_t states = 0, scans_in = 0, scans_out = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

Expected<const ir::Graph*> body_of(const Node& node) {
  const Attribute* a = node.attr("body");
  if (a == nullptr || a->kind() != AttrKind::kGraph)
    return node_error(node, "attribute 'body' must be a graph");
  return &a->g();
}

Expected<std::vector<int64_t>> list_attr(const Node& node, const std::string& name, size_t n) {
  const Attribute* a = node.attr(name);
  if (a == nullptr) return std::vector<int64_t>(n, 0);
  if (a->kind() != AttrKind::kInts || a->ints().size() != n)
    return node_error(node, "attribute '" + name + "' must hold " + std::to_string(n) + " ints");
  for (int64_t v : a->ints())
    if (name.find("directions") != std::string::npos && v != 0 && v != 1)
      return node_error(node, "attribute '" + name + "' values must be 0 or 1");
  return a->ints();
}

Expected<ScanShape> scan_shape(const Node& node) {
  const Attribute* m = node.attr("num_scan_inputs");
  if (m == nullptr || m->kind() != AttrKind::kInt)
    return node_error(node, "attribute 'num_scan_inputs' must be an int");
  ScanShape s;
  if (m->i() < 1 || static_cast<size_t>(m->i()) > node.inputs.size())
    return node_error(node, "num_scan_inputs " + std::to_string(m->i()) + " must be in [1, " +
                                std::to_string(node.inputs.size()) + "]");
  s.scans_in = static_cast<size_t>(m->i());
  s.states = node.inputs.size() - s.scans_in;
  if (node.outputs.size() < s.states)
    return node_error(node,
                      "has fewer outputs than state values (" + std::to_string(s.states) + ")");
  s.scans_out = node.outputs.size() - s.states;
  TRY(s.in_axes, list_attr(node, "scan_input_axes", s.scans_in));
  TRY(s.in_dirs, list_attr(node, "scan_input_directions", s.scans_in));
  TRY(s.out_axes, list_attr(node, "scan_output_axes", s.scans_out));
  TRY(s.out_dirs, list_attr(node, "scan_output_directions", s.scans_out));
  return s;
}

Status verify_scan(const Node& node, const OpDef&) {
  TRY(ScanShape s, scan_shape(node));
  TRY(const ir::Graph* body, body_of(node));
  if (body->inputs().size() != node.inputs.size())
    return node_error(node, "body has " + std::to_string(body->inputs().size()) +
                                " inputs; expected " + std::to_string(node.inputs.size()) +
                                " (one per state, then one per scan input)");
  if (body->outputs().size() != node.outputs.size())
    return node_error(node, "body has " + std::to_string(body->outputs().size()) +
                                " outputs; expected " + std::to_string(node.outputs.size()));
  for (ir::ValueId v : node.inputs)
    if (v == ir::kNoValue) return node_error(node, "Scan inputs cannot be absent");
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_scan(const InferContext& ctx) {
  RETURN_IF_ERROR(verify_scan(ctx.node, ctx.def));
  TRY(ScanShape s, scan_shape(ctx.node));
  TRY(const ir::Graph* body, body_of(ctx.node));
  Dim length = Dim::unknown();
  for (size_t j = 0; j < s.scans_in; ++j) {
    const TensorType& t = *ctx.inputs[s.states + j];
    if (!t.rank_known) continue;
    TRY(int a, normalize_axis(s.in_axes[j], t.rank(), ctx.node));
    if (t.rank() == 0) return node_error(ctx.node, "scan inputs must have rank >= 1");
    const Dim& d = t.dims[static_cast<size_t>(a)];
    if (d.is_known() && length.is_known() && d != length)
      return node_error(ctx.node, "scan inputs have different lengths on their scan axes");
    if (d.is_known()) length = d;
  }
  std::vector<TensorType> out;
  for (size_t i = 0; i < s.states; ++i) {
    const TensorType& init = *ctx.inputs[i];
    const TensorType& next = body->value(body->outputs()[i]).type;
    if (init.dtype != next.dtype)
      return node_error(ctx.node, "state " + std::to_string(i) + " starts as " + init.to_string() +
                                      " but the body makes it " + next.to_string());
    out.push_back(init);
  }
  for (size_t k = 0; k < s.scans_out; ++k) {
    TensorType t = body->value(body->outputs()[s.states + k]).type;
    if (t.rank_known) {
      TRY(int a, normalize_axis(s.out_axes[k], t.rank() + 1, ctx.node));
      t.dims.insert(t.dims.begin() + a, length);
    }
    out.push_back(t);
  }
  return out;
}

// x without axis `a`, at index i along it.
Expected<Tensor> take(const Tensor& x, int a, int64_t i, const Node& node) {
  Shape shape = x.shape();
  shape.erase(shape.begin() + a);
  TRY(Tensor y, make_tensor(x.dtype(), shape, node));
  const auto esz = static_cast<size_t>(dtype_size(x.dtype()));
  const auto inner =
      static_cast<size_t>(numel_of(x.shape(), static_cast<size_t>(a) + 1, x.shape().size())) * esz;
  const int64_t outer = numel_of(x.shape(), 0, static_cast<size_t>(a));
  for (int64_t o = 0; o < outer && inner > 0; ++o)
    std::memcpy(byte_data(y) + static_cast<size_t>(o) * inner,
                byte_data(x) + static_cast<size_t>(o * x.dim(a) + i) * inner, inner);
  return y;
}

// Stacks `items` (same dtype and shape) along a new axis `a`.
Expected<Tensor> stack(const std::vector<Tensor>& items, int64_t axis, const TensorType& type,
                       const Node& node) {
  Shape item_shape;
  DType dt = type.dtype;
  if (items.empty()) {
    for (const Dim& d : type.dims) item_shape.push_back(d.is_known() ? d.size : 0);
  } else {
    item_shape = items[0].shape();
    dt = items[0].dtype();
  }
  TRY(int a, normalize_axis(axis, static_cast<int>(item_shape.size()) + 1, node));
  for (const Tensor& t : items)
    if (t.dtype() != dt || t.shape() != item_shape)
      return node_error(node, "a scan output changes type between iterations: " + t.summary(0) +
                                  " vs " + items[0].summary(0));
  Shape shape = item_shape;
  shape.insert(shape.begin() + a, static_cast<int64_t>(items.size()));
  TRY(Tensor y, make_tensor(dt, shape, node));
  const auto esz = static_cast<size_t>(dtype_size(dt));
  const auto inner =
      static_cast<size_t>(numel_of(item_shape, static_cast<size_t>(a), item_shape.size())) * esz;
  const int64_t outer = numel_of(item_shape, 0, static_cast<size_t>(a));
  for (size_t t = 0; t < items.size(); ++t) {
    const Tensor c = items[t].contiguous();
    for (int64_t o = 0; o < outer && inner > 0; ++o)
      std::memcpy(byte_data(y) + (static_cast<size_t>(o) * items.size() + t) * inner,
                  byte_data(c) + static_cast<size_t>(o) * inner, inner);
  }
  return y;
}

Status scan_kernel(KernelContext& ctx) {
  if (!ctx.run_subgraph) return node_error(ctx.node, "the executor supplied no subgraph runner");
  RETURN_IF_ERROR(verify_scan(ctx.node, ctx.def));
  TRY(ScanShape s, scan_shape(ctx.node));
  TRY(const ir::Graph* body, body_of(ctx.node));
  std::vector<Tensor> state;
  for (size_t i = 0; i < s.states; ++i) state.push_back(ctx.in(i));
  std::vector<Tensor> scan_in;
  std::vector<int> axes;
  int64_t length = -1;
  for (size_t j = 0; j < s.scans_in; ++j) {
    const Tensor x = ctx.in(s.states + j).contiguous();
    if (x.rank() == 0) return node_error(ctx.node, "scan inputs must have rank >= 1");
    TRY(int a, normalize_axis(s.in_axes[j], x.rank(), ctx.node));
    if (length >= 0 && x.dim(a) != length)
      return node_error(ctx.node, "scan input " + std::to_string(j) + " has length " +
                                      std::to_string(x.dim(a)) + " on its scan axis, expected " +
                                      std::to_string(length));
    length = x.dim(a);
    scan_in.push_back(x);
    axes.push_back(a);
  }
  std::vector<std::vector<Tensor>> outs(s.scans_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> args = state;
    for (size_t j = 0; j < s.scans_in; ++j) {
      TRY(Tensor slice,
          take(scan_in[j], axes[j], s.in_dirs[j] == 1 ? length - 1 - t : t, ctx.node));
      args.push_back(std::move(slice));
    }
    auto r = ctx.run_subgraph(*body, args);
    if (!r) return r.error();
    if (r->size() != s.states + s.scans_out)
      return node_error(ctx.node, "body produced " + std::to_string(r->size()) + " outputs");
    for (size_t i = 0; i < s.states; ++i) {
      if ((*r)[i].dtype() != state[i].dtype())
        return node_error(ctx.node,
                          "the body changed the element type of state " + std::to_string(i));
      state[i] = std::move((*r)[i]);
    }
    for (size_t k = 0; k < s.scans_out; ++k) outs[k].push_back(std::move((*r)[s.states + k]));
  }
  ctx.outputs = std::move(state);
  for (size_t k = 0; k < s.scans_out; ++k) {
    if (s.out_dirs[k] == 1) std::reverse(outs[k].begin(), outs[k].end());
    const TensorType& type = body->value(body->outputs()[s.states + k]).type;
    TRY(Tensor y, stack(outs[k], s.out_axes[k], type, ctx.node));
    ctx.outputs.push_back(std::move(y));
  }
  return Status::ok();
}

}  // namespace

void register_scan_op(OpRegistry& registry) {
  OpDef def("Scan", "control",
            "Runs 'body' once per slice of the scan inputs: (state..., slice...) -> (state..., "
            "out...); returns the final states and each scan output stacked along a new axis "
            "(ONNX opset 9+ form, without sequence_lens).");
  def.input("initial_state_and_scan_inputs", "N initial states, then num_scan_inputs scan inputs",
            false, true);
  def.output("final_state_and_scan_outputs", "N final states, then the stacked scan outputs", false,
             true);
  def.required_attr("body", AttrKind::kGraph,
                    "graph (state..., slice...) -> (state..., scan output element...)");
  def.required_attr("num_scan_inputs", AttrKind::kInt, "M, the number of scan inputs (the last M)");
  def.attr("scan_input_axes", AttrKind::kInts, std::nullopt, "axis of each scan input; default 0")
      .attr("scan_input_directions", AttrKind::kInts, std::nullopt,
            "per scan input: 0 forward, 1 reverse; default 0")
      .attr("scan_output_axes", AttrKind::kInts, std::nullopt,
            "axis each scan output is stacked along; default 0")
      .attr("scan_output_directions", AttrKind::kInts, std::nullopt,
            "per scan output: 0 in iteration order, 1 reversed; default 0");
  def.verify = verify_scan;
  def.infer = infer_scan;
  def.reference = scan_kernel;
  registry.add(std::move(def));
}

}  // namespace tessera::ops
