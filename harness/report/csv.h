// harness/report/csv.h — RFC 4180 CSV (quotes, doubled quotes, quoted line breaks, CRLF) read and
// written through libcsv, for results.csv and the other CSV files cnnbench writes and reads back.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cnnbench {

struct CsvRow {
  int line = 0;  // the line the row starts on (1-based)
  std::vector<std::string> fields;
};

// "path:line: what" for a malformed file.
struct CsvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every row of `text`, blank lines skipped, fields kept exactly (spaces included; a leading UTF-8
// byte-order mark and CRLF line ends are not part of any field). Throws
// CsvError naming path and line for a quote inside an unquoted field, text after a closing
// quote, or a quoted field that never ends.
std::vector<CsvRow> parse_csv(const std::string& text, const std::string& path);

// A field as it goes into a row: as it is, or quoted (quotes doubled) when it holds a comma, a
// quote or a line break.
std::string csv_field(const std::string& field);
// A number as results' CSV files write it (%.6g); NaN and infinity, which no reader takes for a
// measurement, as an empty cell (JSON writes them as null).
std::string csv_number(double value);
// The fields joined with commas, ending with a line break.
std::string csv_line(const std::vector<std::string>& fields);

}  // namespace cnnbench
