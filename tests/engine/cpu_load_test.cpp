// Tests for engine/core/cpu_load.cpp: the load other processes put on the cores, read from /proc,
// and the thread count that follows it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "engine/core/cpu_load.h"

namespace tessera {
namespace {

TEST(CpuLoad, ThreadsFollowTheCoresOthersLeaveFree) {
  EXPECT_EQ(threads_for_load(2, 2, 0.0), 2);
  EXPECT_EQ(threads_for_load(2, 2, 0.3), 2);   // a browser's idle tabs
  EXPECT_EQ(threads_for_load(2, 2, 0.99), 1);  // one core taken
  EXPECT_EQ(threads_for_load(2, 2, 2.0), 1);   // never under 1
  EXPECT_EQ(threads_for_load(4, 8, 3.0), 4);   // cores enough for the request
  EXPECT_EQ(threads_for_load(8, 8, 3.0), 5);
  EXPECT_EQ(threads_for_load(1, 2, 0.0), 1);   // never over the request
  EXPECT_EQ(threads_for_load(0, 2, 0.0), 1);
}

TEST(CpuLoad, ABusyChildIsAnotherProcessesLoadAndOurOwnWorkIsNot) {
  const CpuTimes a = read_cpu_times();
  ASSERT_TRUE(a.known()) << "/proc is not readable";
  const pid_t child = fork();
  if (child == 0) {
    for (;;) {
    }
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
  EXPECT_EQ(others_cores(a, a), -1) << "readings closer than 50 ms say nothing";
}

}  // namespace
}  // namespace tessera
