// tessera-onnx-conformance: runs ONNX backend test cases (model.onnx + test_data_set_N/) through
// the ONNX importer and an engine, compares every output with the stored one, and prints a
// summary. Cases listed in the filter file are skipped (grouped by reason there). With
// --roundtrip EXT every imported graph is first saved through formats::save_graph_file as
// case.EXT and loaded back (formats::load_graph_file), so the run checks that format's writer.
//
//   tessera-onnx-conformance --filter tests/conformance/onnx_filters.txt
//       /usr/share/libonnx-testdata/data/node /usr/share/libonnx-testdata/data/simple
//
// Exit code 0 when every case that is not skipped passes, 1 otherwise, 2 on bad usage.
#include <fnmatch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"
#include "engine/runtime/interpreter.h"
#include "engine/stages/session.h"
#include "formats/graph_file.h"
#include "formats/onnx_import.h"

namespace fs = std::filesystem;

namespace tessera::conformance {
namespace {

// ---- engines: the one place that executes an imported graph ----

using Execute = std::function<Expected<std::vector<Tensor>>(const ir::Graph&, const runtime::Feeds&)>;

Expected<Execute> make_engine(const std::string& name, const ops::OpRegistry& registry) {
  if (name == "reference")
    return Execute([&registry](const ir::Graph& g, const runtime::Feeds& feeds) {
      return runtime::run_reference(g, registry, feeds);
    });
  if (name == "compiled")
    return Execute([&registry](const ir::Graph& g, const runtime::Feeds& feeds) {
      stages::SessionOptions options;
      options.threads = 1;
      stages::Session session(g, registry, options);
      return session.run(feeds);
    });
  return make_error("unknown engine '" + name + "' (reference, compiled)");
}

// ---- the filter file ----

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct Filters {
  std::vector<std::pair<std::string, std::string>> skips;  // pattern, reason (its group comment)
  std::vector<std::pair<std::string, Tolerance>> tolerances;

  static bool matches(const std::string& pattern, const std::string& name) {
    return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  }
  const std::string* skip_reason(const std::string& name) const {
    for (const auto& [pattern, reason] : skips)
      if (matches(pattern, name)) return &reason;
    return nullptr;
  }
  Tolerance tolerance(const std::string& name) const {
    for (const auto& [pattern, tol] : tolerances)
      if (matches(pattern, name)) return tol;
    return {};
  }
};

// Lines: "# reason" starts a group; "NAME-OR-PATTERN" skips; "@tolerance PATTERN RTOL ATOL".
Expected<Filters> read_filters(const std::string& path) {
  Filters f;
  if (path.empty()) return f;
  std::ifstream in(path);
  if (!in) return make_error("cannot open filter file", path);
  std::string line, reason = "filtered";
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
    if (line[0] == '#') {
      reason = line.substr(1);
      reason.erase(0, reason.find_first_not_of(' '));
      continue;
    }
    if (line.rfind("@tolerance", 0) == 0) {
      char pattern[512];
      Tolerance t;
      if (std::sscanf(line.c_str(), "@tolerance %511s %lf %lf", pattern, &t.rtol, &t.atol) != 3)
        return make_error("expected '@tolerance PATTERN RTOL ATOL'", path + ":" + std::to_string(lineno));
      f.tolerances.emplace_back(pattern, t);
      continue;
    }
    f.skips.emplace_back(line, reason);
  }
  return f;
}

// ---- cases ----

struct Case {
  std::string name;  // the case folder's name, e.g. test_abs
  fs::path dir;
};

// A root is a case folder, a folder of case folders, or a folder of such folders.
void collect_cases(const fs::path& root, int depth, std::vector<Case>& out) {
  std::error_code ec;
  if (fs::exists(root / "model.onnx", ec)) {
    out.push_back({root.filename().string(), root});
    return;
  }
  if (depth >= 2) return;
  std::vector<fs::path> subs;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory(ec)) subs.push_back(e.path());
  std::sort(subs.begin(), subs.end());
  for (const auto& s : subs) collect_cases(s, depth + 1, out);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// |a - b| <= atol + rtol * |b| for floats (NaN equals NaN, infinities must match); exact otherwise.
Status compare(const Tensor& got, const Tensor& want, const Tolerance& tol, const std::string& what) {
  if (got.kind() != want.kind() || (!want.is_tensor() && got.items().size() != want.items().size()))
    return make_error(what + " is " + runtime::describe_value(got) + ", expected " + runtime::describe_value(want));
  if (!want.is_tensor()) {
    for (size_t i = 0; i < want.items().size(); ++i)
      RETURN_IF_ERROR(compare(got.items()[i], want.items()[i], tol, what + " item " + std::to_string(i)));
    return Status::ok();
  }
  if (got.dtype() != want.dtype())
    return make_error(what + " is " + std::string(dtype_name(got.dtype())) + ", expected " + std::string(dtype_name(want.dtype())));
  if (got.shape() != want.shape())
    return make_error(what + " has shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape()));
  const bool fp = is_float(want.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.get(i), b = want.get(i);
    bool ok;
    if (!fp) {
      ok = a == b;
    } else if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
    } else {
      ok = std::fabs(a - b) <= tol.atol + tol.rtol * std::fabs(b);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return Status::ok();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lld of %lld elements differ; first at %lld: got %.9g, expected %.9g",
                static_cast<long long>(bad), static_cast<long long>(want.numel()), static_cast<long long>(first),
                got.get(first), want.get(first));
  return make_error(what + ": " + buf);
}

// Sorted test_data_set_N folders, and input_K.pb / output_K.pb files by K.
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) != 0 || n.size() <= prefix.size() + suffix.size() ||
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stol(digits), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [k, p] : found) out.push_back(p);
  return out;
}

// --roundtrip: where the saved copies go, and what counts as a format's refusal (the writer says
// the graph is "not exportable to ..." because the format cannot express an op) rather than a bug.
struct RoundTrip {
  std::string ext;  // "onnx", "tsr"; empty: no round trip
  fs::path dir;
};

// A case the format refuses to write: reported as skipped, with the writer's reason.
struct Refused {
  std::string reason;
};

// Saves `graph` as DIR/<case>.EXT and loads it back. A writer refusal ("not exportable to ...")
// comes back in `refused`, anything else as an error.
Expected<ir::Graph> round_trip(ir::Graph graph, const Case& c, const RoundTrip& rt, std::optional<Refused>& refused) {
  const std::string path = (rt.dir / (c.name + "." + rt.ext)).string();
  Status saved = formats::save_graph_file(graph, path);
  if (!saved.is_ok()) {
    if (saved.error().message.rfind("not exportable to", 0) == 0) {
      refused = Refused{saved.error().message};
      return graph;
    }
    return make_error("saving as ." + rt.ext + ": " + saved.error().to_string());
  }
  auto loaded = formats::load_graph_file(path);
  std::error_code ec;
  fs::remove(path, ec);
  if (!loaded) return make_error("loading the saved ." + rt.ext + ": " + loaded.error().to_string());
  return std::move(loaded).value();
}

// ONNX 1.12's bfloat16 cases store their data as UINT16 tensors (the bit patterns): read them as
// bf16 where the model says bf16.
Tensor bf16_bits(const Tensor& t, DType declared) {
  if (t.dtype() != DType::kU16 || declared != DType::kBF16) return t;
  Tensor out(DType::kBF16, t.shape());
  std::memcpy(out.raw_data(), t.contiguous().raw_data(), static_cast<size_t>(t.nbytes()));
  return out;
}

Status run_case(const Case& c, const ops::OpRegistry& registry, const Execute& execute, const Tolerance& tol,
                const RoundTrip& rt, std::optional<Refused>& refused) {
  TRY(ir::Graph graph, formats::import_onnx_file((c.dir / "model.onnx").string(), registry));
  if (!rt.ext.empty()) {
    TRY(graph, round_trip(std::move(graph), c, rt, refused));
    if (refused) return Status::ok();
  }
  const auto sets = numbered(c.dir, "test_data_set_", "");
  if (sets.empty()) return make_error("no test_data_set_N folder");
  for (const fs::path& set : sets) {
    const std::string set_name = set.filename().string();
    runtime::Feeds feeds;
    const auto inputs = numbered(set, "input_", ".pb");
    for (size_t k = 0; k < inputs.size(); ++k) {
      // The file's proto follows the input's type (TensorProto, SequenceProto, OptionalProto).
      const ir::TensorType declared =
          k < graph.inputs().size() ? graph.value(graph.inputs()[k]).type : ir::TensorType::unranked(DType::kF32);
      TRY(auto named, formats::read_onnx_value_file(inputs[k].string(), declared));
      std::string name = named.first;
      if (name.empty()) {
        if (k >= graph.inputs().size()) return make_error(set_name + ": more input files than graph inputs");
        name = graph.value(graph.inputs()[k]).name;
      }
      feeds[name] = bf16_bits(named.second, declared.dtype);
    }
    auto outs = execute(graph, feeds);
    if (!outs) return make_error(set_name + ": " + outs.error().to_string());
    const auto expected = numbered(set, "output_", ".pb");
    if (expected.size() != outs->size())
      return make_error(set_name + ": the graph produced " + std::to_string(outs->size()) + " outputs, the test expects " +
                        std::to_string(expected.size()));
    for (size_t k = 0; k < expected.size(); ++k) {
      // The produced value's kind says which proto the file holds (a graph loaded from .json has
      // no output types before inference).
      const Tensor& got = (*outs)[k];
      const ir::TensorType declared = ir::TensorType::of_value(got);
      TRY(auto want, formats::read_onnx_value_file(expected[k].string(), declared));
      const std::string what = set_name + ": output " + std::to_string(k) +
                               (want.first.empty() ? "" : " '" + want.first + "'");
      RETURN_IF_ERROR(compare((*outs)[k], bf16_bits(want.second, (*outs)[k].dtype()), tol, what));
    }
  }
  return Status::ok();
}

int run_main(int argc, char** argv) {
  CLI::App app{"Runs ONNX backend test cases through the ONNX importer and a Tessera engine.",
               "tessera-onnx-conformance"};
  std::vector<std::string> roots;
  std::string filter_path, engine_name = "reference", only, roundtrip_ext;
  bool verbose = false, check_skips = false;
  app.add_option("roots", roots, "data roots: case folders or folders of them (node/, simple/, ...)")->required();
  app.add_option("--filter", filter_path, "filter file: skipped cases grouped by reason");
  app.add_option("--engine", engine_name, "engine that executes the graphs: reference | compiled");
  app.add_option("--only", only, "run only cases whose name contains this substring");
  app.add_option("--roundtrip", roundtrip_ext,
                 "save each imported graph as case.EXT (formats::save_graph_file) and load it back before running");
  app.add_flag("--verbose", verbose, "print every case, skipped ones with their reason");
  app.add_flag("--check-skips", check_skips, "also run skipped cases and list those that pass (stale filter entries)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const ops::OpRegistry registry = ops::make_default_registry();
  auto execute = make_engine(engine_name, registry);
  if (!execute) {
    std::cerr << "tessera-onnx-conformance: " << execute.error().to_string() << "\n";
    return 2;
  }
  auto filters = read_filters(filter_path);
  if (!filters) {
    std::cerr << "tessera-onnx-conformance: " << filters.error().to_string() << "\n";
    return 2;
  }
  RoundTrip rt{roundtrip_ext, {}};
  if (!rt.ext.empty()) {
    if (rt.ext[0] == '.') rt.ext.erase(0, 1);
    std::error_code ec;
    rt.dir = fs::temp_directory_path(ec) / ("tessera-roundtrip-" + std::to_string(::getpid()));
    fs::create_directories(rt.dir, ec);
    if (ec) {
      std::cerr << "tessera-onnx-conformance: cannot create " << rt.dir << ": " << ec.message() << "\n";
      return 2;
    }
  }
  std::vector<Case> cases;
  for (const std::string& r : roots) {
    if (!fs::is_directory(r)) {
      std::cerr << "tessera-onnx-conformance: " << r << " is not a folder\n";
      return 2;
    }
    collect_cases(r, 0, cases);
  }
  int total = 0, passed = 0, skipped = 0, failed = 0, refused_count = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const Case& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    ++total;
    if (const std::string* reason = filters->skip_reason(c.name)) {
      ++skipped;
      if (verbose) std::cout << "SKIP " << c.name << " (" << *reason << ")\n";
      std::optional<Refused> refused;
      if (check_skips && run_case(c, registry, *execute, filters->tolerance(c.name), rt, refused).is_ok() && !refused)
        std::cout << "STALE " << c.name << " passes but is skipped (" << *reason << ")\n";
      continue;
    }
    std::optional<Refused> refused;
    Status st = run_case(c, registry, *execute, filters->tolerance(c.name), rt, refused);
    if (st.is_ok() && refused) {
      ++skipped;
      ++refused_count;
      if (verbose) std::cout << "SKIP " << c.name << " (." << rt.ext << " refuses it: " << refused->reason << ")\n";
    } else if (st.is_ok()) {
      ++passed;
      if (verbose) std::cout << "PASS " << c.name << "\n";
    } else {
      ++failed;
      std::cout << "FAIL " << c.name << ": " << first_line(st.error().to_string()) << "\n";
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", total ? 100.0 * passed / total : 0.0);
  std::cout << "onnx conformance" << (rt.ext.empty() ? "" : " (round trip through ." + rt.ext + ")") << ": " << passed
            << "/" << total << " passed (" << pct << "%), " << skipped - refused_count << " skipped by filter, ";
  if (!rt.ext.empty()) std::cout << refused_count << " refused by ." << rt.ext << ", ";
  std::cout << failed << " failed";
  if (verbose) std::cout << " [" << static_cast<int>(secs + 0.5) << " s, engine " << engine_name << "]";
  std::cout << "\n";
  if (!rt.ext.empty()) {
    std::error_code ec;
    fs::remove_all(rt.dir, ec);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::conformance

int main(int argc, char** argv) { return tessera::conformance::run_main(argc, argv); }
