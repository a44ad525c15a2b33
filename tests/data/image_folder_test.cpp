// Tests for engine/data/image_folder.cpp: class folders, PNG/JPEG decoding, size and decode errors.
#include "engine/data/image_folder.h"

#include <gtest/gtest.h>
#include <stb/stb_image_write.h>  // implementation in Debian's libstb.so

#include <filesystem>

#include "tests/data/data_test_util.h"

namespace tessera::data {
namespace {

using testing::fresh_dir;
using testing::write_bytes;

// Writes a w x h PNG with `comp` channels whose byte k (row-major, interleaved) is first + k.
void write_png(const std::string& path, int w, int h, int comp, int first) {
  std::vector<unsigned char> px(static_cast<size_t>(w * h * comp));
  for (size_t k = 0; k < px.size(); ++k)
    px[k] = static_cast<unsigned char>(first + static_cast<int>(k));
  ASSERT_NE(stbi_write_png(path.c_str(), w, h, comp, px.data(), w * comp), 0) << path;
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(ImageFolder, ClassesSortedAndPixelsInChw) {
  const std::string dir = fresh_dir("images_ok");
  for (const char* c : {"dog", "cat", "emu"}) std::filesystem::create_directories(dir + "/" + c);
  write_png(dir + "/dog/b.png", 2, 2, 3, 0);
  write_png(dir + "/dog/a.PNG", 2, 2, 3, 100);
  write_png(dir + "/cat/z.png", 2, 2, 1, 10);
  write_bytes(dir + "/cat/notes.txt", "not an image");
  write_bytes(dir + "/stray.png", "ignored: not in a class folder");
  auto src = open_image_folder(dir, 3);
  ASSERT_TRUE(src) << src.error().to_string();
  EXPECT_EQ((*src)->classes(), (std::vector<std::string>{"cat", "dog", "emu"}));
  ASSERT_EQ((*src)->size(), 3);
  EXPECT_EQ((*src)->fields()[0].shape, (Shape{3, 2, 2}));

  Example ex;
  // Example 0: cat/z.png, grey 10..13 expanded to RGB.
  ASSERT_TRUE((*src)->get(0, ex).is_ok());
  EXPECT_EQ(ex[1].data<int64_t>()[0], 0);
  std::vector<float> want;
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 4; ++p) want.push_back((10 + p) / 255.f);
  }
  EXPECT_EQ(values(ex[0]), want);
  // Example 1: dog/a.PNG (sorted before b.png); interleaved RGB 100.. -> planes.
  ASSERT_TRUE((*src)->get(1, ex).is_ok());
  EXPECT_EQ(ex[1].data<int64_t>()[0], 1);
  want.clear();
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 4; ++p) want.push_back(static_cast<float>(100 + 3 * p + c) / 255.f);
  }
  EXPECT_EQ(values(ex[0]), want);
  ASSERT_TRUE((*src)->get(2, ex).is_ok());
  EXPECT_EQ(ex[1].data<int64_t>()[0], 1);
  EXPECT_FLOAT_EQ(ex[0].data<float>()[4], 1 / 255.f);  // G of pixel 0 is byte 1
  EXPECT_FALSE((*src)->get(3, ex).is_ok());
}

TEST(ImageFolder, GreyFromRgbUsesStbLuma) {
  const std::string dir = fresh_dir("images_grey");
  std::filesystem::create_directories(dir + "/only");
  const unsigned char px[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};  // 2x2 RGB
  ASSERT_NE(stbi_write_png((dir + "/only/a.png").c_str(), 2, 2, 3, px, 6), 0);
  auto src = open_image_folder(dir, 1);
  ASSERT_TRUE(src) << src.error().to_string();
  Example ex;
  ASSERT_TRUE((*src)->get(0, ex).is_ok());
  ASSERT_EQ(ex[0].shape(), (Shape{1, 2, 2}));
  // stb_image: y = (77 r + 150 g + 29 b) >> 8.
  const int ys[] = {(77 * 255) >> 8, (150 * 255) >> 8, (29 * 255) >> 8,
                    (77 * 10 + 150 * 20 + 29 * 30) >> 8};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(ex[0].data<float>()[i], ys[i] / 255.f) << i;
}

TEST(ImageFolder, JpegDecodes) {
  const std::string dir = fresh_dir("images_jpeg");
  std::filesystem::create_directories(dir + "/a");
  std::vector<unsigned char> px(8 * 8 * 3, 128);
  ASSERT_NE(stbi_write_jpg((dir + "/a/x.jpeg").c_str(), 8, 8, 3, px.data(), 95), 0);
  auto src = open_image_folder(dir, 3);
  ASSERT_TRUE(src) << src.error().to_string();
  Example ex;
  ASSERT_TRUE((*src)->get(0, ex).is_ok());
  EXPECT_EQ(ex[0].shape(), (Shape{3, 8, 8}));
  EXPECT_NEAR(ex[0].data<float>()[0], 128 / 255.f, 3 / 255.f);  // lossy
}

TEST(ImageFolder, SizeMismatchNamesFilesAndSizes) {
  const std::string dir = fresh_dir("images_sizes");
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  write_png(dir + "/a/1.png", 2, 2, 1, 0);
  write_png(dir + "/b/2.png", 3, 2, 1, 0);
  auto src = open_image_folder(dir, 1);
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().where, dir + "/b/2.png");
  EXPECT_NE(src.error().message.find("image is 3x2 but " + dir + "/a/1.png is 2x2"),
            std::string::npos)
      << src.error().message;
}

TEST(ImageFolder, BrokenImageNamesFileAndReason) {
  const std::string dir = fresh_dir("images_broken");
  std::filesystem::create_directories(dir + "/a");
  write_png(dir + "/a/1.png", 2, 2, 1, 0);
  write_bytes(dir + "/a/2.png", "this is not a png");
  auto src = open_image_folder(dir, 1);
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().where, dir + "/a/2.png");
  EXPECT_NE(src.error().message.find("cannot read image header: "), std::string::npos);
  EXPECT_GT(src.error().message.size(), std::string("cannot read image header: ").size());

  // A file that becomes broken after open is reported by get().
  std::filesystem::remove(dir + "/a/2.png");
  auto ok = open_image_folder(dir, 1);
  ASSERT_TRUE(ok) << ok.error().to_string();
  write_bytes(dir + "/a/1.png", "\x89PNG\r\n\x1a\n garbage");
  Example ex;
  Status st = (*ok)->get(0, ex);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().where, dir + "/a/1.png");
  EXPECT_NE(st.error().message.find("cannot decode image: "), std::string::npos);
}

TEST(ImageFolder, OpenErrors) {
  const std::string dir = fresh_dir("images_errors");
  EXPECT_FALSE(open_image_folder(dir + "/absent", 3));
  EXPECT_FALSE(open_image_folder(dir, 3));  // no class folders
  std::filesystem::create_directories(dir + "/a");
  auto empty = open_image_folder(dir, 3);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no .png/.jpg/.jpeg images"), std::string::npos);
  write_png(dir + "/a/1.png", 2, 2, 1, 0);
  auto channels = open_image_folder(dir, 4);
  ASSERT_FALSE(channels);
  EXPECT_NE(channels.error().message.find("channels must be 1 or 3"), std::string::npos);
}

}  // namespace
}  // namespace tessera::data
