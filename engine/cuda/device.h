// CUDA device discovery (device.cu), used by the plugin (plugin.cpp) and the NCCL test. Host-side
// header: no CUDA headers leak to callers.
//
//   std::string why;
//   if (cuda::device_count(&why) == 0) { /* skip: `why` says what is missing */ }
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace tessera::cuda {

// Number of usable CUDA devices; 0 with a reason in `why` (no driver, no device, ...).
int device_count(std::string* why);
// Name and compute capability of device `index`, e.g. "NVIDIA H100 (sm_90)".
std::string device_description(int index);

}  // namespace tessera::cuda
