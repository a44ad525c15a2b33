// IDX reader (plain or gzipped through zlib) and the MNIST-style image/label source.
#include "engine/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace tessera::data {
namespace {

namespace fs = std::filesystem;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// zlib's message without the "PATH: " it prefixes.
std::string gz_message(gzFile_s* f, const std::string& path) {
  int errnum = Z_OK;
  const char* msg = gzerror(f, &errnum);
  std::string m = msg ? msg : "";
  if (m.rfind(path + ": ", 0) == 0) m.erase(0, path.size() + 2);
  return m;
}

// Reads up to n bytes; returns the count read (fewer only at the end or on an error).
Expected<size_t> gz_read_some(gzFile_s* f, unsigned char* dst, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, size_t{1} << 24));
    const int r = gzread(f, dst + got, chunk);
    if (r < 0)
      return make_error("corrupt or unreadable data (zlib: " + gz_message(f, path) + ")", path);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

// A zlib note for a short read ("" when zlib saw no error, e.g. a plain file that simply ends).
std::string zlib_note(gzFile_s* f, const std::string& path) {
  int errnum = Z_OK;
  gzerror(f, &errnum);
  const std::string m = gz_message(f, path);
  if (errnum == Z_OK || m.empty()) return "";
  return " (zlib: " + m + ")";
}

struct IdxFile {
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;  // row-major, product(dims) bytes
};

// Reads a u8 IDX file of `rank` dims; `what` names the expected content in errors.
Expected<IdxFile> read_idx(const std::string& path, int rank, const std::string& what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return make_error(std::string(fs::exists(path, ec) ? "not a regular file" : "no such file") +
                          " (expected " + what + ")",
                      path);
  }
  const uint64_t file_size = fs::file_size(path, ec);
  GzPtr f(gzopen(path.c_str(), "rb"));
  if (!f) return make_error(std::string("cannot open: ") + std::strerror(errno), path);

  unsigned char head[4];
  TRY(size_t got, gz_read_some(f.get(), head, 4, path));
  if (got < 4) {
    return make_error("truncated header: expected 4 bytes of magic, found " + std::to_string(got) +
                          zlib_note(f.get(), path),
                      path);
  }
  const uint32_t magic =
      (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) | head[3];
  const uint32_t want = 0x00000800u | static_cast<uint32_t>(rank);
  if (magic != want) {
    std::string why = "bad magic " + hex32(magic) + ": expected " + hex32(want) + " (" + what + ")";
    if (head[0] == 0 && head[1] == 0 && head[2] != 0x08) {
      why += "; element type " + hex32(head[2]) + " is not unsigned bytes (0x08)";
    }
    return make_error(why, path);
  }
  IdxFile out;
  std::vector<unsigned char> dim_bytes(static_cast<size_t>(rank) * 4);
  TRY(got, gz_read_some(f.get(), dim_bytes.data(), dim_bytes.size(), path));
  if (got < dim_bytes.size()) {
    return make_error("truncated header: expected " + std::to_string(dim_bytes.size()) +
                          " bytes of dims, found " + std::to_string(got) + zlib_note(f.get(), path),
                      path);
  }
  for (int i = 0; i < rank; ++i) {
    const unsigned char* p = &dim_bytes[static_cast<size_t>(i) * 4];
    out.dims.push_back((int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3]);
  }
  auto numel = checked_numel(Shape(out.dims), DType::kU8);
  if (!numel)
    return make_error("absurd dims " + shape_to_string(out.dims) + ": " + numel.error().message,
                      path);
  const auto total = static_cast<size_t>(*numel);
  // Grow as bytes arrive; reserve at most what the file can hold (deflate expands <= 1032x).
  const bool plain = gzdirect(f.get()) == 1;
  const uint64_t bound = plain ? file_size : file_size * 1032;
  out.bytes.reserve(static_cast<size_t>(std::min<uint64_t>(total, bound)));
  constexpr size_t kChunk = size_t{1} << 20;
  size_t have = 0;
  while (have < total + 1) {  // one byte past the end detects trailing data
    const size_t want_now = std::min(kChunk, total + 1 - have);
    out.bytes.resize(have + want_now);
    TRY(size_t n, gz_read_some(f.get(), out.bytes.data() + have, want_now, path));
    have += n;
    if (n < want_now) break;
  }
  if (have < total) {
    return make_error("truncated data: dims " + shape_to_string(out.dims) + " need " +
                          std::to_string(total) + " bytes after the header, found " +
                          std::to_string(have) + zlib_note(f.get(), path),
                      path);
  }
  if (have > total) {
    return make_error("dims " + shape_to_string(out.dims) + " need " + std::to_string(total) +
                          " bytes after the header, but the file has more (trailing data)",
                      path);
  }
  out.bytes.resize(total);
  out.bytes.shrink_to_fit();
  return out;
}

class IdxSource final : public Source {
 public:
  IdxSource(std::string images_path, std::string labels_path, IdxFile images, IdxFile labels)
      : images_path_(std::move(images_path)),
        labels_path_(std::move(labels_path)),
        n_(images.dims[0]),
        h_(images.dims[1]),
        w_(images.dims[2]),
        pixels_(std::move(images.bytes)),
        labels_(std::move(labels.bytes)) {}

  int64_t size() const override { return n_; }
  std::vector<FieldSpec> fields() const override {
    return {{"x", DType::kF32, {1, h_, w_}}, {"labels", DType::kI64, {}}};
  }
  std::string name() const override { return "idx(" + images_path_ + ", " + labels_path_ + ")"; }
  std::vector<std::string> files() const override { return {images_path_, labels_path_}; }

  Status get(int64_t index, Example& out) const override {
    if (index < 0 || index >= n_) {
      return make_error("example index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(n_) + ")",
                        images_path_);
    }
    Tensor x(DType::kF32, {1, h_, w_});  // f32 [1, H, W]
    float* dst = x.data<float>();
    const size_t plane = static_cast<size_t>(h_ * w_);
    const unsigned char* src = pixels_.data() + static_cast<size_t>(index) * plane;
    for (size_t i = 0; i < plane; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
    out.clear();
    out.push_back(std::move(x));
    out.push_back(Tensor::scalar<int64_t>(labels_[static_cast<size_t>(index)]));
    return Status::ok();
  }

 private:
  std::string images_path_, labels_path_;
  int64_t n_, h_, w_;
  std::vector<unsigned char> pixels_;  // u8 [N, H, W]
  std::vector<unsigned char> labels_;  // u8 [N]
};

}  // namespace

Expected<std::shared_ptr<const Source>> open_idx_pair(const std::string& images_path,
                                                      const std::string& labels_path) {
  TRY(IdxFile images, read_idx(images_path, 3, "idx3 images, magic 0x00000803"));
  TRY(IdxFile labels, read_idx(labels_path, 1, "idx1 labels, magic 0x00000801"));
  if (images.dims[0] != labels.dims[0]) {
    return make_error("image count " + std::to_string(images.dims[0]) + " in " + images_path +
                          " differs from label count " + std::to_string(labels.dims[0]) + " in " +
                          labels_path,
                      images_path);
  }
  return std::shared_ptr<const Source>(
      std::make_shared<IdxSource>(images_path, labels_path, std::move(images), std::move(labels)));
}

Expected<std::shared_ptr<const Source>> open_mnist_dir(const std::string& dir,
                                                       const std::string& split) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return make_error("unknown split '" + split + "': expected \"train\" or \"test\"", dir);
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error("no such directory", dir);
  auto find = [&](const std::string& stem) -> Expected<std::string> {
    for (const std::string& name : {stem, stem + ".gz"}) {
      const fs::path p = fs::path(dir) / name;
      if (fs::exists(p, ec)) return p.string();
    }
    return make_error("missing " + stem + " (or " + stem + ".gz) in directory " + dir, dir);
  };
  TRY(std::string images, find(prefix + "-images-idx3-ubyte"));
  TRY(std::string labels, find(prefix + "-labels-idx1-ubyte"));
  return open_idx_pair(images, labels);
}

}  // namespace tessera::data
