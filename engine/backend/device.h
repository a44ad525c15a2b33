// Devices: where values live and kernels run. Shaped for CUDA (device memory the host cannot
// touch, streams with asynchronous copies) although only CPU-side devices exist so far:
//   cpu       host memory, oneDNN and vectorised kernels, reference kernels for everything else;
//   cpu:test  a second CPU-side device for tests of the split stage: its own memory (kept apart
//             from host memory, reachable only through copies), a few ops, reference kernels.
//
// Usage:
//   backend::DeviceSet devices = backend::DeviceSet::standard(/*with_test_device=*/false);
//   backend::Device* cpu = devices.find("cpu");
//   TRY(std::shared_ptr<void> arena, cpu->allocate(bytes));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/kernel.h"

namespace tessera::backend {

// An ordered queue of work on a device. CPU streams run work synchronously; a CUDA stream will
// enqueue it. Copies between host and device go through a stream.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  virtual Status synchronize() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;      // "cpu", "cpu:test", "cuda:0"
  // True when host code may read and write this device's buffers directly (CPU memory).
  virtual bool host_accessible() const = 0;
  // `bytes` of device memory, 64-byte aligned, freed with the last owner. Errors name the size.
  virtual Expected<std::shared_ptr<void>> allocate(size_t bytes) = 0;
  virtual Stream& stream() = 0;
  // Fast kernels of this device (may be empty).
  virtual const KernelRegistry& kernels() const = 0;
  // Why `node` cannot run here, or "" when it can (a fast kernel may still decline at compile
  // time; devices that run reference kernels accept every op that has one).
  virtual std::string cannot_run(const ir::Node& node, const ops::OpDef& def) const = 0;
  // Relative cost of running `node` here (lower is better); the split stage prefers the cheapest
  // device that can run a node, then the preferred device on ties.
  virtual double cost(const ir::Node& node, const ops::OpDef& def) const = 0;
};

// The devices a session may use, in preference order.
class DeviceSet {
 public:
  // "cpu" always; "cpu:test" when asked (tests of placement and copies).
  static DeviceSet standard(bool with_test_device);
  void add(std::unique_ptr<Device> d) { devices_.push_back(std::move(d)); }
  Device* find(const std::string& name) const;
  const std::vector<std::unique_ptr<Device>>& all() const { return devices_; }
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Device>> devices_;
};

// Host memory, 64-byte aligned (the CPU device's allocator; also used for staging).
Expected<std::shared_ptr<void>> allocate_host(size_t bytes);

// The ops the test device runs (reference kernels on its own memory).
const std::vector<std::string>& test_device_ops();

}  // namespace tessera::backend
