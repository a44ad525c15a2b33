// The insight store's foundation: one SQLite database (WAL mode) with a schema version and
// migrations, opened with a clear error when it is unusable. The trace, lineage and snapshot
// tables and the engine sinks arrive with the insight issue; v1 holds runs.
//
//   TRY(auto db, insight::Database::open(insight::default_database_path(env)));
//   TRY(int64_t run, db.begin_run("tessera run lenet.json", "lenet"));
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/status.h"

struct sqlite3;

namespace tessera::insight {

inline constexpr int kSchemaVersion = 1;

// Where the default database lives, from the values of $TESSERA_DB, $XDG_DATA_HOME and $HOME
// (read by main() and passed in; empty when unset): TESSERA_DB, else
// XDG_DATA_HOME/tessera/insight.db, else HOME/.local/share/tessera/insight.db.
std::string default_database_path(const std::string& tessera_db, const std::string& xdg_data_home,
                                  const std::string& home);

class Database {
 public:
  // Opens or creates the database (creating its directory), sets WAL mode and migrates the schema.
  // Errors name the file: unreadable, not a database, or from a newer Tessera (schema too new).
  static Expected<Database> open(const std::string& path);

  const std::string& path() const { return path_; }
  int schema_version() const;
  // Records the start of a run; returns its id.
  Expected<int64_t> begin_run(const std::string& command, const std::string& graph_name);
  // Marks a run finished or failed.
  Status end_run(int64_t run_id, bool ok);
  // Number of runs recorded.
  Expected<int64_t> count_runs() const;

 private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  Database(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status exec(const std::string& sql) const;
  Error error(const std::string& what) const;

  std::string path_;
  std::unique_ptr<sqlite3, Close> db_;
};

}  // namespace tessera::insight
