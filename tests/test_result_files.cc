// Result files: atomic writes, CSV appends that never tear, refusal to mix schemas.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/report/result_files.h"
#include "test_util.h"

namespace cnnbench {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  make_folders(dir);
  return dir;
}

TEST(ResultFiles, CsvAppendsRowsUnderOneHeader) {
  const std::string path = fresh_dir("csv_append") + "/results.csv";
  append_csv_row(path, {"a", "b"}, {"1", "x,y"});
  append_csv_row(path, {"a", "b"}, {"2", "say \"hi\""});
  EXPECT_EQ(slurp(path), "a,b\n1,\"x,y\"\n2,\"say \"\"hi\"\"\"\n");
}

TEST(ResultFiles, CsvWithAnotherHeaderIsRefusedAndKept) {
  const std::string path = fresh_dir("csv_other") + "/results.csv";
  std::ofstream(path) << "old,columns\n1,2\n";
  EXPECT_THROW(append_csv_row(path, {"a", "b"}, {"1", "2"}), std::runtime_error);
  EXPECT_EQ(slurp(path), "old,columns\n1,2\n");
}

// A results.csv from an earlier version whose columns are the first of this version's gains the
// new ones, empty in its old rows (quoted fields and line breaks kept); one whose columns are
// not a prefix, or whose rows are damaged, is refused and left as it was.
TEST(ResultFiles, CsvWithFewerColumnsGainsTheNewOnes) {
  const std::string path = fresh_dir("csv_widen") + "/results.csv";
  std::ofstream(path) << "a,b\n1,\"x\ny\"\n2,3\n";
  append_csv_row(path, {"a", "b", "c"}, {"4", "5", "6"});
  EXPECT_EQ(slurp(path), "a,b,c\n1,\"x\ny\",\n2,3,\n4,5,6\n");
  const std::string other = fresh_dir("csv_widen_other") + "/results.csv";
  std::ofstream(other) << "a,x\n1,2\n";
  EXPECT_THROW(append_csv_row(other, {"a", "b", "c"}, {"4", "5", "6"}), std::runtime_error);
  EXPECT_EQ(slurp(other), "a,x\n1,2\n");
  const std::string damaged = fresh_dir("csv_widen_damaged") + "/results.csv";
  std::ofstream(damaged) << "a,b\n1,2,3\n";
  EXPECT_THROW(append_csv_row(damaged, {"a", "b", "c"}, {"4", "5", "6"}), std::runtime_error);
  EXPECT_EQ(slurp(damaged), "a,b\n1,2,3\n");
}

// A results.csv a spreadsheet saved (a UTF-8 byte-order mark, CRLF line ends) has the same
// header: its row is appended in the file's style, nothing else changed.
TEST(ResultFiles, CsvSavedByASpreadsheetTakesRowsInItsStyle) {
  const std::string path = fresh_dir("csv_spreadsheet") + "/results.csv";
  std::ofstream(path) << "\xEF\xBB\xBF" "a,b\r\n1,2\r\n";
  append_csv_row(path, {"a", "b"}, {"3", "x,y"});
  EXPECT_EQ(slurp(path), "\xEF\xBB\xBF" "a,b\r\n1,2\r\n3,\"x,y\"\r\n");
  check_csv_header(path, {"a", "b"});
  EXPECT_THROW(check_csv_header(path, {"a", "c"}), std::runtime_error);
}

TEST(ResultFiles, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  const std::string dir = fresh_dir("atomic");
  write_file_atomically(dir + "/r.json", "first");
  write_file_atomically(dir + "/r.json", "second");
  EXPECT_EQ(slurp(dir + "/r.json"), "second");
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_THROW(write_file_atomically(dir + "/missing/r.json", "x"), std::runtime_error);
}

}  // namespace
}  // namespace cnnbench
