// Training checkpoints: named tensors (weights, optimizer buffers, running statistics) and
// metadata (where training stopped, the seed, the graph's signature), in one file with a checksum.
//
// File layout (little-endian):
//   "TSRCKPT\0"  u32 version (1)  u32 0  u64 payload_size  payload  u64 XXH3-64(payload)
//   payload := u32 n_meta, n_meta x (str key, str value),
//              u32 n_tensors, n_tensors x (str name, u8 dtype, u32 rank, i64 dims[rank], u64 nbytes, bytes)
//   str := u32 length, bytes
//
// Writing is atomic: the bytes go to "<path>.tmp", are fsync'ed, then renamed over <path>; any
// failure (a full disk) removes the temporary file and leaves the previous checkpoint as it was.
// Reading checks the magic, version, sizes against the file size, and the checksum before
// trusting any count, and names the file and the place of any fault.
//
//   Checkpoint c;  c.meta["global_step"] = "100";  c.tensors.push_back({"conv1.w", w});
//   RETURN_IF_ERROR(write_checkpoint("run/step-100.tsc", c));
//   TRY(Checkpoint back, read_checkpoint("run/step-100.tsc"));
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace tessera::ir {
class Graph;
}

namespace tessera::train {

struct Checkpoint {
  std::map<std::string, std::string> meta;
  std::vector<std::pair<std::string, Tensor>> tensors;  // in state-slot order

  const Tensor* find(const std::string& name) const;
  std::string get(const std::string& key) const;  // "" when absent
};

Status write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
Expected<Checkpoint> read_checkpoint(const std::string& path);
// 64-bit value as 16 lower-case hex digits (checksums, graph signatures).
std::string hex64(uint64_t v);
// The checksum stored in a checkpoint file, as 16 hex digits (for lineage records).
Expected<std::string> checkpoint_checksum(const std::string& path);

// Loads a checkpoint's tensors into the params of the same names; refused (the graph unchanged)
// when a float param has no tensor, a tensor is no param nor optimizer buffer of one, or a dtype or
// shape differs. With `inputs_become_params`, graph inputs named like a checkpoint tensor become
// params first (graphs recorded by insight store their weights as inputs).
Status apply_checkpoint(ir::Graph& g, const std::string& path, bool inputs_become_params = false);

}  // namespace tessera::train
