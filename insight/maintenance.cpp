// Integrity check and salvage of an insight database (see maintenance.h).
#include "insight/maintenance.h"

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>

#include "engine/core/file_kind.h"
#include "insight/database.h"
#include "insight/sql.h"

namespace tessera::insight {

namespace {

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, CloseDb>;

// Opens an existing database read-only (with its WAL, as any reader), or an error naming it.
Expected<DbPtr> open_existing(const std::string& path, int busy_ms) {
  RETURN_IF_ERROR(require_regular_file(path));
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return sqlite_error(rc, raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc), path, "cannot open the database", busy_ms);
  sqlite3_busy_timeout(raw, busy_ms);
  return db;
}

// The storage class a column's declared type asks for (SQLITE_NULL: any).
int wanted_class(const std::string& declared) {
  if (declared == "INTEGER") return SQLITE_INTEGER;
  if (declared == "REAL") return SQLITE_FLOAT;
  if (declared == "TEXT") return SQLITE_TEXT;
  if (declared == "BLOB") return SQLITE_BLOB;
  return SQLITE_NULL;
}

struct Column {
  std::string name;
  int wanted;  // storage class (SQLITE_NULL: any)
  bool not_null;
};

// Whether the row's value `i` of `st` fits column `c`.
bool fits(sqlite3_stmt* st, int i, const Column& c) {
  const int t = sqlite3_column_type(st, i);
  if (t == SQLITE_NULL) return !c.not_null;
  if (c.wanted == SQLITE_NULL || t == c.wanted) return true;
  return c.wanted == SQLITE_FLOAT && t == SQLITE_INTEGER;  // SQLite stores whole REALs as integers
}

// Copies the readable rows of `table` from `from` into `to` (a transaction is open on `to`).
Status salvage_table(sqlite3* from, sqlite3* to, const std::string& table, TableSalvage& out, const std::string& path) {
  // The columns as the current schema declares them, kept where the damaged file has them too.
  std::vector<Column> cols;
  {
    Stmt info(to, "SELECT name, type, \"notnull\" FROM pragma_table_info(?);");
    info.bind(1, table);
    Stmt theirs(from, "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?;");
    while (info.step() == SQLITE_ROW) {
      const std::string name = info.text(0);
      theirs.bind(1, table);
      theirs.bind(2, name);
      const bool present = theirs.step() == SQLITE_ROW && theirs.i64(0) > 0;
      theirs.reset();
      if (present) cols.push_back({name, wanted_class(info.text(1)), info.i64(2) != 0});
    }
  }
  if (cols.empty()) return Status::ok();  // a table the damaged file does not have (or cannot list)
  bool rowid_table = true;
  {
    Stmt sql(to, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?;");
    sql.bind(1, table);
    if (sql.step() == SQLITE_ROW) rowid_table = sql.text(0).find("WITHOUT ROWID") == std::string::npos;
  }
  std::string names, marks;
  for (const Column& c : cols) {
    names += (names.empty() ? "\"" : ", \"") + c.name + "\"";
    marks += marks.empty() ? "?" : ", ?";
  }
  const std::string q = "\"" + table + "\"";
  const std::string select = rowid_table ? "SELECT rowid, " + names + " FROM " + q + " WHERE rowid > ? ORDER BY rowid LIMIT 4096;"
                                         : "SELECT 0, " + names + " FROM " + q + ";";
  const std::string insert = rowid_table ? "INSERT OR IGNORE INTO " + q + "(rowid, " + names + ") VALUES(?, " + marks + ");"
                                         : "INSERT OR IGNORE INTO " + q + "(" + names + ") VALUES(" + marks + ");";
  Stmt ins(to, insert);
  if (!ins.ok()) return make_error("cannot prepare the copy of table " + table + ": " + ins.errmsg(), path);
  int64_t after = INT64_MIN, step = 1;
  for (;;) {
    Stmt sel(from, select);
    if (!sel.ok()) {  // the table's schema itself is unreadable
      ++out.unreadable_ranges;
      return Status::ok();
    }
    if (rowid_table) sel.bind(1, after);
    int rc;
    int64_t rows = 0;
    while ((rc = sel.step()) == SQLITE_ROW) {
      ++rows;
      if (rowid_table) after = sel.i64(0);
      bool ok = true;
      for (size_t i = 0; i < cols.size() && ok; ++i) ok = fits(sel.raw(), static_cast<int>(i) + 1, cols[i]);
      if (!ok) {
        ++out.rejected;
        continue;
      }
      int p = 1;
      if (rowid_table) ins.bind(p++, after);
      for (size_t i = 0; i < cols.size(); ++i) sqlite3_bind_value(ins.raw(), p++, sqlite3_column_value(sel.raw(), static_cast<int>(i) + 1));
      if (!ins.run()) return make_error("cannot write the salvaged rows of " + table + ": " + ins.errmsg(), path);
      if (sqlite3_changes(to) == 1) ++out.copied;
      else ++out.rejected;  // a constraint (status not one of ours, a duplicate key)
    }
    if (rc == SQLITE_DONE) {
      if (!rowid_table || rows < 4096) return Status::ok();
      step = 1;
      continue;
    }
    // A stretch SQLite cannot read (a page beyond the file's end, a torn b-tree page).
    ++out.unreadable_ranges;
    if (!rowid_table) return Status::ok();
    if (after == INT64_MIN) after = 0;
    if (step > (int64_t{1} << 40)) return Status::ok();
    after += step;
    step *= 2;
  }
}

// Lets a read-only connection read a file whose header counts more pages than it holds (cut
// short), which SQLite otherwise refuses whole: the check and the salvage read what is there.
// Harmless on a read-only connection: it cannot write the schema it may now read.
void read_what_is_there(sqlite3* db) { sqlite3_exec(db, "PRAGMA writable_schema = ON;", nullptr, nullptr, nullptr); }

}  // namespace

Expected<CheckReport> check_database(const std::string& path, int busy_ms) {
  TRY(DbPtr db, open_existing(path, busy_ms));
  CheckReport r;
  {
    Stmt v(db.get(), "PRAGMA user_version;");
    if (v.step() != SQLITE_ROW) {
      const int code = sqlite3_extended_errcode(db.get()) & 0xff;
      if (code != SQLITE_CORRUPT)
        return sqlite_error(code, sqlite3_errmsg(db.get()), path, "cannot read the database", busy_ms);
      r.problems.push_back(std::string("the database cannot be opened as it is: ") + sqlite3_errmsg(db.get()) +
                           " (its header counts pages the file does not hold, or its schema is damaged)");
    }
  }
  read_what_is_there(db.get());
  {
    Stmt v(db.get(), "PRAGMA user_version;");
    if (v.step() != SQLITE_ROW) {
      r.problems.push_back(std::string("the schema cannot be read: ") + sqlite3_errmsg(db.get()));
      return r;
    }
    r.schema_version = static_cast<int>(v.i64(0));
  }
  {
    Stmt pc(db.get(), "PRAGMA page_count;");
    if (pc.step() == SQLITE_ROW) r.pages = pc.i64(0);
    Stmt ps(db.get(), "PRAGMA page_size;");
    if (ps.step() == SQLITE_ROW) r.page_size = ps.i64(0);
  }
  Stmt ic(db.get(), "PRAGMA integrity_check(100);");
  int rc;
  while ((rc = ic.step()) == SQLITE_ROW) {
    const std::string line = ic.text(0);
    if (line != "ok") r.problems.push_back(line);
  }
  if (rc != SQLITE_DONE) {
    const int code = sqlite3_extended_errcode(db.get()) & 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
      return sqlite_error(code, sqlite3_errmsg(db.get()), path, "cannot check the database", busy_ms);
    r.problems.push_back(std::string("the check stopped: ") + sqlite3_errmsg(db.get()));
  }
  return r;
}

Expected<RecoverReport> recover_database(const std::string& damaged, const std::string& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) || std::filesystem::is_symlink(out, ec))
    return make_error("the salvage goes to a new file, and this one exists; pass another --out", out);
  TRY(DbPtr from, open_existing(damaged, 5000));
  read_what_is_there(from.get());
  std::vector<std::string> tables;
  {
    Stmt t(from.get(), "SELECT name FROM sqlite_master WHERE type = 'table';");
    int rc;
    while ((rc = t.step()) == SQLITE_ROW) tables.push_back(t.text(0));
    if (rc != SQLITE_DONE)
      return make_error(std::string("cannot read the list of tables (") + sqlite3_errmsg(from.get()) +
                            "): nothing can be salvaged with SQLite; keep the file for inspection",
                        damaged);
  }
  OpenOptions oo;
  oo.mark_crashed = false;
  TRY(Database to, Database::open(out, oo));
  RecoverReport report;
  std::vector<std::string> ours;
  {
    Stmt t(to.handle(), "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid;");
    while (t.step() == SQLITE_ROW) ours.push_back(t.text(0));
  }
  RETURN_IF_ERROR(to.exec("BEGIN;"));
  for (const std::string& table : ours) {
    TableSalvage s;
    s.table = table;
    bool present = false;
    for (const std::string& t : tables) present = present || t == table;
    if (present) {
      if (Status st = salvage_table(from.get(), to.handle(), table, s, out); !st.is_ok()) {
        (void)to.exec("ROLLBACK;");
        return st.error();
      }
    }
    report.tables.push_back(std::move(s));
  }
  // Rows whose run row was lost (its page unreadable, or another table's rows where it was): a
  // run is rebuilt for each, so that its metrics, spans and checkpoints stay reachable.
  const std::string rebuild = R"sql(
    INSERT INTO runs(id, command, graph_name, name, status, started_ns, ended_ns, error)
    SELECT o.run, '(unknown: salvaged)', '', 'recovered-' || o.run, 'crashed',
           COALESCE((SELECT MIN(wall_ns) FROM metrics m WHERE m.run = o.run), 0),
           (SELECT MAX(wall_ns) FROM metrics m WHERE m.run = o.run),
           'rebuilt by tessera runs recover: the run''s own row was unreadable; its records were salvaged'
    FROM (SELECT run FROM metrics UNION SELECT run FROM spans UNION SELECT run FROM hyperparams
          UNION SELECT run FROM checkpoints UNION SELECT run FROM run_graphs UNION SELECT run FROM snapshots
          UNION SELECT run FROM memory_events UNION SELECT run FROM run_datasets) o
    WHERE o.run NOT IN (SELECT id FROM runs);)sql";
  if (Status st = to.exec(rebuild); !st.is_ok()) {
    (void)to.exec("ROLLBACK;");
    return st.error();
  }
  report.rebuilt_runs = sqlite3_changes(to.handle());
  RETURN_IF_ERROR(to.exec("COMMIT;"));
  TRY(report.runs, to.count_runs());
  return report;
}

}  // namespace tessera::insight
