// Kernels made at run time for the shapes a step sees (specialise.h says why and how).
#include "engine/stages/specialise.h"

#include <algorithm>

namespace tessera::stages {

struct ShapeSpecialised::Entry {
  std::vector<ir::TensorType> in_types, out_types;
  std::vector<Tensor> values;          // the shape arguments, kept for the kernel's constants
  std::unique_ptr<backend::Kernel> kernel;  // null: no fast kernel takes these shapes
  std::vector<Tensor> buffers;         // outputs
  Tensor scratch;
};

ShapeSpecialised::ShapeSpecialised() = default;
ShapeSpecialised::~ShapeSpecialised() = default;

namespace {

bool is_shape_argument(const Tensor& t) {
  return (t.dtype() == DType::kI64 || t.dtype() == DType::kI32) && t.numel() <= ShapeSpecialised::kMaxValueElements;
}

}  // namespace

Expected<bool> ShapeSpecialised::run(const ir::Node& node, const ops::OpDef& def, const backend::KernelRegistry& kernels,
                                     int threads, const std::vector<const Tensor*>& inputs,
                                     const std::vector<const Tensor*>& constants, std::vector<Tensor>& outputs) {
  // The key: each input's presence, dtype and shape, and a shape argument's values.
  std::vector<int64_t> key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (t == nullptr) {
      key.push_back(-1);
      continue;
    }
    if (!t->is_tensor()) {  // a sequence or an optional: the reference kernel
      ++reference_runs_;
      why_reference_ = "input " + std::to_string(i) + " is not a tensor";
      return false;
    }
    key.push_back(static_cast<int64_t>(t->dtype()));
    key.push_back(t->rank());
    for (int64_t d : t->shape()) key.push_back(d);
    if (constants[i] == nullptr && is_shape_argument(*t)) {
      const Tensor c = t->contiguous();
      for (int64_t k = 0; k < c.numel(); ++k) key.push_back(static_cast<int64_t>(c.get(k)));
    }
  }
  auto it = cache_.begin();
  while (it != cache_.end() && it->first != key) ++it;
  if (it != cache_.end()) {
    cache_.splice(cache_.begin(), cache_, it);  // most recently used first
  } else {
    auto e = std::make_unique<Entry>();
    e->in_types.resize(inputs.size());
    e->values.resize(inputs.size());
    std::vector<const ir::TensorType*> in_types(inputs.size(), nullptr);
    std::vector<const Tensor*> consts = constants;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == nullptr) continue;
      e->in_types[i] = ir::TensorType::of(inputs[i]->dtype(), inputs[i]->shape());
      in_types[i] = &e->in_types[i];
      if (constants[i] == nullptr && is_shape_argument(*inputs[i])) {
        e->values[i] = inputs[i]->clone();
        consts[i] = &e->values[i];
      }
    }
    std::string why;
    ops::InferContext ictx{node, def, in_types, consts};
    Expected<std::vector<ir::TensorType>> out = def.infer ? def.infer(ictx) : Expected<std::vector<ir::TensorType>>(make_error("no inference"));
    if (!out.has_value()) {
      why = "types: " + out.error().message;
    } else {
      e->out_types = std::move(*out);
      e->out_types.resize(node.outputs.size());
      for (const ir::TensorType& t : e->out_types)
        if (!t.is_tensor() || !t.is_static()) why = "an output's shape depends on the data";
    }
    if (why.empty()) {
      std::vector<const ir::TensorType*> out_types;
      for (const ir::TensorType& t : e->out_types) out_types.push_back(&t);
      backend::KernelInit init{node, def, in_types, out_types, consts, std::vector<backend::LayoutTag>(inputs.size()), "", threads};
      backend::take_decline_reason();
      // A step whose shapes keep changing (it made kernels before) tries the kernels without
      // setup first: oneDNN JIT-compiles a primitive per shape (a decoder's Div by the scale of
      // the growing attention: 0.2 ms a token), the vectorised loops cost nothing to make.
      std::vector<const backend::KernelRegistry::Entry*> order = kernels.candidates(node.op);
      if (kernels_made_ >= 2)
        std::stable_partition(order.begin(), order.end(),
                              [](const backend::KernelRegistry::Entry* c) { return c->impl.rfind("cpu.vec:", 0) == 0; });
      for (const auto* entry : order) {
        Expected<std::unique_ptr<backend::Kernel>> k = entry->factory(init);
        if (k.has_value() && *k) {
          e->kernel = std::move(*k);
          break;
        }
      }
      if (!e->kernel) why = "no fast kernel for these shapes" + [] {
        std::string r = backend::take_decline_reason();
        return r.empty() ? std::string() : " (" + r + ")";
      }();
    }
    if (e->kernel && !e->kernel->is_view()) {
      Status st = e->kernel->load();
      for (size_t i = 0; st.is_ok() && i < e->out_types.size(); ++i) {
        const ir::TensorType& t = e->out_types[i];
        Expected<Tensor> buf = Tensor::create_uninitialized(t.dtype, t.static_shape());
        if (!buf.has_value()) st = buf.error();
        else if (buf->nbytes() != e->kernel->output_bytes(i)) st = make_error("output " + std::to_string(i) + " is not plain");
        else e->buffers.push_back(std::move(*buf));
      }
      if (st.is_ok() && e->kernel->scratch_bytes() > 0) {
        Expected<Tensor> s = Tensor::create_uninitialized(DType::kU8, {static_cast<int64_t>(e->kernel->scratch_bytes() + 64)});
        if (s.has_value()) e->scratch = std::move(*s);
        else st = s.error();
      }
      if (!st.is_ok()) {
        why = "kernel " + e->kernel->name() + ": " + st.error().message;
        e->kernel.reset();
        e->buffers.clear();
      }
    }
    if (e->kernel) ++kernels_made_;
    else why_reference_ = why;
    cache_.emplace_front(std::move(key), std::move(e));
    if (cache_.size() > kMaxShapes) cache_.pop_back();
  }
  Entry& e = *cache_.front().second;
  if (!e.kernel) {
    ++reference_runs_;
    return false;
  }
  ++kernel_runs_;
  outputs.clear();
  if (e.kernel->is_view()) {  // the input's bytes under the output's shape
    Tensor in = inputs[0]->is_contiguous() ? *inputs[0] : inputs[0]->contiguous();
    auto view = in.reshape(e.out_types[0].static_shape());
    if (!view) return make_error("a view of " + shape_to_string(in.shape()) + " as " + e.out_types[0].to_string());
    outputs.push_back(std::move(*view));
    return true;
  }
  // The last run's outputs still held elsewhere stay theirs.
  for (size_t i = 0; i < e.buffers.size(); ++i)
    if (!e.buffers[i].storage_unique()) {
      const ir::TensorType& t = e.out_types[i];
      TRY(e.buffers[i], Tensor::create_uninitialized(t.dtype, t.static_shape()));
    }
  backend::KernelRun run;
  std::vector<Tensor> held;
  held.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    if (t == nullptr) {
      run.inputs.push_back({});
      continue;
    }
    held.push_back(t->is_contiguous() ? *t : t->contiguous());
    run.inputs.push_back({const_cast<void*>(held.back().raw_data()), held.back().nbytes()});
  }
  for (Tensor& b : e.buffers) run.outputs.push_back({b.raw_data(), b.nbytes()});
  if (e.kernel->scratch_bytes() > 0) {
    auto p = reinterpret_cast<uintptr_t>(e.scratch.raw_data());
    run.scratch = {reinterpret_cast<void*>((p + 63) / 64 * 64), e.kernel->scratch_bytes()};
  }
  RETURN_IF_ERROR(e.kernel->run(run));
  outputs = e.buffers;
  return true;
}

}  // namespace tessera::stages
