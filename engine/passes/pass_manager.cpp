// PassRegistry, the pipeline parser and the PassManager's run loop.
#include "engine/passes/pass_manager.h"

#include <algorithm>
#include <cctype>

#include "engine/observe/sinks.h"

namespace tessera::passes {

void PassRegistry::add(std::string name, PassFactory factory) {
  for (auto& [n, f] : factories_)
    if (n == name) {
      f = std::move(factory);
      return;
    }
  factories_.emplace_back(std::move(name), std::move(factory));
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

Expected<std::unique_ptr<Pass>> PassRegistry::create(const std::string& name) const {
  for (const auto& [n, f] : factories_)
    if (n == name) return f();
  std::string known;
  for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
  return make_error("unknown pass '" + name + "' (known: " + known + ")");
}

// Recursive descent over the pipeline grammar (pass_manager.h); columns count from 1.
class PipelineParser {
 public:
  PipelineParser(std::string_view text, const PassRegistry& registry) : text_(text), registry_(registry) {}

  Expected<std::vector<PassManager::Item>> parse_all() {
    TRY(std::vector<PassManager::Item> items, pipeline());
    skip_space();
    if (pos_ < text_.size()) return error(std::string("unexpected '") + text_[pos_] + "'");
    return items;
  }

 private:
  Expected<std::vector<PassManager::Item>> pipeline() {
    std::vector<PassManager::Item> items;
    do {
      if (!items.empty()) ++pos_;  // the ','
      TRY(PassManager::Item item, one());
      items.push_back(std::move(item));
      skip_space();
    } while (pos_ < text_.size() && text_[pos_] == ',');
    return items;
  }

  Expected<PassManager::Item> one() {
    skip_space();
    const size_t start = pos_;
    std::string name;
    while (pos_ < text_.size() && (std::islower(static_cast<unsigned char>(text_[pos_])) ||
                                   std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-'))
      name += text_[pos_++];
    if (name.empty())
      return error(pos_ < text_.size() ? std::string("expected a pass name, got '") + text_[pos_] + "'"
                                       : std::string("expected a pass name at the end of the pipeline"));
    PassManager::Item item;
    skip_space();
    if (name == "fixpoint" && pos_ < text_.size() && text_[pos_] == '(') {
      ++pos_;
      TRY(item.group, pipeline());
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ')') return error("expected ')' closing fixpoint(");
      ++pos_;
      return item;
    }
    auto pass = registry_.create(name);
    if (!pass) return error_at(start, pass.error().message);
    item.pass = std::move(*pass);
    return item;
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Error error(const std::string& msg) const { return error_at(pos_, msg); }
  Error error_at(size_t at, const std::string& msg) const {
    return make_error(msg, "pipeline:1:" + std::to_string(at + 1));
  }

  std::string_view text_;
  const PassRegistry& registry_;
  size_t pos_ = 0;
};

Expected<PassManager> PassManager::parse(std::string_view pipeline, const PassRegistry& registry) {
  PipelineParser parser(pipeline, registry);
  TRY(std::vector<Item> items, parser.parse_all());
  PassManager pm;
  pm.items_ = std::move(items);
  return pm;
}

std::string PassManager::items_text(const std::vector<Item>& items) {
  std::string s;
  for (const Item& item : items) {
    if (!s.empty()) s += ",";
    s += item.pass ? item.pass->name() : "fixpoint(" + items_text(item.group) + ")";
  }
  return s;
}

std::string PassManager::pipeline_text() const { return items_text(items_); }

Expected<bool> PassManager::run(ir::Graph& graph, PassContext& ctx) {
  for (auto& inst : instrumentations_) inst->run_begin(ctx);
  return run_items(items_, graph, ctx);
}

Expected<bool> PassManager::run_items(std::vector<Item>& items, ir::Graph& graph, PassContext& ctx) {
  bool any = false;
  for (Item& item : items) {
    if (item.pass) {
      TRY(bool changed, run_pass(*item.pass, graph, ctx));
      any |= changed;
      continue;
    }
    bool converged = false;
    for (int round = 0; round < kMaxFixpointRounds && !converged; ++round) {
      TRY(bool changed, run_items(item.group, graph, ctx));
      any |= changed;
      converged = !changed;
    }
    if (!converged)
      ctx.diagnostics.push_back("fixpoint(" + items_text(item.group) + ") still changed the graph after " +
                                std::to_string(kMaxFixpointRounds) + " rounds; stopped");
  }
  return any;
}

Expected<bool> PassManager::run_pass(Pass& pass, ir::Graph& graph, PassContext& ctx) {
  for (auto& inst : instrumentations_) inst->before_pass(pass, graph);
  const int64_t start = observe::now_ns();
  Expected<bool> changed = make_error("unreachable");
  try {
    changed = pass.run(graph, ctx);
  } catch (const std::bad_alloc&) {
    changed = make_error("out of memory");
  }
  const int64_t duration = observe::now_ns() - start;
  if (!changed) {
    Error e = changed.error();
    e.message = "pass '" + pass.name() + "': " + e.message;
    return e;
  }
  for (auto it = instrumentations_.rbegin(); it != instrumentations_.rend(); ++it)
    RETURN_IF_ERROR((*it)->after_pass(pass, graph, *changed, duration));
  return *changed;
}

}  // namespace tessera::passes
