// Learning-rate schedules (see schedule.h).
#include "engine/train/schedule.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace tessera::train {

Schedule Schedule::constant(double lr) {
  Schedule s;
  s.lr_ = lr;
  return s;
}

Schedule Schedule::step(double lr, int64_t step_size, double gamma) {
  Schedule s;
  s.kind_ = Kind::kStep;
  s.lr_ = lr;
  s.step_size_ = step_size < 1 ? 1 : step_size;
  s.gamma_ = gamma;
  return s;
}

Schedule Schedule::cosine(double lr, int64_t total_steps, double eta_min) {
  Schedule s;
  s.kind_ = Kind::kCosine;
  s.lr_ = lr;
  s.total_ = total_steps < 1 ? 1 : total_steps;
  s.eta_min_ = eta_min;
  return s;
}

Schedule Schedule::with_warmup(int64_t warmup_steps) const {
  Schedule s = *this;
  s.warmup_ = warmup_steps < 0 ? 0 : warmup_steps;
  return s;
}

double Schedule::at(int64_t step) const {
  double v = lr_;
  switch (kind_) {
    case Kind::kConstant: break;
    case Kind::kStep: v = lr_ * std::pow(gamma_, static_cast<double>(step / step_size_)); break;
    case Kind::kCosine: {
      double t = static_cast<double>(step < total_ ? step : total_) / static_cast<double>(total_);
      v = eta_min_ + (lr_ - eta_min_) * (1.0 + std::cos(M_PI * t)) / 2.0;
      break;
    }
  }
  if (step < warmup_) v *= static_cast<double>(step + 1) / static_cast<double>(warmup_);
  return v;
}

std::string Schedule::describe() const {
  std::ostringstream os;
  switch (kind_) {
    case Kind::kConstant: os << "constant " << lr_; break;
    case Kind::kStep: os << "step lr=" << lr_ << " every " << step_size_ << " x" << gamma_; break;
    case Kind::kCosine: os << "cosine lr=" << lr_ << " to " << eta_min_ << " over " << total_ << " steps"; break;
  }
  if (warmup_) os << ", warm-up " << warmup_ << " steps";
  return os.str();
}

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}
bool to_double(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0' && std::isfinite(v);
}
bool to_int(const std::string& s, int64_t& v) {
  char* end = nullptr;
  v = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && end && *end == '\0';
}
}  // namespace

Expected<Schedule> Schedule::parse(const std::string& text, double lr, int64_t total_steps) {
  auto bad = [&](const std::string& why) {
    return make_error("learning-rate schedule '" + text + "': " + why +
                      " (expected constant, step:SIZE:GAMMA or cosine[:ETA_MIN], optionally ,warmup:N)");
  };
  std::vector<std::string> parts = split(text, ',');
  if (parts.empty() || parts[0].empty()) return bad("empty");
  std::vector<std::string> head = split(parts[0], ':');
  Schedule s;
  if (head[0] == "constant" && head.size() == 1) {
    s = constant(lr);
  } else if (head[0] == "step" && head.size() == 3) {
    int64_t size = 0;
    double gamma = 0;
    if (!to_int(head[1], size) || size < 1) return bad("step size '" + head[1] + "' is not a positive integer");
    if (!to_double(head[2], gamma) || gamma <= 0) return bad("gamma '" + head[2] + "' is not a positive number");
    s = step(lr, size, gamma);
  } else if (head[0] == "cosine" && head.size() <= 2) {
    double eta = 0;
    if (head.size() == 2 && (!to_double(head[1], eta) || eta < 0)) return bad("eta_min '" + head[1] + "' is not a number >= 0");
    s = cosine(lr, total_steps, eta);
  } else {
    return bad("unknown schedule '" + parts[0] + "'");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    std::vector<std::string> kv = split(parts[i], ':');
    int64_t n = 0;
    if (kv.size() != 2 || kv[0] != "warmup" || !to_int(kv[1], n) || n < 0) return bad("'" + parts[i] + "' is not warmup:N");
    s = s.with_warmup(n);
  }
  return s;
}

}  // namespace tessera::train
