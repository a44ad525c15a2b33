// oneDNN matmul: MatMul and FusedMatMul (numpy.matmul shapes, broadcast batch axes, Bias over the
// last axis, residual Z, activation), Gemm and FusedGemm (transA / transB as strides; C as the
// bias when alpha = beta = 1, else alpha as an eltwise_linear post-op and a constant C prescaled by
// beta as a binary-add post-op).
//
// Constant right operands (weights) whose batch axes are all 1 are prepacked once at load into
// the format oneDNN prefers (format_tag::any). Everything here is plain row-major.
//
//   f32 A [..., M, K] x B [..., K, N] -> Y [..., M, N]     (1-D A is [1, K], 1-D B is [K, 1])
#include <unordered_map>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {
namespace {

// An extra operand read at run time: a bias or a binary post-op source.
struct Operand {
  int input = -1;  // node input index
  int arg = 0;     // DNNL_ARG_* it binds to
  memory::desc md;
  Tensor constant;  // held when the input is a compile-time constant
  bool is_constant = false;
  memory mem;
};

// What the factories give MatMulKernel::build besides descriptors: the post-ops, and for an
// activation whose post-op drops NaN (Activation::exact) the same post-ops without it.
struct PostOps {
  dnnl::post_ops all;
  dnnl::primitive_attr without_activation;  // set only with `exact` (post_ops copies share their list)
  std::optional<ExactActivation> exact;
};

class MatMulKernel : public OneDnnKernel {
 public:
  using OneDnnKernel::OneDnnKernel;

  // src [.., M, K] (strides allowed), weights [.., K, N], dst plain; operands and attr filled by
  // the factory. `b_const` prepacks the weights. `bf16`: src and weights rounded to bf16 (copied
  // through scratch each run, prepacked weights once), f32 accumulation and dst; f32 where oneDNN
  // has no such kernel.
  Status build(const memory::desc& src, const memory::desc& wei, const memory::desc& dst,
               const Tensor* b_const, const PostOps& ops, std::vector<Operand> operands, bool bf16) {
    src_md_ = src;
    wei_user_md_ = wei;
    dst_md_ = dst;
    operands_ = std::move(operands);
    if (b_const) b_copy_ = b_const->contiguous();
    b_const_ = b_const != nullptr;
    exact_ = ops.exact;
    if (exact_) {  // constants holding NaN or inf take the exact path every run
      always_exact_ = b_const_ && has_non_finite(b_copy_);
      for (const Operand& o : operands_) always_exact_ |= o.is_constant && has_non_finite(o.constant);
    }
    return guarded("matmul", [&] {
      memory::desc bias_md;
      for (const Operand& o : operands_)
        if (o.arg == DNNL_ARG_BIAS) bias_md = o.md;
      dnnl::primitive_attr attr = user_scratchpad_attr();
      attr.set_post_ops(ops.all);
      const auto make = [&](memory::data_type math) {
        const bool low = math != memory::data_type::f32;
        math_src_md_ = low ? plain_md(src.dims(), math) : src;
        const memory::desc wei_md = b_const_ ? memory::desc(wei.dims(), math, memory::format_tag::any)
                                             : low ? plain_md(wei.dims(), math) : wei;
        pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(math_src_md_, wei_md, bias_md, dst), attr,
                                           ctx_->engine);
      };
      with_bf16_fallback(bf16, make);
      need_scratch(pd_);
      if (exact_) {  // the same product without the activation, on the prepacked weights
        exact_pd_ = dnnl::matmul::primitive_desc(
            dnnl::matmul::desc(math_src_md_, pd_.weights_desc(), bias_md, dst), ops.without_activation, ctx_->engine);
        need_scratch(exact_pd_);
      }
      // [scratchpad | src in bf16 | weights in bf16 (when read each run)]
      size_t off = (scratch_bytes_ + 63) & ~size_t{63};
      if (math_src_md_ != src_md_) {
        src_tmp_off_ = off;
        off += (math_src_md_.get_size() + 63) & ~size_t{63};
      }
      if (!b_const_ && pd_.weights_desc() != wei_user_md_) {
        wei_tmp_off_ = off;
        off += pd_.weights_desc().get_size();
      }
      scratch_bytes_ = off;
      out_bytes_ = {dst.get_size()};
    });
  }

  std::string detail() const override { return pd_.impl_info_str(); }

 protected:
  void do_load() override {
    const dnnl::engine& eng = ctx_->engine;
    prim_ = dnnl::matmul(pd_);
    if (b_const_) {
      wei_mem_ = memory(pd_.weights_desc(), eng);
      memory user(wei_user_md_, eng, const_cast<void*>(b_copy_.raw_data()));
      dnnl::reorder(user, wei_mem_).execute(stream_, user, wei_mem_);
      stream_.wait();
    } else {
      wei_mem_ = memory(pd_.weights_desc(), eng, DNNL_MEMORY_NONE);
      if (pd_.weights_desc() != wei_user_md_) {
        wei_user_ = memory(wei_user_md_, eng, DNNL_MEMORY_NONE);
        wei_reorder_ = dnnl::reorder(wei_user_, wei_mem_);
      }
    }
    src_mem_ = memory(src_md_, eng, DNNL_MEMORY_NONE);
    if (math_src_md_ != src_md_) {
      src_math_ = memory(math_src_md_, eng, DNNL_MEMORY_NONE);
      src_reorder_ = dnnl::reorder(src_mem_, src_math_);
    }
    dst_mem_ = memory(dst_md_, eng, DNNL_MEMORY_NONE);
    scratchpad_ = memory(pd_.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    for (Operand& o : operands_)
      o.mem = memory(o.md, eng,
                     o.is_constant ? const_cast<void*>(o.constant.raw_data()) : DNNL_MEMORY_NONE);
  }

  void do_run(KernelRun& run) override {
    char* scratch = static_cast<char*>(aligned_scratch(run));
    src_mem_.set_data_handle(run.inputs[0].data);
    dst_mem_.set_data_handle(run.outputs[0].data);
    scratchpad_.set_data_handle(scratch);
    if (wei_reorder_) {
      wei_user_.set_data_handle(run.inputs[1].data);
      wei_mem_.set_data_handle(scratch + wei_tmp_off_);
      wei_reorder_.execute(stream_, wei_user_, wei_mem_);
    } else if (!b_const_) {
      wei_mem_.set_data_handle(run.inputs[1].data);
    }
    if (src_reorder_) {
      src_math_.set_data_handle(scratch + src_tmp_off_);
      src_reorder_.execute(stream_, src_mem_, src_math_);
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_reorder_ ? src_math_ : src_mem_},
                                            {DNNL_ARG_WEIGHTS, wei_mem_},
                                            {DNNL_ARG_DST, dst_mem_},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad_}};
    for (Operand& o : operands_) {
      if (!o.is_constant) o.mem.set_data_handle(run.inputs[static_cast<size_t>(o.input)].data);
      args[o.arg] = o.mem;
    }
    if (exact_ && (always_exact_ || inputs_non_finite(run))) {
      // A NaN or an infinity: the activation's post-op could drop a NaN, so run without it and
      // apply it here (the primitive is made the first time it is needed).
      if (!exact_prim_) exact_prim_ = dnnl::matmul(exact_pd_);
      exact_prim_.execute(stream_, args);
      stream_.wait();
      auto* y = static_cast<float*>(run.outputs[0].data);
      apply_activation(*exact_, y, y, static_cast<int64_t>(dst_md_.get_size() / sizeof(float)));
      return;
    }
    prim_.execute(stream_, args);
  }

 private:
  // Whether an input read at run time (A, and B and the operands when not constants) holds NaN or
  // inf. A strided (transposed) operand's buffer is its size in elements all the same.
  bool inputs_non_finite(const KernelRun& run) const {
    const auto check = [&](size_t i, const memory::desc& md) {
      return i < run.inputs.size() && run.inputs[i].data &&
             has_non_finite(static_cast<const float*>(run.inputs[i].data), md.get_size() / sizeof(float));
    };
    if (check(0, src_md_) || (!b_const_ && check(1, wei_user_md_))) return true;
    for (const Operand& o : operands_)
      if (!o.is_constant && check(static_cast<size_t>(o.input), o.md)) return true;
    return false;
  }

  dnnl::matmul::primitive_desc pd_, exact_pd_;
  dnnl::matmul prim_, exact_prim_;
  std::optional<ExactActivation> exact_;
  bool always_exact_ = false;
  memory::desc src_md_, wei_user_md_, dst_md_;
  memory::desc math_src_md_;  // src as the primitive reads it (a bf16 copy, or src_md_ itself)
  Tensor b_copy_;
  bool b_const_ = false;
  std::vector<Operand> operands_;
  memory src_mem_, wei_mem_, dst_mem_, scratchpad_, src_math_, wei_user_;
  dnnl::reorder src_reorder_, wei_reorder_;  // f32 to bf16 each run (bf16 only)
  size_t src_tmp_off_ = 0, wei_tmp_off_ = 0;  // their copies in scratch
};

// Right-aligns `d` to `rank` dims with leading 1s; more dims than `rank` are collapsed into the
// first (a row-major operand of a matmul whose batch axes were folded into M).
memory::dims pad_front(memory::dims d, size_t rank) {
  while (d.size() < rank) d.insert(d.begin(), 1);
  while (d.size() > rank && d.size() > 1) {
    d[1] *= d[0];
    d.erase(d.begin());
  }
  return d;
}

// An operand of `dims` (broadcastable to the dst, right-aligned) bound to `arg`.
Operand make_operand(const KernelInit& init, int input, int arg, const memory::dims& dst_dims) {
  Operand o;
  o.input = input;
  o.arg = arg;
  o.md =
      plain_md(pad_front(dims_of(*input_type(init, static_cast<size_t>(input))), dst_dims.size()));
  if (const Tensor* c = constant_at(init, static_cast<size_t>(input))) {
    o.constant = c->contiguous();
    o.is_constant = true;
  }
  return o;
}

// Adds the residual Z (binary add) and the activation to `po`; Z becomes an operand.
Status fused_tail(const KernelInit& init, const memory::dims& dst_dims, PostOps& ops,
                  std::vector<Operand>& operands) {
  dnnl::post_ops& po = ops.all;
  if (const ir::TensorType* z = input_type(init, 3)) {
    if (!is_static_f32(z) || pad_front(dims_of(*z), dst_dims.size()) != dst_dims)
      return make_error("residual Z");
    Operand o = make_operand(init, 3, 0, dst_dims);
    o.arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(po.len()) | DNNL_ARG_SRC_1;
    po.append_binary(dnnl::algorithm::binary_add, o.md);
    operands.push_back(std::move(o));
  }
  ops.without_activation = user_scratchpad_attr();
  ops.without_activation.set_post_ops(po);  // a copy of the list so far
  TRY(std::optional<Activation> act, read_activation(init));
  if (act) append_activation(po, *act);
  if (act) ops.exact = act->exact;
  return Status::ok();
}

bool inputs_ok(const KernelInit& init, size_t first_optional) {
  if (!all_plain(init) || init.in_types.size() < 2 || init.out_types.size() != 1) return false;
  if (!is_static_f32(init.in_types[0]) || !is_static_f32(init.in_types[1]) ||
      !is_static_f32(init.out_types[0]))
    return false;
  for (size_t i = first_optional; i < init.in_types.size(); ++i)
    if (init.in_types[i] && !is_static_f32(init.in_types[i])) return false;
  return true;
}

Expected<KernelPtr> make_matmul(const ContextPtr& ctx, const KernelInit& init, bool fused) {
  const std::string impl = fused ? "onednn:fused_matmul" : "onednn:matmul";
  if (!inputs_ok(init, 2)) return decline(init, impl, "needs plain static f32 operands");
  memory::dims a = dims_of(*init.in_types[0]), b = dims_of(*init.in_types[1]);
  if (init.in_types[0]->rank() == 1) a = {1, a[0]};
  if (init.in_types[1]->rank() == 1) b = {b[0], 1};
  const size_t rank = std::max(a.size(), b.size());
  a = pad_front(a, rank);
  b = pad_front(b, rank);
  memory::dims y(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return decline(init, impl, "batch axes do not broadcast");
    y[i] = std::max(a[i], b[i]);
  }
  y[rank - 2] = a[rank - 2];
  y[rank - 1] = b[rank - 1];
  bool b_flat = true;  // batch axes of B all 1: prepackable as one matrix
  for (size_t i = 0; i + 2 < rank; ++i) b_flat &= b[i] == 1;
  if (b_flat && rank > 2) {
    // One matrix B: A's batch axes fold into M ([197, 1, 768] x [768, 2304] is one 197-row
    // GEMM, not 197 one-row ones: 10.9 to 2.5 ms in ViT-B/16's attention projections).
    memory::dim rows = 1;
    for (size_t i = 0; i + 1 < rank; ++i) rows *= a[i];
    a = {rows, a[rank - 1]};
    b = {b[rank - 2], b[rank - 1]};
    y = {rows, y[rank - 1]};
  }
  std::vector<Operand> operands;
  PostOps ops;
  if (fused) {
    if (input_type(init, 2)) operands.push_back(make_operand(init, 2, DNNL_ARG_BIAS, y));
    Status st = fused_tail(init, y, ops, operands);
    if (!st) return decline(init, impl, st.error().message);
  }
  auto k = std::make_unique<MatMulKernel>(ctx, impl, init.node.name);
  const Tensor* b_const = b_flat ? constant_at(init, 1) : nullptr;
  Status st = k->build(plain_md(a), plain_md(b), plain_md(y), b_const, ops, std::move(operands), init.bf16);
  if (!st) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(k));
}

Expected<KernelPtr> make_gemm(const ContextPtr& ctx, const KernelInit& init, bool fused) {
  const std::string impl = fused ? "onednn:fused_gemm" : "onednn:gemm";
  if (!inputs_ok(init, 2) || init.in_types[0]->rank() != 2 || init.in_types[1]->rank() != 2)
    return decline(init, impl, "needs plain static f32 2-D operands");
  const bool ta = attr_int(init, "transA", 0) != 0, tb = attr_int(init, "transB", 0) != 0;
  const float alpha = static_cast<float>(attr_float(init, "alpha", 1.0));
  const float beta = static_cast<float>(attr_float(init, "beta", 1.0));
  const memory::dims a = dims_of(*init.in_types[0]), b = dims_of(*init.in_types[1]);
  const memory::dim m = ta ? a[1] : a[0], k = ta ? a[0] : a[1], n = tb ? b[0] : b[1];
  // op(A) and op(B) as strided views of the row-major buffers.
  const memory::desc src(memory::dims{m, k}, memory::data_type::f32,
                         ta ? memory::dims{1, m} : memory::dims{k, 1});
  const memory::desc wei(memory::dims{k, n}, memory::data_type::f32,
                         tb ? memory::dims{1, k} : memory::dims{n, 1});
  const memory::dims y = {m, n};
  std::vector<Operand> operands;
  PostOps ops;
  dnnl::post_ops& po = ops.all;
  const bool has_c = input_type(init, 2) != nullptr && beta != 0.f;
  if (has_c && alpha == 1.f && beta == 1.f) {
    operands.push_back(make_operand(init, 2, DNNL_ARG_BIAS, y));
  } else if (has_c) {
    // alpha AB + (beta C): C is prescaled once. (oneDNN 2.6 gives wrong results for an
    // eltwise_linear after a binary post-op, so beta cannot be applied after the add.)
    const Tensor* c_value = constant_at(init, 2);
    if (!c_value) return decline(init, impl, "C must be constant unless alpha = beta = 1");
    if (alpha != 1.f) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, alpha, 0.f);
    Operand c = make_operand(init, 2, DNNL_ARG_ATTR_MULTIPLE_POST_OP(po.len()) | DNNL_ARG_SRC_1, y);
    c.constant = c.constant.clone();  // never scale the graph's own tensor
    for (int64_t i = 0; i < c.constant.numel(); ++i) c.constant.data<float>()[i] *= beta;
    po.append_binary(dnnl::algorithm::binary_add, c.md);
    operands.push_back(std::move(c));
  } else if (alpha != 1.f) {
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, alpha, 0.f);
  }
  if (fused) {
    Status st = fused_tail(init, y, ops, operands);
    if (!st) return decline(init, impl, st.error().message);
  }
  auto kern = std::make_unique<MatMulKernel>(ctx, impl, init.node.name);
  Status st = kern->build(src, wei, plain_md(y), constant_at(init, 1), ops, std::move(operands), init.bf16);
  if (!st) return decline(init, impl, st.error().message);
  return KernelPtr(std::move(kern));
}

}  // namespace

void register_onednn_matmul(KernelRegistry& registry, const ContextPtr& ctx) {
  registry.add("MatMul", "onednn:matmul", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_matmul(ctx, i, false); });
  registry.add("FusedMatMul", "onednn:fused_matmul", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_matmul(ctx, i, true); });
  registry.add("Gemm", "onednn:gemm", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_gemm(ctx, i, false); });
  registry.add("FusedGemm", "onednn:fused_gemm", kOneDnnPriority,
               [ctx](const KernelInit& i) { return make_gemm(ctx, i, true); });
}

}  // namespace tessera::cpu
