// A layout computed off the UI thread: LayoutJob runs a layout function (Graphviz by default) on a
// worker of Qt's global thread pool, on its own copy of the boxes and edges, and hands the result
// back on the thread the job lives on (the UI thread). Requests are numbered (generations): a
// newer request supersedes older ones, cancel() drops the current one, and only the result of the
// latest, uncancelled request is ever delivered.
//
// Usage:
//   LayoutJob job;                                    // GraphvizLayout by default
//   connect(&job, &LayoutJob::finished, this, [&](quint64 generation, const Layout& layout) {
//     move_items_to(layout);                          // on the UI thread; latest request only
//   });
//   const quint64 g = job.start(boxes, edges);        // returns at once
//   job.cancel();                                     // ... or drop it: no signal for g
//
// Lifetime: the job may be destroyed while a worker still runs. It never waits for the worker
// (dot on a big graph cannot be interrupted): the worker keeps what it needs alive itself and its
// result is dropped. QCoreApplication waits for the global thread pool when it is destroyed, so
// no worker outlives the application.
#pragma once

#include <QMetaType>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

#include "engine/core/status.h"
#include "studio/graph_layout.h"

namespace tessera::studio {

// Lays out boxes and edges; runs on a worker thread, so it must be safe to call from one and must
// not refer to anything that can die before it returns (capture by value).
using LayoutFunction = std::function<Expected<Layout>(const std::vector<LayoutBox>& boxes,
                                                      const std::vector<LayoutEdge>& edges)>;

// GraphvizLayout with default options, as a LayoutFunction.
LayoutFunction graphviz_layout_function();

class LayoutJob : public QObject {
  Q_OBJECT

 public:
  explicit LayoutJob(LayoutFunction compute = graphviz_layout_function(),
                     QObject* parent = nullptr);
  // Drops any pending result; never blocks (see Lifetime above).
  ~LayoutJob() override;

  // Starts laying out copies of `boxes` and `edges` on a worker thread and returns at once with
  // the request's generation (1, 2, ...: increasing). Supersedes every earlier request: their
  // results are dropped, and one that has not started yet never runs.
  quint64 start(std::vector<LayoutBox> boxes, std::vector<LayoutEdge> edges);
  // Drops the result of the current request, if any; finished/failed will not be emitted for it.
  void cancel();

  quint64 generation() const { return generation_; }  // of the latest start(); 0 before any
  bool is_running() const { return running_; }        // the latest request is still pending

 Q_SIGNALS:
  // The latest request's layout (one entry per box and per edge). Emitted on this job's thread.
  void finished(quint64 generation, const tessera::studio::Layout& layout);
  // The latest request's layout function returned an error (or threw): `message` says why.
  void failed(quint64 generation, const QString& message);

 private:
  struct Shared;
  void deliver(quint64 generation, const Expected<Layout>& result);

  LayoutFunction compute_;
  std::shared_ptr<Shared> shared_;  // also held by running workers
  quint64 generation_ = 0;
  bool running_ = false;
};

}  // namespace tessera::studio

Q_DECLARE_METATYPE(tessera::studio::Layout)
