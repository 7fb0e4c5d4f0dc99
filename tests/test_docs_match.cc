// The pages that cannot drift: docs/flags.md lists exactly the flags --help lists, and
// docs/results.md lists exactly the fields of the result record (harness/report/result_fields.h),
// with the results.csv column each fills, and results.csv's columns in their order. Real runs of
// every mode then show that no writer writes a field the record (or, for the microbenchmarks,
// the page) does not define.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_files.h"
#include "harness/cli/config.h"
#include "harness/cli/tf_cnn_flags.h"
#include "harness/report/result_fields.h"

namespace cnnbench {
namespace {

// One row of a markdown table: the heading above its table, the table's header cells, its cells
// (trimmed, backticks kept).
struct TableRow {
  std::string heading;
  std::vector<std::string> header, cells;
};

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool code = false;
  for (size_t i = 1; i < line.size(); ++i) {  // after the leading '|'
    const char c = line[i];
    if (c == '`') code = !code;
    if (c == '|' && !code) {
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
      cell.clear();
    } else {
      cell += c;
    }
  }
  return cells;
}

std::vector<TableRow> table_rows(const std::string& page) {
  const std::string text = slurp_file(std::string(CNNBENCH_SOURCE_DIR) + "/" + page);
  EXPECT_FALSE(text.empty()) << page << " is missing";
  std::vector<TableRow> rows;
  std::istringstream in(text);
  std::string line, heading;
  std::vector<std::string> header;
  bool in_table = false, fence = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) fence = !fence;
    if (fence) continue;
    if (line.rfind("#", 0) == 0) heading = line;
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    if (!in_table) {
      header = split_cells(line);
      in_table = true;
    } else if (line.rfind("|---", 0) != 0 && line.rfind("| ---", 0) != 0) {
      rows.push_back({heading, header, split_cells(line)});
    }
  }
  return rows;
}

// `text` -> text; anything else -> "".
std::string code(const std::string& cell) {
  return cell.size() > 2 && cell.front() == '`' && cell.back() == '`' ? cell.substr(1, cell.size() - 2) : "";
}

template <class Set>
std::string listed(const Set& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out.empty() ? "(none)" : out;
}

template <class Set>
std::set<std::string> minus(const Set& a, const Set& b) {
  std::set<std::string> out;
  for (const auto& x : a)
    if (!b.count(x)) out.insert(x);
  return out;
}

TEST(Docs, FlagsPageListsExactlyTheFlagsOfHelp) {
  std::set<std::string> help, page;
  std::istringstream in(usage());
  std::string line;
  bool flags = false;
  while (std::getline(in, line)) {
    if (line == "flags:") flags = true;
    if (flags && line.rfind("  --", 0) == 0) help.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GT(help.size(), 50u) << "--help's flag list was not found";
  for (const TableRow& r : table_rows("docs/flags.md")) {
    if (r.header.empty() || r.header[0] != "flag" || r.cells.empty()) continue;
    const std::string flag = code(r.cells[0]);
    ASSERT_EQ(flag.rfind("--", 0), 0u) << "docs/flags.md: a flag row whose first cell is not `--name`: " << r.cells[0];
    EXPECT_TRUE(page.insert(flag).second) << "docs/flags.md lists " << flag << " twice";
  }
  help.insert("--config");  // --help names it in its usage line, the page in the table
  EXPECT_EQ(minus(help, page), std::set<std::string>{}) << "in --help, not in docs/flags.md";
  EXPECT_EQ(minus(page, help), std::set<std::string>{}) << "in docs/flags.md, no such flag";
}

// The model table on docs/flags.md is --list_models' output, line for line: a model added to the
// zoo shows on the page, with its parameters and multiply-adds as the binary counts them.
TEST(Docs, FlagsPageShowsTheModelsAsListModelsPrintsThem) {
  const CliRun list = run_cnnbench("--list_models", fresh_dir("docs_models"));
  ASSERT_EQ(list.exit_code, 0) << list.output;
  const std::string page = slurp_file(std::string(CNNBENCH_SOURCE_DIR) + "/docs/flags.md");
  const size_t start = page.find("```\nmodel ");
  ASSERT_NE(start, std::string::npos) << "docs/flags.md: no fenced block starting with --list_models' header";
  const size_t end = page.find("```", start + 4);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(page.substr(start + 4, end - start - 4), list.output) << "paste `cnnbench --list_models` into docs/flags.md";
}

// docs/flags.md's table of tf_cnn_benchmarks flags without a counterpart lists exactly the flags
// harness/cli/tf_cnn_flags.cc takes, each as noted or refused as the code treats it.
TEST(Docs, FlagsPageListsTheTfCnnFlagsTakenWithANote) {
  std::map<std::string, bool> page;  // flag -> refused
  for (const TableRow& r : table_rows("docs/flags.md")) {
    if (r.header.empty() || r.header[0] != "tf_cnn_benchmarks flag" || r.cells.size() < 2) continue;
    const std::string flag = code(r.cells[0]);
    ASSERT_EQ(flag.rfind("--", 0), 0u) << r.cells[0];
    EXPECT_TRUE(page.emplace(flag.substr(2), r.cells[1].rfind("refused", 0) == 0).second) << flag << " twice";
  }
  std::map<std::string, bool> code_table;
  for (const TfCnnFlag& f : tf_cnn_flags()) code_table.emplace(f.name, f.refused);
  EXPECT_GT(code_table.size(), 50u);
  EXPECT_EQ(page, code_table);
}

// The JSON path -> CSV column and unit rows of the page's sections on the schema `schema`.
std::map<std::string, std::pair<std::string, std::string>> page_fields(const std::string& schema) {
  std::map<std::string, std::pair<std::string, std::string>> fields;
  for (const TableRow& r : table_rows("docs/results.md")) {
    if (r.heading.find("`" + schema + "`") == std::string::npos) continue;
    if (r.header.size() < 3 || r.header[0] != "JSON path" || r.cells.size() < 3) continue;
    const std::string path = code(r.cells[0]);
    EXPECT_FALSE(path.empty()) << "docs/results.md: a row whose JSON path is not in backticks: " << r.cells[0];
    EXPECT_TRUE(fields.emplace(path, std::pair{code(r.cells[1]), r.cells[2]}).second)
        << "docs/results.md lists " << path << " twice";
  }
  return fields;
}

// The JSON path -> CSV column and unit of the record's definition (--list_result_fields prints it).
std::map<std::string, std::pair<std::string, std::string>> record_fields(ResultSchema schema) {
  std::map<std::string, std::pair<std::string, std::string>> fields;
  for (const ResultField& f : result_fields())
    if (*f.json_path && (f.schemas & schema)) fields[f.json_path] = {f.csv_column, f.unit};
  return fields;
}

TEST(Docs, ResultsPageListsExactlyTheRecordsFields) {
  for (const auto& [schema, bit] : {std::pair{"cnnbench.result/1", kTrainingResult},
                                    std::pair{"cnnbench.convergence/1", kConvergenceResult}}) {
    const auto page = page_fields(schema), record = record_fields(bit);
    ASSERT_GT(page.size(), 10u) << "docs/results.md has no field table under a heading naming `" << schema << "`";
    for (const auto& [path, column_unit] : record) {
      const auto it = page.find(path);
      if (it == page.end()) {
        ADD_FAILURE() << schema << ": " << path << " is in the record, not in docs/results.md";
      } else {
        EXPECT_EQ(it->second.first, column_unit.first) << schema << ": " << path << "'s results.csv column";
        EXPECT_EQ(it->second.second, column_unit.second) << schema << ": " << path << "'s unit";
      }
    }
    for (const auto& [path, column] : page)
      EXPECT_TRUE(record.count(path)) << schema << ": " << path << " is in docs/results.md, not in the record";
  }
}

TEST(Docs, ResultsPageListsResultsCsvColumnsInOrder) {
  std::vector<std::string> page;
  for (const TableRow& r : table_rows("docs/results.md"))
    if (!r.header.empty() && r.header[0] == "CSV column" && !r.cells.empty()) page.push_back(code(r.cells[0]));
  EXPECT_EQ(page, csv_header());
}

// The documents four modes write, flattened to field paths.
std::set<std::string> written_fields(const std::string& dir, const std::string& json) {
  const nlohmann::json doc = nlohmann::json::parse(slurp_file(dir + "/" + json));
  const std::vector<std::string> paths = json_field_paths(doc);
  return {paths.begin(), paths.end()};
}

template <typename Value>
std::set<std::string> keys(const std::map<std::string, Value>& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

TEST(Docs, EveryFieldARunWritesIsDefined) {
  const std::string dir = fresh_dir("cnnbench_docs_fields");
  const std::string fmnist = "/usr/share/datasets/fashion-mnist";
  struct Case {
    std::string args, json;
    std::set<std::string> defined;
  };
  const std::set<std::string> training = keys(record_fields(kTrainingResult));
  const std::vector<Case> cases = {
      {"--model=trivial --batch_size=4 --num_batches=2 --result_json=base.json", "base.json", training},
      {"--model=trivial --batch_size=4 --num_batches=2 --repeats=2 --layer_timing --baseline=base.json "
       "--result_json=train.json",
       "train.json", training},
      {"--model=trivial --batch_size=4 --num_batches=2 --forward_only --result_json=fwd.json", "fwd.json", training},
      {"--mode=allreduce --allreduce_max_mb=0.01 --result_json=allreduce.json", "allreduce.json",
       keys(page_fields("cnnbench.allreduce/1"))},
  };
  std::vector<Case> all = cases;
  if (std::filesystem::exists(fmnist + "/train-images-idx3-ubyte.gz")) {
    // a baseline of the same workload, then the run against it
    const std::string conv = "--model=small_cnn --data_dir=" + fmnist + " --batch_size=64 --num_batches=20 ";
    all.push_back({conv + "--result_json=conv_base.json", "conv_base.json", keys(record_fields(kConvergenceResult))});
    all.push_back({conv + "--eval_during_training_every_n_epochs=1 --target_top_1_accuracy=0.01 "
                          "--baseline=conv_base.json --result_json=conv.json",
                   "conv.json", keys(record_fields(kConvergenceResult))});
  } else {
    ADD_FAILURE() << fmnist << ": Debian's dataset-fashion-mnist is not installed (scripts/install_deps.sh installs it)";
  }
  testing::write_jpeg_folders(dir + "/imagenet", 2, 2);
  all.push_back({"--mode=input --model=resnet18 --data_dir=imagenet --batch_size=2 --num_warmup_batches=1 "
                 "--num_batches=2 --result_json=input.json",
                 "input.json", keys(page_fields("cnnbench.input/1"))});
  for (const Case& c : all) {
    const CliRun r = run_cnnbench(c.args + " --benchmark_log_dir=logs", dir);
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.output;
    const std::set<std::string> undefined = minus(written_fields(dir, c.json), c.defined);
    EXPECT_EQ(undefined, std::set<std::string>{}) << c.args << ": written, not defined";
  }
}

}  // namespace
}  // namespace cnnbench
