// Tests for engine/core/cpu_load.cpp: the load other processes put on the cores, read from /proc,
// and the thread count that follows it.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "engine/core/cpu_load.h"

namespace tessera {
namespace {

TEST(CpuLoad, ThreadsStepDownWhenOursWaitForCoresOthersTakeAndBackUpWhenTheyAreFree) {
  // 2 threads on 2 cores, a busy loop on one: it got half a core, our threads waited half a core.
  EXPECT_EQ(next_thread_count(2, 2, 2, 0.5, 0.5), 1);
  // Our own loader thread competing (nobody else at work): stay.
  EXPECT_EQ(next_thread_count(2, 2, 2, 0.05, 0.6), 2);
  // 1 thread, the loop still at work (a whole core now): stay; it stopped: back to 2.
  EXPECT_EQ(next_thread_count(1, 2, 2, 0.98, 0.0), 1);
  EXPECT_EQ(next_thread_count(1, 2, 2, 0.02, 0.0), 2);
  // A browser's idle tabs change nothing; never under 1 nor over the request.
  EXPECT_EQ(next_thread_count(2, 2, 2, 0.2, 0.1), 2);
  EXPECT_EQ(next_thread_count(1, 2, 2, 1.5, 0.9), 1);
  EXPECT_EQ(next_thread_count(1, 1, 8, 0.0, 0.0), 1);
  EXPECT_EQ(next_thread_count(4, 8, 8, 3.0, 0.0), 5);   // one step at a time
  EXPECT_EQ(next_thread_count(5, 8, 8, 3.0, 0.0), 5);   // 8 - 3 cores free: 5
}

TEST(CpuLoad, ABusyChildIsAnotherProcessesLoadAndOurOwnWorkIsNot) {
  const CpuTimes a = read_cpu_times();
  ASSERT_TRUE(a.known()) << "/proc is not readable";
  const pid_t child = fork();
  ASSERT_GT(child, -1) << "fork failed: " << std::strerror(errno);  // kill(-1, ...) would end every process
  if (child == 0) {
    // The child spins with a side effect: an empty `for (;;) {}` is undefined behaviour, and clang
    // (the sanitizer tree) dropped it, so the child ran on into kill(0, SIGKILL) below and, when
    // it got there before its parent killed it, ended ctest's whole process group (a fresh-root CI
    // run and two sanitizer runs died so).
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  }
  // This process sleeps while the child spins, then spins itself: only the child counts.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  const CpuTimes b = read_cpu_times();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  const double others = others_cores(a, b);
  EXPECT_GT(others, 0.3) << "the spinning child (one core for 0.7 s) was not seen";
  EXPECT_GT(b.own, a.own) << "our own spinning is ours";
  EXPECT_GE(b.own_wait_ns, a.own_wait_ns);
  EXPECT_EQ(others_cores(a, a), -1) << "readings closer than 50 ms say nothing";
}

}  // namespace
}  // namespace tessera
