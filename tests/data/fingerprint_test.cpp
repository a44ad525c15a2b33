// Tests for engine/data/fingerprint.cpp: stable under copies and touches, sensitive to content.
#include "engine/data/fingerprint.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/data/csv.h"
#include "engine/data/idx.h"
#include "tests/data/data_test_util.h"

namespace tessera::data {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::idx_bytes;
using testing::write_bytes;

std::string fp_of(const std::string& images, const std::string& labels) {
  auto src = open_idx_pair(images, labels);
  EXPECT_TRUE(src) << src.error().to_string();
  if (!src) return "";
  auto fp = fingerprint(**src);
  EXPECT_TRUE(fp) << fp.error().to_string();
  return fp ? *fp : "";
}

TEST(Fingerprint, IdxCopiesMatchAndEditsDiffer) {
  const std::string a = fresh_dir("fp_a"), b = fresh_dir("fp_b");
  std::vector<uint8_t> px(2 * 4 * 4);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i);
  for (const std::string& d : {a, b}) {
    write_bytes(d + "/img", idx_bytes({2, 4, 4}, px));
    write_bytes(d + "/lab", idx_bytes({2}, {1, 2}));
  }
  const std::string fa = fp_of(a + "/img", a + "/lab");
  EXPECT_EQ(fa.rfind("xxh3:", 0), 0u);
  EXPECT_EQ(fa.size(), 5u + 16u);
  EXPECT_EQ(fp_of(b + "/img", b + "/lab"), fa);  // a copy elsewhere
  fs::last_write_time(b + "/img", fs::last_write_time(b + "/img") + std::chrono::hours(1));
  EXPECT_EQ(fp_of(b + "/img", b + "/lab"), fa);  // touched

  px.back() = 200;  // last byte of the images file
  write_bytes(b + "/img", idx_bytes({2, 4, 4}, px));
  EXPECT_NE(fp_of(b + "/img", b + "/lab"), fa);
  write_bytes(b + "/img", idx_bytes({2, 4, 4}, std::vector<uint8_t>(32, 0)));
  write_bytes(b + "/lab", idx_bytes({2}, {1, 3}));
  EXPECT_NE(fp_of(b + "/img", b + "/lab"), fp_of(a + "/img", b + "/lab"));
  fs::rename(b + "/lab", b + "/lab2");
  fs::copy_file(a + "/img", b + "/img", fs::copy_options::overwrite_existing);
  EXPECT_NE(fp_of(b + "/img", b + "/lab2"), fp_of(b + "/img", a + "/lab"));  // renamed
}

TEST(Fingerprint, InMemorySourcesHashTheirEnds) {
  auto s1 = TensorSource::create({{"x", Tensor::from_vector<float>({3, 1}, {1, 2, 3})}}, "m");
  auto s2 = TensorSource::create({{"x", Tensor::from_vector<float>({3, 1}, {1, 2, 4})}}, "m");
  auto s3 = TensorSource::create({{"x", Tensor::from_vector<float>({3, 1}, {1, 2, 3})}}, "other");
  ASSERT_TRUE(s1 && s2 && s3);
  auto f1 = fingerprint(**s1), f2 = fingerprint(**s2), f3 = fingerprint(**s3);
  ASSERT_TRUE(f1 && f2 && f3);
  EXPECT_NE(*f1, *f2);
  EXPECT_EQ(*f1, *f3);  // names are labels, not content
}

TEST(Fingerprint, MissingFileIsAnError) {
  const std::string d = fresh_dir("fp_missing");
  write_bytes(d + "/a.csv", "1,2\n3,4\n");
  auto src = open_csv(d + "/a.csv");
  ASSERT_TRUE(src);
  ASSERT_TRUE(fingerprint(**src));
  fs::remove(d + "/a.csv");
  auto fp = fingerprint(**src);
  ASSERT_FALSE(fp);
  EXPECT_EQ(fp.error().where, d + "/a.csv");
}

TEST(Fingerprint, FashionMnistSplitsDiffer) {
  if (!fs::exists(testing::kFashionDir)) GTEST_SKIP() << "no " << testing::kFashionDir;
  auto train = open_mnist_dir(testing::kFashionDir, "train");
  auto test = open_mnist_dir(testing::kFashionDir, "test");
  ASSERT_TRUE(train && test);
  auto a = fingerprint(**train), b = fingerprint(**test), a2 = fingerprint(**train);
  ASSERT_TRUE(a && b && a2);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(*a, *a2);
  std::printf("fashion-mnist fingerprints: train %s, test %s\n", a->c_str(), b->c_str());
}

}  // namespace
}  // namespace tessera::data
