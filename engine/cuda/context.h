// What every CUDA kernel of one device shares (plugin-private): the device's stream, cuBLAS and
// cuDNN handles, the TF32 choice, and the allocator that counts every cudaMalloc.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "engine/backend/kernel.h"

namespace tessera::cuda {

struct Context {
  int device = 0;
  std::string name;               // "cuda:0"
  cudaStream_t stream = nullptr;  // the session's one stream: every kernel and copy in order
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  bool tf32 = true;               // TF32 tensor cores for f32 matrix work (cuBLAS, cuDNN)
  std::mutex mu;                  // the handles are used by one kernel at a time
  std::atomic<size_t> malloc_calls{0};
  std::shared_ptr<void> cublas_workspace;

  // Creates the stream, the handles and cuBLAS's workspace on first use (listing devices, as
  // `tessera info --devices` and the studio's device choice do, creates none of them).
  Status ensure();
  // cudaMalloc of `bytes`, freed with the last owner; errors name the device and the size.
  Expected<std::shared_ptr<void>> allocate(size_t bytes);

 private:
  std::once_flag once_;
  Status ensured_;
};

std::string error_text(cudaError_t e);
std::string error_text(cublasStatus_t s);
std::string error_text(cudnnStatus_t s);

// The kernels of the device (ops.cpp), each bound to `ctx`.
void register_kernels(backend::KernelRegistry& registry, Context* ctx);

}  // namespace tessera::cuda
