// Loading a recorded run from the insight store into a timeline (loaders.h).
#include <filesystem>

#include "insight/query.h"
#include "insight/timeline/loaders.h"
#include "insight/trace_query.h"

namespace tessera::insight::timeline {

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

Expected<Loaded> load_run(const std::string& db_path, const std::string& run_ref) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec))
    return make_error(
        "no insight database here: record a run first (tessera run|train), or pass --db PATH",
        db_path);
  OpenOptions options;
  options.mark_crashed = false;  // a viewer only reads
  TRY(Database db, Database::open(db_path, options));
  TRY(int64_t run, resolve_run(db, run_ref));
  TRY(RunDetails details, run_details(db, run));
  const RunRecord& r = details.run;
  Loaded out;
  out.title = "run " + std::to_string(run) + " '" + r.name + "' (" +
              (r.kind.empty() ? "" : r.kind + ", ") + r.status + ")";
  if (details.spans == 0)
    return make_error(out.title + " recorded no spans: nothing to draw (`tessera runs show " +
                          std::to_string(run) + "` lists what it has)",
                      db_path);
  TimelineBuilder builder;
  builder.reserve(static_cast<size_t>(details.spans));
  TRY(int64_t n, for_each_span(db, run, [&](const observe::Span& s) { builder.add_span(s); }));
  (void)n;
  TRY(auto events, memory_events(db, run));
  for (const observe::MemoryEvent& e : events) builder.add_memory(e);
  if (r.status == "running")
    out.warnings.push_back(out.title + " is still running: showing the spans written so far");
  if (r.status == "crashed")
    out.warnings.push_back(out.title + " crashed: showing the spans committed before it stopped");
  out.model = std::make_shared<TimelineModel>(std::move(builder).build());
  return out;
}

}  // namespace tessera::insight::timeline
