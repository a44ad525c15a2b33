// Streaming a run's spans and its memory events out of the insight store (trace_query.h).
#include "insight/trace_query.h"

#include <string>

#include "insight/sql.h"

namespace tessera::insight {

Expected<int64_t> for_each_span(const Database& db, int64_t run,
                                const std::function<void(const observe::Span&)>& fn) {
  Stmt st(db.handle(),
          "SELECT s.kind, n.text, o.text, d.text, t.text, s.node, s.thread, s.start_ns, s.end_ns, "
          "s.bytes, s.flops "
          "FROM spans s JOIN strings n ON n.id = s.name JOIN strings o ON o.id = s.op JOIN strings "
          "d ON d.id = s.device "
          "JOIN strings t ON t.id = s.detail WHERE s.run = ? ORDER BY s.start_ns;");
  if (!st.ok()) return db.error("cannot read the spans of run " + std::to_string(run));
  st.bind(1, run);
  observe::Span s;
  int64_t n = 0;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    const int64_t kind = st.i64(0);
    s.kind = kind >= 0 && kind <= 4 ? static_cast<observe::Span::Kind>(kind)
                                    : observe::Span::Kind::kKernel;
    s.name = st.text(1);
    s.op = st.text(2);
    s.device = st.text(3);
    s.detail = st.text(4);
    s.node = static_cast<int32_t>(st.i64(5));
    s.thread = static_cast<int32_t>(st.i64(6));
    s.start_ns = st.i64(7);
    s.end_ns = st.i64(8);
    s.bytes = st.i64(9);
    s.flops = st.real(10);
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
