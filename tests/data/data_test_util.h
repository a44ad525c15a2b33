// Helpers shared by the data pipeline tests: temp folders, IDX/gzip writers, small sources.
#pragma once

#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/data/dataset.h"

namespace tessera::data::testing {

// A fresh, empty folder under the system temp dir, unique per test name.
inline std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_data_test" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Writes `bytes` gzip-compressed with zlib's gzopen/gzwrite.
inline void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

inline void put_be32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((v >> shift) & 0xff));
}

// An IDX file: magic 0x000008<rank>, big-endian dims, then `data`.
inline std::string idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string s;
  put_be32(s, 0x00000800u | static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims) put_be32(s, d);
  s.append(data.begin(), data.end());
  return s;
}

// A source whose example i is {"x": f32 [2] = {i, -i}, "labels": i64 [] = i}; get() fails for
// `fail_at` and sleeps `delay_ms` per call (to exercise the worker threads).
class CountingSource final : public Source {
 public:
  explicit CountingSource(int64_t n, int64_t fail_at = -1, int delay_ms = 0)
      : n_(n), fail_at_(fail_at), delay_ms_(delay_ms) {}
  int64_t size() const override { return n_; }
  std::vector<FieldSpec> fields() const override {
    return {{"x", DType::kF32, {2}}, {"labels", DType::kI64, {}}};
  }
  std::string name() const override { return "counting"; }
  Status get(int64_t index, Example& out) const override {
    calls_.fetch_add(1);
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    if (index == fail_at_) return make_error("synthetic failure", "counting.bin");
    out = {Tensor::from_vector<float>({2}, {static_cast<float>(index), -static_cast<float>(index)}),
           Tensor::scalar<int64_t>(index)};
    return Status::ok();
  }
  int64_t calls() const { return calls_.load(); }

 private:
  int64_t n_, fail_at_;
  int delay_ms_;
  mutable std::atomic<int64_t> calls_{0};
};

inline const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

}  // namespace tessera::data::testing
