// LayoutJob: workers on Qt's global thread pool, a shared state that outlives the job, and results
// posted back to the job's thread.
#include "studio/layout_job.h"

#include <QMetaObject>
#include <QThreadPool>
#include <atomic>
#include <exception>
#include <mutex>
#include <utility>

#include "studio/graphviz_layout.h"

namespace tessera::studio {

// What a worker shares with its job. `owner` is cleared (under the mutex) when the job dies, so a
// worker posts its result only to a live job; a result posted just before that is discarded by
// ~QObject, which removes the job's pending events.
struct LayoutJob::Shared {
  std::mutex mutex;
  LayoutJob* owner = nullptr;           // guarded by mutex
  std::atomic<quint64> wanted{0};       // the generation whose result is wanted; 0: none
};

LayoutFunction graphviz_layout_function() {
  return [](const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges) {
    return GraphvizLayout().compute(boxes, edges);
  };
}

LayoutJob::LayoutJob(LayoutFunction compute, QObject* parent)
    : QObject(parent), compute_(std::move(compute)), shared_(std::make_shared<Shared>()) {
  qRegisterMetaType<tessera::studio::Layout>();
  shared_->owner = this;
}

LayoutJob::~LayoutJob() {
  shared_->wanted = 0;
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->owner = nullptr;
}

quint64 LayoutJob::start(std::vector<LayoutBox> boxes, std::vector<LayoutEdge> edges) {
  const quint64 generation = ++generation_;
  running_ = true;
  shared_->wanted = generation;
  auto work = [shared = shared_, compute = compute_, generation, boxes = std::move(boxes),
               edges = std::move(edges)]() noexcept {
    if (shared->wanted != generation) return;  // superseded or cancelled before it started
    Expected<Layout> result = make_error("layout not run");
    try {
      result = compute ? compute(boxes, edges) : Expected<Layout>(make_error("no layout function"));
    } catch (const std::exception& e) {
      result = make_error(std::string("layout: ") + e.what());
    } catch (...) {
      result = make_error("layout: unknown exception");
    }
    try {
      std::lock_guard<std::mutex> lock(shared->mutex);
      LayoutJob* owner = shared->owner;
      if (!owner || shared->wanted != generation) return;
      QMetaObject::invokeMethod(
          owner, [owner, generation, result = std::move(result)] { owner->deliver(generation, result); },
          Qt::QueuedConnection);
    } catch (...) {  // allocation failure while posting: the result is lost, the job stays usable
    }
  };
  QThreadPool::globalInstance()->start(std::move(work));
  return generation;
}

void LayoutJob::cancel() {
  shared_->wanted = 0;
  running_ = false;
}

void LayoutJob::deliver(quint64 generation, const Expected<Layout>& result) {
  if (generation != generation_ || !running_) return;  // superseded or cancelled since it was posted
  running_ = false;
  if (result)
    Q_EMIT finished(generation, *result);
  else
    Q_EMIT failed(generation, QString::fromStdString(result.error().to_string()));
}

}  // namespace tessera::studio
