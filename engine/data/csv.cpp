// CSV reader: numeric fields, optional header, a label column; errors at file:line:column.
#include "engine/data/csv.h"
#include "engine/core/file_kind.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>

namespace tessera::data {
namespace {

struct Field {
  std::string_view text;  // trimmed
  size_t column = 0;      // 1-based character column of the field's first character
};

std::vector<Field> split_line(std::string_view line, char delim) {
  std::vector<Field> out;
  size_t start = 0;
  while (true) {
    size_t end = line.find(delim, start);
    if (end == std::string_view::npos) end = line.size();
    size_t a = start, b = end;
    while (a < b && (line[a] == ' ' || line[a] == '\t')) ++a;
    while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t')) --b;
    out.push_back({line.substr(a, b - a), a + 1});
    if (end == line.size()) break;
    start = end + 1;
  }
  return out;
}

// A number in strtod syntax without locale effects (a leading '+' is allowed).
bool parse_number(std::string_view s, double& v) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

std::string at(const std::string& path, size_t line, size_t column) {
  return path + ":" + std::to_string(line) + ":" + std::to_string(column);
}

class CsvSource final : public Source {
 public:
  CsvSource(std::string path, int64_t rows, int64_t cols, std::vector<float> x,
            std::vector<int64_t> labels)
      : path_(std::move(path)),
        rows_(rows),
        cols_(cols),
        x_(std::move(x)),
        labels_(std::move(labels)) {}
  int64_t size() const override { return rows_; }
  std::vector<FieldSpec> fields() const override {
    return {{"x", DType::kF32, {cols_}}, {"labels", DType::kI64, {}}};
  }
  std::string name() const override { return "csv(" + path_ + ")"; }
  std::vector<std::string> files() const override { return {path_}; }
  Status get(int64_t index, Example& out) const override {
    if (index < 0 || index >= rows_) {
      return make_error("example index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(rows_) + ")",
                        path_);
    }
    Tensor x(DType::kF32, {cols_});  // f32 [C]
    std::copy_n(x_.data() + index * cols_, cols_, x.data<float>());
    out.clear();
    out.push_back(std::move(x));
    out.push_back(Tensor::scalar<int64_t>(labels_[static_cast<size_t>(index)]));
    return Status::ok();
  }

 private:
  std::string path_;
  int64_t rows_, cols_;
  std::vector<float> x_;  // f32 [rows, cols]
  std::vector<int64_t> labels_;
};

}  // namespace

Expected<std::shared_ptr<const Source>> open_csv(const std::string& path,
                                                 const CsvOptions& options) {
  RETURN_IF_ERROR(require_regular_file(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open CSV file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  // Split into lines, remembering 1-based line numbers; blank lines are skipped.
  std::vector<std::pair<size_t, std::string_view>> lines;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    if (!is_blank(line)) lines.emplace_back(line_no, line);
    pos = end + 1;
  }
  if (lines.empty()) return make_error("empty CSV file (no rows)", path);

  std::vector<Field> first = split_line(lines[0].second, options.delimiter);
  bool header = options.header == CsvHeader::kPresent;
  if (options.header == CsvHeader::kAuto) {
    double v;
    for (const Field& f : first) header = header || !parse_number(f.text, v);
  }
  const size_t ncols = first.size();
  if (ncols < 2) {
    return make_error("a CSV source needs at least two columns (features and a label), found " +
                          std::to_string(ncols),
                      at(path, lines[0].first, 1));
  }

  // Resolve the label column: a header name, a 0-based index, or the last column.
  size_t label = ncols - 1;
  const std::string& want = options.label_column;
  if (!want.empty()) {
    bool found = false;
    if (header) {
      for (size_t i = 0; i < ncols && !found; ++i) {
        if (first[i].text == want) {
          label = i;
          found = true;
        }
      }
    }
    double idx;
    if (!found && parse_number(want, idx) && idx >= 0 && idx == std::floor(idx)) {
      if (idx >= static_cast<double>(ncols)) {
        return make_error("label column " + want + " out of range: the file has " +
                              std::to_string(ncols) + " columns",
                          path);
      }
      label = static_cast<size_t>(idx);
      found = true;
    }
    if (!found) {
      return make_error(
          "no column named '" + want + "'" + (header ? "" : " (the file has no header)"), path);
    }
  }

  const auto cols = static_cast<int64_t>(ncols - 1);
  std::vector<float> x;
  std::vector<int64_t> labels;
  x.reserve((lines.size()) * (ncols - 1));
  for (size_t r = header ? 1 : 0; r < lines.size(); ++r) {
    const auto [ln, line] = lines[r];
    std::vector<Field> fields = split_line(line, options.delimiter);
    if (fields.size() != ncols) {
      return make_error(
          "expected " + std::to_string(ncols) + " fields, found " + std::to_string(fields.size()),
          at(path, ln, 1));
    }
    for (size_t c = 0; c < ncols; ++c) {
      double v;
      if (!parse_number(fields[c].text, v)) {
        return make_error("field " + std::to_string(c + 1) + " is not a number: '" +
                              std::string(fields[c].text) + "'",
                          at(path, ln, fields[c].column));
      }
      if (c == label) {
        if (!(v == std::floor(v)) || std::fabs(v) > 9.0e15) {
          return make_error("label field " + std::to_string(c + 1) + " is not an integer: '" +
                                std::string(fields[c].text) + "'",
                            at(path, ln, fields[c].column));
        }
        labels.push_back(static_cast<int64_t>(v));
      } else {
        x.push_back(static_cast<float>(v));
      }
    }
  }
  const auto rows = static_cast<int64_t>(labels.size());
  if (rows == 0) return make_error("CSV file has a header but no rows", path);
  return std::shared_ptr<const Source>(
      std::make_shared<CsvSource>(path, rows, cols, std::move(x), std::move(labels)));
}

}  // namespace tessera::data
