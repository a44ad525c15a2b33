// Data-parallel training across processes: the communication backend interface, the communicator
// the collective ops use, and how the split stage buckets gradients.
//
//   auto comm = dist::MpiCommunicator::create();          // engine/dist/mpi_communicator.h
//   dist::set_current(comm.get());                        // the AllReduce kernels use it
//   cfg.comm = comm.get();                                // the trainer shards batches by rank
//
// With a world size above 1, the split stage inserts one AllReduce node per gradient bucket between
// the backward pass and the optimizer updates (insert_gradient_allreduce below); each node packs its
// gradients into one flat buffer, sums it over the ranks and writes back the mean.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace tessera::ir {
class Graph;
}
namespace tessera::observe {
class TraceSink;
}

namespace tessera::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "mpi", "nccl"
  // Sums `count` floats over the ranks into `data` on every rank (in place). Blocking; every rank
  // must call it with the same count in the same order. Errors name the backend and the rank.
  virtual Status allreduce_sum(float* data, int64_t count) = 0;
  // Rank `root`'s `bytes` bytes at `data` on every rank.
  virtual Status broadcast(void* data, int64_t bytes, int root) = 0;
  virtual Status barrier() = 0;
  // Non-blocking bucket all-reduce (the split stage's AllReduceStart / AllReduceWait): starts
  // summing `count` floats at `data` (left untouched by the caller until the wait) and returns;
  // wait_allreduce blocks until that bucket is summed. Every rank starts the same buckets in the
  // same order. Default: the sum happens at the start.
  virtual Status start_allreduce(int bucket, float* data, int64_t count) {
    (void)bucket;
    return allreduce_sum(data, count);
  }
  virtual Status wait_allreduce(int bucket) {
    (void)bucket;
    return Status::ok();
  }
  // After a failed step: drops the started all-reduces not yet begun and blocks until the one
  // running (if any) ends, so that nothing writes into the step's buffers (the buckets are views
  // into its arena) once the caller lets them go.
  virtual void quiesce() {}
  // Ends every rank's process with `code` (MPI_Abort): a rank that cannot go on must not leave the
  // others blocked in a collective it will never join. Default: this process only.
  [[noreturn]] virtual void abort(int code);
  // Seconds spent inside collectives so far (for `tessera runs show`).
  virtual double comm_seconds() const = 0;
  // Seconds the caller spent blocked in wait_allreduce (the communication the step did not hide).
  virtual double wait_seconds() const { return 0; }
  // While a collective is in flight, the seconds since a collective last started or ended on this
  // rank; 0 when none is. A link that went down, or a rank that hangs, shows here as a number that
  // only grows (MPI over TCP notices a dead peer after minutes of keepalives, or never):
  // `tessera train` stops the rank past --dist-timeout.
  virtual double stalled_seconds() const { return 0; }
  // Where the communication thread records one span per bucket it sums (device "mpi", op
  // "MPI_Allreduce": the timeline shows the sums beside the kernels they overlap); null: none.
  void set_trace(observe::TraceSink* trace) { trace_.store(trace); }

 protected:
  std::atomic<observe::TraceSink*> trace_{nullptr};
};

// The packed buffer of gradient bucket `bucket` (resized to `count` floats), owned here so that it
// outlives the step between AllReduceStart and AllReduceWait.
float* bucket_buffer(int bucket, int64_t count);

// The communicator the collective ops' kernels use (null: one process; AllReduce copies).
Communicator* current();
void set_current(Communicator* comm);

// Whether this process was started by mpirun with more than one rank (OMPI_COMM_WORLD_SIZE, or
// PMI_SIZE / PMIX_SIZE for other launchers). Needs no MPI: a build without it, or a front end
// that trains in one process, can refuse to run N copies that would write the same files.
bool launched_by_mpi();
// The collective kernels' check that this run has the ranks the graph was split for (`comm` null:
// one process). The updates divide the sums by the split's world size, so they must agree.
Status check_world_size(int64_t split_for, const Communicator* comm);

// Gradient buckets, PyTorch DDP's defaults and rule: a bucket closes once it reaches its cap (it
// may pass it by its last gradient), 1 MiB for the first (so the first all-reduce starts early),
// 25 MiB for the others. Gradients join buckets in the order the backward
// pass produces them (the reverse of the forward's parameters).
struct DataParallel {
  int world_size = 1;
  // true: AllReduceStart right after a bucket's last gradient (scheduled early) and AllReduceWait
  // when nothing else is ready (scheduled late), so the sum runs while the backward pass goes on; false: one blocking
  // AllReduce per bucket.
  bool overlap = true;
  int64_t first_bucket_bytes = int64_t{1} << 20;
  int64_t bucket_bytes = int64_t{25} << 20;
  // SyncBatchNorm (PyTorch's torch.nn.SyncBatchNorm): batch norms in training mode normalise with
  // the moments of every rank's rows (mark_sync_batchnorm), so a network with batch norm trains on
  // N ranks as on one process with the global batch. Two blocking all-reduces of [C] per batch norm
  // forward and two backward; every rank must run them in the same order (one step at a time).
  bool sync_batchnorm = false;
};

// Inserts the all-reduce nodes of a training step (SGDUpdate/AdamUpdate nodes made by
// autodiff::build_training_step) and rewires each update to read its gradient's mean. Returns the
// number of buckets and adds their bytes to `bytes`. A graph without updates is left alone.
Expected<int> insert_gradient_allreduce(ir::Graph& graph, const DataParallel& dp, int64_t* bytes);
// Sets sync_ranks = dp.world_size on every BatchNormalization in training mode and every
// BatchNormalizationGrad (DataParallel::sync_batchnorm); returns how many batch norms.
int mark_sync_batchnorm(ir::Graph& graph, const DataParallel& dp);

}  // namespace tessera::dist
