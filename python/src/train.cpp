// tessera.Trainer: the engine's trainer (engine/train/trainer.h) over a graph, fed from NumPy
// arrays or a data set on disk, with Python callbacks per step and epoch, checkpoints, resume, and
// the run recorded in insight like `tessera train`.
#include <atomic>
#include <cmath>
#include <thread>

#include "engine/data/fingerprint.h"
#include "engine/dist/communicator.h"
#include "engine/ops/infer.h"
#include "engine/backend/device.h"
#include "engine/train/trainer.h"
#include "formats/dataset_path.h"
#include "formats/document.h"
#include "python/src/common.h"
#include "python/src/run.h"

namespace tessera::python {

namespace {

using SourcePtr = std::shared_ptr<const data::Source>;


// Examples from arrays: x (first dim: examples) and labels y. Integer labels become int64, float64
// x float32 (with a warning: the graph computes in float32).
SourcePtr source_from_arrays(const py::handle& x, const py::handle& y, const std::string& what) {
  py::module_ np = py::module_::import("numpy");
  py::array ax = np.attr("asarray")(x);
  if (ax.dtype().kind() == 'f' && ax.dtype().itemsize() == 8) {
    if (PyErr_WarnEx(PyExc_UserWarning, (what + ": x is float64; converted to float32").c_str(), 1) < 0)
      throw py::error_already_set();
    ax = ax.attr("astype")("float32");
  }
  std::vector<std::pair<std::string, Tensor>> cols;
  cols.emplace_back("x", tensor_from_array(ax, what + " x"));
  if (!y.is_none()) {
    py::array ay = np.attr("asarray")(y);
    if (ay.dtype().kind() == 'i' || ay.dtype().kind() == 'u') ay = ay.attr("astype")("int64", "copy"_a = false);
    cols.emplace_back("labels", tensor_from_array(ay, what + " labels"));
  }
  Expected<std::shared_ptr<data::TensorSource>> src = data::TensorSource::create(std::move(cols), what + " arrays");
  return unwrap(std::move(src));
}

py::dict step_dict(const train::StepInfo& s) {
  return py::dict("epoch"_a = s.epoch, "step"_a = s.step, "batch"_a = s.batch, "batches"_a = s.batches,
                  "loss"_a = s.loss, "accuracy"_a = s.accuracy, "lr"_a = s.lr, "images_per_s"_a = s.images_per_s,
                  "eta_s"_a = s.eta_s);
}

py::dict epoch_dict(const train::EpochInfo& e) {
  py::dict d("epoch"_a = e.epoch, "train_loss"_a = e.train_loss, "train_accuracy"_a = e.train_accuracy,
             "seconds"_a = e.seconds, "images_per_s"_a = e.images_per_s, "data_wait_s"_a = e.data_wait_s);
  d["test_loss"] = e.test_loss >= 0 ? py::object(py::float_(e.test_loss)) : py::object(py::none());
  d["test_accuracy"] = e.test_accuracy >= 0 ? py::object(py::float_(e.test_accuracy)) : py::object(py::none());
  return d;
}

// The trainer's trace and metrics sinks: forwarded to the run of the fit() in progress, if any.
struct ForwardSinks final : observe::TraceSink, observe::MetricsSink {
  std::atomic<insight::Recorder*> target{nullptr};
  void on_span(const observe::Span& span) override {
    if (insight::Recorder* r = target.load()) r->on_span(span);
  }
  void on_memory(const observe::MemoryEvent& event) override {
    if (insight::Recorder* r = target.load()) r->on_memory(event);
  }
  void on_metric(const std::string& name, int64_t step, int64_t epoch, double value) override {
    if (insight::Recorder* r = target.load()) r->on_metric(name, step, epoch, value);
  }
};

// Marks a Trainer busy for the length of a call that uses its state (fit, evaluate, resume,
// graph): a second such call from another thread, or from fit()'s own callbacks, is refused
// instead of racing on the weights (two threads in fit() crashed in bind_feeds; a fit() from
// on_step trained past the epoch's end).
// A read between steps (evaluate, graph) from fit()'s own callbacks passes (`reentrant_read`).
class Busy {
 public:
  Busy(std::atomic<const char*>& running, const char* what, bool reentrant_read = false) : running_(running) {
    if (reentrant_read) return;
    const char* expected = nullptr;
    if (!running_.compare_exchange_strong(expected, what))
      throw std::runtime_error(std::string("this Trainer is in ") + expected + "() (called from another thread, or from a " +
                               "callback of its fit()); a Trainer does one call at a time: wait for it, or use another Trainer");
    owner_ = true;
  }
  ~Busy() {
    if (owner_) running_.store(nullptr);
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::atomic<const char*>& running_;
  bool owner_ = false;
};

class PyTrainer {
 public:
  PyTrainer(const py::handle& source, const std::string& loss, const std::string& optimizer, double lr,
            const py::object& momentum, bool nesterov, const py::object& weight_decay, const std::string& schedule,
            int64_t epochs, int64_t batch_size, uint64_t seed, int threads, const std::string& checkpoint_dir,
            int64_t checkpoint_every, int64_t max_steps, const std::string& output, bool record,
            const std::string& db, const std::string& name, int64_t accumulate, const std::string& device)
      : record_(record), db_(db), name_(name) {
    if (py::isinstance<GraphHandle>(source)) {
      graph_ = source.cast<const GraphHandle&>().graph;
      check(ops::infer_types(graph_, registry()));
      file_ = "<python>";
    } else {
      file_ = fspath(source);
      Expected<formats::GraphDocument> doc = [&] {
        py::gil_scoped_release nogil;
        return formats::load_typed_document(file_, registry());
      }();
      graph_ = unwrap(std::move(doc)).graph;
    }
    if (epochs < 1) throw py::value_error("epochs must be at least 1");
    if (batch_size < 1) throw py::value_error("batch_size must be at least 1");
    if (accumulate < 1 || accumulate > 1024) throw py::value_error("accumulate must be in [1, 1024]");
    if (!(lr > 0) || !std::isfinite(lr)) throw py::value_error("lr must be a positive finite number");
    Expected<autodiff::LossKind> l = autodiff::parse_loss(loss);
    if (!l) raise(l.error().within("loss"));
    Expected<autodiff::OptimizerKind> o = autodiff::parse_optimizer(optimizer);
    if (!o) raise(o.error().within("optimizer"));
    cfg_.spec.loss = *l;
    cfg_.spec.output = output;
    cfg_.spec.optimizer.kind = *o;
    cfg_.spec.optimizer.momentum = !momentum.is_none() ? momentum.cast<double>() : (optimizer == "momentum" ? 0.9 : 0.0);
    cfg_.spec.optimizer.nesterov = nesterov;
    cfg_.spec.optimizer.weight_decay = !weight_decay.is_none() ? weight_decay.cast<double>()
                                                                 : (*o == autodiff::OptimizerKind::kAdamW ? 0.01 : 0.0);
    // The CLI's ranges (--momentum, --weight-decay): [0, 1].
    for (const auto& [what, v] : {std::pair<const char*, double>{"momentum", cfg_.spec.optimizer.momentum},
                                  {"weight_decay", cfg_.spec.optimizer.weight_decay}})
      if (!(v >= 0.0 && v <= 1.0)) throw py::value_error(std::string(what) + " must be in [0, 1], not " + std::to_string(v));
    if (*o != autodiff::OptimizerKind::kSgd && cfg_.spec.optimizer.momentum != 0.0)
      throw py::value_error("momentum applies to sgd/momentum, not " + optimizer);
    cfg_.epochs = epochs;
    cfg_.lr = lr;
    cfg_.schedule = schedule;
    cfg_.threads = intra_op_threads(threads);
    {
      Expected<std::string> d = tessera::backend::DeviceSet::discover(false, device.rfind("cpu", 0) != 0).resolve(device);
      if (!d) throw py::value_error(d.error().message);
      cfg_.device = *d;
    }
    cfg_.adapt_threads = threads == 0;  // the default follows the load; threads=N is kept
    cfg_.seed = seed;
    cfg_.spec.accumulate = static_cast<int>(accumulate);
    cfg_.batch_size = batch_size * accumulate;  // a step's batch: accumulate micro-batches of batch_size
    cfg_.checkpoint_dir = checkpoint_dir;
    cfg_.checkpoint_every = checkpoint_every;
    cfg_.max_steps = max_steps;
    hyper_ = {{"loss", loss}, {"optimizer", optimizer}, {"lr", py::str(py::float_(lr))},
              {"momentum", py::str(py::float_(cfg_.spec.optimizer.momentum))},
              {"weight_decay", py::str(py::float_(cfg_.spec.optimizer.weight_decay))}, {"schedule", schedule},
              {"epochs", std::to_string(epochs)}, {"batch", std::to_string(batch_size)},
              {"threads", std::to_string(cfg_.threads)}, {"file", file_}};
    if (accumulate > 1) hyper_["accumulate"] = std::to_string(accumulate);
    if (record_) {
      cfg_.trace = &sinks_;
      cfg_.metrics = &sinks_;
    }
    trainer_ = std::make_unique<train::Trainer>(graph_, registry(), cfg_);
  }

  void resume(const py::object& where) {
    Busy busy(running_, "resume");
    const std::string path = fspath(where);
    Status st = [&] {
      py::gil_scoped_release nogil;
      return trainer_->resume(path);
    }();
    check(st);
    resumed_from_ = path;
  }

  py::dict fit(const py::object& data, const py::object& x, const py::object& y, const py::object& test,
               const py::object& on_step, const py::object& on_epoch, const py::object& on_checkpoint, int workers) {
    Busy busy(running_, "fit");
    // Under `mpirun -n N` each process would train alone, record its own run and write the same
    // checkpoints: the data-parallel trainer is the CLI's (cli/train_command.cpp sets up the ranks).
    if (dist::launched_by_mpi())
      raise(make_error("tessera.Trainer trains in one process, and mpirun started several: each would train alone "
                             "and write the same checkpoints. Data-parallel training is `mpirun -n N tessera train GRAPH "
                             "--data PATH ...`; start this script without mpirun"));
    const int channels = formats::image_channels(graph_);
    SourcePtr train_src, test_src;
    std::string data_path;
    if (!data.is_none()) {
      if (!x.is_none()) throw py::value_error("give either data (a path) or x and y (arrays), not both");
      data_path = fspath(data);
      Expected<SourcePtr> s = formats::open_dataset_split(data_path, "train", channels);
      train_src = unwrap(std::move(s));
      if (test.is_none()) {
        Expected<SourcePtr> t = formats::open_dataset_split(data_path, "test", channels);
        test_src = unwrap(std::move(t));
      }
    } else if (!x.is_none()) {
      train_src = source_from_arrays(x, y, "train");
    } else {
      throw py::value_error("no training data: give data (a data set path) or x and y (arrays)");
    }
    std::string test_path;
    if (!test.is_none() && !(py::isinstance<py::bool_>(test) && !test.cast<bool>())) {
      if (py::isinstance<py::tuple>(test) || py::isinstance<py::list>(test)) {
        py::sequence t = test;
        if (t.size() != 2) throw py::value_error("test: expected (x, y)");
        test_src = source_from_arrays(t[0], t[1], "test");
      } else {
        test_path = fspath(test);
        Expected<SourcePtr> t = formats::open_dataset_split(test_path, "test", channels);
        test_src = unwrap(std::move(t));
      }
    } else if (!test.is_none()) {
      test_src.reset();  // test=False: no evaluation
    }

    data::LoaderOptions lo;
    lo.batch_size = cfg_.batch_size;
    lo.shuffle = true;
    lo.seed = cfg_.seed;
    lo.workers = workers;
    // A last batch too small to give every micro-batch an example is left out (tessera train's rule).
    lo.drop_last = train::unsplittable_tail(train_src->size(), lo.batch_size, cfg_.spec.accumulate) > 0;
    data::DataLoader train_loader(train_src, {}, lo);
    data::LoaderOptions to = lo;
    to.shuffle = false;
    to.batch_size = std::max<int64_t>(cfg_.batch_size, 256);
    std::unique_ptr<data::DataLoader> test_loader;
    if (test_src) test_loader = std::make_unique<data::DataLoader>(test_src, data::Transforms{}, to);

    std::unique_ptr<PyRun> run;
    if (record_) {
      insight::RunInfo info;
      info.kind = "train";
      info.name = name_.empty() ? insight::run_name(graph_.name(), file_) : name_;
      info.graph_name = graph_.name();
      info.engine_version = TESSERA_VERSION;
      info.seed = cfg_.seed;
      info.hyperparams = hyper_;
      py::list argv = py::module_::import("sys").attr("argv");
      std::string cmd = "python3";
      for (py::handle a : argv) cmd += " " + std::string(py::str(a));
      info.command = cmd;
      run = std::make_unique<PyRun>(db_, info);
      insight::Recorder& rec = run->live();
      rec.log_graph_structure(graph_);
      auto log_data = [&](const char* split, const data::Source& s, const std::string& path) {
        Expected<std::string> fp = data::fingerprint(s);
        if (fp) rec.log_dataset(split, *fp, path.empty() ? s.name() : path, s.size());
      };
      log_data("train", *train_src, data_path);
      if (test_src) log_data("test", *test_src, test_path.empty() ? data_path : test_path);
      if (!resumed_from_.empty()) rec.add_lineage(insight::LineageKind::kResumedFrom, "", resumed_from_);
    }

    std::atomic<bool> stop{false};
    py::object error;  // the first exception a callback raised (or KeyboardInterrupt)
    fit_thread_ = std::this_thread::get_id();  // the callbacks run on this thread
    auto call = [&](const py::object& fn, py::object arg) {  // with the GIL held
      if (fn.is_none() || stop.load()) return;
      try {
        struct InCallback {
          bool& flag;
          explicit InCallback(bool& f) : flag(f) { flag = true; }
          ~InCallback() { flag = false; }
        } in_callback(in_callback_);
        fn(arg);
      } catch (py::error_already_set& e) {
        e.restore();
        error = py::reinterpret_steal<py::object>(PyErr_GetRaisedException_compat());
        stop.store(true);
      }
    };
    train::TrainCallbacks cb;
    cb.stop = &stop;
    cb.on_step = [&](const train::StepInfo& s) {
      {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {  // Ctrl+C: stop after this step, raise afterwards
          error = py::reinterpret_steal<py::object>(PyErr_GetRaisedException_compat());
          stop.store(true);
          return;
        }
        call(on_step, step_dict(s));
      }
    };
    cb.on_epoch = [&](const train::EpochInfo& e) {
      if (on_epoch.is_none()) return;
      py::gil_scoped_acquire gil;
      call(on_epoch, epoch_dict(e));
    };
    cb.on_checkpoint = [&](const std::string& path) {
      if (run) {
        Expected<std::string> sum = insight::file_checksum(path);
        run->live().log_checkpoint(path, trainer_->global_step(), sum ? *sum : std::string("unreadable"));
      }
      if (on_checkpoint.is_none()) return;
      py::gil_scoped_acquire gil;
      call(on_checkpoint, py::str(path));
    };
    // The trainer's sinks are fixed at construction: they forward to this fit's run.
    sinks_.target = run ? &run->live() : nullptr;

    Expected<train::TrainResult> result = [&] {
      py::gil_scoped_release nogil;
      return trainer_->fit(train_loader, test_loader.get(), cb);
    }();
    sinks_.target = nullptr;
    if (!result) {
      if (run) run->finish("failed", result.error().to_string());
      raise(result.error());
    }
    if (error) {
      if (run) {
        const bool interrupted = py::isinstance(error, py::handle(PyExc_KeyboardInterrupt));
        run->finish(interrupted ? "stopped" : "failed", std::string(py::str(error)));
      }
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
      throw py::error_already_set();
    }
    if (run) run->finish("finished", "");
    const train::TrainResult& r = *result;
    py::list epochs;
    for (const train::EpochInfo& e : r.epochs) epochs.append(epoch_dict(e));
    return py::dict("epochs"_a = epochs, "steps"_a = r.steps, "train_loss"_a = r.train_loss,
                    "test_accuracy"_a = r.test_accuracy >= 0 ? py::object(py::float_(r.test_accuracy)) : py::object(py::none()),
                    "images_per_s"_a = r.images_per_s, "checkpoint"_a = r.last_checkpoint, "stopped"_a = r.stopped,
                    "data_wait_s"_a = r.data_wait_s, "arena_bytes"_a = r.arena_bytes, "state_bytes"_a = r.state_bytes,
                    "run"_a = run ? py::object(py::int_(run->id())) : py::object(py::none()));
  }

  // Test loss and accuracy of the current weights on a data set's test split, or arrays.
  py::tuple evaluate(const py::object& data, const py::object& x, const py::object& y) {
    Busy busy(running_, "evaluate", in_own_callback());
    SourcePtr src;
    if (!data.is_none()) {
      Expected<SourcePtr> s = formats::open_dataset_split(fspath(data), "test", formats::image_channels(graph_));
      src = unwrap(std::move(s));
      if (!src) throw py::value_error(fspath(data) + " has no test split");
    } else if (!x.is_none() && !y.is_none()) {
      src = source_from_arrays(x, y, "evaluate");
    } else {
      throw py::value_error("evaluate: give data (a data set path) or x and y (arrays)");
    }
    data::LoaderOptions lo;
    lo.batch_size = std::max<int64_t>(cfg_.batch_size, 256);
    data::DataLoader loader(src, {}, lo);
    Expected<std::pair<double, double>> r = [&] {
      py::gil_scoped_release nogil;
      return trainer_->evaluate(loader);
    }();
    auto [loss, acc] = unwrap(std::move(r));
    return py::make_tuple(loss, acc);
  }

  std::shared_ptr<GraphHandle> graph() {
    Busy busy(running_, "graph", in_own_callback());
    return std::make_shared<GraphHandle>(trainer_->trained_graph());
  }
  int64_t step() const { return trainer_->global_step(); }

 private:
  static PyObject* PyErr_GetRaisedException_compat() {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
  }

  ForwardSinks sinks_;  // before trainer_: it outlives it
  ir::Graph graph_;
  std::string file_;
  train::TrainConfig cfg_;
  std::map<std::string, std::string> hyper_;
  std::unique_ptr<train::Trainer> trainer_;
  // Whether the caller is fit()'s own callback (GIL held): evaluate() and graph() may read there.
  bool in_own_callback() const { return in_callback_ && std::this_thread::get_id() == fit_thread_; }

  std::atomic<const char*> running_{nullptr};  // the call using the trainer (Busy), or null
  bool in_callback_ = false;                   // a fit() callback runs (read with the GIL held)
  std::thread::id fit_thread_;
  bool record_;
  std::string db_, name_, resumed_from_;
};

}  // namespace

void bind_train(py::module_& m) {
  py::class_<PyTrainer>(m, "Trainer", R"doc(Trains a graph: the training step compiled through the six stages.

    t = tessera.Trainer("lenet.onnx", optimizer="momentum", lr=0.01, epochs=2, batch_size=64)
    result = t.fit(data="/usr/share/datasets/fashion-mnist",          # or x=..., y=... arrays
                   on_epoch=lambda e: print(e["epoch"], e["test_accuracy"]))
    t.graph().save("trained.onnx")

loss: softmax-cross-entropy | mse | bce-with-logits | output (the graph's output is the loss);
optimizer: sgd | momentum | adam | adamw; schedule: constant | step:SIZE:GAMMA | cosine[:MIN] [,warmup:N].
accumulate=K: gradient accumulation, each step sums the gradients of K micro-batches of batch_size.
Each fit() is recorded in insight as a run (record=False to skip; db: the database, default
tessera.insight.default_database()). Callbacks get dicts of Python numbers; an exception in one stops
training after the current step and is raised by fit(); so is Ctrl+C (the run is marked stopped).)doc")
      .def(py::init<const py::handle&, const std::string&, const std::string&, double, const py::object&, bool,
                    const py::object&, const std::string&, int64_t, int64_t, uint64_t, int, const std::string&, int64_t,
                    int64_t, const std::string&, bool, const std::string&, const std::string&, int64_t,
                    const std::string&>(),
           py::arg("graph"), py::arg("loss") = "softmax-cross-entropy", py::arg("optimizer") = "sgd",
           py::arg("lr") = 0.01, py::arg("momentum") = py::none(), py::arg("nesterov") = false,
           py::arg("weight_decay") = py::none(), py::arg("schedule") = "constant", py::arg("epochs") = 1,
           py::arg("batch_size") = 64, py::arg("seed") = 0, py::arg("threads") = 0, py::arg("checkpoint_dir") = "",
           py::arg("checkpoint_every") = 0, py::arg("max_steps") = 0, py::arg("output") = "", py::arg("record") = true,
           py::arg("db") = "", py::arg("name") = "", py::arg("accumulate") = 1, py::arg("device") = "auto")
      .def("fit", &PyTrainer::fit, py::arg("data") = py::none(), py::arg("x") = py::none(), py::arg("y") = py::none(),
           py::arg("test") = py::none(), py::arg("on_step") = py::none(), py::arg("on_epoch") = py::none(),
           py::arg("on_checkpoint") = py::none(), py::arg("workers") = 1,
           "Trains for the configured epochs (from where a resume left off). data: a data set path (IDX "
           "folder, class folders, .csv, .npz); or x, y arrays. test: a path, (x, y), or False for no "
           "evaluation (default: the data set's test split). Returns a dict: epochs, steps, "
           "train_loss, test_accuracy, images_per_s, checkpoint, run (the insight run id).")
      .def("resume", &PyTrainer::resume, py::arg("checkpoint"),
           "Loads weights, optimizer state and position from a checkpoint (.tsc); refuses one of another graph.")
      .def("evaluate", &PyTrainer::evaluate, py::arg("data") = py::none(), py::arg("x") = py::none(),
           py::arg("y") = py::none(), "(test loss, accuracy) of the current weights on a data set's test split or arrays.")
      .def("graph", &PyTrainer::graph, "The graph with the trained weights (a tessera.Graph: save or run it).")
      .def_property_readonly("step", &PyTrainer::step, "Updates done so far.");
}

}  // namespace tessera::python
