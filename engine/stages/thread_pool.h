// A fixed pool of worker threads that all run one job together: run(job) calls job(worker) on
// every worker (the caller is worker 0) and returns when all have returned. The executor's
// scheduling loop is the job; workers pick ready steps from a shared queue.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::stages {

class ThreadPool {
 public:
  // `threads` workers in total, including the caller of run(). `on_start` runs once on each
  // pool thread before its first job (sets per-thread state such as OpenMP's thread count).
  ThreadPool(int threads, std::function<void(int worker)> on_start);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }
  void run(const std::function<void(int worker)>& job);

 private:
  void loop(int worker);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::function<void(int)> on_start_;
};

}  // namespace tessera::stages
