// Tests for insight/maintenance.cpp: the integrity check and the salvage of a damaged database
// (pages cut off its end, as in the malformed store of 2026-11-28: b-tree pages that point past
// the file's end).
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "insight/database.h"
#include "insight/maintenance.h"
#include "insight/recorder.h"

namespace tessera::insight {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_maint_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
  return p.string();
}

// A store with 3 finished runs of 4000 metric values each (many pages of the metrics b-tree).
void make_store(const std::string& path) {
  for (int r = 0; r < 3; ++r) {
    auto rec = Recorder::open(path);
    ASSERT_TRUE(rec.has_value()) << rec.error().to_string();
    RunInfo info;
    info.name = "run" + std::to_string(r);
    info.kind = "train";
    info.command = "tessera train x";
    ASSERT_TRUE((*rec)->start_run(info).has_value());
    for (int i = 0; i < 4000; ++i) (*rec)->on_metric("loss", i, 0, 1.0 / (i + 1));
    ASSERT_TRUE((*rec)->finish_run(RunStatus::kFinished).is_ok());
  }
}

TEST(Maintenance, AnIntactStoreChecksOk) {
  const std::string path = temp_path("intact.db");
  make_store(path);
  auto r = check_database(path);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_TRUE(r->ok()) << r->problems.front();
  EXPECT_EQ(r->schema_version, kSchemaVersion);
  EXPECT_GT(r->pages, 10);
}

TEST(Maintenance, PagesCutOffTheEndAreFoundAndTheRestSalvaged) {
  const std::string path = temp_path("cut.db");
  make_store(path);  // the last close checkpointed the WAL into the file and removed it
  ASSERT_FALSE(std::filesystem::exists(path + "-wal") && std::filesystem::file_size(path + "-wal") > 0);
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - (size / 4096 / 3) * 4096);  // a third of the pages gone

  auto r = check_database(path);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_FALSE(r->ok());
  bool names_pages = false;
  for (const std::string& p : r->problems) names_pages = names_pages || p.find("page") != std::string::npos;
  EXPECT_TRUE(names_pages) << r->problems.front();

  const std::string out = temp_path("salvaged.db");
  auto s = recover_database(path, out);
  ASSERT_TRUE(s.has_value()) << s.error().to_string();
  int64_t metrics = 0, unreadable = 0;
  for (const TableSalvage& t : s->tables) {
    if (t.table == "metrics") metrics = t.copied;
    unreadable += t.unreadable_ranges;
  }
  EXPECT_GT(metrics, 0);
  EXPECT_LT(metrics, 12000);
  EXPECT_GT(unreadable, 0);
  auto again = check_database(out);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->ok()) << again->problems.front();
  auto db = Database::open(out);  // a usable store
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  EXPECT_EQ(*db->count_runs(), s->runs);

  // The salvage never overwrites: a second one to the same file is refused.
  auto twice = recover_database(path, out);
  ASSERT_FALSE(twice.has_value());
  EXPECT_EQ(twice.error().where, out);
}

TEST(Maintenance, RowsWhoseValuesDoNotFitTheSchemaAreRejected) {
  const std::string path = temp_path("garbage.db");
  make_store(path);
  {
    // A torn page read as rows: blobs where the schema has text, a status of none of ours.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "PRAGMA ignore_check_constraints = 1;"
                           "INSERT INTO runs(id, command, graph_name, status, started_ns) VALUES (100, X'3132', X'3334', 'running', 0);"
                           "INSERT INTO runs(id, command, graph_name, status, started_ns) VALUES (101, 'c', 'g', 'garbage', 0);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  const std::string out = temp_path("garbage_out.db");
  auto s = recover_database(path, out);
  ASSERT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_EQ(s->runs, 3);
  for (const TableSalvage& t : s->tables) {
    if (t.table == "runs") {
      EXPECT_EQ(t.copied, 3);
      EXPECT_EQ(t.rejected, 2);
    }
    if (t.table == "metrics") EXPECT_EQ(t.copied, 12000);
  }
}

TEST(Maintenance, ErrorsNameTheFile) {
  const std::string missing = temp_path("missing.db");
  auto r = check_database(missing);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().where, missing);
  const std::string text = temp_path("text.db");
  { std::FILE* f = std::fopen(text.c_str(), "w"); std::fputs("not a database, just text long enough to be read", f); std::fclose(f); }
  auto t = check_database(text);
  ASSERT_TRUE(!t.has_value() || !t->ok());
}

}  // namespace
}  // namespace tessera::insight
