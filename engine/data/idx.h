// IDX files (the MNIST / Fashion-MNIST format), plain or gzipped, as a Source.
//
// Usage:
//   TRY(auto train, data::open_mnist_dir("/usr/share/datasets/fashion-mnist", "train"));
//   train->size();   // 60000; fields "x" f32 [1, 28, 28] in [0, 1], "labels" i64 []
//   TRY(data::IdxArray labels, data::parse_idx(bytes.data(), bytes.size(), 1, "labels.gz"));
//
// Format: a big-endian u32 magic 0x000008DD (0x08 = unsigned bytes, DD = number of dims), DD
// big-endian u32 dims, then the bytes in row-major order. Images are idx3 (N, H, W), labels idx1
// (N). A file ending in anything is read through zlib's gzread, which decompresses gzip data and
// passes plain data through. Both files are read whole at open (MNIST: 47 MB) and kept as bytes;
// get() converts one example. Sizes from headers are never allocated before the data is seen:
// the reader grows its buffer as bytes actually arrive, so a lying header costs nothing
// (tests/fuzz/idx_fuzz checks this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/data/dataset.h"

namespace tessera::data {

// One u8 IDX array.
struct IdxArray {
  std::vector<int64_t> dims;         // each in [0, 2^32), their product checked by checked_numel
  std::vector<unsigned char> bytes;  // row-major, product(dims) bytes
};

// Decodes a whole u8 IDX file of `rank` dims (1..255) held in memory, gzipped or plain (gzip
// data is recognised by its magic 1f 8b, as gzread does); `where` names it in errors. The same
// decoder and errors as the file readers below; nothing is allocated beyond what the bytes hold.
Expected<IdxArray> parse_idx(const void* data, size_t size, int rank, const std::string& where);

// Images (u8 idx3) and labels (u8 idx1) of the same count. Errors: a missing or unreadable file,
// a bad magic, truncated or overlong data ("expected N bytes, found M"), counts that differ
// (naming both files and both counts). Labels are kept as they are (0..255).
Expected<std::shared_ptr<const Source>> open_idx_pair(const std::string& images_path,
                                                      const std::string& labels_path);

// `split` "train" or "test": DIR/train-images-idx3-ubyte[.gz] and DIR/train-labels-idx1-ubyte[.gz],
// or t10k-... for "test"; the gzipped name is used when the plain one is absent.
Expected<std::shared_ptr<const Source>> open_mnist_dir(const std::string& dir,
                                                       const std::string& split);

}  // namespace tessera::data
