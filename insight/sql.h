// A thin RAII layer over SQLite's C API for the insight store: a prepared statement that binds by
// position and reads columns by index. Internal to insight/ (the engine never sees SQLite).
//
//   Stmt st(db, "SELECT name, value FROM metrics WHERE run = ?;");
//   st.bind(1, run_id);
//   while (st.step() == SQLITE_ROW) use(st.text(0), st.real(1));
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <limits>
#include <string>

namespace tessera::insight {

class Stmt {
 public:
  // Prepares `sql` on `db`; ok() is false (and sqlite3_errmsg(db) says why) when it does not compile.
  Stmt(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &st_, nullptr); }
  Stmt(sqlite3* db, const std::string& sql) : Stmt(db, sql.c_str()) {}
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK && st_ != nullptr; }
  // Binds parameter i (1-based).
  void bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, int v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(st_, i, v); }
  void bind(int i, const std::string& v) { sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, const char* v) { sqlite3_bind_text(st_, i, v, -1, SQLITE_TRANSIENT); }
  void bind_null(int i) { sqlite3_bind_null(st_, i); }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return ok() ? sqlite3_step(st_) : rc_; }
  // Runs a statement that returns no rows and resets it for the next bindings; true on success.
  bool run() {
    const int rc = step();
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
    return rc == SQLITE_DONE || rc == SQLITE_ROW;
  }
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  int64_t i64(int col) const { return sqlite3_column_int64(st_, col); }
  double real(int col) const { return sqlite3_column_double(st_, col); }
  // A REAL column where NULL stands for NaN (SQLite stores a NaN as NULL): metric values.
  double real_or_nan(int col) const { return is_null(col) ? std::numeric_limits<double>::quiet_NaN() : real(col); }
  bool is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, col))) : std::string();
  }
  const char* errmsg() const { return sqlite3_errmsg(db_); }
  // The statement, for the C API's calls this class does not wrap (sqlite3_column_value).
  sqlite3_stmt* raw() const { return st_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

}  // namespace tessera::insight
