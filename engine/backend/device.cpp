// The CPU device and the CPU-side test device.
#include "engine/backend/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "engine/cpu/cpu_backend.h"

namespace tessera::backend {
namespace {

class HostStream : public Stream {
 public:
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status synchronize() override { return Status::ok(); }
};

class CpuDevice : public Device {
 public:
  CpuDevice() { cpu::register_cpu_kernels(kernels_); }
  std::string name() const override { return "cpu"; }
  bool host_accessible() const override { return true; }
  Expected<std::shared_ptr<void>> allocate(size_t bytes) override { return allocate_host(bytes); }
  Stream& stream() override { return stream_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  std::string cannot_run(const ir::Node&, const ops::OpDef& def) const override {
    return def.reference ? "" : "the op has no CPU kernel";
  }
  double cost(const ir::Node& node, const ops::OpDef&) const override {
    return kernels_.candidates(node.op).empty() ? 2.0 : 1.0;
  }

 private:
  KernelRegistry kernels_;
  HostStream stream_;
};

// Memory of the test device is host memory it hands out itself and tags, so tests can tell
// whether a value was copied in (the split stage's copies are real memcpys between two arenas).
class TestDevice : public Device {
 public:
  std::string name() const override { return "cpu:test"; }
  bool host_accessible() const override { return false; }
  Expected<std::shared_ptr<void>> allocate(size_t bytes) override { return allocate_host(bytes); }
  Stream& stream() override { return stream_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  std::string cannot_run(const ir::Node& node, const ops::OpDef&) const override {
    const auto& ok = test_device_ops();
    if (std::find(ok.begin(), ok.end(), node.op) == ok.end())
      return "the test device has no kernel for " + node.op;
    for (const auto& [key, attr] : node.attrs)
      if (attr.kind() == ir::AttrKind::kGraph) return "the test device runs no nested graphs";
    return "";
  }
  // Cheaper than the CPU for what it can run, so that a graph really is split in tests.
  double cost(const ir::Node&, const ops::OpDef&) const override { return 0.5; }

 private:
  KernelRegistry kernels_;
  HostStream stream_;
};

}  // namespace

Expected<std::shared_ptr<void>> allocate_host(size_t bytes) {
  // Refuse what the machine cannot hold before asking for it: Linux overcommits, so a too-large
  // request would "succeed" and the process be killed when the memory is touched.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && bytes > static_cast<size_t>(pages) * static_cast<size_t>(page))
    return make_error("would need " + std::to_string(bytes) + " bytes of host memory, more than this machine's " +
                      std::to_string(static_cast<size_t>(pages) * static_cast<size_t>(page)) + " bytes");
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) return make_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

const std::vector<std::string>& test_device_ops() {
  static const std::vector<std::string> kOps = {"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid",
                                                "Tanh", "MatMul", "Neg", "Exp"};
  return kOps;
}

DeviceSet DeviceSet::standard(bool with_test_device) {
  DeviceSet s;
  s.add(std::make_unique<CpuDevice>());
  if (with_test_device) s.add(std::make_unique<TestDevice>());
  return s;
}

Device* DeviceSet::find(const std::string& name) const {
  for (const auto& d : devices_)
    if (d->name() == name) return d.get();
  return nullptr;
}

std::vector<std::string> DeviceSet::names() const {
  std::vector<std::string> out;
  for (const auto& d : devices_) out.push_back(d->name());
  return out;
}

}  // namespace tessera::backend
