// SQLite database with schema versioning (PRAGMA user_version) and migrations.
#include "insight/database.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>

namespace tessera::insight {
namespace {

// Migration i takes the schema from version i to i + 1.
const char* const kMigrations[] = {
    R"sql(
    CREATE TABLE runs (
      id INTEGER PRIMARY KEY,
      command TEXT NOT NULL,
      graph_name TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'crashed')),
      started_ns INTEGER NOT NULL,
      ended_ns INTEGER
    );
    )sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string default_database_path(const std::string& tessera_db, const std::string& xdg_data_home,
                                  const std::string& home) {
  if (!tessera_db.empty()) return tessera_db;
  if (!xdg_data_home.empty()) return xdg_data_home + "/tessera/insight.db";
  return (home.empty() ? std::string(".") : home) + "/.local/share/tessera/insight.db";
}

void Database::Close::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Error Database::error(const std::string& what) const {
  return make_error(what + ": " + sqlite3_errmsg(db_.get()), path_);
}

Status Database::exec(const std::string& sql) const {
  char* msg = nullptr;
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return make_error(m, path_);
  }
  return Status::ok();
}

Expected<Database> Database::open(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return make_error("cannot create the database directory: " + ec.message(), path);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Database db(path, raw);
  if (rc != SQLITE_OK) return db.error("cannot open the database");
  sqlite3_busy_timeout(raw, 2000);
  // A file that is not a database fails on its first read; say so plainly.
  if (Status st = db.exec("PRAGMA journal_mode=WAL;"); !st.is_ok())
    return make_error("not a usable SQLite database (" + st.error().message + "); move it aside or pass another path", path);
  const int version = db.schema_version();
  if (version > kSchemaVersion)
    return make_error("the database has schema version " + std::to_string(version) + ", newer than this Tessera (" +
                          std::to_string(kSchemaVersion) + "); use a newer tessera or another database",
                      path);
  for (int v = version; v < kSchemaVersion; ++v) {
    RETURN_IF_ERROR(db.exec("BEGIN;"));
    Status st = db.exec(kMigrations[v]);
    if (st.is_ok()) st = db.exec("PRAGMA user_version=" + std::to_string(v + 1) + ";");
    if (!st.is_ok()) {
      (void)db.exec("ROLLBACK;");
      return make_error("migration to schema " + std::to_string(v + 1) + " failed: " + st.error().message, path);
    }
    RETURN_IF_ERROR(db.exec("COMMIT;"));
  }
  return db;
}

int Database::schema_version() const {
  sqlite3_stmt* st = nullptr;
  int v = -1;
  if (sqlite3_prepare_v2(db_.get(), "PRAGMA user_version;", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return v;
}

Expected<int64_t> Database::begin_run(const std::string& command, const std::string& graph_name) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_.get(), "INSERT INTO runs(command, graph_name, status, started_ns) VALUES(?, ?, 'running', ?);",
                         -1, &st, nullptr) != SQLITE_OK)
    return error("cannot record a run");
  sqlite3_bind_text(st, 1, command.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, graph_name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 3, now_ns());
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return error("cannot record a run");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Status Database::end_run(int64_t run_id, bool ok) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_.get(), "UPDATE runs SET status = ?, ended_ns = ? WHERE id = ?;", -1, &st, nullptr) != SQLITE_OK)
    return error("cannot update run " + std::to_string(run_id));
  sqlite3_bind_text(st, 1, ok ? "finished" : "failed", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, now_ns());
  sqlite3_bind_int64(st, 3, run_id);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return error("cannot update run " + std::to_string(run_id));
  return Status::ok();
}

Expected<int64_t> Database::count_runs() const {
  sqlite3_stmt* st = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db_.get(), "SELECT COUNT(*) FROM runs;", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (n < 0) return error("cannot count runs");
  return n;
}

}  // namespace tessera::insight
