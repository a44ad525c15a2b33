// Source fingerprints: XXH3-64 over shape, file names and sizes, and the ends of the files.
#include "engine/data/fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

namespace tessera::data {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kEdgeBytes = 64 * 1024;

struct StateFree {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

class Hasher {
 public:
  Hasher() : state_(XXH3_createState()) { XXH3_64bits_reset(state_.get()); }
  void bytes(const void* p, size_t n) { XXH3_64bits_update(state_.get(), p, n); }
  void u64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));  // little-endian
    bytes(b, 8);
  }
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  uint64_t digest() const { return XXH3_64bits_digest(state_.get()); }

 private:
  std::unique_ptr<XXH3_state_t, StateFree> state_;
};

// The longest folder that contains every path ("" when they share none).
fs::path common_folder(const std::vector<fs::path>& paths) {
  fs::path common = paths.front().parent_path();
  for (const fs::path& p : paths) {
    fs::path dir = p.parent_path(), out;
    auto a = common.begin(), b = dir.begin();
    for (; a != common.end() && b != dir.end() && *a == *b; ++a, ++b) out /= *a;
    common = out;
  }
  return common;
}

Status hash_edges(Hasher& h, const std::string& path, uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open for fingerprinting", path);
  std::vector<char> buf(static_cast<size_t>(std::min(size, kEdgeBytes)));
  const uint64_t starts[2] = {0, size > kEdgeBytes ? size - kEdgeBytes : 0};
  for (uint64_t start : starts) {
    in.seekg(static_cast<std::streamoff>(start));
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (static_cast<size_t>(in.gcount()) != buf.size())
      return make_error("short read while fingerprinting", path);
    h.bytes(buf.data(), buf.size());
  }
  return Status::ok();
}

}  // namespace

Expected<std::string> fingerprint(const Source& source) {
  Hasher h;
  h.str("tessera.data.fingerprint.v1");
  h.u64(static_cast<uint64_t>(source.size()));
  for (const FieldSpec& f : source.fields()) {
    h.str(f.name);
    h.u64(static_cast<uint64_t>(f.dtype));
    h.u64(f.shape.size());
    for (int64_t d : f.shape) h.u64(static_cast<uint64_t>(d));
  }
  const std::vector<std::string> files = source.files();
  if (!files.empty()) {
    std::vector<fs::path> paths;
    for (const std::string& f : files) paths.push_back(fs::absolute(f).lexically_normal());
    const fs::path root = common_folder(paths);
    std::vector<uint64_t> sizes;
    for (size_t i = 0; i < paths.size(); ++i) {
      std::error_code ec;
      const uint64_t size = fs::file_size(paths[i], ec);
      if (ec) return make_error("cannot stat for fingerprinting: " + ec.message(), files[i]);
      h.str(paths[i].lexically_relative(root).generic_string());
      h.u64(size);
      sizes.push_back(size);
    }
    RETURN_IF_ERROR(hash_edges(h, files.front(), sizes.front()));
    if (files.size() > 1) RETURN_IF_ERROR(hash_edges(h, files.back(), sizes.back()));
  } else if (source.size() > 0) {
    Example ex;
    for (int64_t index : {int64_t{0}, source.size() - 1}) {
      RETURN_IF_ERROR(source.get(index, ex));
      for (const Tensor& t : ex) {
        const Tensor c = t.contiguous();
        h.bytes(c.raw_data(), c.nbytes());
      }
    }
  }
  char out[32];
  std::snprintf(out, sizeof out, "xxh3:%016llx", static_cast<unsigned long long>(h.digest()));
  return std::string(out);
}

}  // namespace tessera::data
