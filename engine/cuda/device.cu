// CUDA device discovery and an element-wise add kernel with RAII device buffers.
#include <cuda_runtime.h>

#include <memory>

#include "engine/cuda/device.h"

namespace tessera::cuda {
namespace {

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

Expected<DeviceBuffer> device_alloc(size_t bytes) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) return make_error("cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + error_text(e));
  return DeviceBuffer(p);
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

}  // namespace

int device_count(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = error_text(e);
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA runtime reports no device";
  return n;
}

std::string device_description(int index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return "unknown device";
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

Expected<Tensor> add_f32(const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::kF32 || b.dtype() != DType::kF32 || a.shape() != b.shape())
    return make_error("cuda::add_f32 needs two f32 tensors of the same shape");
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const size_t bytes = ca.nbytes();
  TRY(DeviceBuffer da, device_alloc(bytes));
  TRY(DeviceBuffer db, device_alloc(bytes));
  TRY(DeviceBuffer dout, device_alloc(bytes));
  cudaError_t e = cudaMemcpy(da.get(), ca.raw_data(), bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(db.get(), cb.raw_data(), bytes, cudaMemcpyHostToDevice);
  if (e != cudaSuccess) return make_error("copy to device failed: " + error_text(e));
  const int64_t n = ca.numel();
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  if (n > 0) {
    add_kernel<<<blocks, threads>>>(static_cast<const float*>(da.get()), static_cast<const float*>(db.get()),
                                    static_cast<float*>(dout.get()), n);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return make_error("add kernel failed: " + error_text(e));
  }
  Tensor out(DType::kF32, ca.shape());
  e = cudaMemcpy(out.raw_data(), dout.get(), bytes, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return make_error("copy from device failed: " + error_text(e));
  return out;
}

}  // namespace tessera::cuda
