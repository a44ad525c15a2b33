// The NCCL backend of dist::Communicator (library tessera_nccl, built with TESSERA_CUDA when the
// CUDA toolkit has NCCL). Each rank drives one GPU (local rank modulo the devices); buffers given
// in host memory are staged through a device buffer (the CUDA backend will hand device buffers).
//
//   auto mpi = dist::MpiCommunicator::create();                    // the bootstrap
//   TRY(auto nccl, dist::NcclCommunicator::create_over(**mpi));     // rank 0's NCCL id broadcast
//   TRY(auto one, dist::NcclCommunicator::create_single());        // one process, one GPU
#pragma once

#include <memory>

#include "engine/dist/communicator.h"

namespace tessera::dist {

class NcclCommunicator final : public Communicator {
 public:
  // One rank on device 0 (tests, single-GPU runs). Errors say why (no device, NCCL failure).
  static Expected<std::unique_ptr<NcclCommunicator>> create_single();
  // The ranks of `bootstrap` (MPI): rank 0 makes the NCCL id and broadcasts it.
  static Expected<std::unique_ptr<NcclCommunicator>> create_over(Communicator& bootstrap);
  ~NcclCommunicator() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }
  Status allreduce_sum(float* data, int64_t count) override;
  Status broadcast(void* data, int64_t bytes, int root) override;
  Status barrier() override;
  double comm_seconds() const override { return static_cast<double>(comm_ns_) * 1e-9; }
  int device() const { return device_; }

 private:
  struct State;
  NcclCommunicator();
  static Expected<std::unique_ptr<NcclCommunicator>> init(int rank, int size, const void* id, int device);
  Status stage(int64_t bytes);
  template <class Collective>
  Status through_device(void* data, int64_t bytes, Collective collective);
  std::unique_ptr<State> s_;
  int rank_ = 0, size_ = 1, device_ = 0;
  int64_t comm_ns_ = 0;
};

}  // namespace tessera::dist
