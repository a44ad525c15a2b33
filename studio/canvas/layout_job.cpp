// LayoutJob: workers on a thread pool of their own, a shared state that outlives the job, results
// posted back to the job's thread; Graphviz in a child process that can be killed.
#include "studio/canvas/layout_job.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QThreadPool>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "studio/canvas/graphviz_layout.h"

namespace tessera::studio {

// What a worker shares with its job. `owner` is cleared (under the mutex) when the job dies, so a
// worker posts its result only to a live job; a result posted just before that is discarded by
// ~QObject, which removes the job's pending events.
struct LayoutJob::Shared {
  std::mutex mutex;
  LayoutJob* owner = nullptr;           // guarded by mutex
  std::atomic<quint64> wanted{0};       // the generation whose result is wanted; 0: none
};

namespace {

// The request the current worker thread runs, for layout_cancelled().
struct Running {
  const std::atomic<quint64>* wanted = nullptr;
  quint64 generation = 0;
};
thread_local Running running_here;

// The child's answer on the pipe: a status byte ('L' layout, 'E' error), then the payload.
class Writer {
 public:
  void u64(uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f64(double v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void points(const std::vector<LayoutPoint>& ps) {
    u64(ps.size());
    for (const LayoutPoint& p : ps) {
      f64(p.x);
      f64(p.y);
    }
  }
  void text(const std::string& s) {
    u64(s.size());
    bytes_ += s;
  }
  std::string bytes_;
};

std::string encode(const Expected<Layout>& result) {
  Writer w;
  if (!result) {
    w.bytes_ = "E";
    w.text(result.error().to_string());
    return w.bytes_;
  }
  w.bytes_ = "L";
  const Layout& l = *result;
  w.points(l.positions);
  w.u64(l.layers.size());
  for (int layer : l.layers) w.u64(static_cast<uint64_t>(static_cast<int64_t>(layer)));
  w.u64(l.routes.size());
  for (const auto& r : l.routes) w.points(r);
  w.u64(l.splines.size());
  for (const auto& s : l.splines) w.points(s);
  w.f64(l.width);
  w.f64(l.height);
  return w.bytes_;
}

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  bool u64(uint64_t& v) { return take(&v, sizeof v); }
  bool f64(double& v) { return take(&v, sizeof v); }
  bool count(size_t& n) {  // a count no bigger than what is left could hold
    uint64_t v = 0;
    if (!u64(v) || v > b_.size() - at_) return false;
    n = static_cast<size_t>(v);
    return true;
  }
  bool points(std::vector<LayoutPoint>& ps) {
    size_t n = 0;
    if (!count(n)) return false;
    ps.resize(n);
    for (LayoutPoint& p : ps)
      if (!f64(p.x) || !f64(p.y)) return false;
    return true;
  }
  bool done() const { return at_ == b_.size(); }
  size_t at_ = 1;

 private:
  bool take(void* out, size_t n) {
    if (b_.size() - at_ < n) return false;
    std::memcpy(out, b_.data() + at_, n);
    at_ += n;
    return true;
  }
  const std::string& b_;
};

Expected<Layout> decode(const std::string& bytes) {
  auto broken = [] { return Expected<Layout>(make_error("the layout process sent a broken answer")); };
  if (bytes.empty()) return broken();
  Reader r(bytes);
  if (bytes[0] == 'E') {
    size_t n = 0;
    if (!r.count(n)) return broken();
    return make_error(bytes.substr(r.at_, n));
  }
  if (bytes[0] != 'L') return broken();
  Layout l;
  size_t n = 0;
  if (!r.points(l.positions) || !r.count(n)) return broken();
  l.layers.resize(n);
  for (int& layer : l.layers) {
    uint64_t v = 0;
    if (!r.u64(v)) return broken();
    layer = static_cast<int>(static_cast<int64_t>(v));
  }
  if (!r.count(n)) return broken();
  l.routes.resize(n);
  for (auto& route : l.routes)
    if (!r.points(route)) return broken();
  if (!r.count(n)) return broken();
  l.splines.resize(n);
  for (auto& spline : l.splines)
    if (!r.points(spline)) return broken();
  if (!r.f64(l.width) || !r.f64(l.height) || !r.done()) return broken();
  return l;
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool layout_cancelled() {
  return running_here.wanted && running_here.wanted->load() != running_here.generation;
}

QThreadPool* layout_thread_pool() {
  // A child of the application (which waits for it when destroyed), made on first use.
  static QThreadPool* pool = [] {
    auto* p = new QThreadPool(QCoreApplication::instance());
    p->setMaxThreadCount(2);
    return p;
  }();
  return pool;
}

Expected<Layout> layout_in_child_process(const std::function<Expected<Layout>()>& compute,
                                         double budget_seconds) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return make_error(std::string("cannot make a pipe for the layout process: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error(std::string("cannot start the layout process: ") + std::strerror(e));
  }
  if (pid == 0) {  // the child: compute, answer, leave without running any of the parent's exit code
    ::close(fds[0]);
    std::string answer;
    try {
      answer = encode(compute());
    } catch (const std::exception& e) {
      answer = encode(Expected<Layout>(make_error(std::string("layout: ") + e.what())));
    } catch (...) {
      answer = encode(Expected<Layout>(make_error("layout: unknown exception")));
    }
    ::_exit(write_all(fds[1], answer) ? 0 : 1);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(budget_seconds));
  std::string bytes;
  std::string stopped;  // why the child was killed, if it was
  char buffer[65536];
  for (;;) {
    if (layout_cancelled()) {
      stopped = "the layout was cancelled";
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", budget_seconds);
      stopped = std::string("Graphviz took more than ") + seconds + " s";
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, 20);
    if (ready < 0 && errno != EINTR) {
      stopped = std::string("cannot wait for the layout process: ") + std::strerror(errno);
      break;
    }
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed the pipe: done (or died)
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (!stopped.empty()) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!stopped.empty()) return make_error(stopped);
  if (WIFSIGNALED(status))
    return make_error(std::string("the layout process died of signal ") +
                      std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")");
  return decode(bytes);
}

LayoutFunction graphviz_layout_function(double budget_seconds) {
  return [budget_seconds](const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges) {
    return layout_in_child_process([&] { return GraphvizLayout().compute(boxes, edges); },
                                   budget_seconds);
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
    running_here = Running{&shared->wanted, generation};
    Expected<Layout> result = make_error("layout not run");
    try {
      result = compute ? compute(boxes, edges) : Expected<Layout>(make_error("no layout function"));
    } catch (const std::exception& e) {
      result = make_error(std::string("layout: ") + e.what());
    } catch (...) {
      result = make_error("layout: unknown exception");
    }
    running_here = Running{};
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
  layout_thread_pool()->start(std::move(work));
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
