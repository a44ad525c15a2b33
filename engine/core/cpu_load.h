// How busy other processes keep this machine's cores, read from /proc (Linux), and the intra-op
// thread count that follows it. With a browser, a build or another job on one of two cores, 2
// OpenMP threads trained LeNet 3x slower than 1 (each parallel region waits for the thread whose
// core is taken: 5,592 against 16,196 images/s, AMD EPYC, 2 cores); PyTorch collapses the same way.
//
//   LoadGovernor governor;                                   // one per session
//   const int n = governor.threads_for(2);                   // before each run: 1 while a core is taken
//   // ... run a program compiled for n threads (Session keeps one per count)
//
//   const CpuTimes a = read_cpu_times();  ...  double busy = others_cores(a, read_cpu_times());
#pragma once

#include <cstdint>
#include <mutex>

namespace tessera {

struct CpuTimes {
  int64_t machine_busy = -1;  // jiffies every core spent busy (user, nice, system, irq, softirq, steal)
  int64_t own = -1;           // jiffies of this process (all its threads)
  int64_t own_wait_ns = -1;   // ns this process's threads spent runnable but waiting for a core
  int64_t wall_ns = 0;        // steady clock at the reading
  bool known() const { return machine_busy >= 0 && own >= 0; }
};

// Reads /proc/stat, /proc/self/stat and /proc/self/task/*/schedstat (unknown fields stay -1).
CpuTimes read_cpu_times();

// Fields of /proc/PID/stat: CPU time (clock ticks, all threads) and the start time (clock ticks
// after boot: with the pid, it names one process, since pids are reused).
struct ProcessStat {
  char state = 0;  // R, S, D, ... Z: a zombie (ended, not yet reaped: kill(pid, 0) still succeeds)
  int64_t utime = -1, stime = -1, start = -1;
};
// Process `pid`'s (0: this process's); all -1 when it does not exist or cannot be read.
ProcessStat process_stat(int64_t pid = 0);

// The cores other processes kept busy on average between two readings (-1 when unknown or when
// they are under 50 ms apart).
double others_cores(const CpuTimes& from, const CpuTimes& to);

// Hardware threads of this machine (at least 1).
int hardware_threads();

// The rule of LoadGovernor, from one interval's readings: `current` threads, of at most
// `requested`, on `cores`, while other processes used `others` cores and this process's threads
// waited `waiting` cores' worth for a core. One thread fewer when our threads wait (> 0.3) and
// someone else is at work (> 0.3: not only our own loader and writer threads); one more when the
// cores others leave free hold it (others below cores - current - 0.5). What others use is what
// they got, which our spinning threads squeeze: waiting is the signal to step down, not others.
int next_thread_count(int current, int requested, int cores, double others, double waiting);

// The intra-op threads to use now, following next_thread_count once an interval (0.5 s); starts
// at the requested count. Thread-safe.
class LoadGovernor {
 public:
  explicit LoadGovernor(int64_t interval_ns = 500'000'000) : interval_ns_(interval_ns) {}
  int threads_for(int requested);

 private:
  std::mutex mu_;
  int64_t interval_ns_;
  CpuTimes last_;
  int current_ = 0;  // 0: not started
};

}  // namespace tessera
