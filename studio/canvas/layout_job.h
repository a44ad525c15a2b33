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
// Lifetime: the job may be destroyed while a worker still runs. It never waits for the worker: the
// worker keeps what it needs alive itself and its result is dropped. The workers run on a pool of
// their own (layout_thread_pool(), never Qt's global pool: Qt 6.4 converts and scales images on
// the global pool and waits for it on the UI thread, so a long layout there froze the window).
// The pool is a child of the application, which waits for it when destroyed.
//
// Graphviz cannot be interrupted inside the process, so graphviz_layout_function() runs dot in a
// child process (layout_in_child_process): killed as soon as its result is no longer wanted
// (layout_cancelled()) or when it runs past its budget, so a superseded or hopeless layout costs
// no CPU after that.
#pragma once

#include <QMetaType>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

#include "engine/core/status.h"
#include "studio/canvas/graph_layout.h"

class QThreadPool;

namespace tessera::studio {

// Lays out boxes and edges; runs on a worker thread, so it must be safe to call from one and must
// not refer to anything that can die before it returns (capture by value).
using LayoutFunction = std::function<Expected<Layout>(const std::vector<LayoutBox>& boxes,
                                                      const std::vector<LayoutEdge>& edges)>;

// GraphvizLayout with default options, as a LayoutFunction, run in a child process that is killed
// when cancelled or after `budget_seconds` (then it fails with "Graphviz took more than ... s").
LayoutFunction graphviz_layout_function(double budget_seconds = 2.5);

// Runs `compute` in a forked child process and returns its result; the child is killed (SIGKILL)
// and an error returned when layout_cancelled() turns true on the calling thread or after
// `budget_seconds`. The child touches nothing but `compute` and the pipe, and leaves with _exit.
Expected<Layout> layout_in_child_process(const std::function<Expected<Layout>()>& compute,
                                         double budget_seconds);

// True on a layout worker thread once the request it runs is superseded or cancelled (or its job
// destroyed): long layout functions poll it and give up. False on any other thread.
bool layout_cancelled();

// The pool LayoutJob's workers run on (2 threads).
QThreadPool* layout_thread_pool();

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
