// Tests for formats/npz.cpp: NumPy archives, round trips, bad archives.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "tests/support/paths.h"
#include "formats/file_io.h"
#include "formats/npy.h"

namespace tessera::formats {
namespace {

const std::string kData = tessera::test::source_dir() + "/tests/formats/data/";

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_npz_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(NpzFixtures, StoredAndDeflated) {
  for (const char* file : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(file);
    auto m = read_npz(kData + file);
    ASSERT_TRUE(m) << m.error().to_string();
    ASSERT_EQ(m->count("a"), 1u);
    ASSERT_EQ(m->count("b"), 1u);
    const Tensor& a = m->at("a");
    EXPECT_EQ(a.dtype(), DType::kI64);
    EXPECT_EQ(a.shape(), (Shape{2, 2}));
    EXPECT_EQ(a.to_doubles(), (std::vector<double>{1, 2, 3, 4}));
    const Tensor& b = m->at("b");
    EXPECT_EQ(b.dtype(), DType::kF32);
    EXPECT_EQ(b.to_doubles(), (std::vector<double>{0.5, 0.25, -8.0}));
  }
  auto m = read_npz(kData + "deflated.npz");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size(), 3u);
  ASSERT_EQ(m->count("nested/c"), 1u);
  EXPECT_EQ(m->at("nested/c").dtype(), DType::kBool);
  EXPECT_EQ(m->at("nested/c").rank(), 0);
  EXPECT_EQ(m->at("nested/c").get(0), 1.0);
}

TEST(NpzFixtures, FromMemory) {
  auto bytes = read_file(kData + "deflated.npz");
  ASSERT_TRUE(bytes);
  auto m = parse_npz(bytes->data(), bytes->size(), "mem.npz");
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->size(), 3u);
  EXPECT_EQ(m->at("a").to_doubles(), (std::vector<double>{1, 2, 3, 4}));
}

std::map<std::string, Tensor> every_dtype() {
  return {
      {"f32", Tensor::from_vector<float>({2, 2}, {1.f, -0.f, 3.4028235e38f, 1e-45f})},
      {"f64", Tensor::from_vector<double>({3}, {0.1, -1e-310, 1.7976931348623157e308})},
      {"f16", Tensor::from_doubles(DType::kF16, {2}, {0.333, -65504})},
      {"i8", Tensor::from_vector<int8_t>({1, 3}, {-128, 5, 127})},
      {"u8", Tensor::from_vector<uint8_t>({2}, {0, 255})},
      {"i32", Tensor::from_vector<int32_t>({2}, {-7, 1 << 30})},
      {"i64", Tensor::from_vector<int64_t>({2}, {INT64_MIN, INT64_MAX})},
      {"bool", Tensor::from_bools({2, 1}, {false, true})},
      {"scalar", Tensor::scalar<double>(-2.5)},
      {"empty", Tensor(DType::kI32, {0})},
      {"dir/name.with.dots", Tensor::scalar<int64_t>(7)},
  };
}

TEST(NpzRoundTrip, EveryDTypeStoredAndCompressed) {
  const auto arrays = every_dtype();
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress ? "deflated" : "stored");
    const std::string path = temp_path(compress ? "rt_deflated.npz" : "rt_stored.npz");
    Status st = write_npz(path, arrays, compress);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    auto back = read_npz(path);
    ASSERT_TRUE(back) << back.error().to_string();
    ASSERT_EQ(back->size(), arrays.size());
    for (const auto& [key, t] : arrays) {
      SCOPED_TRACE(key);
      ASSERT_EQ(back->count(key), 1u);
      EXPECT_TRUE(same_bits(back->at(key), t));
    }
  }
}

TEST(NpzRoundTrip, CompressionShrinksZeros) {
  const std::map<std::string, Tensor> zeros = {{"z", Tensor(DType::kF32, {100, 100})}};
  const std::string stored = temp_path("zeros_stored.npz"), deflated = temp_path("zeros_deflated.npz");
  ASSERT_TRUE(write_npz(stored, zeros, false).is_ok());
  ASSERT_TRUE(write_npz(deflated, zeros, true).is_ok());
  EXPECT_GT(std::filesystem::file_size(stored), 40000u);
  EXPECT_LT(std::filesystem::file_size(deflated), 2000u);
}

TEST(NpzRoundTrip, SameArraysGiveSameBytes) {
  const auto arrays = every_dtype();
  const std::string p1 = temp_path("det1.npz"), p2 = temp_path("det2.npz");
  ASSERT_TRUE(write_npz(p1, arrays, true).is_ok());
  ASSERT_TRUE(write_npz(p2, arrays, true).is_ok());
  EXPECT_EQ(*read_file(p1), *read_file(p2));
}

TEST(NpzRoundTrip, EmptyArchive) {
  const std::string path = temp_path("empty.npz");
  ASSERT_TRUE(write_npz(path, {}, false).is_ok());
  auto back = read_npz(path);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_TRUE(back->empty());
}

TEST(NpzRoundTrip, WriteErrors) {
  const std::string path = temp_path("bad_write.npz");
  std::filesystem::remove(path);
  Status bf16 = write_npz(path, {{"w", Tensor(DType::kBF16, {2})}}, false);
  ASSERT_FALSE(bf16.is_ok());
  EXPECT_EQ(bf16.error().where, path);
  EXPECT_NE(bf16.error().message.find("array 'w'"), std::string::npos);
  EXPECT_NE(bf16.error().message.find("bf16"), std::string::npos);
  Status empty_key = write_npz(path, {{"", Tensor()}}, false);
  ASSERT_FALSE(empty_key.is_ok());
  EXPECT_NE(empty_key.error().message.find("empty key"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
  Status no_dir = write_npz("/nonexistent-dir/w.npz", {{"w", Tensor()}}, false);
  ASSERT_FALSE(no_dir.is_ok());
  EXPECT_EQ(no_dir.error().where, "/nonexistent-dir/w.npz");
}

// ---- bad archives ----

TEST(NpzBad, MissingFile) {
  auto m = read_npz("/nonexistent/w.npz");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, "/nonexistent/w.npz");
  EXPECT_NE(m.error().message.find("cannot open"), std::string::npos);
}

TEST(NpzBad, NotAZip) {
  auto m = read_npz(kData + "f32.npy");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, kData + "f32.npy");
  EXPECT_NE(m.error().message.find("not a readable .npz"), std::string::npos) << m.error().message;
}

TEST(NpzBad, MemberThatIsNotNpy) {
  auto m = read_npz(kData + "not_npy.npz");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, kData + "not_npy.npz");
  EXPECT_EQ(m.error().message, "member 'readme.txt' is not a .npy file");
}

TEST(NpzBad, LyingMemberHeaderNamesTheMember) {
  auto m = read_npz(kData + "lying_header.npz");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, kData + "lying_header.npz:w.npy");
  EXPECT_EQ(m.error().message,
            "header declares shape (1000, 1000) of <f4 = 4000000 bytes but only 12 bytes follow");
}

TEST(NpzBad, LyingMemberSizeIsNotAllocated) {
  auto m = read_npz(kData + "lying_size.npz");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().where.find("lying_size.npz"), std::string::npos);
  EXPECT_NE(m.error().message.find("1000000000"), std::string::npos) << m.error().to_string();
}

TEST(NpzBad, CrcMismatch) {
  auto m = read_npz(kData + "bad_crc.npz");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, kData + "bad_crc.npz:w.npy");
  EXPECT_NE(m.error().message.find("CRC"), std::string::npos) << m.error().message;
}

TEST(NpzBad, TruncationsNeverCrash) {
  auto bytes = read_file(kData + "deflated.npz");
  ASSERT_TRUE(bytes);
  for (size_t n = 0; n < bytes->size(); ++n) {
    auto m = parse_npz(bytes->data(), n, "mem.npz");
    ASSERT_FALSE(m.has_value()) << n;
    EXPECT_EQ(m.error().where.rfind("mem.npz", 0), 0u);
  }
}

TEST(NpzBad, CorruptionsNeverCrash) {
  auto bytes = read_file(kData + "deflated.npz");
  ASSERT_TRUE(bytes);
  int failures = 0;
  for (size_t i = 0; i < bytes->size(); ++i) {
    std::string bad = *bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto m = parse_npz(bad.data(), bad.size(), "mem.npz");
    if (!m) ++failures;
  }
  EXPECT_GT(failures, 0);
}

}  // namespace
}  // namespace tessera::formats
