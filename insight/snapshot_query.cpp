// Reading a run's snapshots and their provenance (see snapshot_query.h).
#include "insight/snapshot_query.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "insight/sql.h"

namespace tessera::insight {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

uint64_t parse_hex(const std::string& s) {
  if (s.empty() || s.size() > 16) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 16);
  return end && *end == '\0' ? static_cast<uint64_t>(v) : 0;
}

}  // namespace

Expected<RunSnapshots> read_run_snapshots(const Database& db, int64_t run) {
  RunSnapshots out;
  out.run = run;
  {
    Stmt st(db.handle(), "SELECT name, kind, graph_name, engine_version FROM runs WHERE id = ?;");
    if (!st.ok()) return db.error("reading run " + std::to_string(run));
    st.bind(1, run);
    const int rc = st.step();
    if (rc == SQLITE_DONE) return make_error("no run " + std::to_string(run) + " in " + db.path());
    if (rc != SQLITE_ROW) return db.error("reading run " + std::to_string(run));
    out.name = st.text(0);
    out.kind = st.text(1);
    out.graph_name = st.text(2);
    out.engine_version = st.text(3);
  }
  std::map<int64_t, size_t> by_row;  // snapshots.id -> index into out.snapshots
  {
    Stmt st(db.handle(),
            "SELECT s.id, s.stage, s.pass, s.idx, t.text, s.graph_hash, s.duration_ns, s.changed, s.nodes_before, "
            "s.nodes_after, s.diagnostics FROM snapshots s LEFT JOIN ir_texts t ON t.hash = s.ir "
            "WHERE s.run = ? ORDER BY s.idx, s.id;");
    if (!st.ok()) return db.error("reading the snapshots of run " + std::to_string(run));
    st.bind(1, run);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      observe::Snapshot s;
      s.stage = st.text(1);
      s.pass = st.text(2);
      s.index = static_cast<int>(st.i64(3));
      s.ir_text = st.text(4);
      s.hash = parse_hex(st.text(5));
      s.duration_ns = st.i64(6);
      s.changed = st.i64(7) != 0;
      s.nodes_before = static_cast<int>(st.i64(8));
      s.nodes_after = static_cast<int>(st.i64(9));
      s.diagnostics = split_lines(st.text(10));
      by_row[st.i64(0)] = out.snapshots.size();
      out.snapshots.push_back(std::move(s));
    }
    if (rc != SQLITE_DONE) return db.error("reading the snapshots of run " + std::to_string(run));
  }
  {
    Stmt st(db.handle(),
            "SELECT p.snapshot, p.node, p.from_node FROM snapshot_provenance p JOIN snapshots s ON s.id = p.snapshot "
            "WHERE s.run = ? ORDER BY p.snapshot, p.node, p.from_node;");
    if (!st.ok()) return db.error("reading the provenance of run " + std::to_string(run));
    st.bind(1, run);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      auto it = by_row.find(st.i64(0));
      if (it == by_row.end()) continue;
      auto& prov = out.snapshots[it->second].provenance;
      const auto node = static_cast<int32_t>(st.i64(1));
      if (prov.empty() || prov.back().first != node) prov.emplace_back(node, std::vector<int32_t>{});
      prov.back().second.push_back(static_cast<int32_t>(st.i64(2)));
    }
    if (rc != SQLITE_DONE) return db.error("reading the provenance of run " + std::to_string(run));
  }
  return out;
}

}  // namespace tessera::insight
