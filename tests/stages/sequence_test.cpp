// Tests (in stages_tests: they need the formats and the Session) for engine/ops/sequence.cpp (sequences and optionals) and the value kinds they need:
// Tensor::sequence/optional, TensorType kinds in inference, the IR text, JSON, .tsr and ONNX,
// and a compiled Session running a graph with sequence inputs, outputs and SequenceMap.
#include <gtest/gtest.h>

#include <optional>

#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/stages/session.h"
#include "formats/json_graph.h"
#include "formats/onnx_export.h"
#include "formats/onnx_import.h"
#include "formats/tsr.h"
#include "tests/engine/op_test_util.h"

namespace tessera {
namespace {

Tensor i64s(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
Tensor seq(std::vector<Tensor> items) { return Tensor::sequence(items.empty() ? DType::kF32 : items[0].dtype(), items); }

std::string fail(const std::string& op, const std::vector<Tensor>& in, ir::Attributes attrs = {}) {
  auto r = runtime::run_single_op(registry(), op, in, std::move(attrs), 1);
  EXPECT_FALSE(r.has_value());
  return r ? "" : r.error().message;
}

TEST(Sequence, ConstructInsertAtEraseLength) {
  const Tensor a = f32({2}, {1, 2}), b = f32({1}, {3}), c = f32({}, {4});
  Tensor s = run("SequenceConstruct", {a, b})[0];
  ASSERT_EQ(s.kind(), TypeKind::kSequence);
  ASSERT_EQ(s.items().size(), 2u);
  s = run("SequenceInsert", {s, c, i64s({}, {0})})[0];  // at the front
  s = run("SequenceInsert", {s, a})[0];                  // at the back
  EXPECT_EQ(runtime::describe_value(s), "seq(f32[], f32[2], f32[1], f32[2])");
  expect_values(run("SequenceAt", {s, i64s({}, {-3})})[0], {2}, {1, 2});
  expect_values(run("SequenceAt", {s, Tensor::scalar<int32_t>(2)})[0], {1}, {3});
  expect_tensor(run("SequenceLength", {s})[0], DType::kI64, {}, {4});
  Tensor e = run("SequenceErase", {s})[0];  // the last
  EXPECT_EQ(runtime::describe_value(e), "seq(f32[], f32[2], f32[1])");
  e = run("SequenceErase", {e, i64s({}, {-3})})[0];
  EXPECT_EQ(runtime::describe_value(e), "seq(f32[2], f32[1])");
  EXPECT_EQ(runtime::describe_value(s), "seq(f32[], f32[2], f32[1], f32[2])") << "values are immutable";
  Tensor empty = run("SequenceEmpty", {}, {{"dtype", "i64"}})[0];
  EXPECT_EQ(empty.dtype(), DType::kI64);
  expect_tensor(run("SequenceLength", {empty})[0], DType::kI64, {}, {0});
}

TEST(Sequence, PositionsAndTypesAreChecked) {
  const Tensor s = seq({f32({1}, {1}), f32({1}, {2})});
  EXPECT_NE(fail("SequenceAt", {s, i64s({}, {2})}).find("position 2 is outside [-2, 1]"), std::string::npos);
  EXPECT_NE(fail("SequenceInsert", {s, f32({1}, {0}), i64s({}, {-3})}).find("outside [-2, 2]"), std::string::npos);
  EXPECT_NE(fail("SequenceErase", {Tensor::sequence(DType::kF32, {})}).find("empty sequence"), std::string::npos);
  EXPECT_NE(fail("SequenceInsert", {s, i64s({1}, {0})}).find("f32 tensor"), std::string::npos);
  EXPECT_NE(fail("SequenceConstruct", {f32({1}, {1}), i64s({1}, {1})}).find("f32 tensor"), std::string::npos);
  // Ops that take tensors refuse a sequence at inference, naming the op and the input.
  const std::string add = fail("Add", {s, f32({1}, {1})});
  EXPECT_NE(add.find("input 'A' is seq(f32[*]); Add takes tensors only"), std::string::npos) << add;
  EXPECT_NE(fail("SequenceLength", {f32({1}, {1})}).find("must be a sequence"), std::string::npos);
}

TEST(Sequence, SplitToSequence) {
  const Tensor x = Tensor::from_vector<float>({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor s = run("SplitToSequence", {x, i64s({}, {2})})[0];  // chunks of 2, the last smaller
  EXPECT_EQ(runtime::describe_value(s), "seq(f32[2, 2], f32[2, 2], f32[1, 2])");
  expect_values(s.items()[2], {1, 2}, {8, 9});
  s = run("SplitToSequence", {x, i64s({2}, {1, 1})}, {{"axis", int64_t{-1}}})[0];
  EXPECT_EQ(runtime::describe_value(s), "seq(f32[5, 1], f32[5, 1])");
  expect_values(s.items()[1], {5, 1}, {1, 3, 5, 7, 9});
  s = run("SplitToSequence", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}})[0];
  EXPECT_EQ(runtime::describe_value(s), "seq(f32[5], f32[5])");
  EXPECT_NE(fail("SplitToSequence", {x, i64s({2}, {2, 2})}).find("sum to 4 but axis 0 has 5"), std::string::npos);
  EXPECT_NE(fail("SplitToSequence", {x, i64s({}, {0})}).find("must be positive"), std::string::npos);
}

TEST(Sequence, ConcatFromSequence) {
  const Tensor s = seq({f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})});
  expect_values(run("ConcatFromSequence", {s}, {{"axis", int64_t{0}}})[0], {3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor t = seq({f32({2}, {1, 2}), f32({2}, {3, 4})});
  // new_axis stacks; axis -1 with new_axis is one past the last axis.
  expect_values(run("ConcatFromSequence", {t}, {{"axis", int64_t{-1}}, {"new_axis", int64_t{1}}})[0], {2, 2},
                {1, 3, 2, 4});
  EXPECT_NE(fail("ConcatFromSequence", {s}, {{"axis", int64_t{1}}}).find("does not match"), std::string::npos);
  EXPECT_NE(fail("ConcatFromSequence", {Tensor::sequence(DType::kF32, {})}, {{"axis", int64_t{0}}}).find("empty"),
            std::string::npos);
}

TEST(Sequence, Optionals) {
  const Tensor x = f32({2}, {1, 2});
  Tensor o = run("Optional", {x})[0];
  ASSERT_EQ(o.kind(), TypeKind::kOptional);
  expect_tensor(run("OptionalHasElement", {o})[0], DType::kBool, {}, {1});
  expect_values(run("OptionalGetElement", {o})[0], {2}, {1, 2});
  Tensor none = run("Optional", {}, {{"type", "seq(i32[*])"}})[0];
  EXPECT_EQ(none.dtype(), DType::kI32);
  expect_tensor(run("OptionalHasElement", {none})[0], DType::kBool, {}, {0});
  EXPECT_NE(fail("OptionalGetElement", {none}).find("the optional input is empty"), std::string::npos);
  EXPECT_NE(fail("Optional", {}).find("needs input 'input' or attribute 'type'"), std::string::npos);
  // A sequence in an optional.
  Tensor os = run("Optional", {seq({x})})[0];
  EXPECT_EQ(runtime::describe_value(run("OptionalGetElement", {os})[0]), "seq(f32[2])");
}

// A graph with a sequence input and output, SequenceMap over it, run by the compiled engine.
TEST(Sequence, CompiledSessionRunsSequenceGraphs) {
  ir::Graph body("body");
  const ir::ValueId ba = body.add_input("a", *formats::parse_tensor_type("f32[?]"));
  const ir::ValueId bb = body.add_input("b", *formats::parse_tensor_type("f32[1]"));
  body.set_outputs(body.node(body.add_node("Add", {ba, bb}, 1, "add")).outputs);
  auto g = std::make_optional<ir::Graph>("seqmap");
  const ir::ValueId xs = g->add_input("xs", *formats::parse_tensor_type("seq(f32[?])"));
  const ir::ValueId y = g->add_input("y", *formats::parse_tensor_type("f32[1]"));
  const ir::ValueId ys = g->node(g->add_node("SequenceMap", {xs, y}, 1, "map", {{"body", ir::Attribute(body)}})).outputs[0];
  const ir::ValueId n = g->node(g->add_node("SequenceLength", {ys}, 1, "len")).outputs[0];
  const ir::ValueId cat = g->node(g->add_node("ConcatFromSequence", {ys}, 1, "cat", {{"axis", int64_t{0}}})).outputs[0];
  g->set_outputs({ys, n, cat});
  stages::SessionOptions opts;
  opts.threads = 2;
  stages::Session session(*g, registry(), opts);
  for (int run = 0; run < 2; ++run) {  // sequences of different lengths reuse the program
    std::vector<Tensor> items = {f32({2}, {1, 2})};
    if (run == 1) items.push_back(f32({1}, {3}));
    auto out = session.run({{"xs", Tensor::sequence(DType::kF32, items)}, {"y", f32({1}, {10})}});
    ASSERT_TRUE(out.has_value()) << out.error().to_string();
    ASSERT_EQ((*out)[0].kind(), TypeKind::kSequence);
    ASSERT_EQ((*out)[0].items().size(), items.size());
    expect_values((*out)[0].items()[0], {2}, {11, 12});
    expect_tensor((*out)[1], DType::kI64, {}, {static_cast<double>(items.size())});
    EXPECT_EQ((*out)[2].numel(), run == 0 ? 2 : 3);
  }
  // A tensor fed where a sequence is declared is refused, naming the input.
  auto bad = session.run({{"xs", f32({1}, {1})}, {"y", f32({1}, {10})}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("input 'xs' expects seq(f32[?]) but was given a tensor of shape [1]"), std::string::npos)
      << bad.error().message;
}

// The kinds survive every format: IR text, JSON type strings, .tsr (version 2 only when needed)
// and ONNX (sequence_type and optional_type).
TEST(Sequence, TypesRoundTripThroughEveryFormat) {
  for (const char* t : {"seq(f32[2, ?])", "opt(i64[*])", "opt(seq(u8[N]))"}) {
    auto parsed = formats::parse_tensor_type(t);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    EXPECT_EQ(parsed->to_string(), t);
  }
  EXPECT_FALSE(formats::parse_tensor_type("seq(seq(f32[*]))").has_value());
  EXPECT_FALSE(formats::parse_tensor_type("seq(f32[2]").has_value());

  auto g = std::make_optional<ir::Graph>("g");
  const ir::ValueId x = g->add_input("x", *formats::parse_tensor_type("f32[4]"));
  const ir::ValueId sq = g->node(g->add_node("SplitToSequence", {x}, 1, "split", {{"keepdims", int64_t{0}}})).outputs[0];
  const ir::ValueId o = g->node(g->add_node("Optional", {sq}, 1, "opt")).outputs[0];
  const ir::ValueId t = g->node(g->add_node("OptionalGetElement", {o}, 1, "get")).outputs[0];
  const ir::ValueId n = g->node(g->add_node("SequenceLength", {t}, 1, "len")).outputs[0];
  g->set_outputs({o, n});
  ASSERT_TRUE(ops::infer_types(*g, registry()).is_ok());
  EXPECT_EQ(g->value(g->outputs()[0]).type.to_string(), "opt(seq(f32[]))");
  auto reparsed = ir::parse_graph(ir::print_graph(*g));
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().to_string();
  EXPECT_EQ(reparsed->value(reparsed->outputs()[0]).type.to_string(), "opt(seq(f32[]))");

  formats::GraphDocument doc;
  doc.graph = *g;
  auto bytes = formats::encode_tsr(doc);
  ASSERT_TRUE(bytes.has_value());
  auto back = formats::parse_tsr(bytes->data(), bytes->size(), "mem.tsr", "");
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->graph.value(back->graph.outputs()[0]).type.to_string(), "opt(seq(f32[]))");

  auto onnx = formats::export_onnx_bytes(*g, registry());
  ASSERT_TRUE(onnx.has_value()) << onnx.error().to_string();
  auto imported = formats::import_onnx_bytes(*onnx, "mem.onnx", "", registry());
  ASSERT_TRUE(imported.has_value()) << imported.error().to_string();
  auto out = runtime::run_reference(*imported, registry(), {{"x", f32({4}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.has_value()) << out.error().to_string();
  EXPECT_EQ(runtime::describe_value((*out)[0]), "opt(seq(f32[], f32[], f32[], f32[]))");
  expect_tensor((*out)[1], DType::kI64, {}, {4});
}

}  // namespace
}  // namespace tessera
