// Numeric CSV files as a Source: one example per row, a label column and feature columns.
//
// Usage:
//   data::CsvOptions opt;
//   opt.label_column = "species";                  // a header name, or "0", "3", ...; "" = last
//   TRY(auto iris, data::open_csv("iris.csv", opt));
//   // fields: "x" f32 [C] (every other column, in file order), "labels" i64 []
//
// The file is parsed whole at open. Fields are separated by `delimiter`; surrounding spaces and
// tabs are ignored; blank lines are skipped; "\r\n" line ends are accepted. Every field must be a
// number (strtod syntax, "nan"/"inf" included) and labels must be integers. A header line is
// detected when any field of the first line is not a number (or forced by `header`). Errors give
// Error.where = "file:line:column" (1-based; the column counts characters) and name the field.
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/data/dataset.h"

namespace tessera::data {

enum class CsvHeader { kAuto, kPresent, kAbsent };

struct CsvOptions {
  std::string label_column;  // header name or 0-based index as text; empty: the last column
  CsvHeader header = CsvHeader::kAuto;
  char delimiter = ',';
};

Expected<std::shared_ptr<const Source>> open_csv(const std::string& path,
                                                 const CsvOptions& options = {});

}  // namespace tessera::data
