// The pass stepper's model: compiling with a snapshot sink on a worker thread, loading a run's
// snapshots (see pass_stepper_model.h).
// engine/stages/session.h comes before every Qt header: engine/stages/compile.h has a member named
// `slots`, which Qt defines as a macro.
#include "engine/stages/session.h"

#include "studio/insight/pass_stepper_model.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <algorithm>
#include <exception>
#include <string_view>
#include <mutex>

#include "engine/autodiff/training_step.h"
#include "engine/dist/communicator.h"
#include "engine/ir/text.h"
#include "insight/snapshot_query.h"

namespace tessera::studio {
namespace {

// Keeps every snapshot the compilation sends, without weight data (the stages call it on the
// compiling thread).
class CollectSnapshots : public observe::SnapshotSink {
 public:
  void on_snapshot(const observe::Snapshot& s) override {
    observe::Snapshot kept = s;
    kept.ir_text = strip_param_data(s.ir_text);
    std::lock_guard<std::mutex> lock(mu_);
    all_.push_back(std::move(kept));
  }
  std::vector<observe::Snapshot> take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(all_);
  }

 private:
  std::mutex mu_;
  std::vector<observe::Snapshot> all_;
};

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

std::string strip_param_data(const std::string& ir_text) {
  static constexpr std::string_view kParam = "  param ";
  static constexpr std::string_view kData = " = tensor<";
  static constexpr std::string_view kElided = " = elided";  // snapshots print no weights
  std::string out;
  out.reserve(std::min<size_t>(ir_text.size(), 1 << 20));
  size_t pos = 0;
  while (pos < ir_text.size()) {
    size_t end = ir_text.find('\n', pos);
    if (end == std::string::npos) end = ir_text.size();
    const std::string_view line(ir_text.data() + pos, end - pos);
    if (line.substr(0, kParam.size()) == kParam) {
      size_t data = line.find(kData);
      if (data == std::string_view::npos) data = line.rfind(kElided);
      out += "  input ";
      out += line.substr(kParam.size(), (data == std::string_view::npos ? line.size() : data) - kParam.size());
    } else {
      out += line;
    }
    if (end < ir_text.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

struct PassStepperModel::Result {
  bool ok = false;
  std::string error;
  std::vector<observe::Snapshot> snapshots;
  StepperPlacement placement;
  std::vector<DeviceMemory> memory;
  int64_t compile_ns = 0;
};

const std::string& StepperPlacement::device(ir::NodeId id) const {
  static const std::string kNone;
  return id >= 0 && id < static_cast<ir::NodeId>(device_of.size()) ? device_of[static_cast<size_t>(id)] : kNone;
}

PassStepperModel::PassStepperModel(const ops::OpRegistry& registry, QObject* parent)
    : QObject(parent), registry_(registry) {}

PassStepperModel::~PassStepperModel() {
  // A running worker owns copies of what it needs (the graph, the shapes; the registry outlives
  // the model) and delivers through a QPointer, so closing the panel never waits for ResNet-50.
  if (worker_.joinable()) worker_.detach();
}

void PassStepperModel::join() {
  if (worker_.joinable()) worker_.join();
}

void PassStepperModel::set_graph(ir::Graph graph, StepperShapes shapes) {
  graph_ = std::move(graph);
  shapes_ = std::move(shapes);
}

Expected<StepperShapes> PassStepperModel::input_shapes() const {
  StepperShapes out;
  for (ir::ValueId v : graph_.inputs()) {
    const ir::Value& val = graph_.value(v);
    if (auto it = shapes_.find(val.name); it != shapes_.end()) {
      out[val.name] = it->second;
      continue;
    }
    if (!val.type.rank_known)
      return make_error("input '" + val.name + "' has an unknown rank: give its shape", "", -1);
    Shape s;
    for (const ir::Dim& d : val.type.dims) s.push_back(d.is_known() ? d.size : symbolic_default_);
    out[val.name] = s;
  }
  return out;
}

PassStepperModel::Result PassStepperModel::compile_graph(ir::Graph graph, const ops::OpRegistry& registry,
                                                         Expected<StepperShapes> shapes, StepperMode mode) {
  Result r;
  try {
    if (!shapes) {
      r.error = shapes.error().to_string();
      return r;
    }
    CollectSnapshots sink;
    stages::SessionOptions options;
    options.snapshots = &sink;
    autodiff::TrainingSpec spec;
    spec.optimizer.momentum = 0.9;
    dist::DataParallel dp;
    if (mode.training) {
      options.training = &spec;
      dp.world_size = std::max(1, mode.world_size);
      if (dp.world_size > 1) options.data_parallel = &dp;
      if (Status st = autodiff::add_step_input_shapes(graph, spec, *shapes); !st) {
        r.error = st.error().to_string();
        return r;
      }
    }
    const backend::DeviceSet devices = backend::DeviceSet::standard(false);
    const int64_t start = observe::now_ns();
    auto c = stages::compile_all(std::move(graph), registry, *shapes, options, devices, false);
    r.compile_ns = observe::now_ns() - start;
    r.snapshots = sink.take();
    if (!c) {
      r.error = c.error().to_string();
      return r;
    }
    r.placement.preferred = c->preferred;
    r.placement.device_of = c->device_of;
    for (const stages::Placement& p : c->fallbacks) r.placement.fallback_reason[p.node] = p.reason;
    const stages::ExecutionPlan& plan = c->program->plan();
    for (size_t d = 0; d < plan.devices.size() && d < plan.memory.size() && d < plan.requests.size(); ++d)
      r.memory.push_back({plan.devices[d], plan.requests[d], plan.memory[d], static_cast<int>(plan.steps.size())});
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = std::string("unexpected exception while compiling: ") + e.what();
  } catch (...) {
    r.error = "unexpected exception while compiling";
  }
  return r;
}

void PassStepperModel::apply(Result r) {
  snapshots_ = std::move(r.snapshots);  // kept on failure too: they show how far it got
  placement_ = std::move(r.placement);
  memory_ = std::move(r.memory);
  compile_ns_ = r.compile_ns;
  run_ = -1;
  run_engine_version_.clear();
  message_ = r.ok ? QString() : qs(r.error);
  source_ = !mode_.training          ? tr("compiled '%1'").arg(qs(graph_.name()))
            : mode_.world_size > 1 ? tr("compiled the training step of '%1' over %2 ranks").arg(qs(graph_.name())).arg(mode_.world_size)
                                   : tr("compiled the training step of '%1'").arg(qs(graph_.name()));
  busy_.store(false);
  Q_EMIT finished(r.ok);
}

bool PassStepperModel::compile() {
  if (busy_.load()) return false;
  join();
  busy_.store(true);
  Q_EMIT started();
  QPointer<PassStepperModel> self(this);
  QObject* deliver_on = QCoreApplication::instance();
  if (!deliver_on) deliver_on = this;
  worker_ = std::thread([self, deliver_on, &registry = registry_, graph = graph_, shapes = input_shapes(),
                         mode = mode_]() mutable {
    Result r = compile_graph(std::move(graph), registry, std::move(shapes), mode);
    // Delivered on the application's (the model's) thread, where `self` is checked: dropped when
    // the model is gone.
    QMetaObject::invokeMethod(
        deliver_on,
        [self, r = std::move(r)]() mutable {
          if (self) self->apply(std::move(r));
        },
        Qt::QueuedConnection);
  });
  return true;
}

void PassStepperModel::wait() {
  join();
  QCoreApplication::sendPostedEvents(QCoreApplication::instance(), QEvent::MetaCall);
  QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
}

Status PassStepperModel::compile_now() {
  if (busy_.load()) return make_error("a compilation is already running");
  busy_.store(true);
  Q_EMIT started();
  Result r = compile_graph(graph_, registry_, input_shapes(), mode_);
  const bool ok = r.ok;
  const std::string error = r.error;
  apply(std::move(r));
  return ok ? Status::ok() : Status(make_error(error));
}

Status PassStepperModel::load_run(const std::string& db_path, int64_t run) {
  if (busy_.load()) return make_error("a compilation is running");
  Expected<insight::RunSnapshots> rs = make_error("not read");
  try {
    auto db = insight::Database::open(db_path);
    rs = db ? insight::read_run_snapshots(*db, run) : Expected<insight::RunSnapshots>(db.error());
  } catch (const std::exception& e) {
    rs = make_error(std::string("unexpected exception reading the run: ") + e.what(), db_path);
  }
  if (!rs) {
    message_ = qs(rs.error().to_string());
    Q_EMIT finished(false);
    return rs.error();
  }
  snapshots_ = std::move(rs->snapshots);
  for (observe::Snapshot& s : snapshots_) s.ir_text = strip_param_data(s.ir_text);
  placement_ = {};
  memory_.clear();
  compile_ns_ = 0;
  run_ = run;
  run_engine_version_ = rs->engine_version;
  source_ = tr("run %1 (%2 %3, engine %4)")
                .arg(run)
                .arg(qs(rs->kind), qs(rs->name.empty() ? rs->graph_name : rs->name),
                     qs(rs->engine_version.empty() ? "unknown" : rs->engine_version));
  message_ = snapshots_.empty() ? tr("run %1 recorded no snapshots").arg(run) : QString();
  Q_EMIT finished(!snapshots_.empty());
  if (snapshots_.empty()) return make_error(message_.toStdString());
  return Status::ok();
}

Expected<ir::Graph> PassStepperModel::snapshot_graph(int index) const {
  if (index < 0 || index >= static_cast<int>(snapshots_.size()))
    return make_error("no snapshot " + std::to_string(index));
  const observe::Snapshot& s = snapshots_[static_cast<size_t>(index)];
  std::string what = "snapshot " + std::to_string(s.index) + " (" + s.stage + (s.pass.empty() ? "" : "/" + s.pass) + ")";
  if (run_ >= 0) what = "run " + std::to_string(run_) + ", " + what;
  auto g = ir::parse_graph(s.ir_text, what);
  if (g) return g;
  std::string msg = what + ": its IR does not parse with this engine (version " TESSERA_VERSION;
  if (run_ >= 0)
    msg += "; recorded by " + (run_engine_version_.empty() ? std::string("an unknown version") : run_engine_version_);
  msg += "): " + g.error().to_string();
  return make_error(msg);
}

}  // namespace tessera::studio
