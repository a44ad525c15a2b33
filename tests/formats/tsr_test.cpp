// The native .tsr format: round trips (samples, every attribute kind, nested graphs, metadata,
// layout, external weights), the JSON form both ways, the version corpus, and hostile files.
#include "tests/support/paths.h"
#include "formats/tsr.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/ir/text.h"
#include "engine/ops/op_def.h"
#include "formats/document.h"
#include "formats/file_io.h"
#include "formats/json_graph.h"

namespace tessera::formats {
namespace {

const std::string kSamples = tessera::test::source_dir() + "/samples/";
const std::string kCorpus = tessera::test::source_dir() + "/tests/formats/data/tsr/";

std::string temp_dir() {
  const auto d = std::filesystem::temp_directory_path() / ("tessera_tsr_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

// A graph with every attribute kind, an If with captures, symbolic dims, unknown rank, an absent
// optional input, a removed node (an id gap, unless `gap` is false), provenance, and params of
// several dtypes.
GraphDocument every_feature(bool gap = true) {
  using ir::Dim;
  using ir::TensorType;
  GraphDocument doc;
  ir::Graph& g = doc.graph;
  g.set_name("every_feature");
  const ir::ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::named("N"), Dim::known(4)}));
  const ir::ValueId any = g.add_input("any", TensorType::unranked(DType::kI64));
  const ir::ValueId flag = g.add_input("flag", TensorType(DType::kBool, {}));
  const ir::ValueId w = g.add_param("w", Tensor::from_vector<float>({4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));
  const ir::ValueId h = g.add_param("h", Tensor::from_doubles(DType::kF16, {2}, {1.0, -2.0}));
  const ir::ValueId big = g.add_param("big", Tensor(DType::kF64, {300}));  // 2400 bytes: external when forced
  const ir::NodeId mm = g.add_node("MatMul", {x, w}, 1, "mm");
  if (gap) g.remove_node(g.add_node("Relu", {g.node(mm).outputs[0]}, 1, "dead"));
  ir::Attributes attrs;
  attrs.emplace("i", int64_t{-7});
  attrs.emplace("f", 0.1);
  attrs.emplace("s", std::string("hello \"quoted\" \xc3\xa9"));
  attrs.emplace("t", Tensor::from_vector<int32_t>({3}, {1, -2, 3}));
  attrs.emplace("ints", std::vector<int64_t>{});
  attrs.emplace("floats", std::vector<double>{1.5, -0.0, 1e300});
  attrs.emplace("strings", std::vector<std::string>{"a", ""});
  const ir::NodeId clip = g.add_node("Clip", {g.node(mm).outputs[0], ir::kNoValue, h}, 1, "clip", std::move(attrs));
  g.node(clip).provenance = {{mm}, "studio"};
  ir::Graph then_g("then");
  const ir::ValueId cap = then_g.add_capture("w", TensorType(DType::kF32, {Dim::known(4), Dim::known(4)}));
  const ir::NodeId neg = then_g.add_node("Neg", {cap}, 1, "neg");
  then_g.set_outputs({then_g.node(neg).outputs[0]});
  ir::Graph else_g("else");
  const ir::NodeId id = else_g.add_node("Identity", {else_g.add_capture("w", TensorType(DType::kF32, {Dim::known(4), Dim::known(4)}))}, 1);
  else_g.set_outputs({else_g.node(id).outputs[0]});
  ir::Attributes if_attrs;
  if_attrs.emplace("then_branch", std::move(then_g));
  if_attrs.emplace("else_branch", std::move(else_g));
  const ir::NodeId iff = g.add_node("If", {flag}, 1, "branch", std::move(if_attrs));
  const ir::NodeId sh = g.add_node("Shape", {any}, 1, "");
  g.set_outputs({g.node(clip).outputs[0], g.node(iff).outputs[0], g.node(sh).outputs[0], big});
  doc.metadata.producer = "tsr_test";
  doc.metadata.engine_version = "0.0.test";
  doc.metadata.created_unix_ms = 1795000000000;
  doc.metadata.properties = {{"source", "built in tsr_test.cpp"}, {"empty", ""}};
  doc.layout.positions = {{mm, {10.5, -20.25}}, {clip, {0, 1e6}}};
  doc.layout.groups = {{"core", {mm, clip}, true}, {"rest", {iff}, false}};
  return doc;
}

// Names every unnamed value, as the JSON form does (it refers to values by name).
void name_all(ir::Graph& g) {
  for (ir::NodeId id : g.node_ids()) {
    for (ir::ValueId v : g.node(id).outputs)
      if (g.value(v).name.empty()) g.set_value_name(v, "out" + std::to_string(v));
    for (auto& [key, a] : g.node(id).attrs)
      if (a.kind() == ir::AttrKind::kGraph) name_all(a.g());
  }
}

ir::NodeId node_named(const ir::Graph& g, const std::string& name) {
  for (ir::NodeId id : g.node_ids())
    if (g.node(id).name == name) return id;
  return ir::kNoNode;
}

void expect_same(const GraphDocument& a, const GraphDocument& b) {
  EXPECT_EQ(ir::print_graph(a.graph), ir::print_graph(b.graph));
  EXPECT_EQ(graph_content_hash(a.graph), graph_content_hash(b.graph));
  EXPECT_EQ(a.layout, b.layout);
  EXPECT_EQ(a.metadata.producer, b.metadata.producer);
  EXPECT_EQ(a.metadata.engine_version, b.metadata.engine_version);
  EXPECT_EQ(a.metadata.created_unix_ms, b.metadata.created_unix_ms);
  EXPECT_EQ(a.metadata.properties, b.metadata.properties);
}

TEST(Tsr, EveryFeatureRoundTripsInline) {
  const GraphDocument doc = every_feature();
  const std::string path = temp_dir() + "/every.tsr";
  ASSERT_TRUE(write_tsr(doc, path).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".data"));
  auto back = read_tsr(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  expect_same(doc, *back);
  EXPECT_EQ(back->metadata.content_hash, graph_content_hash(doc.graph));
  EXPECT_FALSE(back->graph.has_node(1));  // the removed node stays a gap
  EXPECT_EQ(back->graph.node(2).provenance.origin, "studio");
  // Same document, same bytes.
  auto again = encode_tsr(*back);
  auto first = read_file(path);
  ASSERT_TRUE(again.has_value() && first.has_value());
  EXPECT_EQ(*again, *first);
}

TEST(Tsr, TextThatIsNotUtf8RoundTrips) {
  // ONNX does not check UTF-8, so imported names and strings may hold any bytes; so may ours.
  GraphDocument doc;
  const std::string odd("bad\xff\xfe name");  // 10 bytes, no NUL inside
  const ir::ValueId x = doc.graph.add_input(odd, ir::TensorType(DType::kF32, {ir::Dim::named("\xc3\x28")}));
  ir::Attributes attrs;
  attrs.emplace("s", odd);
  attrs.emplace("ss", std::vector<std::string>{odd, std::string("\0\x80", 2)});
  const ir::NodeId n = doc.graph.add_node("Identity", {x}, 1, odd, std::move(attrs));
  doc.graph.set_outputs({doc.graph.node(n).outputs[0]});
  doc.metadata.properties[odd] = odd;
  const std::string path = temp_dir() + "/odd.tsr";
  ASSERT_TRUE(write_tsr(doc, path).is_ok());
  auto back = read_tsr(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(ir::print_graph(back->graph), ir::print_graph(doc.graph));
  EXPECT_EQ(back->graph.node(n).name, odd);
  EXPECT_EQ(back->metadata.properties.at(odd), odd);
}

// An error in a .tsr converted from a .json named the .json's place (samples/lenet.json:/nodes/0)
// as if that were the file read: the .tsr comes first, the origin after the message.
TEST(Tsr, AnErrorNamesTheFileReadAndThenTheNodesOrigin) {
  GraphDocument doc;
  const ir::ValueId x = doc.graph.add_input("x", ir::TensorType(DType::kF32, {ir::Dim::known(2), ir::Dim::known(3)}));
  const ir::NodeId n = doc.graph.add_node("Flatten", {x}, 1, "flatten", {{"axis", int64_t{7}}});  // past the rank
  doc.graph.node(n).provenance.origin = "samples/other.json:/nodes/0";
  doc.graph.set_outputs({doc.graph.node(n).outputs[0]});
  const std::string path = temp_dir() + "/bad_axis.tsr";
  ASSERT_TRUE(write_tsr(doc, path).is_ok());
  auto typed = load_typed_document(path, ops::make_default_registry());
  ASSERT_FALSE(typed.has_value());
  const std::string text = typed.error().to_string();
  EXPECT_EQ(text.rfind(path + ": ", 0), 0u) << text;
  EXPECT_NE(text.find("[from samples/other.json:/nodes/0]"), std::string::npos) << text;
}

TEST(Tsr, SamplesRoundTripWithNestedGraphs) {
  for (const char* name : {"lenet", "mlp", "rnn"}) {
    auto g = load_json_graph(kSamples + name + ".json");
    ASSERT_TRUE(g.has_value()) << g.error().to_string();
    const std::string path = temp_dir() + "/" + name + ".tsr";
    ASSERT_TRUE(write_tsr(GraphDocument{*g, {}, {}}, path).is_ok());
    auto back = read_tsr(path);
    ASSERT_TRUE(back.has_value()) << back.error().to_string();
    EXPECT_EQ(ir::print_graph(*g), ir::print_graph(back->graph)) << name;
    EXPECT_EQ(back->metadata.producer, "tessera");
    EXPECT_EQ(back->metadata.engine_version, TESSERA_VERSION);
    EXPECT_GT(back->metadata.created_unix_ms, 1700000000000);
  }
}

TEST(Tsr, ExternalWeightsGoToTheSideFileAndAreChecked) {
  const GraphDocument doc = every_feature();
  const std::string path = temp_dir() + "/ext.tsr";
  TsrSaveOptions o;
  o.force_external = true;  // tensors of >= 1024 bytes: only "big"
  ASSERT_TRUE(write_tsr(doc, path, o).is_ok());
  ASSERT_TRUE(std::filesystem::exists(path + ".data"));
  EXPECT_EQ(std::filesystem::file_size(path + ".data"), 2400u);
  auto back = read_tsr(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  expect_same(doc, *back);
  // The threshold: 2.5 KB of weights against a 1 KB threshold puts "big" outside too.
  TsrSaveOptions t;
  t.external_threshold_bytes = 1000;
  const std::string path2 = temp_dir() + "/ext2.tsr";
  ASSERT_TRUE(write_tsr(doc, path2, t).is_ok());
  EXPECT_TRUE(std::filesystem::exists(path2 + ".data"));

  // One flipped byte in the side file: caught by the checksum, naming the param and the file.
  {
    std::fstream f(path + ".data", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  auto bad = read_tsr(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("'big'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("checksum mismatch"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("ext.tsr.data"), std::string::npos) << bad.error().message;
  EXPECT_EQ(bad.error().where, path);
  // Cut short: the place and the sizes.
  std::filesystem::resize_file(path + ".data", 1000);
  bad = read_tsr(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("past the end"), std::string::npos) << bad.error().message;
  // Missing.
  std::filesystem::remove(path + ".data");
  bad = read_tsr(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("cannot read the external data file"), std::string::npos) << bad.error().message;
}

// Replaces the only occurrence of `from` in `bytes` (same length).
void patch(std::string& bytes, const std::string& from, const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(from, at + 1), std::string::npos) << "not unique";
  bytes.replace(at, from.size(), to);
}

TEST(Tsr, CorruptInlineWeightIsNamed) {
  auto bytes = encode_tsr(every_feature());
  ASSERT_TRUE(bytes.has_value());
  // w's first element 1.0f = 00 00 80 3f, second 2.0f = 00 00 00 40.
  patch(*bytes, std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8), std::string("\x00\x00\x80\x3f\x00\x00\x01\x40", 8));
  auto doc = parse_tsr(bytes->data(), bytes->size(), "mem.tsr", "");
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().message.find("value %3 'w' data: checksum mismatch"), std::string::npos) << doc.error().message;
}

TEST(Tsr, EditedGraphFailsTheContentHash) {
  auto bytes = encode_tsr(every_feature());
  ASSERT_TRUE(bytes.has_value());
  patch(*bytes, "hello", "jello");  // the string attribute of node #2
  auto doc = parse_tsr(bytes->data(), bytes->size(), "mem.tsr", "");
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().message.find("content hash mismatch"), std::string::npos) << doc.error().message;
}

TEST(Tsr, VersionsAndForeignBytesAreRefusedClearly) {
  auto bytes = encode_tsr(every_feature());
  ASSERT_TRUE(bytes.has_value());
  ASSERT_EQ(bytes->substr(0, 2), std::string("\x08\x01", 2));  // format_version first
  std::string newer = *bytes;
  newer[1] = '\x03';
  auto doc = parse_tsr(newer.data(), newer.size(), "new.tsr", "");
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().message.find("format version 3 is newer than this reader (2)"), std::string::npos)
      << doc.error().message;
  EXPECT_EQ(doc.error().where, "new.tsr");

  const std::string garbage = "this is plain text, not protobuf at all \xff\xff\xff";
  doc = parse_tsr(garbage.data(), garbage.size(), "g.tsr", "");
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().message.find("not a .tsr file"), std::string::npos) << doc.error().message;

  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < bytes->size(); n += 7) {
    auto cut = parse_tsr(bytes->data(), n, "cut.tsr", "");
    EXPECT_FALSE(cut.has_value()) << "prefix of " << n << " bytes loaded";
  }
}

TEST(Tsr, LayoutMustNameNodesOfTheGraph) {
  GraphDocument doc = every_feature();
  doc.layout.positions[99] = {1, 2};
  Status st = write_tsr(doc, temp_dir() + "/badlayout.tsr");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("node #99"), std::string::npos) << st.error().message;
}

// The JSON form refers to values by name and numbers them densely on load; a graph whose values
// are named and numbered densely comes back byte for byte (node ids are kept either way).
TEST(Tsr, JsonFormCarriesTheSameDocument) {
  GraphDocument doc = every_feature(false);
  name_all(doc.graph);
  const std::string dir = temp_dir();
  // .tsr -> JSON -> .tsr: the same bytes.
  ASSERT_TRUE(write_tsr(doc, dir + "/a.tsr").is_ok());
  auto a = read_tsr(dir + "/a.tsr");
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(save_json_document(*a, dir + "/a.json").is_ok());
  auto j = load_json_document(dir + "/a.json");
  ASSERT_TRUE(j.has_value()) << j.error().to_string();
  EXPECT_EQ(j->layout, doc.layout);
  EXPECT_EQ(j->metadata.properties, doc.metadata.properties);
  EXPECT_EQ(j->graph.node(node_named(j->graph, "clip")).provenance.origin, "studio");  // explicit origins are kept
  ASSERT_TRUE(write_tsr(*j, dir + "/b.tsr").is_ok());
  EXPECT_EQ(*read_file(dir + "/a.tsr"), *read_file(dir + "/b.tsr"));
  // JSON -> .tsr -> JSON: the same bytes.
  auto b = read_tsr(dir + "/b.tsr");
  ASSERT_TRUE(b.has_value());
  std::filesystem::create_directories(dir + "/again");
  ASSERT_TRUE(save_json_document(*b, dir + "/again/a.json").is_ok());
  EXPECT_EQ(*read_file(dir + "/a.json"), *read_file(dir + "/again/a.json"));
}

TEST(Tsr, SamplesThroughTsrKeepTheirJsonBytes) {
  for (const char* name : {"lenet", "mlp", "rnn"}) {
    const std::string dir = temp_dir();
    auto g = load_json_document(kSamples + name + ".json");
    ASSERT_TRUE(g.has_value());
    ASSERT_TRUE(write_tsr(*g, dir + "/" + name + ".tsr").is_ok());
    auto t = read_tsr(dir + "/" + name + ".tsr");
    ASSERT_TRUE(t.has_value());
    t->metadata = {};  // the sample has none; the writer filled it in
    std::filesystem::create_directories(dir + "/direct");
    ASSERT_TRUE(save_json_document(*t, dir + "/" + name + ".json").is_ok());
    ASSERT_TRUE(save_json_document(*g, dir + "/direct/" + name + ".json").is_ok());
    EXPECT_EQ(*read_file(dir + "/" + name + ".json"), *read_file(dir + "/direct/" + name + ".json")) << name;
  }
}

TEST(Tsr, JsonLayoutAndMetadataErrorsNameThePlace) {
  const std::string head = R"({"format": "tessera-graph", "version": 1, "inputs": [{"name": "x", "type": "f32[2]"}],
    "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"], )";
  struct Case {
    const char* tail;
    const char* where;
    const char* message;
  };
  const Case cases[] = {
      {R"("layout": {"positions": {"7": [1, 2]}}})", "t.json:/layout/positions/7", "no node 7"},
      {R"("layout": {"positions": {"x": [1, 2]}}})", "t.json:/layout/positions/x", "expected a node id"},
      {R"("layout": {"positions": {"0": [1]}}})", "t.json:/layout/positions/0", "expected [x, y]"},
      {R"("layout": {"groups": [{"name": "g", "nodes": [3]}]}})", "t.json:/layout/groups/0/nodes/0", "expected the id of a node"},
      {R"("layout": {"grops": []}})", "t.json:/layout/grops", "unknown field"},
      {R"("metadata": {"producer": 3}})", "t.json:/metadata/producer", "expected a string"},
      {R"("metadata": {"properties": {"a": 1}}})", "t.json:/metadata/properties/a", "expected a string"},
  };
  for (const Case& c : cases) {
    auto doc = parse_json_document(head + c.tail, "t.json", "");
    ASSERT_FALSE(doc.has_value()) << c.tail;
    EXPECT_EQ(doc.error().where, c.where) << c.tail << ": " << doc.error().to_string();
    EXPECT_NE(doc.error().message.find(c.message), std::string::npos) << doc.error().to_string();
  }
  auto ok = parse_json_document(head + R"("metadata": {"producer": "hand", "created_unix_ms": 5},
      "layout": {"positions": {"0": [1.5, -2]}, "groups": [{"name": "g", "nodes": [0], "collapsed": true}]}})",
                                "t.json", "");
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  EXPECT_EQ(ok->metadata.producer, "hand");
  EXPECT_EQ(ok->metadata.created_unix_ms, 5);
  EXPECT_EQ(ok->layout.positions.at(0), (NodePosition{1.5, -2}));
  ASSERT_EQ(ok->layout.groups.size(), 1u);
  EXPECT_TRUE(ok->layout.groups[0].collapsed);
}

// Files written by each format version must keep loading. tests/formats/data/tsr/v1/ holds the
// document above as written by version 1 (inline, and with a side file). When the writer's output
// changes, the old files stay and the new version's files are added next to them.
TEST(Tsr, VersionCorpusLoads) {
  const GraphDocument doc = every_feature();
  for (const char* name : {"every_feature", "every_feature_external"}) {
    const std::string path = kCorpus + "v1/" + name + ".tsr";
    if (!std::filesystem::exists(path)) {
      std::filesystem::create_directories(kCorpus + "v1");
      TsrSaveOptions o;
      o.force_external = std::string(name).find("external") != std::string::npos;
      ASSERT_TRUE(write_tsr(doc, path, o).is_ok());
      FAIL() << "wrote the missing corpus file " << path << ": commit it";
    }
    auto back = read_tsr(path);
    ASSERT_TRUE(back.has_value()) << back.error().to_string();
    expect_same(doc, *back);
    if (std::string(name) == "every_feature") {  // a version-1 file: no sequences
      auto now = encode_tsr(doc);
      ASSERT_TRUE(now.has_value());
      EXPECT_EQ(*now, *read_file(path)) << "the writer's bytes changed: bump the version or explain";
    }
  }
}

// Version 2 adds TensorType.kind (sequences and optionals); a graph without them is still written
// as version 1. tests/formats/data/tsr/v2/sequences.tsr is such a graph as version 2 wrote it.
TEST(Tsr, SequenceTypesNeedVersion2) {
  GraphDocument doc;
  doc.graph = ir::Graph("seq");
  const ir::ValueId x = doc.graph.add_input("x", *parse_tensor_type("f32[N, 3]"));
  const ir::ValueId s = doc.graph.node(doc.graph.add_node("SplitToSequence", {x}, 1, "split")).outputs[0];
  doc.graph.value(s).type = *parse_tensor_type("seq(f32[1, 3])");
  const ir::ValueId o = doc.graph.node(doc.graph.add_node("Optional", {s}, 1, "opt")).outputs[0];
  doc.graph.value(o).type = *parse_tensor_type("opt(seq(f32[1, 3]))");
  doc.graph.set_outputs({o});
  doc.metadata.producer = "tsr_test";
  doc.metadata.created_unix_ms = 1;
  auto bytes = encode_tsr(doc);
  ASSERT_TRUE(bytes.has_value()) << bytes.error().to_string();
  EXPECT_EQ(bytes->substr(0, 2), std::string("\x08\x02", 2));
  const std::string path = kCorpus + "v2/sequences.tsr";
  if (!std::filesystem::exists(path)) {
    std::filesystem::create_directories(kCorpus + "v2");
    ASSERT_TRUE(write_tsr(doc, path).is_ok());
    FAIL() << "wrote the missing corpus file " << path << ": commit it";
  }
  auto back = read_tsr(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->graph.value(back->graph.outputs()[0]).type.to_string(), "opt(seq(f32[1, 3]))");
  EXPECT_EQ(back->graph.value(s).type.to_string(), "seq(f32[1, 3])");
}

}  // namespace
}  // namespace tessera::formats
