// `tessera generate`: token-by-token generation with a decoder exported with a KV cache.
//
// The model is what generation tools export: an i64 input `input_ids` [batch 1, sequence], per
// layer a past key and value [1, heads, past_sequence, head_size] (float inputs of rank 4, in
// order), optionally `attention_mask` [1, past + sequence] (ones) and `position_ids` [1, sequence]
// (past .. past + sequence - 1); the first output is the logits [1, sequence, vocabulary] and the
// others are the presents [1, heads, past + sequence, head_size], one per past input in the same
// order. The loop feeds the prompt with an empty cache, then each chosen token with the presents
// of the step before: the presents are the program's own output buffers, fed back without a copy
// (the Session keeps the growing past dimension symbolic from its second size, stages/session.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "cli/commands.h"

#include <nlohmann/json.hpp>
#include "engine/observe/sinks.h"
#include "engine/stages/session.h"
#include "formats/npy.h"

namespace tessera::cli {
namespace {

struct Layout {
  std::string ids, mask, positions;      // input names ("" when absent)
  std::vector<std::string> past, present;
  std::vector<Shape> past_shape;         // with 0 in the past dimension
  std::string logits;
};

// Reads the decoder's interface; an error names what does not fit.
Expected<Layout> read_layout(const ir::Graph& g) {
  Layout l;
  bool tokens = false;
  for (ir::ValueId v : g.inputs()) {
    const ir::TensorType& t = g.value(v).type;
    tokens |= g.value(v).name == "input_ids" || (t.dtype == DType::kI64 && t.rank_known && t.rank() == 2);
  }
  if (!tokens) return make_error("no token input (i64 [1, sequence], named input_ids): not a decoder");
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    const ir::TensorType& t = in.type;
    if (in.name == "input_ids" || (l.ids.empty() && t.dtype == DType::kI64 && t.rank_known && t.rank() == 2 &&
                                   in.name.find("mask") == std::string::npos && in.name.find("position") == std::string::npos)) {
      if (!l.ids.empty() && in.name != "input_ids") return make_error("two token inputs: '" + l.ids + "' and '" + in.name + "'");
      if (t.dtype != DType::kI64 || !t.rank_known || t.rank() != 2)
        return make_error("input '" + in.name + "' must be i64 [1, sequence], not " + t.to_string());
      l.ids = in.name;
    } else if (in.name.find("mask") != std::string::npos && t.dtype == DType::kI64) {
      l.mask = in.name;
    } else if (in.name.find("position") != std::string::npos && t.dtype == DType::kI64) {
      l.positions = in.name;
    } else if (is_float(t.dtype) && t.rank_known && t.rank() == 4) {
      if (!t.dims[1].is_known() || !t.dims[3].is_known())
        return make_error("past input '" + in.name + "' " + t.to_string() + " must have known heads and head size");
      if (t.dims[2].is_known() && t.dims[2].size != 0)
        return make_error("past input '" + in.name + "' " + t.to_string() + " must have a symbolic past dimension");
      l.past.push_back(in.name);
      l.past_shape.push_back({1, t.dims[1].size, 0, t.dims[3].size});
    } else {
      return make_error("input '" + in.name + "' " + t.to_string() +
                        " is neither the tokens, an attention mask, position ids nor a past key or value");
    }
  }
  if (l.ids.empty()) return make_error("no token input (i64 [1, sequence], named input_ids)");
  if (l.past.empty()) return make_error("no past key/value inputs (float [1, heads, past, head size]): not a decoder with a KV cache");
  if (g.outputs().size() != l.past.size() + 1)
    return make_error("expected the logits and " + std::to_string(l.past.size()) + " presents (one per past input), found " +
                      std::to_string(g.outputs().size()) + " outputs");
  l.logits = g.value(g.outputs()[0]).name;
  for (size_t i = 1; i < g.outputs().size(); ++i) l.present.push_back(g.value(g.outputs()[i]).name);
  return l;
}

Expected<std::vector<int64_t>> parse_prompt(const GenerateOptions& o) {
  std::vector<int64_t> ids;
  if (!o.prompt_file.empty()) {
    TRY(Tensor t, formats::read_npy(o.prompt_file));
    if (t.dtype() != DType::kI64 && t.dtype() != DType::kI32)
      return make_error("the prompt must hold integer token ids, not " + std::string(dtype_name(t.dtype())), o.prompt_file);
    for (int64_t i = 0; i < t.numel(); ++i) ids.push_back(static_cast<int64_t>(t.get(i)));
  } else {
    std::stringstream ss(o.prompt);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      const long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0') return make_error("--prompt: '" + item + "' is not a token id (comma-separated integers)");
      ids.push_back(v);
    }
  }
  if (ids.empty()) return make_error("the prompt is empty: give --prompt ID,ID,... or --prompt-file FILE.npy");
  return ids;
}

}  // namespace

int run_generate(const GenerateOptions& o) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = load_typed(o.file, reg);
  if (!g) return fail(g.error());
  auto prompt = parse_prompt(o);
  if (!prompt) return fail(prompt.error());
  auto layout = read_layout(*g);
  if (!layout) return fail(layout.error().within(o.file));
  stages::SessionOptions so;
  so.threads = o.threads > 0 ? o.threads : default_threads();
  so.device = o.device;
  so.sizes_before_dynamic = 1;  // the past length changes every token: symbolic from its second size
  stages::Session session(*g, reg, so);

  const Layout& l = *layout;
  std::vector<Tensor> past;
  for (const Shape& s : l.past_shape) past.push_back(Tensor(DType::kF32, s));
  std::vector<int64_t> tokens = *prompt, generated;
  std::mt19937_64 rng(o.seed);
  std::vector<double> step_ms;
  double prompt_ms = 0;
  int64_t vocab = 0;
  for (int step = 0; step < o.tokens; ++step) {
    const std::vector<int64_t> feed_ids = step == 0 ? *prompt : std::vector<int64_t>{tokens.back()};
    const int64_t s = static_cast<int64_t>(feed_ids.size()), p = past.empty() ? 0 : past[0].dim(2);
    runtime::Feeds feeds;
    feeds.emplace(l.ids, Tensor::from_vector<int64_t>({1, s}, feed_ids));
    if (!l.mask.empty()) feeds.emplace(l.mask, Tensor::from_vector<int64_t>({1, p + s}, std::vector<int64_t>(static_cast<size_t>(p + s), 1)));
    if (!l.positions.empty()) {
      std::vector<int64_t> pos(static_cast<size_t>(s));
      for (int64_t i = 0; i < s; ++i) pos[static_cast<size_t>(i)] = p + i;
      feeds.emplace(l.positions, Tensor::from_vector<int64_t>({1, s}, pos));
    }
    for (size_t i = 0; i < past.size(); ++i) feeds.emplace(l.past[i], past[i]);
    const int64_t t0 = observe::now_ns();
    auto out = session.run(feeds);
    if (!out) return fail(out.error().within(o.file));
    const double ms = static_cast<double>(observe::now_ns() - t0) / 1e6;
    const Tensor& logits = (*out)[0];
    if (logits.rank() != 3 || logits.dim(0) != 1 || logits.dim(1) != s || logits.dim(2) < 1)
      return fail(make_error("output '" + l.logits + "' must be the logits [1, " + std::to_string(s) + ", vocabulary], got " +
                             shape_to_string(logits.shape()), o.file));
    for (size_t i = 0; i < past.size(); ++i) {
      const Tensor& present = (*out)[i + 1];
      if (present.rank() != 4 || present.dim(2) != p + s || present.dim(1) != past[i].dim(1) || present.dim(3) != past[i].dim(3))
        return fail(make_error("output '" + l.present[i] + "' must be the cache after this step, [1, " + std::to_string(past[i].dim(1)) +
                               ", " + std::to_string(p + s) + ", " + std::to_string(past[i].dim(3)) + "], got " +
                               shape_to_string(present.shape()), o.file));
      past[i] = present;  // the program's own buffer, no copy
    }
    if (step == 0) prompt_ms = ms;  // the prompt's run gives the first new token
    else step_ms.push_back(ms);
    // The next token: the argmax of the last position's logits, or a sample of the top k.
    vocab = logits.dim(2);
    const Tensor last = logits.contiguous();
    const float* row = last.data<float>() + (s - 1) * vocab;
    int64_t next = 0;
    if (o.top_k <= 1) {
      for (int64_t v = 1; v < vocab; ++v)
        if (row[v] > row[next]) next = v;
    } else {
      std::vector<int64_t> idx(static_cast<size_t>(vocab));
      for (int64_t v = 0; v < vocab; ++v) idx[static_cast<size_t>(v)] = v;
      const int64_t k = std::min<int64_t>(o.top_k, vocab);
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
      std::vector<double> w(static_cast<size_t>(k));
      for (int64_t i = 0; i < k; ++i)
        w[static_cast<size_t>(i)] = std::exp((static_cast<double>(row[idx[static_cast<size_t>(i)]]) - row[idx[0]]) / o.temperature);
      std::discrete_distribution<int64_t> pick(w.begin(), w.end());
      next = idx[static_cast<size_t>(pick(rng))];
    }
    tokens.push_back(next);
    generated.push_back(next);
  }
  std::vector<double> sorted = step_ms;
  std::sort(sorted.begin(), sorted.end());
  double total = 0;
  for (double m : step_ms) total += m;
  const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  const double per_second = total > 0 ? static_cast<double>(step_ms.size()) / (total / 1e3) : 0;
  std::string symbols;
  for (const std::string& sym : session.dynamic_symbols()) symbols += (symbols.empty() ? "" : ", ") + sym;
  if (o.json) {
    nlohmann::json j{{"prompt", *prompt},          {"generated", generated},       {"prompt_ms", prompt_ms},
                     {"new_tokens", generated.size()}, {"tokens_per_second", per_second}, {"median_token_ms", median},
                     {"total_ms", total},            {"dynamic_symbols", session.dynamic_symbols()}};
    print_json(j);
    return 0;
  }
  std::cout << "generated " << generated.size() << " token(s) after a prompt of " << prompt->size() << ":";
  for (int64_t t : generated) std::cout << " " << t;
  std::cout << "\n";
  std::printf("prompt %.2f ms (the first new token); %zu more in %.1f ms: %.1f tokens/s (median %.3f ms a token), %d thread(s)\n",
              prompt_ms, step_ms.size(), total, per_second, median, so.threads);
  if (!symbols.empty()) std::printf("kept symbolic after their sizes kept changing: %s\n", symbols.c_str());
  return 0;
}

}  // namespace tessera::cli
