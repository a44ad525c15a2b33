// Tests for engine/data/idx.cpp: IDX images and labels, plain and gzipped, errors, Fashion-MNIST.
#include "engine/data/idx.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/data/data_test_util.h"

namespace tessera::data {
namespace {

using testing::fresh_dir;
using testing::idx_bytes;
using testing::write_bytes;
using testing::write_gz;

// 3 images of 2x3 pixels: image i holds 10*i + j at pixel j; labels 7, 0, 200.
std::vector<uint8_t> pixels() {
  std::vector<uint8_t> p;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 6; ++j) p.push_back(static_cast<uint8_t>(10 * i + j));
  }
  p[17] = 255;
  return p;
}
const std::vector<uint8_t> kLabels = {7, 0, 200};

void expect_example(const Source& src, int64_t index, const std::vector<float>& x, int64_t label) {
  Example ex;
  ASSERT_TRUE(src.get(index, ex).is_ok());
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].dtype(), DType::kF32);
  EXPECT_EQ(ex[0].shape(), (Shape{1, 2, 3}));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(ex[0].data<float>()[i], x[i]) << i;
  EXPECT_EQ(ex[1].dtype(), DType::kI64);
  EXPECT_EQ(ex[1].rank(), 0);
  EXPECT_EQ(ex[1].data<int64_t>()[0], label);
}

TEST(Idx, PlainAndGzippedGiveTheSameExamples) {
  const std::string dir = fresh_dir("idx_plain_gz");
  write_bytes(dir + "/img", idx_bytes({3, 2, 3}, pixels()));
  write_bytes(dir + "/lab", idx_bytes({3}, kLabels));
  write_gz(dir + "/img.gz", idx_bytes({3, 2, 3}, pixels()));
  write_gz(dir + "/lab.gz", idx_bytes({3}, kLabels));
  for (const char* suffix : {"", ".gz"}) {
    SCOPED_TRACE(suffix);
    auto src = open_idx_pair(dir + "/img" + suffix, dir + "/lab" + suffix);
    ASSERT_TRUE(src) << src.error().to_string();
    EXPECT_EQ((*src)->size(), 3);
    const auto fields = (*src)->fields();
    ASSERT_EQ(fields.size(), 2u);
    EXPECT_EQ(fields[0].name, "x");
    EXPECT_EQ(fields[0].shape, (Shape{1, 2, 3}));
    EXPECT_EQ(fields[1].name, "labels");
    EXPECT_EQ(fields[1].dtype, DType::kI64);
    expect_example(**src, 0, {0.f, 1 / 255.f, 2 / 255.f, 3 / 255.f, 4 / 255.f, 5 / 255.f}, 7);
    expect_example(**src, 2, {20 / 255.f, 21 / 255.f, 22 / 255.f, 23 / 255.f, 24 / 255.f, 1.f},
                   200);
    Example ex;
    Status st = (*src)->get(3, ex);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.error().message.find("out of range"), std::string::npos);
  }
}

TEST(Idx, MnistDirPrefersPlainAndFallsBackToGz) {
  const std::string dir = fresh_dir("idx_mnist_dir");
  write_gz(dir + "/train-images-idx3-ubyte.gz", idx_bytes({3, 2, 3}, pixels()));
  write_gz(dir + "/train-labels-idx1-ubyte.gz", idx_bytes({3}, kLabels));
  write_bytes(dir + "/t10k-images-idx3-ubyte", idx_bytes({1, 2, 3}, {1, 2, 3, 4, 5, 6}));
  write_bytes(dir + "/t10k-labels-idx1-ubyte", idx_bytes({1}, {4}));
  auto train = open_mnist_dir(dir, "train");
  ASSERT_TRUE(train) << train.error().to_string();
  EXPECT_EQ((*train)->size(), 3);
  auto test = open_mnist_dir(dir, "test");
  ASSERT_TRUE(test) << test.error().to_string();
  EXPECT_EQ((*test)->size(), 1);
  expect_example(**test, 0, {1 / 255.f, 2 / 255.f, 3 / 255.f, 4 / 255.f, 5 / 255.f, 6 / 255.f}, 4);

  auto bad_split = open_mnist_dir(dir, "valid");
  ASSERT_FALSE(bad_split);
  EXPECT_NE(bad_split.error().message.find("valid"), std::string::npos);
}

TEST(Idx, MissingFileNamesFileAndDir) {
  const std::string dir = fresh_dir("idx_missing");
  write_bytes(dir + "/train-images-idx3-ubyte", idx_bytes({3, 2, 3}, pixels()));
  auto src = open_mnist_dir(dir, "train");
  ASSERT_FALSE(src);
  const std::string msg = src.error().to_string();
  EXPECT_NE(msg.find("train-labels-idx1-ubyte"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir), std::string::npos) << msg;

  auto pair = open_idx_pair(dir + "/train-images-idx3-ubyte", dir + "/nope");
  ASSERT_FALSE(pair);
  EXPECT_EQ(pair.error().where, dir + "/nope");
  EXPECT_NE(pair.error().message.find("no such file"), std::string::npos);

  EXPECT_FALSE(open_mnist_dir(dir + "/absent", "train"));
}

TEST(Idx, BadMagic) {
  const std::string dir = fresh_dir("idx_magic");
  write_bytes(dir + "/img", idx_bytes({3}, kLabels));  // a labels file where images belong
  write_bytes(dir + "/lab", idx_bytes({3}, kLabels));
  auto src = open_idx_pair(dir + "/img", dir + "/lab");
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().where, dir + "/img");
  EXPECT_NE(src.error().message.find("bad magic 0x00000801: expected 0x00000803"),
            std::string::npos)
      << src.error().message;

  std::string png = "\x89PNG\r\n\x1a\n";
  write_bytes(dir + "/png", png);
  auto src2 = open_idx_pair(dir + "/png", dir + "/lab");
  ASSERT_FALSE(src2);
  EXPECT_NE(src2.error().message.find("bad magic 0x89504e47"), std::string::npos);
}

TEST(Idx, TruncatedAndTrailingData) {
  const std::string dir = fresh_dir("idx_truncated");
  const std::vector<uint8_t> all = pixels();
  const std::vector<uint8_t> short_pixels(all.begin(), all.begin() + 10);
  write_bytes(dir + "/img", idx_bytes({3, 2, 3}, short_pixels));
  write_gz(dir + "/img.gz", idx_bytes({3, 2, 3}, short_pixels));
  write_bytes(dir + "/lab", idx_bytes({3}, kLabels));
  for (const char* name : {"/img", "/img.gz"}) {
    auto src = open_idx_pair(dir + name, dir + "/lab");
    ASSERT_FALSE(src);
    EXPECT_NE(src.error().message.find("need 18 bytes after the header, found 10"),
              std::string::npos)
        << src.error().message;
  }
  // A gzip stream cut in the middle.
  gzFile f = gzopen((dir + "/full.gz").c_str(), "wb");
  const std::string full = idx_bytes({3, 2, 3}, pixels());
  gzwrite(f, full.data(), static_cast<unsigned>(full.size()));
  gzclose(f);
  std::ifstream in(dir + "/full.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_bytes(dir + "/cut.gz", gz.substr(0, gz.size() - 12));
  auto cut = open_idx_pair(dir + "/cut.gz", dir + "/lab");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos) << cut.error().message;
  EXPECT_NE(cut.error().message.find("(zlib: unexpected end of file)"), std::string::npos)
      << cut.error().message;
  // A corrupted deflate stream (the CRC no longer matches, or the stream is invalid).
  std::string corrupt = gz;
  corrupt[corrupt.size() - 10] = static_cast<char>(corrupt[corrupt.size() - 10] ^ 0x55);
  write_bytes(dir + "/corrupt.gz", corrupt);
  auto bad = open_idx_pair(dir + "/corrupt.gz", dir + "/lab");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("zlib"), std::string::npos) << bad.error().message;

  // Header cut short.
  write_bytes(dir + "/head", idx_bytes({3, 2, 3}, {}).substr(0, 9));
  auto head = open_idx_pair(dir + "/head", dir + "/lab");
  ASSERT_FALSE(head);
  EXPECT_NE(head.error().message.find("expected 12 bytes of dims, found 5"), std::string::npos)
      << head.error().message;

  std::vector<uint8_t> long_labels = {1, 2, 3, 4};
  write_bytes(dir + "/lab4", idx_bytes({3}, long_labels));
  write_bytes(dir + "/img_ok", idx_bytes({3, 2, 3}, pixels()));
  auto trailing = open_idx_pair(dir + "/img_ok", dir + "/lab4");
  ASSERT_FALSE(trailing);
  EXPECT_NE(trailing.error().message.find("trailing"), std::string::npos);
}

TEST(Idx, CountMismatchNamesBothFilesAndCounts) {
  const std::string dir = fresh_dir("idx_counts");
  write_bytes(dir + "/img", idx_bytes({3, 2, 3}, pixels()));
  write_bytes(dir + "/lab", idx_bytes({2}, {1, 2}));
  auto src = open_idx_pair(dir + "/img", dir + "/lab");
  ASSERT_FALSE(src);
  const std::string& m = src.error().message;
  EXPECT_NE(m.find("image count 3 in " + dir + "/img"), std::string::npos) << m;
  EXPECT_NE(m.find("label count 2 in " + dir + "/lab"), std::string::npos) << m;
}

TEST(Idx, AbsurdDimsAreBoundedByTheFile) {
  const std::string dir = fresh_dir("idx_absurd");
  write_bytes(dir + "/lab", idx_bytes({3}, kLabels));
  // 2^32-1 cubed overflows any size check.
  write_bytes(dir + "/huge", idx_bytes({0xffffffffu, 0xffffffffu, 0xffffffffu}, pixels()));
  auto huge = open_idx_pair(dir + "/huge", dir + "/lab");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("absurd dims"), std::string::npos) << huge.error().message;
  // 10 GB declared, 18 bytes present: an error, and nothing near 10 GB allocated (ASan would say).
  write_bytes(dir + "/big", idx_bytes({1000000, 100, 100}, pixels()));
  write_gz(dir + "/big.gz", idx_bytes({1000000, 100, 100}, pixels()));
  for (const char* name : {"/big", "/big.gz"}) {
    auto big = open_idx_pair(dir + name, dir + "/lab");
    ASSERT_FALSE(big);
    EXPECT_NE(big.error().message.find("need 10000000000 bytes after the header, found 18"),
              std::string::npos)
        << big.error().message;
  }
}

// parse_idx (the bytes entry point, which the fuzz target feeds) against the file reader: the same
// dims and bytes for good input, the same message for bad input, plain and gzipped.
TEST(Idx, ParseIdxMatchesTheFileReader) {
  const std::string dir = fresh_dir("idx_parse");
  auto gz_bytes = [&](const std::string& plain) {
    write_gz(dir + "/tmp.gz", plain);
    std::ifstream in(dir + "/tmp.gz", std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string images = idx_bytes({3, 2, 3}, pixels());
  for (const std::string& bytes : {images, gz_bytes(images)}) {
    auto a = parse_idx(bytes.data(), bytes.size(), 3, "mem");
    ASSERT_TRUE(a) << a.error().to_string();
    EXPECT_EQ(a->dims, (std::vector<int64_t>{3, 2, 3}));
    EXPECT_EQ(a->bytes, pixels());
  }
  // Two gzip members are one stream (as gzread reads them); bytes after the last member that do
  // not start another are ignored (gzread does the same).
  const std::string labels = idx_bytes({3}, kLabels);
  const std::string two = gz_bytes(labels.substr(0, 6)) + gz_bytes(labels.substr(6)) + "junk";
  auto joined = parse_idx(two.data(), two.size(), 1, "mem");
  ASSERT_TRUE(joined) << joined.error().to_string();
  EXPECT_EQ(joined->bytes, kLabels);

  const std::string gz = gz_bytes(images);
  std::string corrupt = gz;
  corrupt[corrupt.size() - 10] = static_cast<char>(corrupt[corrupt.size() - 10] ^ 0x55);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {idx_bytes({3}, kLabels), "bad magic 0x00000801: expected 0x00000803 (idx3 images"},
      {"\x89PNG", "bad magic 0x89504e47"},
      {idx_bytes({3, 2, 3}, {}).substr(0, 9), "expected 12 bytes of dims, found 5"},
      {idx_bytes({3, 2, 3}, {1, 2, 3}), "need 18 bytes after the header, found 3"},
      {idx_bytes({3, 2, 3}, pixels()) + "x", "trailing data"},
      {idx_bytes({1000000, 100, 100}, pixels()),
       "need 10000000000 bytes after the header, found 18"},
      {idx_bytes({0xffffffffu, 0xffffffffu, 0xffffffffu}, {}), "absurd dims"},
      {gz.substr(0, gz.size() - 12), "(zlib: unexpected end of file)"},
      {gz.substr(0, 2), "expected 4 bytes of magic, found 0 (zlib: unexpected end of file)"},
      {corrupt, "zlib"},
  };
  for (const auto& [bytes, want] : bad) {
    SCOPED_TRACE(want);
    auto mem = parse_idx(bytes.data(), bytes.size(), 3, "mem.idx");
    ASSERT_FALSE(mem);
    EXPECT_EQ(mem.error().where, "mem.idx");
    EXPECT_NE(mem.error().message.find(want), std::string::npos) << mem.error().message;
    write_bytes(dir + "/img", bytes);
    auto file = open_idx_pair(dir + "/img", dir + "/img");
    ASSERT_FALSE(file);
    EXPECT_NE(file.error().message.find(want), std::string::npos) << file.error().message;
  }
  EXPECT_FALSE(parse_idx(images.data(), images.size(), 0, "mem"));
  EXPECT_FALSE(parse_idx(nullptr, 0, 1, "mem"));
}

TEST(Idx, FashionMnist) {
  if (!std::filesystem::exists(testing::kFashionDir)) GTEST_SKIP() << "no " << testing::kFashionDir;
  auto train = open_mnist_dir(testing::kFashionDir, "train");
  ASSERT_TRUE(train) << train.error().to_string();
  auto test = open_mnist_dir(testing::kFashionDir, "test");
  ASSERT_TRUE(test) << test.error().to_string();
  EXPECT_EQ((*train)->size(), 60000);
  EXPECT_EQ((*test)->size(), 10000);
  EXPECT_EQ((*train)->fields()[0].shape, (Shape{1, 28, 28}));

  // Checked with NumPy on the same files: per-class counts, first labels, pixel sums of image 0
  // (76247 and 33456 as u8 sums), pixels 370..379 of train image 0.
  std::vector<int64_t> counts(10, 0);
  Example ex;
  for (int64_t i = 0; i < 60000; ++i) {
    ASSERT_TRUE((*train)->get(i, ex).is_ok());
    const int64_t label = ex[1].data<int64_t>()[0];
    ASSERT_TRUE(label >= 0 && label < 10) << label;
    ++counts[static_cast<size_t>(label)];
  }
  EXPECT_EQ(counts, std::vector<int64_t>(10, 6000));
  ASSERT_TRUE((*train)->get(0, ex).is_ok());
  EXPECT_EQ(ex[1].data<int64_t>()[0], 9);  // Ankle boot
  double sum = 0;
  for (int i = 0; i < 784; ++i) sum += ex[0].data<float>()[i];
  EXPECT_NEAR(sum * 255.0, 76247.0, 0.05);
  const std::vector<int> row = {0, 0, 0, 4, 0, 0, 55, 236, 228, 230};
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(ex[0].data<float>()[370 + i] * 255.0f, row[i]);
  ASSERT_TRUE((*test)->get(0, ex).is_ok());
  EXPECT_EQ(ex[1].data<int64_t>()[0], 9);
  sum = 0;
  for (int i = 0; i < 784; ++i) sum += ex[0].data<float>()[i];
  EXPECT_NEAR(sum * 255.0, 33456.0, 0.05);
}

}  // namespace
}  // namespace tessera::data
