// Tests for graph file dispatch by extension (formats/graph_file.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/paths.h"
#include "engine/ir/text.h"
#include "formats/graph_file.h"

namespace tessera::formats {
namespace {

std::string temp_dir() {
  const auto d = std::filesystem::temp_directory_path() / ("tessera_graph_file_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(GraphFile, JsonToTextToJsonKeepsTheGraph) {
  auto g = load_graph_file(tessera::test::source_dir() + "/samples/lenet.json");
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  const std::string tir = temp_dir() + "/lenet.tir";
  ASSERT_TRUE(save_graph_file(*g, tir).is_ok());
  auto back = load_graph_file(tir);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(ir::print_graph(*back), ir::print_graph(*g));
  const std::string json = temp_dir() + "/lenet.json";
  ASSERT_TRUE(save_graph_file(*back, json).is_ok());
  auto again = load_graph_file(json);
  ASSERT_TRUE(again.has_value()) << again.error().to_string();
  EXPECT_EQ(again->num_nodes(), g->num_nodes());
  for (ir::ValueId p : g->params())
    EXPECT_TRUE(g->param_data(p)->equals(*again->param_data(*again->find_value(g->value(p).name))));
}

TEST(GraphFile, UnknownExtensionIsRefusedNamingTheFile) {
  auto g = load_graph_file("model.onnx2");
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().where, "model.onnx2");
  EXPECT_NE(g.error().message.find("unsupported graph file extension '.onnx2'"), std::string::npos);
  auto none = load_graph_file("dir.v2/model");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("extension ''"), std::string::npos);
}

TEST(GraphFile, TextErrorsCarryLineAndColumn) {
  const std::string path = temp_dir() + "/bad.tir";
  { std::ofstream(path) << "graph \"g\" {\n  input %0 \"x\" : f32[2\n}\n"; }
  auto g = load_graph_file(path);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().to_string().find(path + ":3:1"), std::string::npos) << g.error().to_string();
}

}  // namespace
}  // namespace tessera::formats
