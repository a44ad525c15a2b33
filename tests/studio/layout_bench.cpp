// studio_layout_bench: how long laying out and drawing big graphs takes (not a test; figures in
// studio/README.md, Benchmark). For ResNet-like graphs of 100, 1,000 and 10,000 nodes (a chain in
// which every third node also adds the output from three steps back) it times LayeredLayout and
// GraphvizLayout (default options, polyline edges, and full-quality x placement up to 2,000
// nodes) on boxes of the sizes the canvas uses; for the
// size of 1,000 nodes or more it also opens the graph as the app does (Document, GraphScene,
// GraphView): load + types, the scene build with its layered layout, the wait for the Graphviz
// layout and the longest time the event loop was blocked meanwhile, and repaints of a 1280x800
// view rendered into a QImage.
//
//   QT_QPA_PLATFORM=offscreen build/s2/studio/studio_layout_bench [--sizes 100,1000,10000]
//       [--graphviz-max 10000] [--frames 20]
#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_layout.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/canvas/graphviz_layout.h"

using namespace tessera::studio;  // NOLINT: a benchmark's main

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Boxes sized like the canvas's (120 to 180 wide, 40 to 64 high); box i feeds i + 1, and every
// third box i also feeds i + 3 (the skip of a residual block).
void resnet_boxes(int n, std::vector<LayoutBox>* boxes, std::vector<LayoutEdge>* edges) {
  for (int i = 0; i < n; ++i) boxes->push_back({120.0 + 20 * (i % 4), 40.0 + 12 * (i % 3)});
  for (int i = 0; i + 1 < n; ++i) edges->push_back({i, i + 1});
  for (int i = 0; i + 3 < n; i += 3) edges->push_back({i, i + 3});
}

// The same graph as IR text: node i is Relu, or Add(previous, output of node i - 2) when
// i % 3 == 2.
QByteArray resnet_tir(int n) {
  QByteArray t = "graph \"bench\" {\n  input %0 \"x\" : f32[N, 16]\n";
  for (int i = 0; i < n; ++i) {
    const QByteArray out = "%" + QByteArray::number(i + 1) + " : f32[N, 16]";
    if (i % 3 == 2)
      t += "  #" + QByteArray::number(i) + " = Add(%" + QByteArray::number(i) + ", %" +
           QByteArray::number(i - 1) + ") -> (" + out + ")\n";
    else
      t += "  #" + QByteArray::number(i) + " = Relu(%" + QByteArray::number(i) + ") -> (" + out +
           ")\n";
  }
  t += "  output %" + QByteArray::number(n) + "\n}\n";
  return t;
}

struct FrameStats {
  double first = 0, median = 0, max = 0;
};

FrameStats time_frames(GraphView& view, int frames) {
  QImage image(view.viewport()->size(), QImage::Format_ARGB32_Premultiplied);
  std::vector<double> times;
  for (int f = 0; f < frames + 1; ++f) {
    // Panning: the view moves 40 pixels down each frame, then the viewport paints as on screen
    // (its paintEvent, where a big graph zoomed out is drawn as a sketch).
    view.verticalScrollBar()->setValue(view.verticalScrollBar()->value() + (f % 2 ? 40 : -40));
    const auto t0 = Clock::now();
    QPainter painter(&image);
    view.viewport()->render(&painter);
    painter.end();
    times.push_back(ms_since(t0));
  }
  FrameStats s;
  s.first = times.front();  // builds the scene's item index
  times.erase(times.begin());
  std::sort(times.begin(), times.end());
  s.median = times[times.size() / 2];
  s.max = times.back();
  return s;
}

// Opens a ResNet-like graph of n nodes the way the app does (Document, GraphScene with its
// default options, a 1280x800 GraphView), waits for the Graphviz layout when there is one while a
// 5 ms timer measures the longest time the event loop was blocked, then times repaints. Prints one
// row; false when the graph cannot be opened.
bool open_graph(const tessera::ops::OpRegistry& registry, const QTemporaryDir& dir, int n,
                int frames) {
  const QString path = dir.filePath(QStringLiteral("bench%1.tir").arg(n));
  {
    QFile f(path);
    const QByteArray text = resnet_tir(n);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) {
      std::fprintf(stderr, "cannot write %s\n", qPrintable(path));
      return false;
    }
  }
  Document doc(registry);
  Clock::time_point t_reset, t_built;
  QObject::connect(&doc, &Document::graph_reset, [&] { t_reset = Clock::now(); });
  GraphScene scene(doc);
  QObject::connect(&scene, &GraphScene::rebuilt, [&] { t_built = Clock::now(); });
  GraphView view(&scene);
  view.resize(1280, 800);
  view.show();
  QCoreApplication::processEvents();
  const auto t0 = Clock::now();
  const tessera::Status st = doc.load(path.toStdString());
  if (!st) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return false;
  }
  const double load_ms = std::chrono::duration<double, std::milli>(t_reset - t0).count();
  const double scene_ms = std::chrono::duration<double, std::milli>(t_built - t_reset).count();
  const int items = static_cast<int>(scene.items().size());

  std::string wait = "-", stall = "-";
  if (scene.is_refining()) {
    QEventLoop loop;
    QTimer tick;
    Clock::time_point last = Clock::now();
    double max_gap = 0;
    QObject::connect(&tick, &QTimer::timeout, [&] {
      const Clock::time_point now = Clock::now();
      max_gap = std::max(max_gap, std::chrono::duration<double, std::milli>(now - last).count());
      last = now;
    });
    QObject::connect(&scene, &GraphScene::layout_changed, &loop, &QEventLoop::quit);
    QObject::connect(&scene, &GraphScene::layout_note_changed, &loop, &QEventLoop::quit);
    const auto w0 = Clock::now();
    tick.start(5);
    last = Clock::now();
    loop.exec();
    QCoreApplication::processEvents();  // one more tick after the layout was applied
    const Clock::time_point now = Clock::now();
    max_gap = std::max(max_gap, std::chrono::duration<double, std::milli>(now - last).count());
    wait = std::to_string(static_cast<long>(ms_since(w0)));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", max_gap);
    stall = buf;
  }
  view.overview();
  const FrameStats top = time_frames(view, frames);
  view.fit();
  const FrameStats fit = time_frames(view, frames);
  std::printf("%8d %12.0f %10.0f %8d %13s %12s %14.1f %14.1f\n", n, load_ms, scene_ms, items,
              wait.c_str(), stall.c_str(), top.median, fit.median);
  std::printf("         layout: %s; frames: first %.0f / %.0f ms, max %.0f / %.0f ms\n",
              qPrintable(scene.layout_note()), top.first, fit.first, top.max, fit.max);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QCommandLineParser parser;
  parser.addHelpOption();
  const QCommandLineOption sizes_opt("sizes", "graph sizes (nodes), comma separated", "LIST",
                                     "100,1000,10000");
  const QCommandLineOption gv_max_opt("graphviz-max", "largest size given to Graphviz", "N",
                                      "10000");
  const QCommandLineOption frames_opt("frames", "repaints timed per view", "N", "20");
  parser.addOptions({sizes_opt, gv_max_opt, frames_opt});
  parser.process(app);
  std::vector<int> sizes;
  for (const QString& s : parser.value(sizes_opt).split(',')) sizes.push_back(s.toInt());
  const int gv_max = parser.value(gv_max_opt).toInt();
  const int frames = std::max(1, parser.value(frames_opt).toInt());

  std::printf("%8s %8s %12s %14s %16s %14s\n", "nodes", "edges", "layered ms", "graphviz ms",
              "gv polyline ms", "gv full ms");
  for (int n : sizes) {
    std::vector<LayoutBox> boxes;
    std::vector<LayoutEdge> edges;
    resnet_boxes(n, &boxes, &edges);
    auto t0 = Clock::now();
    const Layout layered = LayeredLayout().compute(boxes, edges);
    const double layered_ms = ms_since(t0);
    std::string gv = "skipped", gv_poly = "skipped", gv_full = "skipped";
    if (n <= gv_max) {
      t0 = Clock::now();
      const tessera::Expected<Layout> l = GraphvizLayout().compute(boxes, edges);
      gv = l ? std::to_string(static_cast<long>(ms_since(t0))) : "failed";
      GraphvizLayoutOptions poly;
      poly.curved = false;
      t0 = Clock::now();
      const tessera::Expected<Layout> p = GraphvizLayout(poly).compute(boxes, edges);
      gv_poly = p ? std::to_string(static_cast<long>(ms_since(t0))) : "failed";
    }
    if (n <= std::min(gv_max, 2000)) {  // full network simplex: 5 s at 2,000 nodes, minutes beyond
      GraphvizLayoutOptions full;
      full.fast_above = n;
      t0 = Clock::now();
      const tessera::Expected<Layout> f = GraphvizLayout(full).compute(boxes, edges);
      gv_full = f ? std::to_string(static_cast<long>(ms_since(t0))) : "failed";
    }
    std::printf("%8d %8zu %12.1f %14s %16s %14s\n", n, edges.size(), layered_ms, gv.c_str(),
                gv_poly.c_str(), gv_full.c_str());
    (void)layered;
  }

  // Opening graphs in the app's scene and view.
  std::printf("\n%8s %12s %10s %8s %13s %12s %14s %14s\n", "nodes", "load+types", "scene", "items",
              "graphviz", "max UI stall", "frame top", "frame fit");
  std::printf("%8s %12s %10s %8s %13s %12s %14s %14s\n", "", "ms", "ms", "", "wait ms", "ms",
              "median ms", "median ms");
  const tessera::ops::OpRegistry registry = tessera::ops::make_default_registry();
  QTemporaryDir dir;
  for (int n : sizes) {
    if (n < 1000) continue;
    if (!open_graph(registry, dir, n, frames)) return 1;
  }
  return 0;
}
