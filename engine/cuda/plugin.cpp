// The CUDA plugin (libtessera_cuda.so): the cuda:N devices, found at run time by
// backend::DeviceSet::discover through tessera_cuda_add_devices. Only that symbol is exported;
// the engine code linked in here stays private to the plugin.
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "engine/backend/device.h"
#include "engine/cuda/context.h"
#include "engine/cuda/device.h"
#include "engine/ops/infer.h"

namespace tessera::cuda {

std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }
std::string error_text(cublasStatus_t s) { return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s); }
std::string error_text(cudnnStatus_t s) { return cudnnGetErrorString(s); }

Status Context::ensure() {
  std::call_once(once_, [this] {
    ensured_ = [this]() -> Status {
      if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return make_error(name + ": " + error_text(e));
      if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
        return make_error(name + ": creating a stream: " + error_text(e));
      if (cublasStatus_t s = cublasCreate(&cublas); s != CUBLAS_STATUS_SUCCESS) return make_error(name + ": cuBLAS: " + error_text(s));
      cublasSetStream(cublas, stream);
      cublasSetMathMode(cublas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
      // A workspace of its own, allocated once: cuBLAS then allocates nothing while a CUDA graph
      // is captured (as PyTorch does).
      constexpr size_t kWorkspace = size_t{32} << 20;
      TRY(cublas_workspace, allocate(kWorkspace));
      if (cublasStatus_t s = cublasSetWorkspace(cublas, cublas_workspace.get(), kWorkspace); s != CUBLAS_STATUS_SUCCESS)
        return make_error(name + ": cuBLAS workspace: " + error_text(s));
      if (cudnnStatus_t s = cudnnCreate(&cudnn); s != CUDNN_STATUS_SUCCESS) return make_error(name + ": cuDNN: " + error_text(s));
      cudnnSetStream(cudnn, stream);
      return Status::ok();
    }();
  });
  return ensured_;
}

Expected<std::shared_ptr<void>> Context::allocate(size_t bytes) {
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return make_error(name + ": " + error_text(e));
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 1));
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls work
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    return make_error("cannot allocate " + std::to_string(bytes) + " bytes on " + name + " (" + std::to_string(free) +
                      " of " + std::to_string(total) + " bytes free): " + error_text(e));
  }
  ++malloc_calls;
  const int dev = device;
  return std::shared_ptr<void>(p, [dev](void* q) {
    cudaSetDevice(dev);
    cudaFree(q);
  });
}

namespace {

class CudaStream : public backend::Stream {
 public:
  explicit CudaStream(Context* ctx) : ctx_(ctx) {}
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    RETURN_IF_ERROR(ctx_->ensure());
    cudaSetDevice(ctx_->device);
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx_->stream);
    if (e != cudaSuccess) return make_error("copy of " + std::to_string(bytes) + " bytes on " + ctx_->name + ": " + error_text(e));
    return Status::ok();
  }
  Status synchronize() override {
    RETURN_IF_ERROR(ctx_->ensure());
    const cudaError_t e = cudaStreamSynchronize(ctx_->stream);
    // A kernel that failed while running reports here: name the device and what failed.
    if (e != cudaSuccess) return make_error(ctx_->name + ": a kernel or copy failed: " + error_text(e));
    return Status::ok();
  }
  // CUDA graphs (off with TESSERA_CUDA_GRAPHS=0): capture on this thread only, so that another
  // thread's CUDA calls (a second session's cudaMalloc) cannot invalidate the capture.
  bool captures() const override {
    static const bool on = [] {
      const char* v = std::getenv("TESSERA_CUDA_GRAPHS");
      return !(v && std::string(v) == "0");
    }();
    return on;
  }
  Status begin_capture() override {
    RETURN_IF_ERROR(ctx_->ensure());
    cudaSetDevice(ctx_->device);
    const cudaError_t e = cudaStreamBeginCapture(ctx_->stream, cudaStreamCaptureModeThreadLocal);
    return e == cudaSuccess ? Status::ok() : make_error(ctx_->name + ": cannot capture a CUDA graph: " + error_text(e));
  }
  Expected<std::shared_ptr<void>> end_capture() override {
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(ctx_->stream, &graph);
    if (e != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      return make_error(ctx_->name + ": capturing a CUDA graph failed: " + error_text(e));
    }
    cudaGraphExec_t exec = nullptr;
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return make_error(ctx_->name + ": instantiating a CUDA graph failed: " + error_text(e));
    }
    return std::shared_ptr<void>(static_cast<void*>(exec), [](void* x) { cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(x)); });
  }
  Status replay(void* graph) override {
    cudaSetDevice(ctx_->device);
    const cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), ctx_->stream);
    return e == cudaSuccess ? Status::ok() : make_error(ctx_->name + ": launching a CUDA graph: " + error_text(e));
  }

 private:
  Context* ctx_;
};

class CudaDevice : public backend::Device {
 public:
  static Expected<std::unique_ptr<CudaDevice>> create(int index, bool tf32) {
    std::unique_ptr<CudaDevice> d(new CudaDevice(index));
    d->ctx_.tf32 = tf32;
    if (cudaError_t e = cudaSetDevice(index); e != cudaSuccess) return make_error(d->ctx_.name + ": " + error_text(e));
    register_kernels(d->kernels_, &d->ctx_);
    return d;
  }
  ~CudaDevice() override {
    cudaSetDevice(ctx_.device);
    if (ctx_.stream) cudaStreamSynchronize(ctx_.stream);
    if (ctx_.cudnn) cudnnDestroy(ctx_.cudnn);
    if (ctx_.cublas) cublasDestroy(ctx_.cublas);
    if (ctx_.stream) cudaStreamDestroy(ctx_.stream);
  }

  std::string name() const override { return ctx_.name; }
  std::string description() const override {
    std::string s = device_description(ctx_.device);
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, ctx_.device) == cudaSuccess) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", %.1f GiB, %d SMs", static_cast<double>(p.totalGlobalMem) / (1 << 30), p.multiProcessorCount);
      s += buf;
    }
    int driver = 0, runtime = 0, cublas_major = 0, cublas_minor = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cublasGetProperty(MAJOR_VERSION, &cublas_major);
    cublasGetProperty(MINOR_VERSION, &cublas_minor);
    const std::string cublas = std::to_string(cublas_major) + "." + std::to_string(cublas_minor);
    const size_t cudnn = cudnnGetVersion();
    s += ", driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ", runtime " +
         std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ", cuBLAS " + cublas +
         ", cuDNN " + std::to_string(cudnn) + (ctx_.tf32 ? ", TF32 on" : ", TF32 off");
    return s;
  }
  bool host_accessible() const override { return false; }
  bool runs_reference() const override { return false; }
  Expected<std::shared_ptr<void>> allocate(size_t bytes) override {
    RETURN_IF_ERROR(ctx_.ensure());
    return ctx_.allocate(bytes);
  }
  size_t allocations() const override { return ctx_.malloc_calls; }
  backend::Stream& stream() override { return stream_; }
  const backend::KernelRegistry& kernels() const override { return kernels_; }

  // A node runs here when one of the kernels takes it, with its types as the graph has them.
  std::string cannot_run(const ir::Graph& g, const ir::Node& n, const ops::OpDef& def) const override {
    const auto candidates = kernels_.candidates(n.op);
    if (candidates.empty()) return "no CUDA kernel for " + n.op;
    if (Status st = ctx_.ensure(); !st) return st.error().message;
    for (const auto& [key, attr] : n.attrs) {
      if (attr.kind() == ir::AttrKind::kGraph) return "nested graphs run on the CPU";
      if (key == backend::kLayoutAttr && attr.kind() == ir::AttrKind::kString && !attr.s().empty())
        return "a oneDNN blocked layout (" + attr.s() + ")";
    }
    std::vector<const ir::TensorType*> in_types, out_types;
    std::vector<const Tensor*> constants;
    std::vector<backend::LayoutTag> layouts;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) {
        in_types.push_back(nullptr);
        constants.push_back(nullptr);
      } else {
        const ir::TensorType& t = g.value(v).type;
        if (!t.is_tensor() || !t.is_static()) return "input '" + g.value(v).name + "' has a shape known only at run time";
        in_types.push_back(&t);
        constants.push_back(ops::constant_value(g, v));
      }
      layouts.push_back("");
    }
    for (ir::ValueId v : n.outputs) {
      const ir::TensorType& t = g.value(v).type;
      if (!t.is_tensor() || !t.is_static()) return "output '" + g.value(v).name + "' has a shape known only at run time";
      out_types.push_back(&t);
    }
    backend::KernelInit init{n, def, in_types, out_types, constants, layouts, "", 1};
    std::string why;
    for (const auto* entry : candidates) {
      backend::take_decline_reason();
      Expected<std::unique_ptr<backend::Kernel>> k = entry->factory(init);
      if (k && *k) return "";
      const std::string r = k ? backend::take_decline_reason() : k.error().message;
      why += (why.empty() ? "" : "; ") + entry->impl + (r.empty() ? " declined" : ": " + r);
    }
    return why;
  }
  // Cheaper than the CPU for everything it runs: the split keeps chains on the GPU.
  double cost(const ir::Node&, const ops::OpDef&) const override { return 0.25; }

 private:
  explicit CudaDevice(int index) : stream_(&ctx_) {
    ctx_.device = index;
    ctx_.name = "cuda:" + std::to_string(index);
  }
  mutable Context ctx_;  // its handles are made on first use, from const queries too
  CudaStream stream_;
  backend::KernelRegistry kernels_;
};

}  // namespace
}  // namespace tessera::cuda

extern "C" __attribute__((visibility("default"))) int tessera_cuda_add_devices(int abi, tessera::backend::DeviceSet* set,
                                                                              bool tf32, std::string* why) {
  using namespace tessera;
  if (abi != backend::kPluginAbi) {
    *why = "libtessera_cuda.so is of another build (plugin ABI " + std::to_string(backend::kPluginAbi) + ", engine " +
           std::to_string(abi) + ")";
    return 0;
  }
  const int n = cuda::device_count(why);
  int added = 0;
  for (int i = 0; i < n; ++i) {
    auto d = cuda::CudaDevice::create(i, tf32);
    if (!d) {
      *why += (why->empty() ? "" : "; ") + d.error().message;
      continue;
    }
    set->add(std::move(*d));
    ++added;
  }
  return added;
}
