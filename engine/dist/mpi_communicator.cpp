#include "engine/dist/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/observe/sinks.h"

namespace tessera::dist {

// The communication thread of start_allreduce: buckets summed in the order started, on its own
// duplicate of MPI_COMM_WORLD (collectives of two threads must not share a communicator).
struct MpiCommunicator::Async {
  struct Job {
    int bucket;
    float* data;
    int64_t count;
  };
  MPI_Comm comm = MPI_COMM_NULL;
  std::thread worker;
  std::mutex mu;
  std::condition_variable wake, done;
  std::deque<Job> queue;
  std::map<int, int64_t> started, finished;  // per bucket: jobs started, jobs finished
  bool stop = false;
  bool busy = false;  // a job is being summed
  Status error;
};

// Marks a collective in flight for its scope (stalled_seconds).
struct MpiCommunicator::InFlight {
  MpiCommunicator& c;
  explicit InFlight(MpiCommunicator& comm) : c(comm) {
    c.progress_ns_.store(observe::now_ns());
    c.in_flight_.fetch_add(1);
  }
  ~InFlight() {
    c.progress_ns_.store(observe::now_ns());
    c.in_flight_.fetch_sub(1);
  }
};

double MpiCommunicator::stalled_seconds() const {
  if (in_flight_.load() == 0) return 0;
  return static_cast<double>(observe::now_ns() - progress_ns_.load()) * 1e-9;
}

template <class Comm>
Status MpiCommunicator::sum(Comm comm, float* data, int64_t count) {
  const InFlight in_flight(*this);
  const int64_t t0 = observe::now_ns();
  if (ordered_ && size_ > 1) {
    std::vector<float> all;
    for (int64_t at = 0; at < count;) {
      const int n = static_cast<int>(std::min<int64_t>(count - at, INT_MAX / (2 * size_)));
      all.resize(static_cast<size_t>(n) * static_cast<size_t>(size_));
      const int rc = MPI_Allgather(data + at, n, MPI_FLOAT, all.data(), n, MPI_FLOAT, comm);
      if (rc != MPI_SUCCESS) return failure("MPI_Allgather", rc);
      for (int i = 0; i < n; ++i) {
        float sum = all[static_cast<size_t>(i)];
        for (int r = 1; r < size_; ++r) sum += all[static_cast<size_t>(r) * static_cast<size_t>(n) + static_cast<size_t>(i)];
        data[at + i] = sum;
      }
      at += n;
    }
    comm_ns_.fetch_add(observe::now_ns() - t0);
    return Status::ok();
  }
  for (int64_t at = 0; at < count;) {  // MPI counts are ints
    const int n = static_cast<int>(std::min<int64_t>(count - at, INT_MAX / 2));
    const int rc = MPI_Allreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, MPI_SUM, comm);
    if (rc != MPI_SUCCESS) return failure("MPI_Allreduce", rc);
    at += n;
  }
  comm_ns_.fetch_add(observe::now_ns() - t0);
  return Status::ok();
}

Expected<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create() {
  int initialised = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialised);
  if (!initialised) {
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return make_error("MPI_Init_thread failed", "mpi");
  } else {
    MPI_Query_thread(&provided);
  }
  // Errors come back as codes (named in our messages) instead of aborting the job in MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size_);
  if (provided >= MPI_THREAD_MULTIPLE && c->size_ > 1) {
    c->async_ = std::make_unique<Async>();
    Async* a = c->async_.get();
    if (MPI_Comm_dup(MPI_COMM_WORLD, &a->comm) != MPI_SUCCESS) return make_error("MPI_Comm_dup failed", "mpi");
    MpiCommunicator* self = c.get();
    a->worker = std::thread([a, self] {
      std::unique_lock<std::mutex> lk(a->mu);
      while (true) {
        a->wake.wait(lk, [&] { return a->stop || !a->queue.empty(); });
        if (a->stop) return;  // (the destructor; a finished step leaves nothing queued)
        Async::Job job = a->queue.front();
        a->queue.pop_front();
        if (a->error.is_ok()) {  // after an error the buckets are only marked done
          a->busy = true;
          lk.unlock();
          const int64_t start = observe::now_ns();
          Status st = self->sum(a->comm, job.data, job.count);
          if (observe::TraceSink* trace = self->trace_.load()) {
            observe::Span span;
            span.kind = observe::Span::Kind::kCopy;
            span.name = "bucket " + std::to_string(job.bucket);
            span.op = "MPI_Allreduce";
            span.device = "mpi";
            span.detail = self->ordered_ ? "mpi:allgather+ordered sum" : "mpi:allreduce";
            span.start_ns = start;
            span.end_ns = observe::now_ns();
            span.bytes = job.count * static_cast<int64_t>(sizeof(float));
            trace->on_span(span);
          }
          lk.lock();
          a->busy = false;
          if (!st.is_ok() && a->error.is_ok()) a->error = st;
        }
        ++a->finished[job.bucket];
        a->done.notify_all();
      }
    });
  }
  return c;
}

MpiCommunicator::MpiCommunicator() = default;

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // (MPI_Abort does not return)
}

MpiCommunicator::~MpiCommunicator() {
  if (async_) {
    {
      std::lock_guard<std::mutex> lk(async_->mu);
      async_->stop = true;
    }
    async_->wake.notify_all();
    if (async_->worker.joinable()) async_->worker.join();
    if (async_->comm != MPI_COMM_NULL) MPI_Comm_free(&async_->comm);
  }
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

Error MpiCommunicator::failure(const char* what, int code) const {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return make_error(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(len)),
                    "mpi rank " + std::to_string(rank_) + " of " + std::to_string(size_));
}

Status MpiCommunicator::allreduce_sum(float* data, int64_t count) { return sum(MPI_COMM_WORLD, data, count); }

Status MpiCommunicator::start_allreduce(int bucket, float* data, int64_t count) {
  if (!async_) return allreduce_sum(data, count);
  std::lock_guard<std::mutex> lk(async_->mu);
  if (!async_->error.is_ok()) return async_->error;
  ++async_->started[bucket];
  async_->queue.push_back({bucket, data, count});
  async_->wake.notify_one();
  return Status::ok();
}

Status MpiCommunicator::wait_allreduce(int bucket) {
  if (!async_) return Status::ok();
  const int64_t t0 = observe::now_ns();
  std::unique_lock<std::mutex> lk(async_->mu);
  async_->done.wait(lk, [&] { return async_->finished[bucket] >= async_->started[bucket] || !async_->error.is_ok(); });
  wait_ns_ += observe::now_ns() - t0;
  return async_->error;
}

void MpiCommunicator::quiesce() {
  if (!async_) return;
  std::unique_lock<std::mutex> lk(async_->mu);
  for (const Async::Job& job : async_->queue) ++async_->finished[job.bucket];
  async_->queue.clear();
  async_->done.wait(lk, [&] { return !async_->busy; });
}

Status MpiCommunicator::broadcast(void* data, int64_t bytes, int root) {
  const InFlight in_flight(*this);
  const int64_t t0 = observe::now_ns();
  char* p = static_cast<char*>(data);
  for (int64_t at = 0; at < bytes;) {
    const int n = static_cast<int>(std::min<int64_t>(bytes - at, INT_MAX / 2));
    const int rc = MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return failure("MPI_Bcast", rc);
    at += n;
  }
  comm_ns_.fetch_add(observe::now_ns() - t0);
  return Status::ok();
}

Status MpiCommunicator::barrier() {
  const InFlight in_flight(*this);
  const int rc = MPI_Barrier(MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return failure("MPI_Barrier", rc);
  return Status::ok();
}

}  // namespace tessera::dist
