#include "insight/chrome_import.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/file_kind.h"

namespace tessera::insight {

namespace {

using json = nlohmann::json;

observe::Span::Kind kind_of(const std::string& cat) {
  auto has = [&](const char* s) { return cat.find(s) != std::string::npos; };
  if (cat == "stage") return observe::Span::Kind::kStage;
  if (cat == "pass") return observe::Span::Kind::kPass;
  if (cat == "copy" || has("memcpy") || has("Memcpy") || has("memset") || has("Memset")) return observe::Span::Kind::kCopy;
  if (cat == "step" || has("python_function") || has("user_annotation")) return observe::Span::Kind::kStep;
  return observe::Span::Kind::kKernel;
}

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) return std::to_string(it->get<double>());
  return {};
}

double number_of(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      return std::stod(it->get<std::string>());
    } catch (...) {
      return fallback;
    }
  }
  return fallback;
}

// Times beyond this many microseconds (about 127 years) are no clock's: nanoseconds of one more
// such duration would overflow int64.
constexpr double kMaxTimeUs = 4e15;

// Skips event `i` as invalid, keeping the first reason for the caller.
void note_invalid(ChromeSpans& out, size_t i, const json& e, const std::string& why) {
  if (out.invalid++ == 0) out.first_invalid = "event " + std::to_string(i) + " ('" + text_of(e, "name") + "'): " + why;
}

}  // namespace

Expected<ChromeSpans> read_chrome_spans(const std::string& path, int64_t max_events) {
  RETURN_IF_ERROR(require_regular_file(path));  // a FIFO would block, /dev/zero never end
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open the trace", path);
  std::stringstream ss;
  ss << in.rdbuf();
  json doc;
  try {
    doc = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    return make_error("not a Chrome trace: invalid JSON at byte " + std::to_string(e.byte), path);
  }
  const json* events = nullptr;
  if (doc.is_array()) events = &doc;
  else if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) events = &doc["traceEvents"];
  if (!events) return make_error("not a Chrome trace: expected {\"traceEvents\": [...]} or an array of events", path);
  if (static_cast<int64_t>(events->size()) > max_events)
    return make_error("the trace has " + std::to_string(events->size()) + " events, more than the " +
                          std::to_string(max_events) + " accepted", path);

  ChromeSpans out;
  std::map<std::pair<std::string, std::string>, int32_t> threads;
  std::map<std::pair<std::string, std::string>, std::vector<observe::Span>> open;  // B events per lane
  auto thread_of = [&](const std::string& pid, const std::string& tid) {
    auto [it, fresh] = threads.emplace(std::make_pair(pid, tid), static_cast<int32_t>(threads.size()));
    (void)fresh;
    return it->second;
  };
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object()) return make_error("event " + std::to_string(i) + " is not an object", path);
    const std::string ph = text_of(e, "ph");
    if (ph != "X" && ph != "B" && ph != "E") {
      ++out.skipped;
      continue;
    }
    const double ts = number_of(e, "ts", NAN);
    if (!std::isfinite(ts)) return make_error("event " + std::to_string(i) + " ('" + text_of(e, "name") + "') has no numeric ts", path);
    if (std::fabs(ts) > kMaxTimeUs) {
      note_invalid(out, i, e, "ts " + std::to_string(ts) + " us is beyond any clock");
      continue;
    }
    const std::string pid = text_of(e, "pid"), tid = text_of(e, "tid");
    const auto lane = std::make_pair(pid, tid);
    if (ph == "E") {
      auto& stack = open[lane];
      if (stack.empty()) {
        ++out.skipped;
        continue;
      }
      observe::Span s = std::move(stack.back());
      stack.pop_back();
      const int64_t end_ns = static_cast<int64_t>(std::llround(ts * 1000.0));
      if (end_ns < s.start_ns) {
        note_invalid(out, i, e, "its \"E\" comes before its \"B\"");
        continue;
      }
      s.end_ns = end_ns;
      out.spans.push_back(std::move(s));
      continue;
    }
    observe::Span s;
    const std::string cat = text_of(e, "cat");
    s.kind = kind_of(cat);
    s.name = text_of(e, "name");
    const json empty = json::object();
    const json& args = e.contains("args") && e["args"].is_object() ? e["args"] : empty;
    s.op = text_of(args, "op");
    if (s.op.empty() && s.kind == observe::Span::Kind::kKernel) s.op = s.name;
    s.detail = text_of(args, "detail");
    if (s.detail.empty()) s.detail = cat;
    s.device = text_of(args, "device");
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") s.device = "cuda:" + (s.device.empty() ? "0" : s.device);
    else if (s.device.empty()) s.device = "cpu";
    s.node = static_cast<int32_t>(number_of(args, "node", -1));
    s.bytes = static_cast<int64_t>(number_of(args, "bytes", 0));
    s.flops = number_of(args, "flops", 0);
    s.thread = thread_of(pid, tid);
    s.start_ns = static_cast<int64_t>(std::llround(ts * 1000.0));
    if (ph == "B") {
      open[lane].push_back(std::move(s));
      continue;
    }
    const double dur = number_of(e, "dur", 0);
    if (!(dur >= 0 && dur <= kMaxTimeUs)) {
      note_invalid(out, i, e, "dur " + std::to_string(dur) + " us is negative or not a duration");
      continue;
    }
    s.end_ns = s.start_ns + static_cast<int64_t>(std::llround(dur * 1000.0));
    out.spans.push_back(std::move(s));
  }
  for (auto& [lane, stack] : open) out.skipped += static_cast<int64_t>(stack.size());  // never closed
  if (out.spans.empty() && out.invalid > 0)
    return make_error("the trace holds no valid spans: " + std::to_string(out.invalid) + " invalid, the first " + out.first_invalid, path);
  if (out.spans.empty()) return make_error("the trace holds no spans (no \"X\" events or \"B\"/\"E\" pairs)", path);
  std::stable_sort(out.spans.begin(), out.spans.end(),
                   [](const observe::Span& a, const observe::Span& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace tessera::insight
