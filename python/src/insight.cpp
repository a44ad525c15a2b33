// The insight store from Python: a run recorded by any Python program (metrics, hyper-parameters,
// graphs, checkpoints, Chrome traces), and the reader the studio's dashboard uses.
#include "engine/observe/sinks.h"
#include "formats/graph_file.h"
#include "insight/chrome_import.h"
#include "insight/query.h"
#include "insight/runs_query.h"
#include "python/src/common.h"
#include "python/src/run.h"

namespace tessera::python {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

insight::Database open_db(const std::string& path) {
  if (path.empty()) throw py::value_error("no database path");
  insight::OpenOptions o;
  o.read_only = true;
  Expected<insight::Database> db = insight::Database::open(path, o);
  return unwrap(std::move(db));
}

std::string resolve(const std::string& db) {
  return db.empty() ? insight::default_database_path(env("TESSERA_DB"), env("XDG_DATA_HOME"), env("HOME")) : db;
}

py::dict run_dict(const insight::RunSummary& s) {
  const insight::RunRecord& r = s.run;
  py::dict metrics;
  for (const insight::MetricSummary& m : s.metrics)
    metrics[py::str(m.name)] = py::dict("final"_a = m.final_value, "final_step"_a = m.final_step);
  return py::dict("id"_a = r.id, "name"_a = r.name, "kind"_a = r.kind, "status"_a = r.status, "command"_a = r.command,
                  "graph_name"_a = r.graph_name, "host"_a = r.host, "error"_a = r.error, "seed"_a = r.seed,
                  "started"_a = static_cast<double>(r.started_ns) / 1e9,
                  "ended"_a = r.ended_ns ? py::object(py::float_(static_cast<double>(r.ended_ns) / 1e9)) : py::object(py::none()),
                  "params"_a = s.hyperparams, "metrics"_a = metrics, "graph_hash"_a = s.graph_hash);
}

}  // namespace

PyRun::PyRun(const std::string& db, const insight::RunInfo& info) {
  insight::RecorderOptions ro;
  ro.open.busy_timeout_ms = 2000;
  const std::string path = resolve(db);
  Expected<std::unique_ptr<insight::Recorder>> rec = insight::Recorder::open(path, ro);
  rec_ = unwrap(std::move(rec));
  Expected<int64_t> id = rec_->start_run(info);
  id_ = unwrap(std::move(id));
}

PyRun::~PyRun() {
  if (rec_) (void)rec_->finish_run(insight::RunStatus::kFailed, "the run object was dropped without finish()");
}

insight::Recorder& PyRun::live() {
  if (!rec_) throw py::value_error("the run is finished");
  if (rec_->forked()) check(rec_->flush());  // raises: a forked child (a DataLoader worker) cannot log
  return *rec_;
}

void PyRun::log(int64_t step, const py::dict& metrics, int64_t epoch) {
  insight::Recorder& r = live();
  for (auto [k, v] : metrics) {
    if (!py::isinstance<py::str>(k)) throw py::type_error("metric names are strings");
    if (py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v) || v.is_none())
      throw py::type_error("metric '" + k.cast<std::string>() + "' is " +
                           std::string(py::str(v.get_type().attr("__name__"))) + ", not a number");
    double x;
    try {
      x = v.cast<double>();  // numbers, NumPy scalars and 0-d tensors with __float__
    } catch (py::cast_error&) {
      x = py::float_(py::reinterpret_borrow<py::object>(v));
    }
    r.on_metric(k.cast<std::string>(), step, epoch, x);
  }
}

void PyRun::finish(const std::string& status, const std::string& error) {
  insight::RunStatus s;
  if (status == "finished") s = insight::RunStatus::kFinished;
  else if (status == "failed") s = insight::RunStatus::kFailed;
  else if (status == "stopped") s = insight::RunStatus::kStopped;
  else throw py::value_error("status must be 'finished', 'failed' or 'stopped', not '" + status + "'");
  if (!rec_) return;  // finishing twice is harmless
  Status st = [&] {
    py::gil_scoped_release nogil;
    return rec_->finish_run(s, error);
  }();
  rec_.reset();
  check(st);
}

void bind_insight(py::module_& m) {
  py::class_<PyRun>(m, "Run", R"doc(One run in the insight store, recorded from Python.

Made by tessera.insight.run(...) (a context manager); the studio's dashboard, lineage and profiler
show it like a run of `tessera train`. Every log call queues its record and returns; a writer
thread commits them (WAL, survives a crash of the process).)doc")
      .def_property_readonly("id", [](const PyRun& r) { return r.id(); }, "The run's id in the database.")
      .def_property_readonly("db", [](PyRun& r) { return r.live().path(); }, "The database file the run is recorded in.")
      .def("_log", &PyRun::log, py::arg("step"), py::arg("metrics"), py::arg("epoch") = -1)
      .def("log_metric", [](PyRun& r, const std::string& name, int64_t step, double value, int64_t epoch) {
             if (name.empty()) throw py::value_error("a metric needs a name");
             r.live().on_metric(name, step, epoch, value);
           },
           py::arg("name"), py::arg("step"), py::arg("value"), py::arg("epoch") = -1, "One scalar point.")
      .def("log_param", [](PyRun& r, const std::string& key, const py::handle& value) {
             r.live().log_hyperparam(key, py::isinstance<py::str>(value) ? value.cast<std::string>() : std::string(py::str(value)));
           },
           py::arg("key"), py::arg("value"), "Adds or replaces one hyper-parameter (stored as text).")
      .def("log_graph", [](PyRun& r, const py::handle& graph, const std::string& role) {
             if (py::isinstance<GraphHandle>(graph)) return r.live().log_graph_structure(graph.cast<const GraphHandle&>().graph, role);
             std::string path = fspath(graph);
             Expected<ir::Graph> g = [&] {
               py::gil_scoped_release nogil;
               return formats::load_graph_file(path);
             }();
             return r.live().log_graph_structure(unwrap(std::move(g)), role);
           },
           py::arg("graph"), py::arg("role") = "input",
           "Records the graph a run used (a path: .onnx, .tsr, .json, .tir; or a tessera.Graph); returns its hash.")
      .def("log_checkpoint", [](PyRun& r, const py::handle& path_obj, int64_t step) {
             std::string path = fspath(path_obj);
             Expected<std::string> sum = insight::file_checksum(path);
             r.live().log_checkpoint(path, step, unwrap(std::move(sum)));
           },
           py::arg("path"), py::arg("step"), "Records a checkpoint file the run wrote (with its checksum).")
      .def("log_dataset", [](PyRun& r, const std::string& split, const py::handle& path_obj, int64_t examples) {
             std::string path = fspath(path_obj);
             Expected<std::string> sum = insight::file_checksum(path);
             r.live().log_dataset(split, unwrap(std::move(sum)), path, examples);
           },
           py::arg("split"), py::arg("path"), py::arg("examples") = 0,
           "Records a data file the run read (fingerprinted by its checksum).")
      .def("log_trace", [](PyRun& r, const py::handle& path_obj) {
             std::string path = fspath(path_obj);
             insight::Recorder& rec = r.live();
             Expected<insight::ChromeSpans> t = [&] {
               py::gil_scoped_release nogil;
               return insight::read_chrome_spans(path);
             }();
             insight::ChromeSpans spans = unwrap(std::move(t));
             // The trace's own clock is not ours: it is placed to end now (traces are logged after
             // the work they profile), keeping its intervals.
             int64_t last = 0;
             for (const observe::Span& s : spans.spans) last = std::max(last, s.end_ns);
             const int64_t shift = observe::now_ns() - last;
             for (observe::Span& s : spans.spans) {
               s.start_ns += shift;
               s.end_ns += shift;
               rec.on_span(s);
             }
             if (spans.invalid > 0 &&
                 PyErr_WarnEx(PyExc_UserWarning,
                              ("tessera: " + path + ": " + std::to_string(spans.invalid) + " invalid span(s) skipped; the first " +
                               spans.first_invalid).c_str(), 1) < 0)
               throw py::error_already_set();
             return py::dict("spans"_a = spans.spans.size(), "skipped"_a = spans.skipped, "invalid"_a = spans.invalid);
           },
           py::arg("path"), "Records the spans of a Chrome trace (PyTorch's profiler export, ...) for the profiler.")
      .def("add_lineage", [](PyRun& r, const std::string& kind, const std::string& from, const std::string& to) {
             insight::LineageKind k;
             if (kind == "resumed_from") k = insight::LineageKind::kResumedFrom;
             else if (kind == "fine_tuned_from") k = insight::LineageKind::kFineTunedFrom;
             else if (kind == "derived_from") k = insight::LineageKind::kDerivedFrom;
             else throw py::value_error("lineage kind must be resumed_from, fine_tuned_from or derived_from");
             r.live().add_lineage(k, from, to);
           },
           py::arg("kind"), py::arg("from_"), py::arg("to"),
           "A lineage edge: resumed_from / fine_tuned_from (to: a checkpoint path), derived_from (graph hashes).")
      .def("flush", [](PyRun& r) {
             insight::Recorder& rec = r.live();
             Status st = [&] {
               py::gil_scoped_release nogil;
               return rec.flush();
             }();
             check(st);
           },
           "Blocks until everything logged so far is committed; raises the first write error.")
      .def("finish", &PyRun::finish, py::arg("status") = "finished", py::arg("error") = "",
           "Ends the run: 'finished', 'failed' (with the error) or 'stopped'.")
      .def_property_readonly("finished", [](const PyRun& r) { return r.finished(); }, "Whether finish() was called.");

  m.def("_start_run", [](const std::string& db, const std::string& name, const std::string& kind,
                         const std::map<std::string, std::string>& params, const std::string& command, uint64_t seed,
                         const std::string& graph_name) {
          insight::RunInfo info;
          info.name = name;
          info.kind = kind;
          info.command = command;
          info.hyperparams = params;
          info.seed = seed;
          info.graph_name = graph_name;
          info.engine_version = TESSERA_VERSION;
          return std::make_unique<PyRun>(db, info);
        },
        py::arg("db"), py::arg("name"), py::arg("kind"), py::arg("params"), py::arg("command"), py::arg("seed"),
        py::arg("graph_name"));

  m.def("default_database", [] { return resolve(""); },
        "The database runs are recorded in: $TESSERA_DB, else $XDG_DATA_HOME/tessera/insight.db, else "
        "~/.local/share/tessera/insight.db (as the command line and the studio).");

  m.def("_runs", [](const std::string& db) {
    insight::Database d = open_db(resolve(db));
    Expected<std::vector<insight::RunSummary>> runs = insight::load_run_summaries(d);
    py::list l;
    for (const insight::RunSummary& s : unwrap(std::move(runs))) l.append(run_dict(s));
    return l;
  }, py::arg("db"));

  m.def("_metrics", [](const std::string& db, int64_t run, const std::string& name) {
    insight::Database d = open_db(resolve(db));
    Expected<std::map<int64_t, std::vector<insight::MetricPoint>>> series = insight::load_metric_series(d, {run}, name);
    auto all = unwrap(std::move(series));
    std::map<std::string, std::vector<const insight::MetricPoint*>> by_name;
    for (const insight::MetricPoint& p : all[run]) by_name[p.name].push_back(&p);
    py::dict out;
    for (const auto& [n, pts] : by_name) {
      py::array_t<int64_t> steps(static_cast<py::ssize_t>(pts.size())), epochs(static_cast<py::ssize_t>(pts.size()));
      py::array_t<double> values(static_cast<py::ssize_t>(pts.size()));
      for (size_t i = 0; i < pts.size(); ++i) {
        steps.mutable_at(static_cast<py::ssize_t>(i)) = pts[i]->step;
        epochs.mutable_at(static_cast<py::ssize_t>(i)) = pts[i]->epoch;
        values.mutable_at(static_cast<py::ssize_t>(i)) = pts[i]->value;
      }
      out[py::str(n)] = py::dict("step"_a = steps, "epoch"_a = epochs, "value"_a = values);
    }
    return out;
  }, py::arg("db"), py::arg("run"), py::arg("name"));

  m.def("_resolve_run", [](const std::string& db, const std::string& ref) {
    insight::Database d = open_db(resolve(db));
    Expected<int64_t> id = insight::resolve_run(d, ref);
    return unwrap(std::move(id));
  }, py::arg("db"), py::arg("ref"));

  m.def("_run_graph", [](const std::string& db, int64_t run) {
    insight::Database d = open_db(resolve(db));
    Expected<insight::RunGraph> g = insight::run_graph(d, run);
    insight::RunGraph r = unwrap(std::move(g));
    return py::dict("hash"_a = r.hash, "name"_a = r.name, "format"_a = r.format, "role"_a = r.role, "text"_a = r.body);
  }, py::arg("db"), py::arg("run"));
}

}  // namespace tessera::python
