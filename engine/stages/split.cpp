// Stage 2, split (see split.h).
//
// Algorithm: walk nodes in topological order; candidates are the devices whose cannot_run() is
// empty; pick the lowest cost(), the preferred device on ties. Then for every use of a value whose
// producer (or, for inputs and params, the host) sits on another device than the consumer, insert
// one Copy per (value, destination device) and rewire the use. Graph outputs produced off the host
// get a Copy back to the host.
#include "engine/stages/split.h"

#include "engine/dist/communicator.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"

namespace tessera::stages {

const std::string& PlacedGraph::device(ir::NodeId id) const {
  static const std::string kHost = kHostDevice;
  if (id < 0 || static_cast<size_t>(id) >= device_of.size() || device_of[id].empty()) return kHost;
  return device_of[id];
}

void PlacedGraph::place_new_nodes() {
  device_of.resize(static_cast<size_t>(graph.node_capacity()));
  auto order = graph.topological_order();
  std::vector<ir::NodeId> ids = order ? *order : graph.node_ids();
  for (ir::NodeId id : ids) {
    if (!device_of[id].empty()) continue;
    const ir::Node& n = graph.node(id);
    std::string d;
    for (ir::NodeId from : n.provenance.from)
      if (from >= 0 && static_cast<size_t>(from) < device_of.size() && !device_of[from].empty()) {
        d = device_of[from];
        break;
      }
    if (d.empty())
      for (ir::ValueId v : n.inputs)
        if (v != ir::kNoValue && graph.value(v).producer != ir::kNoNode) {
          d = device(graph.value(v).producer);
          break;
        }
    device_of[id] = d.empty() ? kHostDevice : d;
  }
}

std::vector<std::pair<std::string, std::vector<ir::NodeId>>> PlacedGraph::partitions() const {
  std::vector<std::pair<std::string, std::vector<ir::NodeId>>> out;
  auto order = graph.topological_order();
  if (!order) return out;
  for (ir::NodeId id : *order) {
    const std::string& d = device(id);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == d; });
    if (it == out.end()) {
      out.emplace_back(d, std::vector<ir::NodeId>{});
      it = out.end() - 1;
    }
    it->second.push_back(id);
  }
  return out;
}

std::string PlacedGraph::print() const {
  std::ostringstream os;
  os << ir::print_graph(graph);
  os << "placement (preferred " << preferred << ", " << copies << " copies):\n";
  for (const auto& [dev, ids] : partitions()) os << "  " << dev << ": " << ids.size() << " nodes\n";
  for (const Placement& p : fallbacks)
    os << "  #" << p.node << " " << graph.node(p.node).op << " -> " << p.device << ": " << p.reason << "\n";
  return os.str();
}

namespace {

// Cuts every edge between devices with a Copy (one per value and destination device; copies
// already in the graph are reused), and gives graph outputs produced off the host a Copy back.
// Params are not copied per run: the load stage gives each device its own copy of the weights
// its nodes read, once.
void cut_edges(PlacedGraph& placed, const std::vector<ir::NodeId>& order) {
  ir::Graph& g = placed.graph;
  std::map<std::pair<ir::ValueId, std::string>, ir::ValueId> copies;
  for (ir::NodeId id : order)
    if (g.node(id).op == "Copy" && !g.node(id).inputs.empty())
      copies.emplace(std::make_pair(g.node(id).inputs[0], placed.device(id)), g.node(id).outputs[0]);
  auto home = [&](ir::ValueId v) -> std::string {
    const ir::Value& val = g.value(v);
    return val.kind == ir::ValueKind::kNodeOutput ? placed.device(val.producer) : std::string(kHostDevice);
  };
  auto copy_of = [&](ir::ValueId v, const std::string& to) -> ir::ValueId {
    auto key = std::make_pair(v, to);
    if (auto it = copies.find(key); it != copies.end()) return it->second;
    std::string from = home(v);
    std::string base = g.value(v).name.empty() ? "%" + std::to_string(v) : g.value(v).name;
    ir::NodeId c = g.add_node("Copy", {v}, 1, "copy:" + base + "->" + to, {{"from", from}, {"to", to}});
    g.node(c).provenance.origin = "split";
    if (g.value(v).producer != ir::kNoNode) g.node(c).provenance.from = {g.value(v).producer};
    ir::ValueId out = g.node(c).outputs[0];
    g.set_value_name(out, base + "@" + to);
    g.value(out).type = g.value(v).type;
    placed.device_of.resize(static_cast<size_t>(g.node_capacity()));
    placed.device_of[c] = to;
    ++placed.copies;
    copies.emplace(key, out);
    return out;
  };
  for (ir::NodeId id : order) {
    const std::string dev = placed.device(id);
    if (g.node(id).op == "Copy") continue;
    for (size_t i = 0; i < g.node(id).inputs.size(); ++i) {
      ir::ValueId v = g.node(id).inputs[i];
      if (v == ir::kNoValue || home(v) == dev || g.value(v).kind == ir::ValueKind::kParam) continue;
      ir::ValueId c = copy_of(v, dev);
      g.node(id).inputs[i] = c;
    }
  }
  std::vector<ir::ValueId> outs = g.outputs();
  for (ir::ValueId& v : outs)
    if (home(v) != kHostDevice) {
      std::string name = g.value(v).name;
      v = copy_of(v, kHostDevice);
      // The graph output keeps its name: the host copy takes it, the device value gets a suffix.
      ir::ValueId src = g.node(g.value(v).producer).inputs[0];
      if (g.value(v).name != name) {
        g.set_value_name(src, name + "@" + placed.device(g.value(src).producer));
        g.set_value_name(v, name);
      }
    }
  g.set_outputs(outs);
}

}  // namespace

Expected<PlacedGraph> split(PreparedGraph prepared, const backend::DeviceSet& devices, const std::string& preferred,
                            StageContext& ctx) {
  int64_t start = observe::now_ns();
  PlacedGraph placed{std::move(prepared.graph), {}, {}, preferred, 0};
  ir::Graph& g = placed.graph;
  int before = g.num_nodes();
  const backend::Device* pref = devices.find(preferred);
  if (!pref) {
    std::string names;
    for (const auto& n : devices.names()) names += (names.empty() ? "" : ", ") + n;
    return make_error("unknown device '" + preferred + "' (devices: " + names + ")");
  }
  // Data parallel: one AllReduce per gradient bucket before the updates (placed like any node).
  int buckets = 0, synced_bn = 0;
  int64_t bucket_bytes = 0;
  if (ctx.data_parallel) {
    TRY(buckets, dist::insert_gradient_allreduce(g, *ctx.data_parallel, &bucket_bytes));
    synced_bn = dist::mark_sync_batchnorm(g, *ctx.data_parallel);
  }
  placed.device_of.assign(static_cast<size_t>(g.node_capacity()), "");
  TRY(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const ops::OpDef* def = ctx.registry.find(n.op);
    if (!def) return make_error(ir::describe_node(n) + ": unknown op '" + n.op + "'", {}, id);
    const backend::Device* best = nullptr;
    double best_cost = 0;
    std::string pref_why;  // why the preferred device cannot run the node (a GPU asks its kernels: once)
    for (const auto& d : devices.all()) {
      std::string why = d->cannot_run(g, n, *def);
      if (d.get() == pref) pref_why = why;
      if (!why.empty()) continue;
      double c = d->cost(n, *def);
      if (!best || c < best_cost || (c == best_cost && d.get() == pref)) {
        best = d.get();
        best_cost = c;
      }
    }
    if (!best) return make_error(ir::describe_node(n) + ": no device can run this node (" + pref_why + ")", {}, id);
    placed.device_of[id] = best->name();
    if (best != pref) placed.fallbacks.push_back({id, best->name(), pref_why.empty() ? "cheaper on " + best->name() : pref_why});
  }
  cut_edges(placed, order);

  std::ostringstream summary;
  auto parts = placed.partitions();
  for (size_t i = 0; i < parts.size(); ++i)
    summary << (i ? ", " : "") << parts[i].first << ": " << parts[i].second.size() << " nodes";
  summary << "; " << placed.copies << " copies, " << placed.fallbacks.size() << " nodes off " << preferred;
  if (buckets > 0)
    summary << "; " << buckets << " gradient all-reduce bucket(s) of " << bucket_bytes << " bytes over "
            << ctx.data_parallel->world_size << " ranks";
  if (synced_bn > 0) summary << "; " << synced_bn << " batch norms synchronised over the ranks";
  ctx.finish_stage("split", start, before, &g, summary.str());
  return placed;
}

Status refit(PlacedGraph& placed, const backend::DeviceSet& devices, const ops::OpRegistry& registry) {
  placed.place_new_nodes();
  ir::Graph& g = placed.graph;
  bool off_host = false;
  for (ir::NodeId id : g.node_ids()) off_host |= placed.device(id) != kHostDevice;
  if (!off_host) return Status::ok();
  TRY(std::vector<ir::NodeId> order, g.topological_order());
  // Nodes their device cannot run (new fused forms, changed types) go to the host.
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const std::string& dev = placed.device(id);
    if (dev == kHostDevice || n.op == "Copy") continue;
    const backend::Device* d = devices.find(dev);
    const ops::OpDef* def = registry.find(n.op);
    if (!d || !def) return make_error(ir::describe_node(n) + ": placed on '" + dev + "', which cannot be checked");
    std::string why = d->cannot_run(g, n, *def);
    if (why.empty()) continue;
    placed.device_of[static_cast<size_t>(id)] = kHostDevice;
    placed.fallbacks.push_back({id, kHostDevice, "after optimisation: " + why});
  }
  // Copies whose source now lives where they copy to are bypassed.
  auto home = [&](ir::ValueId v) -> std::string {
    const ir::Value& val = g.value(v);
    return val.kind == ir::ValueKind::kNodeOutput ? placed.device(val.producer) : std::string(kHostDevice);
  };
  for (ir::NodeId id : order) {
    ir::Node& n = g.node(id);
    if (n.op != "Copy" || n.inputs.empty() || home(n.inputs[0]) != placed.device(id)) continue;
    const ir::ValueId src = n.inputs[0], out = n.outputs[0];
    const bool is_output = std::find(g.outputs().begin(), g.outputs().end(), out) != g.outputs().end();
    const std::string name = g.value(out).name;
    g.replace_all_uses(out, src);
    if (is_output) g.set_value_name(src, name);
    g.remove_node(id);
    --placed.copies;
  }
  TRY(order, g.topological_order());
  cut_edges(placed, order);
  for (ir::NodeId id : g.node_ids())
    if (g.node(id).op == "Copy" && !g.node(id).inputs.empty()) {
      g.node(id).attrs.insert_or_assign("from", ir::Attribute(home(g.node(id).inputs[0])));
      g.node(id).attrs.insert_or_assign("to", ir::Attribute(placed.device(id)));
    }
  return Status::ok();
}

}  // namespace tessera::stages
