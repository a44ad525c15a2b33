// The executor's thread pool (see thread_pool.h).
#include "engine/stages/thread_pool.h"

namespace tessera::stages {

ThreadPool::ThreadPool(int threads, std::function<void(int)> on_start) : on_start_(std::move(on_start)) {
  for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::loop(int worker) {
  if (on_start_) on_start_(worker);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(worker);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::run(const std::function<void(int)>& job) {
  if (threads_.empty()) {
    job(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &job;
    running_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  cv_.notify_all();
  job(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return running_ == 0; });
}

}  // namespace tessera::stages
