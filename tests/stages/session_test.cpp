// End-to-end tests of the six stages through Session: results equal the reference executor on
// real samples and on hand-written graphs (branches, control flow, a second device), for 1 and 2
// threads, and bad feeds are refused with the input named.
#include "tests/support/paths.h"
#include "engine/stages/nested.h"
#include "engine/stages/session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "engine/cpu/cpu_backend.h"
#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "formats/graph_file.h"

namespace tessera::stages {
namespace {

const ops::OpRegistry& registry() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

void expect_close(const Tensor& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get(i)));
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get(i), want.get(i), atol + rtol * scale) << "element " << i;
}

ir::Graph parse(const std::string& text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.has_value()) << g.error().to_string();
  return std::move(*g);
}

TEST(Session, LeNetMatchesReferenceForOneAndTwoThreads) {
  auto g = formats::load_graph_file(tessera::test::source_dir() + "/samples/lenet.json");
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  Tensor x = random_tensor({5, 1, 28, 28}, 1);
  auto want = runtime::run_reference(*g, registry(), {{"x", x}});
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  std::vector<Tensor> first;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    SessionOptions o;
    o.threads = threads;
    o.inter_op_threads = threads;
    Session s(*g, registry(), o);
    auto got = s.run({{"x", x}});
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    expect_close((*got)[0], (*want)[0]);
    if (first.empty())
      first = *got;
    else
      EXPECT_TRUE((*got)[0].equals(first[0])) << "results differ between 1 and 2 threads";
    // The optimiser fused the convolutions and the plan reuses memory.
    Program* p = *s.compile({{"x", {5, 1, 28, 28}}});
    EXPECT_LE(p->plan().peak_bytes(), p->plan().memory[0].total_bytes);
    EXPECT_GE(p->plan().peak_bytes(), p->plan().lower_bound_bytes());
  }
}

TEST(Session, RecompilesForNewShapesAndRefusesBadFeeds) {
  auto g = formats::load_graph_file(tessera::test::source_dir() + "/samples/mlp.json");
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  std::string input = g->value(g->inputs()[0]).name;
  Session s(*g, registry(), {});
  for (int64_t n : {1, 7}) {
    Tensor x = random_tensor({n, 1, 28, 28}, 3);
    auto got = s.run({{input, x}});
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    auto want = runtime::run_reference(*g, registry(), {{input, x}});
    expect_close((*got)[0], (*want)[0]);
  }
  auto bad = s.run({{input, random_tensor({2, 1, 28, 27}, 1)}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find(input), std::string::npos) << bad.error().message;
  auto missing = s.run({{"nope", random_tensor({2, 1, 28, 28}, 1)}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("nope"), std::string::npos);
}

constexpr const char* kBranches = R"(graph "branches" {
  input %0 "x" : f32[4, 8]
  param %1 "w1" : f32[8, 8] = tensor<f32[8, 8]> [1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0, 1.0, 0.5, 0.25, 0.0, -0.25, -0.5, -1.0, 2.0]
  #0 "left" = MatMul(%0, %1) -> (%2 : f32[4, 8])
  #1 "l2" = Relu(%2) -> (%3 : f32[4, 8])
  #2 "right" = Sigmoid(%0) -> (%4 : f32[4, 8])
  #3 "r2" = Tanh(%4) -> (%5 : f32[4, 8])
  #4 "join" = Add(%3, %5) -> (%6 "y" : f32[4, 8])
  #5 "also" = Exp(%4) -> (%7 "z" : f32[4, 8])
  output %6, %7
})";

TEST(Session, IndependentBranchesGiveTheSameResultsOnAnyThreadCount) {
  ir::Graph g = parse(kBranches);
  Tensor x = random_tensor({4, 8}, 5);
  auto want = runtime::run_reference(g, registry(), {{"x", x}});
  ASSERT_TRUE(want.has_value());
  for (int threads : {1, 2, 3}) {
    SessionOptions o;
    o.threads = threads;
    o.inter_op_threads = threads;  // the branches run at once on the executor's pool
    Session s(g, registry(), o);
    ASSERT_TRUE(s.compile({{"x", {4, 8}}}).has_value());
    EXPECT_EQ((*s.compile({{"x", {4, 8}}}))->plan().workers, threads);
    for (int rep = 0; rep < 20; ++rep) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " rep " + std::to_string(rep));
      auto got = s.run({{"x", x}});
      ASSERT_TRUE(got.has_value()) << got.error().to_string();
      ASSERT_EQ(got->size(), 2u);
      expect_close((*got)[0], (*want)[0]);
      expect_close((*got)[1], (*want)[1]);
    }
  }
}

TEST(Session, SplitsAcrossTheTestDeviceWithCopies) {
  // Sigmoid/Tanh/Exp/Add/MatMul run on the test device (it is cheaper), Relu... too; a Softmax
  // cannot and stays on the CPU with a recorded reason.
  std::string text = kBranches;
  text.replace(text.find("#1 \"l2\" = Relu"), std::string("#1 \"l2\" = Relu").size(), "#1 \"l2\" = Softmax");
  ir::Graph g = parse(text);
  StageContext ctx(registry());
  backend::DeviceSet devices = backend::DeviceSet::standard(true);
  auto prepared = prepare(g, {}, ctx);
  ASSERT_TRUE(prepared.has_value()) << prepared.error().to_string();
  auto placed = split(std::move(*prepared), devices, "cpu", ctx);
  ASSERT_TRUE(placed.has_value()) << placed.error().to_string();
  EXPECT_EQ(placed->device(1), "cpu");  // Softmax
  EXPECT_EQ(placed->device(0), "cpu:test");
  EXPECT_GT(placed->copies, 0);
  bool softmax_has_no_fallback_entry = true;
  for (const Placement& p : placed->fallbacks) softmax_has_no_fallback_entry &= p.node != 1;
  EXPECT_TRUE(softmax_has_no_fallback_entry);
  int copies = 0;
  for (ir::NodeId id : placed->graph.node_ids()) copies += placed->graph.node(id).op == "Copy";
  EXPECT_EQ(copies, placed->copies);
  // Every edge between nodes on different devices goes through a Copy.
  for (ir::NodeId id : placed->graph.node_ids())
    for (ir::ValueId v : placed->graph.node(id).inputs) {
      const ir::Value& val = placed->graph.value(v);
      if (val.kind != ir::ValueKind::kNodeOutput || placed->graph.node(id).op == "Copy") continue;
      EXPECT_EQ(placed->device(val.producer), placed->device(id)) << "edge %" << v;
    }
  EXPECT_NE(placed->print().find("cpu:test"), std::string::npos);

  Tensor x = random_tensor({4, 8}, 9);
  auto want = runtime::run_reference(g, registry(), {{"x", x}});
  ASSERT_TRUE(want.has_value());
  SessionOptions o;
  o.test_device = true;
  o.threads = 2;
  Session s(g, registry(), o);
  auto got = s.run({{"x", x}});
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  expect_close((*got)[0], (*want)[0]);
  expect_close((*got)[1], (*want)[1]);
  EXPECT_EQ(s.context().stages.size(), 5u);
}

TEST(Session, NodesTheOptimiserMakesGoWhereTheyCanRunWithTheirCopies) {
  // MatMul + Relu on the test device are fused into FusedMatMul, which the test device cannot
  // run: the refit after the optimiser moves it to the CPU with the reason and cuts its edges.
  ir::Graph g = parse(kBranches);
  SessionOptions o;
  o.test_device = true;
  backend::DeviceSet devices = backend::DeviceSet::standard(true);
  auto c = compile_all(g, registry(), {{"x", {4, 8}}}, o, devices, false);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  const ir::Graph& pg = c->program->plan().graph;
  bool fused_on_cpu = false;
  for (ir::NodeId id : pg.node_ids())
    if (pg.node(id).op == "FusedMatMul") {
      EXPECT_EQ(c->device_of[static_cast<size_t>(id)], "cpu");
      fused_on_cpu = true;
      bool reason = false;
      for (const Placement& p : c->fallbacks)
        reason |= p.node == id && p.reason.find("after optimisation") != std::string::npos;
      EXPECT_TRUE(reason) << "no fallback entry with the reason for the fused node";
    }
  EXPECT_TRUE(fused_on_cpu);
  auto dev = [&](ir::NodeId id) {
    return static_cast<size_t>(id) < c->device_of.size() && !c->device_of[static_cast<size_t>(id)].empty()
               ? c->device_of[static_cast<size_t>(id)] : std::string("cpu");
  };
  for (ir::NodeId id : pg.node_ids()) {
    const ir::Node& n = pg.node(id);
    for (ir::ValueId v : n.inputs) {
      const ir::Value& val = pg.value(v);
      if (n.op == "Copy") {
        EXPECT_NE(val.kind, ir::ValueKind::kParam) << "weights are placed at load, not copied per run";
        const std::string from = val.kind == ir::ValueKind::kNodeOutput ? dev(val.producer) : "cpu";
        EXPECT_NE(from, dev(id)) << "a copy within one device: " << n.name;
        continue;
      }
      if (val.kind == ir::ValueKind::kNodeOutput) {
        EXPECT_EQ(dev(val.producer), dev(id)) << "edge %" << v;
      }
    }
  }
  Tensor x = random_tensor({4, 8}, 9);
  auto want = runtime::run_reference(g, registry(), {{"x", x}});
  ASSERT_TRUE(want.has_value());
  auto got = c->program->run({{"x", x}});
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  expect_close((*got)[0], (*want)[0]);
  expect_close((*got)[1], (*want)[1]);
}

TEST(Session, ResolvesDeviceChoicesWithReasons) {
  backend::DeviceSet devices = backend::DeviceSet::discover(true);
  bool has_gpu = devices.find("cuda:0") != nullptr;
  auto a = devices.resolve("auto");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, has_gpu ? "cuda:0" : "cpu");
  EXPECT_EQ(*devices.resolve("cpu"), "cpu");
  EXPECT_EQ(*devices.resolve("cpu:test"), "cpu:test");
  auto bad = devices.resolve("tpu");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("expected cpu, cuda, cuda:N or auto"), std::string::npos) << bad.error().message;
  auto far = devices.resolve("cuda:99");
  ASSERT_FALSE(far.has_value());
  if (!has_gpu) {
    EXPECT_FALSE(devices.cuda_unavailable().empty());
    EXPECT_NE(far.error().message.find(devices.cuda_unavailable()), std::string::npos) << far.error().message;
    // A session asked for a GPU it cannot have fails with the reason, not a crash.
    SessionOptions o;
    o.device = "cuda";
    Session s(parse(kBranches), registry(), o);
    auto r = s.run({{"x", random_tensor({4, 8}, 1)}});
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("no CUDA device is usable"), std::string::npos) << r.error().message;
  }
}

TEST(Session, CapturesRunsOfDeviceKernelsBetweenCopies) {
  // Steps: copy in, 3 kernels on device 1, a host step, 1 kernel on device 1, a reference step
  // on device 1, 2 kernels + an alias on device 1, copy out. Graph segments: [1, 4) and [7, 10).
  using K = Step::Kind;
  const std::vector<std::pair<K, int>> steps = {{K::kCopy, 1},   {K::kKernel, 1}, {K::kAlias, 1},    {K::kKernel, 1},
                                                {K::kKernel, 0}, {K::kKernel, 1}, {K::kReference, 1}, {K::kKernel, 1},
                                                {K::kAlias, 1},  {K::kKernel, 1}, {K::kCopy, 0}};
  ExecutionPlan plan;
  for (const auto& [kind, device] : steps) {
    Step st;
    st.kind = kind;
    st.device = device;
    plan.steps.push_back(std::move(st));
  }
  auto segs = capture_segments(plan, [](int d) { return d == 1; });
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].begin, 1);
  EXPECT_EQ(segs[0].end, 4);
  EXPECT_EQ(segs[1].begin, 7);
  EXPECT_EQ(segs[1].end, 10);
  EXPECT_TRUE(capture_segments(plan, [](int) { return false; }).empty()) << "a device that cannot capture";
  plan.workers = 2;
  EXPECT_TRUE(capture_segments(plan, [](int d) { return d == 1; }).empty()) << "steps run at once are not captured";
}

TEST(Session, RunsControlFlowThroughTheReferenceFallback) {
  ir::Graph g = parse(R"(graph "control_flow" {
  input %0 "cond" : bool[]
  input %1 "x" : f32[N, 3]
  param %2 "bias" : f32[3] = tensor<f32[3]> [0.5, -1.25, 3.0]
  #0 "pick" = If(%0) -> (%3 "y" : f32[N, 3]) {else_branch = graph "else" {
    capture %0 "x" : f32[N, 3]
    #0 = Neg(%0) -> (%1 : f32[N, 3])
    output %1
  }, then_branch = graph "then" {
    capture %0 "x" : f32[N, 3]
    capture %1 "bias" : f32[3]
    #0 = Add(%0, %1) -> (%2 : f32[N, 3])
    output %2
  }}
  #1 = Relu(%3) -> (%4 "out" : f32[N, 3])
  output %4
})");
  Session s(g, registry(), {});
  Tensor x = random_tensor({2, 3}, 4);
  for (bool c : {true, false}) {
    runtime::Feeds f{{"cond", Tensor::from_bools({}, {c})}, {"x", x}};
    auto got = s.run(f);
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    auto want = runtime::run_reference(g, registry(), f);
    expect_close((*got)[0], (*want)[0]);
  }
  // Both branches went through the six stages, the captured weight as a param.
  std::vector<std::string> nested = s.last_program()->nested_summary();
  ASSERT_EQ(nested.size(), 2u);
  for (const std::string& line : nested) EXPECT_NE(line.find("compiled for 1 shape"), std::string::npos) << line;
}

// Loop bodies compile too: one whose carried value keeps its shape compiles once; one whose
// carried value grows every iteration compiles NestedGraphs::kMaxShapes shapes, then the
// interpreter takes the later iterations, with the same result.
TEST(Session, CompilesLoopBodiesPerShapeUpToALimit) {
  for (bool grow : {false, true}) {
    ir::Graph body("body");
    body.add_input("i", ir::TensorType::of(DType::kI64, {}));
    const ir::ValueId cond = body.add_input("cond", ir::TensorType::of(DType::kBool, {}));
    const ir::ValueId acc = body.add_input("acc", ir::TensorType::unranked(DType::kF32));
    const ir::ValueId x = body.add_capture("x", ir::TensorType::of(DType::kF32, {1, 3}));
    const ir::ValueId w = body.add_capture("w", ir::TensorType::of(DType::kF32, {3}));
    const ir::NodeId scaled = body.add_node("Mul", {acc, w}, 1, "scaled");
    const ir::NodeId next = grow ? body.add_node("Concat", {body.node(scaled).outputs[0], x}, 1, "grow", {{"axis", 0}})
                                 : body.add_node("Add", {body.node(scaled).outputs[0], x}, 1, "step");
    body.set_outputs({cond, body.node(next).outputs[0]});
    ir::Graph g("loop");
    const ir::ValueId xin = g.add_input("x", ir::TensorType::of(DType::kF32, {1, 3}));
    g.add_param("w", Tensor::from_vector<float>({3}, {0.5f, -1.0f, 2.0f}));
    const ir::ValueId trips = g.add_param("trips", Tensor::scalar<int64_t>(12));
    const ir::NodeId loop = g.add_node("Loop", {trips, ir::kNoValue, xin}, 1, "loop", {{"body", body}});
    g.set_value_name(g.node(loop).outputs[0], "y");
    g.set_outputs(g.node(loop).outputs);
    Session s(g, registry(), {});
    runtime::Feeds f{{"x", random_tensor({1, 3}, 6)}};
    auto got = s.run(f);
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    auto want = runtime::run_reference(g, registry(), f);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    EXPECT_EQ((*got)[0].shape(), (*want)[0].shape());
    expect_close((*got)[0], (*want)[0]);
    std::vector<std::string> nested = s.last_program()->nested_summary();
    ASSERT_EQ(nested.size(), 1u);
    const std::string expect = grow ? "compiled for " + std::to_string(NestedGraphs::kMaxShapes) + " shape" : "compiled for 1 shape";
    EXPECT_NE(nested[0].find(expect), std::string::npos) << nested[0];
  }
}

// A symbolic dimension whose size keeps changing (a decoder's growing cache) stays symbolic after
// SessionOptions::sizes_before_dynamic sizes: one more program, whose steps get kernels made per
// shape at run time (the Reshape's target computed from the input's shape is a shape argument),
// with results equal to the reference kernels at every size, and repeated shapes made once.
TEST(Session, KeepsAChangingDimensionSymbolicAndSpecialisesItsSteps) {
  ir::Graph g = parse(R"(graph "growing" {
  input %0 "x" : f32[1, P, 8]
  param %1 "w" : f32[8, 8] = tensor<f32[8, 8]> [0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0, 0.5, -1.0, 0.25, 2.0, 0.0, 1.5, -0.5, 1.0]
  param %2 "tail" : i64[1] = tensor<i64[1]> [-1]
  #0 = MatMul(%0, %1) -> (%3 : f32[1, P, 8])
  #1 = Softmax(%3) -> (%4 : f32[1, P, 8]) {axis = 1}
  #2 = Shape(%0) -> (%5 : i64[3])
  #3 = Slice(%5, %2, %2) -> (%6 : i64[0])
  #4 = Concat(%2, %6) -> (%7 : i64[1]) {axis = 0}
  #5 = Reshape(%4, %7) -> (%8 "y" : f32[?])
  output %8
})");
  SessionOptions options;
  options.sizes_before_dynamic = 2;
  Session s(g, registry(), options);
  for (int64_t p : {3, 5, 4, 9, 4, 11, 9}) {
    SCOPED_TRACE("P = " + std::to_string(p));
    runtime::Feeds f{{"x", random_tensor({1, p, 8}, static_cast<uint32_t>(p))}};
    auto got = s.run(f);
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    auto want = runtime::run_reference(g, registry(), f);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    EXPECT_EQ((*got)[0].shape(), (Shape{p * 8}));
    expect_close((*got)[0], (*want)[0]);
  }
  EXPECT_EQ(s.dynamic_symbols(), std::set<std::string>{"P"});
  int specialised = 0;
  size_t made = 0;
  const ir::Graph& plan_graph = s.last_program()->plan().graph;
  for (const Step& st : s.last_program()->plan().steps) {
    const std::string& op = plan_graph.node(st.node).op;
    if (!st.specialised || (op != "MatMul" && op != "Softmax" && op != "Reshape")) continue;  // Shape, Slice: reference
    ++specialised;
    made += st.specialised->kernels_made();
    EXPECT_EQ(st.specialised->reference_runs(), 0) << op << ": " << st.specialised->why_reference();
  }
  EXPECT_EQ(specialised, 3) << "MatMul, Softmax and the Reshape";
  EXPECT_LE(made, static_cast<size_t>(specialised * 3)) << "sizes 4, 9 and 11 once each, 4 and 9 again from the cache";
}

// A graph nested two deep capturing a value of the graph between (an If inside an If branch
// reading what that branch computed, as Faster R-CNN's export has a Loop inside an If): the
// outer If captures only what its branches take from outside.
TEST(Session, ANestedGraphCapturesAValueOfTheGraphBetween) {
  ir::Graph g = parse(R"(graph "nested" {
  input %0 "cond" : bool[]
  input %1 "x" : f32[N, 3]
  #0 "outer" = If(%0) -> (%2 "y" : f32[N, 3]) {else_branch = graph "else" {
    capture %0 "x" : f32[N, 3]
    capture %1 "cond" : bool[]
    #0 = Neg(%0) -> (%2 "inner" : f32[N, 3])
    #1 "deeper" = If(%1) -> (%3 : f32[N, 3]) {else_branch = graph "e2" {
      capture %0 "inner" : f32[N, 3]
      #0 = Abs(%0) -> (%1 : f32[N, 3])
      output %1
    }, then_branch = graph "t2" {
      capture %0 "inner" : f32[N, 3]
      output %0
    }}
    output %3
  }, then_branch = graph "then" {
    capture %0 "x" : f32[N, 3]
    output %0
  }}
  output %2
})");
  Session s(g, registry(), {});
  Tensor x = random_tensor({2, 3}, 5);
  for (bool c : {true, false}) {
    runtime::Feeds f{{"cond", Tensor::from_bools({}, {c})}, {"x", x}};
    auto got = s.run(f);
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    auto want = runtime::run_reference(g, registry(), f);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    expect_close((*got)[0], (*want)[0]);
  }
}

}  // namespace
}  // namespace tessera::stages

namespace tessera::stages {
namespace {

// Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) share their input's bytes: no copy runs,
// the arena holds one buffer for the chain, and the root stays alive while any view is read. A
// view that is a graph output, or of one, gets its own buffer.
TEST(Session, ViewsShareTheirInputsBuffer) {
  ir::Graph g = parse(R"(graph "views" {
  input %0 "x" : f32[2, 6]
  param %1 "shape" : i64[3] = tensor<i64[3]> [3, 2, 2]
  param %2 "flat" : i64[1] = tensor<i64[1]> [12]
  #0 "r0" = Reshape(%0, %1) -> (%3 : f32[3, 2, 2])
  #1 "relu" = Relu(%3) -> (%4 : f32[3, 2, 2])
  #2 "r1" = Reshape(%4, %2) -> (%5 : f32[12])
  #3 "neg" = Neg(%5) -> (%6 : f32[12])
  #4 "add" = Add(%5, %6) -> (%7 : f32[12])
  #5 "out" = Reshape(%7, %1) -> (%8 "y" : f32[3, 2, 2])
  #6 "tanh" = Tanh(%4) -> (%9 "z" : f32[3, 2, 2])
  output %8, %9
})");
  Tensor x = random_tensor({2, 6}, 21);
  auto want = runtime::run_reference(g, registry(), {{"x", x}});
  ASSERT_TRUE(want.has_value());
  SessionOptions o;
  o.threads = 2;
  Session s(g, registry(), o);
  auto got = s.run({{"x", x}});
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  expect_close((*got)[0], (*want)[0]);
  expect_close((*got)[1], (*want)[1]);
  const ExecutionPlan& plan = (*s.compile({{"x", {2, 6}}}))->plan();
  std::map<std::string, Step::Kind> kinds;
  for (const Step& st : plan.steps) kinds[plan.graph.node(st.node).name] = st.kind;
  EXPECT_EQ(kinds["r0"], Step::Kind::kAlias);   // of a graph input
  EXPECT_EQ(kinds["r1"], Step::Kind::kAlias);   // of an arena value read again later (by add)
  EXPECT_EQ(kinds["out"], Step::Kind::kKernel);  // a graph output: its own buffer
  // relu's buffer (viewed by r1) must outlive neg and add, which read the view.
  auto slot = [&](const std::string& node) {
    for (ir::NodeId id : plan.graph.node_ids())
      if (plan.graph.node(id).name == node) return plan.slots[static_cast<size_t>(plan.graph.node(id).outputs[0])];
    ADD_FAILURE() << "no node " << node;
    return ValueSlot();
  };
  EXPECT_EQ(slot("r1").offset, slot("relu").offset);
  EXPECT_NE(slot("neg").offset, slot("relu").offset);
}

// SessionOptions::bf16: MatMul rounded to bf16 where the CPU has AVX-512 BF16 or AMX (close to f32,
// not equal to it), refused with the reason elsewhere.
TEST(Session, Bf16RunsOrIsRefused) {
  ir::Graph g("mm");
  const ir::ValueId x = g.add_input("x", ir::TensorType::of(DType::kF32, {16, 64}));
  const Tensor w = random_tensor({64, 32}, 21);
  const ir::NodeId n = g.add_node("MatMul", {x, g.add_param("w", w)}, 1, "mm");
  g.set_outputs(g.node(n).outputs);
  const Tensor xv = random_tensor({16, 64}, 22);
  auto want = runtime::run_reference(g, registry(), {{"x", xv}});
  ASSERT_TRUE(want.has_value());
  SessionOptions o;
  o.bf16 = true;
  Session s(g, registry(), o);
  auto got = s.run({{"x", xv}});
  if (!cpu::bf16_unsupported().empty()) {
    ASSERT_FALSE(got.has_value());
    EXPECT_NE(got.error().message.find("without AVX-512 BF16 or AMX"), std::string::npos) << got.error().message;
    return;
  }
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  expect_close((*got)[0], (*want)[0], 2e-2, 0);
  double diff = 0;
  for (int64_t i = 0; i < want->at(0).numel(); ++i) diff = std::max(diff, std::fabs((*got)[0].get(i) - (*want)[0].get(i)));
  EXPECT_GT(diff, 1e-4) << "no bf16 rounding";
  const ExecutionPlan& plan = (*s.compile({{"x", {16, 64}}}))->plan();
  EXPECT_NE(plan.print().find("bf16"), std::string::npos) << plan.print();
}

}  // namespace
}  // namespace tessera::stages
