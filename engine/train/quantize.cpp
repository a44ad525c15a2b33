// Static post-training quantization (quantize.h): find the Conv / Gemm / MatMul nodes with
// constant float weights, calibrate their input and output activations on data through a Session
// (the calibrated values added as graph outputs), then insert QuantizeLinear / DequantizeLinear
// pairs and replace weights and biases by their quantized form behind a DequantizeLinear.
#include "engine/train/quantize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/data/loader.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/passes/rewrite.h"
#include "engine/stages/session.h"

namespace tessera::quant {
namespace {

struct Target {
  ir::NodeId node = ir::kNoNode;
  ir::ValueId in = ir::kNoValue, out = ir::kNoValue;  // calibrated activations (out: after a Relu)
  int w_axis = 0;                                     // the weights' output-channel axis
};

std::string label(const ir::Node& n) { return "node '" + n.name + "' (" + n.op + ")"; }

Expected<std::vector<Target>> find_targets(const ir::Graph& g, const ops::OpRegistry& registry, QuantizeReport& report) {
  TRY(std::vector<ir::NodeId> order, g.topological_order());
  std::vector<Target> targets;
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    if (n.op != "Conv" && n.op != "Gemm" && n.op != "MatMul") continue;
    if (n.inputs.size() < 2 || n.inputs[0] == ir::kNoValue) continue;
    const Tensor* w = ops::constant_value(g, n.inputs[1]);
    if (!w || w->dtype() != DType::kF32) {
      report.skipped.push_back(label(n) + ": its weights are not a float constant");
      continue;
    }
    if (g.value(n.inputs[0]).type.dtype != DType::kF32) continue;
    Target t;
    t.node = id;
    t.in = n.inputs[0];
    if (n.op == "Conv") {
      if (w->rank() < 3) continue;
      t.w_axis = 0;
    } else {
      if (w->rank() != 2) {
        report.skipped.push_back(label(n) + ": weights of rank " + std::to_string(w->rank()));
        continue;
      }
      const ops::AttrReader a(n, *registry.find(n.op));
      if (n.op == "Gemm" && (a.i("transA") != 0 || a.f("alpha") != 1 || a.f("beta") != 1)) {
        report.skipped.push_back(label(n) + ": transA, alpha or beta");
        continue;
      }
      t.w_axis = n.op == "Gemm" && a.i("transB") != 0 ? 0 : 1;
    }
    t.out = n.outputs[0];
    const std::vector<ir::Use> uses = g.uses(t.out);
    if (uses.size() == 1 && (g.node(uses[0].node).op == "Relu" || g.node(uses[0].node).op == "Clip") &&
        uses[0].input_index == 0 && !passes::is_graph_output(g, t.out))
      t.out = g.node(uses[0].node).outputs[0];
    targets.push_back(t);
  }
  return targets;
}

// 'name', or %id for an unnamed value.
std::string value_label(const ir::Graph& g, ir::ValueId v) {
  return g.value(v).name.empty() ? "%" + std::to_string(v) : "'" + g.value(v).name + "'";
}

// One data-set pass: every batch through the session, `visit(k, tensor)` on each calibrated value.
template <class Visit>
Expected<int64_t> calibration_pass(stages::Session& session, const ir::Graph& g, size_t first, size_t count,
                                   data::DataLoader& loader, int64_t max_examples, Visit&& visit) {
  RETURN_IF_ERROR(loader.start_epoch(0));
  int64_t seen = 0;
  data::Batch batch;
  while (max_examples <= 0 || seen < max_examples) {
    TRY(bool more, loader.next(batch));
    if (!more) break;
    runtime::Feeds feeds;
    int64_t rows = 0;
    for (const auto& [name, t] : batch) {
      // NaN or inf in the data would be skipped by the ranges below and quantize silently
      // (all-NaN data gave scale 1.0 everywhere): refused, naming the input and the examples.
      if (is_float(t.dtype()))
        for (int64_t i = 0; i < t.numel(); ++i)
          if (!std::isfinite(t.get(i))) {
            const int64_t per = t.rank() > 0 && t.dim(0) > 0 ? t.numel() / t.dim(0) : t.numel();
            return make_error("the calibration data's '" + name + "' holds " + (std::isnan(t.get(i)) ? "NaN" : "an infinity") +
                              " (example " + std::to_string(seen + i / std::max<int64_t>(per, 1)) +
                              "): an int8 range cannot be calibrated on it");
          }
      if (g.inputs().size() == 1 && name == "x") {
        feeds[g.value(g.inputs()[0]).name] = t;
        rows = t.rank() > 0 ? t.dim(0) : 1;
      } else if (auto v = g.find_value(name); v && g.value(*v).kind == ir::ValueKind::kInput) {
        feeds[name] = t;
        if (rows == 0) rows = t.rank() > 0 ? t.dim(0) : 1;
      }
    }
    TRY(std::vector<Tensor> outs, session.run(feeds));
    for (size_t k = 0; k < count; ++k) visit(k, outs[first + k]);
    seen += rows;
  }
  if (seen == 0) return make_error("the calibration data gave no batch");
  return seen;
}

// The value at quantile q (0..1) of a histogram over [lo, hi].
double quantile(const std::vector<int64_t>& hist, double lo, double hi, double q) {
  int64_t total = 0;
  for (int64_t c : hist) total += c;
  if (total == 0) return lo;
  const double want = q * static_cast<double>(total);
  int64_t cum = 0;
  for (size_t b = 0; b < hist.size(); ++b) {
    cum += hist[b];
    if (static_cast<double>(cum) >= want)
      return lo + (hi - lo) * static_cast<double>(b + 1) / static_cast<double>(hist.size());
  }
  return hi;
}

ir::ValueId scalar_param(ir::Graph& g, const std::string& name, Tensor t) {
  return g.add_param(passes::unique_value_name(g, name), std::move(t));
}

// Makes every use of `from` but `except`'s read `to`; a graph output moves too, with its name.
void redirect(ir::Graph& g, ir::ValueId from, ir::ValueId to, ir::NodeId except) {
  for (const ir::Use& u : g.uses(from)) {
    if (u.node == except) continue;
    g.node(u.node).inputs[static_cast<size_t>(u.input_index)] = to;
  }
  std::vector<ir::ValueId> outs = g.outputs();
  bool changed = false;
  for (ir::ValueId& o : outs)
    if (o == from) {
      o = to;
      changed = true;
    }
  if (changed) {
    const std::string name = g.value(from).name;
    g.set_value_name(from, passes::unique_value_name(g, name + ".float"));
    g.set_value_name(to, name);
    g.set_outputs(outs);
  }
}

}  // namespace

Expected<QuantizeReport> quantize_static(ir::Graph& graph, const ops::OpRegistry& registry, data::DataLoader& loader,
                                         const QuantizeOptions& options) {
  if (options.method != "minmax" && options.method != "percentile")
    return make_error("unknown calibration method '" + options.method + "' (minmax or percentile)");
  if (options.method == "percentile" && !(options.percentile > 50 && options.percentile <= 100))
    return make_error("the percentile must be in (50, 100], got " + std::to_string(options.percentile));
  RETURN_IF_ERROR(ops::infer_types(graph, registry));
  QuantizeReport report;
  TRY(std::vector<Target> targets, find_targets(graph, registry, report));
  if (targets.empty()) return make_error("the graph has no Conv, Gemm or MatMul with constant float weights to quantize");

  // Weights and biases holding NaN or inf cannot be quantized (a scale of NaN, an i32 bias of
  // nothing in particular): refused, naming them.
  for (const Target& t : targets) {
    const ir::Node& n = graph.node(t.node);
    for (size_t k = 1; k < 3 && k < n.inputs.size(); ++k) {
      const Tensor* c = n.inputs[k] == ir::kNoValue ? nullptr : ops::constant_value(graph, n.inputs[k]);
      if (!c || !is_float(c->dtype())) continue;
      for (int64_t i = 0; i < c->numel(); ++i)
        if (!std::isfinite(c->get(i)))
          return make_error(std::string(k == 1 ? "the weight " : "the bias ") + value_label(graph, n.inputs[k]) + " of " +
                                ir::describe_node(n) + " holds " + (std::isnan(c->get(i)) ? "NaN" : "an infinity") +
                                " at element " + std::to_string(i) + ": it cannot be quantized",
                            {}, n.id);
    }
  }

  // The values to calibrate, each once.
  std::vector<ir::ValueId> values;
  std::map<ir::ValueId, size_t> index;
  for (const Target& t : targets)
    for (ir::ValueId v : {t.in, t.out})
      if (!index.count(v)) {
        index[v] = values.size();
        values.push_back(v);
      }
  ir::Graph cal = graph;
  std::vector<ir::ValueId> outs = cal.outputs();
  const size_t first = outs.size();
  outs.insert(outs.end(), values.begin(), values.end());
  cal.set_outputs(outs);
  stages::SessionOptions so;
  so.threads = std::max(1, options.threads);
  stages::Session session(cal, registry, so);
  std::vector<double> lo(values.size(), 0.0), hi(values.size(), 0.0);
  std::vector<int64_t> non_finite(values.size(), 0);
  TRY(report.examples, calibration_pass(session, cal, first, values.size(), loader, options.max_examples,
                                        [&](size_t k, const Tensor& t) {
                                          const float* p = t.data<float>();
                                          for (int64_t i = 0; i < t.numel(); ++i) {
                                            if (!std::isfinite(p[i])) {
                                              ++non_finite[k];
                                              continue;
                                            }
                                            lo[k] = std::min(lo[k], static_cast<double>(p[i]));
                                            hi[k] = std::max(hi[k], static_cast<double>(p[i]));
                                          }
                                        }));
  // Finite data, yet the graph computes NaN or inf (an overflow, a log of 0): no range holds that.
  for (size_t k = 0; k < values.size(); ++k)
    if (non_finite[k] > 0)
      return make_error("calibration: the value " + value_label(graph, values[k]) + " took " + std::to_string(non_finite[k]) +
                        " NaN or infinite values on the calibration data: an int8 range cannot be calibrated on them");
  if (options.method == "percentile") {
    constexpr size_t kBins = 2048;
    std::vector<std::vector<int64_t>> hist(values.size(), std::vector<int64_t>(kBins, 0));
    TRY(int64_t again, calibration_pass(session, cal, first, values.size(), loader, options.max_examples,
                                        [&](size_t k, const Tensor& t) {
                                          const float* p = t.data<float>();
                                          const double w = hi[k] - lo[k];
                                          if (w <= 0) return;
                                          for (int64_t i = 0; i < t.numel(); ++i) {
                                            if (!std::isfinite(p[i])) continue;
                                            const double f = (p[i] - lo[k]) / w * kBins;
                                            hist[k][std::min(kBins - 1, static_cast<size_t>(std::max(0.0, f)))]++;
                                          }
                                        }));
    (void)again;
    const double tail = (100.0 - options.percentile) / 100.0;
    for (size_t k = 0; k < values.size(); ++k) {
      const double l = quantile(hist[k], lo[k], hi[k], tail), h = quantile(hist[k], lo[k], hi[k], 1 - tail);
      lo[k] = std::min(0.0, l);
      hi[k] = std::max(0.0, h);
    }
  }

  // Activations: QuantizeLinear -> DequantizeLinear after each calibrated value.
  std::vector<double> act_scale(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    const ir::ValueId v = values[k];
    const double range = hi[k] - lo[k];
    const float scale = range > 0 ? static_cast<float>(range / 255.0) : 1.0f;
    const double zp = std::min(255.0, std::max(0.0, std::nearbyint(-lo[k] / static_cast<double>(scale))));
    act_scale[k] = scale;
    std::string name = graph.value(v).name.empty() ? "value" + std::to_string(v) : graph.value(v).name;
    report.activations.push_back({name, lo[k], hi[k], scale, static_cast<int>(zp)});
    const ir::ValueId s = scalar_param(graph, name + ".scale", Tensor::scalar<float>(scale));
    const ir::ValueId z = scalar_param(graph, name + ".zero_point", Tensor::from_doubles(DType::kU8, {}, {zp}));
    const ir::NodeId q = graph.add_node("QuantizeLinear", {v, s, z}, 1, name + ".quantize");
    const ir::ValueId qv = graph.node(q).outputs[0];
    graph.set_value_name(qv, passes::unique_value_name(graph, name + ".quantized"));
    const ir::NodeId dq = graph.add_node("DequantizeLinear", {qv, s, z}, 1, name + ".dequantize");
    const ir::ValueId dv = graph.node(dq).outputs[0];
    graph.set_value_name(dv, passes::unique_value_name(graph, name + ".dequantized"));
    redirect(graph, v, dv, q);
  }

  // Weights (s8, symmetric) and biases (i32 in the accumulator's scale).
  for (const Target& t : targets) {
    const ir::Node n = graph.node(t.node);
    const Tensor w = ops::constant_value(graph, n.inputs[1])->contiguous();
    const int64_t channels = w.dim(t.w_axis);
    int64_t inner = 1;
    for (int d = t.w_axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
    std::vector<double> amax(static_cast<size_t>(options.per_channel ? channels : 1), 0.0);
    const float* pw = w.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i) {
      const size_t c = options.per_channel ? static_cast<size_t>((i / inner) % channels) : 0;
      amax[c] = std::max(amax[c], std::fabs(static_cast<double>(pw[i])));
    }
    std::vector<float> ws(amax.size());
    for (size_t c = 0; c < amax.size(); ++c) ws[c] = amax[c] > 0 ? static_cast<float>(amax[c] / 127.0) : 1.0f;
    Tensor wq(DType::kI8, w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const size_t c = options.per_channel ? static_cast<size_t>((i / inner) % channels) : 0;
      const float q = std::nearbyint(pw[i] / ws[c]);
      wq.data<int8_t>()[i] = static_cast<int8_t>(std::max(-127.f, std::min(127.f, q)));
    }
    const std::string wname = graph.value(n.inputs[1]).name.empty() ? n.name + ".weight" : graph.value(n.inputs[1]).name;
    const bool per = options.per_channel;
    const Shape sshape = per ? Shape{channels} : Shape{};
    const ir::ValueId wqv = scalar_param(graph, wname + ".quantized", wq);
    const ir::ValueId wsv = scalar_param(graph, wname + ".scale", Tensor::from_vector<float>(sshape, ws));
    const ir::ValueId wzv = scalar_param(graph, wname + ".zero_point", Tensor(DType::kI8, sshape));
    ir::Attributes dq_attrs;
    if (per) dq_attrs.insert_or_assign("axis", ir::Attribute(int64_t{t.w_axis}));
    const ir::NodeId wdq = graph.add_node("DequantizeLinear", {wqv, wsv, wzv}, 1, wname + ".dequantize", dq_attrs);
    graph.node(t.node).inputs[1] = graph.node(wdq).outputs[0];
    // The bias, when a constant [C].
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
      const Tensor* b = ops::constant_value(graph, n.inputs[2]);
      if (b && b->dtype() == DType::kF32 && b->rank() == 1 && b->numel() == channels) {
        const double xs = act_scale[index[t.in]];
        Tensor bq(DType::kI32, {channels});
        std::vector<float> bs(static_cast<size_t>(channels));
        for (int64_t c = 0; c < channels; ++c) {
          bs[static_cast<size_t>(c)] = static_cast<float>(xs * ws[per ? static_cast<size_t>(c) : 0]);
          const double r = std::nearbyint(b->get(c) / bs[static_cast<size_t>(c)]);
          bq.data<int32_t>()[c] = static_cast<int32_t>(std::max(-2147483647.0, std::min(2147483647.0, r)));
        }
        const std::string bname = graph.value(n.inputs[2]).name.empty() ? n.name + ".bias" : graph.value(n.inputs[2]).name;
        const ir::ValueId bqv = scalar_param(graph, bname + ".quantized", bq);
        const ir::ValueId bsv = scalar_param(graph, bname + ".scale", Tensor::from_vector<float>({channels}, bs));
        const ir::ValueId bzv = scalar_param(graph, bname + ".zero_point", Tensor(DType::kI32, {channels}));
        const ir::NodeId bdq = graph.add_node("DequantizeLinear", {bqv, bsv, bzv}, 1, bname + ".dequantize",
                                              {{"axis", ir::Attribute(int64_t{0})}});
        graph.node(t.node).inputs[2] = graph.node(bdq).outputs[0];
      }
    }
    ++report.quantized_ops;
  }
  passes::remove_unused_params(graph);
  RETURN_IF_ERROR(ops::infer_types(graph, registry));
  return report;
}

}  // namespace tessera::quant
