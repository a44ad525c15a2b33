// limits_violation (limits.h).
#include "engine/ir/limits.h"

namespace tessera::ir {

std::string limits_violation(const TensorType& t) {
  if (!t.rank_known) return {};
  if (t.rank() > kMaxRank)
    return "rank " + std::to_string(t.rank()) + " is over the limit of " + std::to_string(kMaxRank);
  // The product of the non-zero dims, so that an empty tensor of dims [2^62, 5, 0] cannot make
  // the product of its first two (Flatten's inference, found by onnx_engine_fuzz) overflow: with
  // this bound every partial product of a type's dims fits in 64 bits.
  int64_t n = 1;
  for (const Dim& d : t.dims) {
    if (!d.is_known() || d.size == 0) continue;
    if (__builtin_mul_overflow(n, d.size, &n) || n > kMaxElements)
      return "shape " + t.to_string() + " has over 2^48 elements, or non-zero dims whose product is (the limit per tensor)";
  }
  return {};
}

Expected<std::vector<Dim>> unknown_dims(int64_t rank) {
  if (rank < 0 || rank > kMaxRank)
    return make_error("the output would have rank " + std::to_string(rank) + ", over the limit of " + std::to_string(kMaxRank));
  return std::vector<Dim>(static_cast<size_t>(rank), Dim::unknown());
}

}  // namespace tessera::ir
