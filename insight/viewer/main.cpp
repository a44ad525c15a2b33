// tessera-insight: the standalone profiler timeline viewer. Opens a Chrome trace file or a run of
// the insight store in a GLFW window (ImGui's GLFW and OpenGL3 backends, GL 3.3 core), can write a
// screenshot and exit (--screenshot), and times frames of a synthetic trace (--bench-spans).
//
//   tessera-insight trace.json
//   tessera-insight [--db PATH] [--run REF]          REF: an id, a name or "last" (default)
//   tessera-insight trace.json --screenshot out.png [--frames N]
//   tessera-insight --bench-spans 10000000 --frames 200
#include <CLI/CLI.hpp>
#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "insight/database.h"
#include "insight/timeline/loaders.h"
#include "insight/timeline/synthetic.h"
#include "insight/timeline/view.h"

namespace {

using namespace tessera::insight::timeline;
using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool write_png(const std::string& path, int w, int h) {
  std::vector<unsigned char> px(static_cast<size_t>(w) * h * 4), flip(px.size());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  const size_t row = static_cast<size_t>(w) * 4;
  for (int y = 0; y < h; ++y)  // GL's origin is bottom-left
    std::copy(px.begin() + static_cast<long>((h - 1 - y) * row),
              px.begin() + static_cast<long>((h - y) * row),
              flip.begin() + static_cast<long>(y * row));
  return stbi_write_png(path.c_str(), w, h, 4, flip.data(), static_cast<int>(row)) != 0;
}

void print_times(const char* what, std::vector<double>& ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  const size_t p99 =
      std::min(ms.size() - 1, static_cast<size_t>(static_cast<double>(ms.size()) * 0.99));
  std::printf("gl frame %-12s mean %.2f ms  p99 %.2f ms  max %.2f ms  (%zu frames)\n", what,
              sum / static_cast<double>(ms.size()), ms[p99], ms.back(), ms.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera-insight: the profiler timeline of a recorded run or a Chrome trace"};
  std::string trace, db, run = "last", screenshot;
  int frames = 0;
  int64_t bench_spans = 0;
  app.add_option("trace", trace,
                 "A Chrome trace file (tessera runs export-trace, Perfetto/chrome://tracing JSON)");
  app.add_option(
      "--db", db,
      "The insight database (default: $TESSERA_DB, else the XDG data dir, as `tessera runs`)");
  app.add_option("--run", run, "The run: an id, a name (its newest run) or \"last\"");
  app.add_option("--screenshot", screenshot, "Render --frames frames, write this PNG and exit");
  app.add_option("--frames", frames,
                 "Frames to render before the screenshot or for --bench-spans (default 3 / 200)");
  app.add_option("--bench-spans", bench_spans,
                 "Time frames of a synthetic trace of this many spans and exit");
  CLI11_PARSE(app, argc, argv);
  if (frames <= 0) frames = bench_spans > 0 ? 200 : 3;
  if (db.empty())
    db = tessera::insight::default_database_path(env("TESSERA_DB"), env("XDG_DATA_HOME"),
                                                 env("HOME"));

  std::shared_ptr<const TimelineModel> model;
  std::string title = "Tessera Insight", message;
  bool load_failed = false;
  if (bench_spans > 0) {
    const auto t0 = Clock::now();
    model = std::make_shared<TimelineModel>(make_synthetic_model(bench_spans, 8, 42));
    std::printf("built %zu spans in %.2f s\n", model->span_count(),
                std::chrono::duration<double>(Clock::now() - t0).count());
    title = "synthetic " + thousands(static_cast<int64_t>(model->span_count())) + " spans";
  } else {
    auto loaded = trace.empty() ? load_run(db, run) : load_chrome_trace(trace);
    if (!loaded) {
      message = loaded.error().to_string();
      load_failed = true;
      std::cerr << "tessera-insight: " << message << "\n";
    } else {
      model = loaded->model;
      title = loaded->title;
      for (const std::string& w : loaded->warnings) {
        message += (message.empty() ? "" : "\n") + w;
        std::cerr << "tessera-insight: warning: " << w << "\n";
      }
    }
  }

  glfwSetErrorCallback([](int code, const char* what) {
    std::fprintf(stderr, "tessera-insight: GLFW error %d: %s\n", code, what);
  });
  if (!glfwInit()) {
    std::cerr << "tessera-insight: cannot open a window (no display? run it under xvfb-run for "
                 "screenshots)\n";
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GL_TRUE);
  // 1280x800, or the screen's work area less the window frame when that is smaller: on a 1280x720
  // screen the statistics table and the status line were below its edge.
  int width = 1280, height = 800;
  if (GLFWmonitor* monitor = glfwGetPrimaryMonitor()) {
    int x = 0, y = 0, w = 0, h = 0;
    glfwGetMonitorWorkarea(monitor, &x, &y, &w, &h);
    if (w > 0 && h > 0) {
      width = std::max(640, std::min(width, w - 16));
      height = std::max(400, std::min(height, h - 48));
    }
  }
  GLFWwindow* window =
      glfwCreateWindow(width, height, ("Tessera Insight - " + title).c_str(), nullptr, nullptr);
  if (!window) {
    std::cerr << "tessera-insight: cannot create an OpenGL 3.3 window\n";
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(screenshot.empty() && bench_spans == 0 ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  TimelineView view(model);
  view.set_message(message);
  int rc = 0;
  std::vector<double> times[3];
  const char* const kLevels[] = {"whole run", "1%", "0.01%"};
  for (int frame = 0; !glfwWindowShouldClose(window); ++frame) {
    const auto f0 = Clock::now();
    int level = 0;
    if (bench_spans > 0) {  // thirds of the frames at each zoom, panning a little each frame
      level = std::min(2, frame * 3 / frames);
      const double a = static_cast<double>(model->t_min()),
                   w = static_cast<double>(model->t_max() - model->t_min());
      const double width = level == 0 ? w : level == 1 ? w * 0.01 : w * 0.0001;
      const double at = a + (w - width) * (0.3 + 0.001 * (frame % 50));
      view.zoom_to(at, at + width);
    }
    if (screenshot.empty() && bench_spans == 0 && frame > 2)
      glfwWaitEventsTimeout(
          0.25);  // interactive: draw on input (and 4x a second), not in a busy loop
    else
      glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    view.draw("Timeline");
    if (auto clicked = view.take_clicked())
      std::printf(
          "clicked: %s op=%s node=%d device=%s %s\n", clicked->name.c_str(), clicked->op.c_str(),
          clicked->node, clicked->device.c_str(),
          format_duration(static_cast<double>(clicked->end_ns - clicked->start_ns)).c_str());
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.10f, 0.10f, 0.12f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!screenshot.empty() && frame + 1 >= frames) {
      if (!write_png(screenshot, fw, fh)) {
        std::cerr << "tessera-insight: cannot write " << screenshot << "\n";
        rc = 1;
      } else {
        std::printf("wrote %s (%dx%d)\n", screenshot.c_str(), fw, fh);
      }
      if (load_failed) rc = 1;
      break;
    }
    if (bench_spans > 0) {
      glFinish();
      if (frame > 2)
        times[level].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - f0).count());
      if (frame + 1 >= frames) break;
    }
    glfwSwapBuffers(window);
  }
  for (int l = 0; l < 3; ++l) print_times(kLevels[l], times[l]);
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
