// Batched reads for the studio's runs dashboard (runs_query.h).
//
// Metric summaries without reading every point: the index metrics(run, name, step) is walked as a
// skip scan, per run one seek per metric name to find the next name and one for its last step, so
// 500 runs x 3 metrics cost about 3,500 index seeks whatever the number of steps. The best value of
// a metric needs every point; load_run_summaries leaves it to the compare view, which reads the
// series of the few runs compared (summarize_metrics).
#include "insight/runs_query.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <unordered_map>

#include "insight/rows.h"
#include "insight/sql.h"

namespace tessera::insight {
namespace {


// The run's graph hash per run: role "input" first, else the smallest role name.
Expected<std::unordered_map<int64_t, std::string>> graph_hashes(const Database& db) {
  Stmt st(db.handle(), "SELECT run, graph, role FROM run_graphs ORDER BY run, role <> 'input', role;");
  if (!st.ok()) return db.error("cannot read the runs' graphs");
  std::unordered_map<int64_t, std::string> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.emplace(st.i64(0), st.text(1));  // the first per run wins
  if (rc != SQLITE_DONE) return db.error("cannot read the runs' graphs");
  return out;
}

// Final values of every run's metrics through the skip scan described at the top of the file.
Status read_final_values(const Database& db, std::vector<RunSummary>& runs) {
  // (run = ?, name > ?) is a true index range; a row value (run, name) > (?, ?) is not (SQLite
  // seeks on run only and scans the run's entries: ten times slower here).
  Stmt next(db.handle(), "SELECT name FROM metrics WHERE run = ? AND name > ? ORDER BY name LIMIT 1;");
  Stmt last(db.handle(),
            "SELECT step, value FROM metrics WHERE run = ? AND name = ? ORDER BY step DESC, rowid DESC LIMIT 1;");
  if (!next.ok() || !last.ok()) return db.error("cannot read the metrics");
  for (RunSummary& r : runs) {
    std::string name;
    for (;;) {
      next.reset();
      next.bind(1, r.run.id);
      next.bind(2, name);
      const int rc = next.step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return db.error("cannot read the metrics of run " + std::to_string(r.run.id));
      name = next.text(0);
      last.reset();
      last.bind(1, r.run.id);
      last.bind(2, name);
      if (last.step() == SQLITE_ROW) {
        MetricSummary m;
        m.name = name;
        m.final_value = m.best_value = last.real_or_nan(1);
        m.final_step = m.best_step = last.i64(0);
        r.metrics.push_back(std::move(m));
      }
    }
  }
  return Status::ok();
}

}  // namespace

Expected<std::vector<RunSummary>> load_run_summaries(const Database& db) {
  std::vector<RunSummary> runs;
  std::unordered_map<int64_t, size_t> index;
  {
    Stmt st(db.handle(), std::string("SELECT ") + rows::kRunColumns + " FROM runs ORDER BY id;");
    if (!st.ok()) return db.error("cannot read the runs");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      index[st.i64(0)] = runs.size();
      runs.push_back({rows::read_run(st), {}, {}, {}});
    }
    if (rc != SQLITE_DONE) return db.error("cannot read the runs");
  }
  {
    Stmt st(db.handle(), "SELECT run, key, value FROM hyperparams;");
    if (!st.ok()) return db.error("cannot read the hyper-parameters");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      auto it = index.find(st.i64(0));
      if (it != index.end()) runs[it->second].hyperparams[st.text(1)] = st.text(2);
    }
    if (rc != SQLITE_DONE) return db.error("cannot read the hyper-parameters");
  }
  TRY(auto hashes, graph_hashes(db));
  for (auto& [run, hash] : hashes) {
    auto it = index.find(run);
    if (it != index.end()) runs[it->second].graph_hash = hash;
  }
  RETURN_IF_ERROR(read_final_values(db, runs));
  return runs;
}

Expected<std::map<int64_t, std::vector<MetricPoint>>> load_metric_series(const Database& db,
                                                                         const std::vector<int64_t>& runs,
                                                                         const std::string& name) {
  std::map<int64_t, std::vector<MetricPoint>> out;
  Stmt st(db.handle(), name.empty()
                           ? "SELECT name, step, epoch, wall_ns, value FROM metrics WHERE run = ? ORDER BY name, step, rowid;"
                           : "SELECT name, step, epoch, wall_ns, value FROM metrics WHERE run = ? AND name = ? "
                             "ORDER BY step, rowid;");
  if (!st.ok()) return db.error("cannot read the metrics");
  for (int64_t run : runs) {
    st.reset();
    st.bind(1, run);
    if (!name.empty()) st.bind(2, name);
    std::vector<MetricPoint> points;
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) points.push_back({st.text(0), st.i64(1), st.i64(2), st.i64(3), st.real_or_nan(4)});
    if (rc != SQLITE_DONE) return db.error("cannot read the metrics of run " + std::to_string(run));
    if (!points.empty()) out[run] = std::move(points);
  }
  return out;
}

Expected<RunGraph> run_graph(const Database& db, int64_t run) {
  Stmt st(db.handle(),
          "SELECT g.hash, g.name, g.format, r.role, g.body FROM run_graphs r JOIN graphs g ON g.hash = r.graph "
          "WHERE r.run = ? ORDER BY r.role <> 'input', r.role LIMIT 1;");
  if (!st.ok()) return db.error("cannot read the graph of run " + std::to_string(run));
  st.bind(1, run);
  const int rc = st.step();
  if (rc == SQLITE_ROW) return RunGraph{st.text(0), st.text(1), st.text(2), st.text(3), st.text(4)};
  if (rc != SQLITE_DONE) return db.error("cannot read the graph of run " + std::to_string(run));
  return make_error("run " + std::to_string(run) + " recorded no graph", db.path());
}

Expected<LineageGraph> load_lineage(const Database& db) {
  LineageGraph g;
  {
    Stmt st(db.handle(), "SELECT hash, name, created_ns FROM graphs ORDER BY created_ns, hash;");
    if (!st.ok()) return db.error("cannot read the graphs");
    while (st.step() == SQLITE_ROW) g.graphs.push_back({st.text(0), st.text(1), st.i64(2)});
  }
  TRY(auto hashes, graph_hashes(db));
  {
    Stmt st(db.handle(), "SELECT id, name, status FROM runs ORDER BY id;");
    if (!st.ok()) return db.error("cannot read the runs");
    while (st.step() == SQLITE_ROW) {
      LineageGraph::Run r{st.i64(0), st.text(1), st.text(2), {}};
      auto it = hashes.find(r.id);
      if (it != hashes.end()) r.graph_hash = it->second;
      g.runs.push_back(std::move(r));
    }
  }
  {
    Stmt st(db.handle(), "SELECT id, run, step, wall_ns, path, checksum FROM checkpoints ORDER BY id;");
    if (!st.ok()) return db.error("cannot read the checkpoints");
    while (st.step() == SQLITE_ROW)
      g.checkpoints.push_back({st.i64(0), st.i64(1), st.i64(2), st.i64(3), st.text(4), st.text(5)});
  }
  {
    Stmt st(db.handle(), "SELECT kind, from_type, from_id, to_type, to_id FROM lineage ORDER BY id;");
    if (!st.ok()) return db.error("cannot read the lineage");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      LineageGraph::Edge e;
      e.kind = st.text(0);
      const std::string from_type = st.text(1), from_id = st.text(2), to_type = st.text(3), to_id = st.text(4);
      if (from_type == "graph") {
        e.from_graph = from_id;
        e.to_graph = to_id;
      } else {
        e.from_run = std::strtoll(from_id.c_str(), nullptr, 10);
        if (to_type == "checkpoint") e.checkpoint = std::strtoll(to_id.c_str(), nullptr, 10);
        else e.checkpoint_path = to_id;
      }
      g.edges.push_back(std::move(e));
    }
    if (rc != SQLITE_DONE) return db.error("cannot read the lineage");
  }
  return g;
}

Expected<int64_t> data_version(const Database& db) {
  Stmt st(db.handle(), "PRAGMA data_version;");
  if (st.step() != SQLITE_ROW) return db.error("cannot check the database for changes");
  return st.i64(0);
}

}  // namespace tessera::insight
