// Tests of engine/passes/pass_manager.cpp and instrumentations.cpp: pipeline parsing and its
// errors, fixpoint groups, the verifier catching a broken pass, the hash check catching a pass
// that lies about "unchanged", and the timing and snapshot instrumentations.
#include <gtest/gtest.h>

#include "engine/ir/hash.h"
#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/passes/instrumentations.h"
#include "engine/passes/pass_manager.h"
#include "engine/passes/passes.h"

namespace tessera::passes {
namespace {

const ops::OpRegistry& reg() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

// x -> Relu -> Identity -> Neg -> y
ir::Graph small_graph() {
  auto g = ir::parse_graph(R"(graph "g" {
  input %0 "x" : f32[2]
  #0 "r" = Relu(%0) -> (%1 : f32[2])
  #1 "i" = Identity(%1) -> (%2 : f32[2])
  #2 "n" = Neg(%2) -> (%3 "y" : f32[2])
  output %3
})");
  EXPECT_TRUE(g) << g.error().to_string();
  return *g;
}

// Appends '+' to node #0's name (a real change, so the hash check agrees) on each of its first
// `changes` runs, then changes nothing. Counts its runs.
class CountingPass : public Pass {
 public:
  CountingPass(std::string name, int changes, int* runs) : name_(std::move(name)), changes_(changes), runs_(runs) {}
  std::string name() const override { return name_; }
  Expected<bool> run(ir::Graph& g, PassContext&) override {
    ++*runs_;
    if (changes_ <= 0) return false;
    --changes_;
    g.node(0).name += "+";
    return true;
  }

 private:
  std::string name_;
  int changes_;
  int* runs_;
};

// Rewires Neg to read a value that does not exist, and says it changed the graph.
class BreakingPass : public Pass {
 public:
  std::string name() const override { return "break"; }
  Expected<bool> run(ir::Graph& g, PassContext&) override {
    g.node(2).inputs[0] = 99;
    return true;
  }
};

// Renames a node and claims it changed nothing.
class LyingPass : public Pass {
 public:
  std::string name() const override { return "liar"; }
  Expected<bool> run(ir::Graph& g, PassContext&) override {
    g.node(1).name = "renamed";
    return false;
  }
};

// Replaces Relu by Sigmoid but leaves Neg's output typed as i64: a stale type.
class StaleTypePass : public Pass {
 public:
  std::string name() const override { return "stale"; }
  Expected<bool> run(ir::Graph& g, PassContext&) override {
    g.value(3).type = ir::TensorType::of(DType::kI64, {2});
    return true;
  }
};

class FailingPass : public Pass {
 public:
  std::string name() const override { return "fail"; }
  Expected<bool> run(ir::Graph&, PassContext&) override { return make_error("no can do", {}, 1); }
};

PassRegistry test_registry(int* runs_a, int* runs_b, int a_changes, int b_changes) {
  PassRegistry r = default_pass_registry();
  r.add("pass-a", [=] { return std::make_unique<CountingPass>("pass-a", a_changes, runs_a); });
  r.add("pass-b", [=] { return std::make_unique<CountingPass>("pass-b", b_changes, runs_b); });
  r.add("break", [] { return std::make_unique<BreakingPass>(); });
  r.add("liar", [] { return std::make_unique<LyingPass>(); });
  r.add("stale", [] { return std::make_unique<StaleTypePass>(); });
  r.add("fail", [] { return std::make_unique<FailingPass>(); });
  return r;
}

TEST(PassManager, ParsesAndNormalises) {
  const PassRegistry r = default_pass_registry();
  auto pm = PassManager::parse(" canonicalize , fixpoint( cse,dce ) ,fuse", r);
  ASSERT_TRUE(pm) << pm.error().to_string();
  EXPECT_EQ(pm->pipeline_text(), "canonicalize,fixpoint(cse,dce),fuse");
  auto def = PassManager::parse(kDefaultPipeline, r);
  ASSERT_TRUE(def) << def.error().to_string();
  EXPECT_EQ(def->pipeline_text(), kDefaultPipeline);
  auto nested = PassManager::parse("fixpoint(dce,fixpoint(cse))", r);
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->pipeline_text(), "fixpoint(dce,fixpoint(cse))");
}

TEST(PassManager, ParseErrorsNameThePassAndColumn) {
  const PassRegistry r = default_pass_registry();
  auto unknown = PassManager::parse("dce,cse,frobnicate", r);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().where, "pipeline:1:9");
  EXPECT_NE(unknown.error().message.find("unknown pass 'frobnicate'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("constant-fold"), std::string::npos);  // lists known passes
  auto unclosed = PassManager::parse("fixpoint(dce", r);
  ASSERT_FALSE(unclosed);
  EXPECT_EQ(unclosed.error().where, "pipeline:1:13");
  auto empty_item = PassManager::parse("dce,,cse", r);
  ASSERT_FALSE(empty_item);
  EXPECT_EQ(empty_item.error().where, "pipeline:1:5");
  auto trailing = PassManager::parse("dce)", r);
  ASSERT_FALSE(trailing);
  EXPECT_EQ(trailing.error().where, "pipeline:1:4");
  EXPECT_FALSE(PassManager::parse("", r));
  EXPECT_FALSE(PassManager::parse("Dce", r));
}

TEST(PassManager, RegistryListsDefaultPasses) {
  const std::vector<std::string> want = {"canonicalize", "constant-fold", "cse",     "dce",
                                         "fold-batchnorm", "fuse",        "fuse-patterns", "qdq-fuse", "widen-f16"};
  EXPECT_EQ(default_pass_registry().names(), want);
}

TEST(PassManager, FixpointRepeatsUntilNoChange) {
  int a = 0, b = 0;
  const PassRegistry r = test_registry(&a, &b, 3, 1);
  auto pm = PassManager::parse("fixpoint(pass-a,pass-b)", r);
  ASSERT_TRUE(pm);
  ir::Graph g = small_graph();
  PassContext ctx{reg(), {}};
  auto changed = pm->run(g, ctx);
  ASSERT_TRUE(changed) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  // Rounds 1-3 change (a changes thrice), round 4 changes nothing and ends the group.
  EXPECT_EQ(a, 4);
  EXPECT_EQ(b, 4);
  EXPECT_EQ(g.node(0).name, "r++++");
  EXPECT_TRUE(ctx.diagnostics.empty());
}

TEST(PassManager, FixpointIsBounded) {
  int a = 0, b = 0;
  const PassRegistry r = test_registry(&a, &b, 1000, 0);
  auto pm = PassManager::parse("fixpoint(pass-a)", r);
  ASSERT_TRUE(pm);
  ir::Graph g = small_graph();
  PassContext ctx{reg(), {}};
  ASSERT_TRUE(pm->run(g, ctx));
  EXPECT_EQ(a, PassManager::kMaxFixpointRounds);
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(ctx.diagnostics[0].find("fixpoint(pass-a)"), std::string::npos);
}

TEST(PassManager, UnchangedPipelineReportsNoChange) {
  int a = 0, b = 0;
  const PassRegistry r = test_registry(&a, &b, 0, 0);
  auto pm = PassManager::parse("pass-a,pass-b", r);
  ASSERT_TRUE(pm);
  ir::Graph g = small_graph();
  PassContext ctx{reg(), {}};
  auto changed = pm->run(g, ctx);
  ASSERT_TRUE(changed);
  EXPECT_FALSE(*changed);
}

TEST(PassManager, PassErrorNamesThePass) {
  int a = 0, b = 0;
  auto pm = PassManager::parse("pass-a,fail,pass-b", test_registry(&a, &b, 0, 0));
  ASSERT_TRUE(pm);
  ir::Graph g = small_graph();
  PassContext ctx{reg(), {}};
  auto changed = pm->run(g, ctx);
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().message, "pass 'fail': no can do");
  EXPECT_EQ(changed.error().node, 1);
  EXPECT_EQ(b, 0);  // stopped
}

Expected<bool> run_verified(const std::string& pipeline) {
  static int a = 0, b = 0;
  auto pm = PassManager::parse(pipeline, test_registry(&a, &b, 1, 0));
  EXPECT_TRUE(pm);
  pm->add_instrumentation(std::make_unique<VerifierInstrumentation>(reg()));
  ir::Graph g = small_graph();
  PassContext ctx{reg(), {}};
  return pm->run(g, ctx);
}

TEST(VerifierInstrumentation, CatchesABrokenPass) {
  auto r = run_verified("canonicalize,break,dce");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("after pass 'break': ", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("undefined value %99"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().node, 2);
}

TEST(VerifierInstrumentation, CatchesALyingPass) {
  auto r = run_verified("pass-a,liar");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "after pass 'liar': the pass reported no change but the graph's structural hash changed");
}

TEST(VerifierInstrumentation, CatchesAStaleType) {
  auto r = run_verified("stale");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("after pass 'stale': Neg 'n' (#2): output %3 is typed i64[2] but inference gives f32[2]"),
            std::string::npos)
      << r.error().message;
}

TEST(VerifierInstrumentation, AcceptsHonestPasses) {
  auto r = run_verified(kDefaultPipeline);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(*r);  // the Identity went
}

TEST(TimingInstrumentation, RecordsEveryPass) {
  auto pm = PassManager::parse("fixpoint(canonicalize,dce),cse", default_pass_registry());
  ASSERT_TRUE(pm);
  auto* timing = pm->add_instrumentation(std::make_unique<TimingInstrumentation>());
  ir::Graph g = small_graph();
  PassContext ctx{reg(), {}};
  ASSERT_TRUE(pm->run(g, ctx));
  const auto& rec = timing->records();
  // Round 1: canonicalize removes the Identity (3 -> 2 nodes), dce has nothing left to do;
  // round 2 changes nothing; then cse.
  ASSERT_EQ(rec.size(), 5u);
  EXPECT_EQ(rec[0].pass, "canonicalize");
  EXPECT_TRUE(rec[0].changed);
  EXPECT_EQ(rec[0].nodes_before, 3);
  EXPECT_EQ(rec[0].nodes_after, 2);
  EXPECT_EQ(rec[1].pass, "dce");
  EXPECT_FALSE(rec[1].changed);
  EXPECT_FALSE(rec[2].changed);
  EXPECT_FALSE(rec[3].changed);
  EXPECT_EQ(rec[4].pass, "cse");
  for (const PassTiming& t : rec) EXPECT_GE(t.duration_ns, 0);
  EXPECT_NE(timing->report().find("canonicalize"), std::string::npos);
}

struct Collect : observe::SnapshotSink {
  std::vector<observe::Snapshot> got;
  void on_snapshot(const observe::Snapshot& s) override { got.push_back(s); }
};

TEST(SnapshotInstrumentation, EmitsAfterChangedPassesOnly) {
  auto g = ir::parse_graph(R"(graph "g" {
  input %0 "x" : f32[2]
  param %1 "k" : f32[2] = tensor<f32[2]> [1.0, 2.0]
  #0 "i" = Identity(%0) -> (%2 : f32[2])
  #1 "a" = Add(%2, %1) -> (%3 : f32[2])
  #2 "r" = Relu(%3) -> (%4 "y" : f32[2])
  output %4
})");
  ASSERT_TRUE(g);
  ASSERT_TRUE(ops::infer_types(*g, reg()).is_ok());
  auto pm = PassManager::parse("cse,canonicalize,fuse,dce", default_pass_registry());
  ASSERT_TRUE(pm);
  Collect sink;
  int next = 7;  // snapshots of earlier stages came first
  pm->add_instrumentation(std::make_unique<SnapshotInstrumentation>(&sink, "optimise", &next));
  PassContext ctx{reg(), {}};
  ASSERT_TRUE(pm->run(*g, ctx));
  // cse: nothing; canonicalize: Identity gone; fuse: none of Conv/MatMul/Gemm; dce: nothing.
  ASSERT_EQ(sink.got.size(), 1u);
  const observe::Snapshot& s = sink.got[0];
  EXPECT_EQ(s.stage, "optimise");
  EXPECT_EQ(s.pass, "canonicalize");
  EXPECT_EQ(s.index, 7);
  EXPECT_EQ(next, 8);
  EXPECT_EQ(s.nodes_before, 3);
  EXPECT_EQ(s.nodes_after, 2);
  EXPECT_EQ(s.ir_text, ir::print_graph(*g, ir::PrintOptions{false}));  // weights elided
  EXPECT_EQ(s.hash, ir::structural_hash(*g));
  ASSERT_EQ(s.diagnostics.size(), 1u);
  EXPECT_EQ(s.diagnostics[0], "canonicalize: simplified 1 Identity");
  EXPECT_TRUE(s.provenance.empty());
}

TEST(SnapshotInstrumentation, CarriesProvenanceOfFusedNodes) {
  auto g = ir::parse_graph(R"(graph "g" {
  input %0 "a" : f32[2, 3]
  param %1 "w" : f32[3, 2] = tensor<f32[3, 2]> [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  #0 "mm" = MatMul(%0, %1) -> (%2 : f32[2, 2])
  #1 "r" = Relu(%2) -> (%3 "y" : f32[2, 2])
  output %3
})");
  ASSERT_TRUE(g);
  auto pm = PassManager::parse("fuse", default_pass_registry());
  ASSERT_TRUE(pm);
  Collect sink;
  int next = 0;
  pm->add_instrumentation(std::make_unique<SnapshotInstrumentation>(&sink, "optimise", &next));
  PassContext ctx{reg(), {}};
  ASSERT_TRUE(pm->run(*g, ctx));
  ASSERT_EQ(sink.got.size(), 1u);
  ASSERT_EQ(sink.got[0].provenance.size(), 1u);
  EXPECT_EQ(sink.got[0].provenance[0].first, 2);
  EXPECT_EQ(sink.got[0].provenance[0].second, (std::vector<int32_t>{0, 1}));
}

}  // namespace
}  // namespace tessera::passes
