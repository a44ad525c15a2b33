// OpRegistry, OpDef arity and attribute lookup with schema defaults.
#include <algorithm>
#include <climits>

#include "engine/ops/op_def.h"

namespace tessera::ops {

const AttrSpec* OpDef::find_attr(const std::string& n) const {
  for (const AttrSpec& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {
int min_count(const std::vector<PortSpec>& ports) {
  // Trailing optional ports may be dropped; an optional port before a required one must be
  // passed as absent, so count up to the last required port.
  int last_required = -1;
  for (size_t i = 0; i < ports.size(); ++i)
    if (!ports[i].optional) last_required = static_cast<int>(i);
  return last_required + 1;
}
int max_count(const std::vector<PortSpec>& ports) {
  if (!ports.empty() && ports.back().variadic) return INT_MAX;
  return static_cast<int>(ports.size());
}
}  // namespace

int OpDef::min_inputs() const { return min_count(inputs); }
int OpDef::max_inputs() const { return max_count(inputs); }
int OpDef::min_outputs() const { return min_count(outputs); }
int OpDef::max_outputs() const { return max_count(outputs); }

void OpRegistry::add(OpDef def) {
  assert(find(def.name) == nullptr && "op registered twice");
  defs_.push_back(std::make_unique<OpDef>(std::move(def)));
}

const OpDef* OpRegistry::find(const std::string& name) const {
  for (const auto& d : defs_)
    if (d->name == name) return d.get();
  return nullptr;
}

OpDef* OpRegistry::find_mutable(const std::string& name) {
  for (auto& d : defs_)
    if (d->name == name) return d.get();
  return nullptr;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& d : defs_) out.push_back(d.get());
  std::sort(out.begin(), out.end(), [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
  return out;
}

void register_all_ops(OpRegistry& registry) {
  register_elementwise_ops(registry);
  register_nn_ops(registry);
  register_tensor_ops(registry);
  register_reduce_ops(registry);
  register_control_ops(registry);
  register_math_ops(registry);
  register_index_ops(registry);
  register_loss_ops(registry);
  register_fused_ops(registry);
  register_runtime_ops(registry);
  register_grad_ops(registry);
  register_train_ops(registry);
  register_recurrent_ops(registry);
  register_quantize_ops(registry);
  register_detection_ops(registry);
  register_signal_ops(registry);
  register_linalg_ops(registry);
  register_sequence_ops(registry);
  register_text_ops(registry);
  register_random_ops(registry);
  register_gradients(registry);
}

OpRegistry make_default_registry() {
  OpRegistry r;
  register_all_ops(r);
  return r;
}

const Attribute* AttrReader::get(const std::string& name) const {
  if (const Attribute* a = node_.attr(name)) return a;
  if (const AttrSpec* spec = def_.find_attr(name); spec && spec->default_value)
    return &*spec->default_value;
  return nullptr;
}

bool AttrReader::has(const std::string& name) const { return get(name) != nullptr; }

const Attribute& AttrReader::must(const std::string& name) const {
  const Attribute* a = get(name);
  // Schema checking (ops::check_node) guarantees required attributes exist before kernels run.
  assert(a != nullptr && "attribute missing and without default");
  return *a;
}

int64_t AttrReader::i(const std::string& name) const { return must(name).i(); }
double AttrReader::f(const std::string& name) const { return must(name).f(); }
const std::string& AttrReader::s(const std::string& name) const { return must(name).s(); }
const std::vector<int64_t>& AttrReader::ints(const std::string& name) const { return must(name).ints(); }
const std::vector<double>& AttrReader::floats(const std::string& name) const {
  return must(name).floats();
}
const Tensor& AttrReader::t(const std::string& name) const { return must(name).t(); }
const ir::Graph& AttrReader::g(const std::string& name) const { return must(name).g(); }

}  // namespace tessera::ops
