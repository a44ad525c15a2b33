// Whole-file reads, atomic writes and path helpers shared by the format readers and writers.
//
// Usage:
//   TRY(std::string bytes, formats::read_file("model.json"));
//   RETURN_IF_ERROR(formats::write_file_atomic("model.json", text));  // via model.json.tmp
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace tessera::formats {

// The whole file. Errors name the path (Error.where) and the system's reason; what is not a
// regular file (a FIFO, a device, a directory) is refused before it is opened.
Expected<std::string> read_file(const std::string& path);

// Writes `bytes` to PATH.tmp, flushes it, then renames it over PATH, so that readers see either
// the old file or the new one, never a partial write. The .tmp file is removed on failure. What
// is at PATH must be a regular file or nothing: a device, FIFO, directory or symlink is refused,
// not replaced.
Status write_file_atomic(const std::string& path, std::string_view bytes);

// Renames PATH.tmp (already written by the caller) over PATH, refusing as write_file_atomic does;
// removes PATH.tmp on failure.
Status commit_tmp_file(const std::string& tmp_path, const std::string& path);

// "dir/sub/file.json" -> "dir/sub"; "file.json" -> "".
std::string parent_dir(const std::string& path);
// "dir/file.json" -> "file.json".
std::string base_name(const std::string& path);
// `rel` relative to `base_dir` ("" means the working directory); absolute `rel` is kept.
std::string join_path(const std::string& base_dir, const std::string& rel);

}  // namespace tessera::formats
