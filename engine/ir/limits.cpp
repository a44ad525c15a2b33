// limits_violation (limits.h).
#include "engine/ir/limits.h"

namespace tessera::ir {

std::string limits_violation(const TensorType& t) {
  if (!t.rank_known) return {};
  if (t.rank() > kMaxRank)
    return "rank " + std::to_string(t.rank()) + " is over the limit of " + std::to_string(kMaxRank);
  int64_t n = 1;
  for (const Dim& d : t.dims) {
    if (!d.is_known()) continue;
    if (d.size == 0) return {};
    if (__builtin_mul_overflow(n, d.size, &n) || n > kMaxElements)
      return "shape " + t.to_string() + " has over 2^48 elements (the limit per tensor)";
  }
  return {};
}

Expected<std::vector<Dim>> unknown_dims(int64_t rank) {
  if (rank < 0 || rank > kMaxRank)
    return make_error("the output would have rank " + std::to_string(rank) + ", over the limit of " + std::to_string(kMaxRank));
  return std::vector<Dim>(static_cast<size_t>(rank), Dim::unknown());
}

}  // namespace tessera::ir
