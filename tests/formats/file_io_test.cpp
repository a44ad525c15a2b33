// Tests for formats/file_io.cpp: whole-file reads, atomic writes, path helpers.
#include "formats/file_io.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace tessera::formats {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_file_io_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(FileIo, WriteThenRead) {
  const std::string path = temp_path("a.bin");
  const std::string bytes("x\0y\n", 4);
  ASSERT_TRUE(write_file_atomic(path, bytes).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto back = read_file(path);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, bytes);
  ASSERT_TRUE(write_file_atomic(path, "replaced").is_ok());
  EXPECT_EQ(*read_file(path), "replaced");
  ASSERT_TRUE(write_file_atomic(path, "").is_ok());
  EXPECT_EQ(*read_file(path), "");
}

TEST(FileIo, LargeFile) {
  const std::string path = temp_path("big.bin");
  std::string bytes(300000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(write_file_atomic(path, bytes).is_ok());
  EXPECT_EQ(*read_file(path), bytes);
}

TEST(FileIo, ErrorsNameThePath) {
  auto missing = read_file("/nonexistent/x.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, "/nonexistent/x.json");
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);
  Status st = write_file_atomic("/nonexistent/x.json", "data");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().where, "/nonexistent/x.json");
  // Renaming over a directory fails, and the .tmp file is cleaned up.
  const std::string dir = temp_path("a_dir");
  std::filesystem::create_directories(dir + "/inside");
  Status over_dir = write_file_atomic(dir, "data");
  ASSERT_FALSE(over_dir.is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
}

TEST(FileIo, Paths) {
  EXPECT_EQ(parent_dir("samples/lenet.json"), "samples");
  EXPECT_EQ(parent_dir("a/b/c.json"), "a/b");
  EXPECT_EQ(parent_dir("lenet.json"), "");
  EXPECT_EQ(parent_dir("/lenet.json"), "/");
  EXPECT_EQ(base_name("a/b/c.npz"), "c.npz");
  EXPECT_EQ(base_name("c.npz"), "c.npz");
  EXPECT_EQ(join_path("samples", "lenet.npz"), "samples/lenet.npz");
  EXPECT_EQ(join_path("samples/", "lenet.npz"), "samples/lenet.npz");
  EXPECT_EQ(join_path("", "lenet.npz"), "lenet.npz");
  EXPECT_EQ(join_path("samples", "/abs/w.npz"), "/abs/w.npz");
}

}  // namespace
}  // namespace tessera::formats
