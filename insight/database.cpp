// SQLite database with schema versioning (PRAGMA user_version), migrations, clear errors and the
// marking of crashed runs.
#include "insight/database.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>

#include "engine/core/cpu_load.h"
#include "engine/core/file_kind.h"
#include "insight/schema.h"
#include "insight/sql.h"

namespace tessera::insight {

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

int64_t process_start(int64_t pid) { return pid > 0 ? process_stat(pid).start : -1; }

bool process_alive(int64_t pid, int64_t start) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  const ProcessStat now = process_stat(pid);
  // A zombie has ended (a killed rank whose parent, mpirun, died too waits for init to reap it).
  if (now.state == 'Z' || now.state == 'X') return false;
  if (start < 0 || now.start < 0) return true;  // recorded before v4, or /proc unreadable: the pid decides
  return now.start == start;
}

std::string default_database_path(const std::string& tessera_db, const std::string& xdg_data_home,
                                  const std::string& home) {
  if (!tessera_db.empty()) return tessera_db;
  if (!xdg_data_home.empty()) return xdg_data_home + "/tessera/insight.db";
  return (home.empty() ? std::string(".") : home) + "/.local/share/tessera/insight.db";
}

Error sqlite_error(int rc, const std::string& message, const std::string& path, const std::string& what, int busy_ms) {
  std::string m = what + ": " + message;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      m += " (another process held the write lock for more than " + std::to_string(busy_ms) +
           " ms); wait for that writer to finish, or pass --db with another path";
      break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      m += " (the database, its folder or its -wal/-shm files are not writable by this user); make them writable, "
           "or pass --db with another path";
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      m += " (the file is damaged or not an SQLite database); move it aside (keep it for inspection), or pass --db "
           "with another path";
      break;
    case SQLITE_FULL:
    case SQLITE_IOERR:
      m += " (the disk is full or failing); free space, or pass --db with another path";
      break;
    default:
      break;
  }
  return make_error(m, path);
}

void Database::Close::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Error Database::error(const std::string& what) const {
  return sqlite_error(sqlite3_extended_errcode(db_.get()), sqlite3_errmsg(db_.get()), path_, what, busy_ms_);
}

Status Database::exec(const std::string& sql) const {
  char* msg = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &msg);
  if (rc != SQLITE_OK) {
    std::string m = msg ? msg : sqlite3_errstr(rc);
    sqlite3_free(msg);
    return sqlite_error(sqlite3_extended_errcode(db_.get()), m, path_, "cannot run SQL", busy_ms_);
  }
  return Status::ok();
}

namespace {

// The tables of a database that is not (yet) an insight database: user_version 0 with tables of
// its own is another program's file, which Tessera must never add its tables to. "" when none.
std::string foreign_tables(sqlite3* db) {
  std::string tables;
  Stmt st(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 4;");
  while (st.step() == SQLITE_ROW) tables += (tables.empty() ? "" : ", ") + st.text(0);
  return tables;
}

Error foreign_error(const std::string& tables, const std::string& path) {
  return make_error("not an insight database (a SQLite database with other tables: " + tables +
                        "); pass the path of a Tessera insight database",
                    path);
}

// A database file must be a regular file: opening a FIFO blocks forever, a device reads without end.
Status require_database_file(const std::string& path) {
  if (path.rfind("file:", 0) == 0) return Status::ok();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::ok();  // created on open
  return require_regular_file(path);
}

}  // namespace

Expected<Database> Database::open_read_only(const std::string& path, const OpenOptions& options) {
  RETURN_IF_ERROR(require_database_file(path));
  // A WAL reader needs the -shm file. Only when it cannot exist (a folder this user may not
  // write) and the WAL holds nothing is the file read as immutable (no locks, no WAL): that is
  // safe only when no writer can be at work, which a folder nobody may create the -wal in and an
  // empty WAL say. Any other failure (another writer's lock held past the busy timeout, above
  // all) is reported: an immutable read of a file being checkpointed reads torn pages.
  const bool uri = path.rfind("file:", 0) == 0;
  for (const bool immutable : {false, true}) {
    const std::string name = immutable ? "file:" + path + "?immutable=1" : path;
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(name.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    Database db(path, raw, options.busy_timeout_ms);
    if (rc != SQLITE_OK) return db.error("cannot open the database");
    sqlite3_busy_timeout(raw, options.busy_timeout_ms);
    const int version = db.schema_version();
    if (version < 0) {
      const int code = sqlite3_extended_errcode(raw) & 0xff;
      const bool no_shm = code == SQLITE_CANTOPEN || code == SQLITE_READONLY;
      std::error_code ec;
      const auto wal_size = std::filesystem::file_size(path + "-wal", ec);
      const bool wal_empty = ec || wal_size == 0;
      const std::string dir = std::filesystem::path(path).parent_path().string();
      const bool dir_read_only = ::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0;
      if (!immutable && !uri && no_shm && dir_read_only && wal_empty) continue;
      if (!immutable && no_shm && dir_read_only && !wal_empty)
        return make_error("cannot read the database: its folder is read-only and " + path +
                              "-wal holds changes not yet in the database file; read it where the folder is writable "
                              "(copy the database and its -wal together), or pass --db with another path",
                          path);
      return db.error("cannot read the schema version (not a usable SQLite database?)");
    }
    if (version == 0) {
      if (std::string t = foreign_tables(raw); !t.empty()) return foreign_error(t, path);
    }
    if (version > kSchemaVersion)
      return make_error("the database has schema version " + std::to_string(version) + ", newer than this Tessera (" +
                            std::to_string(kSchemaVersion) + "); use a newer tessera, or pass --db with another path",
                        path);
    if (version < kSchemaVersion)
      return make_error("the database has schema version " + std::to_string(version) + ", older than this Tessera's (" +
                            std::to_string(kSchemaVersion) + "); record one run to it (that migrates it), or pass --db with another path",
                        path);
    return db;
  }
  return make_error("cannot open the database read-only", path);
}

Expected<Database> Database::open(const std::string& path, const OpenOptions& options) {
  if (options.read_only) return open_read_only(path, options);
  RETURN_IF_ERROR(require_database_file(path));
  const bool uri = path.rfind("file:", 0) == 0;
  if (!uri) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) return make_error("cannot create the database directory: " + ec.message() + "; pass --db with another path", path);
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nullptr);
  Database db(path, raw, options.busy_timeout_ms);
  if (rc != SQLITE_OK) return db.error("cannot open the database");
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  // SQLite falls back to read-only when the file is write-protected; a writer must know now.
  if (sqlite3_db_readonly(raw, "main") == 1)
    return sqlite_error(SQLITE_READONLY, "the database is read-only", path, "cannot write the database",
                        options.busy_timeout_ms);
  // A file that is not a database fails on its first read; say so plainly. Another program's
  // database is refused before anything is written to it (not even WAL mode).
  const int version = db.schema_version();
  if (version < 0) {
    if ((sqlite3_extended_errcode(raw) & 0xff) == SQLITE_NOTADB)
      return make_error("not a usable SQLite database (" + std::string(sqlite3_errmsg(raw)) +
                            "); move it aside (keep it for inspection), or pass --db with another path",
                        path);
    return db.error("cannot read the schema version (not a usable SQLite database?)");
  }
  if (version > kSchemaVersion)
    return make_error("the database has schema version " + std::to_string(version) + ", newer than this Tessera (" +
                          std::to_string(kSchemaVersion) + "); use a newer tessera, or pass --db with another path",
                      path);
  if (version == 0) {
    if (std::string t = foreign_tables(raw); !t.empty()) return foreign_error(t, path);
  }
  {
    Stmt wal(raw, "PRAGMA journal_mode=WAL;");
    if (wal.step() != SQLITE_ROW) return db.error("cannot open the database");
  }
  (void)db.exec("PRAGMA synchronous=NORMAL;");  // WAL + NORMAL: a killed process loses nothing committed
  RETURN_IF_ERROR(db.migrate());
  if (options.mark_crashed) {
    auto n = db.mark_crashed_runs(wall_ns(), options.stale_heartbeat_ns);
    if (!n) return n.error();
  }
  return db;
}

Status Database::migrate() {
  const auto& migrations = schema_migrations();
  for (int v = schema_version(); v < kSchemaVersion; ++v) {
    // IMMEDIATE: two processes opening a fresh database at once migrate one after the other.
    if (Status st = exec("BEGIN IMMEDIATE;"); !st.is_ok()) return st.error().within("migration");
    if (schema_version() > v) {  // another process migrated while we waited
      RETURN_IF_ERROR(exec("COMMIT;"));
      v = schema_version() - 1;
      continue;
    }
    Status st = exec(migrations[static_cast<size_t>(v)]);
    if (st.is_ok()) st = exec("PRAGMA user_version=" + std::to_string(v + 1) + ";");
    if (!st.is_ok()) {
      (void)exec("ROLLBACK;");
      return make_error("migration to schema " + std::to_string(v + 1) + " failed: " + st.error().message, path_);
    }
    RETURN_IF_ERROR(exec("COMMIT;"));
  }
  return Status::ok();
}

int Database::schema_version() const {
  Stmt st(db_.get(), "PRAGMA user_version;");
  return st.step() == SQLITE_ROW ? static_cast<int>(st.i64(0)) : -1;
}

Expected<int> Database::mark_crashed_runs(int64_t now_ns, int64_t stale_ns) {
  const std::string host = host_name();
  struct Dead {
    int64_t id, last_seen;
  };
  std::vector<Dead> dead;
  {
    Stmt st(db_.get(), "SELECT id, host, pid, COALESCE(heartbeat_ns, started_ns), COALESCE(pid_start, -1) FROM runs "
                       "WHERE status = 'running';");
    if (!st.ok()) return error("cannot read the runs");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      const int64_t last_seen = st.i64(3);
      bool gone = now_ns - last_seen > stale_ns;
      if (!gone && !st.is_null(2) && st.text(1) == host) {
        gone = st.i64(2) > 0 && !process_alive(st.i64(2), st.i64(4));
      }
      if (gone) dead.push_back({st.i64(0), last_seen});
    }
    if (rc != SQLITE_DONE) return error("cannot read the runs");
  }
  if (dead.empty()) return 0;
  Stmt up(db_.get(), "UPDATE runs SET status = 'crashed', ended_ns = ? WHERE id = ? AND status = 'running';");
  for (const Dead& d : dead) {
    up.bind(1, d.last_seen);
    up.bind(2, d.id);
    if (!up.run()) return error("cannot mark run " + std::to_string(d.id) + " as crashed");
  }
  return static_cast<int>(dead.size());
}

Expected<int64_t> Database::begin_run(const std::string& command, const std::string& graph_name) {
  Stmt st(db_.get(),
          "INSERT INTO runs(command, graph_name, name, status, started_ns, heartbeat_ns, pid, host, pid_start) "
          "VALUES(?, ?, ?, 'running', ?, ?, ?, ?, ?);");
  const int64_t now = wall_ns();
  st.bind(1, command);
  st.bind(2, graph_name);
  st.bind(3, graph_name);
  st.bind(4, now);
  st.bind(5, now);
  st.bind(6, static_cast<int64_t>(getpid()));
  st.bind(7, host_name());
  st.bind(8, process_start(getpid()));
  if (!st.run()) return error("cannot record a run");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Status Database::end_run(int64_t run_id, bool ok) {
  Stmt st(db_.get(), "UPDATE runs SET status = ?, ended_ns = ? WHERE id = ?;");
  st.bind(1, ok ? "finished" : "failed");
  st.bind(2, wall_ns());
  st.bind(3, run_id);
  if (!st.run()) return error("cannot update run " + std::to_string(run_id));
  return Status::ok();
}

Expected<int64_t> Database::count_runs() const {
  Stmt st(db_.get(), "SELECT COUNT(*) FROM runs;");
  if (st.step() != SQLITE_ROW) return error("cannot count runs");
  return st.i64(0);
}

}  // namespace tessera::insight
