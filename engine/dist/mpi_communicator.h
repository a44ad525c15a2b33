// The Open MPI backend of dist::Communicator (library tessera_mpi, built when CMake finds MPI).
//
//   if (dist::launched_by_mpi()) {
//     TRY(auto comm, dist::MpiCommunicator::create());   // MPI_Init_thread; MPI_Finalize at destruction
//     dist::set_current(comm.get());
//   }
//
// Threads: initialised with MPI_THREAD_FUNNELED, so collectives must come from the thread that
// created it; the trainer runs the step's kernels on that thread (one worker, inter-op 1).
// A rank that dies makes mpirun stop the others (Open MPI's default on abnormal termination).
#pragma once

#include <memory>

#include "engine/dist/communicator.h"

namespace tessera::dist {

// Whether this process was started by mpirun with more than one rank (OMPI_COMM_WORLD_SIZE, or
// PMI_SIZE / PMIX_SIZE for other launchers).
bool launched_by_mpi();

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
  double comm_seconds() const override { return static_cast<double>(comm_ns_) * 1e-9; }
  // Ordered: allreduce_sum gathers every rank's buffer and adds them in rank order on each rank,
  // so the sums are the same bits whatever algorithm MPI picks (costs N buffers of memory).
  void set_ordered(bool ordered) { ordered_ = ordered; }

 private:
  MpiCommunicator() = default;
  Error failure(const char* what, int code) const;
  int rank_ = 0, size_ = 1;
  int64_t comm_ns_ = 0;
  bool ordered_ = false;
};

}  // namespace tessera::dist
