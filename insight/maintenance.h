// Checking a store and salvaging a damaged one (`tessera runs check`, `tessera runs recover`).
//
//   TRY(CheckReport r, check_database("insight.db"));   // r.ok(), r.problems
//   TRY(RecoverReport s, recover_database("insight.db", "salvaged.db"));
//
// Both read the damaged file through SQLite only (read-only, with its WAL), never by hand: a file
// operation on a database another process has open would cancel that process's locks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tessera::insight {

struct CheckReport {
  std::vector<std::string> problems;  // PRAGMA integrity_check's lines (at most 100); empty: intact
  int schema_version = 0;
  int64_t pages = 0, page_size = 0;
  bool ok() const { return problems.empty(); }
};

// Runs SQLite's integrity check on the database at `path` (read-only; waits up to `busy_ms` for a
// writer). Errors: the file is missing, not a regular file, or not a database at all.
Expected<CheckReport> check_database(const std::string& path, int busy_ms = 5000);

struct TableSalvage {
  std::string table;
  int64_t copied = 0;    // rows written to the new database
  int64_t rejected = 0;  // rows read whose values do not fit the schema (torn pages read as garbage)
  int64_t unreadable_ranges = 0;  // stretches of the table SQLite could not read (skipped)
};

struct RecoverReport {
  std::vector<TableSalvage> tables;  // in schema order
  int64_t runs = 0;                  // runs in the new database
  int64_t rebuilt_runs = 0;          // of which rebuilt: records salvaged whose run row was lost
};

// Copies every row that can still be read from the insight database at `damaged` into a new
// database at `out` (created with the current schema; it must not exist). Rows are read table by
// table in rowid order; where a stretch of a table cannot be read, the scan skips ahead (doubling
// the step) until it reads again. A row whose values have the wrong storage class for their
// column (text where an integer belongs: a torn page read as rows) or that breaks a constraint is
// rejected. Records whose run row was lost get a rebuilt run ("recovered-ID", crashed, with the
// span of its metrics' times). Runs left "running" are marked crashed when `out` is next opened. Errors name the
// file: `out` exists, `damaged` is not a database or its list of tables cannot be read.
Expected<RecoverReport> recover_database(const std::string& damaged, const std::string& out);

}  // namespace tessera::insight
