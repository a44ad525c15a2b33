// Learning-rate schedules: the rate for a 0-based step, computed on the host and fed to the
// training step's `lr` input each step (so a schedule never recompiles the graph).
//
//   Schedule s = Schedule::cosine(0.1, total_steps).with_warmup(500);
//   double lr = s.at(step);
//
// constant: lr. step: lr * gamma^floor(step / step_size) (torch StepLR). cosine: eta_min + (lr -
// eta_min) * (1 + cos(pi * step / total)) / 2 (torch CosineAnnealingLR, clamped at total).
// warm-up: linear from lr/warmup to the schedule's value over the first `warmup` steps.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace tessera::train {

class Schedule {
 public:
  static Schedule constant(double lr);
  static Schedule step(double lr, int64_t step_size, double gamma);
  static Schedule cosine(double lr, int64_t total_steps, double eta_min = 0.0);
  Schedule with_warmup(int64_t warmup_steps) const;
  // Parses "constant", "step:SIZE:GAMMA", "cosine[:ETA_MIN]" (total steps from the caller),
  // each optionally followed by ",warmup:N". Errors name the text and the part that is wrong.
  static Expected<Schedule> parse(const std::string& text, double lr, int64_t total_steps);

  double at(int64_t step) const;
  std::string describe() const;

 private:
  enum class Kind { kConstant, kStep, kCosine };
  Kind kind_ = Kind::kConstant;
  double lr_ = 0.01, gamma_ = 1.0, eta_min_ = 0.0;
  int64_t step_size_ = 1, total_ = 1, warmup_ = 0;
};

}  // namespace tessera::train
