// Golden pass tests: every tests/golden/passes/*.tir runs its `// RUN: <pipeline>` on the graph
// in the file (types re-inferred first, the verifier instrumentation on), prints the result and
// matches the `// CHECK:` lines in order, FileCheck-style: each CHECK is a substring of a later
// line than the previous CHECK's; a `// CHECK-NOT:` substring must not occur between the CHECKs
// around it (or before the end). With TESSERA_UPDATE_GOLDEN=1 the printed output of each file is
// written to $TMPDIR/<name>.out, to help write CHECK lines (the test still checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/paths.h"
#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/passes/instrumentations.h"
#include "engine/passes/pass_manager.h"

namespace tessera::passes {
namespace {

struct Directive {
  bool negative;
  std::string text;
  int line;  // in the .tir file, for messages
};

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  const size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Returns the failures of matching `directives` against `output`.
std::vector<std::string> file_check(const std::vector<Directive>& directives, const std::string& output) {
  const std::vector<std::string> lines = split_lines(output);
  std::vector<std::string> failures;
  size_t pos = 0;
  std::vector<const Directive*> pending_not;
  auto check_nots = [&](size_t from, size_t to) {
    for (const Directive* d : pending_not)
      for (size_t l = from; l < to && l < lines.size(); ++l)
        if (lines[l].find(d->text) != std::string::npos)
          failures.push_back("line " + std::to_string(d->line) + ": CHECK-NOT '" + d->text + "' found in output line " +
                             std::to_string(l + 1) + ": " + lines[l]);
    pending_not.clear();
  };
  for (const Directive& d : directives) {
    if (d.negative) {
      pending_not.push_back(&d);
      continue;
    }
    size_t l = pos;
    while (l < lines.size() && lines[l].find(d.text) == std::string::npos) ++l;
    if (l == lines.size()) {
      failures.push_back("line " + std::to_string(d.line) + ": CHECK '" + d.text + "' not found after output line " +
                         std::to_string(pos));
      return failures;
    }
    check_nots(pos, l);
    pos = l + 1;
  }
  check_nots(pos, lines.size());
  return failures;
}

std::vector<std::filesystem::path> golden_files() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = std::filesystem::path(tessera::test::source_dir()) / "tests/golden/passes";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".tir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(PassGolden, FileCheckMatcher) {
  const std::string out = "a Relu\nb Add\nc Relu\n";
  EXPECT_TRUE(file_check({{false, "Relu", 1}, {false, "Relu", 2}}, out).empty());
  EXPECT_FALSE(file_check({{false, "Add", 1}, {false, "b", 2}}, out).empty());  // order matters
  EXPECT_FALSE(file_check({{false, "a", 1}, {true, "Add", 2}, {false, "c", 3}}, out).empty());
  EXPECT_TRUE(file_check({{false, "b", 1}, {true, "Add", 2}}, out).empty());  // NOT after the match only
  EXPECT_FALSE(file_check({{true, "Mul", 1}, {true, "Relu", 2}}, out).empty());
}

TEST(PassGolden, AllFiles) {
  const ops::OpRegistry reg = ops::make_default_registry();
  const PassRegistry passes = default_pass_registry();
  const auto files = golden_files();
  ASSERT_GE(files.size(), 6u);
  const char* update = std::getenv("TESSERA_UPDATE_GOLDEN");  // test driver: main-level policy
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::string pipeline;
    std::vector<Directive> directives;
    int n = 0;
    for (const std::string& line : split_lines(text)) {
      ++n;
      const std::string t = trim(line);
      if (t.rfind("// RUN:", 0) == 0) pipeline = trim(t.substr(7));
      else if (t.rfind("// CHECK-NOT:", 0) == 0) directives.push_back({true, trim(t.substr(13)), n});
      else if (t.rfind("// CHECK:", 0) == 0) directives.push_back({false, trim(t.substr(9)), n});
    }
    ASSERT_FALSE(pipeline.empty()) << "no // RUN: line";
    ASSERT_FALSE(directives.empty()) << "no // CHECK: lines";
    auto graph = ir::parse_graph(text, path.filename().string());
    ASSERT_TRUE(graph) << graph.error().to_string();
    Status st = ops::infer_types(*graph, reg);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    auto pm = PassManager::parse(pipeline, passes);
    ASSERT_TRUE(pm) << pm.error().to_string();
    pm->add_instrumentation(std::make_unique<VerifierInstrumentation>(reg));
    PassContext ctx{reg, {}};
    auto changed = pm->run(*graph, ctx);
    ASSERT_TRUE(changed) << changed.error().to_string();
    const std::string out = ir::print_graph(*graph);
    if (update && std::string(update) == "1") {
      const auto o = std::filesystem::temp_directory_path() / (path.stem().string() + ".out");
      std::ofstream(o) << out;
    }
    for (const std::string& f : file_check(directives, out)) ADD_FAILURE() << f << "\noutput:\n" << out;
    // The result is well formed text: it parses back and prints the same.
    auto again = ir::parse_graph(out);
    ASSERT_TRUE(again) << again.error().to_string();
    EXPECT_EQ(ir::print_graph(*again), out);
  }
}

}  // namespace
}  // namespace tessera::passes
