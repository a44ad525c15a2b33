// Other processes' load on the cores, from /proc, and the thread count that follows it.
#include "engine/core/cpu_load.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace tessera {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t machine_busy_jiffies() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  long long v[8] = {};
  const int n = std::fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                            &v[6], &v[7]);
  std::fclose(f);
  if (n < 4) return -1;
  return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];  // user nice system (idle iowait) irq softirq steal
}

int64_t own_jiffies() {
  const ProcessStat s = process_stat();
  return s.utime < 0 ? -1 : s.utime + s.stime;
}

// Sum over this process's threads of the time spent runnable on a run queue (the second field of
// /proc/self/task/TID/schedstat, in ns).
int64_t own_wait_ns() {
  DIR* dir = ::opendir("/proc/self/task");
  if (!dir) return -1;
  int64_t total = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) continue;  // the thread ended
    long long run = 0, wait = 0;
    if (std::fscanf(f, "%lld %lld", &run, &wait) == 2) total += wait;
    std::fclose(f);
  }
  ::closedir(dir);
  return total;
}

}  // namespace

ProcessStat process_stat(int64_t pid) {
  const std::string path = pid > 0 ? "/proc/" + std::to_string(pid) + "/stat" : std::string("/proc/self/stat");
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return {};
  char buf[1024] = {};
  const size_t got = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* p = got > 0 ? std::strrchr(buf, ')') : nullptr;  // the command name may hold spaces
  if (!p) return {};
  // After the name: state (field 3) ... utime (14) stime (15) ... starttime (22).
  char state = 0;
  long long utime = 0, stime = 0, start = 0;
  if (std::sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %*d %*d %*d %*d %*d %*d %lld", &state, &utime,
                  &stime, &start) != 4)
    return {};
  return ProcessStat{state, utime, stime, start};
}

CpuTimes read_cpu_times() { return CpuTimes{machine_busy_jiffies(), own_jiffies(), own_wait_ns(), steady_ns()}; }

double others_cores(const CpuTimes& from, const CpuTimes& to) {
  const double seconds = static_cast<double>(to.wall_ns - from.wall_ns) / 1e9;
  if (!from.known() || !to.known() || seconds < 0.05) return -1;
  static const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return std::max(0.0, static_cast<double>((to.machine_busy - from.machine_busy) - (to.own - from.own)) / hz / seconds);
}

int hardware_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int next_thread_count(int current, int requested, int cores, double others, double waiting) {
  requested = std::max(1, requested);
  current = std::clamp(current, 1, requested);
  if (current > 1 && waiting > 0.3 && others > 0.3) return current - 1;
  if (current < requested && waiting < 0.3 && others < static_cast<double>(cores - current) - 0.5) return current + 1;
  return current;
}

int LoadGovernor::threads_for(int requested) {
  std::lock_guard<std::mutex> lk(mu_);
  if (current_ == 0) current_ = std::max(1, requested);
  const int64_t now = steady_ns();
  if (!last_.known() || now - last_.wall_ns >= interval_ns_) {
    const CpuTimes t = read_cpu_times();
    if (last_.known() && t.own_wait_ns >= 0 && last_.own_wait_ns >= 0) {
      const double others = others_cores(last_, t);
      const double waiting = static_cast<double>(t.own_wait_ns - last_.own_wait_ns) / static_cast<double>(now - last_.wall_ns);
      if (others >= 0) current_ = next_thread_count(current_, requested, hardware_threads(), others, waiting);
    }
    last_ = t;
  }
  return std::clamp(current_, 1, std::max(1, requested));
}

}  // namespace tessera
