// Per-op import rules: where an older opset (1..16) differs from opset 17, or where Tessera's IR
// differs from ONNX, the node is rewritten here into the registry's form. Everything else is
// imported generically (attributes copied by kind), so new ops need no rule.
//
//   Slice < 10           starts/ends/axes attributes -> i64 inputs
//   Squeeze, Unsqueeze < 13, ReduceSum < 13, Split < 13 (split), TopK < 10 (k), Reshape < 5 (shape)
//                        attribute -> i64 input
//   Pad < 11             pads/value attributes -> inputs (value in the data's element type)
//   Clip < 11            min/max attributes -> inputs (in the data's element type)
//   Dropout < 12         ratio attribute -> f32 input; is_test dropped
//   BatchNormalization < 9  spatial=1 dropped (spatial=0 refused); training outputs < 14 refused
//   Upsample             -> Resize (scales attribute < 9 -> input; asymmetric, floor rounding)
//   Resize 10            (X, scales) -> (X, roi absent, scales), asymmetric coordinates
//   Softmax, LogSoftmax, Hardmax < 13   the 2-D coercion at `axis` -> Flatten, op, Reshape
//   Scatter              -> ScatterElements
//   Constant             value_float(s)/value_int(s) -> a `value` tensor (so it folds)
//   Scan < 9             -> Loop over the batch axis whose body gathers one batch row of every
//                        state and scan input and runs the same body as a Scan-9; the Loop's
//                        scan outputs stack the rows back (sequence_lens refused)
//   every op < 7         consumed_inputs / is_test dropped; binary ops' broadcast=1 + axis -> B
//                        unsqueezed to align at axis; PRelu's 1-D slope -> per channel
//   Gemm < 7 (broadcast dropped), Concat < 4 (axis 1 by default), Cast < 6 (string `to`)
//   RNN, LSTM, GRU       `layout` -> `batch_first` (Tessera's `layout` is the physical layout)
//   RoiAlign < 16        coordinate_transformation_mode = output_half_pixel (RoiAlign-10 had no
//                        half-pixel offset; 16's default is half_pixel)
#include <cmath>
#include <set>

#include "formats/onnx_import_internal.h"

namespace tessera::formats::onnx_internal {
namespace {

std::optional<ir::Attribute> take(NodeImport& ni, const std::string& name) {
  auto it = ni.attrs.find(name);
  if (it == ni.attrs.end()) return std::nullopt;
  ir::Attribute a = std::move(it->second);
  ni.attrs.erase(it);
  return a;
}

void set_input(NodeImport& ni, size_t i, ir::ValueId v) {
  if (ni.inputs.size() <= i) ni.inputs.resize(i + 1, ir::kNoValue);
  ni.inputs[i] = v;
}

std::string hint(const NodeImport& ni, const std::string& what) {
  return (ni.proto.name().empty() ? ni.proto.op_type() : ni.proto.name()) + "." + what;
}

ir::ValueId i64_param(NodeImport& ni, const std::string& what, const std::vector<int64_t>& v) {
  return ni.builder.add_constant(hint(ni, what), Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

Expected<std::vector<int64_t>> ints_attr(const NodeImport& ni, const ir::Attribute& a, const std::string& name) {
  if (a.kind() == ir::AttrKind::kInts) return a.ints();
  if (a.kind() == ir::AttrKind::kInt) return std::vector<int64_t>{a.i()};
  return make_error(ni.label + ": attribute '" + name + "' must be ints");
}

Expected<double> float_attr(const NodeImport& ni, const ir::Attribute& a, const std::string& name) {
  if (a.kind() == ir::AttrKind::kFloat) return a.f();
  if (a.kind() == ir::AttrKind::kInt) return static_cast<double>(a.i());
  return make_error(ni.label + ": attribute '" + name + "' must be a float");
}

// Moves an ints attribute to input `index` as an i64 1-D param (nothing when absent).
Status attr_to_i64_input(NodeImport& ni, const std::string& name, size_t index, bool required = false) {
  auto a = take(ni, name);
  if (!a) {
    if (required) return make_error(ni.label + ": required attribute '" + name + "' is missing");
    return Status::ok();
  }
  TRY(std::vector<int64_t> v, ints_attr(ni, *a, name));
  set_input(ni, index, i64_param(ni, name, v));
  return Status::ok();
}

// The element type of input `i` when it can be known at import time (f32 otherwise: the old
// opsets these rules serve only accept float data for the affected inputs).
DType data_dtype(const NodeImport& ni, size_t i) {
  if (i < ni.inputs.size() && ni.inputs[i] != ir::kNoValue)
    if (auto t = ni.builder.derived_type(ni.inputs[i])) return t->dtype;
  return DType::kF32;
}

ir::ValueId scalar_param(NodeImport& ni, const std::string& what, DType dt, double v) {
  return ni.builder.add_constant(hint(ni, what), Tensor::from_doubles(dt, {}, {v}));
}

Status slice_rule(NodeImport& ni) {
  if (ni.opset >= 10) return Status::ok();
  RETURN_IF_ERROR(attr_to_i64_input(ni, "starts", 1, true));
  RETURN_IF_ERROR(attr_to_i64_input(ni, "ends", 2, true));
  return attr_to_i64_input(ni, "axes", 3);
}

Status axes_to_input_before_13(NodeImport& ni) {
  if (ni.opset >= 13) return Status::ok();
  return attr_to_i64_input(ni, "axes", 1);
}

Status split_rule(NodeImport& ni) {
  if (ni.opset >= 13) return Status::ok();
  return attr_to_i64_input(ni, "split", 1);
}

Status reshape_rule(NodeImport& ni) {
  if (ni.opset >= 5) return Status::ok();
  return attr_to_i64_input(ni, "shape", 1, true);
}

Status topk_rule(NodeImport& ni) {
  if (ni.opset >= 10) return Status::ok();
  return attr_to_i64_input(ni, "k", 1, true);
}

Status pad_rule(NodeImport& ni) {
  if (ni.opset >= 11) return Status::ok();
  RETURN_IF_ERROR(attr_to_i64_input(ni, "pads", 1, true));
  if (auto value = take(ni, "value")) {
    TRY(double v, float_attr(ni, *value, "value"));
    if (v != 0) set_input(ni, 2, scalar_param(ni, "constant_value", data_dtype(ni, 0), v));
  }
  return Status::ok();
}

Status clip_rule(NodeImport& ni) {
  if (ni.opset >= 11) return Status::ok();
  const DType dt = data_dtype(ni, 0);
  for (auto [name, index] : {std::pair<const char*, size_t>{"min", 1}, {"max", 2}}) {
    if (auto a = take(ni, name)) {
      TRY(double v, float_attr(ni, *a, name));
      set_input(ni, index, scalar_param(ni, name, dt, v));
    }
  }
  return Status::ok();
}

Status dropout_rule(NodeImport& ni) {
  if (ni.opset >= 12) return Status::ok();
  take(ni, "is_test");
  if (auto a = take(ni, "ratio")) {
    TRY(double v, float_attr(ni, *a, "ratio"));
    set_input(ni, 1, ni.builder.add_constant(hint(ni, "ratio"), Tensor::scalar<float>(static_cast<float>(v))));
  }
  return Status::ok();
}

Status batchnorm_rule(NodeImport& ni) {
  if (ni.opset < 9) {
    if (auto s = take(ni, "spatial"); s && s->kind() == ir::AttrKind::kInt && s->i() == 0)
      return make_error(ni.label + ": spatial=0 (per-activation statistics, opset < 9) is not supported");
  }
  if (ni.opset < 14) {
    for (size_t i = 1; i < ni.outputs.size(); ++i)
      if (!ni.outputs[i].empty())
        return make_error(ni.label + ": training-mode outputs of BatchNormalization before opset 14 are not supported");
  }
  take(ni, "is_test");
  take(ni, "consumed_inputs");
  return Status::ok();
}

// Upsample-7/9 and Resize-10 -> Resize-17 with asymmetric coordinates (their definition).
Status old_resize(NodeImport& ni, bool scales_from_attr) {
  ir::ValueId x = ni.inputs.empty() ? ir::kNoValue : ni.inputs[0];
  ir::ValueId scales = ni.inputs.size() > 1 ? ni.inputs[1] : ir::kNoValue;
  if (scales_from_attr) {
    auto a = take(ni, "scales");
    if (!a || a->kind() != ir::AttrKind::kFloats)
      return make_error(ni.label + ": required attribute 'scales' (floats) is missing");
    std::vector<float> v(a->floats().begin(), a->floats().end());
    scales = ni.builder.add_constant(hint(ni, "scales"), Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v));
  }
  std::string mode = "nearest";
  if (auto m = take(ni, "mode"); m && m->kind() == ir::AttrKind::kString) mode = m->s();
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";
  ni.inputs = {x, ir::kNoValue, scales};
  ni.attrs.insert_or_assign("mode", ir::Attribute(mode));
  ni.attrs.insert_or_assign("coordinate_transformation_mode", ir::Attribute("asymmetric"));
  if (mode == "nearest") ni.attrs.insert_or_assign("nearest_mode", ir::Attribute("floor"));
  return Status::ok();
}

Status upsample_rule(NodeImport& ni) { return old_resize(ni, ni.opset < 9); }

Status resize_rule(NodeImport& ni) {
  if (ni.opset >= 11) return Status::ok();
  return old_resize(ni, false);
}

// Softmax-1/11 (and LogSoftmax, Hardmax): the input is coerced to 2-D at `axis` (default 1) and
// normalised over the second dim. Same as opset 13 when axis is the last dim; otherwise
// Reshape(op(Flatten(x, axis), axis=1), Shape(x)).
Status softmax_rule(NodeImport& ni) {
  if (ni.opset >= 13) return Status::ok();
  int64_t axis = 1;
  if (auto a = take(ni, "axis"); a && a->kind() == ir::AttrKind::kInt) axis = a->i();
  if (ni.inputs.empty() || ni.inputs[0] == ir::kNoValue) return make_error(ni.label + ": input 0 is missing");
  const ir::ValueId x = ni.inputs[0];
  if (auto t = ni.builder.derived_type(x); t && t->rank_known) {
    const int64_t r = t->rank();
    if (axis == r - 1 || axis == -1) {
      ni.attrs.insert_or_assign("axis", ir::Attribute(int64_t{-1}));
      return Status::ok();
    }
  }
  const ir::ValueId flat = ni.builder.add_helper_node("Flatten", {x}, 1, {{"axis", axis}}, ni.origin)[0];
  const ir::ValueId y2 = ni.builder.add_helper_node(ni.op, {flat}, 1, {{"axis", int64_t{1}}}, ni.origin)[0];
  const ir::ValueId shape = ni.builder.add_helper_node("Shape", {x}, 1, {}, ni.origin)[0];
  ni.builder.emit(ni, "Reshape", {y2, shape}, {});
  ni.emitted = true;
  return Status::ok();
}

// Scan-8 has a batch axis 0 on every state and scan input (and on the outputs) and an optional
// first input sequence_lens. Without sequence_lens it is a Scan-9 per batch row: a Loop over the
// rows gathers row i of each input (captured by name), runs the Scan, and stacks the results.
Status scan_rule(NodeImport& ni) {
  if (ni.opset >= 9) return Status::ok();
  if (!ni.inputs.empty() && ni.inputs[0] != ir::kNoValue)
    return make_error(ni.label + ": Scan-8's sequence_lens is not supported (leave it empty: every sequence full length)");
  std::vector<ir::ValueId> batched(ni.inputs.begin() + (ni.inputs.empty() ? 0 : 1), ni.inputs.end());
  if (batched.empty()) return make_error(ni.label + ": Scan-8 needs states or scan inputs");
  std::optional<ir::Attribute> body = take(ni, "body");
  if (!body || body->kind() != ir::AttrKind::kGraph) return make_error(ni.label + ": attribute 'body' must be a graph");
  ir::Graph& outer = ni.builder.graph();
  ir::Graph loop_body(outer.value(batched[0]).name + ".scan8_rows");
  const ir::ValueId i = loop_body.add_input("scan8_row", ir::TensorType(DType::kI64, {}));
  const ir::ValueId cond = loop_body.add_input("scan8_cond", ir::TensorType(DType::kBool, {}));
  std::vector<ir::ValueId> rows;
  for (ir::ValueId v : batched) {
    const std::string& name = outer.value(v).name;
    if (name.empty()) return make_error(ni.label + ": Scan-8 input without a name");
    std::optional<ir::TensorType> t = ni.builder.derived_type(v);
    const ir::ValueId c = loop_body.add_capture(name, t ? *t : ir::TensorType::unranked(DType::kF32));
    rows.push_back(loop_body.node(loop_body.add_node("Gather", {c, i}, 1, "", {{"axis", int64_t{0}}})).outputs[0]);
  }
  ir::Attributes scan_attrs = {{"body", std::move(*body)}};
  if (auto m = take(ni, "num_scan_inputs")) scan_attrs.insert_or_assign("num_scan_inputs", std::move(*m));
  if (auto d = take(ni, "directions")) scan_attrs.insert_or_assign("scan_input_directions", std::move(*d));
  const int outs = static_cast<int>(ni.outputs.size());
  const ir::NodeId scan = loop_body.add_node("Scan", rows, outs, "", std::move(scan_attrs));
  const ir::ValueId keep = loop_body.node(loop_body.add_node("Identity", {cond}, 1)).outputs[0];
  std::vector<ir::ValueId> body_outs = {keep};
  for (ir::ValueId v : loop_body.node(scan).outputs) body_outs.push_back(v);
  loop_body.set_outputs(body_outs);
  // The trip count: the batch size, dimension 0 of the first batched input.
  const ir::ValueId shape = ni.builder.add_helper_node("Shape", {batched[0]}, 1, {}, ni.origin)[0];
  const ir::ValueId zero = ni.builder.add_constant(ni.label + ".axis0", Tensor::scalar<int64_t>(0));
  const ir::ValueId batch = ni.builder.add_helper_node("Gather", {shape, zero}, 1, {{"axis", int64_t{0}}}, ni.origin)[0];
  const ir::ValueId always = ni.builder.add_constant(ni.label + ".cond", Tensor::from_bools({}, {true}));
  ni.builder.emit(ni, "Loop", {batch, always}, {{"body", ir::Attribute(std::move(loop_body))}});
  ni.emitted = true;
  return Status::ok();
}

Status constant_rule(NodeImport& ni) {
  for (const char* name : {"sparse_value", "value_string", "value_strings"})
    if (ni.attrs.count(name)) return make_error(ni.label + ": attribute '" + name + "' is not supported (no sparse or string tensors)");
  if (auto a = take(ni, "value_float")) {
    TRY(double v, float_attr(ni, *a, "value_float"));
    ni.attrs.insert_or_assign("value", ir::Attribute(Tensor::scalar<float>(static_cast<float>(v))));
  } else if (auto a = take(ni, "value_floats")) {
    if (a->kind() != ir::AttrKind::kFloats) return make_error(ni.label + ": attribute 'value_floats' must be floats");
    std::vector<float> v(a->floats().begin(), a->floats().end());
    ni.attrs.insert_or_assign("value", ir::Attribute(Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v)));
  } else if (auto a = take(ni, "value_int")) {
    if (a->kind() != ir::AttrKind::kInt) return make_error(ni.label + ": attribute 'value_int' must be an int");
    ni.attrs.insert_or_assign("value", ir::Attribute(Tensor::scalar<int64_t>(a->i())));
  } else if (auto a = take(ni, "value_ints")) {
    TRY(std::vector<int64_t> v, ints_attr(ni, *a, "value_ints"));
    ni.attrs.insert_or_assign("value", ir::Attribute(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v)));
  }
  return Status::ok();
}

// Concat-1..3: `axis` was optional (default 1).
Status concat_rule(NodeImport& ni) {
  if (ni.opset < 4 && !ni.attrs.count("axis")) ni.attrs.insert_or_assign("axis", ir::Attribute(int64_t{1}));
  return Status::ok();
}

// Cast-1..5: `to` was a string naming the TensorProto.DataType ("FLOAT", "INT64", ...).
Status cast_rule(NodeImport& ni) {
  if (ni.opset >= 6) return Status::ok();
  auto it = ni.attrs.find("to");
  if (it == ni.attrs.end() || it->second.kind() != ir::AttrKind::kString) return Status::ok();
  int value = 0;
  if (!onnx::TensorProto::DataType_Parse(it->second.s(), reinterpret_cast<onnx::TensorProto::DataType*>(&value)))
    return make_error(ni.label + ": attribute 'to' names unknown element type '" + it->second.s() + "'");
  it->second = ir::Attribute(static_cast<int64_t>(value));  // adapt_attributes turns it into a dtype name
  return Status::ok();
}

// Gemm-1..6: `broadcast` only allowed C to broadcast, which opset 7 always allows.
Status gemm_rule(NodeImport& ni) {
  if (ni.opset < 7) take(ni, "broadcast");
  return Status::ok();
}

// Binary ops before opset 7: with broadcast=1, B broadcasts to A; `axis` says where B's dims start
// in A's (absent: B aligns with A's trailing dims, which multidirectional broadcasting also does).
// B gets trailing 1-dims through an Unsqueeze so that its dims align at `axis`.
Status legacy_broadcast(NodeImport& ni) {
  auto broadcast = take(ni, "broadcast");
  auto axis = take(ni, "axis");
  if (!broadcast || broadcast->kind() != ir::AttrKind::kInt || broadcast->i() == 0 || !axis) return Status::ok();
  if (axis->kind() != ir::AttrKind::kInt) return make_error(ni.label + ": attribute 'axis' must be an int");
  if (ni.inputs.size() != 2 || ni.inputs[0] == ir::kNoValue || ni.inputs[1] == ir::kNoValue)
    return make_error(ni.label + ": broadcast=1 needs two inputs");
  auto a = ni.builder.derived_type(ni.inputs[0]);
  auto b = ni.builder.derived_type(ni.inputs[1]);
  if (!a || !b || !a->rank_known || !b->rank_known)
    return make_error(ni.label + ": broadcast with 'axis' needs the ranks of both inputs at import time");
  const int64_t ra = a->rank(), rb = b->rank();
  const int64_t ax = axis->i() < 0 ? axis->i() + ra : axis->i();
  const int64_t trailing = ra - ax - rb;
  if (ax < 0 || trailing < 0)
    return make_error(ni.label + ": axis " + std::to_string(axis->i()) + " does not fit B (rank " + std::to_string(rb) +
                      ") into A (rank " + std::to_string(ra) + ")");
  if (trailing == 0) return Status::ok();
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < trailing; ++i) axes.push_back(rb + i);
  ni.inputs[1] = ni.builder.add_helper_node("Unsqueeze", {ni.inputs[1], i64_param(ni, "axes", axes)}, 1, {}, ni.origin)[0];
  return Status::ok();
}

// PRelu-1/6: a 1-D slope of X's channel count applies per channel (axis 1), as PyTorch exports
// it; opset 7 broadcasts it from the right, so it gets trailing 1-dims.
Status legacy_prelu(NodeImport& ni) {
  if (ni.inputs.size() != 2 || ni.inputs[0] == ir::kNoValue || ni.inputs[1] == ir::kNoValue) return Status::ok();
  auto x = ni.builder.derived_type(ni.inputs[0]);
  auto slope = ni.builder.derived_type(ni.inputs[1]);
  if (!x || !slope || !x->rank_known || !slope->rank_known || slope->rank() != 1 || x->rank() < 3) return Status::ok();
  if (!slope->dims[0].is_known() || slope->dims[0].size == 1) return Status::ok();
  std::vector<int64_t> axes;
  for (int64_t i = 1; i < x->rank() - 1; ++i) axes.push_back(i);
  ni.inputs[1] = ni.builder.add_helper_node("Unsqueeze", {ni.inputs[1], i64_param(ni, "axes", axes)}, 1, {}, ni.origin)[0];
  return Status::ok();
}

Status roi_align_rule(NodeImport& ni) {
  if (ni.opset < 16 && !ni.attrs.count("coordinate_transformation_mode"))
    ni.attrs.insert_or_assign("coordinate_transformation_mode", ir::Attribute("output_half_pixel"));
  return Status::ok();
}

// Tessera reserves the attribute name `layout` for the physical layout the optimiser picks.
Status recurrent_rule(NodeImport& ni) {
  if (std::optional<ir::Attribute> layout = take(ni, "layout")) ni.attrs.insert_or_assign("batch_first", *layout);
  return Status::ok();
}

}  // namespace

Status legacy_rule(NodeImport& ni) {
  take(ni, "consumed_inputs");
  if (ni.op != "Dropout") take(ni, "is_test");
  static const std::set<std::string> kBroadcastOps = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or",
                                                      "Xor", "Equal", "Less", "Greater"};
  if (kBroadcastOps.count(ni.op)) return legacy_broadcast(ni);
  if (ni.op == "PRelu") return legacy_prelu(ni);
  return Status::ok();
}

const std::map<std::string, NodeRule>& node_rules() {
  static const std::map<std::string, NodeRule> kRules = {
      {"Slice", slice_rule},
      {"Squeeze", axes_to_input_before_13},
      {"Unsqueeze", axes_to_input_before_13},
      {"ReduceSum", axes_to_input_before_13},
      {"Split", split_rule},
      {"Reshape", reshape_rule},
      {"TopK", topk_rule},
      {"Pad", pad_rule},
      {"Clip", clip_rule},
      {"Dropout", dropout_rule},
      {"BatchNormalization", batchnorm_rule},
      {"Upsample", upsample_rule},
      {"Resize", resize_rule},
      {"Softmax", softmax_rule},
      {"LogSoftmax", softmax_rule},
      {"Hardmax", softmax_rule},
      {"Scan", scan_rule},
      {"Constant", constant_rule},
      {"Concat", concat_rule},
      {"Cast", cast_rule},
      {"Gemm", gemm_rule},
      {"RNN", recurrent_rule},
      {"LSTM", recurrent_rule},
      {"GRU", recurrent_rule},
      {"RoiAlign", roi_align_rule},
  };
  return kRules;
}

std::string renamed_op(const std::string& onnx_op) {
  if (onnx_op == "Upsample") return "Resize";
  if (onnx_op == "Scatter") return "ScatterElements";
  return onnx_op;
}

}  // namespace tessera::formats::onnx_internal
