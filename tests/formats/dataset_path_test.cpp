// Which reader a data set path gets (formats/dataset_path.h): IDX folders, class folders, .csv,
// .npz with and without a test split, and the errors for paths that are none of these.
#include "formats/dataset_path.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "formats/npy.h"

namespace tessera::formats {
namespace {

namespace fs = std::filesystem;

class DatasetPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_dataset_path_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

Tensor labels(std::vector<int64_t> v) {
  Tensor t(DType::kI64, Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

TEST_F(DatasetPathTest, CsvHasATrainSplitOnly) {
  std::ofstream(path("iris.csv")) << "a,b,label\n1,2,0\n3,4,1\n5,6,1\n";
  auto train = open_dataset_split(path("iris.csv"), "train", 1);
  ASSERT_TRUE(train) << train.error().to_string();
  ASSERT_NE(*train, nullptr);
  EXPECT_EQ((*train)->size(), 3);
  auto test = open_dataset_split(path("iris.csv"), "test", 1);
  ASSERT_TRUE(test);
  EXPECT_EQ(*test, nullptr);
}

TEST_F(DatasetPathTest, NpzTestSplitIsOptional) {
  Tensor x(DType::kF32, Shape{4, 2});
  ASSERT_TRUE(write_npz(path("a.npz"), {{"x", x}, {"labels", labels({0, 1, 0, 1})}}, false).is_ok());
  auto train = open_dataset_split(path("a.npz"), "train", 1);
  ASSERT_TRUE(train) << train.error().to_string();
  EXPECT_EQ((*train)->size(), 4);
  auto test = open_dataset_split(path("a.npz"), "test", 1);
  ASSERT_TRUE(test);
  EXPECT_EQ(*test, nullptr);

  Tensor xt(DType::kF32, Shape{2, 2});
  ASSERT_TRUE(write_npz(path("b.npz"), {{"x", x}, {"labels", labels({0, 1, 0, 1})}, {"x_test", xt},
                                        {"labels_test", labels({1, 1})}}, false)
                  .is_ok());
  auto test_b = open_dataset_split(path("b.npz"), "test", 1);
  ASSERT_TRUE(test_b) << test_b.error().to_string();
  ASSERT_NE(*test_b, nullptr);
  EXPECT_EQ((*test_b)->size(), 2);
}

TEST_F(DatasetPathTest, ErrorsNameThePath) {
  auto missing = open_dataset_split(path("nowhere"), "train", 1);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().to_string().find("nowhere"), std::string::npos);
  EXPECT_NE(missing.error().to_string().find("no such file"), std::string::npos);

  std::ofstream(path("notes.txt")) << "hello";
  auto unknown = open_dataset_split(path("notes.txt"), "train", 1);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().to_string().find("notes.txt"), std::string::npos);
  EXPECT_NE(unknown.error().to_string().find("cannot tell what data set"), std::string::npos);

  // A folder with neither IDX files nor class folders: the image-folder reader says why.
  fs::create_directories(dir_ / "empty");
  auto empty = open_dataset_split(path("empty"), "train", 1);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().to_string().find("empty"), std::string::npos);
}

TEST(DatasetPath, FashionMnistIdxFolder) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";  // dataset-fashion-mnist
  std::error_code ec;
  if (!fs::exists(dir, ec)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto train = open_dataset_split(dir, "train", 1);
  ASSERT_TRUE(train) << train.error().to_string();
  EXPECT_EQ((*train)->size(), 60000);
  auto test = open_dataset_split(dir, "test", 1);
  ASSERT_TRUE(test) << test.error().to_string();
  ASSERT_NE(*test, nullptr);
  EXPECT_EQ((*test)->size(), 10000);
}

}  // namespace
}  // namespace tessera::formats
