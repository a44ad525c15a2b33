// KernelRegistry and small kernel helpers.
#include "engine/backend/kernel.h"

#include <algorithm>
#include <set>
#include <utility>

namespace tessera::backend {

void KernelRegistry::add(std::string op, std::string impl, int priority, KernelFactory factory) {
  entries_.push_back(std::make_unique<Entry>(Entry{std::move(op), std::move(impl), priority, std::move(factory)}));
}

std::vector<const KernelRegistry::Entry*> KernelRegistry::candidates(const std::string& op) const {
  std::vector<const Entry*> out;
  for (const auto& e : entries_)
    if (e->op == op) out.push_back(e.get());
  std::stable_sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) { return a->priority > b->priority; });
  return out;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::set<std::string> s;
  for (const auto& e : entries_) s.insert(e->op);
  return {s.begin(), s.end()};
}

namespace {
thread_local std::string decline_reason;
}  // namespace

void set_decline_reason(std::string why) { decline_reason = std::move(why); }

std::string take_decline_reason() { return std::exchange(decline_reason, std::string()); }

size_t plain_bytes(const ir::TensorType& type) {
  size_t n = 1;
  for (const ir::Dim& d : type.dims) n *= static_cast<size_t>(d.size);
  return n * static_cast<size_t>(dtype_size(type.dtype));
}

}  // namespace tessera::backend
