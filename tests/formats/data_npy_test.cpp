// Tests for formats/data_npy.cpp: .npy pairs and .npz archives as training sources.
#include "formats/data_npy.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "formats/npy.h"

namespace tessera::formats {
namespace {

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_data_npy_test" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// u8 [3, 2, 2] holding 0, 5, 10, ...; labels i32 [3] = 2, 0, 1.
Tensor images() {
  std::vector<uint8_t> v;
  for (int i = 0; i < 12; ++i) v.push_back(static_cast<uint8_t>(5 * i));
  return Tensor::from_vector<uint8_t>({3, 2, 2}, v);
}
Tensor labels() {
  return Tensor::from_vector<int32_t>({3}, {2, 0, 1});
}

void expect_example_1(const data::Source& src) {
  data::Example ex;
  ASSERT_TRUE(src.get(1, ex).is_ok());
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].dtype(), DType::kF32);
  EXPECT_EQ(ex[0].shape(), (Shape{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(ex[0].data<float>()[i], (20.f + 5.f * i) / 255.f);
  EXPECT_EQ(ex[1].dtype(), DType::kI64);
  EXPECT_EQ(ex[1].data<int64_t>()[0], 0);
}

TEST(DataNpy, NpyPair) {
  const std::string d = fresh_dir("pair");
  ASSERT_TRUE(write_npy(d + "/x.npy", images()).is_ok());
  ASSERT_TRUE(write_npy(d + "/y.npy", labels()).is_ok());
  auto src = open_npy_source(d + "/x.npy", d + "/y.npy");
  ASSERT_TRUE(src) << src.error().to_string();
  EXPECT_EQ((*src)->size(), 3);
  const auto f = (*src)->fields();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "x");
  EXPECT_EQ(f[1].name, "labels");
  EXPECT_EQ(f[1].shape, Shape{});
  expect_example_1(**src);
  EXPECT_EQ((*src)->files(), (std::vector<std::string>{d + "/x.npy", d + "/y.npy"}));

  // f64 features keep their values (no scaling).
  ASSERT_TRUE(
      write_npy(d + "/xf.npy", Tensor::from_vector<double>({3, 1}, {0.5, 300, -1})).is_ok());
  auto f64 = open_npy_source(d + "/xf.npy", d + "/y.npy");
  ASSERT_TRUE(f64) << f64.error().to_string();
  data::Example ex;
  ASSERT_TRUE((*f64)->get(1, ex).is_ok());
  EXPECT_EQ(ex[0].data<float>()[0], 300.f);
}

TEST(DataNpy, NpzArchive) {
  const std::string d = fresh_dir("npz");
  ASSERT_TRUE(
      write_npz(d + "/a.npz", {{"x_train", images()}, {"y_train", labels()}}, true).is_ok());
  auto src = open_npz_source(d + "/a.npz", "x_train", "y_train");
  ASSERT_TRUE(src) << src.error().to_string();
  expect_example_1(**src);
  auto missing = open_npz_source(d + "/a.npz");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, d + "/a.npz");
  EXPECT_NE(missing.error().message.find("no array 'x' (arrays: x_train, y_train)"),
            std::string::npos)
      << missing.error().message;
}

TEST(DataNpy, Errors) {
  const std::string d = fresh_dir("errors");
  ASSERT_TRUE(write_npy(d + "/x.npy", images()).is_ok());
  ASSERT_TRUE(write_npy(d + "/y2.npy", Tensor::from_vector<int64_t>({2}, {0, 1})).is_ok());
  auto count = open_npy_source(d + "/x.npy", d + "/y2.npy");
  ASSERT_FALSE(count);
  EXPECT_NE(
      count.error().message.find("3 examples in " + d + "/x.npy but 2 labels in " + d + "/y2.npy"),
      std::string::npos)
      << count.error().message;

  ASSERT_TRUE(write_npy(d + "/yf.npy", Tensor::from_vector<float>({3}, {0, 1, 2})).is_ok());
  auto floats = open_npy_source(d + "/x.npy", d + "/yf.npy");
  ASSERT_FALSE(floats);
  EXPECT_EQ(floats.error().where, d + "/yf.npy");
  EXPECT_NE(floats.error().message.find("must be integers"), std::string::npos);

  // Labels per position of a sequence ([N, T]) are accepted; scalar labels are not.
  ASSERT_TRUE(write_npy(d + "/y2d.npy", Tensor::from_vector<int64_t>({3, 1}, {0, 1, 2})).is_ok());
  EXPECT_TRUE(open_npy_source(d + "/x.npy", d + "/y2d.npy"));
  ASSERT_TRUE(write_npy(d + "/y0.npy", Tensor::scalar<int64_t>(1)).is_ok());
  auto scalar = open_npy_source(d + "/x.npy", d + "/y0.npy");
  ASSERT_FALSE(scalar);
  EXPECT_NE(scalar.error().message.find("[N] or [N, ...]"), std::string::npos) << scalar.error().message;
  ASSERT_TRUE(write_npy(d + "/s.npy", Tensor::scalar<float>(1.f)).is_ok());
  ASSERT_TRUE(write_npy(d + "/y1.npy", Tensor::from_vector<int64_t>({1}, {0})).is_ok());
  EXPECT_FALSE(open_npy_source(d + "/s.npy", d + "/y1.npy"));
  auto absent = open_npy_source(d + "/absent.npy", d + "/y1.npy");
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().where, d + "/absent.npy");
}

TEST(DataNpy, TensorSourceValidates) {
  auto dup = data::TensorSource::create(
      {{"x", Tensor::from_vector<float>({1}, {1})}, {"x", Tensor::from_vector<float>({1}, {2})}},
      "dup");
  EXPECT_FALSE(dup);
  auto counts = data::TensorSource::create(
      {{"x", Tensor::from_vector<float>({2}, {1, 2})}, {"y", Tensor::from_vector<float>({1}, {2})}},
      "counts");
  ASSERT_FALSE(counts);
  EXPECT_NE(counts.error().message.find("'y' has 1 examples but 'x' has 2"), std::string::npos);
  EXPECT_FALSE(data::TensorSource::create({}, "empty"));
  // Examples are copies: modifying one does not touch the source.
  auto ok =
      data::TensorSource::create({{"x", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})}}, "ok");
  ASSERT_TRUE(ok);
  data::Example ex;
  ASSERT_TRUE((*ok)->get(1, ex).is_ok());
  EXPECT_EQ(ex[0].to_doubles(), (std::vector<double>{3, 4}));
  ex[0].data<float>()[0] = 99.f;
  ASSERT_TRUE((*ok)->get(1, ex).is_ok());
  EXPECT_EQ(ex[0].data<float>()[0], 3.f);
  EXPECT_FALSE((*ok)->get(2, ex).is_ok());
}

}  // namespace
}  // namespace tessera::formats
