// Devices: where values live and kernels run.
//   cpu       host memory, oneDNN and vectorised kernels, reference kernels for everything else;
//   cpu:test  a second CPU-side device for tests of the split stage: its own memory (kept apart
//             from host memory, reachable only through copies), a few ops, reference kernels;
//   cuda:N    an NVIDIA GPU: device memory the host cannot touch, one stream, CUDA/cuDNN/cuBLAS
//             kernels and no reference kernels. Its code is the plugin libtessera_cuda.so
//             (engine/cuda/), loaded at run time by discover(): the engine and every program
//             that links it start and run on machines without CUDA.
//
// Usage:
//   backend::DeviceSet devices = backend::DeviceSet::discover(/*with_test_device=*/false);
//   backend::Device* cpu = devices.find("cpu");
//   TRY(std::string name, devices.resolve("auto"));   // "cuda:0" when a GPU is usable, else "cpu"
//   TRY(std::shared_ptr<void> arena, cpu->allocate(bytes));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/kernel.h"

namespace tessera::backend {

// An ordered queue of work on a device. CPU streams run work synchronously; a CUDA stream
// enqueues it. Copies between host and device go through the stream of the device end.
class Stream {
 public:
  virtual ~Stream() = default;
  // dst and src may each be host or this device's memory.
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  virtual Status synchronize() = 0;
  // Graphs of work (CUDA graphs): what is enqueued between begin_capture() and end_capture() on
  // the calling thread is recorded, not run; replay() runs the recording in one launch, with the
  // same buffers. Streams that cannot capture say so (captures() false).
  virtual bool captures() const { return false; }
  virtual Status begin_capture() { return make_error("this stream cannot capture work"); }
  virtual Expected<std::shared_ptr<void>> end_capture() { return make_error("this stream cannot capture work"); }
  virtual Status replay(void* /*graph*/) { return make_error("this stream cannot replay work"); }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;      // "cpu", "cpu:test", "cuda:0"
  // What it is, for `tessera info --devices`: "NVIDIA H200 (sm_90), 139 GiB, cuDNN 9.13, ...".
  virtual std::string description() const { return name(); }
  // How many times allocate() has taken device memory (a test checks that runs allocate nothing).
  virtual size_t allocations() const { return 0; }
  // True when host code may read and write this device's buffers directly (CPU memory).
  virtual bool host_accessible() const = 0;
  // `bytes` of device memory, 64-byte aligned, freed with the last owner. Errors name the size.
  virtual Expected<std::shared_ptr<void>> allocate(size_t bytes) = 0;
  virtual Stream& stream() = 0;
  // Fast kernels of this device (may be empty).
  virtual const KernelRegistry& kernels() const = 0;
  // True when the reference kernels (host code) may run on this device's buffers.
  virtual bool runs_reference() const { return true; }
  // Why `node` of `graph` cannot run here, or "" when it can. Devices that run reference kernels
  // accept every op that has one (a fast kernel may still decline at compile time); a device
  // that does not must accept only what one of its kernels will take (types are known here).
  virtual std::string cannot_run(const ir::Graph& graph, const ir::Node& node, const ops::OpDef& def) const = 0;
  // Relative cost of running `node` here (lower is better); the split stage prefers the cheapest
  // device that can run a node, then the preferred device on ties.
  virtual double cost(const ir::Node& node, const ops::OpDef& def) const = 0;
};

// The devices a session may use, in preference order.
class DeviceSet {
 public:
  // "cpu" always; "cpu:test" when asked (tests of placement and copies).
  static DeviceSet standard(bool with_test_device);
  // standard() plus every usable CUDA device (cuda:0, cuda:1, ...) when `with_cuda`; why none
  // is usable is kept (cuda_unavailable()). tf32: f32 matrix work on TF32 tensor cores.
  static DeviceSet discover(bool with_test_device, bool with_cuda = true, bool tf32 = true);
  void add(std::unique_ptr<Device> d) { devices_.push_back(std::move(d)); }
  Device* find(const std::string& name) const;
  const std::vector<std::unique_ptr<Device>>& all() const { return devices_; }
  std::vector<std::string> names() const;
  // The device a --device value names: "cpu", "cpu:test", "cuda" (cuda:0), "cuda:N", or "auto"
  // (the first CUDA device, else cpu). Errors name the value and, for CUDA, why none is usable.
  Expected<std::string> resolve(const std::string& choice) const;
  // Why this set has no CUDA device ("" when it has one, or when discovery was not asked).
  const std::string& cuda_unavailable() const { return cuda_unavailable_; }

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  std::string cuda_unavailable_;
};

// The plugin's entry point (engine/cuda/plugin.cpp): adds its devices to `set`, or says why
// there are none. `abi` must be kPluginAbi (plugin and engine of one build).
inline constexpr int kPluginAbi = 1;
using AddDevicesFn = int (*)(int abi, DeviceSet* set, bool tf32, std::string* why);
inline constexpr const char* kAddDevicesSymbol = "tessera_cuda_add_devices";

// Host memory, 64-byte aligned (the CPU device's allocator; also used for staging).
Expected<std::shared_ptr<void>> allocate_host(size_t bytes);

// The ops the test device runs (reference kernels on its own memory).
const std::vector<std::string>& test_device_ops();

}  // namespace tessera::backend
