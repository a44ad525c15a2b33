// Text ops over string tensors: StringNormalizer (stopwords and case) and TfIdfVectorizer (n-gram
// counts over integer or string tokens).
#include <clocale>
#include <cwctype>
#include <locale.h>
#include <algorithm>
#include <map>
#include <string>

#include "engine/core/strings.h"
#include "engine/ops/helpers.h"
#include "engine/ops/op_def.h"
#include "engine/ops/tensor_ops_internal.h"

namespace tessera::ops {
namespace {

using ir::Dim;

// ---- StringNormalizer ----

// Unicode case mapping of one code point by the C library's C.UTF-8 locale (a private locale
// object: the process's global locale is not touched).
char32_t change_case(char32_t c, bool upper) {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (c < 0x80 || loc == static_cast<locale_t>(nullptr)) {
    if (upper && c >= 'a' && c <= 'z') return c - 32;
    if (!upper && c >= 'A' && c <= 'Z') return c + 32;
    return c;
  }
  const wint_t w = static_cast<wint_t>(c);
  return static_cast<char32_t>(upper ? towupper_l(w, loc) : towlower_l(w, loc));
}

std::string with_case(const std::string& s, bool upper) {
  std::u32string cps = utf8_to_code_points(s);
  for (char32_t& c : cps) c = change_case(c, upper);
  return code_points_to_utf8(cps);
}

Expected<std::vector<TensorType>> infer_normalizer(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const std::string& action = ctx.attrs().s("case_change_action");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return node_error(ctx.node, "attribute 'case_change_action' is '" + action + "'; expected NONE, LOWER or UPPER");
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(TensorType::unranked(DType::kString));
  if (x.rank() == 1) return one(TensorType(DType::kString, {Dim::unknown()}));
  if (x.rank() == 2 && !(x.dims[0].is_known() && x.dims[0].size != 1))
    return one(TensorType(DType::kString, {Dim::known(1), Dim::unknown()}));
  return node_error(ctx.node, "input must be [C] or [1, C], got " + x.to_string());
}

Status normalizer_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::kString) return node_error(ctx.node, "input must be a string tensor");
  if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1)))
    return node_error(ctx.node, "input must be [C] or [1, C], got " + shape_to_string(x.shape()));
  const AttrReader a = ctx.attrs();
  const std::string& action = a.s("case_change_action");
  const bool sensitive = a.i("is_case_sensitive") != 0;
  const std::string& locale = a.s("locale");
  if (!locale.empty() && locale != "en_US" && locale != "en_US.UTF-8" && locale != "C" && locale != "C.UTF-8")
    return node_error(ctx.node, "locale '" + locale + "' is not supported (Tessera maps case by Unicode's C.UTF-8 rules)");
  auto checked = [&](const std::string& s, const std::string& what) -> Status {
    size_t bad = 0;
    if (!is_valid_utf8(s, &bad))
      return node_error(ctx.node, what + " is not valid UTF-8 (bad byte at offset " + std::to_string(bad) + ")");
    return Status::ok();
  };
  std::vector<std::string> stop;
  const Attribute* sw = a.get("stopwords");
  if (sw && sw->kind() == AttrKind::kStrings)
    for (const std::string& w : sw->strings()) {
      RETURN_IF_ERROR(checked(w, "stopword '" + w.substr(0, 40) + "'"));
      stop.push_back(sensitive ? w : with_case(w, false));
    }
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string& s = x.string_at(i);
    RETURN_IF_ERROR(checked(s, "element " + std::to_string(i)));
    const std::string key = sensitive ? s : with_case(s, false);
    if (std::find(stop.begin(), stop.end(), key) != stop.end()) continue;
    kept.push_back(action == "NONE" ? s : with_case(s, action == "UPPER"));
  }
  if (kept.empty()) kept.push_back("");  // ONNX: an empty result is one empty string
  const int64_t c = static_cast<int64_t>(kept.size());
  ctx.outputs = {Tensor::from_strings(x.rank() == 1 ? Shape{c} : Shape{1, c}, kept)};
  return Status::ok();
}

// ---- TfIdfVectorizer ----

struct NgramPool {
  std::map<std::vector<int64_t>, int64_t> index;  // gram -> output column
  int64_t width = 0;                              // output columns
  int64_t min_n = 1, max_n = 1;
  int64_t longest = 0;  // the longest n-gram the pool holds
};

// The pool of n-grams from the attributes: ngram_counts[k] is where the (k+1)-grams start in the
// pool; ngram_indexes maps each gram, in pool order, to its output column.
Expected<NgramPool> read_pool(const ir::Node& node, const AttrReader& a) {
  NgramPool p;
  p.min_n = a.i("min_gram_length");
  p.max_n = a.i("max_gram_length");
  if (p.min_n < 1 || p.max_n < p.min_n)
    return node_error(node, "gram lengths [" + std::to_string(p.min_n) + ", " + std::to_string(p.max_n) +
                                "] must satisfy 1 <= min_gram_length <= max_gram_length");
  if (a.i("max_skip_count") < 0) return node_error(node, "max_skip_count must not be negative");
  std::vector<int64_t> pool;
  const Attribute* ints = a.get("pool_int64s");
  const Attribute* strs = a.get("pool_strings");
  if (ints && ints->kind() == AttrKind::kInts && !ints->ints().empty()) pool = ints->ints();
  if (strs && strs->kind() == AttrKind::kStrings && !strs->strings().empty()) {
    if (!pool.empty()) return node_error(node, "give pool_int64s or pool_strings, not both");
    for (const std::string& s : strs->strings()) pool.push_back(static_cast<int64_t>(intern_string(s)));
  }
  const std::vector<int64_t>& counts = a.ints("ngram_counts");
  const std::vector<int64_t>& indexes = a.ints("ngram_indexes");
  int64_t gram = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = static_cast<int64_t>(k) + 1;
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0)
      return node_error(node, "ngram_counts[" + std::to_string(k) + "] = " + std::to_string(begin) +
                                  " does not start a whole section of " + std::to_string(n) + "-grams in a pool of " +
                                  std::to_string(pool.size()));
    for (int64_t at = begin; at < end; at += n, ++gram) {
      if (gram >= static_cast<int64_t>(indexes.size()))
        return node_error(node, "ngram_indexes has " + std::to_string(indexes.size()) + " entries for more grams");
      const int64_t col = indexes[static_cast<size_t>(gram)];
      if (col < 0 || col > (int64_t{1} << 24)) return node_error(node, "ngram_indexes holds " + std::to_string(col));
      p.index[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n)] = col;
      p.width = std::max(p.width, col + 1);
      p.longest = n;
    }
  }
  return p;
}

Expected<std::vector<TensorType>> infer_tfidf(const InferContext& ctx) {
  RETURN_IF_ERROR(check_allowed_type(ctx));
  const std::string& mode = ctx.attrs().s("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return node_error(ctx.node, "attribute 'mode' is '" + mode + "'; expected TF, IDF or TFIDF");
  TRY(NgramPool p, read_pool(ctx.node, ctx.attrs()));
  const TensorType& x = *ctx.inputs[0];
  if (!x.rank_known) return one(TensorType::unranked(DType::kF32));
  if (x.rank() == 1) return one(TensorType(DType::kF32, {Dim::known(p.width)}));
  if (x.rank() == 2) return one(TensorType(DType::kF32, {x.dims[0], Dim::known(p.width)}));
  return node_error(ctx.node, "input must be [C] or [N, C], got " + x.to_string());
}

Status tfidf_kernel(KernelContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() != 1 && x.rank() != 2) return node_error(ctx.node, "input must be [C] or [N, C], got " + shape_to_string(x.shape()));
  const AttrReader a = ctx.attrs();
  TRY(NgramPool p, read_pool(ctx.node, a));
  const std::string& mode = a.s("mode");
  const int64_t max_skip = a.i("max_skip_count");
  std::vector<double> weights;
  if (const Attribute* w = a.get("weights"); w && w->kind() == AttrKind::kFloats) weights = w->floats();
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < p.width)
    return node_error(ctx.node, "weights has " + std::to_string(weights.size()) + " entries for " + std::to_string(p.width) + " columns");
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t len = x.rank() == 2 ? x.dim(1) : x.dim(0);
  std::vector<int64_t> tokens(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i)
    tokens[static_cast<size_t>(i)] =
        x.dtype() == DType::kString ? static_cast<int64_t>(x.data<uint64_t>()[i]) : static_cast<int64_t>(x.get(i));
  TRY(Tensor y, Tensor::create(DType::kF32, x.rank() == 2 ? Shape{rows, p.width} : Shape{p.width}));
  float* out = y.data<float>();
  // Grams longer than the pool's longest or the row count nothing; nor do skips that put an
  // n-gram's items past the row's end (this bounds the work by the row, whatever the attributes).
  const int64_t max_n = std::min({p.max_n, p.longest, len});
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = tokens.data() + r * len;
    float* counts = out + r * p.width;
    for (int64_t n = p.min_n; n <= max_n; ++n)
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : std::min(max_skip, len)); ++skip)  // unigrams once, not per skip
        for (int64_t i = 0; i + (n - 1) * (skip + 1) < len; ++i) {
          gram.assign(static_cast<size_t>(n), 0);
          for (int64_t k = 0; k < n; ++k) gram[static_cast<size_t>(k)] = row[i + k * (skip + 1)];
          auto it = p.index.find(gram);
          if (it != p.index.end()) counts[it->second] += 1;
        }
    for (int64_t c = 0; c < p.width; ++c) {
      const float w = weights.empty() ? 1.f : static_cast<float>(weights[static_cast<size_t>(c)]);
      if (mode == "IDF") counts[c] = counts[c] > 0 ? w : 0.f;
      else if (mode == "TFIDF") counts[c] *= w;
    }
  }
  ctx.outputs = {std::move(y)};
  return Status::ok();
}

}  // namespace

void register_text_ops(OpRegistry& reg) {
  {
    OpDef d("StringNormalizer", "text",
            "Removes the stopwords from a [C] or [1, C] string tensor (case-insensitively unless "
            "is_case_sensitive), then changes the case of what is left (LOWER, UPPER or NONE; "
            "Unicode rules). An empty result is one empty string. Invalid UTF-8 is an error.");
    d.input("X", "string tensor [C] or [1, C]").output("Y", "string tensor [C'] or [1, C']");
    d.attr("case_change_action", AttrKind::kString, Attribute(std::string("NONE")), "NONE, LOWER or UPPER");
    d.attr("is_case_sensitive", AttrKind::kInt, Attribute(0), "1: stopwords match exactly");
    d.attr("locale", AttrKind::kString, Attribute(std::string("")), "empty, en_US or C (Unicode case mapping)");
    d.attr("stopwords", AttrKind::kStrings, std::nullopt, "words to remove");
    d.allowed_types = {DType::kString};
    d.infer = infer_normalizer;
    d.reference = normalizer_kernel;
    d.no_gradient_reason = "strings have no gradient";
    reg.add(std::move(d));
  }
  {
    OpDef d("TfIdfVectorizer", "text",
            "Counts the pool's n-grams in each row of integer or string tokens (n from "
            "min_gram_length to max_gram_length; n >= 2 grams also with up to max_skip_count "
            "tokens skipped between items) into the columns ngram_indexes names; mode TF keeps "
            "the counts, IDF gives weights where a count is positive, TFIDF multiplies.");
    d.input("X", "tokens [C] or [N, C]: i32, i64 or string").output("Y", "f32 [W] or [N, W], W = max(ngram_indexes) + 1");
    d.required_attr("max_gram_length", AttrKind::kInt, "longest n-gram");
    d.required_attr("min_gram_length", AttrKind::kInt, "shortest n-gram");
    d.required_attr("max_skip_count", AttrKind::kInt, "most tokens skipped between the items of an n-gram");
    d.required_attr("mode", AttrKind::kString, "TF, IDF or TFIDF");
    d.required_attr("ngram_counts", AttrKind::kInts, "start of each n-gram length's section in the pool");
    d.required_attr("ngram_indexes", AttrKind::kInts, "output column of each pool n-gram");
    d.attr("pool_int64s", AttrKind::kInts, std::nullopt, "the n-grams, integer tokens");
    d.attr("pool_strings", AttrKind::kStrings, std::nullopt, "the n-grams, string tokens");
    d.attr("weights", AttrKind::kFloats, std::nullopt, "per column weights for IDF and TFIDF");
    d.allowed_types = {DType::kI32, DType::kI64, DType::kString};
    d.infer = infer_tfidf;
    d.reference = tfidf_kernel;
    d.no_gradient_reason = "counts have no gradient";
    reg.add(std::move(d));
  }
}

}  // namespace tessera::ops
