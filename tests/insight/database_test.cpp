// Tests for the insight database (insight/database.cpp): creation, the v1 -> v2 migration,
// reopening, crash marking, and clear errors for a foreign, corrupt, read-only, locked or newer file.
#include <gtest/gtest.h>

#include <cstdlib>

#include <sqlite3.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/core/cpu_load.h"
#include "insight/database.h"

namespace tessera::insight {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_insight_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p.string();
}

// Runs SQL on a raw connection (the test's independent view of the file).
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  char* msg = nullptr;
  EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(raw);
}

std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_stmt* st = nullptr;
  std::string out = "<no row>";
  if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "NULL";
  }
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return out;
}

// The pid of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = fork();
  if (child < 0) std::abort();  // fork failed: no pid to give
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

TEST(Database, CreatesMigratesAndRecordsRuns) {
  const std::string path = temp_path("sub/dir/a.db");
  {
    auto db = Database::open(path);
    ASSERT_TRUE(db.has_value()) << db.error().to_string();
    EXPECT_EQ(db->schema_version(), kSchemaVersion);
    auto run = db->begin_run("tessera run x.json", "x");
    ASSERT_TRUE(run.has_value()) << run.error().to_string();
    EXPECT_TRUE(db->end_run(*run, true).is_ok());
  }
  auto again = Database::open(path);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again->count_runs(), 1);
  EXPECT_EQ(raw_text(path, "PRAGMA journal_mode;"), "wal");
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs;"), "finished");
}

TEST(Database, MigratesAVersion1DatabaseKeepingItsRuns) {
  const std::string path = temp_path("v1.db");
  // The v1 schema exactly as the foundation wrote it, with one finished and one stuck run.
  raw_exec(path, R"sql(
    CREATE TABLE runs (id INTEGER PRIMARY KEY, command TEXT NOT NULL, graph_name TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'crashed')),
      started_ns INTEGER NOT NULL, ended_ns INTEGER);
    INSERT INTO runs VALUES (1, 'tessera run a.json', 'a', 'finished', 100, 200);
    INSERT INTO runs VALUES (2, 'tessera run b.json', 'b', 'running', 300, NULL);
    PRAGMA user_version = 1;)sql");
  auto db = Database::open(path);
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  EXPECT_EQ(*db->count_runs(), 2);
  EXPECT_EQ(raw_text(path, "SELECT command FROM runs WHERE id = 1;"), "tessera run a.json");
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 1;"), "finished");
  // A v1 run left "running" has no pid and a start in 1970: it is crashed, ended at its start.
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 2;"), "crashed");
  EXPECT_EQ(raw_text(path, "SELECT ended_ns FROM runs WHERE id = 2;"), "300");
  // The v2 tables exist and the new columns have their defaults.
  for (const char* table : {"hyperparams", "graphs", "run_graphs", "datasets", "metrics", "checkpoints", "lineage",
                            "spans", "memory_events", "snapshots", "snapshot_provenance", "ir_texts"})
    EXPECT_EQ(raw_text(path, std::string("SELECT COUNT(*) FROM sqlite_master WHERE name = '") + table + "';"), "1") << table;
  EXPECT_EQ(raw_text(path, "SELECT name || '|' || max_span_ns FROM runs WHERE id = 1;"), "|0");
}

TEST(Database, MarksRunsOfDeadProcessesAndStaleHeartbeatsCrashed) {
  const std::string path = temp_path("crash.db");
  ASSERT_TRUE(Database::open(path).has_value());
  const int64_t now = wall_ns();
  const std::string host = host_name();
  const pid_t gone = dead_pid();
  raw_exec(path, "INSERT INTO runs(id, command, graph_name, status, started_ns, heartbeat_ns, pid, host) VALUES "
                 "(1, 'dead pid', 'g', 'running', " + std::to_string(now) + ", " + std::to_string(now) + ", " +
                     std::to_string(gone) + ", '" + host + "'),"
                 "(2, 'alive and beating', 'g', 'running', " + std::to_string(now) + ", " + std::to_string(now) + ", " +
                     std::to_string(getpid()) + ", '" + host + "'),"
                 "(3, 'alive but silent', 'g', 'running', 0, " + std::to_string(now - 11'000'000'000) + ", " +
                     std::to_string(getpid()) + ", '" + host + "'),"
                 "(4, 'other host, fresh', 'g', 'running', 0, " + std::to_string(now) + ", " + std::to_string(gone) +
                     ", 'elsewhere');");
  auto db = Database::open(path);
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 1;"), "crashed");
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 2;"), "running");
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 3;"), "crashed");
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 4;"), "running");  // cannot see its pid
  EXPECT_EQ(raw_text(path, "SELECT ended_ns FROM runs WHERE id = 1;"), std::to_string(now));
}

TEST(Database, ARunWhosePidWasReusedIsCrashed) {
  // A killed run's pid given to another process kept it "running" (the stress harness found one
  // after 2,000 processes): the pid's start time tells them apart.
  const std::string path = temp_path("reused.db");
  ASSERT_TRUE(Database::open(path).has_value());
  const int64_t now = wall_ns();
  const int64_t mine = process_start(getpid());
  ASSERT_GT(mine, 0);
  raw_exec(path, "INSERT INTO runs(id, command, graph_name, status, started_ns, heartbeat_ns, pid, host, pid_start) VALUES "
                 "(1, 'reused pid', 'g', 'running', " + std::to_string(now) + ", " + std::to_string(now) + ", " +
                     std::to_string(getpid()) + ", '" + host_name() + "', " + std::to_string(mine - 1) + "),"
                 "(2, 'this process', 'g', 'running', " + std::to_string(now) + ", " + std::to_string(now) + ", " +
                     std::to_string(getpid()) + ", '" + host_name() + "', " + std::to_string(mine) + ");");
  ASSERT_TRUE(Database::open(path).has_value());
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 1;"), "crashed");
  EXPECT_EQ(raw_text(path, "SELECT status FROM runs WHERE id = 2;"), "running");
  EXPECT_TRUE(process_alive(getpid(), mine));
  EXPECT_FALSE(process_alive(getpid(), mine + 1));
  EXPECT_EQ(process_start(dead_pid()), -1);
  // A zombie (ended, not reaped) is not alive, though kill(pid, 0) still succeeds.
  const pid_t zombie = fork();
  ASSERT_GE(zombie, 0) << "fork failed";
  if (zombie == 0) _exit(0);
  for (int i = 0; i < 200 && process_stat(zombie).state != 'Z'; ++i) usleep(5000);
  EXPECT_EQ(kill(zombie, 0), 0);
  EXPECT_FALSE(process_alive(zombie, process_start(zombie)));
  waitpid(zombie, nullptr, 0);
}

TEST(Database, ForeignFileIsRefusedNamingIt) {
  const std::string path = temp_path("not_a_db.db");
  std::ofstream(path) << "this is not an SQLite database, just some text that is long enough to matter";
  auto db = Database::open(path);
  ASSERT_FALSE(db.has_value());
  EXPECT_EQ(db.error().where, path);
  EXPECT_NE(db.error().message.find("not a usable SQLite database"), std::string::npos) << db.error().message;
  EXPECT_NE(db.error().message.find("move it aside"), std::string::npos) << db.error().message;
}

TEST(Database, CorruptFileIsRefusedNamingIt) {
  const std::string path = temp_path("corrupt.db");
  {
    auto db = Database::open(path);
    ASSERT_TRUE(db.has_value());
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(db->begin_run(std::string(500, 'x'), "g").has_value());
  }
  // Keep page 1 (the header and the schema), scribble over every other page.
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 8192u);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    std::string junk(size - 4096, '\xAB');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto db = Database::open(path);
  ASSERT_FALSE(db.has_value());
  EXPECT_EQ(db.error().where, path);
  EXPECT_NE(db.error().message.find("damaged"), std::string::npos) << db.error().message;
}

TEST(Database, ReadOnlyDatabaseIsRefusedForWriting) {
  const std::string path = temp_path("ro.db");
  ASSERT_TRUE(Database::open(path).has_value());
  // Opened read-only through a URI (works as root too, where file modes do not stop writes).
  auto db = Database::open("file:" + path + "?mode=ro");
  ASSERT_FALSE(db.has_value());
  EXPECT_NE(db.error().message.find("read-only"), std::string::npos) << db.error().message;
  EXPECT_NE(db.error().message.find("writable"), std::string::npos) << db.error().message;
  if (geteuid() != 0) {
    chmod(path.c_str(), 0444);
    auto ro = Database::open(path);
    chmod(path.c_str(), 0644);
    ASSERT_FALSE(ro.has_value());
    EXPECT_EQ(ro.error().where, path);
    EXPECT_NE(ro.error().message.find("read-only"), std::string::npos) << ro.error().message;
  }
}

TEST(Database, LockedByAnotherWriterSaysSoAfterTheBusyTimeout) {
  const std::string path = temp_path("locked.db");
  ASSERT_TRUE(Database::open(path).has_value());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr), SQLITE_OK);
  OpenOptions o;
  o.busy_timeout_ms = 100;
  auto db = Database::open(path, o);  // reading works while another process writes (WAL)
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  auto run = db->begin_run("x", "g");
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.error().where, path);
  EXPECT_NE(run.error().message.find("locked"), std::string::npos) << run.error().message;
  EXPECT_NE(run.error().message.find("another process held the write lock for more than 100 ms"), std::string::npos)
      << run.error().message;
  sqlite3_exec(other, "ROLLBACK;", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_TRUE(db->begin_run("x", "g").has_value());
}

TEST(Database, NewerSchemaIsRefused) {
  const std::string path = temp_path("newer.db");
  raw_exec(path, "PRAGMA user_version=99;");
  auto db = Database::open(path);
  ASSERT_FALSE(db.has_value());
  EXPECT_EQ(db.error().where, path);
  EXPECT_NE(db.error().message.find("schema version 99, newer"), std::string::npos) << db.error().message;
  EXPECT_NE(db.error().message.find("use a newer tessera"), std::string::npos) << db.error().message;
}

TEST(Database, DefaultPathFollowsXdg) {
  EXPECT_EQ(default_database_path("/x/y.db", "/data", "/home/u"), "/x/y.db");
  EXPECT_EQ(default_database_path("", "/data", "/home/u"), "/data/tessera/insight.db");
  EXPECT_EQ(default_database_path("", "", "/home/u"), "/home/u/.local/share/tessera/insight.db");
}

}  // namespace
TEST(Database, AnotherProgramsSqliteDatabaseIsRefusedAndLeftAsItWas) {
  const std::string path = temp_path("foreign_sqlite.db");
  raw_exec(path, "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos VALUES (1, 'cat');");
  const auto size = std::filesystem::file_size(path);
  for (const bool read_only : {false, true}) {
    OpenOptions o;
    o.read_only = read_only;
    auto db = Database::open(path, o);
    ASSERT_FALSE(db.has_value()) << read_only;
    EXPECT_EQ(db.error().where, path);
    EXPECT_NE(db.error().message.find("not an insight database (a SQLite database with other tables: photos)"), std::string::npos)
        << db.error().message;
  }
  // Not one table added, not even WAL mode.
  EXPECT_EQ(raw_text(path, "SELECT COUNT(*) FROM sqlite_master;"), "1");
  EXPECT_EQ(raw_text(path, "PRAGMA journal_mode;"), "delete");
  EXPECT_EQ(std::filesystem::file_size(path), size);
  // An empty SQLite file is a new database.
  const std::string empty = temp_path("empty_sqlite.db");
  raw_exec(empty, "PRAGMA user_version = 0;");
  EXPECT_TRUE(Database::open(empty).has_value());
}

TEST(Database, AFifoOrAFolderAsTheDatabaseIsRefusedWithoutBlocking) {
  const std::string fifo = temp_path("db.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const bool read_only : {false, true}) {
    OpenOptions o;
    o.read_only = read_only;
    auto db = Database::open(fifo, o);  // SQLite would wait for a writer forever
    ASSERT_FALSE(db.has_value());
    EXPECT_EQ(db.error().where, fifo);
    EXPECT_NE(db.error().message.find("FIFO"), std::string::npos) << db.error().message;
  }
  std::filesystem::remove(fifo);
  const std::string dir = temp_path("db_folder");
  std::filesystem::create_directories(dir);
  auto db = Database::open(dir);
  ASSERT_FALSE(db.has_value());
  EXPECT_NE(db.error().message.find("a directory"), std::string::npos) << db.error().message;
}

TEST(Database, MigratesVersion3MetricsToNullableValuesKeepingRowids) {
  const std::string path = temp_path("v3.db");
  {
    auto db = Database::open(path);
    ASSERT_TRUE(db.has_value());
  }
  // Back to the v3 table (value NOT NULL), with rows whose rowids are not dense.
  raw_exec(path, R"sql(
    DROP TABLE metrics;
    CREATE TABLE metrics (run INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, step INTEGER NOT NULL,
                          epoch INTEGER NOT NULL, value REAL NOT NULL, wall_ns INTEGER NOT NULL);
    CREATE INDEX metrics_by_run ON metrics(run, name, step);
    INSERT INTO metrics(rowid, run, name, step, epoch, value, wall_ns) VALUES (5, 1, 'loss', 0, 0, 2.5, 1), (9, 1, 'loss', 1, 0, 1.5, 2);
    ALTER TABLE runs DROP COLUMN pid_start;
    PRAGMA user_version = 3;)sql");
  auto db = Database::open(path);
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  EXPECT_EQ(db->schema_version(), 4);
  EXPECT_EQ(raw_text(path, "SELECT group_concat(rowid || ':' || value, ',') FROM metrics;"), "5:2.5,9:1.5");
  EXPECT_EQ(raw_text(path, "SELECT \"notnull\" FROM pragma_table_info('metrics') WHERE name = 'value';"), "0");
  EXPECT_EQ(raw_text(path, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'metrics_by_run';"), "1");
}

TEST(Database, ReadOnlyOpenWaitsForTheWriterInsteadOfReadingTheFileAsImmutable) {
  const std::string path = temp_path("ro_busy.db");
  {
    auto db = Database::open(path);
    ASSERT_TRUE(db.has_value());
    ASSERT_TRUE(db->begin_run("x", "g").has_value());
  }
  // A writer in the middle of a transaction: a reader sees the last commit, through the WAL.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE; INSERT INTO runs(command, graph_name, status, started_ns) "
                                "VALUES('y', 'g', 'running', 1);", nullptr, nullptr, nullptr), SQLITE_OK);
  OpenOptions o;
  o.read_only = true;
  auto db = Database::open(path, o);
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  EXPECT_EQ(*db->count_runs(), 1);
  sqlite3_exec(other, "COMMIT;", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(*db->count_runs(), 2);  // a live reader of the WAL (an immutable one would see the old file)
}

}  // namespace tessera::insight
