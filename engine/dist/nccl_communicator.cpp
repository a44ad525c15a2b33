#include "engine/dist/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <string>

#include "engine/observe/sinks.h"

namespace tessera::dist {

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;
  int64_t capacity = 0;
};

namespace {

Error cuda_error(const char* what, cudaError_t e, int rank) {
  return make_error(std::string(what) + ": " + cudaGetErrorString(e), "nccl rank " + std::to_string(rank));
}
Error nccl_error(const char* what, ncclResult_t r, int rank) {
  return make_error(std::string(what) + ": " + ncclGetErrorString(r), "nccl rank " + std::to_string(rank));
}

}  // namespace

NcclCommunicator::NcclCommunicator() : s_(std::make_unique<State>()) {}

NcclCommunicator::~NcclCommunicator() {
  if (s_->buffer) cudaFree(s_->buffer);
  if (s_->stream) cudaStreamDestroy(s_->stream);
  if (s_->comm) ncclCommDestroy(s_->comm);
}

Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::init(int rank, int size, const void* id, int device) {
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->rank_ = rank;
  c->size_ = size;
  c->device_ = device;
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return cuda_error("cudaSetDevice", e, rank);
  if (cudaError_t e = cudaStreamCreate(&c->s_->stream); e != cudaSuccess) return cuda_error("cudaStreamCreate", e, rank);
  ncclUniqueId uid;
  std::memcpy(&uid, id, sizeof uid);
  if (ncclResult_t r = ncclCommInitRank(&c->s_->comm, size, uid, rank); r != ncclSuccess)
    return nccl_error("ncclCommInitRank", r, rank);
  return c;
}

Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create_single() {
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0)
    return make_error(std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"), "nccl");
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return nccl_error("ncclGetUniqueId", r, 0);
  return init(0, 1, &id, 0);
}

Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create_over(Communicator& bootstrap) {
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0)
    return make_error(std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"),
                      "nccl rank " + std::to_string(bootstrap.rank()));
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (bootstrap.rank() == 0)
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return nccl_error("ncclGetUniqueId", r, 0);
  RETURN_IF_ERROR(bootstrap.broadcast(&id, sizeof id, 0));
  return init(bootstrap.rank(), bootstrap.size(), &id, bootstrap.rank() % devices);
}

Status NcclCommunicator::stage(int64_t bytes) {
  if (bytes <= s_->capacity) return Status::ok();
  if (s_->buffer) cudaFree(s_->buffer);
  s_->buffer = nullptr;
  s_->capacity = 0;
  if (cudaError_t e = cudaMalloc(&s_->buffer, static_cast<size_t>(bytes)); e != cudaSuccess) return cuda_error("cudaMalloc", e, rank_);
  s_->capacity = bytes;
  return Status::ok();
}

// Host bytes through the device buffer: copied in, `collective` on the stream, copied back.
template <class Collective>
Status NcclCommunicator::through_device(void* data, int64_t bytes, Collective collective) {
  const int64_t t0 = observe::now_ns();
  RETURN_IF_ERROR(stage(bytes));
  cudaStream_t st = s_->stream;
  if (cudaError_t e = cudaMemcpyAsync(s_->buffer, data, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, st); e != cudaSuccess)
    return cuda_error("cudaMemcpyAsync", e, rank_);
  if (ncclResult_t r = collective(s_->buffer, s_->comm, st); r != ncclSuccess) return nccl_error("NCCL collective", r, rank_);
  if (cudaError_t e = cudaMemcpyAsync(data, s_->buffer, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, st); e != cudaSuccess)
    return cuda_error("cudaMemcpyAsync", e, rank_);
  if (cudaError_t e = cudaStreamSynchronize(st); e != cudaSuccess) return cuda_error("cudaStreamSynchronize", e, rank_);
  comm_ns_ += observe::now_ns() - t0;
  return Status::ok();
}

Status NcclCommunicator::allreduce_sum(float* data, int64_t count) {
  return through_device(data, count * static_cast<int64_t>(sizeof(float)), [&](void* buf, ncclComm_t comm, cudaStream_t st) {
    return ncclAllReduce(buf, buf, static_cast<size_t>(count), ncclFloat, ncclSum, comm, st);
  });
}

Status NcclCommunicator::broadcast(void* data, int64_t bytes, int root) {
  return through_device(data, bytes, [&](void* buf, ncclComm_t comm, cudaStream_t st) {
    return ncclBroadcast(buf, buf, static_cast<size_t>(bytes), ncclChar, root, comm, st);
  });
}

Status NcclCommunicator::barrier() {
  float x = 0;
  return allreduce_sum(&x, 1);
}

}  // namespace tessera::dist
