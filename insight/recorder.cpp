// The recorder: a queue filled by the engine's sinks and drained by one writer thread in batched
// SQLite transactions.
#include "insight/recorder.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "engine/core/file_kind.h"
#include "engine/ir/text.h"
#include "insight/sql.h"

namespace tessera::insight {
namespace {

std::string hex16(uint64_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kDigits[v & 15];
  return s;
}

// Per (kind, op) totals of one batch, added to span_stats in one upsert each.
struct OpTotals {
  int64_t count = 0, total_ns = 0, min_ns = INT64_MAX, max_ns = 0, bytes = 0;
  double flops = 0;
};

// Absolute, normalised path (so that a resume names the same checkpoint the writer recorded).
std::string absolute_path(const std::string& p) {
  std::error_code ec;
  auto a = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  return ec ? p : a.string();
}

}  // namespace

const char* run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning: return "running";
    case RunStatus::kFinished: return "finished";
    case RunStatus::kFailed: return "failed";
    case RunStatus::kCrashed: return "crashed";
    case RunStatus::kStopped: return "stopped";
  }
  return "failed";
}

const char* lineage_kind_name(LineageKind k) {
  switch (k) {
    case LineageKind::kResumedFrom: return "resumed_from";
    case LineageKind::kFineTunedFrom: return "fine_tuned_from";
    case LineageKind::kDerivedFrom: return "derived_from";
  }
  return "derived_from";
}

std::string content_hash(const std::string& bytes) { return hex16(XXH3_64bits(bytes.data(), bytes.size())); }

std::string run_name(const std::string& graph_name, const std::string& file) {
  static const char* const kGeneric[] = {"", "torch_jit", "torch-jit-export", "main_graph", "main", "graph"};
  const bool generic = std::find_if(std::begin(kGeneric), std::end(kGeneric),
                                    [&](const char* g) { return graph_name == g; }) != std::end(kGeneric);
  if (!generic || file.empty()) return graph_name;
  std::string stem = file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  if (const size_t dot = stem.find_last_of('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  return stem.empty() ? graph_name : stem;
}

Expected<std::string> file_checksum(const std::string& path) {
  RETURN_IF_ERROR(require_regular_file(path));  // a FIFO would block, /dev/zero never end
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read the file for its checksum", path);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    XXH3_64bits_update(state, buf.data(), static_cast<size_t>(in.gcount()));
  }
  const bool bad = in.bad();
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  if (bad) return make_error("read error while computing the checksum", path);
  return hex16(h);
}

struct Recorder::Other {
  enum class Type { kGraph, kRunGraph, kDataset, kCheckpoint, kLineage, kHyper };
  Type type;
  std::string a, b, c, d;
  int64_t n = 0, wall = 0;
};

struct Recorder::Batch {
  std::vector<observe::Span> spans;
  std::vector<observe::MemoryEvent> memory;
  std::vector<observe::Snapshot> snapshots;
  std::vector<Metric> metrics;
  std::vector<Other> others;
  bool empty() const { return spans.empty() && memory.empty() && snapshots.empty() && metrics.empty() && others.empty(); }
  void clear() {
    spans.clear();
    memory.clear();
    snapshots.clear();
    metrics.clear();
    others.clear();
  }
  // Appends `later`'s records after these (moved; `later` is left empty).
  void take(Batch& later) {
    auto move_all = [](auto& to, auto& from) {
      to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
      from.clear();
    };
    move_all(spans, later.spans);
    move_all(memory, later.memory);
    move_all(snapshots, later.snapshots);
    move_all(metrics, later.metrics);
    move_all(others, later.others);
  }
};

namespace {

// Failures that pass: another writer's lock held past the busy timeout, a full or failing disk.
// A batch that met one is kept and written again with the next (nothing recorded is dropped for
// a busy moment); any other failure (a constraint) would fail again and drops the batch.
bool passing_failure(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

// Attempts at the end of a run for a batch that keeps meeting a passing failure (each waits up to
// the busy timeout for the lock).
constexpr int kFinalAttempts = 4;

}  // namespace

struct Recorder::Statements {
  explicit Statements(sqlite3* db)
      : span(db, "INSERT INTO spans(run, kind, name, op, device, detail, node, thread, start_ns, end_ns, bytes, flops) "
                 "VALUES(?,?,?,?,?,?,?,?,?,?,?,?);"),
        add_string(db, "INSERT OR IGNORE INTO strings(text) VALUES(?);"),
        find_string(db, "SELECT id FROM strings WHERE text = ?;"),
        span_stats(db, "INSERT INTO span_stats(run, kind, op, count, total_ns, min_ns, max_ns, bytes, flops) "
                       "VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(run, kind, op) DO UPDATE SET count = count + excluded.count, "
                       "total_ns = total_ns + excluded.total_ns, min_ns = MIN(min_ns, excluded.min_ns), "
                       "max_ns = MAX(max_ns, excluded.max_ns), bytes = bytes + excluded.bytes, "
                       "flops = flops + excluded.flops;"),
        memory(db, "INSERT INTO memory_events(run, device, what, time_ns, bytes) VALUES(?,?,?,?,?);"),
        metric(db, "INSERT INTO metrics(run, name, step, epoch, value, wall_ns) VALUES(?,?,?,?,?,?);"),
        ir_text(db, "INSERT OR IGNORE INTO ir_texts(hash, text) VALUES(?,?);"),
        snapshot(db, "INSERT INTO snapshots(run, stage, pass, idx, ir, graph_hash, duration_ns, changed, nodes_before, "
                     "nodes_after, diagnostics) VALUES(?,?,?,?,?,?,?,?,?,?,?);"),
        provenance(db, "INSERT OR IGNORE INTO snapshot_provenance(snapshot, node, from_node) VALUES(?,?,?);"),
        graph(db, "INSERT OR IGNORE INTO graphs(hash, name, format, body, created_ns) VALUES(?,?,?,?,?);"),
        run_graph(db, "INSERT OR IGNORE INTO run_graphs(run, graph, role) VALUES(?,?,?);"),
        dataset(db, "INSERT OR IGNORE INTO datasets(fingerprint, path, examples) VALUES(?,?,?);"),
        run_dataset(db, "INSERT OR REPLACE INTO run_datasets(run, split, fingerprint) VALUES(?,?,?);"),
        checkpoint(db, "INSERT INTO checkpoints(run, path, step, checksum, wall_ns) VALUES(?,?,?,?,?);"),
        find_checkpoint(db, "SELECT id FROM checkpoints WHERE path = ? ORDER BY id DESC LIMIT 1;"),
        lineage(db, "INSERT INTO lineage(kind, from_type, from_id, to_type, to_id, note, wall_ns) VALUES(?,?,?,?,?,?,?);"),
        hyper(db, "INSERT OR REPLACE INTO hyperparams(run, key, value) VALUES(?,?,?);"),
        heartbeat(db, "UPDATE runs SET heartbeat_ns = ?, max_span_ns = MAX(max_span_ns, ?) WHERE id = ?;") {}
  bool ok() const {
    for (const Stmt* s : {&span, &add_string, &find_string, &span_stats, &memory, &metric, &ir_text, &snapshot, &provenance, &graph, &run_graph, &dataset,
                          &run_dataset, &checkpoint, &find_checkpoint, &lineage, &hyper, &heartbeat})
      if (!s->ok()) return false;
    return true;
  }
  Stmt span, add_string, find_string, span_stats, memory, metric, ir_text, snapshot, provenance, graph, run_graph, dataset, run_dataset, checkpoint,
      find_checkpoint, lineage, hyper, heartbeat;
};

Recorder::Recorder(Database db, RecorderOptions options)
    : db_(std::move(db)), options_(options), owner_pid_(::getpid()), pending_(std::make_unique<Batch>()) {}

Expected<std::unique_ptr<Recorder>> Recorder::open(const std::string& path, RecorderOptions options) {
  TRY(Database db, Database::open(path, options.open));
  return std::unique_ptr<Recorder>(new Recorder(std::move(db), options));
}

Recorder::~Recorder() {
  if (forked()) {
    // A copy of the parent's recorder in a forked child: its writer thread does not exist here
    // and its SQLite connection is the parent's (SQLite connections must not cross fork()). Touch
    // neither: leave the thread and leak the connection and its statements.
    if (writer_.joinable()) writer_.detach();
    (void)stmts_.release();
    (void)sync_.release();
    db_.abandon();
    return;
  }
  if (run_id_ >= 0 && !finished_) {
    if (attached_) (void)detach();
    else (void)finish_run(RunStatus::kFailed, "the recorder was closed before the run finished");
  }
}

Status Recorder::forked_error() const {
  return make_error("this run is recorded by process " + std::to_string(owner_pid_) + ", and this is a child it forked " +
                        "(a DataLoader worker?): SQLite connections do not survive fork(); log from the process that "
                        "started the run",
                    db_.path());
}

Status Recorder::attach_run(int64_t run) {
  if (forked()) return forked_error();
  if (run_id_ >= 0) return make_error("this recorder already records run " + std::to_string(run_id_), db_.path());
  {
    Stmt st(db_.handle(), "SELECT status FROM runs WHERE id = ?;");
    st.bind(1, run);
    if (st.step() != SQLITE_ROW) return make_error("no run " + std::to_string(run) + " to attach to", db_.path());
  }
  RETURN_IF_ERROR(prepare_statements());
  run_id_ = run;
  attached_ = true;
  writer_ = std::thread([this] { writer_loop(); });
  return Status::ok();
}

Status Recorder::detach() {
  if (forked()) return forked_error();
  if (!attached_ || finished_) return make_error("not attached to a run", db_.path());
  {
    std::lock_guard<std::mutex> lk(sync_->mu);
    stop_ = true;
  }
  sync_->wake.notify_one();
  if (writer_.joinable()) writer_.join();
  finished_ = true;
  stmts_.reset();
  return write_status();
}

Expected<bool> Recorder::record_if_owner_gone(const std::string& why) {
  if (!attached_) return make_error("not attached to a run", db_.path());
  {
    Stmt st(db_.handle(), "SELECT pid, host, COALESCE(pid_start, -1) FROM runs WHERE id = ? AND status = 'running';");
    st.bind(1, run_id_);
    if (st.step() != SQLITE_ROW) return false;  // recorded already (by its owner)
    if (st.is_null(0) || st.text(1) != host_name() || st.i64(0) <= 0) return false;  // cannot see it
    if (process_alive(st.i64(0), st.i64(2))) return false;
  }
  Stmt up(db_.handle(), "UPDATE runs SET status = 'failed', ended_ns = ?, error = ? WHERE id = ? AND status = 'running';");
  up.bind(1, wall_ns());
  up.bind(2, why);
  up.bind(3, run_id_);
  if (!up.run()) return db_.error("cannot record the end of run " + std::to_string(run_id_));
  return sqlite3_changes(db_.handle()) == 1;
}

Status Recorder::prepare_statements() {
  stmts_ = std::make_unique<Statements>(db_.handle());
  if (!stmts_->ok()) return db_.error("cannot prepare the recorder's statements");
  return Status::ok();
}

Expected<int64_t> Recorder::start_run(const RunInfo& info) {
  if (forked()) return forked_error();
  if (run_id_ >= 0) return make_error("this recorder already records run " + std::to_string(run_id_), db_.path());
  RETURN_IF_ERROR(prepare_statements());
  const int64_t now = wall_ns();
  RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE;"));
  {
    Stmt st(db_.handle(),
            "INSERT INTO runs(command, graph_name, name, kind, engine_version, host, pid, seed, status, started_ns, "
            "heartbeat_ns, steady_offset_ns, pid_start) VALUES(?,?,?,?,?,?,?,?,'running',?,?,?,?);");
    st.bind(1, info.command);
    st.bind(2, info.graph_name);
    st.bind(3, info.name.empty() ? info.graph_name : info.name);
    st.bind(4, info.kind);
    st.bind(5, info.engine_version);
    st.bind(6, host_name());
    st.bind(7, static_cast<int64_t>(getpid()));
    st.bind(8, static_cast<int64_t>(info.seed));
    st.bind(9, now);
    st.bind(10, now);
    st.bind(11, now - observe::now_ns());
    st.bind(12, process_start(getpid()));
    if (!st.run()) {
      Error e = db_.error("cannot record the run");
      (void)db_.exec("ROLLBACK;");
      return e;
    }
  }
  const int64_t id = sqlite3_last_insert_rowid(db_.handle());
  for (const auto& [k, v] : info.hyperparams) {
    stmts_->hyper.bind(1, id);
    stmts_->hyper.bind(2, k);
    stmts_->hyper.bind(3, v);
    if (!stmts_->hyper.run()) {
      Error e = db_.error("cannot record the hyper-parameters");
      (void)db_.exec("ROLLBACK;");
      return e;
    }
  }
  RETURN_IF_ERROR(db_.exec("COMMIT;"));
  run_id_ = id;
  writer_ = std::thread([this] { writer_loop(); });
  return id;
}

void Recorder::on_span(const observe::Span& span) {
  if (run_id_ < 0 || forked()) return;  // a forked child's records have no writer
  std::lock_guard<std::mutex> lk(sync_->mu);
  if (pending_->spans.size() + pending_->memory.size() >= options_.max_queued_spans) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  pending_->spans.push_back(span);
  ++enqueued_seq_;
  if (++pending_count_ == options_.batch_records) sync_->wake.notify_one();
}

void Recorder::on_memory(const observe::MemoryEvent& event) {
  if (run_id_ < 0 || forked()) return;  // a forked child's records have no writer
  std::lock_guard<std::mutex> lk(sync_->mu);
  if (pending_->spans.size() + pending_->memory.size() >= options_.max_queued_spans) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  pending_->memory.push_back(event);
  ++enqueued_seq_;
  if (++pending_count_ == options_.batch_records) sync_->wake.notify_one();
}

void Recorder::on_snapshot(const observe::Snapshot& snapshot) {
  if (run_id_ < 0 || forked()) return;  // a forked child's records have no writer
  std::lock_guard<std::mutex> lk(sync_->mu);
  pending_->snapshots.push_back(snapshot);
  ++enqueued_seq_;
  if (++pending_count_ == options_.batch_records) sync_->wake.notify_one();
}

void Recorder::on_metric(const std::string& name, int64_t step, int64_t epoch, double value) {
  if (run_id_ < 0 || forked()) return;  // a forked child's records have no writer
  Metric m{name, step, epoch, wall_ns(), value};
  std::lock_guard<std::mutex> lk(sync_->mu);
  pending_->metrics.push_back(std::move(m));
  ++enqueued_seq_;
  if (++pending_count_ == options_.batch_records) sync_->wake.notify_one();
}

void Recorder::enqueue_other(Other o) {
  if (run_id_ < 0 || forked()) return;  // a forked child's records have no writer
  o.wall = wall_ns();
  std::lock_guard<std::mutex> lk(sync_->mu);
  pending_->others.push_back(std::move(o));
  ++enqueued_seq_;
  ++pending_count_;
}

std::string Recorder::log_graph(const std::string& name, const std::string& format, const std::string& body,
                                const std::string& role) {
  std::string hash = content_hash(body);
  enqueue_other({Other::Type::kGraph, hash, name, format, body, 0, 0});
  enqueue_other({Other::Type::kRunGraph, hash, role, "", "", 0, 0});
  return hash;
}

std::string Recorder::log_graph_structure(const ir::Graph& graph, const std::string& role) {
  ir::Graph structure = graph;
  for (ir::ValueId p : std::vector<ir::ValueId>(structure.params())) structure.make_input(p);
  return log_graph(graph.name(), "tir", ir::print_graph(structure), role);
}

void Recorder::log_dataset(const std::string& split, const std::string& fingerprint, const std::string& path,
                           int64_t examples) {
  enqueue_other({Other::Type::kDataset, split, fingerprint, absolute_path(path), "", examples, 0});
}

void Recorder::log_checkpoint(const std::string& path, int64_t step, const std::string& checksum) {
  enqueue_other({Other::Type::kCheckpoint, absolute_path(path), checksum, "", "", step, 0});
}

void Recorder::add_lineage(LineageKind kind, const std::string& from, const std::string& to, const std::string& note) {
  const bool graphs = kind == LineageKind::kDerivedFrom;
  enqueue_other({Other::Type::kLineage, lineage_kind_name(kind), graphs ? from : std::to_string(run_id_),
                 graphs ? to : absolute_path(to), note, graphs ? 1 : 0, 0});
}

void Recorder::log_hyperparam(const std::string& key, const std::string& value) {
  enqueue_other({Other::Type::kHyper, key, value, "", "", 0, 0});
}

Status Recorder::flush() {
  if (forked()) return forked_error();  // no writer thread here: waiting would never end
  if (run_id_ < 0 || finished_) return write_status();
  std::unique_lock<std::mutex> lk(sync_->mu);
  const uint64_t target = enqueued_seq_;
  // Until everything queued is committed, or one whole attempt begun after this call has failed
  // (an attempt under way now may predate records queued just before).
  const uint64_t give_up = attempts_ + 2;
  flush_asked_ = true;
  sync_->wake.notify_one();
  sync_->flushed.wait(lk, [&] {
    if (committed_seq_ >= target) return true;
    if (attempts_ >= give_up) return true;
    flush_asked_ = true;  // the writer's next attempt at once
    sync_->wake.notify_one();
    return false;
  });
  return write_status_;  // ok when committed; else the failure of the last attempt
}

Status Recorder::write_status() const {
  std::lock_guard<std::mutex> lk(sync_->mu);
  return write_status_;
}

void Recorder::writer_loop() {
  std::unique_lock<std::mutex> lk(sync_->mu);
  int64_t last_heartbeat = wall_ns();
  std::unique_ptr<Batch> retry;  // records whose transaction met a passing failure, oldest first
  int final_attempts = 0;
  for (;;) {
    sync_->wake.wait_for(lk, std::chrono::milliseconds(options_.flush_interval_ms),
                   [&] { return stop_ || flush_asked_ || pending_count_ >= options_.batch_records; });
    std::unique_ptr<Batch> batch = std::move(pending_);
    // Recycle the last drained batch: its vectors keep their capacity, so that a producer's
    // push_back neither reallocates nor touches fresh pages in the steady state.
    pending_ = spare_ ? std::move(spare_) : std::make_unique<Batch>();
    pending_count_ = 0;
    flush_asked_ = false;
    const uint64_t seq = enqueued_seq_;
    const bool stop = stop_;
    lk.unlock();
    std::unique_ptr<Batch> drained;  // the new batch, emptied into the kept one
    if (retry) {  // the kept records first, then the new ones, in one transaction
      retry->take(*batch);
      drained = std::move(batch);
      batch = std::move(retry);
      if (const size_t n = batch->spans.size(); n > options_.max_queued_spans) {  // a disk full for long
        dropped_.fetch_add(static_cast<int64_t>(n - options_.max_queued_spans), std::memory_order_relaxed);
        batch->spans.resize(options_.max_queued_spans);
      }
    }
    Status st = Status::ok();
    const int64_t now = wall_ns();
    if (!batch->empty() || now - last_heartbeat >= options_.heartbeat_ms * 1'000'000) {
      st = write_batch(*batch);
      if (st.is_ok()) last_heartbeat = now;
    }
    const bool keep = !st.is_ok() && passing_failure(last_failure_) && !(stop && ++final_attempts >= kFinalAttempts);
    if (keep) retry = std::move(batch);
    else batch->clear();  // free the strings outside the lock, keep the capacity
    lk.lock();
    spare_ = batch ? std::move(batch) : std::move(drained);
    if (st.is_ok()) {
      if (!lost_) write_status_ = Status::ok();  // a kept batch is committed now
    } else {
      write_status_ = st;  // flush() reports it; finish_run too when the records are lost
      lost_ = lost_ || !keep;
    }
    if (!keep) committed_seq_ = seq;  // written, or lost for good: nothing left to wait for
    ++attempts_;
    sync_->flushed.notify_all();
    if (stop && !keep) return;
  }
}

Status Recorder::write_batch(Batch& b) {
  Statements& s = *stmts_;
  last_failure_ = SQLITE_OK;
  if (Status st = db_.exec("BEGIN IMMEDIATE;"); !st.is_ok()) {
    last_failure_ = sqlite3_extended_errcode(db_.handle());
    return st;
  }
  auto fail = [&](const std::string& what) {
    last_failure_ = sqlite3_extended_errcode(db_.handle());
    Error e = db_.error(what);
    (void)db_.exec("ROLLBACK;");
    string_ids_.clear();  // ids inserted by this transaction are gone
    return e;
  };
  for (const Other& o : b.others) {
    bool ok = true;
    switch (o.type) {
      case Other::Type::kGraph:
        s.graph.bind(1, o.a), s.graph.bind(2, o.b), s.graph.bind(3, o.c), s.graph.bind(4, o.d), s.graph.bind(5, o.wall);
        ok = s.graph.run();
        break;
      case Other::Type::kRunGraph:
        s.run_graph.bind(1, run_id_), s.run_graph.bind(2, o.a), s.run_graph.bind(3, o.b);
        ok = s.run_graph.run();
        break;
      case Other::Type::kDataset:
        s.dataset.bind(1, o.b), s.dataset.bind(2, o.c), s.dataset.bind(3, o.n);
        ok = s.dataset.run();
        s.run_dataset.bind(1, run_id_), s.run_dataset.bind(2, o.a), s.run_dataset.bind(3, o.b);
        ok = ok && s.run_dataset.run();
        break;
      case Other::Type::kCheckpoint:
        s.checkpoint.bind(1, run_id_), s.checkpoint.bind(2, o.a), s.checkpoint.bind(3, o.n), s.checkpoint.bind(4, o.b);
        s.checkpoint.bind(5, o.wall);
        ok = s.checkpoint.run();
        break;
      case Other::Type::kLineage: {
        std::string to_type = o.n ? "graph" : "checkpoint_path", to_id = o.c;
        if (!o.n) {  // a checkpoint: link to the recorded one when a run wrote it
          s.find_checkpoint.bind(1, o.c);
          if (s.find_checkpoint.step() == SQLITE_ROW) {
            to_type = "checkpoint";
            to_id = std::to_string(s.find_checkpoint.i64(0));
          }
          s.find_checkpoint.reset();
        }
        s.lineage.bind(1, o.a), s.lineage.bind(2, o.n ? "graph" : "run"), s.lineage.bind(3, o.b);
        s.lineage.bind(4, to_type), s.lineage.bind(5, to_id), s.lineage.bind(6, o.d), s.lineage.bind(7, o.wall);
        ok = s.lineage.run();
        break;
      }
      case Other::Type::kHyper:
        s.hyper.bind(1, run_id_), s.hyper.bind(2, o.a), s.hyper.bind(3, o.b);
        ok = s.hyper.run();
        break;
    }
    if (!ok) return fail("cannot record the run's details");
  }
  for (const Metric& m : b.metrics) {
    s.metric.bind(1, run_id_), s.metric.bind(2, m.name), s.metric.bind(3, m.step), s.metric.bind(4, m.epoch);
    s.metric.bind(5, m.value), s.metric.bind(6, m.wall_ns);
    if (!s.metric.run()) return fail("cannot record metrics");
  }
  std::map<std::pair<int, int64_t>, OpTotals> totals;
  for (const observe::Span& sp : b.spans) {
    const int kind = static_cast<int>(sp.kind);
    const int64_t name = intern(sp.name), op = intern(sp.op), device = intern(sp.device), detail = intern(sp.detail);
    if (name < 0 || op < 0 || device < 0 || detail < 0) return fail("cannot record spans");
    s.span.bind(1, run_id_), s.span.bind(2, kind), s.span.bind(3, name), s.span.bind(4, op);
    s.span.bind(5, device), s.span.bind(6, detail), s.span.bind(7, sp.node), s.span.bind(8, sp.thread);
    s.span.bind(9, sp.start_ns), s.span.bind(10, sp.end_ns), s.span.bind(11, sp.bytes), s.span.bind(12, sp.flops);
    if (!s.span.run()) return fail("cannot record spans");
    const int64_t d = sp.end_ns - sp.start_ns;
    max_span_ns_ = std::max(max_span_ns_, d);
    OpTotals& t = totals[{kind, op}];
    ++t.count;
    t.total_ns += d;
    t.min_ns = std::min(t.min_ns, d);
    t.max_ns = std::max(t.max_ns, d);
    t.bytes += sp.bytes;
    t.flops += sp.flops;
  }
  for (const auto& [key, t] : totals) {
    s.span_stats.bind(1, run_id_), s.span_stats.bind(2, key.first), s.span_stats.bind(3, key.second);
    s.span_stats.bind(4, t.count), s.span_stats.bind(5, t.total_ns), s.span_stats.bind(6, t.min_ns);
    s.span_stats.bind(7, t.max_ns), s.span_stats.bind(8, t.bytes), s.span_stats.bind(9, t.flops);
    if (!s.span_stats.run()) return fail("cannot record span statistics");
  }
  for (const observe::MemoryEvent& m : b.memory) {
    s.memory.bind(1, run_id_), s.memory.bind(2, m.device), s.memory.bind(3, m.what), s.memory.bind(4, m.time_ns);
    s.memory.bind(5, m.bytes);
    if (!s.memory.run()) return fail("cannot record memory events");
  }
  for (const observe::Snapshot& sn : b.snapshots) {
    const std::string ir = content_hash(sn.ir_text);
    s.ir_text.bind(1, ir), s.ir_text.bind(2, sn.ir_text);
    if (!s.ir_text.run()) return fail("cannot record a snapshot");
    std::string diagnostics;
    for (const std::string& d : sn.diagnostics) diagnostics += d + "\n";
    s.snapshot.bind(1, run_id_), s.snapshot.bind(2, sn.stage), s.snapshot.bind(3, sn.pass), s.snapshot.bind(4, sn.index);
    s.snapshot.bind(5, ir), s.snapshot.bind(6, hex16(sn.hash)), s.snapshot.bind(7, sn.duration_ns);
    s.snapshot.bind(8, sn.changed ? 1 : 0), s.snapshot.bind(9, sn.nodes_before), s.snapshot.bind(10, sn.nodes_after);
    s.snapshot.bind(11, diagnostics);
    if (!s.snapshot.run()) return fail("cannot record a snapshot");
    const int64_t id = sqlite3_last_insert_rowid(db_.handle());
    for (const auto& [node, froms] : sn.provenance)
      for (int32_t f : froms) {
        s.provenance.bind(1, id), s.provenance.bind(2, node), s.provenance.bind(3, f);
        if (!s.provenance.run()) return fail("cannot record a snapshot's provenance");
      }
  }
  s.heartbeat.bind(1, wall_ns()), s.heartbeat.bind(2, max_span_ns_), s.heartbeat.bind(3, run_id_);
  if (!s.heartbeat.run()) return fail("cannot update the run's heartbeat");
  if (Status st = db_.exec("COMMIT;"); !st.is_ok()) {
    last_failure_ = sqlite3_extended_errcode(db_.handle());
    (void)db_.exec("ROLLBACK;");
    string_ids_.clear();
    return st;
  }
  return Status::ok();
}

int64_t Recorder::intern(const std::string& text) {
  if (auto it = string_ids_.find(text); it != string_ids_.end()) return it->second;
  Statements& s = *stmts_;
  s.add_string.bind(1, text);
  if (!s.add_string.run()) return -1;
  s.find_string.bind(1, text);
  const int64_t id = s.find_string.step() == SQLITE_ROW ? s.find_string.i64(0) : -1;
  s.find_string.reset();
  if (id >= 0) string_ids_.emplace(text, id);
  return id;
}

Status Recorder::finish_run(RunStatus status, const std::string& error) {
  if (forked()) return forked_error();
  if (run_id_ < 0) return make_error("no run was started", db_.path());
  if (finished_) return make_error("run " + std::to_string(run_id_) + " is already finished", db_.path());
  {
    std::lock_guard<std::mutex> lk(sync_->mu);
    stop_ = true;
  }
  sync_->wake.notify_one();
  if (writer_.joinable()) writer_.join();
  finished_ = true;
  std::string message = error;
  if (const int64_t d = dropped_.load(); d > 0)
    message += (message.empty() ? "" : "; ") + std::to_string(d) + " trace events dropped (the writer fell behind)";
  // Records the writer could not commit after its last attempts (a disk full to the end) are lost:
  // the run says so and is not "finished", so that metrics that stop half way never read as a
  // complete run.
  const Status writes = write_status();
  if (!writes.is_ok()) {
    message += (message.empty() ? "" : "; ") + std::string("incomplete record: ") + writes.error().message;
    if (status == RunStatus::kFinished) status = RunStatus::kFailed;
  }
  Stmt st(db_.handle(), "UPDATE runs SET status = ?, ended_ns = ?, heartbeat_ns = ?, error = ? WHERE id = ?;");
  bool recorded = false;
  for (int attempt = 0; attempt < kFinalAttempts && !recorded; ++attempt) {  // each waits the busy timeout
    const int64_t now = wall_ns();
    st.bind(1, run_status_name(status));
    st.bind(2, now);
    st.bind(3, now);
    if (message.empty()) st.bind_null(4);
    else st.bind(4, message);
    st.bind(5, run_id_);
    recorded = st.run();
    if (!recorded && !passing_failure(sqlite3_extended_errcode(db_.handle()))) break;
  }
  if (!recorded) return db_.error("cannot record the end of run " + std::to_string(run_id_));
  stmts_.reset();
  return writes;
}

}  // namespace tessera::insight
