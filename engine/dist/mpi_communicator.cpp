#include "engine/dist/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/observe/sinks.h"

namespace tessera::dist {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

Expected<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return make_error("MPI_Init_thread failed", "mpi");
  }
  // Errors come back as codes (named in our messages) instead of aborting the job in MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size_);
  return c;
}

MpiCommunicator::~MpiCommunicator() {
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

Status MpiCommunicator::allreduce_sum(float* data, int64_t count) {
  const int64_t t0 = observe::now_ns();
  if (ordered_ && size_ > 1) {
    std::vector<float> all;
    for (int64_t at = 0; at < count;) {
      const int n = static_cast<int>(std::min<int64_t>(count - at, INT_MAX / (2 * size_)));
      all.resize(static_cast<size_t>(n) * static_cast<size_t>(size_));
      const int rc = MPI_Allgather(data + at, n, MPI_FLOAT, all.data(), n, MPI_FLOAT, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) return failure("MPI_Allgather", rc);
      for (int i = 0; i < n; ++i) {
        float sum = all[static_cast<size_t>(i)];
        for (int r = 1; r < size_; ++r) sum += all[static_cast<size_t>(r) * static_cast<size_t>(n) + static_cast<size_t>(i)];
        data[at + i] = sum;
      }
      at += n;
    }
    comm_ns_ += observe::now_ns() - t0;
    return Status::ok();
  }
  for (int64_t at = 0; at < count;) {  // MPI counts are ints
    const int n = static_cast<int>(std::min<int64_t>(count - at, INT_MAX / 2));
    const int rc = MPI_Allreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return failure("MPI_Allreduce", rc);
    at += n;
  }
  comm_ns_ += observe::now_ns() - t0;
  return Status::ok();
}

Status MpiCommunicator::broadcast(void* data, int64_t bytes, int root) {
  const int64_t t0 = observe::now_ns();
  char* p = static_cast<char*>(data);
  for (int64_t at = 0; at < bytes;) {
    const int n = static_cast<int>(std::min<int64_t>(bytes - at, INT_MAX / 2));
    const int rc = MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return failure("MPI_Bcast", rc);
    at += n;
  }
  comm_ns_ += observe::now_ns() - t0;
  return Status::ok();
}

Status MpiCommunicator::barrier() {
  const int rc = MPI_Barrier(MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return failure("MPI_Barrier", rc);
  return Status::ok();
}

}  // namespace tessera::dist
