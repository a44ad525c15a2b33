// A training data set named by a path, as `tessera train --data` and the studio's Train panel take
// it: an MNIST-style IDX folder (train-images-idx3-ubyte[.gz] ...), a folder of class folders
// (DIR/train/<class>/*.png, or DIR/<class>/*.png for a train split only), a .csv (label first) or
// a .npz (x / labels, and optionally x_test / labels_test).
//
// Usage:
//   TRY(auto train, formats::open_dataset_split(path, "train", /*channels*/ 1));
//   TRY(auto test, formats::open_dataset_split(path, "test", 1));   // may be null: no test split
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/data/dataset.h"

namespace tessera::formats {

// One split ("train" or "test") of the data set at `path`; images are read with `channels`
// channels (1 or 3). A null source when the data set has no such split (a .csv or a plain class
// folder has no test split). Errors name the path and list the layouts understood.
// The image channels a graph's first input takes ([N, C, H, W]: C; else 1): how many channels
// to read an image folder with.
int image_channels(const ir::Graph& graph);

Expected<std::shared_ptr<const data::Source>> open_dataset_split(const std::string& path,
                                                                 const std::string& split, int channels);

}  // namespace tessera::formats
