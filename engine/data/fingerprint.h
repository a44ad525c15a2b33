// A cheap content fingerprint of a Source, for training lineage ("which data did this run see").
//
// Usage:
//   TRY(std::string fp, data::fingerprint(*train));   // "xxh3:5f0c9a1e2b7d4c63"
//
// Hashed (XXH3-64): the example count; every field's name, dtype and shape; for each of
// source.files(): its path relative to the files' common folder and its size; and the first and
// last 64 KiB of the first and the last file. A source without files (in memory) contributes the
// bytes of its first and last examples instead. So the fingerprint survives moving or copying the
// data set and touching its files, changes when files are added, removed, renamed, resized or
// rewritten at either end, and costs a stat per file plus at most 256 KiB of reading; it does not
// see an edit in the middle of a file of the same size (a full hash would read everything).
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/data/dataset.h"

namespace tessera::data {

// Errors: a listed file that cannot be stat'ed or read (Error.where = the file), a failing get().
Expected<std::string> fingerprint(const Source& source);

}  // namespace tessera::data
