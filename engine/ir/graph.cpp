// Graph construction, editing and traversal.
#include "engine/ir/graph.h"

#include <algorithm>

#include <queue>

#include "engine/ir/text.h"

namespace tessera::ir {

GraphBox::GraphBox(Graph g) : g_(std::make_unique<Graph>(std::move(g))) {}
GraphBox::GraphBox(const GraphBox& o) : g_(std::make_unique<Graph>(*o.g_)) {}
GraphBox& GraphBox::operator=(const GraphBox& o) {
  if (this != &o) g_ = std::make_unique<Graph>(*o.g_);
  return *this;
}
GraphBox::~GraphBox() = default;

Attribute::Attribute(Graph g) : v_(GraphBox(std::move(g))) {}

bool same_attribute(const Attribute& a, const Attribute& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case AttrKind::kInt: return a.i() == b.i();
    case AttrKind::kFloat: return a.f() == b.f() || (a.f() != a.f() && b.f() != b.f());
    case AttrKind::kString: return a.s() == b.s();
    case AttrKind::kTensor: return a.t().equals(b.t());
    case AttrKind::kGraph: return print_graph(a.g()) == print_graph(b.g());
    case AttrKind::kInts: return a.ints() == b.ints();
    case AttrKind::kFloats: return a.floats() == b.floats();
    case AttrKind::kStrings: return a.strings() == b.strings();
  }
  return false;
}

bool same_attributes(const Attributes& a, const Attributes& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || !same_attribute(ia->second, ib->second)) return false;
  return true;
}

std::string_view attr_kind_name(AttrKind k) {
  static constexpr std::string_view kNames[] = {"int",   "float", "string", "tensor",
                                                "graph", "ints",  "floats", "strings"};
  return kNames[static_cast<int>(k)];
}

ValueId Graph::add_input(std::string name, TensorType type) {
  Value v;
  v.id = value_capacity();
  v.name = std::move(name);
  v.type = std::move(type);
  v.kind = ValueKind::kInput;
  values_.push_back(std::move(v));
  inputs_.push_back(values_.back().id);
  index_name(values_.back().id);
  return values_.back().id;
}

ValueId Graph::add_param(std::string name, Tensor data) {
  Value v;
  v.id = value_capacity();
  v.name = std::move(name);
  v.type = TensorType::of(data.dtype(), data.shape());
  v.kind = ValueKind::kParam;
  values_.push_back(std::move(v));
  params_.push_back(values_.back().id);
  param_data_.emplace(values_.back().id, std::move(data));
  index_name(values_.back().id);
  return values_.back().id;
}

ValueId Graph::add_capture(std::string name, TensorType type) {
  Value v;
  v.id = value_capacity();
  v.name = std::move(name);
  v.type = std::move(type);
  v.kind = ValueKind::kCapture;
  values_.push_back(std::move(v));
  captures_.push_back(values_.back().id);
  index_name(values_.back().id);
  return values_.back().id;
}

NodeId Graph::add_node(std::string op, std::vector<ValueId> inputs, int num_outputs,
                       std::string name, Attributes attrs) {
  Node n;
  n.id = node_capacity();
  n.op = std::move(op);
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (int i = 0; i < num_outputs; ++i) {
    Value v;
    v.id = value_capacity();
    v.kind = ValueKind::kNodeOutput;
    v.producer = n.id;
    v.producer_output = i;
    v.type = TensorType::unranked(DType::kF32);
    values_.push_back(std::move(v));
    n.outputs.push_back(values_.back().id);
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

ValueId Graph::add_node_output(NodeId id, std::string name) {
  Value v;
  v.id = value_capacity();
  v.name = std::move(name);
  v.kind = ValueKind::kNodeOutput;
  v.producer = id;
  v.producer_output = static_cast<int>(nodes_[static_cast<size_t>(id)].outputs.size());
  v.type = TensorType::unranked(DType::kF32);
  values_.push_back(std::move(v));
  nodes_[static_cast<size_t>(id)].outputs.push_back(values_.back().id);
  index_name(values_.back().id);
  return values_.back().id;
}

void Graph::make_input(ValueId param) {
  Value& v = values_[static_cast<size_t>(param)];
  if (v.kind != ValueKind::kParam) return;
  v.kind = ValueKind::kInput;
  params_.erase(std::find(params_.begin(), params_.end(), param));
  param_data_.erase(param);
  inputs_.push_back(param);
}

void Graph::make_param(ValueId input, Tensor data) {
  Value& v = values_[static_cast<size_t>(input)];
  auto it = std::find(inputs_.begin(), inputs_.end(), input);
  if (v.kind != ValueKind::kInput || it == inputs_.end()) return;
  inputs_.erase(it);
  v.kind = ValueKind::kParam;
  v.type = TensorType::of(data.dtype(), data.shape());
  params_.push_back(input);
  param_data_[input] = std::move(data);
}

void Graph::capture_to_input(ValueId capture) {
  auto it = std::find(captures_.begin(), captures_.end(), capture);
  if (it == captures_.end()) return;
  captures_.erase(it);
  values_[static_cast<size_t>(capture)].kind = ValueKind::kInput;
  inputs_.push_back(capture);
}

void Graph::capture_to_param(ValueId capture, Tensor data) {
  auto it = std::find(captures_.begin(), captures_.end(), capture);
  if (it == captures_.end()) return;
  captures_.erase(it);
  Value& v = values_[static_cast<size_t>(capture)];
  v.kind = ValueKind::kParam;
  v.type = TensorType::of(data.dtype(), data.shape());
  params_.push_back(capture);
  param_data_[capture] = std::move(data);
}

Status Graph::define_value(ValueId id, Value v) {
  if (id < 0) return make_error("negative value id %" + std::to_string(id));
  while (value_capacity() <= id) {
    Value dead;
    dead.id = value_capacity();
    dead.alive = false;
    values_.push_back(std::move(dead));
  }
  if (values_[id].alive) return make_error("value %" + std::to_string(id) + " is defined twice");
  v.id = id;
  v.alive = true;
  switch (v.kind) {
    case ValueKind::kInput: inputs_.push_back(id); break;
    case ValueKind::kParam: params_.push_back(id); break;
    case ValueKind::kCapture: captures_.push_back(id); break;
    case ValueKind::kNodeOutput: break;
  }
  values_[id] = std::move(v);
  index_name(id);
  return Status::ok();
}

Status Graph::define_node(NodeId id, Node n) {
  if (id < 0) return make_error("negative node id #" + std::to_string(id));
  while (node_capacity() <= id) {
    Node dead;
    dead.id = node_capacity();
    dead.alive = false;
    nodes_.push_back(std::move(dead));
  }
  if (nodes_[id].alive) return make_error("node #" + std::to_string(id) + " is defined twice");
  n.id = id;
  n.alive = true;
  nodes_[id] = std::move(n);
  return Status::ok();
}

void Graph::remove_node(NodeId id) {
  Node& n = nodes_[id];
  n.alive = false;
  for (ValueId v : n.outputs) values_[v].alive = false;
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  for (Node& n : nodes_) {
    if (!n.alive) continue;
    for (ValueId& v : n.inputs)
      if (v == from) v = to;
  }
  for (ValueId& v : outputs_)
    if (v == from) v = to;
}

void Graph::set_param_data(ValueId id, Tensor data) {
  values_[id].type = TensorType::of(data.dtype(), data.shape());
  param_data_.insert_or_assign(id, std::move(data));
}

std::vector<NodeId> Graph::node_ids() const {
  std::vector<NodeId> ids;
  for (const Node& n : nodes_)
    if (n.alive) ids.push_back(n.id);
  return ids;
}

int Graph::num_nodes() const {
  int n = 0;
  for (const Node& node : nodes_) n += node.alive ? 1 : 0;
  return n;
}

const Tensor* Graph::param_data(ValueId id) const {
  auto it = param_data_.find(id);
  return it == param_data_.end() ? nullptr : &it->second;
}

void Graph::index_name(ValueId id) {
  const std::string& name = values_[static_cast<size_t>(id)].name;
  if (name.empty()) return;
  std::vector<ValueId>& ids = by_name_[name];
  if (ids.empty() || ids.back() < id) {
    ids.push_back(id);  // the usual case: ids grow
    return;
  }
  auto at = std::lower_bound(ids.begin(), ids.end(), id);
  if (at == ids.end() || *at != id) ids.insert(at, id);
}

void Graph::set_value_name(ValueId id, std::string name) {
  Value& v = values_[static_cast<size_t>(id)];
  if (v.name == name) return;
  if (auto it = by_name_.find(v.name); it != by_name_.end()) {
    std::vector<ValueId>& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) by_name_.erase(it);
  }
  v.name = std::move(name);
  index_name(id);
}

std::optional<ValueId> Graph::find_value(const std::string& name) const {
  if (name.empty()) {
    for (const Value& v : values_)
      if (v.alive && v.name.empty()) return v.id;
    return std::nullopt;
  }
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  for (ValueId id : it->second) {
    const Value& v = values_[static_cast<size_t>(id)];
    if (v.alive && v.name == name) return id;
  }
  return std::nullopt;
}

bool Graph::name_index_consistent() const {
  for (const Value& v : values_) {
    if (!v.alive || v.name.empty()) continue;
    auto it = by_name_.find(v.name);
    if (it == by_name_.end() || !std::binary_search(it->second.begin(), it->second.end(), v.id)) return false;
  }
  return true;
}

std::vector<Use> Graph::uses(ValueId id) const {
  std::vector<Use> out;
  for (const Node& n : nodes_) {
    if (!n.alive) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == id) out.push_back({n.id, static_cast<int>(i)});
  }
  return out;
}

Expected<std::vector<NodeId>> Graph::topological_order() const {
  // Kahn's algorithm with a min-heap on node id: deterministic, and the identity order when the
  // nodes were created producers-first.
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<NodeId>> consumers(nodes_.size());
  for (const Node& n : nodes_) {
    if (!n.alive) continue;
    for (ValueId v : n.inputs) {
      if (!has_value(v)) continue;
      const Value& val = values_[v];
      if (val.kind == ValueKind::kNodeOutput && has_node(val.producer)) {
        ++pending[n.id];
        consumers[val.producer].push_back(n.id);
      }
    }
  }
  // A node with the attribute `schedule_early` (the data-parallel AllReduceStart) runs as soon as
  // its inputs exist: it sorts before every other ready node. One with `schedule_late` (the
  // AllReduceWait) sorts after them all: the node ids alone put a wait before kernels that nodes
  // inserted by later passes (a layout Reorder) hold back, and the compute thread blocked there on
  // a sum the backward pass could have hidden.
  auto key = [&](NodeId id) {
    const Node& n = nodes_[static_cast<size_t>(id)];
    return std::make_pair(n.attr(kScheduleEarlyAttr) ? 0 : n.attr(kScheduleLateAttr) ? 2 : 1, id);
  };
  std::priority_queue<std::pair<int, NodeId>, std::vector<std::pair<int, NodeId>>, std::greater<>> ready;
  for (const Node& n : nodes_)
    if (n.alive && pending[n.id] == 0) ready.push(key(n.id));
  std::vector<NodeId> order;
  while (!ready.empty()) {
    NodeId id = ready.top().second;
    ready.pop();
    order.push_back(id);
    for (NodeId c : consumers[id])
      if (--pending[c] == 0) ready.push(key(c));
  }
  if (static_cast<int>(order.size()) != num_nodes()) {
    for (const Node& n : nodes_)
      if (n.alive && pending[n.id] > 0)
        return make_error("the graph has a cycle through node #" + std::to_string(n.id) + " (" +
                              n.op + (n.name.empty() ? "" : " '" + n.name + "'") + ")",
                          {}, n.id);
  }
  return order;
}

}  // namespace tessera::ir
