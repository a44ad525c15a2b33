// oneDNN kernels for RNN, LSTM and GRU (forward, inference): one primitive per direction
// (vanilla_rnn, lstm with optional peepholes, gru, lbr_gru for linear_before_reset).
//
// Taken: static f32, plain layouts, the default activations (an RNN's Tanh, Relu or Sigmoid), no
// clip, no input_forget, and sequence_lens absent or a constant equal to T everywhere. Anything
// else declines to the reference kernel (engine/ops/nn_recurrent.cpp), which is the definition.
//
// ONNX and oneDNN differ in layout: weights [D, G*H, I] with gates i o f c (LSTM) become one
// oneDNN `ldigo` tensor per direction with gates i f c o, reordered into the primitive's packed
// format (once at load for constant weights, else every run); biases become one vector per gate
// (W's plus R's; lbr_gru keeps Rbh apart as its fourth); peepholes i o f become i f o.
// Y [T, D, N, H] is the primitive's dst_layer directly when D is 1, else each direction writes a
// [T, N, H] buffer that is copied into its slice.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

using dnnl::prop_kind;
using tag = memory::format_tag;

enum class Cell { kRNN, kLSTM, kGRU };

struct RnnGeom {
  Cell cell = Cell::kRNN;
  bool lbr = false;            // GRU linear_before_reset
  bool batch_first = false;
  bool reverse = false;        // direction "reverse"
  int dirs = 1;
  int gates = 1;               // ONNX's gates per direction
  memory::dim T = 0, N = 0, I = 0, H = 0;
  dnnl::algorithm rnn_act = dnnl::algorithm::eltwise_tanh;
  bool has_b = false, has_h0 = false, has_c0 = false, has_p = false;
  int outputs = 1;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// oneDNN's gate g (LSTM: i f c o) -> ONNX's (i o f c); GRU and RNN keep their order.
int onnx_gate(Cell cell, int g) {
  static const int kLstm[4] = {0, 2, 3, 1};
  return cell == Cell::kLSTM ? kLstm[g] : g;
}

class RnnKernel : public OneDnnKernel {
 public:
  RnnKernel(ContextPtr ctx, std::string impl, const KernelInit& init, RnnGeom g)
      : OneDnnKernel(std::move(ctx), std::move(impl), init.node.name), g_(g) {
    for (size_t i = 1; i < 3; ++i)
      if (const Tensor* c = constant_at(init, i)) constant_weights_[i - 1] = c->contiguous();
    if (const Tensor* c = constant_at(init, 3)) constant_bias_ = c->contiguous();
    if (g.cell == Cell::kLSTM)
      if (const Tensor* c = constant_at(init, 7)) constant_p_ = c->contiguous();
    for (const ir::TensorType* t : init.out_types) out_bytes_.push_back(backend::plain_bytes(*t));
    for (int d = 0; d < g_.dirs; ++d) {
      dirs_.emplace_back();
      dirs_.back().pd = make_pd(ctx_->engine, d);
      need_scratch(dirs_.back().pd);
    }
  }

 private:
  struct Direction {
    dnnl::primitive_desc pd;
    dnnl::primitive prim;
    memory w_layer, w_iter, bias, peephole, src_iter, src_iter_c, dst_layer, dst_iter, dst_iter_c, scratchpad;
    Tensor w_plain, r_plain, bias_plain, p_plain;  // ldigo / ldgo staging for the reorders
    bool packed = false;
  };

  int bias_gates() const { return g_.cell == Cell::kLSTM ? 4 : g_.cell == Cell::kGRU ? (g_.lbr ? 4 : 3) : 1; }
  memory::desc layer_md(memory::dim c) const { return memory::desc({g_.T, g_.N, c}, memory::data_type::f32, g_.batch_first ? tag::ntc : tag::tnc); }
  memory::desc iter_md() const { return memory::desc({1, 1, g_.N, g_.H}, memory::data_type::f32, tag::ldnc); }
  memory::desc weights_any(memory::dim in) const {
    return memory::desc({1, 1, in, g_.gates, g_.H}, memory::data_type::f32, tag::any);
  }
  memory::desc bias_md() const { return memory::desc({1, 1, bias_gates(), g_.H}, memory::data_type::f32, tag::ldgo); }
  memory::desc peephole_md() const { return memory::desc({1, 1, 3, g_.H}, memory::data_type::f32, tag::ldgo); }
  dnnl::rnn_direction direction(int d) const {
    return d == 1 || g_.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                : dnnl::rnn_direction::unidirectional_left2right;
  }

  dnnl::primitive_desc make_pd(const dnnl::engine& eng, int d) const {
    const prop_kind pk = prop_kind::forward_inference;
    const memory::desc src = layer_md(g_.I), dst = layer_md(g_.H), it = iter_md();
    const dnnl::primitive_attr attr = user_scratchpad_attr();
    switch (g_.cell) {
      case Cell::kLSTM: {
        const memory::desc p = g_.has_p ? peephole_md() : memory::desc();
        dnnl::lstm_forward::desc desc(pk, direction(d), src, it, it, weights_any(g_.I), weights_any(g_.H), p, bias_md(),
                                      dst, it, it);
        return dnnl::lstm_forward::primitive_desc(desc, attr, eng);
      }
      case Cell::kGRU:
        if (g_.lbr) {
          dnnl::lbr_gru_forward::desc desc(pk, direction(d), src, it, weights_any(g_.I), weights_any(g_.H), bias_md(), dst, it);
          return dnnl::lbr_gru_forward::primitive_desc(desc, attr, eng);
        } else {
          dnnl::gru_forward::desc desc(pk, direction(d), src, it, weights_any(g_.I), weights_any(g_.H), bias_md(), dst, it);
          return dnnl::gru_forward::primitive_desc(desc, attr, eng);
        }
      case Cell::kRNN: {
        dnnl::vanilla_rnn_forward::desc desc(pk, g_.rnn_act, direction(d), src, it, weights_any(g_.I), weights_any(g_.H),
                                             bias_md(), dst, it);
        return dnnl::vanilla_rnn_forward::primitive_desc(desc, attr, eng);
      }
    }
    throw std::runtime_error("unknown cell");
  }

  void do_load() override {
    const dnnl::engine& eng = ctx_->engine;
    for (int d = 0; d < g_.dirs; ++d) {
      Direction& dir = dirs_[static_cast<size_t>(d)];
      dir.prim = dnnl::primitive(dir.pd.get());
      dir.w_layer = memory(dir.pd.query_md(dnnl::query::weights_md, 0), eng);
      dir.w_iter = memory(dir.pd.query_md(dnnl::query::weights_md, 1), eng);
      dir.w_plain = Tensor(DType::kF32, {1, 1, g_.I, g_.gates, g_.H});
      dir.r_plain = Tensor(DType::kF32, {1, 1, g_.H, g_.gates, g_.H});
      dir.bias_plain = Tensor(DType::kF32, {1, 1, bias_gates(), g_.H});
      dir.bias = memory(bias_md(), eng, dir.bias_plain.raw_data());
      if (g_.has_p) {
        dir.p_plain = Tensor(DType::kF32, {1, 1, 3, g_.H});
        dir.peephole = memory(peephole_md(), eng, dir.p_plain.raw_data());
      }
      dir.src_iter = memory(iter_md(), eng);
      dir.src_iter_c = memory(iter_md(), eng);
      dir.dst_iter = memory(iter_md(), eng);
      dir.dst_iter_c = memory(iter_md(), eng);
      std::memset(dir.src_iter.get_data_handle(), 0, iter_md().get_size());
      std::memset(dir.src_iter_c.get_data_handle(), 0, iter_md().get_size());
      dir.dst_layer = memory(layer_md(g_.H), eng, g_.dirs == 1 ? DNNL_MEMORY_NONE : DNNL_MEMORY_ALLOCATE);
      dir.scratchpad = memory(dir.pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    }
    if (constant_weights_[0] && constant_weights_[1] && (!g_.has_b || constant_bias_) && (!g_.has_p || constant_p_)) {
      for (int d = 0; d < g_.dirs; ++d)
        pack(d, constant_weights_[0]->data<float>(), constant_weights_[1]->data<float>(),
             g_.has_b ? constant_bias_->data<float>() : nullptr, g_.has_p ? constant_p_->data<float>() : nullptr);
      for (Direction& dir : dirs_) dir.packed = true;
    }
  }

  // ONNX weights of direction d into the primitive's formats.
  void pack(int d, const float* w, const float* r, const float* b, const float* p) {
    Direction& dir = dirs_[static_cast<size_t>(d)];
    const memory::dim H = g_.H, G = g_.gates, GH = G * H;
    auto to_ldigo = [&](const float* src, memory::dim in, Tensor& out) {
      const float* s = src + d * GH * in;
      float* o = out.data<float>();
      for (memory::dim g = 0; g < G; ++g) {
        const memory::dim og = onnx_gate(g_.cell, static_cast<int>(g));
        for (memory::dim h = 0; h < H; ++h)
          for (memory::dim i = 0; i < in; ++i) o[(i * G + g) * H + h] = s[(og * H + h) * in + i];
      }
    };
    to_ldigo(w, g_.I, dir.w_plain);
    to_ldigo(r, g_.H, dir.r_plain);
    const dnnl::engine& eng = ctx_->engine;
    const memory::desc wp({1, 1, g_.I, G, H}, memory::data_type::f32, tag::ldigo);
    const memory::desc rp({1, 1, g_.H, G, H}, memory::data_type::f32, tag::ldigo);
    memory wsrc(wp, eng, dir.w_plain.raw_data()), rsrc(rp, eng, dir.r_plain.raw_data());
    dnnl::reorder(wsrc, dir.w_layer).execute(stream_, wsrc, dir.w_layer);
    dnnl::reorder(rsrc, dir.w_iter).execute(stream_, rsrc, dir.w_iter);
    float* bo = dir.bias_plain.data<float>();
    std::fill(bo, bo + bias_gates() * H, 0.f);
    if (b) {
      const float* wb = b + d * 2 * GH;
      const float* rb = wb + GH;
      for (memory::dim g = 0; g < G; ++g) {
        const memory::dim og = onnx_gate(g_.cell, static_cast<int>(g));
        const bool split = g_.lbr && g == 2;  // lbr_gru: Rbh is its own fourth bias
        for (memory::dim h = 0; h < H; ++h) bo[g * H + h] = wb[og * H + h] + (split ? 0.f : rb[og * H + h]);
      }
      if (g_.lbr)
        for (memory::dim h = 0; h < H; ++h) bo[3 * H + h] = rb[2 * H + h];
    }
    if (p) {  // ONNX i o f -> oneDNN i f o
      const float* pd = p + d * 3 * H;
      float* po = dir.p_plain.data<float>();
      for (memory::dim h = 0; h < H; ++h) {
        po[h] = pd[h];
        po[H + h] = pd[2 * H + h];
        po[2 * H + h] = pd[H + h];
      }
    }
    stream_.wait();
  }

  // Offset (in floats) of sequence n's state of direction d in an ONNX state tensor.
  memory::dim state_at(int d, memory::dim n) const {
    return (g_.batch_first ? n * g_.dirs + d : d * g_.N + n) * g_.H;
  }

  void do_run(KernelRun& run) override {
    const auto in = [&](size_t i) { return i < run.inputs.size() ? static_cast<const float*>(run.inputs[i].data) : nullptr; };
    const memory::dim T = g_.T, N = g_.N, H = g_.H;
    float* y = static_cast<float*>(run.outputs[0].data);
    for (int d = 0; d < g_.dirs; ++d) {
      Direction& dir = dirs_[static_cast<size_t>(d)];
      dir.scratchpad.set_data_handle(aligned_scratch(run));
      if (!dir.packed) pack(d, in(1), in(2), g_.has_b ? in(3) : nullptr, g_.has_p ? in(7) : nullptr);
      const float* h0 = g_.has_h0 ? in(5) : nullptr;
      const float* c0 = g_.has_c0 ? in(6) : nullptr;
      float* si = static_cast<float*>(dir.src_iter.get_data_handle());
      float* sc = static_cast<float*>(dir.src_iter_c.get_data_handle());
      for (memory::dim n = 0; n < N; ++n) {
        if (h0) std::memcpy(si + n * H, h0 + state_at(d, n), sizeof(float) * static_cast<size_t>(H));
        if (c0) std::memcpy(sc + n * H, c0 + state_at(d, n), sizeof(float) * static_cast<size_t>(H));
      }
      memory src_layer(layer_md(g_.I), ctx_->engine, const_cast<float*>(in(0)));
      if (g_.dirs == 1) dir.dst_layer.set_data_handle(y);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC_LAYER, src_layer},     {DNNL_ARG_SRC_ITER, dir.src_iter},  {DNNL_ARG_WEIGHTS_LAYER, dir.w_layer},
          {DNNL_ARG_WEIGHTS_ITER, dir.w_iter}, {DNNL_ARG_BIAS, dir.bias},          {DNNL_ARG_DST_LAYER, dir.dst_layer},
          {DNNL_ARG_DST_ITER, dir.dst_iter},   {DNNL_ARG_SCRATCHPAD, dir.scratchpad}};
      if (g_.cell == Cell::kLSTM) {
        args[DNNL_ARG_SRC_ITER_C] = dir.src_iter_c;
        args[DNNL_ARG_DST_ITER_C] = dir.dst_iter_c;
        if (g_.has_p) args[DNNL_ARG_WEIGHTS_PEEPHOLE] = dir.peephole;
      }
      dir.prim.execute(stream_, args);
      stream_.wait();
      if (g_.dirs > 1) {  // [T, N, H] (or [N, T, H]) -> this direction's slice of Y
        const float* dl = static_cast<const float*>(dir.dst_layer.get_data_handle());
        for (memory::dim t = 0; t < T; ++t)
          for (memory::dim n = 0; n < N; ++n) {
            const memory::dim from = (g_.batch_first ? n * T + t : t * N + n) * H;
            const memory::dim to = (g_.batch_first ? (n * T + t) * g_.dirs + d : (t * g_.dirs + d) * N + n) * H;
            std::memcpy(y + to, dl + from, sizeof(float) * static_cast<size_t>(H));
          }
      }
      for (int o = 1; o < g_.outputs; ++o) {
        float* out = static_cast<float*>(run.outputs[static_cast<size_t>(o)].data);
        const float* st = static_cast<const float*>((o == 1 ? dir.dst_iter : dir.dst_iter_c).get_data_handle());
        for (memory::dim n = 0; n < N; ++n)
          std::memcpy(out + state_at(d, n), st + n * H, sizeof(float) * static_cast<size_t>(H));
      }
    }
  }

  RnnGeom g_;
  std::vector<Direction> dirs_;
  std::optional<Tensor> constant_weights_[2], constant_bias_, constant_p_;
};

Expected<KernelPtr> make_rnn(const ContextPtr& ctx, const KernelInit& init, Cell cell) {
  const std::string impl = cell == Cell::kLSTM ? "onednn:lstm" : cell == Cell::kGRU ? "onednn:gru" : "onednn:rnn";
  if (!all_plain(init)) return decline(init, impl, "plain layouts only");
  RnnGeom g;
  g.cell = cell;
  g.gates = cell == Cell::kLSTM ? 4 : cell == Cell::kGRU ? 3 : 1;
  for (size_t i = 0; i < init.in_types.size(); ++i)
    if (i != 4 && init.in_types[i] && !is_static_f32(init.in_types[i]))
      return decline(init, impl, "needs static f32 inputs");
  for (const ir::TensorType* t : init.out_types)
    if (!is_static_f32(t)) return decline(init, impl, "needs static f32 outputs");
  if (init.node.attr("clip")) return decline(init, impl, "clip");
  if (attr_int(init, "input_forget", 0) != 0) return decline(init, impl, "input_forget");
  g.lbr = attr_int(init, "linear_before_reset", 0) != 0;
  g.batch_first = attr_int(init, "batch_first", 0) != 0;
  const std::string dir = attr_string(init, "direction", "forward");
  g.dirs = dir == "bidirectional" ? 2 : 1;
  g.reverse = dir == "reverse";
  // Activations: the defaults (an RNN may take Tanh, Relu or Sigmoid, the same both ways).
  if (const ir::Attribute* a = init.node.attr("activations")) {
    std::vector<std::string> names;
    for (const std::string& s : a->strings()) names.push_back(lower(s));
    const std::vector<std::string> dflt = cell == Cell::kLSTM  ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
                                          : cell == Cell::kGRU ? std::vector<std::string>{"sigmoid", "tanh"}
                                                               : std::vector<std::string>{names.empty() ? "tanh" : names[0]};
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] != dflt[i % dflt.size()]) return decline(init, impl, "activation " + a->strings()[i]);
    if (cell == Cell::kRNN && !names.empty()) {
      if (names[0] == "relu") g.rnn_act = dnnl::algorithm::eltwise_relu;
      else if (names[0] == "sigmoid") g.rnn_act = dnnl::algorithm::eltwise_logistic;
      else if (names[0] != "tanh") return decline(init, impl, "activation " + a->strings()[0]);
    }
  }
  const memory::dims x = dims_of(*init.in_types[0]), r = dims_of(*init.in_types[2]);
  if (x.size() != 3 || r.size() != 3) return decline(init, impl, "ranks");
  g.T = x[g.batch_first ? 1 : 0];
  g.N = x[g.batch_first ? 0 : 1];
  g.I = x[2];
  g.H = r[2];
  if (g.T == 0 || g.N == 0) return decline(init, impl, "empty sequence");
  if (input_type(init, 4)) {
    const Tensor* c = constant_at(init, 4);
    if (!c) return decline(init, impl, "sequence_lens known only at run time");
    for (int64_t i = 0; i < c->numel(); ++i)
      if (static_cast<memory::dim>(c->get(i)) != g.T) return decline(init, impl, "sequences of different lengths");
  }
  g.has_b = input_type(init, 3) != nullptr;
  g.has_h0 = input_type(init, 5) != nullptr;
  g.has_c0 = cell == Cell::kLSTM && input_type(init, 6) != nullptr;
  g.has_p = cell == Cell::kLSTM && input_type(init, 7) != nullptr;
  g.outputs = static_cast<int>(init.out_types.size());
  std::unique_ptr<RnnKernel> k;
  Status st = guarded(impl, [&] { k = std::make_unique<RnnKernel>(ctx, impl, init, g); });
  if (!st.is_ok()) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

}  // namespace

void register_onednn_rnn(KernelRegistry& registry, const ContextPtr& ctx) {
  registry.add("RNN", "onednn:rnn", kOneDnnPriority, [ctx](const KernelInit& init) { return make_rnn(ctx, init, Cell::kRNN); });
  registry.add("LSTM", "onednn:lstm", kOneDnnPriority, [ctx](const KernelInit& init) { return make_rnn(ctx, init, Cell::kLSTM); });
  registry.add("GRU", "onednn:gru", kOneDnnPriority, [ctx](const KernelInit& init) { return make_rnn(ctx, init, Cell::kGRU); });
}

}  // namespace tessera::cpu
