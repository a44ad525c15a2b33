// If branches and Loop bodies compiled through the six stages (nested.h says why and how).
#include "engine/stages/nested.h"

#include "engine/stages/session.h"

namespace tessera::stages {

struct NestedGraphs::Entry {
  std::unique_ptr<Session> session;    // null: runs on the reference interpreter
  std::vector<std::string> input_names;  // the nested graph's own inputs, in order
  std::vector<std::string> captured;     // bound by name from the enclosing scope
  std::set<std::vector<Shape>> shapes;   // compiled so far
  std::string why_reference;
  std::mutex mu;                         // one run at a time per nested graph
};

NestedGraphs::NestedGraphs(const ops::OpRegistry& registry, int threads) : registry_(registry), threads_(threads) {}
NestedGraphs::~NestedGraphs() = default;

namespace {

// The nested graph as a graph of its own: captures (and what its own nested graphs capture from
// further out) become inputs, or params for the enclosing graph's weights. Empty when it cannot
// be (an unnamed or duplicate input name), with the reason in `why`.
ir::Graph standalone(const ir::Graph& sub, const runtime::NamedTensors& scope, const std::set<std::string>& constants,
                     std::vector<std::string>& input_names, std::vector<std::string>& captured, std::string& why) {
  ir::Graph g = sub;
  std::set<std::string> names;
  for (ir::ValueId in : g.inputs()) {
    const std::string& name = g.value(in).name;
    if (name.empty() || !names.insert(name).second) {
      why = "its inputs are not uniquely named";
      return ir::Graph();
    }
    input_names.push_back(name);
  }
  auto bind = [&](ir::ValueId c, const std::string& name) {
    auto it = scope.find(name);
    if (constants.count(name) && it != scope.end() && it->second.is_tensor()) {
      g.capture_to_param(c, it->second);
    } else {
      g.capture_to_input(c);
      captured.push_back(name);
    }
  };
  for (ir::ValueId c : std::vector<ir::ValueId>(g.captures())) bind(c, g.value(c).name);
  // Names the nested graphs of `sub` capture from outside `sub`: inputs (or params) of the new graph.
  std::vector<std::string> deeper;
  for (ir::NodeId id : g.node_ids()) runtime::nested_captures(g.node(id), deeper);
  for (const std::string& name : deeper) {
    if (g.find_value(name)) continue;
    auto it = scope.find(name);
    if (it == scope.end()) {
      why = "a nested graph captures '" + name + "', which the enclosing scope does not hold";
      return ir::Graph();
    }
    if (constants.count(name) && it->second.is_tensor()) {
      g.add_param(name, it->second);
    } else {
      g.add_input(name, ir::TensorType::of_value(it->second));
      captured.push_back(name);
    }
  }
  return g;
}

}  // namespace

Expected<std::vector<Tensor>> NestedGraphs::run(const ir::Graph& sub, const std::vector<Tensor>& inputs,
                                                const runtime::NamedTensors& scope, const std::set<std::string>& constants) {
  Entry* e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Entry>& slot = entries_[&sub];
    if (!slot) {
      slot = std::make_unique<Entry>();
      ir::Graph g = standalone(sub, scope, constants, slot->input_names, slot->captured, slot->why_reference);
      if (slot->why_reference.empty()) {
        SessionOptions options;
        options.threads = threads_;
        options.device = kHostDevice;
        // One program per shape, as compiled below (kMaxShapes caps them): the Session's own
        // switch to a symbolic program would compile the same shapes a second time.
        options.sizes_before_dynamic = 0;
        slot->session = std::make_unique<Session>(std::move(g), registry_, options);
      }
    }
    e = slot.get();
  }
  std::lock_guard<std::mutex> lock(e->mu);
  bool compiled = e->session != nullptr && inputs.size() == e->input_names.size();
  runtime::Feeds feeds;
  std::vector<Shape> key;
  if (compiled) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      feeds.emplace(e->input_names[i], inputs[i]);
      key.push_back(inputs[i].is_tensor() ? inputs[i].shape() : Shape{});
    }
    for (const std::string& name : e->captured) {
      auto it = scope.find(name);
      if (it == scope.end()) {
        compiled = false;
        break;
      }
      feeds.emplace(name, it->second);
      key.push_back(it->second.is_tensor() ? it->second.shape() : Shape{});
    }
  }
  if (compiled && !e->shapes.count(key)) {
    if (e->shapes.size() >= kMaxShapes) {
      compiled = false;
    } else {
      Expected<Program*> p = e->session->compile([&] {
        InputShapes shapes;
        for (const auto& [name, t] : feeds)
          if (t.is_tensor()) shapes[name] = t.shape();
        return shapes;
      }());
      if (!p.has_value()) {
        // A graph the stages refuse (a type only the interpreter resolves): the interpreter runs it.
        e->why_reference = p.error().message;
        e->session.reset();
        compiled = false;
      } else {
        e->shapes.insert(key);
      }
    }
  }
  if (compiled) return e->session->run(feeds);
  return runtime::run_nested_reference(sub, registry_, inputs, scope);
}

std::vector<std::string> NestedGraphs::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [g, e] : entries_) {
    if (e->session)
      out.push_back("'" + g->name() + "': compiled for " + std::to_string(e->shapes.size()) + " shape(s)");
    else
      out.push_back("'" + g->name() + "': reference interpreter (" + e->why_reference + ")");
  }
  return out;
}

}  // namespace tessera::stages
