// Reading a run's whole trace from the insight store, streamed: every span (without building a
// vector of observe::Span, which costs ~170 bytes a span) and the memory events. Used by the
// profiler timeline (insight/timeline/).
//
//   RETURN_IF_ERROR(for_each_span(db, run, [&](const observe::Span& s) { builder.add_span(s); }));
//   TRY(auto events, memory_events(db, run));
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/status.h"
#include "engine/observe/sinks.h"
#include "insight/database.h"

namespace tessera::insight {

// Calls `fn` for each span of the run in start order; the Span passed is reused between calls.
// Returns the number of spans.
Expected<int64_t> for_each_span(const Database& db, int64_t run,
                                const std::function<void(const observe::Span&)>& fn);
// The run's memory events in time order.
Expected<std::vector<observe::MemoryEvent>> memory_events(const Database& db, int64_t run);

}  // namespace tessera::insight
