// QDQ fusion: turns the QuantizeLinear / DequantizeLinear pairs that quantization tools write
// around Conv, Gemm and MatMul (ONNX's "QDQ format": `tessera quantize`, ONNX Runtime's
// quantize_static) into integer ops the int8 kernels run.
//
//   DQ(x_q) -> Conv(., DQ(w_q), b) [-> Relu] -> Q(y_s, y_zp)
//       => QLinearConv(x_q, x_s, x_zp, w_q, w_s, w_zp, y_s, y_zp, round(b / (x_s * w_s)))
//   DQ(a_q) -> Gemm(., DQ(w_q), c) / MatMul(., DQ(w_q)) [-> Relu] -> Q
//       => QLinearMatMul(a_q, ..., w_q as [K, N], ..., bias i32)   (Tessera's optional bias)
// Conditions: every scale and zero point a constant, x and y per tensor, w per tensor or per
// output channel (Conv: axis 0; Gemm/MatMul: the N axis); weights and bias constants; the Conv /
// Gemm / MatMul output and the Relu read only by the next node; Gemm with alpha = beta = 1 and
// no transA. A Relu is absorbed only when y_zp is the lowest value of its type (saturation then
// clips at 0 exactly as the Relu did). The integer ops round their result once, where the float
// graph rounded the float product to Q's grid: both agree up to the last step of that grid.
// The DequantizeLinear nodes left without users are dce's. constant-fold keeps the weights'
// DequantizeLinear of such patterns for this pass (constant_fold.cpp).
#include <cmath>

#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/passes/rewrite.h"

namespace tessera::passes {

namespace {
// Data movement a per-tensor DequantizeLinear commutes with (sink_dequantize moves it below them).
bool is_movement(const std::string& op) {
  return op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze";
}
}  // namespace

bool feeds_qdq_pattern(const ir::Graph& g, const ir::Node& dq) {
  if (dq.op != "DequantizeLinear") return false;
  // Only weights the int8 kernels take (s8, zero point 0): anything else is folded to float once
  // rather than dequantized on every run.
  const Tensor* w = dq.inputs.empty() ? nullptr : ops::constant_value(g, dq.inputs[0]);
  const Tensor* z = dq.inputs.size() > 2 && dq.inputs[2] != ir::kNoValue ? ops::constant_value(g, dq.inputs[2]) : nullptr;
  if (!w || w->dtype() != DType::kI8 || (z && !all_elements_equal(*z, 0))) return false;
  for (const ir::Use& u : g.uses(dq.outputs[0])) {
    const ir::Node& c = g.node(u.node);
    if ((c.op != "Conv" && c.op != "Gemm" && c.op != "MatMul") || u.input_index != 1 || c.inputs.empty()) return false;
    // The data input dequantized, maybe through data movement that qdq-fuse moves after it.
    ir::ValueId x = c.inputs[0];
    if (g.value(x).kind == ir::ValueKind::kNodeOutput && g.has_node(g.value(x).producer) &&
        is_movement(g.node(g.value(x).producer).op))
      x = g.node(g.value(x).producer).inputs[0];
    if (!producer(g, x, "DequantizeLinear")) return false;
    // And the result quantized again, maybe after a Relu: without the QuantizeLinear (ONNX
    // Runtime's quantizer leaves a Conv before a residual Add or a MaxPool so) qdq-fuse makes no
    // integer op, and a weight kept dequantized would run on the reference kernel every time.
    ir::ValueId y = c.outputs.empty() ? ir::kNoValue : c.outputs[0];
    std::vector<ir::Use> y_uses = y == ir::kNoValue ? std::vector<ir::Use>{} : g.uses(y);
    if (y_uses.size() == 1 && g.node(y_uses[0].node).op == "Relu") y_uses = g.uses(g.node(y_uses[0].node).outputs[0]);
    if (y_uses.size() != 1 || g.node(y_uses[0].node).op != "QuantizeLinear") return false;
  }
  return !g.uses(dq.outputs[0]).empty();
}

namespace {

struct Quant {
  ir::ValueId q = ir::kNoValue;      // the integer tensor
  ir::ValueId scale = ir::kNoValue, zero = ir::kNoValue;
  std::vector<double> scales, zeros;
  int64_t axis = 1;
};

// The DequantizeLinear producing v, with constant scale and zero point.
std::optional<Quant> dequantized(const ir::Graph& g, ir::ValueId v) {
  const ir::Node* dq = producer(g, v, "DequantizeLinear");
  if (!dq || dq->inputs.size() < 3 || dq->inputs[2] == ir::kNoValue) return std::nullopt;
  const Tensor* s = ops::constant_value(g, dq->inputs[1]);
  const Tensor* z = ops::constant_value(g, dq->inputs[2]);
  if (!s || !z) return std::nullopt;
  const ir::TensorType& qt = g.value(dq->inputs[0]).type;
  if (qt.dtype != DType::kU8 && qt.dtype != DType::kI8) return std::nullopt;
  Quant r;
  r.q = dq->inputs[0];
  r.scale = dq->inputs[1];
  r.zero = dq->inputs[2];
  r.scales = s->to_doubles();
  r.zeros = z->to_doubles();
  if (const ir::Attribute* a = dq->attr("axis")) r.axis = a->i();
  for (double x : r.scales)
    if (!(x > 0) || !std::isfinite(x)) return std::nullopt;
  return r;
}

bool per_tensor(const Quant& q) { return q.scales.size() == 1 && q.zeros.size() == 1; }

class QdqFusePass : public Pass {
 public:
  std::string name() const override { return "qdq-fuse"; }

  Expected<bool> run(ir::Graph& g, PassContext& ctx) override {
    TRY(std::vector<ir::NodeId> order, g.topological_order());
    const std::set<std::string> captured = captured_names(g);
    int fused = 0;
    // Data movement first: DequantizeLinear -> Flatten / Reshape / Squeeze / Unsqueeze becomes the
    // movement of the integers, then the DequantizeLinear (per tensor, so it commutes), which
    // brings the DequantizeLinear next to the op that reads it.
    for (ir::NodeId id : order)
      if (g.has_node(id) && sink_dequantize(g, id, captured, ctx)) ++fused;
    TRY(order, g.topological_order());
    for (ir::NodeId id : order) {
      if (!g.has_node(id) || g.node(id).op != "QuantizeLinear") continue;
      if (fuse_one(g, id, captured, ctx)) ++fused;
    }
    if (fused) {
      remove_unused_params(g);
      RETURN_IF_ERROR(ops::infer_types(g, ctx.registry));
    }
    return fused > 0;
  }

 private:
  static bool sink_dequantize(ir::Graph& g, ir::NodeId id, const std::set<std::string>& captured, PassContext& ctx) {
    const ir::Node m = g.node(id);
    if (!is_movement(m.op)) return false;
    if (m.inputs.empty() || m.outputs.size() != 1) return false;
    auto dq = dequantized(g, m.inputs[0]);
    if (!dq || !per_tensor(*dq) || sole_user(g, m.inputs[0], captured) != id) return false;
    const ir::NodeId dq_id = g.value(m.inputs[0]).producer;
    std::vector<ir::ValueId> ins = m.inputs;
    ins[0] = dq->q;
    const ir::NodeId moved = g.add_node(m.op, ins, 1, m.name, m.attrs);
    g.node(moved).provenance = m.provenance;
    ir::TensorType t = g.value(m.outputs[0]).type;
    t.dtype = g.value(dq->q).type.dtype;
    g.value(g.node(moved).outputs[0]).type = t;
    const ir::ValueId mv = g.node(moved).outputs[0];
    const ir::NodeId deq = g.add_node("DequantizeLinear", {mv, dq->scale, dq->zero}, 1, g.node(dq_id).name);
    g.node(deq).provenance.from = {dq_id};
    g.node(deq).provenance.origin = g.node(dq_id).provenance.origin;
    g.value(g.node(deq).outputs[0]).type = g.value(m.outputs[0]).type;
    take_over(g, m.outputs[0], g.node(deq).outputs[0]);
    ctx.diagnostics.push_back("qdq-fuse: " + m.op + " #" + std::to_string(id) + " moved before DequantizeLinear #" +
                              std::to_string(dq_id));
    g.remove_node(id);
    g.remove_node(dq_id);
    return true;
  }

  static bool fuse_one(ir::Graph& g, ir::NodeId q_id, const std::set<std::string>& captured, PassContext& ctx) {
    const ir::Node q = g.node(q_id);
    if (q.inputs.size() < 3 || q.inputs[2] == ir::kNoValue) return false;
    const Tensor* ys = ops::constant_value(g, q.inputs[1]);
    const Tensor* yz = ops::constant_value(g, q.inputs[2]);
    if (!ys || !yz || ys->numel() != 1 || yz->numel() != 1) return false;
    // Through an optional Relu, which saturation replaces when y_zp is the type's lowest value,
    // or Clip(min, max) when the quantized range lies within [min, max] (ReLU6 calibrated after
    // the Clip: saturation at the range's ends clips exactly as the Clip did).
    ir::ValueId v = q.inputs[0];
    ir::NodeId relu_id = ir::kNoNode;
    const double lowest = yz->dtype() == DType::kU8 ? 0 : -128, highest = yz->dtype() == DType::kU8 ? 255 : 127;
    if (const ir::Node* relu = producer(g, v, "Relu")) {
      if (yz->get(0) != lowest || sole_user(g, v, captured) != q_id) return false;
      relu_id = relu->id;
      v = relu->inputs[0];
    } else if (const ir::Node* clip = producer(g, v, "Clip")) {
      const Tensor* mn = clip->inputs.size() > 1 && clip->inputs[1] != ir::kNoValue ? ops::constant_value(g, clip->inputs[1]) : nullptr;
      const Tensor* mx = clip->inputs.size() > 2 && clip->inputs[2] != ir::kNoValue ? ops::constant_value(g, clip->inputs[2]) : nullptr;
      // Values past a bound quantize to the end of the range either way when the bound itself
      // does: round(min / s) + zp <= lowest and round(max / s) + zp >= highest.
      const double s = ys->get(0), z = yz->get(0);
      const bool low_ok = !mn || std::nearbyint(mn->get(0) / s) + z <= lowest;
      const bool high_ok = !mx || std::nearbyint(mx->get(0) / s) + z >= highest;
      if (!low_ok || !high_ok || sole_user(g, v, captured) != q_id) return false;
      relu_id = clip->id;
      v = clip->inputs[0];
    }
    if (g.value(v).kind != ir::ValueKind::kNodeOutput) return false;
    const ir::NodeId p_id = g.value(v).producer;
    if (sole_user(g, v, captured) != (relu_id != ir::kNoNode ? relu_id : q_id)) return false;
    const ir::Node p = g.node(p_id);
    if (p.op != "Conv" && p.op != "Gemm" && p.op != "MatMul") return false;
    auto x = dequantized(g, p.inputs[0]);
    auto w = dequantized(g, p.inputs[1]);
    if (!x || !w || !per_tensor(*x)) return false;
    const Tensor* wq = ops::constant_value(g, w->q);
    if (!wq) return false;
    const bool conv = p.op == "Conv";
    Tensor weights = *wq;
    int64_t channels = 0;
    if (conv) {
      if (wq->rank() < 3) return false;
      channels = wq->dim(0);
      if (w->scales.size() > 1 && (w->axis != 0 || static_cast<int64_t>(w->scales.size()) != channels)) return false;
    } else {
      if (wq->rank() != 2) return false;
      bool trans_b = false;
      if (p.op == "Gemm") {
        const ir::Attribute* ta = p.attr("transA");
        const ir::Attribute* tb = p.attr("transB");
        const ir::Attribute* alpha = p.attr("alpha");
        const ir::Attribute* beta = p.attr("beta");
        if ((ta && ta->i() != 0) || (alpha && alpha->f() != 1.0) || (beta && beta->f() != 1.0)) return false;
        trans_b = tb && tb->i() != 0;
      }
      const int n_axis = trans_b ? 0 : 1;
      channels = wq->dim(n_axis);
      if (w->scales.size() > 1) {
        const int64_t axis = w->axis < 0 ? w->axis + 2 : w->axis;
        if (axis != n_axis || static_cast<int64_t>(w->scales.size()) != channels) return false;
      }
      if (trans_b) {  // [N, K] -> [K, N]
        Tensor t(wq->dtype(), {wq->dim(1), wq->dim(0)});
        for (int64_t i = 0; i < wq->dim(0); ++i)
          for (int64_t k = 0; k < wq->dim(1); ++k) t.set(k * wq->dim(0) + i, wq->get(i * wq->dim(1) + k));
        weights = t;
      }
    }
    // The bias in the accumulator's scale x_s * w_s[c].
    const size_t bias_input = 2;
    std::optional<Tensor> bias;
    if (p.inputs.size() > bias_input && p.inputs[bias_input] != ir::kNoValue) {
      const Tensor* b = ops::constant_value(g, p.inputs[bias_input]);
      if (!b || b->numel() != channels) return false;
      Tensor bi(DType::kI32, {channels});
      for (int64_t c = 0; c < channels; ++c) {
        const double s = x->scales[0] * w->scales[w->scales.size() == 1 ? 0 : static_cast<size_t>(c)];
        const double r = std::nearbyint(b->get(c) / s);
        if (std::fabs(r) > 2147483647.0) return false;
        bi.data<int32_t>()[c] = static_cast<int32_t>(r);
      }
      bias = bi;
    }
    if (!conv && g.value(p.inputs[0]).type.rank_known && g.value(p.inputs[0]).type.rank() < 2) return false;

    const std::string base = p.name.empty() ? "qdq" : p.name;
    const ir::ValueId w_in = weights.raw_data() == wq->raw_data() ? w->q : g.add_param(unique_value_name(g, base + ".weight_kn"), weights);
    std::vector<ir::ValueId> ins = {x->q, x->scale, x->zero, w_in, w->scale, w->zero, q.inputs[1], q.inputs[2]};
    if (bias) ins.push_back(g.add_param(unique_value_name(g, base + ".bias_i32"), *bias));
    ir::Attributes attrs;
    if (conv) attrs = p.attrs;
    const ir::NodeId n = g.add_node(conv ? "QLinearConv" : "QLinearMatMul", ins, 1, p.name, attrs);
    ir::Node& fusedn = g.node(n);
    fusedn.provenance.from = {p_id, q_id};
    if (relu_id != ir::kNoNode) fusedn.provenance.from.push_back(relu_id);
    fusedn.provenance.origin = p.provenance.origin;
    g.value(fusedn.outputs[0]).type = g.value(q.outputs[0]).type;
    take_over(g, q.outputs[0], fusedn.outputs[0]);
    ctx.diagnostics.push_back("qdq-fuse: " + p.op + " #" + std::to_string(p_id) +
                              (relu_id != ir::kNoNode ? " + " + g.node(relu_id).op : std::string()) +
                              " between QDQ -> " + fusedn.op + " #" + std::to_string(n));
    g.remove_node(q_id);
    if (relu_id != ir::kNoNode) g.remove_node(relu_id);
    g.remove_node(p_id);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_qdq_fuse_pass() { return std::make_unique<QdqFusePass>(); }

}  // namespace tessera::passes
