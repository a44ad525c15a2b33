// Streaming a run's spans and its memory events out of the insight store (trace_query.h).
#include "insight/trace_query.h"

#include <string>

#include "insight/rows.h"
#include "insight/sql.h"

namespace tessera::insight {

Expected<int64_t> for_each_span(const Database& db, int64_t run,
                                const std::function<void(const observe::Span&)>& fn) {
  Stmt st(db.handle(), std::string("SELECT ") + rows::kSpanColumns + " " + rows::kSpanJoins +
                           " WHERE s.run = ? ORDER BY s.start_ns;");
  if (!st.ok()) return db.error("cannot read the spans of run " + std::to_string(run));
  st.bind(1, run);
  observe::Span s;
  int64_t n = 0;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    rows::read_span(st, s);
    fn(s);
    ++n;
  }
  if (rc != SQLITE_DONE) return db.error("cannot read the spans of run " + std::to_string(run));
  return n;
}

Expected<std::vector<observe::MemoryEvent>> memory_events(const Database& db, int64_t run) {
  Stmt st(db.handle(),
          "SELECT device, what, time_ns, bytes FROM memory_events WHERE run = ? ORDER BY time_ns;");
  if (!st.ok()) return db.error("cannot read the memory events of run " + std::to_string(run));
  st.bind(1, run);
  std::vector<observe::MemoryEvent> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW)
    out.push_back({st.text(0), st.text(1), st.i64(2), st.i64(3)});
  if (rc != SQLITE_DONE)
    return db.error("cannot read the memory events of run " + std::to_string(run));
  return out;
}

}  // namespace tessera::insight
