// String tensors (engine/core/strings.h): interning, UTF-8 checks, Cast to and from numbers,
// data movement, StringNormalizer and TfIdfVectorizer (engine/ops/text.cpp), and string
// constants through every graph format.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/strings.h"
#include "engine/ir/hash.h"
#include "engine/ir/text.h"
#include "engine/stages/session.h"
#include "formats/json_graph.h"
#include "formats/onnx_export.h"
#include "formats/onnx_import.h"
#include "formats/tsr.h"
#include "tests/engine/op_test_util.h"
#include "tests/support/paths.h"

namespace tessera {
namespace {

using Strings = std::vector<std::string>;

std::string fail(const std::string& op, const std::vector<Tensor>& in, ir::Attributes attrs = {}) {
  auto r = runtime::run_single_op(registry(), op, in, std::move(attrs), 1);
  EXPECT_FALSE(r.has_value());
  return r ? "" : r.error().message;
}

TEST(Strings, InterningAndUtf8) {
  EXPECT_EQ(intern_string(""), 0u);
  EXPECT_EQ(intern_string("monday"), intern_string(std::string("mon") + "day"));
  EXPECT_NE(intern_string("monday"), intern_string("Monday"));
  EXPECT_EQ(interned_string(intern_string("école")), "école");
  EXPECT_EQ(Tensor(DType::kString, {2}).to_strings(), (Strings{"", ""}));  // zero-filled: empty strings
  EXPECT_TRUE(is_valid_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));  // a é € 😀
  size_t at = 99;
  EXPECT_FALSE(is_valid_utf8("ab\xC0\x80", &at));  // overlong NUL
  EXPECT_EQ(at, 2u);
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80", &at));  // a surrogate
  EXPECT_FALSE(is_valid_utf8("x\xF4\x90\x80\x80", &at));  // past U+10FFFF
  EXPECT_EQ(at, 1u);
  EXPECT_FALSE(is_valid_utf8("\xE2\x82", &at));  // truncated
}

// Hashes (the .tsr content hash, CSE) see the text, not the ids, which depend on what a process
// interned first: a golden value, the same in every process whatever was interned before.
TEST(Strings, HashesSeeTheTextNotTheIds) {
  intern_string("interned first in this process only");
  const Tensor t = Tensor::from_strings({2}, {"hash me", "\xC3\xA9"});
  EXPECT_EQ(ir::tensor_hash(t), 3432708044009991858ull);
}

TEST(Strings, CastToAndFromNumbers) {
  const Tensor x = f32({5}, {0.1f, 1e-5f, -2.5f, NAN, -INFINITY});
  // NaN, INF, -INF and bools as 1 and 0: ONNX Runtime's text ("nan" and "True" were Python's).
  EXPECT_EQ(run("Cast", {x}, {{"to", "string"}})[0].to_strings(), (Strings{"0.1", "1e-05", "-2.5", "NaN", "-INF"}));
  EXPECT_EQ(run("Cast", {Tensor::from_vector<int64_t>({1}, {9007199254740993})}, {{"to", "string"}})[0].to_strings(),
            (Strings{"9007199254740993"}));  // exact, not through double
  EXPECT_EQ(run("Cast", {Tensor::from_bools({2}, {true, false})}, {{"to", "string"}})[0].to_strings(),
            (Strings{"1", "0"}));
  const Tensor s = Tensor::from_strings({4}, {"0.47892547", " 2.5 ", "INF", "-1e3"});
  const Tensor f = run("Cast", {s}, {{"to", "f32"}})[0];
  ASSERT_EQ(f.dtype(), DType::kF32);
  EXPECT_EQ(f.to_doubles(), (std::vector<double>{static_cast<double>(0.47892547f), 2.5, INFINITY, -1000}));
  expect_tensor(run("Cast", {Tensor::from_strings({2}, {"7", "-3"})}, {{"to", "i32"}})[0], DType::kI32, {2}, {7, -3});
  // Integer text out of the target's range wraps, as ONNX Runtime converts (it saturated).
  expect_tensor(run("Cast", {Tensor::from_strings({3}, {"300", "-1", "4294967297"})}, {{"to", "u8"}})[0], DType::kU8, {3},
                {44, 255, 1});
  expect_tensor(run("Cast", {Tensor::from_strings({1}, {"4294967297"})}, {{"to", "i32"}})[0], DType::kI32, {1}, {1});
  // Text that is not an integer still goes through double (and saturates).
  expect_tensor(run("Cast", {Tensor::from_strings({2}, {"2.9", "1e3"})}, {{"to", "i32"}})[0], DType::kI32, {2}, {2, 1000});
  const std::string e = fail("Cast", {Tensor::from_strings({2}, {"1", "one"})}, {{"to", "f32"}});
  EXPECT_NE(e.find("element 1 is the string \"one\", which is not a number"), std::string::npos) << e;
  // CastLike takes its target type from a string tensor too.
  EXPECT_EQ(run("CastLike", {f32({1}, {3}), Tensor::from_strings({1}, {"x"})})[0].to_strings(), (Strings{"3"}));
}

// Unique on strings (it was refused): by their text, first occurrences, inverse and counts.
TEST(Strings, UniqueByText) {
  const Tensor x = Tensor::from_strings({6}, {"pear", "apple", "pear", "", "fig", "apple"});
  auto r = runtime::run_single_op(registry(), "Unique", {x}, {}, 4);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ((*r)[0].to_strings(), (Strings{"", "apple", "fig", "pear"}));
  EXPECT_EQ((*r)[1].to_doubles(), (std::vector<double>{3, 1, 4, 0}));
  EXPECT_EQ((*r)[2].to_doubles(), (std::vector<double>{3, 1, 3, 0, 2, 1}));
  EXPECT_EQ((*r)[3].to_doubles(), (std::vector<double>{1, 2, 1, 2}));
  auto unsorted = runtime::run_single_op(registry(), "Unique", {x}, {{"sorted", int64_t{0}}}, 1);
  ASSERT_TRUE(unsorted.has_value()) << unsorted.error().message;
  EXPECT_EQ((*unsorted)[0].to_strings(), (Strings{"pear", "apple", "", "fig"}));
}

TEST(Strings, DataMovementOpsMoveStrings) {
  const Tensor s = Tensor::from_strings({2, 2}, {"a", "b", "c", "d"});
  EXPECT_EQ(run("Transpose", {s})[0].to_strings(), (Strings{"a", "c", "b", "d"}));
  EXPECT_EQ(run("Reshape", {s, Tensor::from_vector<int64_t>({1}, {4})})[0].to_strings(), (Strings{"a", "b", "c", "d"}));
  EXPECT_EQ(run("Concat", {s, s}, {{"axis", int64_t{0}}})[0].numel(), 8);
  EXPECT_EQ(run("Gather", {s, Tensor::from_vector<int64_t>({1}, {1})})[0].to_strings(), (Strings{"c", "d"}));
}

TEST(Strings, StringNormalizer) {
  const Tensor x = Tensor::from_strings({1, 4}, {"Monday", "ÉCOLE", "tuesday", "MONDAY"});
  const Tensor y = run("StringNormalizer", {x}, {{"case_change_action", "LOWER"}, {"stopwords", Strings{"monday"}}})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2}));
  EXPECT_EQ(y.to_strings(), (Strings{"école", "tuesday"}));  // stopwords case-insensitive by default
  const Tensor z = run("StringNormalizer", {Tensor::from_strings({2}, {"Monday", "monday"})},
                       {{"case_change_action", "UPPER"}, {"is_case_sensitive", int64_t{1}}, {"stopwords", Strings{"monday"}}})[0];
  EXPECT_EQ(z.to_strings(), (Strings{"MONDAY"}));
  const Tensor empty = run("StringNormalizer", {Tensor::from_strings({2}, {"a", "A"})}, {{"stopwords", Strings{"a"}}})[0];
  EXPECT_EQ(empty.shape(), (Shape{1}));
  EXPECT_EQ(empty.to_strings(), (Strings{""}));
  const std::string bad = fail("StringNormalizer", {Tensor::from_strings({2}, {"ok", "bad\xFF"})}, {{"case_change_action", "LOWER"}});
  EXPECT_NE(bad.find("element 1 is not valid UTF-8 (bad byte at offset 3)"), std::string::npos) << bad;
  EXPECT_NE(fail("StringNormalizer", {x}, {{"case_change_action", "TITLE"}}).find("NONE, LOWER or UPPER"), std::string::npos);
  EXPECT_NE(fail("StringNormalizer", {Tensor::from_strings({2, 2}, {"a", "b", "c", "d"})}).find("[C] or [1, C]"),
            std::string::npos);
}

TEST(Strings, TfIdfVectorizer) {
  // Pool: unigrams "a" "b" (columns 0, 1), bigram ("a", "b") (column 2).
  const ir::Attributes base = {{"min_gram_length", int64_t{1}},         {"max_gram_length", int64_t{2}},
                               {"max_skip_count", int64_t{1}},          {"ngram_counts", std::vector<int64_t>{0, 2}},
                               {"ngram_indexes", std::vector<int64_t>{0, 1, 2}}, {"pool_strings", Strings{"a", "b", "a", "b"}}};
  const Tensor x = Tensor::from_strings({2, 4}, {"a", "b", "a", "c", "b", "b", "c", "c"});
  ir::Attributes tf = base;
  tf.insert_or_assign("mode", ir::Attribute(std::string("TF")));
  // Row 0: a twice, b once; (a, b) at skip 0 (0, 1) and skip 1? (0, 2) is (a, a), (1, 3) is (b, c): once.
  expect_values(run("TfIdfVectorizer", {x}, tf)[0], {2, 3}, {2, 1, 1, 0, 2, 0});
  ir::Attributes tfidf = base;
  tfidf.insert_or_assign("mode", ir::Attribute(std::string("TFIDF")));
  tfidf.insert_or_assign("weights", ir::Attribute(std::vector<double>{0.5, 2, 10}));
  expect_values(run("TfIdfVectorizer", {x}, tfidf)[0], {2, 3}, {1, 2, 10, 0, 4, 0});
  ir::Attributes idf = tfidf;
  idf.insert_or_assign("mode", ir::Attribute(std::string("IDF")));
  expect_values(run("TfIdfVectorizer", {x}, idf)[0], {2, 3}, {0.5, 2, 10, 0, 2, 0});
  // Huge gram lengths and skips (a fuzz finding: the loops ran ~forever) count what the pool and
  // the row allow, at once.
  ir::Attributes huge = tf;
  huge.insert_or_assign("max_gram_length", ir::Attribute(int64_t{1} << 40));
  huge.insert_or_assign("max_skip_count", ir::Attribute(int64_t{1} << 40));
  EXPECT_EQ(run("TfIdfVectorizer", {x}, huge)[0].numel(), 6);
  ir::Attributes bad = tf;
  bad.insert_or_assign("ngram_counts", ir::Attribute(std::vector<int64_t>{0, 3}));  // 1 item left: not whole bigrams
  EXPECT_NE(fail("TfIdfVectorizer", {x}, bad).find("does not start a whole section of 2-grams"), std::string::npos);
}

// A string constant survives .json, .tsr, the IR text and .onnx, and runs in a Session.
TEST(Strings, ConstantsThroughEveryFormat) {
  ir::Graph g("names");
  const ir::ValueId x = g.add_input("x", ir::TensorType(DType::kString, {ir::Dim::named("N")}));
  const Tensor words = Tensor::from_strings({3}, {"Ünïcode", "with \"quotes\"", ""});
  const ir::ValueId c = g.node(g.add_node("Constant", {}, 1, "words", {{"value", ir::Attribute(words)}})).outputs[0];
  const ir::ValueId cat = g.node(g.add_node("Concat", {x, c}, 1, "cat", {{"axis", int64_t{0}}})).outputs[0];
  const ir::ValueId up =
      g.node(g.add_node("StringNormalizer", {cat}, 1, "up", {{"case_change_action", "UPPER"}})).outputs[0];
  g.set_outputs({up});
  const Strings want = {"HI", "ÜNÏCODE", "WITH \"QUOTES\"", ""};
  auto check = [&](const ir::Graph& graph, const char* how) {
    SCOPED_TRACE(how);
    stages::Session session(graph, registry(), {});
    auto out = session.run({{"x", Tensor::from_strings({1}, {"hi"})}});
    ASSERT_TRUE(out.has_value()) << out.error().to_string();
    EXPECT_EQ((*out)[0].to_strings(), want);
  };
  check(g, "built");
  auto text = ir::parse_graph(ir::print_graph(g));
  ASSERT_TRUE(text.has_value()) << text.error().to_string();
  check(*text, "IR text");
  formats::GraphDocument doc;
  doc.graph = g;
  const std::string json_path = test::output_dir() + "/strings_test.json";
  ASSERT_TRUE(formats::save_json_document(doc, json_path).is_ok());
  auto json = formats::load_json_document(json_path);
  ASSERT_TRUE(json.has_value()) << json.error().to_string();
  check(json->graph, "json");
  auto tsr = formats::encode_tsr(doc);
  ASSERT_TRUE(tsr.has_value());
  auto back = formats::parse_tsr(tsr->data(), tsr->size(), "mem.tsr", "");
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  check(back->graph, "tsr");
  auto onnx = formats::export_onnx_bytes(g, registry());
  ASSERT_TRUE(onnx.has_value()) << onnx.error().to_string();
  auto imported = formats::import_onnx_bytes(*onnx, "mem.onnx", "", registry());
  ASSERT_TRUE(imported.has_value()) << imported.error().to_string();
  check(*imported, "onnx");
}

}  // namespace
}  // namespace tessera
