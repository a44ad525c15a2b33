// Reading a Chrome trace (any tool's: PyTorch's profiler, ours from `tessera runs export-trace`)
// as engine spans, so that a run recorded from Python (tessera.insight Run.log_trace) shows its
// trace in the studio's profiler like a Tessera run.
//
//   TRY(ChromeSpans t, read_chrome_spans("trace.json"));
//   for (const observe::Span& s : t.spans) recorder->on_span(s);
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/observe/sinks.h"

namespace tessera::insight {

struct ChromeSpans {
  std::vector<observe::Span> spans;  // by start time
  int64_t skipped = 0;               // events that are not spans (counters, metadata, instants)
  int64_t invalid = 0;               // spans refused: negative duration, a time beyond any clock
  std::string first_invalid;         // the first of them and why ("event 7 ('conv'): dur -3 us ...")
};

// {"traceEvents": [...]} or a bare array. "X" events (ts, dur in microseconds) and "B"/"E" pairs
// per (pid, tid) become spans; each (pid, tid) a thread index in order of appearance. The kind
// comes from "cat": stage, pass, copy/memcpy/memset, step/python_function/user_annotation;
// anything else (cpu_op, kernel, ...) is a kernel whose op is args.op or the event's name.
// args.device (or a GPU "kernel" category, as cuda:<args.device>) names the device, else "cpu".
// Spans with a negative duration, an end before their begin, or a time beyond +-4e15 us are
// skipped and counted as invalid. Errors name the file and, for invalid JSON, the byte; more than
// `max_events` events is an error; a path that is not a regular file (a FIFO) is refused unopened.
Expected<ChromeSpans> read_chrome_spans(const std::string& path, int64_t max_events = 20'000'000);

}  // namespace tessera::insight
