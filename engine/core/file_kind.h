// What kind of file a path names, so that readers refuse what cannot be read with a bound (a FIFO
// blocks forever, /dev/zero never ends) and writers never replace what is not a regular file (an
// output renamed over /dev/full, a FIFO or a symlink would destroy it).
//
// Usage:
//   RETURN_IF_ERROR(require_regular_file(path));      // before opening an input
//   RETURN_IF_ERROR(require_replaceable_file(path));  // before writing PATH.tmp and renaming it
//   RETURN_IF_ERROR(require_writable_dir(dir, true)); // before a long job that writes there
#pragma once

#include <string>

#include "engine/core/status.h"

namespace tessera {

// OK when `path` is a regular file (symlinks followed). Otherwise an error naming the path and
// what it is ("is a FIFO, not a regular file") or why it cannot be looked at ("cannot open for
// reading: No such file or directory").
Status require_regular_file(const std::string& path);

// OK when nothing is at `path` or a regular file is (symlinks not followed: a symlink is refused,
// since renaming over it would replace the link, not its target). Otherwise an error naming the
// path and what is there.
Status require_replaceable_file(const std::string& path);

// OK when new files can be created in the folder `dir` ("" is the working directory): it exists
// (or, with `create`, is created with its parents) and a probe file can be made and removed in
// it. Otherwise an error naming the folder and the reason ("is a regular file, not a folder",
// "Permission denied", "Read-only file system"). For outputs a long job writes at its end (a
// trained graph, checkpoints), so that a bad path fails before the job, not after it.
Status require_writable_dir(const std::string& dir, bool create);

}  // namespace tessera
