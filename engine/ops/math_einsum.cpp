// Einsum (ONNX opset 12): Einstein summation over any number of inputs, NumPy's rules.
//
// Equation grammar (spaces ignored):  term ("," term)* ("->" term)?,  term := (letter | "...")*
// with at most one "..." per term. A letter repeated inside one term takes the diagonal; letters
// missing from the output are summed over. Without "->" the output is the broadcast "..." dims
// followed by the letters that appear exactly once, in ASCII order. "..." stands for the leading
// dims an input has beyond its letters; those dims broadcast across inputs (NumPy rules); when the
// output has no "..." they are summed over.
//
// The reference kernel walks the full index space of all labels once (product of their sizes),
// multiplying the inputs' elements and accumulating into the output: O(prod of sizes), no
// contraction ordering, which is fine for a semantics reference. Floats accumulate in f64,
// integers in 64 bits (wrapping).
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/math_internal.h"

namespace tessera::ops {
namespace {

constexpr int kLetters = 52;       // label ids 0..51 are a-z, A-Z
constexpr int kEllipsisMark = -1;  // "..." in a parsed term before expansion

int letter_id(char c) {
  return c >= 'a' && c <= 'z' ? c - 'a' : c - 'A' + 26;
}

// Labels per axis of every input and of the output; ids >= kLetters are "..." dims
// (kLetters + j for the j-th of ellipsis_rank broadcast dims, right-aligned).
struct EinsumSpec {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  int ellipsis_rank = 0;
  int num_labels() const { return kLetters + ellipsis_rank; }
};

Expected<std::vector<int>> parse_term(const std::string& term, const ir::Node& node) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      out.push_back(letter_id(c));
    } else if (c == '.' && term.compare(i, 3, "...") == 0 && !ellipsis) {
      out.push_back(kEllipsisMark);
      ellipsis = true;
      i += 2;
    } else {
      return node_error(node, "equation term '" + term + "' has an unexpected '" +
                                  std::string(1, c) + "' (letters and one '...' only)");
    }
  }
  return out;
}

// Parses `equation` for inputs of the given ranks.
Expected<EinsumSpec> parse_einsum(std::string eq, const std::vector<int>& ranks,
                                  const ir::Node& node) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    TRY(std::vector<int> t, parse_term(lhs.substr(start, comma - start), node));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return node_error(node, "equation '" + eq + "' names " + std::to_string(terms.size()) +
                                " inputs, the node has " + std::to_string(ranks.size()));
  EinsumSpec spec;
  std::vector<int> ell(ranks.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const bool has_ell = std::count(terms[k].begin(), terms[k].end(), kEllipsisMark) > 0;
    const int letters = static_cast<int>(terms[k].size()) - (has_ell ? 1 : 0);
    ell[k] = ranks[k] - letters;
    if (ell[k] < 0 || (!has_ell && ell[k] != 0))
      return node_error(node, "input " + std::to_string(k) + " has rank " +
                                  std::to_string(ranks[k]) + " but its term has " +
                                  std::to_string(letters) + " letters" +
                                  (has_ell ? " and '...'" : ""));
    spec.ellipsis_rank = std::max(spec.ellipsis_rank, ell[k]);
  }
  std::vector<int> count(kLetters, 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels;
    for (int l : terms[k]) {
      if (l != kEllipsisMark) {
        labels.push_back(l);
        ++count[static_cast<size_t>(l)];
        continue;
      }
      for (int j = 0; j < ell[k]; ++j) labels.push_back(kLetters + spec.ellipsis_rank - ell[k] + j);
    }
    spec.inputs.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (int j = 0; j < spec.ellipsis_rank; ++j) spec.output.push_back(kLetters + j);
    // Letter ids are not in ASCII order (a-z come first); ASCII puts A-Z first.
    for (int l = 26; l < kLetters; ++l)
      if (count[static_cast<size_t>(l)] == 1) spec.output.push_back(l);
    for (int l = 0; l < 26; ++l)
      if (count[static_cast<size_t>(l)] == 1) spec.output.push_back(l);
    return spec;
  }
  TRY(std::vector<int> out, parse_term(eq.substr(arrow + 2), node));
  std::vector<bool> seen(kLetters, false);
  for (int l : out) {
    if (l == kEllipsisMark) {
      for (int j = 0; j < spec.ellipsis_rank; ++j) spec.output.push_back(kLetters + j);
      continue;
    }
    if (count[static_cast<size_t>(l)] == 0 || seen[static_cast<size_t>(l)])
      return node_error(node, "output label '" + eq.substr(arrow + 2) +
                                  "' repeats a letter or names one no input has");
    seen[static_cast<size_t>(l)] = true;
    spec.output.push_back(l);
  }
  return spec;
}

// Size of every label, or an error when inputs disagree ("..." dims broadcast).
Expected<std::vector<int64_t>> label_sizes(const EinsumSpec& spec,
                                           const std::vector<const Tensor*>& xs,
                                           const ir::Node& node) {
  std::vector<int64_t> size(static_cast<size_t>(spec.num_labels()), -1);
  for (size_t k = 0; k < xs.size(); ++k)
    for (size_t a = 0; a < spec.inputs[k].size(); ++a) {
      const int l = spec.inputs[k][a];
      const int64_t d = xs[k]->dim(static_cast<int>(a));
      int64_t& s = size[static_cast<size_t>(l)];
      if (s < 0 || s == d || (l >= kLetters && s == 1))
        s = d;
      else if (l >= kLetters && d == 1)
        continue;  // broadcast
      else
        return node_error(node, "label sizes disagree: input " + std::to_string(k) + " axis " +
                                    std::to_string(a) + " is " + std::to_string(d) +
                                    ", another input has " + std::to_string(s));
    }
  for (int64_t& s : size)
    if (s < 0) s = 1;  // unused label
  return size;
}

template <class T>
void einsum_typed(const EinsumSpec& spec, const std::vector<Tensor>& xs,
                  const std::vector<int64_t>& size, Tensor& y) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  // Walk order: output labels first, then the summed ones (labels no term uses are left out).
  std::vector<int> order = spec.output;
  for (const std::vector<int>& term : spec.inputs)
    for (int l : term)
      if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  const size_t nl = order.size(), nk = xs.size();
  // stride[k][i]: element stride of input k along walk label i (0 for a broadcast "..." dim);
  // a label repeated in a term adds its strides (the diagonal).
  std::vector<std::vector<int64_t>> stride(nk, std::vector<int64_t>(nl, 0));
  for (size_t k = 0; k < nk; ++k) {
    const std::vector<int64_t> cs = contiguous_strides(xs[k].shape());
    for (size_t a = 0; a < spec.inputs[k].size(); ++a) {
      const size_t i = static_cast<size_t>(
          std::find(order.begin(), order.end(), spec.inputs[k][a]) - order.begin());
      if (xs[k].dim(static_cast<int>(a)) != 1 || size[static_cast<size_t>(order[i])] == 1)
        stride[k][i] += cs[a];
    }
  }
  std::vector<int64_t> dims(nl);
  int64_t total = 1;
  for (size_t i = 0; i < nl; ++i) total *= (dims[i] = size[static_cast<size_t>(order[i])]);
  int64_t inner_total = 1;  // summed index space per output element
  for (size_t i = spec.output.size(); i < nl; ++i) inner_total *= dims[i];
  std::vector<const T*> px(nk);
  for (size_t k = 0; k < nk; ++k) px[k] = xs[k].data<T>();
  T* py = y.data<T>();
  std::vector<int64_t> idx(nl, 0), off(nk, 0);
  Acc acc{0};
  for (int64_t n = 0; n < total; ++n) {
    Acc prod{1};
    for (size_t k = 0; k < nk; ++k) prod *= static_cast<Acc>(px[k][off[k]]);
    acc += prod;
    if ((n + 1) % inner_total == 0) {
      py[n / inner_total] = static_cast<T>(acc);
      acc = Acc{0};
    }
    for (size_t i = nl; i-- > 0;) {  // odometer, last label fastest
      for (size_t k = 0; k < nk; ++k) off[k] += stride[k][i];
      if (++idx[i] < dims[i]) break;
      for (size_t k = 0; k < nk; ++k) off[k] -= stride[k][i] * dims[i];
      idx[i] = 0;
    }
  }
}

Status einsum_kernel(KernelContext& ctx) {
  RETURN_IF_ERROR(check_kernel_type(ctx, ctx.in(0).dtype()));
  std::vector<Tensor> xs;
  std::vector<const Tensor*> ptrs;
  std::vector<int> ranks;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    RETURN_IF_ERROR(check_kernel_dtype(ctx, k, ctx.in(0).dtype()));
    xs.push_back(widen(ctx.in(k)).contiguous());
    ranks.push_back(xs.back().rank());
  }
  for (const Tensor& x : xs) ptrs.push_back(&x);
  TRY(EinsumSpec spec, parse_einsum(ctx.attrs().s("equation"), ranks, ctx.node));
  TRY(std::vector<int64_t> size, label_sizes(spec, ptrs, ctx.node));
  Shape out_shape;
  for (int l : spec.output) out_shape.push_back(size[static_cast<size_t>(l)]);
  TRY(Tensor y, Tensor::create(xs[0].dtype(), out_shape));
  RETURN_IF_ERROR(dispatch_numeric(xs[0].dtype(), ctx.node, [&](auto tag) -> Status {
    einsum_typed<decltype(tag)>(spec, xs, size, y);
    return Status::ok();
  }));
  ctx.outputs = {narrow(y, ctx.in(0).dtype())};
  return Status::ok();
}

Expected<std::vector<TensorType>> infer_einsum(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  RETURN_IF_ERROR(check_same_dtype(ctx, 0, ctx.inputs.size() - 1));
  const DType dt = ctx.inputs[0]->dtype;
  std::vector<int> ranks;
  for (const TensorType* t : ctx.inputs) {
    if (!t->rank_known) return one_type(TensorType::unranked(dt));
    ranks.push_back(t->rank());
  }
  TRY(EinsumSpec spec, parse_einsum(ctx.attrs().s("equation"), ranks, ctx.node));
  std::vector<std::vector<Dim>> dims(static_cast<size_t>(spec.num_labels()));
  for (size_t k = 0; k < ranks.size(); ++k)
    for (size_t a = 0; a < spec.inputs[k].size(); ++a) {
      const int l = spec.inputs[k][a];
      std::vector<Dim>& have = dims[static_cast<size_t>(l)];
      const Dim& d = ctx.inputs[k]->dims[a];
      if (have.empty()) {
        have = {d};
      } else if (l >= kLetters) {
        auto b = broadcast_dims(have, {d});
        if (!b) return node_error(ctx.node, "'...' dims do not broadcast: " + b.error().message);
        have = *b;
      } else if (have[0].is_known() && d.is_known() && have[0].size != d.size) {
        return node_error(ctx.node, "label sizes disagree: input " + std::to_string(k) + " axis " +
                                        std::to_string(a) + " is " + d.to_string() +
                                        ", another input has " + have[0].to_string());
      } else if (!have[0].is_known()) {
        have = {d};
      }
    }
  TensorType out(dt, {});
  for (int l : spec.output)
    out.dims.push_back(dims[static_cast<size_t>(l)].empty() ? Dim::known(1)
                                                            : dims[static_cast<size_t>(l)][0]);
  return one_type(out);
}

// Multiply-adds over the full label space: prod(label sizes) * number of inputs.
double einsum_flops(const InferContext& ctx, const std::vector<TensorType>&) {
  std::vector<int> ranks;
  for (const TensorType* t : ctx.inputs) {
    if (!t->is_static()) return 0;
    ranks.push_back(t->rank());
  }
  auto spec = parse_einsum(ctx.attrs().s("equation"), ranks, ctx.node);
  if (!spec) return 0;
  std::vector<int64_t> size(static_cast<size_t>(spec->num_labels()), 1);
  for (size_t k = 0; k < ranks.size(); ++k)
    for (size_t a = 0; a < spec->inputs[k].size(); ++a) {
      int64_t& s = size[static_cast<size_t>(spec->inputs[k][a])];
      s = std::max(s, ctx.inputs[k]->dims[a].size);
    }
  double f = static_cast<double>(ranks.size());
  for (int64_t s : size) f *= static_cast<double>(s);
  return f;
}

}  // namespace

void register_math_einsum_ops(OpRegistry& registry) {
  OpDef def("Einsum", "math",
            "Einstein summation (NumPy's einsum): 'ij,jk->ik' is a matrix product, 'ii->i' a "
            "diagonal, 'ij->' a total sum, '...ij->...ji' a batched transpose. Without '->' the "
            "output holds the letters that appear once, in ASCII order. All inputs share one "
            "element type.");
  def.input("Inputs", "operands, one per equation term", false, true);
  def.output("Output", "the inputs' element type, one axis per output label");
  def.required_attr("equation", AttrKind::kString,
                    "terms of letters and '...', comma-separated, optionally '->' output");
  def.allowed_types = kNumericTypes;
  def.infer = infer_einsum;
  def.reference = einsum_kernel;
  def.flops = einsum_flops;
  registry.add(std::move(def));
}

}  // namespace tessera::ops
