// float16 computed in float32: float16 storage in the file, float32 arithmetic in the kernels.
//
// Why: ONNX Runtime's float16 converter writes models whose every weight and value is float16,
// but no CPU we run on has float16 matrix units (AVX-512 FP16 is Sapphire Rapids' and later, and
// oneDNN 2.6 does not use it): such a model ran on the reference kernels, 62x slower than ONNX
// Runtime. ONNX Runtime's CPU provider does what this pass does (its InsertCastTransformer computes
// float16 nodes in float32 between Casts).
//
// Algorithm (the graph and its nested graphs):
//   - every float16 param becomes the float32 param of the same values (exact: f16 -> f32 loses
//     nothing);
//   - every float16 node output and capture becomes float32; attributes that name an element type
//     (Cast/RandomNormal/EyeLike... "to"/"dtype" = f16) name f32; tensor attributes of float16
//     (Constant's value, ConstantOfShape's value) become float32;
//   - a float16 graph input gets a Cast to f32 after it, a float16 graph output a Cast to f16 before
//     it, so the graph's interface is unchanged (the nested graphs' interfaces change with their
//     enclosing graph, which is the only one that sees them).
// A Cast that rounded a float32 value to float16 now leaves it in float32, so results differ from a
// float16 computation by float16's rounding (about 1e-3 relative), as ONNX Runtime's do.
#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {
namespace {

bool widen_type(ir::TensorType& t) {
  if (t.dtype != DType::kF16) return false;
  t.dtype = DType::kF32;
  return true;
}

// Attributes naming or holding float16: "to"/"dtype" strings and float16 tensors.
bool widen_attributes(ir::Node& n) {
  bool changed = false;
  for (auto& [key, attr] : n.attrs) {
    if (attr.kind() == ir::AttrKind::kString && (key == "to" || key == "dtype") && attr.s() == "f16" &&
        n.op != "Copy") {
      attr = ir::Attribute(std::string("f32"));
      changed = true;
    } else if (attr.kind() == ir::AttrKind::kTensor && attr.t().is_tensor() && attr.t().dtype() == DType::kF16) {
      attr = ir::Attribute(attr.t().cast(DType::kF32));
      changed = true;
    }
  }
  return changed;
}

bool has_f16(const ir::Graph& g) {
  for (ir::ValueId v = 0; v < g.value_capacity(); ++v)
    if (g.has_value(v) && g.value(v).type.dtype == DType::kF16) return true;
  for (ir::NodeId id : g.node_ids())
    for (const auto& [key, attr] : g.node(id).attrs) {
      if (attr.kind() == ir::AttrKind::kGraph && has_f16(attr.g())) return true;
      if (attr.kind() == ir::AttrKind::kString && (key == "to" || key == "dtype") && attr.s() == "f16") return true;
    }
  return false;
}

// Widens everything inside `g`; `top` keeps the interface (inputs and outputs) float16.
bool widen_graph(ir::Graph& g, bool top) {
  bool changed = false;
  for (ir::NodeId id : g.node_ids()) {
    ir::Node& n = g.node(id);
    changed |= widen_attributes(n);
    for (auto& [key, attr] : n.attrs)
      if (attr.kind() == ir::AttrKind::kGraph) changed |= widen_graph(attr.g(), false);
  }
  for (ir::ValueId p : g.params()) {
    const Tensor* data = g.param_data(p);
    if (data != nullptr && data->is_tensor() && data->dtype() == DType::kF16) {
      g.set_param_data(p, data->cast(DType::kF32));
      g.value(p).type.dtype = DType::kF32;
      changed = true;
    }
  }
  // Interface: a Cast between the float16 input and its users, one before each float16 output.
  if (top) {
    for (ir::ValueId in : std::vector<ir::ValueId>(g.inputs())) {
      if (g.value(in).type.dtype != DType::kF16 || g.uses(in).empty()) continue;
      const ir::NodeId cast = g.add_node("Cast", {in}, 1, g.value(in).name + "/widen_f16",
                                         {{"to", ir::Attribute(std::string("f32"))}});
      const ir::ValueId out = g.node(cast).outputs[0];
      g.value(out).type = g.value(in).type;
      g.value(out).type.dtype = DType::kF32;
      g.set_value_name(out, unique_value_name(g, g.value(in).name + "_f32"));
      for (const ir::Use& u : g.uses(in))
        if (u.node != cast) g.node(u.node).inputs[static_cast<size_t>(u.input_index)] = out;
      changed = true;
    }
  }
  for (ir::ValueId v = 0; v < g.value_capacity(); ++v) {
    if (!g.has_value(v)) continue;
    ir::Value& value = g.value(v);
    if (value.kind == ir::ValueKind::kNodeOutput || value.kind == ir::ValueKind::kCapture ||
        (!top && value.kind == ir::ValueKind::kInput))
      changed |= widen_type(value.type);
  }
  return changed;
}

class WidenF16Pass : public Pass {
 public:
  std::string name() const override { return "widen-f16"; }
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    if (!has_f16(graph)) return false;
    // The float16 outputs of the interface, remembered before their producers are widened.
    std::vector<char> f16_output;
    for (ir::ValueId out : graph.outputs()) f16_output.push_back(graph.value(out).type.dtype == DType::kF16);
    widen_graph(graph, true);
    std::vector<ir::ValueId> outputs = graph.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!f16_output[i]) continue;
      const ir::ValueId wide = outputs[i];
      if (graph.value(wide).kind != ir::ValueKind::kNodeOutput) continue;
      const ir::NodeId cast = graph.add_node("Cast", {wide}, 1, graph.value(wide).name + "/narrow_f16",
                                             {{"to", ir::Attribute(std::string("f16"))}});
      const ir::ValueId narrow = graph.node(cast).outputs[0];
      graph.value(narrow).type = graph.value(wide).type;
      graph.value(narrow).type.dtype = DType::kF16;
      // The output keeps its name (the interface); the widened value gets another.
      std::string name = graph.value(wide).name;
      graph.set_value_name(wide, unique_value_name(graph, name + "_f32"));
      graph.set_value_name(narrow, std::move(name));
      outputs[i] = narrow;
    }
    graph.set_outputs(outputs);
    ctx.diagnostics.push_back("widen-f16: float16 values computed in float32");
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_widen_f16_pass() { return std::make_unique<WidenF16Pass>(); }

}  // namespace tessera::passes
