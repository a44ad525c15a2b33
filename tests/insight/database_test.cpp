// Tests for the insight database (insight/database.cpp): creation, migration, reopening, and
// clear errors for a foreign file and a newer schema.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "insight/database.h"

namespace tessera::insight {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_insight_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::filesystem::remove(p);
  return p.string();
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
}

TEST(Database, ForeignFileIsRefusedNamingIt) {
  const std::string path = temp_path("not_a_db.db");
  std::ofstream(path) << "this is not an SQLite database, just some text that is long enough to matter";
  auto db = Database::open(path);
  ASSERT_FALSE(db.has_value());
  EXPECT_EQ(db.error().where, path);
  EXPECT_NE(db.error().message.find("not a usable SQLite database"), std::string::npos) << db.error().message;
}

TEST(Database, NewerSchemaIsRefused) {
  const std::string path = temp_path("newer.db");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version=99;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto db = Database::open(path);
  ASSERT_FALSE(db.has_value());
  EXPECT_NE(db.error().message.find("schema version 99, newer"), std::string::npos) << db.error().message;
}

TEST(Database, DefaultPathFollowsXdg) {
  EXPECT_EQ(default_database_path("/x/y.db", "/data", "/home/u"), "/x/y.db");
  EXPECT_EQ(default_database_path("", "/data", "/home/u"), "/data/tessera/insight.db");
  EXPECT_EQ(default_database_path("", "", "/home/u"), "/home/u/.local/share/tessera/insight.db");
}

}  // namespace
}  // namespace tessera::insight
