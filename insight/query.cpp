// Queries over the insight store and the Chrome trace export.
#include "insight/query.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "insight/rows.h"
#include "insight/sql.h"

namespace tessera::insight {
namespace {


const char* kind_name(int64_t k) {
  static const char* const kNames[] = {"stage", "pass", "kernel", "copy", "step"};
  return k >= 0 && k <= 4 ? kNames[k] : "kernel";
}


bool lower_is_better(const std::string& name) { return name.find("loss") != std::string::npos; }

Expected<int64_t> count(const Database& db, const std::string& table, int64_t run) {
  Stmt st(db.handle(), "SELECT COUNT(*) FROM " + table + " WHERE run = ?;");
  st.bind(1, run);
  if (st.step() != SQLITE_ROW) return db.error("cannot count " + table);
  return st.i64(0);
}

Expected<CheckpointRecord> checkpoint_by_id(const Database& db, int64_t id) {
  Stmt st(db.handle(), "SELECT id, run, step, wall_ns, path, checksum FROM checkpoints WHERE id = ?;");
  st.bind(1, id);
  CheckpointRecord c;
  if (st.step() == SQLITE_ROW) c = {st.i64(0), st.i64(1), st.i64(2), st.i64(3), st.text(4), st.text(5)};
  return c;
}

// Appends `s` as a JSON string. Bytes of 0x80 and above pass through (UTF-8 stays UTF-8).
void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

Expected<std::vector<RunRecord>> list_runs(const Database& db, int64_t limit) {
  Stmt st(db.handle(), std::string("SELECT ") + rows::kRunColumns + " FROM runs ORDER BY id DESC" +
                           (limit > 0 ? " LIMIT " + std::to_string(limit) : std::string()) + ";");
  if (!st.ok()) return db.error("cannot read the runs");
  std::vector<RunRecord> runs;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) runs.push_back(rows::read_run(st));
  if (rc != SQLITE_DONE) return db.error("cannot read the runs");
  return runs;
}

Expected<int64_t> resolve_run(const Database& db, const std::string& ref) {
  if (ref.empty()) return make_error("no run given", db.path());
  const bool numeric = std::all_of(ref.begin(), ref.end(), [](char c) { return c >= '0' && c <= '9'; });
  Stmt st(db.handle(), numeric ? "SELECT id FROM runs WHERE id = ?;"
                       : ref == "last" ? "SELECT id FROM runs ORDER BY id DESC LIMIT 1;"
                                       : "SELECT id FROM runs WHERE name = ? ORDER BY id DESC LIMIT 1;");
  if (numeric) st.bind(1, static_cast<int64_t>(std::stoll(ref.substr(0, 18))));
  else if (ref != "last") st.bind(1, ref);
  const int rc = st.step();
  if (rc == SQLITE_ROW) return st.i64(0);
  if (rc != SQLITE_DONE) return db.error("cannot look up run '" + ref + "'");
  return make_error("no run '" + ref + "' in this database (`tessera runs list` shows them)", db.path());
}

Expected<RunDetails> run_details(const Database& db, int64_t run) {
  RunDetails d;
  {
    Stmt st(db.handle(), std::string("SELECT ") + rows::kRunColumns + " FROM runs WHERE id = ?;");
    st.bind(1, run);
    const int rc = st.step();
    if (rc != SQLITE_ROW) {
      if (rc == SQLITE_DONE) return make_error("no run " + std::to_string(run), db.path());
      return db.error("cannot read run " + std::to_string(run));
    }
    d.run = rows::read_run(st);
  }
  {
    Stmt st(db.handle(), "SELECT key, value FROM hyperparams WHERE run = ? ORDER BY key;");
    st.bind(1, run);
    while (st.step() == SQLITE_ROW) d.hyperparams[st.text(0)] = st.text(1);
  }
  {
    Stmt st(db.handle(),
            "SELECT r.role, g.hash, g.name, g.format FROM run_graphs r JOIN graphs g ON g.hash = r.graph WHERE r.run = ? "
            "ORDER BY r.role;");
    st.bind(1, run);
    while (st.step() == SQLITE_ROW) d.graphs.push_back({st.text(0), st.text(1), st.text(2), st.text(3)});
  }
  {
    Stmt st(db.handle(),
            "SELECT r.split, d.fingerprint, d.path, COALESCE(d.examples, 0) FROM run_datasets r "
            "JOIN datasets d ON d.fingerprint = r.fingerprint WHERE r.run = ? ORDER BY r.split DESC;");
    st.bind(1, run);
    while (st.step() == SQLITE_ROW) d.datasets.push_back({st.text(0), st.text(1), st.text(2), st.i64(3)});
  }
  {
    Stmt st(db.handle(), "SELECT id, run, step, wall_ns, path, checksum FROM checkpoints WHERE run = ? ORDER BY id;");
    st.bind(1, run);
    while (st.step() == SQLITE_ROW)
      d.checkpoints.push_back({st.i64(0), st.i64(1), st.i64(2), st.i64(3), st.text(4), st.text(5)});
  }
  TRY(d.spans, count(db, "spans", run));
  TRY(d.metrics, count(db, "metrics", run));
  TRY(d.snapshots, count(db, "snapshots", run));
  TRY(d.memory_events, count(db, "memory_events", run));
  return d;
}

Expected<std::vector<MetricPoint>> run_metrics(const Database& db, int64_t run) {
  Stmt st(db.handle(), "SELECT name, step, epoch, wall_ns, value FROM metrics WHERE run = ? ORDER BY name, step, rowid;");
  st.bind(1, run);
  std::vector<MetricPoint> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back({st.text(0), st.i64(1), st.i64(2), st.i64(3), st.real_or_nan(4)});
  if (rc != SQLITE_DONE) return db.error("cannot read the metrics of run " + std::to_string(run));
  return out;
}

std::vector<MetricSummary> summarize_metrics(const std::vector<MetricPoint>& points) {
  std::vector<MetricSummary> out;
  for (const MetricPoint& p : points) {
    if (out.empty() || out.back().name != p.name) {
      out.push_back({p.name, p.value, p.value, p.step, p.step, 0});
    }
    MetricSummary& s = out.back();
    ++s.count;
    s.final_value = p.value;
    s.final_step = p.step;
    // NaN is never the best; a series that starts with NaN takes its first number as the best.
    const bool better = !std::isnan(p.value) &&
                        (std::isnan(s.best_value) || (lower_is_better(p.name) ? p.value < s.best_value : p.value > s.best_value));
    if (better) {
      s.best_value = p.value;
      s.best_step = p.step;
    }
  }
  return out;
}

Expected<std::vector<LineageEdge>> lineage_from(const Database& db, int64_t run) {
  Stmt st(db.handle(),
          "SELECT kind, from_type, from_id, to_type, to_id, note FROM lineage WHERE from_type = 'run' AND from_id = ? "
          "ORDER BY id;");
  st.bind(1, std::to_string(run));
  std::vector<LineageEdge> out;
  while (st.step() == SQLITE_ROW) {
    LineageEdge e{st.text(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5), {}};
    if (e.to_type == "checkpoint") {
      TRY(e.checkpoint, checkpoint_by_id(db, std::stoll(e.to_id)));
    } else if (e.to_type == "checkpoint_path") {
      e.checkpoint.path = e.to_id;
    }
    out.push_back(std::move(e));
  }
  return out;
}

Expected<std::vector<std::pair<int64_t, LineageEdge>>> lineage_into(const Database& db, int64_t run) {
  Stmt st(db.handle(),
          "SELECT l.kind, l.from_type, l.from_id, l.to_type, l.to_id, l.note, c.id, c.run, c.step, c.wall_ns, c.path, "
          "c.checksum FROM lineage l JOIN checkpoints c ON l.to_type = 'checkpoint' AND l.to_id = CAST(c.id AS TEXT) "
          "WHERE c.run = ? ORDER BY l.id;");
  st.bind(1, run);
  std::vector<std::pair<int64_t, LineageEdge>> out;
  while (st.step() == SQLITE_ROW) {
    LineageEdge e{st.text(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5),
                  {st.i64(6), st.i64(7), st.i64(8), st.i64(9), st.text(10), st.text(11)}};
    out.emplace_back(std::stoll(e.from_id), std::move(e));
  }
  return out;
}

Expected<std::vector<observe::Span>> spans_in_window(const Database& db, int64_t run, int64_t t0_ns, int64_t t1_ns) {
  int64_t max_span = 0;
  {
    Stmt st(db.handle(), "SELECT max_span_ns FROM runs WHERE id = ?;");
    st.bind(1, run);
    if (st.step() == SQLITE_ROW) max_span = st.i64(0);
  }
  // A span overlaps the window when it starts before t1 and ends after t0; no span is longer than
  // max_span, so it starts after t0 - max_span: a range of the (run, start_ns) index.
  Stmt st(db.handle(), std::string("SELECT ") + rows::kSpanColumns + " " + rows::kSpanJoins +
                           " WHERE s.run = ? AND s.start_ns >= ? AND s.start_ns < ? AND s.end_ns > ? ORDER BY s.start_ns;");
  st.bind(1, run);
  st.bind(2, t0_ns - max_span);
  st.bind(3, t1_ns);
  st.bind(4, t0_ns);
  std::vector<observe::Span> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    observe::Span s;
    rows::read_span(st, s);
    out.push_back(std::move(s));
  }
  if (rc != SQLITE_DONE) return db.error("cannot read the spans of run " + std::to_string(run));
  return out;
}

Expected<std::pair<int64_t, int64_t>> span_extent(const Database& db, int64_t run) {
  Stmt st(db.handle(), "SELECT MIN(start_ns), MAX(start_ns) FROM spans WHERE run = ?;");
  st.bind(1, run);
  if (st.step() != SQLITE_ROW) return db.error("cannot read the spans of run " + std::to_string(run));
  if (st.is_null(0)) return std::pair<int64_t, int64_t>{0, 0};
  return std::pair<int64_t, int64_t>{st.i64(0), st.i64(1)};
}

Expected<std::vector<OpStats>> op_stats(const Database& db, int64_t run) {
  Stmt st(db.handle(),
          "SELECT s.kind, o.text, s.count, s.total_ns, s.min_ns, s.max_ns FROM span_stats s JOIN strings o ON o.id = s.op "
          "WHERE s.run = ? ORDER BY s.total_ns DESC, o.text;");
  st.bind(1, run);
  std::vector<OpStats> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    const int64_t kind = st.i64(0);
    std::string op = st.text(1);
    if (kind != static_cast<int64_t>(observe::Span::Kind::kKernel) || op.empty())
      op = std::string("<") + kind_name(kind) + (op.empty() ? "" : " " + op) + ">";
    out.push_back({op, st.i64(2), st.i64(3), st.i64(4), st.i64(5)});
  }
  if (rc != SQLITE_DONE) return db.error("cannot read the spans of run " + std::to_string(run));
  return out;
}

Expected<std::vector<RankStats>> rank_stats(const Database& db, int64_t run) {
  Stmt st(db.handle(),
          "SELECT d.text, o.text, s.start_ns, s.end_ns FROM spans s JOIN strings d ON d.id = s.device "
          "JOIN strings o ON o.id = s.op WHERE s.run = ? AND s.kind = ? AND d.text LIKE 'rank%/%';");
  st.bind(1, run);
  st.bind(2, static_cast<int64_t>(observe::Span::Kind::kKernel));
  std::map<int, RankStats> by_rank;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    const std::string device = st.text(0);
    const int r = std::atoi(device.c_str() + 4);
    const std::string op = st.text(1);
    RankStats& rs = by_rank[r];
    rs.rank = r;
    const int64_t dur = st.i64(3) - st.i64(2);
    if (op == "AllReduce" || op == "AllReduceStart" || op == "AllReduceWait") {
      ++rs.allreduces;
      rs.comm_ns += dur;
    } else {
      rs.compute_ns += dur;
    }
  }
  if (rc != SQLITE_DONE) return db.error("cannot read the spans of run " + std::to_string(run));
  std::vector<RankStats> out;
  for (const auto& [r, rs] : by_rank) out.push_back(rs);
  return out;
}

Expected<int64_t> export_chrome_trace(const Database& db, int64_t run, const std::string& file) {
  TRY(RunDetails d, run_details(db, run));
  TRY(auto extent, span_extent(db, run));
  const int64_t t0 = extent.first;
  std::ofstream out(file, std::ios::binary);
  if (!out) return make_error("cannot write the trace file", file);
  auto us = [&](int64_t ns) { return static_cast<double>(ns - t0) / 1000.0; };
  int64_t n = 0;
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  auto emit = [&](const nlohmann::json& e) {
    out << (n++ ? ",\n" : "") << e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  emit({{"name", "process_name"}, {"ph", "M"}, {"pid", run}, {"tid", 0},
        {"args", {{"name", "run " + std::to_string(run) + " " + d.run.name}}}});
  Stmt st(db.handle(), std::string("SELECT ") + rows::kSpanColumns + " " + rows::kSpanJoins +
                           " WHERE s.run = ? ORDER BY s.start_ns;");
  st.bind(1, run);
  int rc;
  // Spans are the bulk (a million is common): formatted by hand, an order of magnitude faster than
  // building a json object per event.
  std::string line;
  char num[160];
  while ((rc = st.step()) == SQLITE_ROW) {
    line = n++ ? ",\n{\"name\":" : "{\"name\":";
    append_json_string(line, st.text(1));
    line += ",\"cat\":\"";
    line += kind_name(st.i64(0));
    std::snprintf(num, sizeof num, "\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%lld,\"tid\":%lld,\"args\":{\"device\":",
                  us(st.i64(7)), static_cast<double>(st.i64(8) - st.i64(7)) / 1000.0, static_cast<long long>(run),
                  static_cast<long long>(st.i64(6)));
    line += num;
    append_json_string(line, st.text(3));
    if (const std::string op = st.text(2); !op.empty()) line += ",\"op\":", append_json_string(line, op);
    if (const std::string detail = st.text(4); !detail.empty()) line += ",\"detail\":", append_json_string(line, detail);
    if (st.i64(5) >= 0) line += ",\"node\":" + std::to_string(st.i64(5));
    if (st.i64(9)) line += ",\"bytes\":" + std::to_string(st.i64(9));
    if (st.real(10) > 0) {
      std::snprintf(num, sizeof num, ",\"flops\":%.17g", st.real(10));
      line += num;
    }
    line += "}}";
    out << line;
  }
  if (rc != SQLITE_DONE) return db.error("cannot read the spans of run " + std::to_string(run));
  // Memory as a running total per device: a counter track.
  Stmt mem(db.handle(), "SELECT device, what, time_ns, bytes FROM memory_events WHERE run = ? ORDER BY time_ns;");
  mem.bind(1, run);
  std::map<std::string, int64_t> live;
  while (mem.step() == SQLITE_ROW) {
    const std::string device = mem.text(0);
    live[device] += mem.i64(3);
    emit({{"name", "memory " + device}, {"ph", "C"}, {"ts", us(mem.i64(2))}, {"pid", run}, {"tid", 0},
          {"args", {{"bytes", live[device]}}}});
  }
  out << "\n]}\n";
  out.flush();
  if (!out) return make_error("cannot write the trace file (disk full?)", file);
  return n;
}

namespace rows {

const char* const kRunColumns =
    "id, name, kind, status, command, graph_name, engine_version, host, COALESCE(error, ''), COALESCE(pid, 0), "
    "COALESCE(seed, 0), started_ns, COALESCE(ended_ns, 0), COALESCE(heartbeat_ns, 0), steady_offset_ns";

RunRecord read_run(const Stmt& st) {
  RunRecord r;
  r.id = st.i64(0);
  r.name = st.text(1);
  r.kind = st.text(2);
  r.status = st.text(3);
  r.command = st.text(4);
  r.graph_name = st.text(5);
  r.engine_version = st.text(6);
  r.host = st.text(7);
  r.error = st.text(8);
  r.pid = st.i64(9);
  r.seed = st.i64(10);
  r.started_ns = st.i64(11);
  r.ended_ns = st.i64(12);
  r.heartbeat_ns = st.i64(13);
  r.steady_offset_ns = st.i64(14);
  return r;
}

const char* const kSpanColumns =
    "s.kind, n.text, o.text, d.text, t.text, s.node, s.thread, s.start_ns, s.end_ns, s.bytes, s.flops";
const char* const kSpanJoins =
    "FROM spans s JOIN strings n ON n.id = s.name JOIN strings o ON o.id = s.op "
    "JOIN strings d ON d.id = s.device JOIN strings t ON t.id = s.detail";

void read_span(const Stmt& st, observe::Span& s) {
  const int64_t kind = st.i64(0);  // observe::Span::Kind as an integer
  s.kind = kind >= 0 && kind <= 4 ? static_cast<observe::Span::Kind>(kind) : observe::Span::Kind::kKernel;
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
}

}  // namespace rows

}  // namespace tessera::insight
