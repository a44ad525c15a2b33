// Recurrent ops (ONNX opset 14): RNN, LSTM, GRU, and the backward ops autodiff emits for them,
// RNNGrad, LSTMGrad, GRUGrad (backpropagation through time). ONNX's `layout` attribute is named
// `batch_first` here (Tessera's `layout` is the physical layout; the ONNX importer and exporter
// rename it).
//
// Shapes, batch_first 0 (1: X [N, T, I], Y [N, T, D, H], states [N, D, H]):
//   X [T, N, I]  W [D, G*H, I]  R [D, G*H, H]  B [D, 2*G*H] (W's biases, then R's)
//   sequence_lens [N] (i32 or i64)  initial_h, initial_c [D, N, H]  P [D, 3*H] (peepholes i o f)
//   -> Y [T, D, N, H], Y_h, Y_c [D, N, H]
// D is 2 for "bidirectional", else 1; G gates: RNN 1, LSTM 4 (order i o f c), GRU 3 (z r h).
// Sequence b runs over its first sequence_lens[b] steps (the reverse direction starts at its last
// valid step); Y is zero past them and Y_h/Y_c are the states after the last valid step.
//
//   RNN   H = f(x W^T + h R^T + Wb + Rb)
//   LSTM  i = f(.. + Pi c), f = f(.. + Pf c) (1 - i with input_forget), c~ = g(..),
//         C = f c + i c~, o = f(.. + Po C), H = o h(C)
//   GRU   z = f(..), r = f(..), h~ = g(x Wh^T + (r h) Rh^T + Rbh + Wbh)  (linear_before_reset 0)
//                               h~ = g(x Wh^T + r (h Rh^T + Rbh) + Wbh)   (linear_before_reset 1)
//         H = (1 - z) h~ + z h
// `clip` bounds every gate's pre-activation to [-clip, clip]. Activations are ONNX's (Relu, Tanh,
// Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus;
// any case), per direction; activation_alpha/beta are taken in order by those that use them.
// The reference kernels compute in double.
#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/ir/limits.h"
#include "engine/ops/index_internal.h"
#include "engine/ops/nn_internal.h"

namespace tessera::ops {
namespace {

enum class Cell { kRNN, kLSTM, kGRU };

int gates_of(Cell c) { return c == Cell::kRNN ? 1 : c == Cell::kLSTM ? 4 : 3; }
int acts_per_direction(Cell c) { return c == Cell::kRNN ? 1 : c == Cell::kLSTM ? 3 : 2; }
// Forward inputs of each op (LSTM has initial_c and P).
size_t forward_inputs(Cell c) { return c == Cell::kLSTM ? 8 : 6; }

// ---- activations ----

struct Activation {
  enum Kind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
              kSoftsign, kSoftplus };
  Kind kind = kTanh;
  double alpha = 0, beta = 0;

  double f(double x) const {
    switch (kind) {
      case kRelu: return x > 0 ? x : 0;
      case kTanh: return std::tanh(x);
      case kSigmoid: return sigmoid(x);
      case kAffine: return alpha * x + beta;
      case kLeakyRelu: return x >= 0 ? x : alpha * x;
      case kThresholdedRelu: return x > alpha ? x : 0;
      case kScaledTanh: return alpha * std::tanh(beta * x);
      case kHardSigmoid: return std::max(0.0, std::min(1.0, alpha * x + beta));
      case kElu: return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case kSoftsign: return x / (1 + std::fabs(x));
      case kSoftplus: return x > 30 ? x : std::log1p(std::exp(x));
    }
    return x;
  }
  // d f / d x at x, where y = f(x).
  double df(double x, double y) const {
    switch (kind) {
      case kRelu: return x > 0 ? 1 : 0;
      case kTanh: return 1 - y * y;
      case kSigmoid: return y * (1 - y);
      case kAffine: return alpha;
      case kLeakyRelu: return x >= 0 ? 1 : alpha;
      case kThresholdedRelu: return x > alpha ? 1 : 0;
      case kScaledTanh: {
        const double t = std::tanh(beta * x);
        return alpha * beta * (1 - t * t);
      }
      case kHardSigmoid: {
        const double v = alpha * x + beta;
        return v > 0 && v < 1 ? alpha : 0;
      }
      case kElu: return x >= 0 ? 1 : y + alpha;
      case kSoftsign: return 1 / ((1 + std::fabs(x)) * (1 + std::fabs(x)));
      case kSoftplus: return sigmoid(x);
    }
    return 1;
  }
};

struct ActivationInfo {
  const char* name;  // lower case
  Activation::Kind kind;
  int params;        // how many of (alpha, beta) it takes
  double alpha, beta;  // ONNX's defaults
};
constexpr ActivationInfo kActivations[] = {
    {"relu", Activation::kRelu, 0, 0, 0},
    {"tanh", Activation::kTanh, 0, 0, 0},
    {"sigmoid", Activation::kSigmoid, 0, 0, 0},
    {"affine", Activation::kAffine, 2, 1, 0},
    {"leakyrelu", Activation::kLeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", Activation::kThresholdedRelu, 1, 1, 0},
    {"scaledtanh", Activation::kScaledTanh, 2, 1, 1},
    {"hardsigmoid", Activation::kHardSigmoid, 2, 0.2, 0.5},
    {"elu", Activation::kElu, 1, 1, 0},
    {"softsign", Activation::kSoftsign, 0, 0, 0},
    {"softplus", Activation::kSoftplus, 0, 0, 0},
};

// ---- attributes ----

struct Spec {
  Cell cell = Cell::kRNN;
  int gates = 1;
  int dirs = 1;
  bool reverse = false;  // direction "reverse" (one direction, run backwards)
  int batch_first = 0;
  int64_t hidden = -1;   // hidden_size, -1 when absent (taken from R)
  std::optional<double> clip;
  bool input_forget = false;
  bool linear_before_reset = false;
  std::vector<Activation> acts;  // acts_per_direction(cell) per direction
  // Whether direction d runs from the last step to the first.
  bool backwards(int d) const { return reverse || d == 1; }
  const Activation& act(int d, int k) const { return acts[static_cast<size_t>(d * acts_per_direction(cell) + k)]; }
};

Expected<Spec> parse_spec(const ir::Node& node, const AttrReader& attrs, Cell cell) {
  Spec s;
  s.cell = cell;
  s.gates = gates_of(cell);
  const std::string& dir = attrs.s("direction");
  if (dir == "bidirectional") {
    s.dirs = 2;
  } else if (dir == "reverse") {
    s.reverse = true;
  } else if (dir != "forward") {
    return node_error(node, "direction must be \"forward\", \"reverse\" or \"bidirectional\", got \"" + dir + "\"");
  }
  s.batch_first = static_cast<int>(attrs.i("batch_first"));
  if (s.batch_first != 0 && s.batch_first != 1)
    return node_error(node, "batch_first must be 0 or 1, got " + std::to_string(attrs.i("batch_first")));
  if (attrs.has("hidden_size")) {
    s.hidden = attrs.i("hidden_size");
    if (s.hidden < 1 || s.hidden > ir::kMaxElements)
      return node_error(node, "hidden_size must be in [1, 2^48], got " + std::to_string(s.hidden));
  }
  if (attrs.has("clip")) {
    const double c = attrs.f("clip");
    if (!(c > 0)) return node_error(node, "clip must be > 0, got " + std::to_string(c));
    s.clip = c;
  }
  if (cell == Cell::kLSTM) s.input_forget = attrs.i("input_forget") != 0;
  if (cell == Cell::kGRU) s.linear_before_reset = attrs.i("linear_before_reset") != 0;

  std::vector<std::string> names;
  if (attrs.has("activations")) names = attrs.get("activations")->strings();
  const size_t per = static_cast<size_t>(acts_per_direction(cell));
  if (names.empty()) {
    const std::vector<std::string> dflt = cell == Cell::kRNN    ? std::vector<std::string>{"Tanh"}
                                          : cell == Cell::kLSTM ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                                : std::vector<std::string>{"Sigmoid", "Tanh"};
    for (int d = 0; d < s.dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  } else if (names.size() == per && s.dirs == 2) {
    names.insert(names.end(), names.begin(), names.end());  // the same for both directions
  }
  if (names.size() != per * static_cast<size_t>(s.dirs))
    return node_error(node, "activations must name " + std::to_string(per * static_cast<size_t>(s.dirs)) +
                                " functions (" + std::to_string(per) + " per direction), got " +
                                std::to_string(names.size()));
  std::vector<double> alphas, betas;
  if (attrs.has("activation_alpha")) alphas = attrs.get("activation_alpha")->floats();
  if (attrs.has("activation_beta")) betas = attrs.get("activation_beta")->floats();
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& a : kActivations)
      if (lower == a.name) info = &a;
    if (!info) return node_error(node, "unknown activation \"" + name + "\"");
    Activation a;
    a.kind = info->kind;
    a.alpha = info->alpha;
    a.beta = info->beta;
    if (info->params >= 1 && ai < alphas.size()) a.alpha = alphas[ai++];
    if (info->params >= 2 && bi < betas.size()) a.beta = betas[bi++];
    s.acts.push_back(a);
  }
  return s;
}

void add_common_attrs(OpDef& def, Cell cell) {
  def.attr("hidden_size", AttrKind::kInt, std::nullopt, "H, the size of the hidden state (default: from R)")
      .attr("direction", AttrKind::kString, Attribute("forward"), "\"forward\", \"reverse\" or \"bidirectional\"")
      .attr("batch_first", AttrKind::kInt, Attribute(0), "ONNX's layout: 0: X [T, N, I], Y [T, D, N, H]; 1: batch first")
      .attr("clip", AttrKind::kFloat, std::nullopt, "bound on the gates' pre-activations (none when absent)")
      .attr("activations", AttrKind::kStrings, std::nullopt,
            cell == Cell::kRNN    ? "f per direction (default Tanh)"
            : cell == Cell::kLSTM ? "f, g, h per direction (default Sigmoid, Tanh, Tanh)"
                                  : "f, g per direction (default Sigmoid, Tanh)")
      .attr("activation_alpha", AttrKind::kFloats, std::nullopt, "alpha of the activations that take one, in order")
      .attr("activation_beta", AttrKind::kFloats, std::nullopt, "beta of the activations that take one, in order");
  if (cell == Cell::kLSTM) def.attr("input_forget", AttrKind::kInt, Attribute(0), "1: the forget gate is 1 - i");
  if (cell == Cell::kGRU)
    def.attr("linear_before_reset", AttrKind::kInt, Attribute(0), "1: the reset gate multiplies h Rh^T + Rbh");
}

// ---- inference ----

// Checks that dim `axis` of input `i` (when known) equals `want` (when known).
Status check_dim(const InferContext& ctx, size_t i, int axis, const Dim& want, const std::string& shape_doc) {
  const TensorType& t = *ctx.inputs[i];
  if (!t.rank_known) return Status::ok();
  const Dim& have = t.dims[static_cast<size_t>(axis)];
  if (have.is_known() && want.is_known() && have != want)
    return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' " + t.to_string() + " must be " + shape_doc);
  return Status::ok();
}

Dim times(const Dim& d, int64_t k) { return d.is_known() ? Dim::known(d.size * k) : Dim::unknown(); }

struct Dims {
  Dim t, n, i, h, d;
};

// The sizes of a recurrent node from its inputs, every shape checked where known.
Expected<Dims> infer_dims(const InferContext& ctx, const Spec& s) {
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    const TensorType& t = *ctx.inputs[i];
    if (t.rank_known && t.rank() != 3)
      return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must have rank 3, got " + t.to_string());
  }
  const TensorType& x = *ctx.inputs[0];
  const TensorType& r = *ctx.inputs[2];
  Dims d;
  d.d = Dim::known(s.dirs);
  if (x.rank_known) {
    d.t = x.dims[s.batch_first == 0 ? 0 : 1];
    d.n = x.dims[s.batch_first == 0 ? 1 : 0];
    d.i = x.dims[2];
  }
  d.h = s.hidden > 0 ? Dim::known(s.hidden) : r.rank_known ? r.dims[2] : Dim::unknown();
  const std::string h = d.h.to_string(), gh = times(d.h, s.gates).to_string();
  const std::string dirs = std::to_string(s.dirs);
  RETURN_IF_ERROR(check_dim(ctx, 1, 0, d.d, "[D, G*H, I] = [" + dirs + ", " + gh + ", " + d.i.to_string() + "]"));
  RETURN_IF_ERROR(check_dim(ctx, 1, 1, times(d.h, s.gates), "[D, G*H, I] = [" + dirs + ", " + gh + ", " + d.i.to_string() + "]"));
  RETURN_IF_ERROR(check_dim(ctx, 1, 2, d.i, "[D, G*H, I] = [" + dirs + ", " + gh + ", " + d.i.to_string() + "]"));
  for (int a = 0; a < 3; ++a)
    RETURN_IF_ERROR(check_dim(ctx, 2, a, a == 0 ? d.d : a == 1 ? times(d.h, s.gates) : d.h,
                              "[D, G*H, H] = [" + dirs + ", " + gh + ", " + h + "]"));
  if (ctx.has_input(3)) {
    const TensorType& b = *ctx.inputs[3];
    if (b.rank_known && b.rank() != 2) return node_error(ctx.node, "input 'B' must have rank 2, got " + b.to_string());
    RETURN_IF_ERROR(check_dim(ctx, 3, 0, d.d, "[D, 2*G*H] = [" + dirs + ", " + times(d.h, 2 * s.gates).to_string() + "]"));
    RETURN_IF_ERROR(check_dim(ctx, 3, 1, times(d.h, 2 * s.gates), "[D, 2*G*H] = [" + dirs + ", " + times(d.h, 2 * s.gates).to_string() + "]"));
  }
  if (ctx.has_input(4)) {
    const TensorType& l = *ctx.inputs[4];
    if (l.dtype != DType::kI32 && l.dtype != DType::kI64)
      return node_error(ctx.node, "input 'sequence_lens' must be i32 or i64, got " + l.to_string());
    if (l.rank_known && l.rank() != 1) return node_error(ctx.node, "input 'sequence_lens' must be [N], got " + l.to_string());
    RETURN_IF_ERROR(check_dim(ctx, 4, 0, d.n, "[N] = [" + d.n.to_string() + "]"));
  }
  const std::vector<Dim> state = s.batch_first == 0 ? std::vector<Dim>{d.d, d.n, d.h} : std::vector<Dim>{d.n, d.d, d.h};
  for (size_t i : {size_t{5}, size_t{6}}) {
    if (!ctx.has_input(i) || (i == 6 && s.cell != Cell::kLSTM)) continue;
    const TensorType& t = *ctx.inputs[i];
    const std::string doc = dims_to_string(state);
    if (t.rank_known && t.rank() != 3) return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' must be " + doc + ", got " + t.to_string());
    for (int a = 0; a < 3; ++a) RETURN_IF_ERROR(check_dim(ctx, i, a, state[static_cast<size_t>(a)], doc));
  }
  if (s.cell == Cell::kLSTM && ctx.has_input(7)) {
    const TensorType& p = *ctx.inputs[7];
    const std::string doc = "[D, 3*H] = [" + dirs + ", " + times(d.h, 3).to_string() + "]";
    if (p.rank_known && p.rank() != 2) return node_error(ctx.node, "input 'P' must be " + doc + ", got " + p.to_string());
    RETURN_IF_ERROR(check_dim(ctx, 7, 0, d.d, doc));
    RETURN_IF_ERROR(check_dim(ctx, 7, 1, times(d.h, 3), doc));
  }
  return d;
}

Status check_float_inputs(const InferContext& ctx, size_t count) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  for (size_t i = 1; i < std::min(count, ctx.num_inputs()); ++i) {
    if (i == 4 || !ctx.has_input(i)) continue;  // sequence_lens is integer
    if (ctx.inputs[i]->dtype != ctx.inputs[0]->dtype)
      return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' is " + ctx.inputs[i]->to_string() +
                                      ", but 'X' is " + ctx.inputs[0]->to_string() + ": they must share an element type");
  }
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_recurrent(const InferContext& ctx, Cell cell) {
  RETURN_IF_ERROR(check_float_inputs(ctx, ctx.num_inputs()));
  TRY(Spec s, parse_spec(ctx.node, ctx.attrs(), cell));
  TRY(Dims d, infer_dims(ctx, s));
  const DType dt = ctx.inputs[0]->dtype;
  std::vector<TensorType> out;
  out.emplace_back(dt, s.batch_first == 0 ? std::vector<Dim>{d.t, d.d, d.n, d.h} : std::vector<Dim>{d.n, d.t, d.d, d.h});
  const std::vector<Dim> state = s.batch_first == 0 ? std::vector<Dim>{d.d, d.n, d.h} : std::vector<Dim>{d.n, d.d, d.h};
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i) out.emplace_back(dt, state);
  return out;
}

// The backward op: the forward inputs, then dY, dY_h (and dY_c) -> the gradients of X, W, R, B,
// initial_h (and initial_c, P).
Expected<std::vector<TensorType>> infer_recurrent_grad(const InferContext& ctx, Cell cell) {
  RETURN_IF_ERROR(check_float_inputs(ctx, ctx.num_inputs()));
  TRY(Spec s, parse_spec(ctx.node, ctx.attrs(), cell));
  TRY(Dims d, infer_dims(ctx, s));
  const DType dt = ctx.inputs[0]->dtype;
  const std::vector<Dim> state = s.batch_first == 0 ? std::vector<Dim>{d.d, d.n, d.h} : std::vector<Dim>{d.n, d.d, d.h};
  std::vector<TensorType> out = {*ctx.inputs[0], *ctx.inputs[1], *ctx.inputs[2],
                                 TensorType(dt, {d.d, times(d.h, 2 * s.gates)}), TensorType(dt, state)};
  if (cell == Cell::kLSTM) {
    out.emplace_back(dt, state);
    out.emplace_back(dt, std::vector<Dim>{d.d, times(d.h, 3)});
  }
  out.resize(std::min(out.size(), ctx.node.outputs.size()));
  return out;
}

// ---- kernels ----

// An optional input's values as doubles (empty when absent).
std::vector<double> values(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.in(i).to_doubles() : std::vector<double>{};
}

// One recurrent node's run: its sizes, inputs as doubles, and the per-step record the backward
// pass reads.
struct Recurrence {
  Spec s;
  int64_t T = 0, N = 0, I = 0, H = 0;
  std::vector<int64_t> lens;
  std::vector<double> x, w, r, b, h0, c0, p;

  int64_t gh() const { return s.gates * H; }
  size_t xi(int64_t t, int64_t n) const { return static_cast<size_t>((s.batch_first == 0 ? t * N + n : n * T + t) * I); }
  size_t yi(int64_t t, int d, int64_t n) const {
    return static_cast<size_t>((s.batch_first == 0 ? (t * s.dirs + d) * N + n : (n * T + t) * s.dirs + d) * H);
  }
  size_t si(int d, int64_t n) const { return static_cast<size_t>((s.batch_first == 0 ? d * N + n : n * s.dirs + d) * H); }
  Shape y_shape() const { return s.batch_first == 0 ? Shape{T, s.dirs, N, H} : Shape{N, T, s.dirs, H}; }
  Shape state_shape() const { return s.batch_first == 0 ? Shape{s.dirs, N, H} : Shape{N, s.dirs, H}; }
  // Time index of iteration k of sequence n in direction d.
  int64_t time_of(int d, int64_t n, int64_t k) const { return s.backwards(d) ? lens[static_cast<size_t>(n)] - 1 - k : k; }
  int64_t max_len() const { return lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end()); }

  // What one step of one sequence leaves for the backward pass (per iteration k and sequence n).
  struct Record {
    std::vector<double> pre;   // [G*H] gate pre-activations, before the clip
    std::vector<double> act;   // [G*H] gate activations (LSTM's f is 1 - i with input_forget)
    std::vector<double> hprev, cprev, c, hc, q;  // [H]: previous states, new cell, h(C), GRU's h Rh^T + Rbh
  };
  std::vector<Record> records;  // [K * N], filled when recording
  size_t rec(int64_t k, int64_t n) const { return static_cast<size_t>(k * N + n); }

  double clip(double v) const { return s.clip ? std::max(-*s.clip, std::min(*s.clip, v)) : v; }
  // d clip / d v.
  double clip_grad(double v) const { return !s.clip || std::fabs(v) <= *s.clip ? 1.0 : 0.0; }
};

Expected<Recurrence> load_recurrence(const KernelContext& ctx, Cell cell) {
  Recurrence rc;
  TRY(rc.s, parse_spec(ctx.node, ctx.attrs(), cell));
  const Tensor& x = ctx.in(0);
  const Tensor& r = ctx.in(2);
  if (x.rank() != 3 || ctx.in(1).rank() != 3 || r.rank() != 3) return node_error(ctx.node, "X, W and R must have rank 3");
  rc.T = x.dim(rc.s.batch_first == 0 ? 0 : 1);
  rc.N = x.dim(rc.s.batch_first == 0 ? 1 : 0);
  rc.I = x.dim(2);
  rc.H = rc.s.hidden > 0 ? rc.s.hidden : r.dim(2);
  const int64_t G = rc.s.gates, D = rc.s.dirs;
  auto expect = [&](size_t i, const Shape& want) -> Status {
    if (!ctx.has_input(i)) return Status::ok();
    if (ctx.in(i).shape() != want)
      return node_error(ctx.node, "input '" + ctx.def.inputs[i].name + "' has shape " + shape_to_string(ctx.in(i).shape()) +
                                      ", expected " + shape_to_string(want));
    return Status::ok();
  };
  RETURN_IF_ERROR(expect(1, {D, G * rc.H, rc.I}));
  RETURN_IF_ERROR(expect(2, {D, G * rc.H, rc.H}));
  RETURN_IF_ERROR(expect(3, {D, 2 * G * rc.H}));
  RETURN_IF_ERROR(expect(4, {rc.N}));
  RETURN_IF_ERROR(expect(5, rc.state_shape()));
  if (cell == Cell::kLSTM) {
    RETURN_IF_ERROR(expect(6, rc.state_shape()));
    RETURN_IF_ERROR(expect(7, {D, 3 * rc.H}));
  }
  if (ctx.has_input(4)) {
    rc.lens = to_int64s(ctx.in(4));
    for (size_t n = 0; n < rc.lens.size(); ++n)
      if (rc.lens[n] < 0 || rc.lens[n] > rc.T)
        return node_error(ctx.node, "sequence_lens[" + std::to_string(n) + "] = " + std::to_string(rc.lens[n]) +
                                        " is outside [0, " + std::to_string(rc.T) + "] (the sequence length of X)");
  } else {
    rc.lens.assign(static_cast<size_t>(rc.N), rc.T);
  }
  rc.x = x.to_doubles();
  rc.w = ctx.in(1).to_doubles();
  rc.r = r.to_doubles();
  rc.b = values(ctx, 3);
  rc.h0 = values(ctx, 5);
  if (cell == Cell::kLSTM) {
    rc.c0 = values(ctx, 6);
    rc.p = values(ctx, 7);
  }
  return rc;
}

// y[rows] += M[rows, cols] * v[cols] over rows [r0, r0 + rows) of a row-major matrix with `cols`
// columns.
void matvec_add(const double* m, int64_t rows, int64_t cols, const double* v, double* y) {
  for (int64_t i = 0; i < rows; ++i) {
    double acc = 0;
    const double* row = m + i * cols;
    for (int64_t j = 0; j < cols; ++j) acc += row[j] * v[j];
    y[i] += acc;
  }
}

// Runs direction d of the recurrence; writes Y (when non-null, zero past each sequence's end) and
// the final states; records every step when `record`.
void run_forward(Recurrence& rc, int d, double* y, double* yh, double* yc, bool record) {
  const Spec& s = rc.s;
  const int64_t H = rc.H, I = rc.I, GH = rc.gh();
  const double* W = rc.w.data() + d * GH * I;
  const double* R = rc.r.data() + d * GH * H;
  const double* Wb = rc.b.empty() ? nullptr : rc.b.data() + d * 2 * GH;
  const double* P = rc.p.empty() ? nullptr : rc.p.data() + d * 3 * H;
  const Activation& f = s.act(d, 0);
  std::vector<std::vector<double>> h(static_cast<size_t>(rc.N)), c(static_cast<size_t>(rc.N));
  for (int64_t n = 0; n < rc.N; ++n) {
    h[static_cast<size_t>(n)] = rc.h0.empty() ? std::vector<double>(static_cast<size_t>(H), 0.0)
                                              : std::vector<double>(rc.h0.begin() + static_cast<std::ptrdiff_t>(rc.si(d, n)),
                                                                    rc.h0.begin() + static_cast<std::ptrdiff_t>(rc.si(d, n) + H));
    c[static_cast<size_t>(n)] = rc.c0.empty() ? std::vector<double>(static_cast<size_t>(H), 0.0)
                                              : std::vector<double>(rc.c0.begin() + static_cast<std::ptrdiff_t>(rc.si(d, n)),
                                                                    rc.c0.begin() + static_cast<std::ptrdiff_t>(rc.si(d, n) + H));
  }
  const int64_t K = rc.max_len();
  if (record) rc.records.assign(static_cast<size_t>(K * rc.N), {});
  std::vector<double> a(static_cast<size_t>(GH)), act(static_cast<size_t>(GH)), q, hc, cnew;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < rc.N; ++n) {
      if (k >= rc.lens[static_cast<size_t>(n)]) continue;
      const int64_t t = rc.time_of(d, n, k);
      std::vector<double>& hp = h[static_cast<size_t>(n)];
      std::vector<double>& cp = c[static_cast<size_t>(n)];
      std::fill(a.begin(), a.end(), 0.0);
      matvec_add(W, GH, I, rc.x.data() + rc.xi(t, n), a.data());
      if (Wb)
        for (int64_t g = 0; g < GH; ++g) a[static_cast<size_t>(g)] += Wb[g];
      std::vector<double> hnew(static_cast<size_t>(H));
      if (s.cell == Cell::kRNN) {
        matvec_add(R, GH, H, hp.data(), a.data());
        if (Wb)
          for (int64_t g = 0; g < GH; ++g) a[static_cast<size_t>(g)] += Wb[GH + g];
        for (int64_t j = 0; j < H; ++j) hnew[static_cast<size_t>(j)] = act[static_cast<size_t>(j)] = f.f(rc.clip(a[static_cast<size_t>(j)]));
      } else if (s.cell == Cell::kLSTM) {
        const Activation &g = s.act(d, 1), &ha = s.act(d, 2);
        matvec_add(R, GH, H, hp.data(), a.data());
        if (Wb)
          for (int64_t gi = 0; gi < GH; ++gi) a[static_cast<size_t>(gi)] += Wb[GH + gi];
        cnew.assign(static_cast<size_t>(H), 0.0);
        hc.assign(static_cast<size_t>(H), 0.0);
        for (int64_t j = 0; j < H; ++j) {
          const size_t ii = static_cast<size_t>(j), io = static_cast<size_t>(H + j), iff = static_cast<size_t>(2 * H + j),
                       ic = static_cast<size_t>(3 * H + j);
          if (P) {
            a[ii] += P[j] * cp[ii];
            a[iff] += P[2 * H + j] * cp[ii];
          }
          act[ii] = f.f(rc.clip(a[ii]));
          act[iff] = s.input_forget ? 1 - act[ii] : f.f(rc.clip(a[iff]));
          act[ic] = g.f(rc.clip(a[ic]));
          cnew[ii] = act[iff] * cp[ii] + act[ii] * act[ic];
          if (P) a[io] += P[H + j] * cnew[ii];
          act[io] = f.f(rc.clip(a[io]));
          hc[ii] = ha.f(cnew[ii]);
          hnew[ii] = act[io] * hc[ii];
        }
      } else {  // GRU
        const Activation& g = s.act(d, 1);
        matvec_add(R, 2 * H, H, hp.data(), a.data());  // z and r
        if (Wb)
          for (int64_t gi = 0; gi < 2 * H; ++gi) a[static_cast<size_t>(gi)] += Wb[GH + gi];
        for (int64_t j = 0; j < 2 * H; ++j) act[static_cast<size_t>(j)] = f.f(rc.clip(a[static_cast<size_t>(j)]));
        const double* Rh = R + 2 * H * H;
        const double* Rbh = Wb ? Wb + GH + 2 * H : nullptr;
        q.assign(static_cast<size_t>(H), 0.0);
        if (s.linear_before_reset) {
          matvec_add(Rh, H, H, hp.data(), q.data());
          for (int64_t j = 0; j < H; ++j) {
            if (Rbh) q[static_cast<size_t>(j)] += Rbh[j];
            a[static_cast<size_t>(2 * H + j)] += act[static_cast<size_t>(H + j)] * q[static_cast<size_t>(j)];
          }
        } else {
          std::vector<double> rh(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) rh[static_cast<size_t>(j)] = act[static_cast<size_t>(H + j)] * hp[static_cast<size_t>(j)];
          matvec_add(Rh, H, H, rh.data(), a.data() + 2 * H);
          if (Rbh)
            for (int64_t j = 0; j < H; ++j) a[static_cast<size_t>(2 * H + j)] += Rbh[j];
        }
        for (int64_t j = 0; j < H; ++j) {
          const size_t z = static_cast<size_t>(j), hh = static_cast<size_t>(2 * H + j);
          act[hh] = g.f(rc.clip(a[hh]));
          hnew[z] = (1 - act[z]) * act[hh] + act[z] * hp[z];
        }
      }
      if (record) {
        Recurrence::Record& rec = rc.records[rc.rec(k, n)];
        rec.pre = a;
        rec.act = act;
        rec.hprev = hp;
        if (s.cell == Cell::kLSTM) {
          rec.cprev = cp;
          rec.c = cnew;
          rec.hc = hc;
        }
        if (s.cell == Cell::kGRU) rec.q = q;
      }
      hp = hnew;
      if (s.cell == Cell::kLSTM) cp = cnew;
      if (y) std::copy(hp.begin(), hp.end(), y + rc.yi(t, d, n));
    }
  }
  for (int64_t n = 0; n < rc.N; ++n) {
    if (yh) std::copy(h[static_cast<size_t>(n)].begin(), h[static_cast<size_t>(n)].end(), yh + rc.si(d, n));
    if (yc) std::copy(c[static_cast<size_t>(n)].begin(), c[static_cast<size_t>(n)].end(), yc + rc.si(d, n));
  }
}

Status recurrent_kernel(KernelContext& ctx, Cell cell) {
  TRY(Recurrence rc, load_recurrence(ctx, cell));
  const size_t nout = ctx.node.outputs.size();
  std::vector<double> y(static_cast<size_t>(rc.T * rc.s.dirs * rc.N * rc.H), 0.0);
  std::vector<double> yh(static_cast<size_t>(rc.s.dirs * rc.N * rc.H), 0.0), yc(yh.size(), 0.0);
  for (int d = 0; d < rc.s.dirs; ++d) run_forward(rc, d, y.data(), yh.data(), cell == Cell::kLSTM ? yc.data() : nullptr, false);
  // Sequences of length 0 leave their initial states as the final ones.
  const DType dt = ctx.in(0).dtype();
  ctx.outputs = {Tensor::from_doubles(dt, rc.y_shape(), y)};
  if (nout > 1) ctx.outputs.push_back(Tensor::from_doubles(dt, rc.state_shape(), yh));
  if (nout > 2) ctx.outputs.push_back(Tensor::from_doubles(dt, rc.state_shape(), yc));
  return Status::ok();
}

// For rows [g0, g0 + rows) of R ([G*H, H], one or more gate blocks) with gradient v of their
// outputs and input u: dR[g0 + j, :] += v[j] u, dRb[g0 + j] += v[j], du += v^T R[g0.., :].
void gate_backward(const double* R, double* dR, double* dRb, int64_t g0, int64_t rows, int64_t H, const double* v,
                   const double* u, double* du) {
  for (int64_t j = 0; j < rows; ++j) {
    const double vj = v[j];
    if (vj == 0) continue;
    const double* row = R + (g0 + j) * H;
    double* drow = dR + (g0 + j) * H;
    for (int64_t i = 0; i < H; ++i) {
      drow[i] += vj * u[i];
      du[i] += vj * row[i];
    }
    if (dRb) dRb[g0 + j] += vj;
  }
}

Status recurrent_grad_kernel(KernelContext& ctx, Cell cell) {
  TRY(Recurrence rc, load_recurrence(ctx, cell));
  const Spec& s = rc.s;
  const size_t nf = forward_inputs(cell);
  const std::vector<double> dy = values(ctx, nf), dyh = values(ctx, nf + 1);
  const std::vector<double> dyc = cell == Cell::kLSTM ? values(ctx, nf + 2) : std::vector<double>{};
  if (!dy.empty() && dy.size() != static_cast<size_t>(rc.T * s.dirs * rc.N * rc.H))
    return node_error(ctx.node, "dY must have the shape of Y");
  if (!dyh.empty() && dyh.size() != static_cast<size_t>(s.dirs * rc.N * rc.H))
    return node_error(ctx.node, "dY_h must have the shape of Y_h");
  if (!dyc.empty() && dyc.size() != static_cast<size_t>(s.dirs * rc.N * rc.H))
    return node_error(ctx.node, "dY_c must have the shape of Y_c");
  const int64_t H = rc.H, I = rc.I, GH = rc.gh(), D = s.dirs;
  std::vector<double> dx(rc.x.size(), 0.0), dw(static_cast<size_t>(D * GH * I), 0.0), dr(static_cast<size_t>(D * GH * H), 0.0),
      db(static_cast<size_t>(D * 2 * GH), 0.0), dh0(static_cast<size_t>(D * rc.N * H), 0.0), dc0(dh0.size(), 0.0),
      dp(static_cast<size_t>(D * 3 * H), 0.0);
  for (int d = 0; d < D; ++d) {
    run_forward(rc, d, nullptr, nullptr, nullptr, true);
    const double* W = rc.w.data() + d * GH * I;
    const double* R = rc.r.data() + d * GH * H;
    const double* P = rc.p.empty() ? nullptr : rc.p.data() + d * 3 * H;
    double* dW = dw.data() + d * GH * I;
    double* dR = dr.data() + d * GH * H;
    double* dWb = db.data() + d * 2 * GH;
    double* dRb = dWb + GH;
    double* dP = dp.data() + d * 3 * H;
    const Activation& f = s.act(d, 0);
    std::vector<std::vector<double>> dh(static_cast<size_t>(rc.N)), dc(static_cast<size_t>(rc.N));
    for (int64_t n = 0; n < rc.N; ++n) {
      dh[static_cast<size_t>(n)].assign(static_cast<size_t>(H), 0.0);
      dc[static_cast<size_t>(n)].assign(static_cast<size_t>(H), 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (!dyh.empty()) dh[static_cast<size_t>(n)][static_cast<size_t>(j)] = dyh[rc.si(d, n) + static_cast<size_t>(j)];
        if (!dyc.empty()) dc[static_cast<size_t>(n)][static_cast<size_t>(j)] = dyc[rc.si(d, n) + static_cast<size_t>(j)];
      }
    }
    std::vector<double> da(static_cast<size_t>(GH)), du(static_cast<size_t>(H));
    for (int64_t k = rc.max_len() - 1; k >= 0; --k) {
      for (int64_t n = 0; n < rc.N; ++n) {
        if (k >= rc.lens[static_cast<size_t>(n)]) continue;
        const int64_t t = rc.time_of(d, n, k);
        const Recurrence::Record& rec = rc.records[rc.rec(k, n)];
        std::vector<double>& dH = dh[static_cast<size_t>(n)];
        std::vector<double>& dC = dc[static_cast<size_t>(n)];
        if (!dy.empty())
          for (int64_t j = 0; j < H; ++j) dH[static_cast<size_t>(j)] += dy[rc.yi(t, d, n) + static_cast<size_t>(j)];
        std::fill(du.begin(), du.end(), 0.0);  // d loss / d h_prev
        auto dact = [&](const Activation& a, size_t g) {
          return a.df(rc.clip(rec.pre[g]), rec.act[g]) * rc.clip_grad(rec.pre[g]);
        };
        if (cell == Cell::kRNN) {
          for (int64_t j = 0; j < H; ++j) da[static_cast<size_t>(j)] = dH[static_cast<size_t>(j)] * dact(f, static_cast<size_t>(j));
          gate_backward(R, dR, dRb, 0, H, H, da.data(), rec.hprev.data(), du.data());
        } else if (cell == Cell::kLSTM) {
          const Activation &g = s.act(d, 1), &ha = s.act(d, 2);
          for (int64_t j = 0; j < H; ++j) {
            const size_t ii = static_cast<size_t>(j), io = static_cast<size_t>(H + j), iff = static_cast<size_t>(2 * H + j),
                         ic = static_cast<size_t>(3 * H + j);
            const double dHj = dH[ii];
            const double dao = dHj * rec.hc[ii] * dact(f, io);
            double dCt = dC[ii] + dHj * rec.act[io] * ha.df(rec.c[ii], rec.hc[ii]);
            if (P) dCt += dao * P[H + j];
            double di = dCt * rec.act[ic];
            const double dfg = dCt * rec.cprev[ii];
            double daf = 0;
            if (s.input_forget) {
              di -= dfg;
            } else {
              daf = dfg * dact(f, iff);
            }
            const double dai = di * dact(f, ii);
            const double dac = dCt * rec.act[ii] * dact(g, ic);
            double dcp = dCt * rec.act[iff];
            if (P) {
              dcp += dai * P[j] + daf * P[2 * H + j];
              dP[j] += dai * rec.cprev[ii];
              dP[H + j] += dao * rec.c[ii];
              dP[2 * H + j] += daf * rec.cprev[ii];
            }
            da[ii] = dai;
            da[io] = dao;
            da[iff] = daf;
            da[ic] = dac;
            dC[ii] = dcp;
          }
          gate_backward(R, dR, dRb, 0, GH, H, da.data(), rec.hprev.data(), du.data());  // all four blocks share h
        } else {  // GRU
          const Activation& g = s.act(d, 1);
          std::vector<double> dr_gate(static_cast<size_t>(H), 0.0);
          for (int64_t j = 0; j < H; ++j) {
            const size_t z = static_cast<size_t>(j), hh = static_cast<size_t>(2 * H + j);
            const double dHj = dH[z];
            da[z] = dHj * (rec.hprev[z] - rec.act[hh]);  // d z, activated below
            da[hh] = dHj * (1 - rec.act[z]) * dact(g, hh);
            du[z] += dHj * rec.act[z];
          }
          const double* dah = da.data() + 2 * H;
          if (s.linear_before_reset) {
            std::vector<double> dq(static_cast<size_t>(H));
            for (int64_t j = 0; j < H; ++j) {
              dq[static_cast<size_t>(j)] = dah[j] * rec.act[static_cast<size_t>(H + j)];
              dr_gate[static_cast<size_t>(j)] = dah[j] * rec.q[static_cast<size_t>(j)];
            }
            gate_backward(R, dR, dRb, 2 * H, H, H, dq.data(), rec.hprev.data(), du.data());
          } else {
            std::vector<double> rh(static_cast<size_t>(H)), drh(static_cast<size_t>(H), 0.0);
            for (int64_t j = 0; j < H; ++j) rh[static_cast<size_t>(j)] = rec.act[static_cast<size_t>(H + j)] * rec.hprev[static_cast<size_t>(j)];
            gate_backward(R, dR, dRb, 2 * H, H, H, dah, rh.data(), drh.data());
            for (int64_t j = 0; j < H; ++j) {
              dr_gate[static_cast<size_t>(j)] = drh[static_cast<size_t>(j)] * rec.hprev[static_cast<size_t>(j)];
              du[static_cast<size_t>(j)] += drh[static_cast<size_t>(j)] * rec.act[static_cast<size_t>(H + j)];
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            da[static_cast<size_t>(j)] *= dact(f, static_cast<size_t>(j));
            da[static_cast<size_t>(H + j)] = dr_gate[static_cast<size_t>(j)] * dact(f, static_cast<size_t>(H + j));
          }
          gate_backward(R, dR, dRb, 0, 2 * H, H, da.data(), rec.hprev.data(), du.data());
        }
        // The input projection: every gate's pre-activation has x W^T + Wb.
        const double* xr = rc.x.data() + rc.xi(t, n);
        double* dxr = dx.data() + rc.xi(t, n);
        for (int64_t gi = 0; gi < GH; ++gi) {
          const double v = da[static_cast<size_t>(gi)];
          if (v == 0) continue;
          dWb[gi] += v;
          const double* wrow = W + gi * I;
          double* dwrow = dW + gi * I;
          for (int64_t i = 0; i < I; ++i) {
            dxr[i] += v * wrow[i];
            dwrow[i] += v * xr[i];
          }
        }
        dH = du;
      }
    }
    for (int64_t n = 0; n < rc.N; ++n) {
      std::copy(dh[static_cast<size_t>(n)].begin(), dh[static_cast<size_t>(n)].end(), dh0.begin() + static_cast<std::ptrdiff_t>(rc.si(d, n)));
      std::copy(dc[static_cast<size_t>(n)].begin(), dc[static_cast<size_t>(n)].end(), dc0.begin() + static_cast<std::ptrdiff_t>(rc.si(d, n)));
    }
  }
  const DType dt = ctx.in(0).dtype();
  const std::vector<std::pair<std::vector<double>*, Shape>> outs = {
      {&dx, ctx.in(0).shape()}, {&dw, ctx.in(1).shape()}, {&dr, ctx.in(2).shape()}, {&db, {D, 2 * GH}},
      {&dh0, rc.state_shape()}, {&dc0, rc.state_shape()}, {&dp, {D, 3 * H}}};
  ctx.outputs.clear();
  for (size_t o = 0; o < ctx.node.outputs.size() && o < outs.size(); ++o)
    ctx.outputs.push_back(Tensor::from_doubles(dt, outs[o].second, *outs[o].first));
  return Status::ok();
}

double recurrent_flops(const InferContext& ctx) {
  const TensorType &x = *ctx.inputs[0], &r = *ctx.inputs[2];
  if (!x.is_static() || !r.is_static()) return 0;
  const double t = static_cast<double>(x.dims[0].size * x.dims[1].size);  // T * N
  const double d = static_cast<double>(r.dims[0].size), gh = static_cast<double>(r.dims[1].size),
               h = static_cast<double>(r.dims[2].size), i = static_cast<double>(x.dims[2].size);
  return 2 * t * d * gh * (i + h);
}

void register_cell(OpRegistry& registry, Cell cell) {
  const std::string name = cell == Cell::kRNN ? "RNN" : cell == Cell::kLSTM ? "LSTM" : "GRU";
  const std::string gates = cell == Cell::kRNN ? "1" : cell == Cell::kLSTM ? "4 (i o f c)" : "3 (z r h)";
  const std::string what = cell == Cell::kRNN    ? "An Elman recurrent layer: H = f(x W^T + h R^T + Wb + Rb) at every step."
                           : cell == Cell::kLSTM ? "A long short-term memory layer (input, output, forget gates and a cell, "
                                                   "optional peepholes)."
                                                 : "A gated recurrent unit layer (update and reset gates).";
  {
    OpDef def(name, "recurrent",
              what + " Over T steps of N sequences, forward, reverse or both ways; G = " + gates +
                  " gates. Sequence b stops after sequence_lens[b] steps.");
    def.input("X", "[T, N, I] (batch_first: [N, T, I])")
        .input("W", "[D, G*H, I] input weights")
        .input("R", "[D, G*H, H] recurrence weights")
        .input("B", "[D, 2*G*H] biases of W then of R (zero when absent)", true)
        .input("sequence_lens", "[N] i32 or i64 (T when absent)", true)
        .input("initial_h", "[D, N, H] (batch_first: [N, D, H]; zero when absent)", true);
    if (cell == Cell::kLSTM)
      def.input("initial_c", "[D, N, H] (batch_first: [N, D, H]; zero when absent)", true)
          .input("P", "[D, 3*H] peepholes of the i, o, f gates (zero when absent)", true);
    def.output("Y", "[T, D, N, H] every step's hidden state (batch_first: [N, T, D, H])", true)
        .output("Y_h", "[D, N, H] the last hidden state (batch_first: [N, D, H])", true);
    if (cell == Cell::kLSTM) def.output("Y_c", "[D, N, H] the last cell state (batch_first: [N, D, H])", true);
    add_common_attrs(def, cell);
    def.allowed_types = kFloatTypes;
    def.infer = [cell](const InferContext& ctx) { return infer_recurrent(ctx, cell); };
    def.reference = [cell](KernelContext& ctx) { return recurrent_kernel(ctx, cell); };
    def.flops = [](const InferContext& ctx, const std::vector<TensorType>&) { return recurrent_flops(ctx); };
    registry.add(std::move(def));
  }
  {
    OpDef def(name + "Grad", "gradient",
              "Backward of " + name + " (backpropagation through time): recomputes the forward steps, then "
              "the gradients of X, W, R, B and the initial states from those of Y and the last states.");
    def.input("X", "as " + name).input("W", "as " + name).input("R", "as " + name).input("B", "as " + name, true)
        .input("sequence_lens", "as " + name, true).input("initial_h", "as " + name, true);
    if (cell == Cell::kLSTM) def.input("initial_c", "as LSTM", true).input("P", "as LSTM", true);
    def.input("dY", "gradient of Y (zero when absent)", true).input("dY_h", "gradient of Y_h (zero when absent)", true);
    if (cell == Cell::kLSTM) def.input("dY_c", "gradient of Y_c (zero when absent)", true);
    def.output("dX", "shape of X").output("dW", "shape of W").output("dR", "shape of R")
        .output("dB", "[D, 2*G*H]", true).output("dinitial_h", "shape of initial_h", true);
    if (cell == Cell::kLSTM) def.output("dinitial_c", "shape of initial_c", true).output("dP", "[D, 3*H]", true);
    add_common_attrs(def, cell);
    def.allowed_types = kFloatTypes;
    def.infer = [cell](const InferContext& ctx) { return infer_recurrent_grad(ctx, cell); };
    def.reference = [cell](KernelContext& ctx) { return recurrent_grad_kernel(ctx, cell); };
    def.flops = [](const InferContext& ctx, const std::vector<TensorType>&) { return 3 * recurrent_flops(ctx); };
    registry.add(std::move(def));
  }
}

}  // namespace

void register_recurrent_ops(OpRegistry& registry) {
  register_cell(registry, Cell::kRNN);
  register_cell(registry, Cell::kLSTM);
  register_cell(registry, Cell::kGRU);
}

}  // namespace tessera::ops
