// `tessera runs ...`: lists, shows, compares and exports the runs recorded in the insight store
// (insight/query.h), while other processes may be writing to it.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "engine/stages/compile.h"
#include "engine/data/fingerprint.h"
#include "engine/ir/text.h"
#include "insight/maintenance.h"
#include "insight/query.h"
#include "insight/recorder.h"

namespace tessera::cli {
namespace {

using insight::Database;
using insight::RunRecord;

std::string local_time(int64_t wall_ns) {
  if (wall_ns <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(wall_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string duration_text(double seconds) {
  char buf[32];
  if (seconds < 60) std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  else if (seconds < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(seconds) / 3600, (static_cast<int>(seconds) / 60) % 60);
  return buf;
}

std::string run_duration(const RunRecord& r) {
  const int64_t end = r.ended_ns ? r.ended_ns : r.heartbeat_ns;
  if (end <= 0 || r.started_ns <= 0) return "-";
  return duration_text(static_cast<double>(end - r.started_ns) / 1e9);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

nlohmann::json run_json(const RunRecord& r) {
  return {{"id", r.id},           {"name", r.name},       {"kind", r.kind},         {"status", r.status},
          {"command", r.command}, {"graph", r.graph_name}, {"engine_version", r.engine_version},
          {"host", r.host},       {"pid", r.pid},          {"seed", r.seed},          {"started_ns", r.started_ns},
          {"ended_ns", r.ended_ns}, {"error", r.error}};
}

std::string run_label(const RunRecord& r) {
  return "run " + std::to_string(r.id) + " '" + printable(r.name) + "' (" + (r.kind.empty() ? "" : r.kind + ", ") + r.status + ")";
}

int runs_list(const Database& db, const RunsOptions& o) {
  auto runs = insight::list_runs(db, o.limit);
  if (!runs) return fail(runs.error());
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const RunRecord& r : *runs) j.push_back(run_json(r));
    print_json(j);
    return 0;
  }
  if (runs->empty()) {
    std::cout << "no runs recorded in " << db.path() << "\n";
    return 0;
  }
  std::printf("%5s  %-20s %-7s %-9s %-19s %9s  %s\n", "ID", "NAME", "KIND", "STATUS", "STARTED", "DURATION", "COMMAND");
  bool incomplete = false;
  for (const RunRecord& r : *runs) {
    // A run whose record lost writes (a full disk) is marked: its metrics stop early.
    const bool lost = r.error.find("incomplete record") != std::string::npos;
    incomplete |= lost;
    const std::string status = r.status + (lost ? "*" : "");
    std::printf("%5lld  %-20s %-7s %-9s %-19s %9s  %s\n", static_cast<long long>(r.id), clip(printable(r.name), 20).c_str(),
                r.kind.c_str(), status.c_str(), local_time(r.started_ns).c_str(), run_duration(r).c_str(),
                clip(printable(r.command), 60).c_str());
  }
  if (incomplete) std::printf("* the record of a run so marked is incomplete (see `tessera runs show ID`)\n");
  return 0;
}

int runs_show(const Database& db, const RunsOptions& o) {
  auto id = insight::resolve_run(db, o.runs[0]);
  if (!id) return fail(id.error());
  auto d = insight::run_details(db, *id);
  if (!d) return fail(d.error());
  auto metrics = insight::run_metrics(db, *id);
  if (!metrics) return fail(metrics.error());
  auto ops = insight::op_stats(db, *id);
  if (!ops) return fail(ops.error());
  const auto summary = insight::summarize_metrics(*metrics);
  // Data parallel: per rank, the sampled steps' all-reduce kernels and other kernels (spans) and
  // the whole run's time in MPI and waiting for it (metrics dist/comm_s/rankN, dist/wait_s/rankN).
  auto final_of = [&](const std::string& name) -> double {
    for (const auto& m : summary)
      if (m.name == name) return m.final_value;
    return -1;
  };
  auto ranks = insight::rank_stats(db, *id);
  if (!ranks) return fail(ranks.error());
  // A rank whose spans went to another host's database still has its MPI time here (rank 0
  // gathers every rank's): listed with no kernel figures.
  const std::string comm_prefix = "dist/comm_s/rank";
  for (const auto& m : summary) {
    if (m.name.rfind(comm_prefix, 0) != 0) continue;
    const int r = std::atoi(m.name.c_str() + comm_prefix.size());
    if (std::none_of(ranks->begin(), ranks->end(), [&](const insight::RankStats& s) { return s.rank == r; }))
      ranks->push_back(insight::RankStats{r});
  }
  std::sort(ranks->begin(), ranks->end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  if (o.json) {
    nlohmann::json j = run_json(d->run);
    j["hyperparams"] = d->hyperparams;
    j["graphs"] = nlohmann::json::array();
    for (const auto& g : d->graphs) j["graphs"].push_back({{"role", g.role}, {"hash", g.hash}, {"name", g.name}});
    j["datasets"] = nlohmann::json::array();
    for (const auto& s : d->datasets)
      j["datasets"].push_back({{"split", s.split}, {"fingerprint", s.fingerprint}, {"path", s.path}, {"examples", s.examples}});
    j["checkpoints"] = nlohmann::json::array();
    for (const auto& c : d->checkpoints)
      j["checkpoints"].push_back({{"id", c.id}, {"path", c.path}, {"step", c.step}, {"checksum", c.checksum}});
    j["metrics"] = nlohmann::json::object();
    for (const auto& m : summary)
      j["metrics"][m.name] = {{"final", m.final_value}, {"final_step", m.final_step}, {"best", m.best_value},
                              {"best_step", m.best_step}, {"count", m.count}};
    j["counts"] = {{"spans", d->spans}, {"metrics", d->metrics}, {"snapshots", d->snapshots},
                   {"memory_events", d->memory_events}};
    j["ops"] = nlohmann::json::array();
    for (const auto& s : *ops) j["ops"].push_back({{"op", s.op}, {"count", s.count}, {"total_ns", s.total_ns}});
    j["ranks"] = nlohmann::json::array();
    for (const insight::RankStats& r : *ranks) {
      const double mpi = final_of("dist/comm_s/rank" + std::to_string(r.rank)), wait = final_of("dist/wait_s/rank" + std::to_string(r.rank));
      j["ranks"].push_back({{"rank", r.rank}, {"allreduce_kernels", r.allreduces}, {"allreduce_kernel_ns", r.comm_ns},
                            {"other_kernel_ns", r.compute_ns}, {"mpi_s", mpi}, {"waited_s", wait},
                            {"hidden", mpi > 0 && wait >= 0 ? std::max(0.0, 1 - wait / mpi) : -1.0}});
    }
    print_json(j);
    return 0;
  }
  const RunRecord& r = d->run;
  std::cout << run_label(r) << "\n";
  std::cout << "  command   " << r.command << "\n";
  std::cout << "  started   " << local_time(r.started_ns) << ", " << run_duration(r)
            << (r.status == "running" ? " so far" : "") << "\n";
  std::cout << "  where     " << r.host << " pid " << r.pid << ", tessera " << r.engine_version << ", seed " << r.seed << "\n";
  if (!r.error.empty()) std::cout << "  error     " << r.error << "\n";
  for (const auto& g : d->graphs) std::cout << "  graph     " << g.role << " '" << printable(g.name) << "' " << g.hash << "\n";
  for (const auto& s : d->datasets)
    std::cout << "  data      " << s.split << " " << s.path << " (" << s.examples << " examples, " << s.fingerprint << ")\n";
  if (!d->hyperparams.empty()) {
    std::cout << "  hyper-parameters\n";
    for (const auto& [k, v] : d->hyperparams) std::printf("    %-16s %s\n", k.c_str(), v.c_str());
  }
  if (!summary.empty()) {
    std::cout << "  metrics                    final (step)          best (step)\n";
    for (const auto& m : summary)
      std::printf("    %-18s %12s (%lld) %12s (%lld)\n", m.name.c_str(), number(m.final_value).c_str(),
                  static_cast<long long>(m.final_step), number(m.best_value).c_str(), static_cast<long long>(m.best_step));
  }
  for (const auto& c : d->checkpoints)
    std::cout << "  checkpoint step " << c.step << " " << c.path << " (" << c.checksum << ")\n";
  std::cout << "  recorded  " << d->spans << " spans, " << d->metrics << " metric values, " << d->snapshots
            << " snapshots, " << d->memory_events << " memory events\n";
  if (!ranks->empty()) {
    std::cout << "  ranks    all-reduce kernels  their time    other kernels  share   MPI time  waited  hidden"
                 "   (kernels: the recorded steps; MPI: every step)\n";
    for (const insight::RankStats& r : *ranks) {
      const double comm = static_cast<double>(r.comm_ns) / 1e6, other = static_cast<double>(r.compute_ns) / 1e6;
      const double mpi = final_of("dist/comm_s/rank" + std::to_string(r.rank)), wait = final_of("dist/wait_s/rank" + std::to_string(r.rank));
      char hidden[32] = "-";
      if (mpi > 0 && wait >= 0) std::snprintf(hidden, sizeof hidden, "%.0f%%", 100 * std::max(0.0, 1 - wait / mpi));
      std::printf("    rank %-4d %16lld %14.3f ms %11.3f ms %5.1f%% %8.3f s %6.3f s %7s\n", r.rank,
                  static_cast<long long>(r.allreduces), comm, other, comm + other > 0 ? 100 * comm / (comm + other) : 0.0,
                  mpi, wait, hidden);
    }
  }
  if (!ops->empty()) {
    std::cout << "  time by op                 count      total        mean\n";
    for (size_t i = 0; i < ops->size() && i < 10; ++i) {
      const auto& s = (*ops)[i];
      std::printf("    %-20s %10lld %10.3f ms %9.1f us\n", s.op.c_str(), static_cast<long long>(s.count),
                  static_cast<double>(s.total_ns) / 1e6, static_cast<double>(s.total_ns) / 1e3 / static_cast<double>(s.count));
    }
  }
  return 0;
}

// Whether a compare row holds more than one distinct value (it is marked and flagged in JSON).
bool values_differ(const std::vector<std::string>& values) {
  return std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) != values.end();
}

int runs_compare(const Database& db, const RunsOptions& o) {
  if (o.runs.size() < 2) return fail(make_error("compare needs two runs or more"));
  std::vector<insight::RunDetails> runs;
  std::vector<std::vector<insight::MetricSummary>> metrics;
  for (const std::string& ref : o.runs) {
    auto id = insight::resolve_run(db, ref);
    if (!id) return fail(id.error());
    auto d = insight::run_details(db, *id);
    if (!d) return fail(d.error());
    auto m = insight::run_metrics(db, *id);
    if (!m) return fail(m.error());
    runs.push_back(std::move(*d));
    metrics.push_back(insight::summarize_metrics(*m));
  }
  // Rows: a few run fields, then every hyper-parameter any run has.
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto add = [&](const std::string& key, auto get) {
    std::vector<std::string> v;
    for (const auto& d : runs) v.push_back(get(d));
    rows.emplace_back(key, std::move(v));
  };
  add("name", [](const insight::RunDetails& d) { return d.run.name; });
  add("status", [](const insight::RunDetails& d) { return d.run.status; });
  add("graph", [](const insight::RunDetails& d) {
    for (const auto& g : d.graphs)
      if (g.role == "input") return g.name + " " + g.hash.substr(0, 8);
    return d.run.graph_name;
  });
  add("dataset", [](const insight::RunDetails& d) { return d.datasets.empty() ? std::string("-") : d.datasets[0].fingerprint; });
  add("seed", [](const insight::RunDetails& d) { return std::to_string(d.run.seed); });
  std::set<std::string> keys;
  for (const auto& d : runs)
    for (const auto& [k, v] : d.hyperparams) keys.insert(k);
  for (const std::string& k : keys)
    add(k, [&](const insight::RunDetails& d) {
      auto it = d.hyperparams.find(k);
      return it == d.hyperparams.end() ? std::string("-") : it->second;
    });
  std::set<std::string> names;
  for (const auto& ms : metrics)
    for (const auto& m : ms) names.insert(m.name);
  for (const std::string& n : names)
    for (const char* which : {"final", "best"})
      add(n + " (" + which + ")", [&, which](const insight::RunDetails& d) {
        const auto& ms = metrics[static_cast<size_t>(&d - runs.data())];
        for (const auto& m : ms)
          if (m.name == n) return number(std::string(which) == "final" ? m.final_value : m.best_value);
        return std::string("-");
      });
  if (o.json) {
    nlohmann::json j = {{"runs", nlohmann::json::array()}, {"rows", nlohmann::json::array()}};
    for (const auto& d : runs) j["runs"].push_back(d.run.id);
    for (const auto& [k, v] : rows) {
      const bool differs = values_differ(v);
      j["rows"].push_back({{"key", k}, {"values", v}, {"differs", differs}});
    }
    print_json(j);
    return 0;
  }
  size_t key_width = 8;
  for (const auto& [k, v] : rows) key_width = std::max(key_width, k.size());
  std::vector<size_t> widths;
  for (size_t i = 0; i < runs.size(); ++i) {
    size_t w = ("run " + std::to_string(runs[i].run.id)).size();
    for (const auto& [k, v] : rows) w = std::max(w, std::min<size_t>(v[i].size(), 28));
    widths.push_back(w);
  }
  std::printf("  %-*s", static_cast<int>(key_width), "");
  for (size_t i = 0; i < runs.size(); ++i)
    std::printf("  %-*s", static_cast<int>(widths[i]), ("run " + std::to_string(runs[i].run.id)).c_str());
  std::printf("\n");
  for (const auto& [k, v] : rows) {
    const bool differs = values_differ(v);
    std::printf("%c %-*s", differs ? '*' : ' ', static_cast<int>(key_width), k.c_str());
    for (size_t i = 0; i < v.size(); ++i) std::printf("  %-*s", static_cast<int>(widths[i]), clip(v[i], 28).c_str());
    std::printf("\n");
  }
  std::printf("(* marks rows that differ; best is the lowest for losses, the highest otherwise)\n");
  return 0;
}

int runs_metrics(const Database& db, const RunsOptions& o) {
  auto id = insight::resolve_run(db, o.runs[0]);
  if (!id) return fail(id.error());
  auto m = insight::run_metrics(db, *id);
  if (!m) return fail(m.error());
  if (o.csv) {
    std::cout << "name,step,epoch,value,wall_ns\n";
    for (const auto& p : *m)
      std::cout << p.name << "," << p.step << "," << p.epoch << "," << number(p.value) << "," << p.wall_ns << "\n";
    return 0;
  }
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& p : *m) j.push_back({{"name", p.name}, {"step", p.step}, {"epoch", p.epoch}, {"value", p.value}});
    print_json(j);
    return 0;
  }
  // One row per (epoch, step), one column per metric.
  std::vector<std::string> names;
  std::map<std::pair<int64_t, int64_t>, std::map<std::string, double>> table;
  for (const auto& p : *m) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
    table[{p.epoch, p.step}][p.name] = p.value;
  }
  if (table.empty()) {
    std::cout << "run " << *id << " recorded no metrics\n";
    return 0;
  }
  std::printf("%6s %8s", "epoch", "step");
  for (const auto& n : names) std::printf(" %14s", clip(n, 14).c_str());
  std::printf("\n");
  for (const auto& [key, values] : table) {
    std::printf("%6lld %8lld", static_cast<long long>(key.first), static_cast<long long>(key.second));
    for (const auto& n : names) {
      auto it = values.find(n);
      std::printf(" %14s", it == values.end() ? "" : number(it->second).c_str());
    }
    std::printf("\n");
  }
  return 0;
}

// Prints where a run came from (recursively) and the runs that continued from it.
Status print_ancestors(const Database& db, int64_t id, int depth, std::set<int64_t>& seen) {
  if (!seen.insert(id).second || depth > 32) return Status::ok();
  TRY(auto edges, insight::lineage_from(db, id));
  const std::string pad(static_cast<size_t>(2 * depth + 2), ' ');
  for (const auto& e : edges) {
    const auto& c = e.checkpoint;
    std::cout << pad << e.kind << " checkpoint " << c.path;
    if (c.run > 0) {
      TRY(insight::RunDetails parent, insight::run_details(db, c.run));
      std::cout << " (step " << c.step << ", " << c.checksum << ") of " << run_label(parent.run) << "\n";
      RETURN_IF_ERROR(print_ancestors(db, c.run, depth + 1, seen));
    } else {
      std::cout << " (not written by a recorded run)\n";
    }
  }
  return Status::ok();
}

Status print_descendants(const Database& db, int64_t id, int depth, std::set<int64_t>& seen) {
  if (!seen.insert(id).second || depth > 32) return Status::ok();
  TRY(auto edges, insight::lineage_into(db, id));
  const std::string pad(static_cast<size_t>(2 * depth + 2), ' ');
  for (const auto& [child, e] : edges) {
    TRY(insight::RunDetails d, insight::run_details(db, child));
    std::cout << pad << run_label(d.run) << " " << e.kind << " its checkpoint of step " << e.checkpoint.step << "\n";
    RETURN_IF_ERROR(print_descendants(db, child, depth + 1, seen));
  }
  return Status::ok();
}

int runs_lineage(const Database& db, const RunsOptions& o) {
  auto id = insight::resolve_run(db, o.runs[0]);
  if (!id) return fail(id.error());
  auto d = insight::run_details(db, *id);
  if (!d) return fail(d.error());
  std::cout << run_label(d->run) << "\n";
  for (const auto& g : d->graphs) std::cout << "  " << g.role << " graph '" << printable(g.name) << "' " << g.hash << "\n";
  for (const auto& s : d->datasets) std::cout << "  " << s.split << " data " << s.fingerprint << " " << s.path << "\n";
  std::set<int64_t> seen;
  if (Status st = print_ancestors(db, *id, 0, seen); !st.is_ok()) return fail(st.error());
  std::cout << "continued by:\n";
  std::set<int64_t> seen_down;
  if (Status st = print_descendants(db, *id, 0, seen_down); !st.is_ok()) return fail(st.error());
  if (seen_down.size() == 1) std::cout << "  (no run)\n";
  return 0;
}

int runs_export_trace(const Database& db, const RunsOptions& o) {
  if (o.chrome.empty()) return fail(make_error("export-trace needs --chrome FILE.json"));
  auto id = insight::resolve_run(db, o.runs[0]);
  if (!id) return fail(id.error());
  auto n = insight::export_chrome_trace(db, *id, o.chrome);
  if (!n) return fail(n.error());
  std::cerr << "wrote " << *n << " trace events of run " << *id << " to " << o.chrome
            << " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

}  // namespace

RunRecording::RunRecording() = default;
RunRecording::RunRecording(std::unique_ptr<insight::Recorder> recorder) : recorder_(std::move(recorder)) {}
RunRecording::RunRecording(RunRecording&&) noexcept = default;
RunRecording& RunRecording::operator=(RunRecording&&) noexcept = default;
RunRecording::~RunRecording() = default;  // ~Recorder records an unfinished run as failed

observe::TraceSink* RunRecording::trace() const { return recorder_.get(); }
int64_t RunRecording::run_id() const { return recorder_ ? recorder_->run_id() : -1; }
observe::SnapshotSink* RunRecording::snapshots() const { return recorder_.get(); }
observe::MetricsSink* RunRecording::metrics() const { return recorder_.get(); }

void RunRecording::log_graph(const ir::Graph& g, const std::string& role) {
  if (recorder_) recorder_->log_graph_structure(g, role);
}

void RunRecording::log_dataset(const std::string& split, const data::Source& source, const std::string& path) {
  if (!recorder_) return;
  auto fp = data::fingerprint(source);
  if (!fp) {
    std::cerr << "tessera: warning: not recording the " << split << " data set: " << fp.error().to_string() << "\n";
    return;
  }
  recorder_->log_dataset(split, *fp, path, source.size());
}

void RunRecording::log_checkpoint(const std::string& path, int64_t step) {
  if (!recorder_) return;
  auto sum = insight::file_checksum(path);
  recorder_->log_checkpoint(path, step, sum ? *sum : std::string("unreadable"));
}

void RunRecording::resumed_from(const std::string& checkpoint) {
  if (recorder_) recorder_->add_lineage(insight::LineageKind::kResumedFrom, "", checkpoint);
}

void RunRecording::metric(const std::string& name, double value, int64_t step, int64_t epoch) {
  if (recorder_) recorder_->on_metric(name, step, epoch, value);
}

void RunRecording::flush() {
  if (recorder_) (void)recorder_->flush();  // a write error is reported by finish()
}

int RunRecording::finish(bool stopped) {
  if (!recorder_) return 0;
  Status st = recorder_->finish_run(stopped ? insight::RunStatus::kStopped : insight::RunStatus::kFinished);
  if (!st.is_ok()) std::cerr << "tessera: warning: the run was not fully recorded: " << st.error().to_string() << "\n";
  recorder_.reset();
  return 0;
}

void RunRecording::abort(const std::string& why) {
  if (recorder_) (void)recorder_->finish_run(insight::RunStatus::kFailed, why);
}

void RunRecording::abort_stopped(const std::string& why) {
  if (recorder_) (void)recorder_->finish_run(insight::RunStatus::kStopped, why);
}

int RunRecording::fail(const Error& e) {
  const int code = cli::fail(e);
  if (recorder_) {
    (void)recorder_->finish_run(insight::RunStatus::kFailed, e.to_string());
    recorder_.reset();
  }
  return code;
}

void record_device_memory(RunRecording& rec, const stages::ExecutionPlan& plan) {
  for (size_t d = 0; d < plan.devices.size() && d < plan.memory.size(); ++d)
    rec.metric("memory/" + plan.devices[d] + "/arena_bytes", static_cast<double>(plan.memory[d].arena_bytes));
}

RunRecording start_recording(const RecordOptions& o, const std::string& kind, const std::string& graph_name,
                             uint64_t seed, const std::map<std::string, std::string>& hyperparams) {
  if (o.no_record || o.db.empty()) return RunRecording();
  insight::RecorderOptions ro;
  ro.open.busy_timeout_ms = 2000;
  auto rec = insight::Recorder::open(o.db, ro);
  insight::RunInfo info;
  info.kind = kind;
  info.name = graph_name;
  info.graph_name = graph_name;
  info.command = o.command_line;
  info.engine_version = TESSERA_VERSION;
  info.seed = seed;
  info.hyperparams = hyperparams;
  if (rec) {
    auto id = (*rec)->start_run(info);
    if (id) return RunRecording(std::move(*rec));
    std::cerr << "tessera: warning: not recording this run (--no-record silences this): " << id.error().to_string() << "\n";
    return RunRecording();
  }
  std::cerr << "tessera: warning: not recording this run (--no-record silences this): " << rec.error().to_string() << "\n";
  return RunRecording();
}

std::map<std::string, std::string> train_hyperparams(const TrainOptions& o, int world) {
  std::map<std::string, std::string> h = {{"epochs", std::to_string(o.epochs)},
          {"batch", std::to_string(o.batch)},
          {"lr", number(o.lr)},
          {"schedule", o.schedule},
          {"optimizer", o.optimizer},
          {"momentum", o.momentum >= 0 ? number(o.momentum) : "default"},
          {"weight_decay", o.weight_decay >= 0 ? number(o.weight_decay) : "default"},
          {"nesterov", o.nesterov ? "true" : "false"},
          {"loss", o.loss},
          {"output", o.output.empty() ? "first" : o.output},
          {"threads", o.threads > 0 ? std::to_string(o.threads) : "auto"},
          {"device", o.device},
          {"precision", o.precision},
          {"max_steps", std::to_string(o.max_steps)},
          {"data", o.data},
          {"resume", o.resume.empty() ? "-" : o.resume}};
  if (o.accumulate > 1) h["accumulate"] = std::to_string(o.accumulate);
  if (o.accumulate > 1 || world > 1) h["global_batch"] = std::to_string(o.batch * o.accumulate * world);
  if (world > 1) {
    h["world_size"] = std::to_string(world);
    h["bucket_mb"] = number(o.bucket_mb);
    h["first_bucket_mb"] = number(o.first_bucket_mb);
    h["overlap"] = o.no_overlap ? "false" : "true";
    h["deterministic"] = o.deterministic ? "true" : "false";
    if (o.sync_bn) h["sync_bn"] = "true";
  }
  return h;
}

// `runs check`: SQLite's integrity check, read-only (a damaged file cannot be opened as a store).
int runs_check(const RunsOptions& o) {
  auto r = insight::check_database(o.db);
  if (!r) return fail(r.error());
  if (r->ok()) {
    std::cout << o.db << ": ok (schema " << r->schema_version << ", " << r->pages << " pages of " << r->page_size << " bytes)\n";
    return 0;
  }
  std::cout << o.db << ": DAMAGED (" << r->problems.size() << (r->problems.size() >= 100 ? "+" : "") << " problems):\n";
  for (const std::string& p : r->problems) std::cout << "  " << p << "\n";
  std::cout << "salvage what it still holds: tessera runs recover --db " << o.db << " --out NEW.db\n";
  return 1;
}

// `runs recover`: every readable row into a new database.
int runs_recover(const RunsOptions& o) {
  auto r = insight::recover_database(o.db, o.out);
  if (!r) return fail(r.error());
  int64_t rejected = 0, unreadable = 0;
  for (const insight::TableSalvage& t : r->tables) {
    if (t.copied == 0 && t.rejected == 0 && t.unreadable_ranges == 0) continue;
    std::cout << "  " << std::left << std::setw(20) << t.table << std::right << std::setw(10) << t.copied << " rows";
    if (t.rejected) std::cout << ", " << t.rejected << " rejected (values that do not fit the schema)";
    if (t.unreadable_ranges) std::cout << ", " << t.unreadable_ranges << " unreadable stretch(es) skipped";
    std::cout << "\n";
    rejected += t.rejected;
    unreadable += t.unreadable_ranges;
  }
  if (r->rebuilt_runs)
    std::cout << "  " << r->rebuilt_runs << " run(s) rebuilt as recovered-ID: their records survived, their run rows did not\n";
  std::cout << "salvaged " << r->runs << " run(s) into " << o.out << (rejected || unreadable ? " (the damaged parts are left out)" : "")
            << "; use it with --db " << o.out << ", or move it in place of " << o.db << "\n";
  return 0;
}

int run_runs(const RunsOptions& o) {
  if (o.action == "check") return runs_check(o);
  if (o.action == "recover") return runs_recover(o);
  // Reading creates nothing: no database file, no folder for it.
  std::error_code ec;
  if (o.db.rfind("file:", 0) != 0 && !std::filesystem::exists(o.db, ec)) {
    if (o.action != "list") return fail(make_error("no insight database here: nothing has been recorded to it (pass --db with the database to read)", o.db));
    if (o.json) print_json(nlohmann::json::array());
    else std::cout << "no runs recorded in " << o.db << " (there is no database there yet)\n";
    return 0;
  }
  // Opened for writing where the user may (that migrates an older schema and marks crashed
  // runs), else read-only: a database the user may read but not write still lists and shows.
  insight::OpenOptions oo;
  auto db = Database::open(o.db, oo);
  if (!db) {
    oo.read_only = true;
    if (auto ro = Database::open(o.db, oo)) db = std::move(ro);
  }
  if (!db) return fail(db.error());
  if (o.action == "list") return runs_list(*db, o);
  if (o.runs.empty()) return fail(make_error("runs " + o.action + " needs a RUN (an id, a name or 'last')"));
  if (o.action == "show") return runs_show(*db, o);
  if (o.action == "compare") return runs_compare(*db, o);
  if (o.action == "metrics") return runs_metrics(*db, o);
  if (o.action == "lineage") return runs_lineage(*db, o);
  if (o.action == "export-trace") return runs_export_trace(*db, o);
  return fail(make_error("unknown runs action '" + o.action + "'"));
}

}  // namespace tessera::cli
