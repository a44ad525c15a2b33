// Tests of studio/layout_job.cpp: results arrive on the job's thread, only the latest request's,
// never after cancel(); start() returns while the layout still runs; errors and exceptions become
// failed(); destroying a job while its worker runs is safe. Layout functions that wait on a gate
// make the order of events deterministic.
#include <QSignalSpy>
#include <QThread>
#include <QThreadPool>
#include <QTest>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "tests/studio/qtest_main.h"
#include "studio/canvas/graphviz_layout.h"
#include "studio/canvas/layout_job.h"

#include <unistd.h>

using tessera::Expected;
using tessera::make_error;
using tessera::studio::Layout;
using tessera::studio::LayoutBox;
using tessera::studio::LayoutEdge;
using tessera::studio::LayoutFunction;
using tessera::studio::LayoutJob;

namespace {

// A door the layout functions wait at until the test opens it; counts the calls that went through.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> entered{0};
  std::atomic<int> returned{0};

  void pass() {
    ++entered;
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

// A layout whose width is the number of boxes (so that results of different requests differ),
// computed after the gate opens.
LayoutFunction gated(std::shared_ptr<Gate> gate) {
  return [gate](const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges) {
    gate->pass();
    Layout l;
    l.positions.resize(boxes.size());
    l.routes.resize(edges.size());
    l.width = static_cast<double>(boxes.size());
    ++gate->returned;
    return Expected<Layout>(l);
  };
}

std::vector<LayoutBox> boxes(int n) {
  return std::vector<LayoutBox>(static_cast<size_t>(n), LayoutBox{50, 20});
}

// Waits until every worker is done, then delivers what they posted.
void drain() {
  QVERIFY(tessera::studio::layout_thread_pool()->waitForDone(10000));
  QCoreApplication::processEvents();
  QCoreApplication::sendPostedEvents();
}

}  // namespace

class LayoutJobTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void graphviz_result_arrives_on_the_job_thread() {
    LayoutJob job;  // GraphvizLayout
    QThread* delivered_on = nullptr;
    connect(&job, &LayoutJob::finished, this,
            [&](quint64, const Layout&) { delivered_on = QThread::currentThread(); });
    QSignalSpy finished(&job, &LayoutJob::finished);
    const quint64 g = job.start(boxes(3), {{0, 1}, {1, 2}});
    QCOMPARE(g, quint64{1});
    QVERIFY(job.is_running());
    QVERIFY(finished.wait(10000));
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished[0][0].value<quint64>(), quint64{1});
    const Layout l = finished[0][1].value<Layout>();
    QCOMPARE(static_cast<int>(l.positions.size()), 3);
    QVERIFY(l.positions[0].y < l.positions[1].y && l.positions[1].y < l.positions[2].y);
    QCOMPARE(delivered_on, QThread::currentThread());
    QVERIFY(!job.is_running());
  }

  void start_returns_while_the_layout_runs() {
    auto gate = std::make_shared<Gate>();
    LayoutJob job(gated(gate));
    QSignalSpy finished(&job, &LayoutJob::finished);
    const auto t0 = std::chrono::steady_clock::now();
    job.start(boxes(2), {});
    QTRY_COMPARE(gate->entered.load(), 1);  // the worker is now blocked inside the layout
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(ms < 2000, "start() waited for the layout");
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    gate->release();
    QVERIFY(finished.wait(5000));
    QCOMPARE(finished[0][1].value<Layout>().width, 2.0);
  }

  void newer_request_supersedes_older() {
    auto gate = std::make_shared<Gate>();
    LayoutJob job(gated(gate));
    QSignalSpy finished(&job, &LayoutJob::finished);
    QCOMPARE(job.start(boxes(1), {}), quint64{1});
    QTRY_COMPARE(gate->entered.load(), 1);  // request 1 is running
    QCOMPARE(job.start(boxes(2), {}), quint64{2});
    QCOMPARE(job.start(boxes(3), {}), quint64{3});
    gate->release();
    drain();
    // Only the latest request's result (3 boxes) arrives; request 1 ran but was dropped.
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished[0][0].value<quint64>(), quint64{3});
    QCOMPARE(finished[0][1].value<Layout>().width, 3.0);
    QVERIFY(gate->returned.load() >= 2);  // 1 and 3 at least (2 may be skipped before it starts)
  }

  void cancelled_result_is_dropped() {
    auto gate = std::make_shared<Gate>();
    LayoutJob job(gated(gate));
    QSignalSpy finished(&job, &LayoutJob::finished);
    QSignalSpy failed(&job, &LayoutJob::failed);
    job.start(boxes(2), {});
    QTRY_COMPARE(gate->entered.load(), 1);
    job.cancel();
    QVERIFY(!job.is_running());
    gate->release();
    drain();
    QCOMPARE(gate->returned.load(), 1);  // it did run to the end ...
    QCOMPARE(finished.count(), 0);       // ... and nothing was emitted
    QCOMPARE(failed.count(), 0);
  }

  void cancel_then_start_delivers_only_the_new_request() {
    auto gate = std::make_shared<Gate>();
    LayoutJob job(gated(gate));
    QSignalSpy finished(&job, &LayoutJob::finished);
    job.start(boxes(5), {});
    QTRY_COMPARE(gate->entered.load(), 1);
    job.cancel();
    job.start(boxes(7), {});
    gate->release();
    drain();
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished[0][0].value<quint64>(), quint64{2});
    QCOMPARE(finished[0][1].value<Layout>().width, 7.0);
  }

  void errors_and_exceptions_are_reported_by_failed() {
    LayoutJob job([](const std::vector<LayoutBox>&, const std::vector<LayoutEdge>&) {
      return Expected<Layout>(make_error("dot gave up"));
    });
    QSignalSpy failed(&job, &LayoutJob::failed);
    QSignalSpy finished(&job, &LayoutJob::finished);
    job.start(boxes(1), {});
    QVERIFY(failed.wait(5000));
    QCOMPARE(failed[0][1].toString(), QStringLiteral("dot gave up"));
    QCOMPARE(finished.count(), 0);

    LayoutJob throwing([](const std::vector<LayoutBox>&, const std::vector<LayoutEdge>&)
                           -> Expected<Layout> { throw std::runtime_error("out of luck"); });
    QSignalSpy failed2(&throwing, &LayoutJob::failed);
    throwing.start(boxes(1), {});
    QVERIFY(failed2.wait(5000));
    QVERIFY(failed2[0][1].toString().contains(QStringLiteral("out of luck")));
  }

  void destroying_the_job_while_it_runs_is_safe() {
    auto gate = std::make_shared<Gate>();
    int delivered = 0;
    auto* job = new LayoutJob(gated(gate));
    connect(job, &LayoutJob::finished, this, [&](quint64, const Layout&) { ++delivered; });
    job->start(boxes(4), {});
    QTRY_COMPARE(gate->entered.load(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    delete job;  // the worker is blocked inside the layout: the destructor must not wait for it
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(ms < 1000, "the destructor waited for the worker");
    gate->release();
    drain();
    QCOMPARE(gate->returned.load(), 1);
    QCOMPARE(delivered, 0);
  }

  void destroying_the_job_after_the_result_was_posted_is_safe() {
    auto gate = std::make_shared<Gate>();
    gate->release();
    int delivered = 0;
    auto* job = new LayoutJob(gated(gate));
    connect(job, &LayoutJob::finished, this, [&](quint64, const Layout&) { ++delivered; });
    job->start(boxes(4), {});
    // The worker finishes and posts its result, which is still in the queue when the job dies.
    QVERIFY(tessera::studio::layout_thread_pool()->waitForDone(10000));
    delete job;
    QCoreApplication::processEvents();
    QCoreApplication::sendPostedEvents();
    QCOMPARE(delivered, 0);
  }
  // Graphviz runs in a child process: the same answer as in this process, sent back whole.
  void the_child_process_returns_graphviz_s_layout_whole() {
    std::vector<LayoutBox> b = {{120, 40}, {160, 60}, {90, 30}, {100, 50}};
    std::vector<LayoutEdge> e = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {0, 3}};
    const Expected<Layout> here = tessera::studio::GraphvizLayout().compute(b, e);
    QVERIFY(here.has_value());
    const Expected<Layout> child = tessera::studio::graphviz_layout_function()(b, e);
    QVERIFY2(child.has_value(), child ? "" : child.error().to_string().c_str());
    QCOMPARE(child->positions.size(), here->positions.size());
    for (size_t i = 0; i < b.size(); ++i) {
      QCOMPARE(child->positions[i].x, here->positions[i].x);
      QCOMPARE(child->positions[i].y, here->positions[i].y);
    }
    QCOMPARE(child->layers, here->layers);
    QCOMPARE(child->routes.size(), e.size());
    for (size_t k = 0; k < e.size(); ++k) {
      QCOMPARE(child->routes[k].size(), here->routes[k].size());
      QCOMPARE(child->splines[k].size(), here->splines[k].size());
    }
    QCOMPARE(child->width, here->width);
    QCOMPARE(child->height, here->height);
    // An error and an exception in the child come back as errors.
    auto err = tessera::studio::layout_in_child_process(
        [] { return Expected<Layout>(make_error("no room")); }, 10);
    QVERIFY(!err.has_value());
    QCOMPARE(QString::fromStdString(err.error().to_string()), QStringLiteral("no room"));
    auto thrown = tessera::studio::layout_in_child_process(
        []() -> Expected<Layout> { throw std::runtime_error("boom"); }, 10);
    QVERIFY(!thrown.has_value());
    QVERIFY(QString::fromStdString(thrown.error().to_string()).contains(QStringLiteral("boom")));
    auto died = tessera::studio::layout_in_child_process(
        []() -> Expected<Layout> { ::_exit(3); }, 10);
    QVERIFY(!died.has_value());
  }

  // A layout that never ends is killed at its budget; one that is cancelled, at once.
  void a_layout_past_its_budget_or_cancelled_is_killed() {
    auto forever = []() -> Expected<Layout> {
      for (;;) ::pause();
    };
    auto t0 = std::chrono::steady_clock::now();
    auto late = tessera::studio::layout_in_child_process(forever, 0.3);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY(!late.has_value());
    QVERIFY2(QString::fromStdString(late.error().to_string()).contains(QStringLiteral("more than 0.3 s")),
             late.error().to_string().c_str());
    QVERIFY2(s < 5.0, qPrintable(QString::number(s)));  // 0.3 s and a kill: generous for a busy machine

    LayoutJob job([forever](const std::vector<LayoutBox>&, const std::vector<LayoutEdge>&) {
      return tessera::studio::layout_in_child_process(forever, 600);
    });
    QSignalSpy finished(&job, &LayoutJob::finished);
    QSignalSpy failed(&job, &LayoutJob::failed);
    job.start(boxes(3), {});
    QTest::qWait(200);  // the child is running
    QVERIFY(job.is_running());
    t0 = std::chrono::steady_clock::now();
    job.cancel();
    QVERIFY(tessera::studio::layout_thread_pool()->waitForDone(5000));
    const double stop = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(stop < 3.0, qPrintable(QString::number(stop)));  // a 20 ms poll and a kill
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    QCOMPARE(failed.count(), 0);
    QVERIFY(!tessera::studio::layout_cancelled());  // never true off a worker
  }

  // Layouts never occupy Qt's global pool: Qt 6.4 scales and converts images there and the UI
  // thread waits for it, which froze the window while Graphviz ran.
  void layouts_leave_qt_s_global_pool_free() {
    auto gate = std::make_shared<Gate>();
    LayoutJob a(gated(gate)), b(gated(gate));
    a.start(boxes(2), {});
    b.start(boxes(3), {});
    QTRY_COMPARE(gate->entered.load(), 2);
    QCOMPARE(QThreadPool::globalInstance()->activeThreadCount(), 0);
    gate->release();
    drain();
  }
};

TESSERA_QTEST(LayoutJobTest)
#include "layout_job_test.moc"
