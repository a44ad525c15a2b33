// Not a test: the profiler timeline at scale (insight/timeline/README.md). Builds a synthetic
// trace (default 10,000,000 spans over 8 threads, steps enclosing kernels), prints build time and
// memory (bytes per span), then frame times (mean, p99, max) of the view in a headless ImGui
// context (fonts built, NewFrame/draw/Render, no GL) at three zoom levels, with draw-list vertex
// counts and the items/folds drawn. Then loading: DB_SPANS spans (default 1,000,000) recorded with
// insight::Recorder into a temporary database, read back with load_run, exported as a Chrome trace
// and read back with load_chrome_trace.
// Usage: timeline_bench [SPANS] [FRAMES_PER_LEVEL] [DB_SPANS]
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <filesystem>

#include "insight/query.h"
#include "insight/recorder.h"
#include "insight/timeline/loaders.h"
#include "insight/timeline/synthetic.h"
#include "insight/timeline/view.h"

namespace {

using namespace tessera::insight::timeline;
using Clock = std::chrono::steady_clock;

double rss_mib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t spans = argc > 1 ? std::atoll(argv[1]) : 10'000'000;
  const int frames = argc > 2 ? std::atoi(argv[2]) : 100;
  const double rss0 = rss_mib();
  const auto b0 = Clock::now();
  auto model = std::make_shared<TimelineModel>(make_synthetic_model(spans, 8, 42));
  const double build_s = std::chrono::duration<double>(Clock::now() - b0).count();
  const double rss1 = rss_mib();
  std::printf("spans: %zu in %zu lanes, built in %.2f s (%.0f ns/span)\n", model->span_count(),
              model->lanes().size(), build_s,
              build_s * 1e9 / static_cast<double>(model->span_count()));
  std::printf(
      "memory: tracks %.1f MiB = %.1f bytes/span; strings %zu; resident +%.1f MiB after build "
      "(%.1f bytes/span)\n",
      static_cast<double>(model->span_bytes()) / (1024.0 * 1024.0),
      static_cast<double>(model->span_bytes()) / static_cast<double>(model->span_count()),
      model->strings().size(), rss1 - rss0,
      (rss1 - rss0) * 1024.0 * 1024.0 / static_cast<double>(model->span_count()));

  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(1280, 800);
  io.DeltaTime = 1.0f / 60;
  unsigned char* px = nullptr;
  int fw = 0, fh = 0;
  io.Fonts->GetTexDataAsRGBA32(&px, &fw, &fh);
  io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(1));
  io.MousePos = ImVec2(640, 150);  // over the lanes: the hover tooltip is part of the frame
  TimelineView view(model);

  const double a = static_cast<double>(model->t_min()),
               w = static_cast<double>(model->t_max() - model->t_min());
  const struct {
    const char* name;
    double fraction;
  } kLevels[] = {{"whole run", 1.0}, {"1%", 0.01}, {"0.01%", 0.0001}};
  std::printf("window of the whole run: %s\n", format_duration(w).c_str());
  for (const auto& level : kLevels) {
    std::vector<double> ms;
    int64_t vtx = 0, items = 0, folds = 0;
    for (int f = 0; f < frames + 3; ++f) {
      const double width = w * level.fraction;
      const double at = a + (w - width) * (0.3 + 0.002 * (f % 100));  // pan a little each frame
      view.zoom_to(at, at + width);
      const auto t0 = Clock::now();
      ImGui::NewFrame();
      view.draw("Timeline");
      ImGui::Render();
      const double dt = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (f < 3) continue;  // warm-up (and the first stats table pass over every span)
      ms.push_back(dt);
      vtx = std::max<int64_t>(vtx, ImGui::GetDrawData()->TotalVtxCount);
      items = std::max<int64_t>(items, view.last_frame().items);
      folds = std::max<int64_t>(folds, view.last_frame().folds);
    }
    std::sort(ms.begin(), ms.end());
    double sum = 0;
    for (double v : ms) sum += v;
    const size_t p99 =
        std::min(ms.size() - 1, static_cast<size_t>(static_cast<double>(ms.size()) * 0.99));
    std::printf(
        "frame %-9s (%s): mean %.3f ms  p99 %.3f ms  max %.3f ms | up to %lld vertices, %lld items "
        "(%lld folds)\n",
        level.name, format_duration(w * level.fraction).c_str(),
        sum / static_cast<double>(ms.size()), ms[p99], ms.back(), static_cast<long long>(vtx),
        static_cast<long long>(items), static_cast<long long>(folds));
  }
  // Search over every span (the search box's cost per edit).
  const auto s0 = Clock::now();
  view.search("conv_1");
  std::printf("search \"conv_1\": %zu matches in %.1f ms\n", view.matches().size(),
              std::chrono::duration<double, std::milli>(Clock::now() - s0).count());
  const auto st0 = Clock::now();
  auto stats = model->stats(GroupBy::kOp, INT64_MIN, INT64_MAX);
  std::printf("statistics by op over every span: %zu groups in %.1f ms\n", stats.size(),
              std::chrono::duration<double, std::milli>(Clock::now() - st0).count());
  ImGui::DestroyContext();
  model.reset();

  const int64_t db_spans = argc > 3 ? std::atoll(argv[3]) : 1'000'000;
  if (db_spans <= 0) return 0;
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("tessera_timeline_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "bench.db").string();
  {
    auto rec = tessera::insight::Recorder::open(db);
    if (!rec) return std::fprintf(stderr, "%s\n", rec.error().to_string().c_str()), 1;
    tessera::insight::RunInfo info;
    info.name = "bench", info.kind = "bench", info.command = "timeline_bench";
    if (!(*rec)->start_run(info)) return 1;
    tessera::observe::Span s;
    s.device = "cpu", s.detail = "ref";
    for (int64_t i = 0; i < db_spans; ++i) {
      s.kind = i % 100 == 0 ? tessera::observe::Span::Kind::kStep
                            : tessera::observe::Span::Kind::kKernel;
      s.name = "node" + std::to_string(i % 50), s.op = i % 100 == 0 ? "" : "Conv";
      s.node = static_cast<int32_t>(i % 50), s.thread = static_cast<int32_t>(i % 2);
      s.start_ns = 1000 + i * 1000, s.end_ns = s.start_ns + 800;
      (*rec)->on_span(s);
      if (i % 20000 == 19999 && !(*rec)->flush()) return 1;
    }
    if (!(*rec)->finish_run(tessera::insight::RunStatus::kFinished)) return 1;
  }
  const auto l0 = Clock::now();
  auto loaded = load_run(db, "last");
  const double load_s = std::chrono::duration<double>(Clock::now() - l0).count();
  if (!loaded) return std::fprintf(stderr, "%s\n", loaded.error().to_string().c_str()), 1;
  std::printf("load_run: %zu spans from the database in %.2f s (%.0f ns/span)\n",
              loaded->model->span_count(), load_s,
              load_s * 1e9 / static_cast<double>(loaded->model->span_count()));
  {
    auto opened = tessera::insight::Database::open(db);
    if (!opened) return 1;
    const std::string trace = (dir / "trace.json").string();
    if (!tessera::insight::export_chrome_trace(*opened, 1, trace)) return 1;
    const auto c0 = Clock::now();
    auto chrome = load_chrome_trace(trace);
    const double chrome_s = std::chrono::duration<double>(Clock::now() - c0).count();
    if (!chrome) return std::fprintf(stderr, "%s\n", chrome.error().to_string().c_str()), 1;
    std::printf("load_chrome_trace: %zu spans from %.0f MB in %.2f s (%.0f MB/s)\n",
                chrome->model->span_count(), static_cast<double>(fs::file_size(trace)) / 1e6,
                chrome_s, static_cast<double>(fs::file_size(trace)) / 1e6 / chrome_s);
  }
  fs::remove_all(dir);
  return 0;
}
