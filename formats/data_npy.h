// NumPy arrays as a training Source: .npy pairs and .npz archives, held in memory.
//
// Usage:
//   TRY(auto train, formats::open_npz_source("mnist.npz", "x_train", "y_train"));
//   TRY(auto test, formats::open_npy_source("x_test.npy", "y_test.npy"));
//   // fields: "x" f32 [per-example shape of the array], "labels" i64 []
//
// The array's first dim indexes examples. "x" is converted to f32; u8 arrays are scaled by 1/255
// (as the IDX and image-folder sources do, so raw MNIST-style pixels land in [0, 1]), every other
// dtype keeps its values. Labels must be an integer array of shape [N] and become i64. Errors name
// the file (and the .npz key) and say what is wrong: a missing key (listing the keys present), a
// scalar array, a non-integer or non-1-D label array, counts that differ.
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/data/dataset.h"

namespace tessera::formats {

Expected<std::shared_ptr<const data::Source>> open_npy_source(const std::string& x_path,
                                                              const std::string& labels_path);

Expected<std::shared_ptr<const data::Source>> open_npz_source(
    const std::string& path, const std::string& x_key = "x",
    const std::string& labels_key = "labels");

}  // namespace tessera::formats
