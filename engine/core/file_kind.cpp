// require_regular_file, require_replaceable_file and require_writable_dir (file_kind.h).
#include "engine/core/file_kind.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera {
namespace {

// "a directory", "a FIFO", ... for a file type other than a regular file.
std::string kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

Status require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error("cannot open for reading: " + std::string(std::strerror(errno)), path);
  if (!S_ISREG(st.st_mode)) return make_error("is " + kind_name(st.st_mode) + ", not a regular file", path);
  return Status::ok();
}

Status require_replaceable_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::ok();
    return make_error(std::strerror(errno), path);
  }
  if (!S_ISREG(st.st_mode))
    return make_error("is " + kind_name(st.st_mode) + ", which an output never replaces: write to a regular file", path);
  return Status::ok();
}

Status require_writable_dir(const std::string& dir_in, bool create) {
  const std::string dir = dir_in.empty() ? "." : dir_in;
  if (create) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error("cannot create the folder: " + ec.message(), dir);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return make_error(errno == ENOENT ? std::string("no such folder") : std::string("the folder cannot be used: ") + std::strerror(errno), dir);
  if (!S_ISDIR(st.st_mode)) return make_error("is " + (S_ISREG(st.st_mode) ? std::string("a regular file") : kind_name(st.st_mode)) + ", not a folder", dir);
  const std::string probe = dir + "/.tessera-write-probe-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(std::string("cannot write in the folder: ") + std::strerror(errno), dir);
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::ok();
}

}  // namespace tessera
