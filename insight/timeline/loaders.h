// Loading a timeline: a run of the insight store, or a Chrome trace file (ours from `tessera runs
// export-trace`, or any tool's). Errors are values with a message the view shows in place of the
// timeline; a trace cut short (a crash while writing) keeps every complete event before the cut,
// with a warning.
//
//   TRY(Loaded l, load_chrome_trace("trace.json"));
//   TimelineView view(l.model);
//   for (const std::string& w : l.warnings) view.set_message(w);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "insight/timeline/model.h"

namespace tessera::insight::timeline {

struct Loaded {
  std::shared_ptr<const TimelineModel> model;  // never null on success
  std::string title;                           // "run 3 'lenet' (train, finished)", "trace.json"
  std::vector<std::string> warnings;           // shown above the timeline
};

// The spans and memory events of run `run_ref` (an id, a name or "last") in the database at
// `db_path`. Errors: no database file there (it is not created), not a database or damaged,
// unknown run, a run without spans.
Expected<Loaded> load_run(const std::string& db_path, const std::string& run_ref);

struct ChromeLimits {
  int64_t max_events = 50'000'000;  // events kept; beyond: stop with a warning
  size_t max_string = 4096;         // longer names and args are cut to this many bytes
};

// A Chrome trace: {"traceEvents":[...]} or a bare array of events. "X" (ts, dur in us), "B"/"E"
// pairs per (pid, tid), "C" counters (each numeric arg a curve), "M" process_name/thread_name for
// lane labels. pid/tid make lanes (args.device, when present, names the lane's device); args.node,
// args.op, args.detail, args.bytes, args.flops fill the span. cat stage|pass|kernel|copy|step sets
// the kind. Invalid JSON after some events: the events before it are kept, with a warning naming
// the byte; nothing usable (empty, garbage, no events): an error.
Expected<Loaded> load_chrome_trace(const std::string& path, const ChromeLimits& limits = {});

// 1234567 -> "1,234,567".
std::string thousands(int64_t n);

}  // namespace tessera::insight::timeline
