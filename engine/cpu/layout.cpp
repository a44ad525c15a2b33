// The layout pass: keeps chains of blocked-capable ops in oneDNN's blocked formats.
//
// Algorithm (one walk in topological order; values' layouts are decided as their producers are):
//   1. A node's candidate tag is blocked_tag_for(its output type) (static 4-D f32, C % 8 == 0).
//   2. Conv / FusedConv want the tag when some consumer is a blocked-capable op (a conv can read
//      plain src and write blocked dst, so the first conv needs no Reorder), unless they have
//      fewer than 8 f32 output channels. Pass-through ops
//      (pools, BatchNormalization, unary eltwise) want it when their data input already has it;
//      Add / Mul of same-shape operands and Concat on axis 1 want it when one input has it, the
//      plain ones are then reordered to it; an Add / Mul operand broadcast along one axis at most
//      (a [1, C, 1, 1] scale) stays plain under a channels-last tag, where its bytes read the same.
//   3. The wish is kept only if the node's CPU kernel factory accepts those layouts; otherwise the
//      node is plain. A plain node whose kernel does not accept a blocked input gets a
//      Reorder(to="") on that input (one per value and tag, shared by consumers).
//   4. Graph outputs are always plain: a blocked output gets a Reorder(to=""), which takes over
//      the value's name (the blocked value is renamed "<name>.blocked").
// Existing Reorder nodes are kept and define their output's layout, so a second run is a no-op.
#include "engine/cpu/layout.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/cpu/cpu_backend.h"
#include "engine/ops/infer.h"

namespace tessera::cpu {

backend::LayoutTag blocked_tag_for(const ir::TensorType& type) {
  // 8-bit tensors too: the int8 convolutions (QLinearConv) also run channels-last.
  const bool q8 = type.dtype == DType::kU8 || type.dtype == DType::kI8;
  if ((type.dtype != DType::kF32 && !q8) || !type.is_static() || type.rank() != 4) return "";
  // Channels-last: what oneDNN 2.6's brgemm convolutions on AVX-512 pick for activations
  // (format_tag::any gives acdb), so a chain of convolutions runs without any reorder. It also
  // needs no channel padding, so every channel count qualifies. (nChw16c made each convolution
  // reorder its input and output: 130 reorders and 20% of ResNet-50's time.)
  const int64_t c = type.dims[1].size;
  if (c > 0) return "nhwc";
  return "";
}

backend::LayoutTag node_layout(const ir::Node& node) {
  const char* key = node.op == "Reorder" ? "to" : backend::kLayoutAttr;
  const ir::Attribute* a = node.attr(key);
  return a && a->kind() == ir::AttrKind::kString ? a->s() : "";
}

backend::LayoutTag value_layout(const ir::Graph& graph, ir::ValueId v) {
  if (!graph.has_value(v)) return "";
  const ir::Value& val = graph.value(v);
  if (val.kind != ir::ValueKind::kNodeOutput || !graph.has_node(val.producer)) return "";
  return node_layout(graph.node(val.producer));
}

namespace {

const std::set<std::string> kConvOps = {"Conv", "FusedConv", "ConvTranspose", "QLinearConv"};
const std::set<std::string> kPassThrough = {"QuantizeLinear",
                                            "DequantizeLinear",
                                            "MaxPool",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "BatchNormalization",
                                            "Relu",
                                            "LeakyRelu",
                                            "Sigmoid",
                                            "Tanh",
                                            "Exp",
                                            "Log",
                                            "Sqrt",
                                            "Abs",
                                            "Gelu",
                                            "Elu",
                                            "HardSwish",
                                            "Swish",
                                            "Softplus",
                                            "Neg",
                                            "Clip"};
const std::set<std::string> kJoins = {"Add", "Mul", "Concat"};

bool blocked_capable(const std::string& op) {
  return kConvOps.count(op) || kPassThrough.count(op) || kJoins.count(op);
}

class LayoutPass {
 public:
  LayoutPass(ir::Graph& g, const ops::OpRegistry& ops) : g_(g), ops_(ops) {
    register_cpu_kernels(kernels_);
  }

  Expected<bool> run() {
    TRY(std::vector<ir::NodeId> order, g_.topological_order());
    for (ir::NodeId id : order) {
      if (g_.node(id).op == "Reorder") continue;  // keeps its `to`
      RETURN_IF_ERROR(visit(id));
    }
    std::vector<ir::ValueId> outs = g_.outputs();
    for (ir::ValueId& v : outs) {
      if (value_layout(g_, v).empty()) continue;
      const std::string name = g_.value(v).name;
      const ir::ValueId plain = reorder(v, "");
      if (!name.empty()) {
        g_.set_value_name(v, name + ".blocked");
        g_.set_value_name(plain, name);
      }
      v = plain;
    }
    if (outs != g_.outputs()) g_.set_outputs(outs);
    return changed_;
  }

 private:
  // Does the first CPU kernel that takes this node accept these layouts?
  bool accepts(const ir::Node& node, const std::vector<backend::LayoutTag>& in,
               const backend::LayoutTag& out) {
    const ops::OpDef* def = ops_.find(node.op);
    if (!def) return false;
    backend::KernelInit init{node, *def, {}, {}, {}, in, out, 1};
    for (ir::ValueId v : node.inputs) {
      init.in_types.push_back(g_.has_value(v) ? &g_.value(v).type : nullptr);
      init.constants.push_back(g_.has_value(v) ? ops::constant_value(g_, v) : nullptr);
    }
    for (ir::ValueId v : node.outputs) init.out_types.push_back(&g_.value(v).type);
    for (const backend::KernelRegistry::Entry* e : kernels_.candidates(node.op)) {
      Expected<std::unique_ptr<backend::Kernel>> k = e->factory(init);
      if (!k) return false;
      if (*k) return true;
    }
    return false;
  }

  bool feeds_blocked_op(ir::ValueId v) const {
    for (const ir::Use& u : g_.uses(v))
      if (blocked_capable(g_.node(u.node).op) || is_to_nhwc(g_.node(u.node))) return true;
    return false;
  }

  // Transposes between NCHW and NHWC, which a channels-last buffer turns into byte copies (views).
  static bool has_perm(const ir::Node& node, const std::vector<int64_t>& perm) {
    const ir::Attribute* p = node.attr("perm");
    return node.op == "Transpose" && p && p->kind() == ir::AttrKind::kInts && p->ints() == perm;
  }
  static bool is_to_nhwc(const ir::Node& node) { return has_perm(node, {0, 2, 3, 1}); }
  static bool is_to_nchw(const ir::Node& node) { return has_perm(node, {0, 3, 1, 2}); }

  // The layouts the node's inputs would be given if it produced `tag` ("" when it cannot).
  std::vector<backend::LayoutTag> wish(const ir::Node& node, const backend::LayoutTag& tag) const {
    std::vector<backend::LayoutTag> in;
    for (ir::ValueId v : node.inputs) in.push_back(g_.has_value(v) ? value_layout(g_, v) : "");
    if (tag.empty() || node.outputs.size() != 1 || in.empty()) return {};
    const ir::TensorType& out = g_.value(node.outputs[0]).type;
    if (kConvOps.count(node.op)) {
      // Fewer than 8 float output channels stay plain: channels-last would leave most of each
      // vector empty in every consumer, and vec_conv.cpp's kernels vectorise these along rows.
      if (node.op != "QLinearConv" && out.dtype == DType::kF32 && out.dims[1].size < 8) return {};
      return feeds_blocked_op(node.outputs[0]) ? in : std::vector<backend::LayoutTag>{};
    }
    if (kPassThrough.count(node.op)) return in[0] == tag ? in : std::vector<backend::LayoutTag>{};
    // NHWC -> NCHW of a plain value, read by channels-last ops: the output in "nhwc" is the input's
    // bytes (ConvNeXt's Transpose after its LayerNorm and Linear layers).
    if (is_to_nchw(node) && tag == "nhwc")
      return in[0].empty() && feeds_blocked_op(node.outputs[0]) ? in : std::vector<backend::LayoutTag>{};
    if (!kJoins.count(node.op)) return {};
    if (node.op == "Concat") {
      const ir::Attribute* axis = node.attr("axis");
      if (!axis || axis->kind() != ir::AttrKind::kInt || (axis->i() != 1 && axis->i() != -3))
        return {};
    }
    const int64_t block = tag == "nChw16c" ? 16 : tag == "nChw8c" ? 8 : 1;
    bool any = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!g_.has_value(node.inputs[i])) return {};
      const ir::TensorType& t = g_.value(node.inputs[i]).type;
      // An Add / Mul operand broadcast along one axis at most (a squeeze-excitation scale
      // [1, C, 1, 1]) reads the same plain or channels-last: it stays as it is (the kernel
      // describes a plain one in the other operand's tag).
      if (node.op != "Concat" && t != out && block == 1 && (in[i].empty() || in[i] == tag) && t.is_static() &&
          std::count_if(t.dims.begin(), t.dims.end(), [](const ir::Dim& d) { return d.size != 1; }) <= 1)
        continue;
      if (node.op == "Concat" ? blocked_tag_for(t).empty() || t.dims[1].size % block != 0
                              : t != out)
        return {};
      any |= in[i] == tag;
      in[i] = tag;
    }
    return any ? in : std::vector<backend::LayoutTag>{};
  }

  Status visit(ir::NodeId id) {
    const ir::Node& node = g_.node(id);
    backend::LayoutTag tag =
        node.outputs.size() == 1 ? blocked_tag_for(g_.value(node.outputs[0]).type) : "";
    std::vector<backend::LayoutTag> in = wish(node, tag);
    if (in.empty() || !accepts(node, in, tag)) {
      tag = "";
      in.clear();
      for (ir::ValueId v : node.inputs) in.push_back(g_.has_value(v) ? value_layout(g_, v) : "");
      const bool blocked_in =
          std::any_of(in.begin(), in.end(), [](const std::string& l) { return !l.empty(); });
      if (blocked_in && !accepts(node, in, "")) std::fill(in.begin(), in.end(), "");
    }
    // Reorder inputs whose layout differs from what the node will read.
    for (size_t i = 0; i < in.size(); ++i) {
      const ir::ValueId v = g_.node(id).inputs[i];
      if (g_.has_value(v) && value_layout(g_, v) != in[i]) {
        const ir::ValueId r = reorder(v, in[i]);
        g_.node(id).inputs[i] = r;
      }
    }
    ir::Node& n = g_.node(id);
    const backend::LayoutTag old = node_layout(n);
    if (old != tag || (tag.empty() && n.attr(backend::kLayoutAttr))) {
      changed_ = true;
      if (tag.empty())
        n.attrs.erase(backend::kLayoutAttr);
      else
        n.attrs.insert_or_assign(backend::kLayoutAttr, tag);
    }
    return Status::ok();
  }

  // A Reorder of v to `to` (one per value and tag).
  ir::ValueId reorder(ir::ValueId v, const backend::LayoutTag& to) {
    const auto key = std::make_pair(v, to);
    auto it = reorders_.find(key);
    if (it != reorders_.end()) return it->second;
    changed_ = true;
    const std::string base = g_.value(v).name.empty() ? "v" + std::to_string(v) : g_.value(v).name;
    ir::Attributes attrs{{"to", to}};
    if (!to.empty()) attrs.insert_or_assign(backend::kLayoutAttr, to);
    const ir::NodeId r = g_.add_node("Reorder", {v}, 1, base + ".reorder", std::move(attrs));
    const ir::Value& src = g_.value(v);
    if (src.kind == ir::ValueKind::kNodeOutput) g_.node(r).provenance.from = {src.producer};
    g_.node(r).provenance.origin = "layout";
    const ir::ValueId out = g_.node(r).outputs[0];
    g_.value(out).type = g_.value(v).type;
    g_.set_value_name(out, base + "." + (to.empty() ? std::string("plain") : to));
    reorders_[key] = out;
    return out;
  }

  ir::Graph& g_;
  const ops::OpRegistry& ops_;
  backend::KernelRegistry kernels_;
  std::map<std::pair<ir::ValueId, backend::LayoutTag>, ir::ValueId> reorders_;
  bool changed_ = false;
};

}  // namespace

Expected<bool> assign_layouts(ir::Graph& graph, const ops::OpRegistry& registry) {
  LayoutPass pass(graph, registry);
  return pass.run();
}

}  // namespace tessera::cpu
