#include "harness/report/csv.h"

#include <cmath>
#include <cstdio>

#include <csv.h>

#include <fmt/format.h>

namespace cnnbench {
namespace {

struct Reader {
  std::vector<CsvRow> rows;
  CsvRow row;
};

// libcsv's public parser state: 0 (its ROW_NOT_BEGUN) between rows, blank lines included.
bool between_rows(const csv_parser& p) { return p.pstate == 0; }

void on_field(void* data, size_t size, void* reader) {
  auto* r = static_cast<Reader*>(reader);
  r->row.fields.emplace_back(static_cast<const char*>(data), size);
}

void on_row_end(int, void* reader) {
  auto* r = static_cast<Reader*>(reader);
  r->rows.push_back(std::move(r->row));
  r->row = {};
}

int no_spaces(unsigned char) { return 0; }  // libcsv trims spaces and tabs around fields unless told not to

}  // namespace

std::vector<CsvRow> parse_csv(const std::string& text, const std::string& path) {
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) throw std::bad_alloc();
  csv_set_space_func(&parser, no_spaces);
  Reader reader;
  // One physical line at a time, so that a row knows the line it starts on: a line that begins
  // while no row is under way starts the next one.
  int line = 1;
  size_t at = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a spreadsheet's UTF-8 byte-order mark is not the first field's
  try {
    while (at < text.size()) {
      const size_t newline = text.find('\n', at);
      const size_t end = newline == std::string::npos ? text.size() : newline + 1;
      if (between_rows(parser)) reader.row.line = line;
      if (csv_parse(&parser, text.data() + at, end - at, on_field, on_row_end, &reader) != end - at) {
        const int error = csv_error(&parser);
        if (error == CSV_EPARSE)
          throw CsvError(fmt::format("{}:{}: a quote inside an unquoted field, or text after a closing quote", path,
                                     line));
        throw std::bad_alloc();  // CSV_ENOMEM, CSV_ETOOBIG: a field larger than memory
      }
      at = end;
      ++line;
    }
    const int start = reader.row.line;
    if (csv_fini(&parser, on_field, on_row_end, &reader) != 0)
      throw CsvError(fmt::format("{}:{}: a quoted field never ends", path, start));
  } catch (...) {
    csv_free(&parser);
    throw;
  }
  csv_free(&parser);
  return std::move(reader.rows);
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out(2 * field.size() + 2, '\0');
  out.resize(csv_write(out.data(), out.size(), field.data(), field.size()));
  return out;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_field(fields[i]);
  }
  line += '\n';
  return line;
}

std::string csv_number(double value) {
  if (!std::isfinite(value)) return "";
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

}  // namespace cnnbench
