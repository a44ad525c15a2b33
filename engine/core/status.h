// Errors as values: Status (success or an Error) and Expected<T> (a T or an Error).
//
// Usage:
//   Expected<Tensor> t = read_npy(path);
//   if (!t) return t.error();          // propagate
//   TRY(Tensor x, read_npy(path));     // the same, as a macro
//
// An Error carries a message, the place it refers to (a file, a JSON pointer, a line:column) and,
// where there is one, the id of the offending IR node so that tools can point at it.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

struct Error {
  std::string message;  // the reason, one sentence, no trailing newline
  std::string where;    // file, file:line:col, JSON pointer or similar; may be empty
  int node = -1;        // offending node id in the graph being processed, -1 when none

  // "where: node #N: message" with the empty parts left out.
  std::string to_string() const;
  // Returns a copy with `outer` prepended to `where` ("outer: where").
  Error within(const std::string& outer) const;
};

inline Error make_error(std::string message, std::string where = {}, int node = -1) {
  return Error{std::move(message), std::move(where), node};
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT: implicit on purpose, `return error;`
  static Status ok() { return Status(); }
  bool is_ok() const { return !error_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Error& error() const {
    assert(error_);
    return *error_;
  }
  std::string to_string() const { return error_ ? error_->to_string() : "ok"; }

 private:
  std::optional<Error> error_;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT
  Expected(Status status) : v_(status.error()) { assert(!status.is_ok()); }  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Status status() const { return has_value() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace tessera

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

// Returns the error of a failing Status from the enclosing function.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::tessera::Status _st = (expr);            \
    if (!_st.is_ok()) return _st.error();      \
  } while (0)

// TRY(decl, expr): evaluates an Expected<T>; on error returns it, else binds the value to decl.
#define TRY(decl, expr) TRY_IMPL(TESSERA_CONCAT(_try_, __LINE__), decl, expr)
#define TRY_IMPL(tmp, decl, expr)            \
  auto tmp = (expr);                         \
  if (!tmp.has_value()) return tmp.error();  \
  decl = std::move(tmp).value()
