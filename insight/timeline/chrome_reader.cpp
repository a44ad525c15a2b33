// Reading Chrome trace files into a timeline with nlohmann's SAX parser: streamed (a 2 GB trace is
// never held as a DOM), bounded, and tolerant of a file cut short: every event completed before
// the parse error is kept (loaders.h).
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

#include "engine/core/file_kind.h"
#include "insight/timeline/loaders.h"

namespace tessera::insight::timeline {
namespace {

using observe::Span;

struct Event {
  std::string name, cat, ph, pid = "0", device, op, detail, arg_name;
  std::string tid_text;
  int64_t tid = 0;
  double ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  int32_t node = -1;
  int64_t bytes = 0;
  double flops = 0;
  std::vector<std::pair<std::string, double>> numeric_args;  // "C" counters
  void clear() { *this = Event(); }
};

Span::Kind kind_of(const std::string& cat) {
  if (cat == "stage") return Span::Kind::kStage;
  if (cat == "pass") return Span::Kind::kPass;
  if (cat == "copy") return Span::Kind::kCopy;
  if (cat == "step") return Span::Kind::kStep;
  return Span::Kind::kKernel;
}

// us (double) -> ns; false for values no trace has (NaN, beyond +-100 days).
bool to_ns(double us, int64_t* ns) {
  if (!std::isfinite(us) || std::fabs(us) > 8.64e12) return false;
  *ns = std::llround(us * 1000.0);
  return true;
}

class Reader final : public nlohmann::json::json_sax_t {
 public:
  Reader(TimelineBuilder& b, const ChromeLimits& limits) : b_(b), limits_(limits) {}

  bool null() override { return value_done(); }
  bool boolean(bool) override { return value_done(); }
  bool number_integer(int64_t v) override { return number(static_cast<double>(v), true); }
  bool number_unsigned(uint64_t v) override { return number(static_cast<double>(v), true); }
  bool number_float(double v, const std::string&) override { return number(v, false); }
  bool binary(binary_t&) override { return value_done(); }
  bool string(string_t& v) override {
    if (v.size() > limits_.max_string) v.resize(limits_.max_string);
    if (depth_ == event_depth() && events_depth_ >= 0) {
      if (key_ == "name")
        ev_.name = v;
      else if (key_ == "cat")
        ev_.cat = v;
      else if (key_ == "ph")
        ev_.ph = v;
      else if (key_ == "pid")
        ev_.pid = v;
      else if (key_ == "tid")
        ev_.tid_text = v;
    } else if (in_args_at(depth_)) {
      if (key_ == "device")
        ev_.device = v;
      else if (key_ == "op")
        ev_.op = v;
      else if (key_ == "detail")
        ev_.detail = v;
      else if (key_ == "name")
        ev_.arg_name = v;
    }
    return value_done();
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (events_depth_ >= 0 && depth_ == event_depth())
      ev_.clear(), in_event_ = true;
    else if (in_event_ && depth_ == event_depth() + 1 && key_ == "args")
      args_depth_ = depth_;
    return true;
  }
  bool end_object() override {
    if (depth_ == args_depth_) args_depth_ = -1;
    if (in_event_ && depth_ == event_depth()) {
      in_event_ = false;
      if (!commit()) return false;
    }
    --depth_;
    return value_done();
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (events_depth_ < 0 && (depth_ == 1 || (depth_ == 2 && key_ == "traceEvents")))
      events_depth_ = depth_;
    return true;
  }
  bool end_array() override {
    if (depth_ == events_depth_) events_closed_ = true;
    --depth_;
    return value_done();
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error_byte_ =
        position > 0 ? static_cast<int64_t>(position) - 1 : 0;  // nlohmann counts the failing char
    error_text_ = ex.what();
    error_inside_event_ = in_event_;
    return false;
  }

  int64_t events() const { return events_; }
  bool found_events() const { return events_depth_ >= 0; }
  bool stopped_at_limit() const { return at_limit_; }
  int64_t error_byte() const { return error_byte_; }
  const std::string& error_text() const { return error_text_; }
  bool error_inside_event() const { return error_inside_event_; }
  int64_t unmatched_begins() const {
    int64_t n = 0;
    for (const auto& [k, v] : open_) n += static_cast<int64_t>(v.size());
    return n + unmatched_ends_;
  }

 private:
  int event_depth() const { return events_depth_ + 1; }
  bool in_args_at(int depth) const { return in_event_ && args_depth_ >= 0 && depth == args_depth_; }
  bool value_done() {
    key_.clear();
    return true;
  }
  bool number(double v, bool integral) {
    if (in_event_ && depth_ == event_depth()) {
      if (key_ == "ts")
        ev_.ts = v, ev_.has_ts = true;
      else if (key_ == "dur")
        ev_.dur = v, ev_.has_dur = true;
      else if (key_ == "pid")
        ev_.pid = std::to_string(static_cast<int64_t>(v));
      else if (key_ == "tid")
        ev_.tid = static_cast<int64_t>(v);
    } else if (in_args_at(depth_)) {
      if (key_ == "node" && integral && std::fabs(v) < 2e9)
        ev_.node = static_cast<int32_t>(v);
      else if (key_ == "bytes" && std::fabs(v) < 9e18)
        ev_.bytes = static_cast<int64_t>(v);
      else if (key_ == "flops")
        ev_.flops = v;
      if (ev_.numeric_args.size() < 16 && std::isfinite(v)) ev_.numeric_args.emplace_back(key_, v);
    }
    return value_done();
  }
  int64_t tid_of(const Event& e) {
    if (e.tid_text.empty()) return e.tid;
    auto [it, fresh] =
        tid_names_.try_emplace(e.tid_text, static_cast<int64_t>(tid_names_.size()) + 1000000);
    return it->second;
  }
  // One complete event; false stops the parse (limit reached).
  bool commit() {
    const Event& e = ev_;
    const std::string lane_device = e.device.empty() ? "pid " + e.pid : e.device;
    const int64_t tid = tid_of(e);
    int64_t t0 = 0, d = 0;
    if (e.ph == "X") {
      if (!e.has_ts || !to_ns(e.ts, &t0) || !to_ns(e.has_dur ? e.dur : 0.0, &d) || d < 0)
        return true;
      b_.add_span(kind_of(e.cat), e.name, e.op, lane_device, e.detail, e.node, tid, t0, t0 + d,
                  e.bytes, e.flops);
    } else if (e.ph == "B") {
      if (!e.has_ts || !to_ns(e.ts, &t0)) return true;
      Event open = e;
      open.device = lane_device;
      open.numeric_args.clear();
      open_[e.pid + '\x1f' + std::to_string(tid)].push_back(std::move(open));
      ++events_;
      return true;  // counted now, added at its "E"
    } else if (e.ph == "E") {
      auto it = open_.find(e.pid + '\x1f' + std::to_string(tid));
      if (it == open_.end() || it->second.empty() || !e.has_ts || !to_ns(e.ts, &t0))
        return ++unmatched_ends_, true;
      const Event b = std::move(it->second.back());
      it->second.pop_back();
      int64_t s0 = 0;
      to_ns(b.ts, &s0);
      b_.add_span(kind_of(b.cat), b.name, b.op, b.device, b.detail, b.node, tid, s0,
                  std::max(s0, t0), b.bytes, b.flops);
      return true;
    } else if (e.ph == "C") {
      if (!e.has_ts || !to_ns(e.ts, &t0)) return true;
      for (const auto& [k, v] : e.numeric_args)
        b_.add_counter(e.numeric_args.size() == 1 ? e.name : e.name + " " + k, t0, v);
    } else if (e.ph == "M") {
      if (e.name == "process_name" && !e.arg_name.empty())
        b_.set_device_name("pid " + e.pid, e.arg_name);
      if (e.name == "thread_name" && !e.arg_name.empty())
        b_.set_thread_name(lane_device, tid, e.arg_name);
      return true;
    } else {
      return true;  // instant, flow, object events: not drawn
    }
    if (++events_ >= limits_.max_events) return at_limit_ = true, false;
    return true;
  }

  TimelineBuilder& b_;
  ChromeLimits limits_;
  int depth_ = 0, events_depth_ = -1, args_depth_ = -1;
  bool in_event_ = false, events_closed_ = false, at_limit_ = false;
  std::string key_;
  Event ev_;
  std::unordered_map<std::string, std::vector<Event>> open_;  // "pid\x1ftid" -> open "B" events
  std::unordered_map<std::string, int64_t> tid_names_;
  int64_t events_ = 0, unmatched_ends_ = 0;
  int64_t error_byte_ = -1;
  std::string error_text_;
  bool error_inside_event_ = false;
};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Expected<Loaded> load_chrome_trace(const std::string& path, const ChromeLimits& limits) {
  std::error_code exists_error;
  if (std::filesystem::exists(path, exists_error)) RETURN_IF_ERROR(require_regular_file(path));  // a FIFO would block the viewer
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return make_error("cannot open the trace file (does it exist and is it readable?)", path);
  const int64_t size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  if (size <= 0)
    return make_error("the trace file is empty (expected Chrome's {\"traceEvents\":[...]})", path);
  const std::string file = base_name(path);
  TimelineBuilder builder;
  Reader reader(builder, limits);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(in, &reader);
  } catch (const std::exception& e) {  // bad_alloc, stream failures
    return make_error(std::string("cannot read the trace: ") + e.what(), path);
  }
  Loaded out;
  out.title = file;
  if (!ok && reader.stopped_at_limit()) {
    out.warnings.push_back(file + ": stopped after " + thousands(reader.events()) +
                           " events (the viewer's limit)");
  } else if (!ok) {
    if (reader.events() == 0)
      return make_error("not a Chrome trace: invalid JSON at byte " +
                            std::to_string(reader.error_byte()) + " (" + reader.error_text() + ")",
                        path);
    const bool at_end = reader.error_byte() >= size;
    std::string why = at_end ? (reader.error_inside_event() ? "JSON ended inside an event"
                                                            : "JSON ended between events")
                             : "invalid JSON: " + reader.error_text();
    out.warnings.push_back(file + ": cut short at byte " + thousands(reader.error_byte()) + " (" +
                           why + "); showing the " + thousands(reader.events()) +
                           " events before it");
  } else if (!reader.found_events()) {
    return make_error("no trace events: expected {\"traceEvents\":[...]} or an array of events",
                      path);
  }
  if (const int64_t n = reader.unmatched_begins(); n > 0)
    out.warnings.push_back(file + ": " + thousands(n) +
                           " \"B\"/\"E\" events without their pair (not shown)");
  auto model = std::make_shared<TimelineModel>(std::move(builder).build());
  if (model->span_count() == 0 && model->counters().empty())
    return make_error("the trace has no spans or counters to show", path);
  out.model = std::move(model);
  return out;
}

}  // namespace tessera::insight::timeline
