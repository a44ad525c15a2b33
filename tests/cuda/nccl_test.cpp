// The NCCL backend of data parallel (engine/dist/nccl_communicator.cpp) on one GPU: an all-reduce
// and a broadcast through the device round-trip the data exactly (one rank: the sum is the value),
// odd and large sizes, and the AllReduce op's kernel over it gives the mean. Exits 77 (ctest:
// skipped) without a device.
#include <cstdio>
#include <vector>

#include "engine/cuda/device.h"
#include "engine/dist/nccl_communicator.h"
#include "engine/runtime/interpreter.h"

int main() {
  using namespace tessera;
  std::string why;
  if (cuda::device_count(&why) == 0) {
    std::printf("no CUDA device (%s) - skipping NCCL\n", why.c_str());
    return 77;
  }
  auto comm = dist::NcclCommunicator::create_single();
  if (!comm) {
    std::printf("FAIL: %s\n", comm.error().to_string().c_str());
    return 1;
  }
  std::printf("NCCL rank %d of %d on device %d\n", (*comm)->rank(), (*comm)->size(), (*comm)->device());
  for (int64_t n : {1, 7, 1000, (1 << 22) + 3}) {
    std::vector<float> v(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = want[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i % 977) - 3.f;
    Status s = (*comm)->allreduce_sum(v.data(), n);
    if (!s.is_ok() || v != want) {
      std::printf("FAIL all-reduce n=%lld: %s\n", static_cast<long long>(n), s.is_ok() ? "values differ" : s.error().to_string().c_str());
      return 1;
    }
    std::vector<char> b(static_cast<size_t>(n), 'x');
    s = (*comm)->broadcast(b.data(), n, 0);
    if (!s.is_ok() || b != std::vector<char>(static_cast<size_t>(n), 'x')) {
      std::printf("FAIL broadcast n=%lld\n", static_cast<long long>(n));
      return 1;
    }
  }
  // The split stage's AllReduce op over the NCCL communicator (world size 1).
  dist::set_current(comm->get());
  const ops::OpRegistry reg = ops::make_default_registry();
  Tensor a = Tensor::from_vector<float>({3}, {1.f, 2.f, 3.f}), b = Tensor::from_vector<float>({2}, {4.f, 5.f});
  auto out = runtime::run_single_op(reg, "AllReduce", {a, b}, {{"bucket", int64_t{0}}, {"bytes", int64_t{20}}, {"world_size", int64_t{1}}}, 2);
  dist::set_current(nullptr);
  if (!out || !(*out)[0].equals(a) || !(*out)[1].equals(b)) {
    std::printf("FAIL: the AllReduce op over NCCL: %s\n", out ? "values differ" : out.error().to_string().c_str());
    return 1;
  }
  std::printf("NCCL all-reduce, broadcast and the AllReduce op match (%.3f ms in NCCL)\n", (*comm)->comm_seconds() * 1e3);
  return 0;
}
