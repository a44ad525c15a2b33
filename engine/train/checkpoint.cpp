// Training checkpoints (see checkpoint.h).
#include "engine/train/checkpoint.h"
#include "engine/core/file_kind.h"
#include "engine/ir/graph.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace tessera::train {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'K', 'P', 'T', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 8 + 4 + 4 + 8;

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void put_str(std::string& out, const std::string& s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Bounds-checked reader over the payload; every failure names the offset.
class Reader {
 public:
  Reader(const std::string& path, const char* data, size_t size, size_t base)
      : path_(path), data_(data), size_(size), base_(base) {}
  template <class T>
  Status get(T& v, const char* what) {
    if (size_ - pos_ < sizeof(T)) return fail(std::string("truncated ") + what);
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }
  Status get_str(std::string& s, const char* what) {
    uint32_t n = 0;
    RETURN_IF_ERROR(get(n, what));
    if (size_ - pos_ < n) return fail(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end");
    s.assign(data_ + pos_, n);
    pos_ += n;
    return Status::ok();
  }
  Status bytes(void* dst, size_t n, const char* what) {
    if (size_ - pos_ < n) return fail(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end");
    std::memcpy(dst, data_ + pos_, n);
    pos_ += n;
    return Status::ok();
  }
  size_t remaining() const { return size_ - pos_; }
  Error fail(const std::string& msg) const {
    return make_error(msg, path_ + ": byte " + std::to_string(base_ + pos_));
  }

 private:
  const std::string& path_;
  const char* data_;
  size_t size_, pos_ = 0, base_;
};


Expected<std::string> read_all(const std::string& path) {
  RETURN_IF_ERROR(require_regular_file(path));  // /dev/zero would be read until memory runs out
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error(std::string("cannot open checkpoint: ") + std::strerror(errno), path);
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return make_error("read error", path);
  return data;
}

}  // namespace

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

const Tensor* Checkpoint::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

std::string Checkpoint::get(const std::string& key) const {
  auto it = meta.find(key);
  return it == meta.end() ? std::string() : it->second;
}

Status write_checkpoint(const std::string& path, const Checkpoint& c) {
  std::string payload;
  put<uint32_t>(payload, static_cast<uint32_t>(c.meta.size()));
  for (const auto& [k, v] : c.meta) {
    put_str(payload, k);
    put_str(payload, v);
  }
  put<uint32_t>(payload, static_cast<uint32_t>(c.tensors.size()));
  for (const auto& [name, t] : c.tensors) {
    if (!t.is_tensor() || t.dtype() == DType::kString)  // their bytes are process-local ids
      return make_error("tensor '" + name + "' is a " + (t.is_tensor() ? "string tensor" : "sequence or optional") +
                            "; checkpoints hold numeric tensors",
                        path);
    Tensor ct = t.contiguous();
    put_str(payload, name);
    put<uint8_t>(payload, static_cast<uint8_t>(ct.dtype()));
    put<uint32_t>(payload, static_cast<uint32_t>(ct.shape().size()));
    for (int64_t d : ct.shape()) put<int64_t>(payload, d);
    put<uint64_t>(payload, ct.nbytes());
    payload.append(static_cast<const char*>(ct.raw_data()), ct.nbytes());
  }
  std::string file(kMagic, 8);
  put<uint32_t>(file, kVersion);
  put<uint32_t>(file, 0);
  put<uint64_t>(file, payload.size());
  file += payload;
  put<uint64_t>(file, XXH3_64bits(payload.data(), payload.size()));

  RETURN_IF_ERROR(require_replaceable_file(path));
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(std::string("cannot create ") + tmp + ": " + std::strerror(errno), path);
  size_t done = 0;
  int err = 0;
  while (done < file.size()) {
    ssize_t w = ::write(fd, file.data() + done, file.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (!err && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    return make_error(std::string("writing the checkpoint failed (") + std::strerror(err) + "); the previous checkpoint, if any, is unchanged",
                      path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return make_error(std::string("cannot rename ") + tmp + " over the checkpoint: " + std::strerror(err), path);
  }
  return Status::ok();
}

Expected<Checkpoint> read_checkpoint(const std::string& path) {
  TRY(std::string data, read_all(path));
  if (data.size() < kHeader + 8 || std::memcmp(data.data(), kMagic, 8) != 0)
    return make_error("not a Tessera checkpoint (bad magic or shorter than a header)", path);
  uint32_t version = 0;
  uint64_t payload_size = 0;
  std::memcpy(&version, data.data() + 8, 4);
  std::memcpy(&payload_size, data.data() + 16, 8);
  if (version != kVersion)
    return make_error("checkpoint format version " + std::to_string(version) + " is not supported (this build reads version " +
                          std::to_string(kVersion) + ")", path);
  if (payload_size != data.size() - kHeader - 8)
    return make_error("the header announces " + std::to_string(payload_size) + " payload bytes but the file holds " +
                          std::to_string(data.size() - kHeader - 8) + " (truncated or padded)", path);
  uint64_t stored = 0;
  std::memcpy(&stored, data.data() + kHeader + payload_size, 8);
  uint64_t actual = XXH3_64bits(data.data() + kHeader, payload_size);
  if (stored != actual)
    return make_error("checksum mismatch (stored " + hex64(stored) + ", computed " + hex64(actual) + "): the file is corrupt", path);

  Reader r(path, data.data() + kHeader, payload_size, kHeader);
  Checkpoint c;
  uint32_t n_meta = 0;
  RETURN_IF_ERROR(r.get(n_meta, "metadata count"));
  for (uint32_t i = 0; i < n_meta; ++i) {
    std::string k, v;
    RETURN_IF_ERROR(r.get_str(k, "metadata key"));
    RETURN_IF_ERROR(r.get_str(v, "metadata value"));
    c.meta[k] = v;
  }
  uint32_t n_tensors = 0;
  RETURN_IF_ERROR(r.get(n_tensors, "tensor count"));
  std::set<std::string> seen;  // a tensor twice: which one is the weight would be a guess
  for (uint32_t i = 0; i < n_tensors; ++i) {
    std::string name;
    uint8_t dt = 0;
    uint32_t rank = 0;
    RETURN_IF_ERROR(r.get_str(name, "tensor name"));
    if (!seen.insert(name).second) return r.fail("tensor '" + name + "' is stored twice");
    RETURN_IF_ERROR(r.get(dt, "dtype"));
    if (dt >= kNumDTypes) return r.fail("tensor '" + name + "' has unknown dtype code " + std::to_string(dt));
    RETURN_IF_ERROR(r.get(rank, "rank"));
    if (rank > 16 || rank * 8ull > r.remaining()) return r.fail("tensor '" + name + "' has rank " + std::to_string(rank));
    Shape shape(rank);
    for (auto& d : shape) RETURN_IF_ERROR(r.get(d, "dimension"));
    TRY(int64_t numel, checked_numel(shape, static_cast<DType>(dt)));
    uint64_t nbytes = 0;
    RETURN_IF_ERROR(r.get(nbytes, "byte count"));
    const uint64_t want = static_cast<uint64_t>(numel) * static_cast<uint64_t>(dtype_size(static_cast<DType>(dt)));
    if (nbytes != want) return r.fail("tensor '" + name + "' of shape " + shape_to_string(shape) + " needs " + std::to_string(want) + " bytes, the file says " + std::to_string(nbytes));
    if (nbytes > r.remaining()) return r.fail("tensor '" + name + "' runs past the end");
    TRY(Tensor t, Tensor::create(static_cast<DType>(dt), shape));
    RETURN_IF_ERROR(r.bytes(t.raw_data(), nbytes, "tensor data"));
    c.tensors.emplace_back(std::move(name), std::move(t));
  }
  if (r.remaining() != 0) return r.fail(std::to_string(r.remaining()) + " unexpected bytes after the last tensor");
  return c;
}

Expected<std::string> checkpoint_checksum(const std::string& path) {
  TRY(std::string data, read_all(path));
  if (data.size() < kHeader + 8) return make_error("not a Tessera checkpoint", path);
  uint64_t stored = 0;
  std::memcpy(&stored, data.data() + data.size() - 8, 8);
  return hex64(stored);
}

// Loads a checkpoint's weights into a graph's params (`tessera run --checkpoint`, the studio's
// "Open graph" of a recorded run). Everything is checked before the graph's params are touched. Training saves every float param (autodiff::
// trainable_params, running statistics included) and the optimizer's buffers ("NAME/momentum",
// "NAME/adam_m", "NAME/adam_v"): a param left out, or any other tensor, means the checkpoint was
// written for another graph, and half-applied weights would run silently wrong.
Status apply_checkpoint(ir::Graph& g, const std::string& path, bool inputs_become_params) {
  TRY(Checkpoint c, read_checkpoint(path));
  // Everything is checked before anything changes: inputs to turn into params (an input that
  // names a checkpoint tensor of another dtype or shape refuses the whole checkpoint), then params.
  std::vector<std::pair<ir::ValueId, const Tensor*>> turned;
  if (inputs_become_params) {
    for (ir::ValueId v : g.inputs()) {
      const Tensor* t = c.find(g.value(v).name);
      if (!t) continue;
      const ir::TensorType& type = g.value(v).type;
      bool fits = type.dtype == t->dtype() && type.rank() == static_cast<int>(t->shape().size());
      for (int d = 0; fits && d < type.rank(); ++d)
        fits = !type.dims[d].is_known() || type.dims[d].size == t->shape()[d];
      if (!fits)
        return make_error("checkpoint tensor '" + g.value(v).name + "' is " + std::string(dtype_name(t->dtype())) +
                              shape_to_string(t->shape()) + ", the graph's input is " + type.to_string(), path);
      turned.emplace_back(v, t);
    }
  }
  std::vector<std::pair<ir::ValueId, const Tensor*>> updates;
  std::string missing;
  for (ir::ValueId p : g.params()) {
    const Tensor* t = c.find(g.value(p).name);
    if (!t) {
      if (is_float(g.value(p).type.dtype)) missing += (missing.empty() ? "'" : ", '") + g.value(p).name + "'";
      continue;
    }
    const Tensor* old = g.param_data(p);
    if (old && (old->dtype() != t->dtype() || old->shape() != t->shape()))
      return make_error("checkpoint tensor '" + g.value(p).name + "' is " + std::string(dtype_name(t->dtype())) +
                            shape_to_string(t->shape()) + ", the graph's param is " + std::string(dtype_name(old->dtype())) +
                            shape_to_string(old->shape()), path);
    updates.emplace_back(p, t);
  }
  if (updates.empty() && turned.empty())
    return make_error("no tensor of the checkpoint matches a param of graph '" + g.name() + "'", path);
  if (!missing.empty())
    return make_error("the checkpoint has no tensor for param(s) " + missing + " of graph '" + g.name() +
                          "' (it was written for another graph)", path);
  for (const auto& [name, t] : c.tensors) {
    const size_t slash = name.rfind('/');
    const std::string owner = slash == std::string::npos ? name : name.substr(0, slash);
    const std::string buffer = slash == std::string::npos ? "" : name.substr(slash + 1);
    const bool known = g.find_value(name).has_value() ||
                       (g.find_value(owner).has_value() && (buffer == "momentum" || buffer == "adam_m" || buffer == "adam_v"));
    if (!known)
      return make_error("the checkpoint holds tensor '" + name + "', which is no param of graph '" + g.name() +
                            "' nor an optimizer buffer of one (it was written for another graph)", path);
  }
  for (const auto& [v, t] : turned) g.make_param(v, t->clone());
  for (const auto& [p, t] : updates) g.set_param_data(p, t->clone());
  return Status::ok();
}

}  // namespace tessera::train
