// IDX reader (plain or gzipped through zlib) and the MNIST-style image/label source.
#include "engine/data/idx.h"
#include "engine/core/file_kind.h"

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

// Where the decoder takes its bytes from: a file through gzread, or memory (plain or gzip).
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to n bytes; returns the count read (fewer only at the end), or an error for corrupt
  // compressed data.
  virtual Expected<size_t> read_some(unsigned char* dst, size_t n) = 0;
  // A zlib note for a short read ("" when zlib saw no error, e.g. plain data that simply ends).
  virtual std::string short_read_note() = 0;
  // At most this many bytes can come out (deflate expands <= 1032x).
  virtual uint64_t bound() const = 0;
};

class GzFileStream final : public ByteStream {
 public:
  GzFileStream(gzFile_s* f, std::string path, uint64_t file_size)
      : f_(f), path_(std::move(path)), file_size_(file_size) {}

  Expected<size_t> read_some(unsigned char* dst, size_t n) override {
    size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, size_t{1} << 24));
      const int r = gzread(f_.get(), dst + got, chunk);
      if (r < 0) {
        return make_error("corrupt or unreadable data (zlib: " + gz_message(f_.get(), path_) + ")",
                          path_);
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }
  std::string short_read_note() override {
    int errnum = Z_OK;
    gzerror(f_.get(), &errnum);
    const std::string m = gz_message(f_.get(), path_);
    if (errnum == Z_OK || m.empty()) return "";
    return " (zlib: " + m + ")";
  }
  uint64_t bound() const override {
    const bool plain = gzdirect(f_.get()) == 1;
    return plain ? file_size_ : file_size_ * 1032;
  }

 private:
  GzPtr f_;
  std::string path_;
  uint64_t file_size_;
};

// Bytes in memory. Data starting with the gzip magic (1f 8b) is inflated like gzread does:
// concatenated members are joined, anything after the last member that is not a gzip header is
// ignored, a stream cut short ends the data with "unexpected end of file". Other data is passed
// through.
class MemoryStream final : public ByteStream {
 public:
  MemoryStream(const unsigned char* data, size_t size, std::string where)
      : data_(data), size_(size), where_(std::move(where)) {
    gzip_ = size_ >= 2 && data_[0] == 0x1f && data_[1] == 0x8b;
  }
  ~MemoryStream() override {
    if (inflating_) inflateEnd(&zs_);
  }
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;

  Expected<size_t> read_some(unsigned char* dst, size_t n) override {
    if (!gzip_) {
      const size_t k = std::min(n, size_ - pos_);
      if (k > 0) std::memcpy(dst, data_ + pos_, k);
      pos_ += k;
      return k;
    }
    size_t got = 0;
    while (got < n && !done_) {
      if (!inflating_) {
        zs_ = z_stream{};
        if (inflateInit2(&zs_, 15 + 16) != Z_OK) return make_error("zlib: out of memory", where_);
        inflating_ = true;
      }
      zs_.next_in = const_cast<unsigned char*>(data_ + pos_);
      const size_t in_now = std::min<size_t>(size_ - pos_, size_t{1} << 30);
      zs_.avail_in = static_cast<uInt>(in_now);
      const size_t out_now = std::min<size_t>(n - got, size_t{1} << 30);
      zs_.next_out = dst + got;
      zs_.avail_out = static_cast<uInt>(out_now);
      const int r = inflate(&zs_, Z_NO_FLUSH);
      pos_ += in_now - zs_.avail_in;
      got += out_now - zs_.avail_out;
      if (r == Z_STREAM_END) {
        // Another member follows only when a gzip header does; the rest is ignored.
        if (size_ - pos_ >= 2 && data_[pos_] == 0x1f && data_[pos_ + 1] == 0x8b) {
          inflateReset(&zs_);
        } else {
          done_ = true;
        }
      } else if (r == Z_BUF_ERROR || (r == Z_OK && pos_ == size_ && zs_.avail_out > 0)) {
        if (pos_ == size_) {  // no input left in the middle of a member
          note_ = "unexpected end of file";
          done_ = true;
        } else if (zs_.avail_out > 0) {
          return make_error("corrupt or unreadable data (zlib: no progress)", where_);
        }
      } else if (r != Z_OK) {
        return make_error(std::string("corrupt or unreadable data (zlib: ") +
                              (zs_.msg ? zs_.msg : "error " + std::to_string(r)) + ")",
                          where_);
      }
    }
    return got;
  }
  std::string short_read_note() override { return note_.empty() ? "" : " (zlib: " + note_ + ")"; }
  uint64_t bound() const override { return gzip_ ? uint64_t{size_} * 1032 : size_; }

 private:
  const unsigned char* data_;
  size_t size_;
  std::string where_;
  size_t pos_ = 0;
  bool gzip_ = false;
  bool inflating_ = false;
  bool done_ = false;
  std::string note_;
  z_stream zs_{};
};

// What an IDX file of `rank` dims holds, for errors.
std::string idx_what(int rank) {
  std::string what = "idx" + std::to_string(rank);
  if (rank == 3) what += " images";
  if (rank == 1) what += " labels";
  return what + ", magic " + hex32(0x00000800u | static_cast<uint32_t>(rank));
}

// Decodes a u8 IDX stream of `rank` dims; `where` names it in errors.
Expected<IdxArray> decode_idx(ByteStream& in, int rank, const std::string& where) {
  const std::string what = idx_what(rank);
  unsigned char head[4];
  TRY(size_t got, in.read_some(head, 4));
  if (got < 4) {
    return make_error("truncated header: expected 4 bytes of magic, found " + std::to_string(got) +
                          in.short_read_note(),
                      where);
  }
  const uint32_t magic =
      (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) | head[3];
  const uint32_t want = 0x00000800u | static_cast<uint32_t>(rank);
  if (magic != want) {
    std::string why = "bad magic " + hex32(magic) + ": expected " + hex32(want) + " (" + what + ")";
    if (head[0] == 0 && head[1] == 0 && head[2] != 0x08) {
      why += "; element type " + hex32(head[2]) + " is not unsigned bytes (0x08)";
    }
    return make_error(why, where);
  }
  IdxArray out;
  std::vector<unsigned char> dim_bytes(static_cast<size_t>(rank) * 4);
  TRY(got, in.read_some(dim_bytes.data(), dim_bytes.size()));
  if (got < dim_bytes.size()) {
    return make_error("truncated header: expected " + std::to_string(dim_bytes.size()) +
                          " bytes of dims, found " + std::to_string(got) + in.short_read_note(),
                      where);
  }
  for (int i = 0; i < rank; ++i) {
    const unsigned char* p = &dim_bytes[static_cast<size_t>(i) * 4];
    out.dims.push_back((int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3]);
  }
  auto numel = checked_numel(Shape(out.dims), DType::kU8);
  if (!numel)
    return make_error("absurd dims " + shape_to_string(out.dims) + ": " + numel.error().message,
                      where);
  const auto total = static_cast<size_t>(*numel);
  // Grow as bytes arrive; reserve at most what the input can hold.
  out.bytes.reserve(static_cast<size_t>(std::min<uint64_t>(total, in.bound())));
  constexpr size_t kChunk = size_t{1} << 20;
  size_t have = 0;
  while (have < total + 1) {  // one byte past the end detects trailing data
    // At most what the input can still hold (+1 to see its end), so a lying header over a small
    // input costs a small buffer, not a 1 MiB chunk.
    const uint64_t can_hold = in.bound() + 1 - std::min<uint64_t>(have, in.bound());
    const size_t want_now =
        static_cast<size_t>(std::min<uint64_t>({kChunk, total + 1 - have, can_hold}));
    out.bytes.resize(have + want_now);
    TRY(size_t n, in.read_some(out.bytes.data() + have, want_now));
    have += n;
    if (n < want_now) break;
  }
  if (have < total) {
    return make_error("truncated data: dims " + shape_to_string(out.dims) + " need " +
                          std::to_string(total) + " bytes after the header, found " +
                          std::to_string(have) + in.short_read_note(),
                      where);
  }
  if (have > total) {
    return make_error("dims " + shape_to_string(out.dims) + " need " + std::to_string(total) +
                          " bytes after the header, but the file has more (trailing data)",
                      where);
  }
  out.bytes.resize(total);
  out.bytes.shrink_to_fit();
  return out;
}

// Reads a u8 IDX file of `rank` dims.
Expected<IdxArray> read_idx(const std::string& path, int rank) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return make_error(std::string(fs::exists(path, ec) ? "not a regular file" : "no such file") +
                          " (expected " + idx_what(rank) + ")",
                      path);
  }
  const uint64_t file_size = fs::file_size(path, ec);
  RETURN_IF_ERROR(require_regular_file(path));
  gzFile_s* f = gzopen(path.c_str(), "rb");
  if (!f) return make_error(std::string("cannot open: ") + std::strerror(errno), path);
  GzFileStream in(f, path, file_size);
  return decode_idx(in, rank, path);
}

// u8 -> f32 / 255 (divided, correctly rounded, as NumPy's x / 255 in f32), compiled for AVX-512,
// AVX2 and the baseline.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void scale_pixels(const unsigned char* src,
                                                                                                float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
}

// A prefetch the optimiser keeps: GCC 12 deletes a loop of __builtin_prefetch calls as a loop
// without side effects.
inline void prefetch_line(const unsigned char* p) {
#if defined(__x86_64__)
  __asm__ volatile("prefetcht0 %0" : : "m"(*p));
#else
  __builtin_prefetch(p);
#endif
}

class IdxSource final : public Source {
 public:
  IdxSource(std::string images_path, std::string labels_path, IdxArray images, IdxArray labels)
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
    scale_pixels(src, dst, plane);
    out.clear();
    out.push_back(std::move(x));
    out.push_back(Tensor::scalar<int64_t>(labels_[static_cast<size_t>(index)]));
    return Status::ok();
  }
  Expected<bool> gather(const int64_t* indices, int64_t count, std::vector<Tensor>& out) const override {
    const size_t plane = static_cast<size_t>(h_ * w_);
    float* x = out[0].data<float>();
    int64_t* y = out[1].data<int64_t>();
    // The rows are scattered over the whole file (a shuffled order): each is fetched from memory a
    // few rows ahead of its conversion, so the misses overlap instead of stalling row after row.
    constexpr int64_t kAhead = 4;
    auto prefetch = [&](int64_t j) {
      if (j >= count || indices[j] < 0 || indices[j] >= n_) return;
      const unsigned char* row = pixels_.data() + static_cast<size_t>(indices[j]) * plane;
      for (size_t at = 0; at < plane; at += 64) prefetch_line(row + at);
    };
    for (int64_t j = 0; j < kAhead; ++j) prefetch(j);
    for (int64_t j = 0; j < count; ++j) {
      prefetch(j + kAhead);
      const int64_t index = indices[j];
      if (index < 0 || index >= n_)
        return make_error("example index " + std::to_string(index) + " out of range [0, " + std::to_string(n_) + ")", images_path_);
      scale_pixels(pixels_.data() + static_cast<size_t>(index) * plane, x + static_cast<size_t>(j) * plane, plane);
      y[j] = labels_[static_cast<size_t>(index)];
    }
    return true;
  }

 private:
  std::string images_path_, labels_path_;
  int64_t n_, h_, w_;
  std::vector<unsigned char> pixels_;  // u8 [N, H, W]
  std::vector<unsigned char> labels_;  // u8 [N]
};

}  // namespace

Expected<IdxArray> parse_idx(const void* data, size_t size, int rank, const std::string& where) {
  if (rank < 1 || rank > 255)
    return make_error("IDX rank " + std::to_string(rank) + " outside [1, 255]", where);
  MemoryStream in(static_cast<const unsigned char*>(data), size, where);
  return decode_idx(in, rank, where);
}

Expected<std::shared_ptr<const Source>> open_idx_pair(const std::string& images_path,
                                                      const std::string& labels_path) {
  TRY(IdxArray images, read_idx(images_path, 3));
  TRY(IdxArray labels, read_idx(labels_path, 1));
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
