// NumPy .npz archives through libzip: members decoded as streams, sizes checked before use.
#include <sys/stat.h>
#include <zip.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "formats/file_io.h"
#include "formats/npy.h"

namespace tessera::formats {
namespace {

// Deflate cannot expand data by more than about 1032:1; a member claiming more is lying.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint64_t kDeflateSlack = 1024;
constexpr char kSuffix[] = ".npy";
constexpr size_t kSuffixLen = 4;
// Fixed member timestamp so that the same arrays give the same bytes.
constexpr time_t kMemberTime = 1577836800;  // 2020-01-01

struct ZipCloser {
  void operator()(zip_t* z) const {
    if (z != nullptr) zip_discard(z);
  }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;
struct ZipFileCloser {
  void operator()(zip_file_t* f) const {
    if (f != nullptr) zip_fclose(f);
  }
};
using ZipFilePtr = std::unique_ptr<zip_file_t, ZipFileCloser>;

std::string zip_error_text(zip_error_t* e) { return zip_error_strerror(e); }
std::string zip_code_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

// Every member's name and sizes are checked; only those in `only` (all when null) are inflated.
// The keys of all members go to `keys` when given.
Expected<std::map<std::string, Tensor>> read_archive(zip_t* za, uint64_t archive_size, const std::string& where,
                                                     const std::set<std::string>* only,
                                                     std::set<std::string>* keys = nullptr) {
  std::map<std::string, Tensor> out;
  std::set<std::string> seen;
  const zip_int64_t count = zip_get_num_entries(za, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, static_cast<zip_uint64_t>(i), 0, &st) != 0)
      return make_error("cannot read entry " + std::to_string(i) + ": " +
                            zip_error_text(zip_get_error(za)), where);
    const std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
    const std::string member = where + ":" + name;
    if (name.size() < kSuffixLen || name.compare(name.size() - kSuffixLen, kSuffixLen, kSuffix) != 0)
      return make_error("member '" + name + "' is not a .npy file", where);
    const std::string key = name.substr(0, name.size() - kSuffixLen);
    if (!seen.insert(key).second) return make_error("duplicate member", member);
    if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE) ||
        !(st.valid & ZIP_STAT_COMP_METHOD))
      return make_error("the archive does not record the member's sizes", member);
    if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
      return make_error("compression method " + std::to_string(st.comp_method) +
                            " is not supported (only stored and deflated members)", member);
    if (st.comp_size > archive_size)
      return make_error("compressed size " + std::to_string(st.comp_size) +
                            " is larger than the archive (" + std::to_string(archive_size) +
                            " bytes)", member);
    const uint64_t most = st.comp_method == ZIP_CM_STORE
                              ? st.comp_size
                              : st.comp_size * kMaxDeflateRatio + kDeflateSlack;
    if (st.size > most)
      return make_error("declares " + std::to_string(st.size) + " bytes uncompressed from " +
                            std::to_string(st.comp_size) + " compressed bytes, which is impossible",
                        member);
    if (only != nullptr && only->count(key) == 0) continue;  // not asked for: never inflated
    ZipFilePtr zf(zip_fopen_index(za, static_cast<zip_uint64_t>(i), 0));
    if (!zf) return make_error("cannot open: " + zip_error_text(zip_get_error(za)), member);
    npy_detail::ReadFn read = [&](void* dst, size_t n) -> Expected<size_t> {
      const zip_int64_t k = zip_fread(zf.get(), dst, n);
      if (k < 0) return make_error(zip_error_text(zip_file_get_error(zf.get())), member);
      return static_cast<size_t>(k);
    };
    TRY(Tensor t, npy_detail::decode(read, st.size, member));
    out.emplace(key, std::move(t));
  }
  if (keys != nullptr) *keys = std::move(seen);
  return out;
}

Expected<std::map<std::string, Tensor>> open_archive(const std::string& path, const std::set<std::string>* only,
                                                     std::set<std::string>* keys) {
  struct stat fs;
  if (stat(path.c_str(), &fs) != 0)
    return make_error("cannot open for reading: " + std::string(std::strerror(errno)), path);
  if (!S_ISREG(fs.st_mode)) return make_error("not a regular file", path);
  if (fs.st_size == 0) return make_error("the file is empty, not a .npz (zip) archive", path);
  int code = 0;
  ZipPtr za(zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (!za) return make_error("not a readable .npz (zip) archive: " + zip_code_text(code), path);
  return read_archive(za.get(), static_cast<uint64_t>(fs.st_size), path, only, keys);
}

}  // namespace

Expected<std::map<std::string, Tensor>> read_npz(const std::string& path, const std::set<std::string>* only) {
  return open_archive(path, only, nullptr);
}

Expected<std::set<std::string>> npz_keys(const std::string& path) {
  const std::set<std::string> none;
  std::set<std::string> keys;
  TRY(auto nothing, open_archive(path, &none, &keys));
  (void)nothing;
  return keys;
}

Expected<std::map<std::string, Tensor>> parse_npz(const void* data, size_t size,
                                                  const std::string& where) {
  if (size == 0) return make_error("the data is empty, not a .npz (zip) archive", where);
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(data, size, 0, &err);
  if (src == nullptr) {
    std::string msg = zip_error_text(&err);
    zip_error_fini(&err);
    return make_error("cannot read the archive: " + msg, where);
  }
  ZipPtr za(zip_open_from_source(src, ZIP_RDONLY, &err));
  if (!za) {
    zip_source_free(src);
    std::string msg = zip_error_text(&err);
    zip_error_fini(&err);
    return make_error("not a readable .npz (zip) archive: " + msg, where);
  }
  zip_error_fini(&err);
  return read_archive(za.get(), size, where, nullptr);
}

Status write_npz(const std::string& path, const std::map<std::string, Tensor>& arrays,
                 bool compress) {
  if (arrays.empty()) {
    // libzip deletes an archive left with no members; write the bare end-of-directory record.
    return write_file_atomic(path, std::string("PK\x05\x06", 4) + std::string(18, '\0'));
  }
  // Encode everything first: the buffers must outlive zip_close, which does the writing.
  std::vector<std::string> buffers;
  buffers.reserve(arrays.size());
  for (const auto& [key, tensor] : arrays) {
    if (key.empty()) return make_error("an array has an empty key", path);
    auto bytes = encode_npy(tensor);
    if (!bytes) return make_error("array '" + key + "': " + bytes.error().message, path);
    buffers.push_back(std::move(*bytes));
  }
  const std::string tmp = path + ".tmp";
  int code = 0;
  ZipPtr za(zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  if (!za) return make_error("cannot create " + tmp + ": " + zip_code_text(code), path);
  size_t i = 0;
  for (const auto& entry : arrays) {
    const std::string& buf = buffers[i++];
    zip_source_t* src = zip_source_buffer(za.get(), buf.data(), buf.size(), 0);
    if (src == nullptr)
      return make_error("cannot add '" + entry.first + "': " + zip_error_text(zip_get_error(za.get())), path);
    const std::string name = entry.first + kSuffix;
    const zip_int64_t idx = zip_file_add(za.get(), name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      return make_error("cannot add '" + entry.first + "': " + zip_error_text(zip_get_error(za.get())), path);
    }
    const auto u = static_cast<zip_uint64_t>(idx);
    if (zip_set_file_compression(za.get(), u, compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_mtime(za.get(), u, kMemberTime, 0) != 0)
      return make_error("cannot add '" + entry.first + "': " + zip_error_text(zip_get_error(za.get())), path);
  }
  if (zip_close(za.get()) != 0) {
    std::string msg = zip_error_text(zip_get_error(za.get()));
    std::remove(tmp.c_str());
    return make_error("cannot write " + tmp + ": " + msg, path);
  }
  za.release();  // zip_close freed it
  return commit_tmp_file(tmp, path);
}

}  // namespace tessera::formats
