// `tessera train`: trains a graph on a dataset through the six stages (engine/train/trainer.h),
// with a progress line, evaluation after each epoch, checkpoints and resume.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "insight/recorder.h"
#include "engine/backend/device.h"
#include "engine/core/file_kind.h"
#include "engine/data/fingerprint.h"
#include "engine/ir/hash.h"
#include "engine/train/checkpoint.h"
#include "engine/train/trainer.h"
#ifdef TESSERA_HAVE_MPI
#include "engine/dist/mpi_communicator.h"
#endif
#include "formats/dataset_path.h"
#include "formats/file_io.h"
#include "formats/graph_file.h"

namespace tessera::cli {
namespace {

// The loader's threads when --workers is not given: one, so batches are built off the critical
// path, except for several ranks whose compute threads fill this machine's cores
// (OMPI_COMM_WORLD_LOCAL_SIZE under mpirun): then none, and each rank builds its rows between
// steps instead of a thread taking a core from the kernels. 2 ranks x 1 thread on 2 cores trained
// LeNet 1.76x as fast as 1 rank with a loader thread each, 1.81x without (AMD EPYC, 2 cores); one
// rank with 2 threads was the same either way within the noise.
int loader_workers(int requested, int threads, int world) {
  if (requested >= 0) return requested;
  if (world <= 1) return 1;
  int local = world;
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::max(1, std::atoi(v));
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads * local < cores ? 1 : 0;
}


namespace fs = std::filesystem;
using SourcePtr = std::shared_ptr<const data::Source>;

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }
std::atomic<bool> g_terminated{false};
extern "C" void on_sigterm(int) { g_terminated.store(true); }

std::string clock_text(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "--:--";
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Spans of one rank of a data-parallel job: the device gets the rank ("rank1/cpu"), so the
// timeline draws the ranks side by side.
class RankSpans final : public observe::TraceSink {
 public:
  RankSpans(observe::TraceSink* next, int rank) : next_(next), prefix_("rank" + std::to_string(rank) + "/") {}
  void on_span(const observe::Span& span) override {
    observe::Span s = span;
    s.device = prefix_ + (s.device.empty() ? "host" : s.device);  // stages and passes have none
    next_->on_span(s);
  }
  void on_memory(const observe::MemoryEvent& event) override {
    observe::MemoryEvent e = event;
    e.device = prefix_ + e.device;
    next_->on_memory(e);
  }

 private:
  observe::TraceSink* next_;
  std::string prefix_;
};

int train_on_rank(const TrainOptions& o_in, TrainOptions o, dist::Communicator* comm, int world, int rank,
                  const ops::OpRegistry& reg);

}  // namespace

int run_train(const TrainOptions& o_in) {
  const ops::OpRegistry reg = ops::make_default_registry();
  TrainOptions o = o_in;
  // The device first: a GPU asked for and missing is said before any data is read.
  if (o.device.rfind("cpu", 0) != 0) {
    Expected<std::string> d = backend::DeviceSet::discover(false, true, o.precision == "tf32").resolve(o.device);
    if (!d) return fail(d.error());
    o.device = *d;
  }
  // Under `mpirun -n N` (N > 1): data parallel over Open MPI. Every rank runs this command; rank 0
  // records the run, writes checkpoints and prints; the others train silently.
  std::unique_ptr<dist::Communicator> comm;
  int world = 1, rank = 0;
#ifdef TESSERA_HAVE_MPI
  if (dist::launched_by_mpi()) {
    auto c = dist::MpiCommunicator::create();
    if (!c) return fail(c.error());
    (*c)->set_ordered(o.deterministic);
    world = (*c)->size();
    rank = (*c)->rank();
    comm = std::move(*c);
    dist::set_current(comm.get());
    if (rank != 0) {
      o.record.no_record = true;
      o.checkpoint_dir.clear();
      o.save.clear();
      o.json = false;
    }
  }
#else
  if (dist::launched_by_mpi())
    return fail(make_error("this tessera was built without Open MPI, so `mpirun -n N` would run N independent trainings into "
                           "the same files: install libopenmpi-dev (scripts/setup.sh) and rebuild"));
#endif
  struct ResetCurrent {
    ~ResetCurrent() { dist::set_current(nullptr); }
  } reset_current;
  // The other ranks' progress and notes would repeat rank 0's; their errors still reach the terminal.
  int terminal = -1;
  if (rank != 0) {
    terminal = ::dup(2);
    std::freopen("/dev/null", "w", stderr);
  }
  const int rc = train_on_rank(o_in, o, comm.get(), world, rank, reg);
  if (rc != 0 && world > 1) {
    // A rank that stops on an error would leave the others blocked in the next collective: say
    // which rank failed and why, and end every rank (MPI_Abort; mpirun reports it, rank 0's
    // watcher records the run as failed).
    if (terminal >= 0) {
      const std::string line = "tessera: error on rank " + std::to_string(rank) + " of " + std::to_string(world) + ": " +
                               last_error() + " (stopping every rank)\n";
      if (::write(terminal, line.data(), line.size()) < 0) { /* nothing left to tell */ }
    } else {
      std::cerr << "tessera: rank 0 of " << world << " failed: stopping every rank\n";
    }
    comm->abort(rc);
  }
  return rc;
}

namespace {

// Every rank of a job must train the same thing: rank 0's settings (its recorded hyper-parameters,
// the graph's structure, the datasets' sizes) are broadcast, and a rank started otherwise stops
// naming the first setting that differs (else it would train something else silently, or pair
// collectives of different sizes and hang).
Status rank_agrees(dist::Communicator& comm, std::map<std::string, std::string> mine) {
  mine.erase("threads");  // a rank's own business (its kernels' split, not what is trained)
  mine.erase("data");     // paths may differ between machines; the sizes below may not
  mine["resume"] = mine["resume"] == "-" ? "no" : "yes";  // only rank 0 reads the checkpoint (Trainer::resume)
  std::string text;
  for (const auto& [k, v] : mine) text += k + "\t" + v + "\n";
  int64_t n = static_cast<int64_t>(text.size());
  RETURN_IF_ERROR(comm.broadcast(&n, sizeof n, 0));
  std::string root = comm.rank() == 0 ? text : std::string(static_cast<size_t>(n), '\0');
  RETURN_IF_ERROR(comm.broadcast(root.data(), n, 0));
  if (root == text) return Status::ok();
  std::map<std::string, std::string> theirs;
  for (size_t at = 0; at < root.size();) {
    const size_t tab = root.find('\t', at), end = root.find('\n', at);
    if (tab == std::string::npos || end == std::string::npos || tab > end) break;
    theirs[root.substr(at, tab - at)] = root.substr(tab + 1, end - tab - 1);
    at = end + 1;
  }
  for (const auto& [k, v] : mine) {
    auto it = theirs.find(k);
    const std::string other = it == theirs.end() ? "(not set)" : it->second;
    if (other != v)
      return make_error("this rank's " + k + " is " + v + " but rank 0's is " + other +
                        ": every rank of an mpirun job must be started with the same command and files");
  }
  return make_error("this rank's settings differ from rank 0's: every rank of an mpirun job must be started with the same command");
}

// rank_agrees on every rank, and then every rank learns the first rank that differs and its
// reason, so that rank 0 records the run failed with it (it was left "running", then read as
// crashed, when the other rank's abort killed it).
Status check_ranks_agree(dist::Communicator& comm, std::map<std::string, std::string> mine) {
  const Status own = rank_agrees(comm, std::move(mine));
  std::vector<float> differs(static_cast<size_t>(comm.size()), 0.0f);
  if (!own.is_ok()) differs[static_cast<size_t>(comm.rank())] = 1.0f;
  RETURN_IF_ERROR(comm.allreduce_sum(differs.data(), comm.size()));
  const auto first = std::find_if(differs.begin(), differs.end(), [](float f) { return f > 0; });
  if (first == differs.end()) return Status::ok();
  const int who = static_cast<int>(first - differs.begin());
  std::string why = who == comm.rank() ? own.error().message : std::string();
  const bool mine_first = who == comm.rank();
  int64_t n = static_cast<int64_t>(why.size());
  RETURN_IF_ERROR(comm.broadcast(&n, sizeof n, who));
  why.resize(static_cast<size_t>(n));
  RETURN_IF_ERROR(comm.broadcast(why.data(), n, who));
  if (mine_first) return own;
  if (why.rfind("this rank's ", 0) == 0) why = "its " + why.substr(12);
  return make_error("rank " + std::to_string(who) + " of " + std::to_string(comm.size()) + " was started otherwise: " + why);
}

int train_on_rank(const TrainOptions& o_in, TrainOptions o, dist::Communicator* comm, int world, int rank,
                  const ops::OpRegistry& reg) {
  auto graph = formats::load_graph_file(o.file);
  if (!graph) return fail(graph.error());

  train::TrainConfig cfg;
  auto loss = autodiff::parse_loss(o.loss);
  if (!loss) return fail(loss.error().within("--loss"));
  cfg.spec.loss = *loss;
  cfg.spec.output = o.output;
  auto opt = autodiff::parse_optimizer(o.optimizer);
  if (!opt) return fail(opt.error().within("--optimizer"));
  cfg.spec.optimizer.kind = *opt;
  cfg.spec.optimizer.momentum = o.momentum >= 0 ? o.momentum : (o.optimizer == "momentum" ? 0.9 : 0.0);
  cfg.spec.optimizer.nesterov = o.nesterov;
  cfg.spec.optimizer.weight_decay = o.weight_decay >= 0 ? o.weight_decay : (*opt == autodiff::OptimizerKind::kAdamW ? 0.01 : 0.0);
  if (cfg.spec.optimizer.kind != autodiff::OptimizerKind::kSgd && cfg.spec.optimizer.momentum != 0.0)
    return fail(make_error("--momentum applies to sgd/momentum, not " + o.optimizer));
  cfg.epochs = o.epochs;
  cfg.lr = o.lr;
  cfg.schedule = o.schedule;
  // Several ranks on one machine share its cores: by default each takes its share (mpirun binds
  // a rank to a core when there are 2 or fewer; more threads would only contend).
  int local_ranks = 1;
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); v && world > 1) local_ranks = std::max(1, std::atoi(v));
  cfg.threads = o.threads > 0 ? o.threads : std::max(1, default_threads() / local_ranks);
  // Threads by default follow the load (one core taken by another process: one thread fewer);
  // --threads N keeps N, so runs repeat bit for bit; ranks of a job keep their share.
  cfg.adapt_threads = o.threads <= 0 && world == 1;
  cfg.inter_op_threads = o.inter_op;
  cfg.device = o.device;
  cfg.tf32 = o.precision == "tf32";
  cfg.bf16 = o.precision == "bf16";
  cfg.seed = o.seed;
  cfg.spec.accumulate = static_cast<int>(o.accumulate);
  cfg.check_numerics = o.check_numerics;
  // Checkpoints record the global batch (micro-batches x ranks): resumable on other rank counts.
  cfg.batch_size = o.batch * o.accumulate * world;
  cfg.checkpoint_dir = o.checkpoint_dir;
  cfg.checkpoint_every = o.checkpoint_every;
  cfg.max_steps = o.max_steps;
  cfg.comm = comm;
  cfg.data_parallel.overlap = !o.no_overlap;
  cfg.data_parallel.bucket_bytes = mib_bytes(o.bucket_mb);
  cfg.data_parallel.first_bucket_bytes = mib_bytes(o.first_bucket_mb);
  cfg.data_parallel.sync_batchnorm = o.sync_bn;
  if (world == 1) {
    std::string idle;
    if (o.sync_bn) idle += ", --sync-bn";
    if (o.deterministic) idle += ", --deterministic";
    if (o.no_overlap) idle += ", --no-overlap";
    if (!idle.empty())
      std::cerr << "note: no effect on one process: " << idle.substr(2)
                << " (data-parallel flags act between the ranks of `mpirun -n N tessera train`)\n";
  }
  if (world > 1 && o.inter_op > 1)
    return fail(make_error("data parallel needs --inter-op 1: with several steps at once, the ranks could start their "
                           "gradient all-reduces in different orders and sum one bucket with another"));

  const int channels = formats::image_channels(*graph);
  auto train_src = formats::open_dataset_split(o.data, "train", channels);
  if (!train_src) return fail(train_src.error());
  Expected<SourcePtr> test_src = SourcePtr();
  if (!o.test_data.empty()) test_src = formats::open_dataset_split(o.test_data, "test", channels);
  else if (!o.no_eval) test_src = formats::open_dataset_split(o.data, "test", channels);
  if (!test_src) return fail(test_src.error());

  data::LoaderOptions lo;
  lo.batch_size = cfg.batch_size;  // the global batch: each rank trains on its slice, micro-batch by micro-batch
  lo.shuffle = true;
  lo.seed = o.seed;
  lo.workers = loader_workers(o.workers, cfg.threads, world);
  // An epoch's last, partial batch must give every rank's every micro-batch an example; a tail
  // smaller than that is left out of each epoch (as with drop_last), and said.
  const int64_t parts = o.accumulate * world;
  if (const int64_t tail = train::unsplittable_tail((*train_src)->size(), lo.batch_size, parts)) {
    lo.drop_last = true;
    if (rank == 0)
      std::cerr << "note: the last " << tail << " example(s) of each epoch are left out: a batch of " << tail
                << " cannot give each of " << parts << (world > 1 ? " micro-batches x ranks" : " micro-batches") << " an example\n";
  }
  data::LoaderOptions to = lo;  // the test set
  lo.shard = rank;              // each rank builds only its rows of the global batch
  lo.shards = world;
  data::DataLoader train_loader(*train_src, {}, lo);
  to.shuffle = false;
  to.drop_last = false;
  to.batch_size = std::max<int64_t>(o.batch, 256) * world;
  // Each rank evaluates its rows of every test batch (the trainer combines the sums), unless the
  // last batch is too small to give every rank a row: then every rank evaluates all of it.
  if (*test_src && !train::unsplittable_tail((*test_src)->size(), to.batch_size, world)) {
    to.shard = rank;
    to.shards = world;
  }
  std::unique_ptr<data::DataLoader> test_loader;
  if (*test_src) test_loader = std::make_unique<data::DataLoader>(*test_src, data::Transforms{}, to);

  if (comm) {
    std::map<std::string, std::string> mine = train_hyperparams(o_in, world);
    mine["seed"] = std::to_string(o.seed);
    mine["graph"] = train::hex64(ir::structural_hash(*graph));
    mine["training examples"] = std::to_string((*train_src)->size());
    mine["test examples"] = *test_src ? std::to_string((*test_src)->size()) : "none";
    if (Status st = check_ranks_agree(*comm, std::move(mine)); !st.is_ok()) {
      // Rank 0 records the job that could not start, with the reason, before any rank ends the
      // job (every rank got the same error: they all wait here for it).
      const int rc = rank == 0 ? start_recording(o.record, "train", insight::run_name(graph->name(), o.file), o.seed,
                                                 train_hyperparams(o, world))
                                     .fail(st.error())
                               : fail(st.error());
      (void)comm->barrier();
      return rc;
    }
  }

  RunRecording rec = start_recording(o.record, "train", insight::run_name(graph->name(), o.file), o.seed,
                                     train_hyperparams(o, world));
  rec.log_graph(*graph);
  rec.log_dataset("train", **train_src, o.data);
  if (*test_src) rec.log_dataset("test", **test_src, o.test_data.empty() ? o.data : o.test_data);
  cfg.trace = rec.trace();
  cfg.metrics = rec.metrics();
  // Data parallel: the other ranks write their spans into rank 0's run (the same database file,
  // which ranks on one machine share), each lane named by its rank.
  std::unique_ptr<insight::Recorder> rank_recorder;
  std::unique_ptr<RankSpans> rank_spans;
  if (comm) {
    int64_t run_id = rec.run_id();
    Status st = comm->broadcast(&run_id, sizeof run_id, 0);
    if (!st.is_ok()) return rec.fail(st.error());
    // Only ranks on rank 0's machine share its database file: a rank elsewhere would attach its
    // spans to whatever run has that id in its own machine's database.
    char host[256] = {0}, root_host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    std::memcpy(root_host, host, sizeof host);
    st = comm->broadcast(root_host, sizeof root_host, 0);
    if (!st.is_ok()) return rec.fail(st.error());
    if (rank != 0 && run_id >= 0 && !o_in.record.no_record && std::strcmp(host, root_host) == 0) {
      auto r = insight::Recorder::open(o_in.record.db);
      if (r && (*r)->attach_run(run_id).is_ok()) rank_recorder = std::move(*r);
    }
    observe::TraceSink* sink = rank == 0 ? rec.trace() : rank_recorder.get();
    if (sink) rank_spans = std::make_unique<RankSpans>(sink, rank);
    cfg.trace = rank_spans.get();
  }
  train::Trainer trainer(*graph, reg, cfg);
  // Outputs written at the end (the trained graph) or every few steps (checkpoints): a path that
  // cannot be written fails now, not after the training it would lose.
  if (Status st = trainer.check_checkpoint_dir(); !st.is_ok()) return rec.fail(st.error().within("--checkpoint-dir"));
  if (!o.save.empty()) {
    Status st = require_writable_dir(formats::parent_dir(o.save), false);
    if (st.is_ok()) st = require_replaceable_file(o.save);
    if (!st.is_ok()) return rec.fail(st.error().within("--save"));
  }
  if (!o.resume.empty()) {
    Status st = trainer.resume(o.resume);
    if (!st.is_ok()) return rec.fail(st.error());
    rec.resumed_from(o.resume);
  }
  // Data parallel: when a rank dies or mpirun is interrupted, mpirun terminates the ranks (SIGCONT,
  // SIGTERM a second later, SIGKILL a second after that, but at once to the survivors when one of
  // them dies of the SIGTERM). Rank 0 may be blocked in a collective by then, so a watcher records
  // the run as failed and exits; the other ranks outlive their SIGTERM by 2 s (mpirun's SIGKILL
  // ends them first; a SIGTERM from elsewhere ends them then), else the first to die of it got
  // rank 0 killed before it wrote a word (1 run in 2 stayed "running"; a shorter grace leaves the
  // recording to the scheduler's mercy under load).
  // Writes to a closed mpirun pipe fail instead of killing the rank (SIGPIPE).
  std::atomic<bool> watching{comm != nullptr};
  std::thread watcher;
  if (watching.load()) {
    std::signal(SIGTERM, on_sigterm);
    std::signal(SIGPIPE, SIG_IGN);
    watcher = std::thread([&] {
      while (watching.load()) {
        if (g_terminated.load()) {
          if (rank != 0 || !rec.active()) {
            if (rank != 0 && rank_recorder) {
              // Rank 0 killed (SIGKILL, the OOM killer) cannot record its run: a rank on its machine
              // that sees its process gone does, after the moment a living rank 0 needs to.
              std::this_thread::sleep_for(std::chrono::milliseconds(300));
              (void)rank_recorder->record_if_owner_gone(
                  "rank 0 died (killed or crashed) at about step " + std::to_string(trainer.global_step()) + " of " +
                  std::to_string(world) + " ranks; recorded by rank " + std::to_string(rank) + ". The last checkpoint is intact");
            }
            if (rank != 0) std::this_thread::sleep_for(std::chrono::seconds(2));  // mpirun's SIGKILL comes first
            std::_Exit(143);
          }
          // mpirun's SIGTERM: a rank died, or mpirun itself was interrupted (Ctrl-C), which the
          // ranks cannot tell apart. A stop already asked (SIGINT or SIGUSR1 here) makes it an
          // interruption.
          const std::string at = " at step " + std::to_string(trainer.global_step()) + " (" + std::to_string(world) + " ranks)";
          if (g_stop.load()) {
            rec.abort_stopped("interrupted: mpirun terminated the ranks" + at + " before the step ended; the last checkpoint is intact");
            std::fprintf(stderr, "\ntessera: interrupted: mpirun terminated the job%s\n", at.c_str());
            std::_Exit(130);
          }
          rec.abort("terminated by mpirun" + at + ": a rank failed or was killed (mpirun's message names it), or mpirun "
                    "was interrupted (to stop after a whole step, with a last checkpoint: kill -USR1 <mpirun's pid>)");
          std::fprintf(stderr, "tessera: error: mpirun terminated the data-parallel job (a rank failed, or mpirun was "
                               "interrupted; kill -USR1 <mpirun's pid> stops it after a whole step)\n");
          std::_Exit(143);
        }
        // A collective that makes no progress (a link down: MPI over TCP notices after minutes of
        // keepalives, or never): every rank stops by itself, rank 0 recording the run as failed.
        // Not before the first step is done: ranks compile and load at their own pace.
        if (o.dist_timeout > 0 && trainer.global_step() >= 1 && comm->stalled_seconds() > o.dist_timeout) {
          const std::string what = "the ranks' communication made no progress for " +
                                   std::to_string(static_cast<int>(o.dist_timeout)) + " s at step " +
                                   std::to_string(trainer.global_step()) + " (" + std::to_string(world) +
                                   " ranks): a network link between them is down, or a rank hangs; the last "
                                   "checkpoint is intact (--dist-timeout sets the limit)";
          if (rank == 0 && rec.active()) rec.abort(what);
          std::fprintf(stderr, "tessera: error: rank %d: %s\n", rank, what.c_str());
          std::_Exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  struct StopWatcher {
    std::atomic<bool>& on;
    std::thread& t;
    ~StopWatcher() {
      on.store(false);
      if (t.joinable()) t.join();
    }
  } stop_watcher{watching, watcher};
  const bool tty = isatty(2);
  std::cerr << "training '" << graph->name() << "' (" << o.file << ") on " << (*train_src)->name() << ": "
            << (*train_src)->size() << " examples" << (test_loader ? ", test " + std::to_string((*test_src)->size()) : std::string())
            << "; " << o.optimizer << " lr " << o.lr << (cfg.spec.optimizer.momentum ? " momentum " + std::to_string(cfg.spec.optimizer.momentum).substr(0, 4) : "")
            << ", batch " << o.batch << (o.accumulate > 1 ? " x " + std::to_string(o.accumulate) + " micro-batches" : std::string())
            << (world > 1 ? " per rank x " + std::to_string(world) + " ranks (MPI)" : std::string())
            << ", " << cfg.threads << " thread(s), seed " << o.seed
            << (o.resume.empty() ? "" : ", resumed at step " + std::to_string(trainer.global_step())) << "\n";
  const LoadProbe load;
  std::signal(SIGINT, on_sigint);
  if (world > 1) std::signal(SIGUSR1, on_sigint);  // mpirun forwards SIGUSR1 to every rank: a stop after a whole step
  train::TrainCallbacks cb;
  cb.stop = &g_stop;
  int64_t last_print = -1;
  const bool classify = cfg.spec.loss == autodiff::LossKind::kSoftmaxCrossEntropy;
  train::StepInfo last_step;
  cb.on_step = [&](const train::StepInfo& s) {
    last_step = s;
    const bool last = s.batch == s.batches;
    if (!tty && !last && s.batch / std::max<int64_t>(1, s.batches / 10) == last_print) return;
    last_print = s.batch / std::max<int64_t>(1, s.batches / 10);
    const int width = 24;
    const int filled = static_cast<int>(width * s.batch / std::max<int64_t>(1, s.batches));
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < width) bar += '>';
    bar.resize(width, ' ');
    char line[256], acc[32] = "";
    if (classify) std::snprintf(acc, sizeof acc, "  acc %5.1f%%", 100 * s.accuracy);
    std::snprintf(line, sizeof line, "epoch %lld/%lld [%s] %lld/%lld  loss %.4f%s  %.0f ex/s  ETA %s",
                  static_cast<long long>(s.epoch + 1), static_cast<long long>(o.epochs), bar.c_str(),
                  static_cast<long long>(s.batch), static_cast<long long>(s.batches), s.loss, acc,
                  s.images_per_s, clock_text(s.eta_s).c_str());
    std::cerr << (tty ? "\r" : "") << line << (tty ? "\033[K" : "\n") << std::flush;
  };
  cb.on_epoch = [&](const train::EpochInfo& e) {
    if (tty) std::cerr << "\n";
    std::fprintf(stderr, "epoch %lld: train loss %.4f", static_cast<long long>(e.epoch + 1), e.train_loss);
    if (classify) std::fprintf(stderr, " acc %.2f%%", 100 * e.train_accuracy);
    if (e.test_accuracy >= 0) std::fprintf(stderr, ", test loss %.4f acc %.2f%%", e.test_loss, 100 * e.test_accuracy);
    std::fprintf(stderr, ", %.0f ex/s, %.1f s (%.1f%% waiting for data)\n", e.images_per_s, e.seconds,
                 e.seconds > 0 ? 100 * e.data_wait_s / e.seconds : 0.0);
  };
  cb.on_checkpoint = [&](const std::string& path) {
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "checkpoint " << path << "\n";
    rec.log_checkpoint(path, trainer.global_step());
  };
  auto result = trainer.fit(train_loader, test_loader.get(), cb);
  std::signal(SIGINT, SIG_DFL);
  if (comm && result) {
    // Each rank's time in MPI (on the communication thread) and blocked waiting for it, gathered
    // to rank 0, which records them all: a rank on another host has another database.
    std::vector<float> times(2 * static_cast<size_t>(world), 0.f);
    times[2 * static_cast<size_t>(rank)] = static_cast<float>(comm->comm_seconds());
    times[2 * static_cast<size_t>(rank) + 1] = static_cast<float>(comm->wait_seconds());
    if (comm->allreduce_sum(times.data(), static_cast<int64_t>(times.size())).is_ok() && rank == 0)
      if (observe::MetricsSink* m = rec.metrics())
        for (int r = 0; r < world; ++r) {
          const std::string suffix = "/rank" + std::to_string(r);
          m->on_metric("dist/comm_s" + suffix, trainer.global_step(), 0, times[2 * static_cast<size_t>(r)]);
          m->on_metric("dist/wait_s" + suffix, trainer.global_step(), 0, times[2 * static_cast<size_t>(r) + 1]);
        }
  }
  if (tty) std::cerr << "\n";
  if (!result) return rec.fail(result.error().within(o.file));
  if (const double others = load.others_cores(); others >= 0) {
    std::cerr << "load: " << load.describe() << " while training" << (world > 1 ? " (this job's other ranks among them)" : "") << "\n";
    rec.metric("train/other_load_cores", others, trainer.global_step());
  }
  if (result->interrupted) std::cerr << "stopped by the user at step " << result->steps << "\n";
  // --max-steps before the last epoch's end (mid-epoch, no epoch line says where it ended)
  if (result->stopped && !result->interrupted && (last_step.batch < last_step.batches || last_step.epoch + 1 < o.epochs)) {
    std::fprintf(stderr, "stopped at --max-steps %lld", static_cast<long long>(o.max_steps));
    if (last_step.batch < last_step.batches && !result->epochs.empty()) {
      const train::EpochInfo& e = result->epochs.back();
      std::fprintf(stderr, " (epoch %lld, batch %lld of %lld): train loss %.4f", static_cast<long long>(e.epoch + 1),
                   static_cast<long long>(last_step.batch), static_cast<long long>(last_step.batches), e.train_loss);
      if (classify) std::fprintf(stderr, " acc %.2f%%", 100 * e.train_accuracy);
      std::fprintf(stderr, " over the epoch's batches, %.0f ex/s", e.images_per_s);
    }
    std::fprintf(stderr, "\n");
  }
  if (!o.save.empty()) {
    Status st = formats::save_graph_file(trainer.trained_graph(), o.save);
    if (!st.is_ok()) return rec.fail(st.error());
    std::cerr << "trained graph written to " << o.save << "\n";
  }
  if (o.json) {
    nlohmann::json j = {{"test_accuracy", result->test_accuracy},
                        {"test_loss", result->epochs.empty() ? -1.0 : result->epochs.back().test_loss},
                        {"train_loss", result->train_loss},
                        // epochs: where training stands (a resumed run counts the epochs before
                        // the checkpoint); epochs_run and images_per_s: this process's part.
                        {"images_per_s", result->images_per_s},
                        {"epochs", result->epochs.empty() ? int64_t{0} : result->epochs.back().epoch + 1},
                        {"epochs_run", result->epochs.size()},
                        {"steps", result->steps}, {"checkpoint", result->last_checkpoint},
                        {"data_wait_s", result->data_wait_s}, {"arena_bytes", result->arena_bytes},
                        {"state_bytes", result->state_bytes}, {"world_size", world},
                        {"eval_s", result->eval_s}, {"eval_examples", result->eval_examples},
                        {"comm_s", comm ? comm->comm_seconds() : 0.0},
                        {"comm_wait_s", comm ? comm->wait_seconds() : 0.0}};
    print_json(j);
  }
  return rec.finish(result->interrupted);
}

}  // namespace

}  // namespace tessera::cli
