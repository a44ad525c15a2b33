// The Open MPI backend of dist::Communicator (library tessera_mpi, built when CMake finds MPI).
//
//   if (dist::launched_by_mpi()) {
//     TRY(auto comm, dist::MpiCommunicator::create());   // MPI_Init_thread; MPI_Finalize at destruction
//     dist::set_current(comm.get());
//   }
//
// Threads: initialised with MPI_THREAD_MULTIPLE. The blocking collectives come from the thread
// that runs the step's kernels; start_allreduce hands a bucket to a communication thread, which
// sums the buckets in the order started on a duplicate of MPI_COMM_WORLD, so the sum runs while
// the step's kernels go on (when MPI offers only a lower thread level, start sums at once).
// A rank that dies makes mpirun stop the others (Open MPI's default on abnormal termination).
#pragma once

#include <atomic>
#include <memory>

#include "engine/dist/communicator.h"

namespace tessera::dist {

class MpiCommunicator final : public Communicator {
 public:
  static Expected<std::unique_ptr<MpiCommunicator>> create();
  ~MpiCommunicator() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  Status allreduce_sum(float* data, int64_t count) override;
  Status broadcast(void* data, int64_t bytes, int root) override;
  Status barrier() override;
  Status start_allreduce(int bucket, float* data, int64_t count) override;
  Status wait_allreduce(int bucket) override;
  void quiesce() override;
  [[noreturn]] void abort(int code) override;
  double comm_seconds() const override { return static_cast<double>(comm_ns_.load()) * 1e-9; }
  double wait_seconds() const override { return static_cast<double>(wait_ns_) * 1e-9; }
  double stalled_seconds() const override;
  // Ordered: allreduce_sum gathers every rank's buffer and adds them in rank order on each rank,
  // so the sums are the same bits whatever algorithm MPI picks (costs N buffers of memory).
  void set_ordered(bool ordered) { ordered_ = ordered; }

 private:
  struct Async;
  MpiCommunicator();
  Error failure(const char* what, int code) const;
  // Sums over the ranks of `comm` (an MPI_Comm; the world, or the communication thread's copy).
  template <class Comm>
  Status sum(Comm comm, float* data, int64_t count);
  int rank_ = 0, size_ = 1;
  std::atomic<int64_t> comm_ns_{0};
  // Collectives in flight (either thread) and when one last started or ended: stalled_seconds.
  struct InFlight;
  std::atomic<int> in_flight_{0};
  std::atomic<int64_t> progress_ns_{0};
  int64_t wait_ns_ = 0;
  bool ordered_ = false;
  std::unique_ptr<Async> async_;
};

}  // namespace tessera::dist
