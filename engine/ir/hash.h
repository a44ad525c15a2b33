// Structural hash of a graph: two graphs with the same hash print the same text (ir/text.h).
//
// Usage:
//   uint64_t h = ir::structural_hash(graph);
//   ir::GraphHasher hasher;                  // reuses the hashes of large param tensors
//   uint64_t h1 = hasher.hash(graph); ...; uint64_t h2 = hasher.hash(graph);
//
// What is hashed (xxHash XXH3-64, streaming): the graph name; inputs, params and captures in list
// order (id, name, type); every param's dtype, shape and bytes; every live node in id order (id,
// op, name, operands, outputs with their names and types, attributes with nested graphs hashed
// recursively, provenance); the output list. Ids are included on purpose: ids are stable across
// passes, the hash is what the pass manager compares to catch a pass that claims "unchanged" while
// it edited the graph, and renumbering is an edit the studio's diff shows. Hashing the printed text
// would be equivalent but formats every weight as decimal text; hashing bytes is ~100x faster.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "engine/ir/graph.h"

namespace tessera::ir {

// The structural hash described above. Deterministic across runs and machines of one endianness.
uint64_t structural_hash(const Graph& graph);
// The same without provenance (which file and node each node came from, as the path was typed):
// what a training checkpoint must fit, so that ./lenet.json and lenet.json give one signature.
uint64_t signature_hash(const Graph& graph);

// Hash of one attribute (tensor values by bytes, graphs structurally); CSE keys on it.
uint64_t attribute_hash(const Attribute& attr);
// Hash of a tensor's dtype, shape and contiguous bytes.
uint64_t tensor_hash(const Tensor& tensor);

// A hasher that memoises the hash of param tensors of at least kMemoBytes, keyed by storage
// address and size. It keeps each memoised tensor alive, so an address cannot be reused by another
// tensor while the hasher lives. Contract: param data is never modified in place (passes build new
// tensors); a pass that writes into a shared weight in place is not detected.
class GraphHasher {
 public:
  static constexpr size_t kMemoBytes = 4096;
  uint64_t hash(const Graph& graph);

 private:
  friend class HashState;
  uint64_t param_hash(const Tensor& t);
  struct Memo {
    Tensor keep_alive;
    uint64_t hash;
  };
  std::unordered_map<const void*, Memo> memo_;
};

}  // namespace tessera::ir
