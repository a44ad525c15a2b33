#include "engine/dist/communicator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "engine/ir/graph.h"

namespace tessera::dist {

void Communicator::abort(int code) { std::_Exit(code); }


namespace {
std::atomic<Communicator*> g_current{nullptr};
}

Communicator* current() { return g_current.load(); }

float* bucket_buffer(int bucket, int64_t count) {
  static std::mutex mu;
  static std::map<int, std::vector<float>> buffers;
  std::lock_guard<std::mutex> lk(mu);
  std::vector<float>& b = buffers[bucket];
  if (static_cast<int64_t>(b.size()) < count) b.resize(static_cast<size_t>(count));
  return b.data();
}
void set_current(Communicator* comm) { g_current.store(comm); }

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

Status check_world_size(int64_t split_for, const Communicator* comm) {
  const int have = comm ? comm->size() : 1;
  if (split_for == have) return Status::ok();
  return make_error("the graph was split for " + std::to_string(split_for) + " ranks, this run has " + std::to_string(have) +
                    (comm ? "" : " (no communicator: one process)"));
}

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
    while (j < grads.size() && total < cap) total += grads[j++].bytes;  // DDP's: closed once it reaches the cap
    std::vector<ir::ValueId> ins;
    for (size_t k = i; k < j; ++k) ins.push_back(grads[k].value);
    const ir::Attributes attrs{{"bucket", int64_t{buckets}}, {"bytes", total}, {"world_size", int64_t{dp.world_size}}};
    std::vector<ir::ValueId> means;
    const std::string name = "allreduce/bucket" + std::to_string(buckets);
    if (dp.overlap) {
      ir::Attributes start_attrs = attrs;
      start_attrs.insert_or_assign(ir::kScheduleEarlyAttr, ir::Attribute(int64_t{1}));
      const ir::NodeId start = g.add_node("AllReduceStart", ins, 1, name + "/start", start_attrs);
      g.node(start).provenance.origin = "split";
      const ir::ValueId token = g.node(start).outputs[0];
      g.value(token).type = ir::TensorType::of(DType::kI64, {});
      g.set_value_name(token, name + "/token");
      std::vector<ir::ValueId> wait_in{token};
      wait_in.insert(wait_in.end(), ins.begin(), ins.end());
      ir::Attributes wait_attrs = attrs;
      wait_attrs.insert_or_assign(ir::kScheduleLateAttr, ir::Attribute(int64_t{1}));
      const ir::NodeId wait = g.add_node("AllReduceWait", wait_in, static_cast<int>(ins.size()), name + "/wait", wait_attrs);
      g.node(wait).provenance.origin = "split";
      g.node(wait).provenance.from = {start};
      means = g.node(wait).outputs;
      for (size_t k = i; k < j; ++k)
        if (g.value(grads[k].value).producer != ir::kNoNode) g.node(start).provenance.from.push_back(g.value(grads[k].value).producer);
    } else {
      const ir::NodeId ar = g.add_node("AllReduce", ins, static_cast<int>(ins.size()), name, attrs);
      g.node(ar).provenance.origin = "split";
      means = g.node(ar).outputs;
      for (size_t k = i; k < j; ++k)
        if (g.value(grads[k].value).producer != ir::kNoNode) g.node(ar).provenance.from.push_back(g.value(grads[k].value).producer);
    }
    for (size_t k = i; k < j; ++k) {
      const ir::ValueId out = means[k - i];
      g.value(out).type = g.value(grads[k].value).type;
      std::string base = g.node(grads[k].update).name;  // "<weight>/update"
      if (base.size() > 7 && base.compare(base.size() - 7, 7, "/update") == 0) base.resize(base.size() - 7);
      g.set_value_name(out, base + "/grad_sum");
      g.node(grads[k].update).inputs[1] = out;
      const ir::Attribute* scale = g.node(grads[k].update).attr("grad_scale");
      g.node(grads[k].update).attrs.insert_or_assign(
          "grad_scale", ir::Attribute((scale ? scale->f() : 1.0) / static_cast<double>(dp.world_size)));
    }
    if (bytes) *bytes += total;
    ++buckets;
    i = j;
  }
  return buckets;
}

int mark_sync_batchnorm(ir::Graph& g, const DataParallel& dp) {
  if (!dp.sync_batchnorm || dp.world_size <= 1) return 0;
  int forward = 0;
  for (ir::NodeId id : g.node_ids()) {
    ir::Node& n = g.node(id);
    const ir::Attribute* tm = n.attr("training_mode");
    const bool training_bn = n.op == "BatchNormalization" && tm && tm->i() != 0;
    if (!training_bn && n.op != "BatchNormalizationGrad") continue;
    n.attrs.insert_or_assign("sync_ranks", ir::Attribute(int64_t{dp.world_size}));
    forward += training_bn;
  }
  return forward;
}

}  // namespace tessera::dist
