// The insight store's connection: one SQLite database (WAL mode) with a schema version and
// migrations, opened with a clear error naming the file when it is unusable (read-only, locked by
// another writer, corrupt, not a database, from a newer Tessera). Opening also marks as "crashed"
// the runs whose process is gone (README.md in this folder describes the tables).
//
//   TRY(auto db, insight::Database::open(insight::default_database_path(env, xdg, home)));
//   TRY(int64_t run, db.begin_run("tessera run lenet.json", "lenet"));
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/status.h"

struct sqlite3;

namespace tessera::insight {

// v1: runs. v2: run details, hyper-parameters, graphs, datasets, metrics, checkpoints, lineage,
// spans, memory events, snapshots and their provenance. v3: the "stopped" run status. v4: NaN
// metric values (NULL).
inline constexpr int kSchemaVersion = 4;

// Where the default database lives, from the values of $TESSERA_DB, $XDG_DATA_HOME and $HOME
// (read by main() and passed in; empty when unset): TESSERA_DB, else
// XDG_DATA_HOME/tessera/insight.db, else HOME/.local/share/tessera/insight.db.
std::string default_database_path(const std::string& tessera_db, const std::string& xdg_data_home,
                                  const std::string& home);

struct OpenOptions {
  int busy_timeout_ms = 5000;                  // how long to wait for another writer's lock
  bool mark_crashed = true;                    // mark dead "running" runs as crashed on open
  int64_t stale_heartbeat_ns = 10'000'000'000; // a running run silent this long is crashed
  // Reads only: creates, migrates and marks nothing, so a database the user may read but not
  // write (or in a read-only folder) opens. Queries of an older schema are refused.
  bool read_only = false;
};

// Wall-clock nanoseconds since the epoch (run times, heartbeats; comparable across processes).
int64_t wall_ns();
// This machine's host name ("" when unknown).
std::string host_name();
// When process `pid` started, in clock ticks after boot (/proc/PID/stat), or -1 when it does not
// exist or cannot be read. With the pid, it names one process: pids are reused.
int64_t process_start(int64_t pid);
// Whether the process `pid` that started at `start` (-1: unknown, the pid alone decides) still
// runs on this machine.
bool process_alive(int64_t pid, int64_t start);

class Database {
 public:
  // Opens or creates the database (creating its directory; "file:" URIs are accepted), sets WAL
  // mode, migrates the schema and marks crashed runs. Every error names the file and what to do.
  static Expected<Database> open(const std::string& path, const OpenOptions& options = {});

  const std::string& path() const { return path_; }
  int schema_version() const;
  // The connection, for the insight module's own statements (recorder, queries). Not thread-safe:
  // one thread at a time.
  sqlite3* handle() const { return db_.get(); }
  // Runs SQL without results; errors name the file.
  Status exec(const std::string& sql) const;
  // An error for the connection's last failure: SQLite's message plus, for a locked, read-only,
  // corrupt or full database, what to do about it. `what` says what was being done.
  Error error(const std::string& what) const;

  // Lets go of the connection without closing it: a forked child's copy, which must not touch the
  // parent's connection (closing it could run a checkpoint from the child).
  void abandon() { (void)db_.release(); }

  // Marks runs still "running" as "crashed" when their process is gone (same host, kill(pid, 0)
  // fails) or their heartbeat is older than `stale_ns` at `now_ns` (wall clock). Returns how many.
  Expected<int> mark_crashed_runs(int64_t now_ns, int64_t stale_ns);

  // Records the start of a run (status running, this process's pid and host); returns its id.
  Expected<int64_t> begin_run(const std::string& command, const std::string& graph_name);
  // Marks a run finished or failed.
  Status end_run(int64_t run_id, bool ok);
  // Number of runs recorded.
  Expected<int64_t> count_runs() const;

 private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  Database(std::string path, sqlite3* db, int busy_ms) : path_(std::move(path)), db_(db), busy_ms_(busy_ms) {}
  static Expected<Database> open_read_only(const std::string& path, const OpenOptions& options);
  Status migrate();

  std::string path_;
  std::unique_ptr<sqlite3, Close> db_;
  int busy_ms_ = 0;
};

// The clear error for SQLite result code `rc` on the database at `path` (see Database::error).
Error sqlite_error(int rc, const std::string& message, const std::string& path, const std::string& what, int busy_ms);

}  // namespace tessera::insight
