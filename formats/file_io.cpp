// Whole-file reads, atomic writes and path helpers.
#include "formats/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "engine/core/file_kind.h"

namespace tessera::formats {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

Expected<std::string> read_file(const std::string& path) {
  RETURN_IF_ERROR(require_regular_file(path));  // a FIFO would block, /dev/zero never end
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) return make_error("cannot open for reading: " + errno_text(errno), path);
  std::string out;
  char buf[1 << 16];
  try {
    for (;;) {
      const size_t n = std::fread(buf, 1, sizeof buf, f.get());
      out.append(buf, n);
      if (n < sizeof buf) break;
    }
  } catch (const std::bad_alloc&) {
    return make_error("out of memory reading the file", path);
  }
  if (std::ferror(f.get())) return make_error("read error: " + errno_text(errno), path);
  return out;
}

Status commit_tmp_file(const std::string& tmp_path, const std::string& path) {
  if (Status st = require_replaceable_file(path); !st) {
    std::remove(tmp_path.c_str());
    return st;
  }
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp_path.c_str());
    return make_error("cannot rename " + tmp_path + " over it: " + errno_text(err), path);
  }
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  FilePtr f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return make_error("cannot open " + tmp + " for writing: " + errno_text(errno), path);
  const size_t n = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f.get());
  int err = 0;
  if (n != bytes.size() || std::fflush(f.get()) != 0) err = errno;
  if (std::fclose(f.release()) != 0 && err == 0) err = errno;
  if (err != 0 || n != bytes.size()) {
    std::remove(tmp.c_str());
    return make_error("write error on " + tmp + ": " + errno_text(err ? err : EIO), path);
  }
  return commit_tmp_file(tmp, path);
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {};
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(const std::string& base_dir, const std::string& rel) {
  if (base_dir.empty() || (!rel.empty() && rel[0] == '/')) return rel;
  if (base_dir.back() == '/') return base_dir + rel;
  return base_dir + "/" + rel;
}

}  // namespace tessera::formats
