// The data-parallel collectives of a training step (AllReduce, AllReduceStart, AllReduceWait,
// runtime_ops.cpp) over the planned buffers: when the compile stage laid a bucket's gradients out
// as views into one buffer (KernelRun::bucket_view) the sum runs in place there, and the outputs
// (the sums) are that buffer too; otherwise the gradients are packed straight from their slots
// into the bucket's persistent buffer (dist::bucket_buffer) and the sums copied straight into the
// output slots. The optimizer updates take the mean (their grad_scale). The reference kernels
// allocate a tensor per output, which the runtime then copies into its slot.
#include <cstring>

#include "engine/cpu/vec_internal.h"
#include "engine/dist/communicator.h"

namespace tessera::cpu {
namespace {

struct Bucket {
  int bucket = 0;
  int64_t world_size = 1;
  std::vector<int64_t> counts;  // floats of each gradient
  int64_t total = 0;
  std::vector<int64_t> packed;  // each gradient's place in the packed buffer (floats)
  std::vector<int64_t> view;    // ... in the bucket laid out as views (64-byte boundaries)
  int64_t view_total = 0;       // the view's floats, padding included
};

// The bucket of a node whose gradients are its inputs from `first` on (plain static f32).
std::optional<Bucket> bucket_of(const KernelInit& init, size_t first) {
  if (!plain_static(init) || init.in_types.size() <= first) return std::nullopt;
  Bucket b;
  const ir::Attribute* bucket = init.node.attr("bucket");
  const ir::Attribute* world = init.node.attr("world_size");
  b.bucket = bucket ? static_cast<int>(bucket->i()) : 0;
  b.world_size = world ? world->i() : 1;
  constexpr int64_t kAlign = backend::kBucketViewAlignment / sizeof(float);
  for (size_t i = first; i < init.in_types.size(); ++i) {
    if (!init.in_types[i] || init.in_types[i]->dtype != DType::kF32) return std::nullopt;
    b.counts.push_back(init.in_types[i]->static_numel());
    b.packed.push_back(b.total);
    b.view.push_back(b.view_total);
    b.total += b.counts.back();
    b.view_total = b.view.back() + (b.counts.back() + kAlign - 1) / kAlign * kAlign;
  }
  return b;
}

// The communicator of this run, checked against the world size the graph was split for (null:
// one process, the sum of one rank).
Expected<dist::Communicator*> communicator(const Bucket& b) {
  dist::Communicator* comm = dist::current();
  RETURN_IF_ERROR(dist::check_world_size(b.world_size, comm));
  return comm && comm->size() > 1 ? comm : nullptr;
}

// The bucket's floats to sum: the gradients' own buffer when the compile stage laid them out as
// views into one (KernelRun::bucket_view, checked against the addresses), else the bucket's
// packed buffer.
struct Flat {
  float* data;
  const std::vector<int64_t>* places;  // each gradient's place in `data`
  int64_t count;                       // floats to sum
};

Flat flat_of(const Bucket& b, const KernelRun& run, size_t first) {
  float* base = static_cast<float*>(run.inputs[first].data);
  bool view = run.bucket_view;
  for (size_t i = 0; view && i < b.counts.size(); ++i) view = run.inputs[first + i].data == base + b.view[i];
  if (view) return {base, &b.view, b.view_total};
  return {dist::bucket_buffer(b.bucket, b.total), &b.packed, b.total};
}

// The gradients into the packed buffer (nothing to do for a view).
Flat pack(const Bucket& b, const KernelRun& run, size_t first) {
  Flat f = flat_of(b, run, first);
  if (f.places == &b.packed)
    for (size_t i = 0; i < b.counts.size(); ++i)
      std::memcpy(f.data + b.packed[i], run.inputs[first + i].data, static_cast<size_t>(b.counts[i]) * sizeof(float));
  return f;
}

// Output i is gradient i's slice of the sum over the ranks (already in place when the compile stage
// made the output that slice: a bucket view with its sums).
void unpack(const Bucket& b, const Flat& f, KernelRun& run) {
  for (size_t i = 0; i < b.counts.size(); ++i)
    if (run.outputs[i].data != f.data + (*f.places)[i])
      std::memcpy(run.outputs[i].data, f.data + (*f.places)[i], static_cast<size_t>(b.counts[i]) * sizeof(float));
}

// A kernel over the bucket whose gradients are the node's inputs from `first` on: body(bucket,
// communicator (null: one process), run).
template <class Body>
Expected<KernelPtr> bucket_kernel(const KernelInit& init, const std::string& impl, size_t first, Body body) {
  std::optional<Bucket> b = bucket_of(init, first);
  if (!b) return decline(init, impl, "needs plain static f32 gradients");
  return make(impl, init, [b = *b, body](KernelRun& run) -> Status {
    TRY(dist::Communicator * comm, communicator(b));
    return body(b, comm, run);
  });
}

Expected<KernelPtr> make_allreduce(const KernelInit& init) {
  return bucket_kernel(init, "cpu.vec:allreduce", 0, [](const Bucket& b, dist::Communicator* comm, KernelRun& run) -> Status {
    const Flat f = pack(b, run, 0);
    if (comm) RETURN_IF_ERROR(comm->allreduce_sum(f.data, f.count));
    unpack(b, f, run);
    return Status::ok();
  });
}

Expected<KernelPtr> make_allreduce_start(const KernelInit& init) {
  return bucket_kernel(init, "cpu.vec:allreduce_start", 0, [](const Bucket& b, dist::Communicator* comm, KernelRun& run) -> Status {
    const Flat f = pack(b, run, 0);
    if (comm) RETURN_IF_ERROR(comm->start_allreduce(b.bucket, f.data, f.count));
    const int64_t token = b.bucket;
    std::memcpy(run.outputs[0].data, &token, sizeof token);
    return Status::ok();
  });
}

Expected<KernelPtr> make_allreduce_wait(const KernelInit& init) {
  return bucket_kernel(init, "cpu.vec:allreduce_wait", 1, [](const Bucket& b, dist::Communicator* comm, KernelRun& run) -> Status {
    if (comm) RETURN_IF_ERROR(comm->wait_allreduce(b.bucket));
    unpack(b, flat_of(b, run, 1), run);
    return Status::ok();
  });
}

}  // namespace

void register_vec_dist(KernelRegistry& registry) {
  registry.add("AllReduce", "cpu.vec:allreduce", kVecPriority, make_allreduce);
  registry.add("AllReduceStart", "cpu.vec:allreduce_start", kVecPriority, make_allreduce_start);
  registry.add("AllReduceWait", "cpu.vec:allreduce_wait", kVecPriority, make_allreduce_wait);
}

}  // namespace tessera::cpu
