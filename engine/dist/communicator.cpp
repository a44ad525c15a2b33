#include "engine/dist/communicator.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "engine/ir/graph.h"

namespace tessera::dist {

namespace {
std::atomic<Communicator*> g_current{nullptr};
}

Communicator* current() { return g_current.load(); }
void set_current(Communicator* comm) { g_current.store(comm); }

Expected<int> insert_gradient_allreduce(ir::Graph& g, const DataParallel& dp, int64_t* bytes) {
  if (dp.world_size <= 1) return 0;
  TRY(std::vector<ir::NodeId> order, g.topological_order());
  std::vector<int> position(static_cast<size_t>(g.node_capacity()), -1);
  for (size_t i = 0; i < order.size(); ++i) position[static_cast<size_t>(order[i])] = static_cast<int>(i);
  struct Grad {
    ir::NodeId update;
    ir::ValueId value;
    int ready;  // position of its producer in the step order
    int64_t bytes;
  };
  std::vector<Grad> grads;
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    if ((n.op != "SGDUpdate" && n.op != "AdamUpdate") || n.inputs.size() < 2) continue;
    const ir::ValueId v = n.inputs[1];
    const ir::Value& val = g.value(v);
    if (!val.type.is_static() || val.type.dtype != DType::kF32)
      return make_error("data parallel: gradient '" + val.name + "' is " + val.type.to_string() +
                        "; only static f32 gradients are all-reduced", {}, id);
    const int ready = val.producer != ir::kNoNode ? position[static_cast<size_t>(val.producer)] : -1;
    grads.push_back({id, v, ready, val.type.static_numel() * 4});
  }
  std::stable_sort(grads.begin(), grads.end(), [](const Grad& a, const Grad& b) { return a.ready < b.ready; });
  int buckets = 0;
  size_t i = 0;
  while (i < grads.size()) {
    const int64_t cap = buckets == 0 ? dp.first_bucket_bytes : dp.bucket_bytes;
    size_t j = i;
    int64_t total = 0;
    while (j < grads.size() && (j == i || total + grads[j].bytes <= cap)) total += grads[j++].bytes;
    std::vector<ir::ValueId> ins;
    for (size_t k = i; k < j; ++k) ins.push_back(grads[k].value);
    const ir::NodeId ar = g.add_node("AllReduce", ins, static_cast<int>(ins.size()), "allreduce/bucket" + std::to_string(buckets),
                                     {{"bucket", int64_t{buckets}}, {"bytes", total}, {"world_size", int64_t{dp.world_size}}});
    g.node(ar).provenance.origin = "split";
    for (size_t k = i; k < j; ++k) {
      const ir::ValueId out = g.node(ar).outputs[k - i];
      g.value(out).type = g.value(grads[k].value).type;
      g.value(out).name = g.value(grads[k].value).name + "/mean";
      g.node(grads[k].update).inputs[1] = out;
      if (g.value(grads[k].value).producer != ir::kNoNode) g.node(ar).provenance.from.push_back(g.value(grads[k].value).producer);
    }
    if (bytes) *bytes += total;
    ++buckets;
    i = j;
  }
  return buckets;
}

}  // namespace tessera::dist
