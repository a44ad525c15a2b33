// How busy other processes keep this machine's cores, read from /proc (Linux), and the intra-op
// thread count that follows it. With a browser, a build or another job on one of two cores, 2
// OpenMP threads trained LeNet 3x slower than 1 (each parallel region waits for the thread whose
// core is taken: 5,592 against 16,196 images/s, AMD EPYC, 2 cores); PyTorch collapses the same way.
//
//   LoadGovernor governor;                                   // one per session
//   cpu::set_intra_op_threads(governor.threads_for(2));      // before each run: 1 while a core is taken
//
//   const CpuTimes a = read_cpu_times();  ...  double busy = others_cores(a, read_cpu_times());
#pragma once

#include <cstdint>
#include <mutex>

namespace tessera {

struct CpuTimes {
  int64_t machine_busy = -1;  // jiffies every core spent busy (user, nice, system, irq, softirq, steal)
  int64_t own = -1;           // jiffies of this process (all its threads)
  int64_t wall_ns = 0;        // steady clock at the reading
  bool known() const { return machine_busy >= 0 && own >= 0; }
};

// Reads /proc/stat and /proc/self/stat (unknown fields stay -1 where they cannot be read).
CpuTimes read_cpu_times();

// The cores other processes kept busy on average between two readings (-1 when unknown or when
// they are under 50 ms apart).
double others_cores(const CpuTimes& from, const CpuTimes& to);

// Hardware threads of this machine (at least 1).
int hardware_threads();

// The rule of LoadGovernor: `requested` less the cores other processes keep busy beyond what this
// machine's `cores` leave free (rounded to the nearest core), never under 1 nor over `requested`.
int threads_for_load(int requested, int cores, double others_cores);

// The intra-op threads to use now: the requested count, less the cores other processes kept busy
// over the last interval (rounded to the nearest core), never under 1. Re-read at most once an
// interval; thread-safe.
class LoadGovernor {
 public:
  explicit LoadGovernor(int64_t interval_ns = 500'000'000) : interval_ns_(interval_ns) {}
  int threads_for(int requested);
  // Calls that got fewer threads than requested, and all calls (for reports).
  int64_t reduced() const;
  int64_t calls() const;

 private:
  mutable std::mutex mu_;
  int64_t interval_ns_;
  CpuTimes last_;
  double others_ = 0;
  int64_t reduced_ = 0, calls_ = 0;
};

}  // namespace tessera
