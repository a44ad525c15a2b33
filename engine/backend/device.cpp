// The CPU device, the CPU-side test device, and discovery of the CUDA plugin's devices.
#include "engine/backend/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include <dlfcn.h>
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
  std::string description() const override {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model = "unknown CPU";
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
        model = line.substr(line.find(':') + 2);
        break;
      }
    return model + ", " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " hardware threads";
  }
  bool host_accessible() const override { return true; }
  Expected<std::shared_ptr<void>> allocate(size_t bytes) override { return allocate_host(bytes); }
  Stream& stream() override { return stream_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  std::string cannot_run(const ir::Graph&, const ir::Node&, const ops::OpDef& def) const override {
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
  std::string cannot_run(const ir::Graph&, const ir::Node& node, const ops::OpDef&) const override {
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

namespace {

// The plugin, loaded once per process. Without an NVIDIA driver (libcuda.so.1) it is not even
// opened: machines without a GPU pay nothing for CUDA.
struct Plugin {
  AddDevicesFn add = nullptr;
  std::string why;  // why there is none
};

std::string plugin_dir_of_this_module() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&allocate_host), &info) == 0 || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  if (path.find('/') == std::string::npos) {  // the executable itself: dladdr gives argv[0]
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    path.assign(buf, static_cast<size_t>(n));
  }
  return path.substr(0, path.rfind('/'));
}

const Plugin& plugin() {
  static Plugin p;
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* off = std::getenv("TESSERA_NO_CUDA"); off && *off && std::string(off) != "0") {
      p.why = "TESSERA_NO_CUDA is set";
      return;
    }
    // Where to look: $TESSERA_CUDA_PLUGIN (then loaded even without a driver, so that CUDA itself
    // says what is missing), then beside this program or module (../lib, ../../lib: the build
    // tree's lib/), then an installed ../lib/tessera, then the build tree this came from.
    std::vector<std::string> candidates;
    const char* env = std::getenv("TESSERA_CUDA_PLUGIN");
    if (env && *env) {
      if (access(env, F_OK) != 0) {
        p.why = std::string("TESSERA_CUDA_PLUGIN names ") + env + ", which does not exist";
        return;
      }
      candidates.push_back(env);
    } else if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); !driver) {
      p.why = "no NVIDIA driver (libcuda.so.1 cannot be loaded)";
      return;
    }
    if (std::string dir = plugin_dir_of_this_module(); !dir.empty())
      for (const char* rel : {"/libtessera_cuda.so", "/../lib/libtessera_cuda.so", "/../../lib/libtessera_cuda.so",
                              "/../lib/tessera/libtessera_cuda.so"})
        candidates.push_back(dir + rel);
#ifdef TESSERA_PLUGIN_BUILD_DIR
    candidates.push_back(std::string(TESSERA_PLUGIN_BUILD_DIR) + "/libtessera_cuda.so");
#endif
    std::string errors;
    for (const std::string& path : candidates) {
      if (access(path.c_str(), F_OK) != 0) continue;
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        errors += (errors.empty() ? "" : "; ") + std::string(e ? e : path);
        continue;
      }
      p.add = reinterpret_cast<AddDevicesFn>(dlsym(h, kAddDevicesSymbol));
      if (!p.add) errors += (errors.empty() ? "" : "; ") + path + " has no " + kAddDevicesSymbol;
      if (p.add) return;
    }
    p.why = errors.empty() ? "this build has no CUDA backend (libtessera_cuda.so not found)"
                           : "the CUDA backend cannot be loaded: " + errors;
  });
  return p;
}

}  // namespace

DeviceSet DeviceSet::discover(bool with_test_device, bool with_cuda, bool tf32) {
  DeviceSet s = standard(with_test_device);
  if (!with_cuda) return s;
  const Plugin& p = plugin();
  if (!p.add) {
    s.cuda_unavailable_ = p.why;
    return s;
  }
  std::string why;
  if (p.add(kPluginAbi, &s, tf32, &why) == 0) s.cuda_unavailable_ = why.empty() ? "no CUDA device" : why;
  return s;
}

Expected<std::string> DeviceSet::resolve(const std::string& choice) const {
  auto first_cuda = [&]() -> std::string {
    for (const auto& d : devices_)
      if (d->name().rfind("cuda:", 0) == 0) return d->name();
    return "";
  };
  if (choice == "auto" || choice.empty()) {
    std::string c = first_cuda();
    return c.empty() ? std::string("cpu") : c;
  }
  const std::string name = choice == "cuda" ? "cuda:0" : choice;
  if (find(name)) return name;
  if (name.rfind("cuda", 0) == 0) {
    if (first_cuda().empty())
      return make_error("--device " + choice + ": no CUDA device is usable here: " +
                        (cuda_unavailable_.empty() ? "CUDA was not looked for" : cuda_unavailable_));
    return make_error("--device " + choice + ": no such device (devices: " + [&] {
      std::string all;
      for (const auto& n : names()) all += (all.empty() ? "" : ", ") + n;
      return all;
    }() + ")");
  }
  return make_error("--device " + choice + ": expected cpu, cuda, cuda:N or auto");
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
