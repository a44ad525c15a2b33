// Clock for the sink interfaces.
#include "engine/observe/sinks.h"

#include <chrono>

namespace tessera::observe {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace tessera::observe
