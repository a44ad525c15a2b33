// Shared by the vectorised kernel files (vec_kernels.cpp, vec_train.cpp): a Kernel from a
// lambda, and the plain-layout check. Internal to engine/cpu.
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/cpu/onednn_util.h"

namespace tessera::cpu {

class VecKernel : public Kernel {
 public:
  using Fn = std::function<Status(KernelRun&)>;
  VecKernel(std::string name, std::vector<size_t> out_bytes, Fn fn, bool view = false)
      : name_(std::move(name)), out_bytes_(std::move(out_bytes)), fn_(std::move(fn)), view_(view) {}
  std::string name() const override { return name_; }
  size_t output_bytes(size_t i) const override { return i < out_bytes_.size() ? out_bytes_[i] : 0; }
  bool is_view() const override { return view_; }
  Status run(KernelRun& run) override { return fn_(run); }

 private:
  std::string name_;
  std::vector<size_t> out_bytes_;
  Fn fn_;
  bool view_;
};

inline Expected<KernelPtr> make(const std::string& name, const KernelInit& init, VecKernel::Fn fn) {
  std::vector<size_t> bytes;
  for (const ir::TensorType* t : init.out_types) bytes.push_back(backend::plain_bytes(*t));
  return KernelPtr(new VecKernel(name, std::move(bytes), std::move(fn)));
}

// A kernel whose one output is its input's bytes (is_view()): a memcpy of `bytes` when it runs.
inline Expected<KernelPtr> make_byte_copy(const std::string& name, size_t bytes) {
  return KernelPtr(new VecKernel(
      name, {bytes},
      [bytes](KernelRun& run) {
        if (bytes && run.outputs[0].data != run.inputs[0].data)
          std::memcpy(run.outputs[0].data, run.inputs[0].data, bytes);
        return Status::ok();
      },
      /*view=*/true));
}

// Plain layouts, static types on every present input and output.
inline bool plain_static(const KernelInit& init) {
  if (!all_plain(init)) return false;
  for (const ir::TensorType* t : init.in_types)
    if (t && !t->is_static()) return false;
  for (const ir::TensorType* t : init.out_types)
    if (!t || !t->is_static()) return false;
  return true;
}

}  // namespace tessera::cpu
