// Tests of formats/onnx_export*.cpp: the samples and hand-built graphs export, pass ONNX's
// checker (with its shape inference), import back (formats/onnx_import.h) and compute the same
// outputs as the original on fixed random inputs; every opset 13..17; the one error listing the
// nodes an opset cannot express; attribute kinds; names; initializer dtypes; input dims.
#include "tests/support/paths.h"
#include "formats/onnx_export.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <random>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "formats/graph_file.h"
#include "formats/json_graph.h"
#include "formats/onnx_export_internal.h"
#include "formats/onnx_import.h"

namespace tessera::formats {
namespace {

namespace fs = std::filesystem;
using ir::Dim;
using ir::TensorType;

const ops::OpRegistry& registry() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

ir::Graph sample(const std::string& name) {
  auto g = load_json_graph(tessera::test::source_dir() + "/samples/" + name + ".json");
  EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().to_string());
  return g ? std::move(g).value() : ir::Graph();
}

std::string export_ok(const ir::Graph& g, int opset = 17) {
  OnnxExportOptions o;
  o.opset = opset;
  auto bytes = export_onnx_bytes(g, registry(), o);
  EXPECT_TRUE(bytes.has_value()) << (bytes ? "" : bytes.error().to_string());
  return bytes ? *bytes : std::string();
}

std::string export_error(const ir::Graph& g, int opset = 17) {
  OnnxExportOptions o;
  o.opset = opset;
  auto bytes = export_onnx_bytes(g, registry(), o);
  return bytes ? "exported without error" : bytes.error().message;
}

// Parses the bytes and runs ONNX's checker again, plus its strict shape inference (so that a type
// we wrote that contradicts ONNX's own inference fails here).
onnx::ModelProto parse_checked(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  try {
    onnx::checker::check_model(m);
    onnx::ShapeInferenceOptions options{/*check_type=*/true, /*error_mode=*/1, /*enable_data_propagation=*/false};
    onnx::ModelProto copy = m;
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "checker / shape inference: " << e.what();
  }
  return m;
}

ir::Graph reimport(const std::string& bytes) {
  auto g = import_onnx_bytes(bytes, "exported.onnx", "", registry());
  EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().to_string());
  return g ? std::move(g).value() : ir::Graph();
}

// Fixed random inputs for every graph input (symbolic and unknown dims -> 3).
runtime::Feeds random_feeds(const ir::Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  runtime::Feeds feeds;
  for (ir::ValueId v : g.inputs()) {
    const TensorType& t = g.value(v).type;
    Shape shape;
    for (const Dim& d : t.dims) shape.push_back(d.is_known() ? d.size : 3);
    Tensor x(t.dtype, shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, t.dtype == DType::kBool ? (rng() & 1) : normal(rng));
    feeds[g.value(v).name] = x;
  }
  return feeds;
}

std::vector<Tensor> run(const ir::Graph& g, const runtime::Feeds& feeds) {
  auto r = runtime::run_reference(g, registry(), feeds);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
  return r ? *r : std::vector<Tensor>{};
}

// Same kernels on the same data: the outputs must agree to the last bits (1e-6 leaves room for
// nothing but reassociation, which the reference kernels do not do).
void expect_same_outputs(const ir::Graph& a, const ir::Graph& b, uint32_t seed = 7) {
  const runtime::Feeds feeds = random_feeds(a, seed);
  const std::vector<Tensor> x = run(a, feeds), y = run(b, feeds);
  ASSERT_EQ(x.size(), y.size());
  ASSERT_FALSE(x.empty());
  for (size_t k = 0; k < x.size(); ++k) {
    ASSERT_EQ(x[k].dtype(), y[k].dtype()) << "output " << k;
    ASSERT_EQ(x[k].shape(), y[k].shape()) << "output " << k;
    for (int64_t i = 0; i < x[k].numel(); ++i) ASSERT_NEAR(x[k].get(i), y[k].get(i), 1e-6) << "output " << k << " element " << i;
  }
}

const onnx::NodeProto* find_node(const onnx::GraphProto& g, const std::string& op) {
  for (const auto& n : g.node())
    if (n.op_type() == op) return &n;
  return nullptr;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// ---- samples ----

TEST(OnnxExport, SamplesExportCheckImportAndMatch) {
  for (const char* name : {"lenet", "mlp", "rnn"}) {
    SCOPED_TRACE(name);
    const ir::Graph g = sample(name);
    const onnx::ModelProto m = parse_checked(export_ok(g));
    EXPECT_EQ(m.ir_version(), 8);
    EXPECT_EQ(m.producer_name(), "tessera");
    ASSERT_EQ(m.opset_import_size(), 1);
    EXPECT_EQ(m.opset_import(0).domain(), "");
    EXPECT_EQ(m.opset_import(0).version(), 17);
    EXPECT_EQ(m.graph().name(), name);
    EXPECT_EQ(m.graph().initializer_size(), static_cast<int>(g.params().size()));
    // The output carries the inferred type: f32[N, 10] (lenet, mlp) or f32[?, 2] (rnn: the batch
    // comes out of Shape + ConstantOfShape, so its symbol is lost).
    ASSERT_EQ(m.graph().output_size(), 1);
    const auto& out = m.graph().output(0).type().tensor_type();
    EXPECT_EQ(out.elem_type(), onnx::TensorProto::FLOAT);
    ASSERT_EQ(out.shape().dim_size(), 2);
    EXPECT_EQ(out.shape().dim(1).dim_value(), std::string(name) == "rnn" ? 2 : 10);
    expect_same_outputs(g, reimport(m.SerializeAsString()));
  }
}

TEST(OnnxExport, EveryOpsetFrom13To17) {
  for (const char* name : {"rnn", "lenet"}) {
    const ir::Graph g = sample(name);
    for (int opset = 13; opset <= 17; ++opset) {
      SCOPED_TRACE(std::string(name) + " opset " + std::to_string(opset));
      const onnx::ModelProto m = parse_checked(export_ok(g, opset));
      EXPECT_EQ(m.opset_import(0).version(), opset);
      if (std::string(name) == "rnn") {
        // Shape's start/end came in opset 15; before it the exporter slices the full shape.
        const onnx::NodeProto* shape = find_node(m.graph(), "Shape");
        ASSERT_NE(shape, nullptr);
        EXPECT_EQ(find_attr(*shape, "end") != nullptr, opset >= 15);
        EXPECT_EQ(find_node(m.graph(), "Slice") != nullptr, opset < 15);
      }
      expect_same_outputs(g, reimport(m.SerializeAsString()));
    }
  }
}

// ---- refusals ----

// x f32[2, 4] -> LayerNormalization 'ln1' -> y; an unnamed SGDUpdate on a param.
ir::Graph layer_norm_and_sgd() {
  ir::Graph g("refused");
  const ir::ValueId x = g.add_input("x", TensorType::of(DType::kF32, {2, 4}));
  const ir::ValueId scale = g.add_param("scale", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  const ir::NodeId ln = g.add_node("LayerNormalization", {x, scale}, 1, "ln1");
  const ir::ValueId grad = g.add_param("grad", Tensor::from_vector<float>({4}, {1, 1, 1, 1}));
  const ir::ValueId lr = g.add_param("lr", Tensor::scalar<float>(0.1f));
  const ir::NodeId sgd = g.add_node("SGDUpdate", {scale, grad, lr}, 2);
  g.set_outputs({g.node(ln).outputs[0], g.node(sgd).outputs[0]});
  return g;
}

TEST(OnnxExportErrors, UnexportableOpsAreListedInOneError) {
  const ir::Graph g = layer_norm_and_sgd();
  OnnxExportOptions o;
  o.opset = 13;
  auto r = export_onnx_bytes(g, registry(), o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "not exportable to ONNX opset 13: LayerNormalization (node 'ln1', needs opset 17), "
            "SGDUpdate (node #1, not an ONNX op)");
  EXPECT_EQ(r.error().node, 0);  // the first refused node, so a tool can point at it
  // A graph whose types do not infer reports that instead (once nothing is refused).
  ir::Graph bad("bad");
  const ir::ValueId a = bad.add_input("a", TensorType::of(DType::kF32, {2}));
  const ir::ValueId b = bad.add_input("b", TensorType::of(DType::kF32, {3}));
  bad.set_outputs({bad.node(bad.add_node("Add", {a, b}, 1, "add")).outputs[0]});
  EXPECT_EQ(export_error(bad).rfind("type inference before export failed: ", 0), 0u) << export_error(bad);
  EXPECT_EQ(export_error(g, 17), "not exportable to ONNX opset 17: SGDUpdate (node #1, not an ONNX op)");
}

TEST(OnnxExportErrors, OpsetsOutsideThirteenToSeventeenAreRefused) {
  const ir::Graph g = sample("mlp");
  EXPECT_EQ(export_error(g, 12), "ONNX export writes opsets 13 to 17, not 12");
  EXPECT_EQ(export_error(g, 18), "ONNX export writes opsets 13 to 17, not 18");
}

// One node of `op` over an f32[2, 3, 4, 4] input and the given extra inputs.
ir::Graph one_node(const std::string& op, ir::Attributes attrs, const std::vector<Tensor>& extra = {},
                   const std::string& node_name = "n") {
  ir::Graph g("one");
  std::vector<ir::ValueId> in{g.add_input("x", TensorType::of(DType::kF32, {2, 3, 4, 4}))};
  for (size_t i = 0; i < extra.size(); ++i) in.push_back(g.add_param("p" + std::to_string(i), extra[i]));
  const ir::NodeId n = g.add_node(op, in, 1, node_name, std::move(attrs));
  g.set_outputs({g.node(n).outputs[0]});
  return g;
}

TEST(OnnxExportErrors, AttributesNewerThanTheOpsetAreDroppedAtTheirOldValueElseRefused) {
  const Tensor shape = Tensor::from_vector<int64_t>({2}, {2, 48});
  // allowzero=0 is what Reshape did before opset 14 added the attribute: left out at 13.
  const onnx::ModelProto m = parse_checked(export_ok(one_node("Reshape", {{"allowzero", int64_t{0}}}, {shape}), 13));
  EXPECT_EQ(find_attr(m.graph().node(0), "allowzero"), nullptr);
  EXPECT_EQ(export_error(one_node("Reshape", {{"allowzero", int64_t{1}}}, {shape}), 13),
            "not exportable to ONNX opset 13: Reshape (node 'n', attribute 'allowzero' needs opset 14)");
  const onnx::ModelProto m14 = parse_checked(export_ok(one_node("Reshape", {{"allowzero", int64_t{1}}}, {shape}), 14));
  ASSERT_NE(find_attr(m14.graph().node(0), "allowzero"), nullptr);
  EXPECT_EQ(find_attr(m14.graph().node(0), "allowzero")->i(), 1);
}

// RoiAlign before opset 16 worked as output_half_pixel: that mode is written as the old op (and
// reads back as it), half_pixel is refused; the recurrent ops' batch_first is ONNX's layout.
TEST(OnnxExport, RoiAlignCoordinatesAndRecurrentLayoutAcrossOpsets) {
  const Tensor rois = Tensor::from_vector<float>({1, 4}, {0, 0, 2, 2});
  const Tensor idx = Tensor::from_vector<int64_t>({1}, {0});
  const ir::Graph old_mode = one_node("RoiAlign", {{"coordinate_transformation_mode", "output_half_pixel"}}, {rois, idx});
  const onnx::ModelProto m13 = parse_checked(export_ok(old_mode, 13));
  EXPECT_EQ(find_attr(m13.graph().node(0), "coordinate_transformation_mode"), nullptr);
  const ir::Graph back = reimport(export_ok(old_mode, 13));
  for (ir::NodeId id : back.node_ids())
    if (back.node(id).op == "RoiAlign")
      EXPECT_EQ(back.node(id).attr("coordinate_transformation_mode")->s(), "output_half_pixel");
  const ir::Graph new_mode = one_node("RoiAlign", {}, {rois, idx});
  EXPECT_NE(export_error(new_mode, 13).find("RoiAlign with half_pixel coordinates needs opset 16"), std::string::npos);
  EXPECT_NE(export_ok(new_mode, 16), "");
  // LSTM batch_first 1 -> layout 1 (opset 14).
  ir::Graph g("lstm");
  const ir::ValueId x = g.add_input("x", TensorType::of(DType::kF32, {2, 3, 4}));
  const ir::ValueId w = g.add_param("w", Tensor(DType::kF32, {1, 8, 4}));
  const ir::ValueId r = g.add_param("r", Tensor(DType::kF32, {1, 8, 2}));
  const ir::NodeId n = g.add_node("LSTM", {x, w, r}, 2, "lstm", {{"batch_first", int64_t{1}}, {"hidden_size", int64_t{2}}});
  g.set_outputs({g.node(n).outputs[1]});
  const onnx::ModelProto m = parse_checked(export_ok(g, 14));
  ASSERT_NE(find_attr(m.graph().node(0), "layout"), nullptr);
  EXPECT_EQ(find_attr(m.graph().node(0), "layout")->i(), 1);
  EXPECT_NE(export_error(g, 13).find("attribute 'layout' needs opset 14"), std::string::npos);
}

TEST(OnnxExportErrors, TesseraExtensionsAreDroppedWhenNeutralElseRefused) {
  // AveragePool's dilations (ONNX adds them in opset 19) of all 1 change nothing.
  ir::Attributes pool{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"dilations", std::vector<int64_t>{1, 1}}};
  const onnx::ModelProto m = parse_checked(export_ok(one_node("AveragePool", pool)));
  EXPECT_EQ(find_attr(m.graph().node(0), "dilations"), nullptr);
  pool.insert_or_assign("dilations", std::vector<int64_t>{2, 2});
  EXPECT_EQ(export_error(one_node("AveragePool", pool)),
            "not exportable to ONNX opset 17: AveragePool (node 'n', attribute 'dilations' is a Tessera extension, "
            "not in ONNX opsets up to 17)");
  // ReduceMin's noop_with_empty_axes (opset 18) at its default 0 is dropped; 1 is refused.
  EXPECT_NE(export_ok(one_node("ReduceMin", {{"noop_with_empty_axes", int64_t{0}}})), "");
  EXPECT_NE(export_error(one_node("ReduceMin", {{"noop_with_empty_axes", int64_t{1}}}))
                .find("ReduceMin (node 'n', attribute 'noop_with_empty_axes' is a Tessera extension"),
            std::string::npos);
  // Pad's axes input (opset 18) and Dropout's rng_offset (Tessera's own) are refused.
  const Tensor pads = Tensor::from_vector<int64_t>({2}, {1, 1});
  EXPECT_EQ(export_error(one_node("Pad", {}, {pads, Tensor::scalar<float>(0.f), Tensor::from_vector<int64_t>({1}, {3})})),
            "not exportable to ONNX opset 17: Pad (node 'n', input 3 'axes' is a Tessera extension, not in ONNX "
            "opsets up to 17)");
  EXPECT_NE(export_error(one_node("Dropout", {}, {Tensor::scalar<float>(0.5f), Tensor::from_bools({}, {false}),
                                                  Tensor::scalar<int64_t>(3)}))
                .find("Dropout (node 'n', input 3 'rng_offset' is a Tessera extension"),
            std::string::npos);
}

TEST(OnnxExportErrors, UnknownRankModelOutputsAreRefused) {
  ir::Graph g("unranked");
  const ir::ValueId x = g.add_input("x", TensorType::unranked(DType::kF32));
  const ir::NodeId r = g.add_node("Relu", {x}, 1, "r");
  g.set_outputs({g.node(r).outputs[0]});
  EXPECT_EQ(export_error(g), "not exportable to ONNX opset 17: input 'x' (rank unknown after type inference; ONNX "
                            "needs the rank of every model input and output), output 'v_1' (rank unknown after type "
                            "inference; ONNX needs the rank of every model input and output)");
}

// ---- attributes ----

TEST(OnnxExport, AttributesOfEveryKindSurvive) {
  ir::Graph g("attrs");
  const ir::ValueId x = g.add_input("x", TensorType::of(DType::kF32, {1, 2, 4, 4}));
  const ir::ValueId w = g.add_param("w", Tensor::from_vector<float>({2, 2, 3, 3}, std::vector<float>(36, 0.25f)));
  // ints, string
  const ir::NodeId conv = g.add_node("Conv", {x, w}, 1, "conv",
                                     {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"auto_pad", "NOTSET"}});
  // float
  const ir::NodeId leaky = g.add_node("LeakyRelu", {g.node(conv).outputs[0]}, 1, "leaky", {{"alpha", 0.25}});
  // string dtype -> int
  const ir::NodeId cast = g.add_node("Cast", {g.node(leaky).outputs[0]}, 1, "cast", {{"to", "f64"}});
  // tensor, floats
  const ir::NodeId c1 = g.add_node("Constant", {}, 1, "c1", {{"value", Tensor::from_vector<int64_t>({2}, {7, 8})}});
  const ir::NodeId c2 = g.add_node("Constant", {}, 1, "c2", {{"value_floats", std::vector<double>{0.5, -1.5}}});
  // graph: If on a bool param, each branch a Constant
  ir::Graph then_g("then_branch"), else_g("else_branch");
  const ir::NodeId t = then_g.add_node("Constant", {}, 1, "t", {{"value", Tensor::from_vector<float>({1}, {1.f})}});
  then_g.set_outputs({then_g.node(t).outputs[0]});
  const ir::NodeId e = else_g.add_node("Constant", {}, 1, "e", {{"value", Tensor::from_vector<float>({1}, {2.f})}});
  else_g.set_outputs({else_g.node(e).outputs[0]});
  const ir::ValueId cond = g.add_param("cond", Tensor::from_bools({}, {false}));
  const ir::NodeId branch = g.add_node("If", {cond}, 1, "branch",
                                       {{"then_branch", std::move(then_g)}, {"else_branch", std::move(else_g)}});
  g.set_outputs({g.node(cast).outputs[0], g.node(c1).outputs[0], g.node(c2).outputs[0], g.node(branch).outputs[0]});

  const onnx::ModelProto m = parse_checked(export_ok(g));
  using AP = onnx::AttributeProto;
  const onnx::GraphProto& gp = m.graph();
  EXPECT_EQ(find_attr(*find_node(gp, "Conv"), "pads")->type(), AP::INTS);
  EXPECT_EQ(find_attr(*find_node(gp, "Conv"), "auto_pad")->s(), "NOTSET");
  EXPECT_EQ(find_attr(*find_node(gp, "LeakyRelu"), "alpha")->f(), 0.25f);
  EXPECT_EQ(find_attr(*find_node(gp, "Cast"), "to")->type(), AP::INT);
  EXPECT_EQ(find_attr(*find_node(gp, "Cast"), "to")->i(), onnx::TensorProto::DOUBLE);
  EXPECT_EQ(find_attr(*find_node(gp, "If"), "then_branch")->type(), AP::GRAPH);

  const ir::Graph back = reimport(m.SerializeAsString());
  auto node_named = [&](const std::string& n) -> const ir::Node& {
    for (ir::NodeId id : back.node_ids())
      if (back.node(id).name == n) return back.node(id);
    ADD_FAILURE() << "no node " << n;
    return back.node(back.node_ids()[0]);
  };
  EXPECT_EQ(node_named("conv").attr("pads")->ints(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(node_named("conv").attr("auto_pad")->s(), "NOTSET");
  EXPECT_EQ(node_named("leaky").attr("alpha")->f(), 0.25);
  EXPECT_EQ(node_named("cast").attr("to")->s(), "f64");
  EXPECT_TRUE(node_named("c1").attr("value")->t().equals(Tensor::from_vector<int64_t>({2}, {7, 8})));
  // The importer turns value_floats into a `value` tensor (so that it folds).
  EXPECT_TRUE(node_named("c2").attr("value")->t().equals(Tensor::from_vector<float>({2}, {0.5f, -1.5f})));
  EXPECT_EQ(node_named("branch").attr("else_branch")->g().name(), "else_branch");
  expect_same_outputs(g, back);
}

TEST(OnnxExport, AttributeConversionCoversEveryKind) {
  using onnx_export_internal::attribute_to_proto;
  using AP = onnx::AttributeProto;
  AP a;
  ASSERT_TRUE(attribute_to_proto(ir::Attribute(std::vector<std::string>{"relu", "tanh"}), AP::STRINGS, &a).is_ok());
  ASSERT_EQ(a.strings_size(), 2);
  EXPECT_EQ(a.strings(1), "tanh");
  AP b;
  ASSERT_TRUE(attribute_to_proto(ir::Attribute(std::vector<int64_t>{1, 2}), AP::FLOATS, &b).is_ok());
  EXPECT_EQ(b.floats(1), 2.f);
  AP c;
  ASSERT_TRUE(attribute_to_proto(ir::Attribute(std::vector<double>{}), AP::INTS, &c).is_ok());  // [] is any list
  EXPECT_EQ(c.type(), AP::INTS);
  AP d;
  ASSERT_TRUE(attribute_to_proto(ir::Attribute("bf16"), AP::INT, &d).is_ok());
  EXPECT_EQ(d.i(), onnx::TensorProto::BFLOAT16);
  AP e;
  Status bad = attribute_to_proto(ir::Attribute("float32"), AP::INT, &e);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.error().message, "is the string 'float32', which names no element type; ONNX wants a data type int");
  AP f;
  Status kind = attribute_to_proto(ir::Attribute(1.5), AP::INTS, &f);
  ASSERT_FALSE(kind.is_ok());
  EXPECT_EQ(kind.error().message, "is float; ONNX's schema wants INTS");
}

// ---- values, names, nested graphs ----

TEST(OnnxExport, InitializersOfEveryDtypeKeepTheirBits) {
  ir::Graph g("dtypes");
  std::vector<ir::ValueId> outs;
  const std::vector<Tensor> params = {
      Tensor::from_doubles(DType::kF16, {3}, {1.5, -2.0, 65504.0}),
      Tensor::from_doubles(DType::kBF16, {2}, {3.140625, -0.5}),
      Tensor::from_vector<double>({2}, {0.1, -1e300}),
      Tensor::from_vector<int8_t>({2}, {-128, 127}),
      Tensor::from_vector<uint8_t>({2}, {0, 255}),
      Tensor::from_vector<int32_t>({2}, {-7, 1 << 30}),
      Tensor::from_vector<int64_t>({2}, {int64_t{1} << 40, -1}),
      Tensor::from_bools({3}, {true, false, true}),
      Tensor::from_vector<float>({2, 2}, {1.f, 2.f, 3.f, 4.f}),
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::ValueId p = g.add_param("p" + std::to_string(i), params[i]);
    outs.push_back(g.node(g.add_node("Identity", {p}, 1, "id" + std::to_string(i))).outputs[0]);
  }
  g.set_outputs(outs);
  const onnx::ModelProto m = parse_checked(export_ok(g));
  ASSERT_EQ(m.graph().initializer_size(), static_cast<int>(params.size()));
  EXPECT_EQ(m.graph().initializer(0).data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(m.graph().initializer(0).raw_data().size(), 6u);
  EXPECT_EQ(m.graph().initializer(1).data_type(), onnx::TensorProto::BFLOAT16);
  EXPECT_EQ(m.graph().initializer(7).data_type(), onnx::TensorProto::BOOL);
  EXPECT_EQ(m.graph().initializer(7).raw_data(), std::string("\1\0\1", 3));
  // f32 1.0 little-endian
  EXPECT_EQ(m.graph().initializer(8).raw_data().substr(0, 4), std::string("\0\0\x80\x3f", 4));
  const ir::Graph back = reimport(m.SerializeAsString());
  for (size_t i = 0; i < params.size(); ++i) {
    auto v = back.find_value("p" + std::to_string(i));
    ASSERT_TRUE(v.has_value());
    EXPECT_TRUE(back.param_data(*v)->equals(params[i])) << i << ": " << back.param_data(*v)->summary();
  }
}

TEST(OnnxExport, NonContiguousParamsAreWrittenInLogicalOrder) {
  ir::Graph g("view");
  const Tensor base = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor transposed = base.view({3, 2}, {1, 3}, 0);  // [[1, 4], [2, 5], [3, 6]]
  const ir::ValueId p = g.add_param("t", transposed);
  g.set_outputs({g.node(g.add_node("Identity", {p}, 1)).outputs[0]});
  const ir::Graph back = reimport(export_ok(g));
  EXPECT_TRUE(back.param_data(*back.find_value("t"))->equals(Tensor::from_vector<float>({3, 2}, {1, 4, 2, 5, 3, 6})));
}

TEST(OnnxExport, InputDimsAreValuesParamsOrNeither) {
  ir::Graph g("dims");
  const ir::ValueId x = g.add_input("x", TensorType(DType::kF32, {Dim::named("N"), Dim::known(3), Dim::unknown()}));
  g.set_outputs({g.node(g.add_node("Relu", {x}, 1, "r")).outputs[0]});
  const onnx::ModelProto m = parse_checked(export_ok(g));
  const auto& shape = m.graph().input(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 3);
  EXPECT_EQ(shape.dim(0).dim_param(), "N");
  EXPECT_FALSE(shape.dim(0).has_dim_value());
  EXPECT_EQ(shape.dim(1).dim_value(), 3);
  EXPECT_FALSE(shape.dim(2).has_dim_value());
  EXPECT_FALSE(shape.dim(2).has_dim_param());
  const ir::Graph back = reimport(m.SerializeAsString());
  EXPECT_EQ(back.value(back.inputs()[0]).type.to_string(), "f32[N, 3, ?]");
  // Relu keeps the shape, so the output is typed the same.
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "N");
}

TEST(OnnxExport, NamesAreKeptMadeUpOrMadeUnique) {
  // Outer: x -> Relu 'outer_relu' (unnamed output) -> Loop 'loop' whose body defines a value
  // named "x" (as the outer input is) and captures the outer "w"; the loop's result is the
  // graph output, listed twice.
  ir::Graph g("names");
  const ir::ValueId x = g.add_input("x", TensorType::of(DType::kF32, {2}));
  g.add_param("w", Tensor::from_vector<float>({2}, {0.5f, 2.f}));
  const ir::ValueId trips = g.add_param("trips", Tensor::scalar<int64_t>(3));
  const ir::NodeId relu = g.add_node("Relu", {x}, 1, "outer_relu");
  ir::Graph body("body");
  body.add_input("i", TensorType(DType::kI64, {}));
  const ir::ValueId cond_in = body.add_input("cond", TensorType(DType::kBool, {}));
  const ir::ValueId h = body.add_input("h", TensorType::of(DType::kF32, {2}));
  const ir::ValueId w = body.add_capture("w", TensorType::of(DType::kF32, {2}));
  const ir::NodeId mul = body.add_node("Mul", {h, w}, 1, "scale");
  body.set_value_name(body.node(mul).outputs[0], "x");  // the outer input's name, again
  // cond passes straight through: a graph input as a graph output.
  body.set_outputs({cond_in, body.node(mul).outputs[0]});
  const ir::NodeId loop = g.add_node("Loop", {trips, ir::kNoValue, g.node(relu).outputs[0]}, 1, "loop",
                                     {{"body", std::move(body)}});
  g.set_value_name(g.node(loop).outputs[0], "y");
  g.set_outputs({g.node(loop).outputs[0], g.node(loop).outputs[0]});

  const onnx::ModelProto m = parse_checked(export_ok(g));
  const onnx::GraphProto& gp = m.graph();
  EXPECT_EQ(gp.input(0).name(), "x");
  const onnx::NodeProto* r = find_node(gp, "Relu");
  EXPECT_EQ(r->name(), "outer_relu");
  EXPECT_EQ(r->output(0), "v_" + std::to_string(g.node(relu).outputs[0]));  // made up
  const onnx::NodeProto* l = find_node(gp, "Loop");
  EXPECT_EQ(l->input(1), "");  // absent optional input
  const onnx::GraphProto& bp = l->attribute(0).g();
  EXPECT_EQ(bp.input_size(), 3);  // the capture is no input: the body names the outer "w"
  const onnx::NodeProto* scale = find_node(bp, "Mul");
  EXPECT_EQ(scale->input(1), "w");
  EXPECT_EQ(scale->output(0), "x__2");  // unique across the model
  ASSERT_EQ(gp.output_size(), 2);
  EXPECT_EQ(gp.output(0).name(), "y");
  EXPECT_NE(gp.output(1).name(), "y");  // the repeat goes through an Identity
  EXPECT_NE(find_node(gp, "Identity"), nullptr);

  const ir::Graph back = reimport(m.SerializeAsString());
  EXPECT_EQ(back.name(), "names");
  EXPECT_TRUE(back.find_value("y").has_value());
  expect_same_outputs(g, back);
  // By hand: relu(1) * 0.5^3 = 0.125 (three trips, w = [0.5, 2]); relu(-1) = 0.
  runtime::Feeds feeds{{"x", Tensor::from_vector<float>({2}, {1.f, -1.f})}};
  const auto outs = run(back, feeds);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].get(0), 0.125);
  EXPECT_EQ(outs[1].get(0), 0.125);
  EXPECT_EQ(outs[0].get(1), 0.0);
}

TEST(OnnxExport, CaptureAsNestedGraphOutputGoesThroughIdentity) {
  ir::Graph g("capture_out");
  g.add_input("x", TensorType::of(DType::kF32, {2}));
  const ir::ValueId c = g.add_input("c", TensorType(DType::kBool, {}));
  ir::Graph then_g("then_branch"), else_g("else_branch");
  then_g.set_outputs({then_g.add_capture("x", TensorType::of(DType::kF32, {2}))});
  const ir::ValueId ex = else_g.add_capture("x", TensorType::of(DType::kF32, {2}));
  else_g.set_outputs({else_g.node(else_g.add_node("Neg", {ex}, 1)).outputs[0]});
  const ir::NodeId n = g.add_node("If", {c}, 1, "if", {{"then_branch", std::move(then_g)}, {"else_branch", std::move(else_g)}});
  g.set_outputs({g.node(n).outputs[0]});
  const onnx::ModelProto m = parse_checked(export_ok(g));
  const onnx::GraphProto& then_p = find_node(m.graph(), "If")->attribute(0).name() == "then_branch"
                                       ? find_node(m.graph(), "If")->attribute(0).g()
                                       : find_node(m.graph(), "If")->attribute(1).g();
  ASSERT_EQ(then_p.node_size(), 1);
  EXPECT_EQ(then_p.node(0).op_type(), "Identity");
  EXPECT_EQ(then_p.node(0).input(0), "x");
  const ir::Graph back = reimport(m.SerializeAsString());
  for (bool take : {true, false}) {
    runtime::Feeds feeds{{"x", Tensor::from_vector<float>({2}, {1.f, -3.f})}, {"c", Tensor::from_bools({}, {take})}};
    const auto outs = run(back, feeds);
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_EQ(outs[0].get(1), take ? -3.0 : 3.0);
  }
}

TEST(OnnxExport, UnusedUnnamedOptionalOutputsAreLeftOut) {
  ir::Graph g("pool");
  const ir::ValueId x = g.add_input("x", TensorType::of(DType::kF32, {1, 1, 4, 4}));
  const ir::NodeId n = g.add_node("MaxPool", {x}, 2, "pool", {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  g.set_outputs({g.node(n).outputs[0]});
  const onnx::ModelProto m = parse_checked(export_ok(g));
  EXPECT_EQ(m.graph().node(0).output_size(), 1);
}

// ---- files ----

TEST(OnnxExport, FilesAreWrittenAtomicallyAndLoadThroughTheDispatcher) {
  const fs::path dir = fs::temp_directory_path() / ("tessera_onnx_export_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const ir::Graph g = sample("lenet");
  const std::string path = (dir / "lenet.onnx").string();
  ASSERT_TRUE(export_onnx_file(g, path, registry()).is_ok());
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  const std::string via = (dir / "via_dispatch.onnx").string();
  ASSERT_TRUE(save_graph_file(g, via).is_ok());
  auto back = load_graph_file(via);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  expect_same_outputs(g, *back);
  // Refusals name the file.
  Status st = export_onnx_file(layer_norm_and_sgd(), (dir / "refused.onnx").string(), registry());
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().where, (dir / "refused.onnx").string());
  EXPECT_FALSE(fs::exists(dir / "refused.onnx"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::formats
