// CSV through libcsv (harness/report/csv.h): RFC 4180 fields, the line each row starts on, fields
// kept exactly, malformed files refused with their line, and what csv_line writes read back as
// it was.
#include <gtest/gtest.h>

#include <random>

#include "harness/report/csv.h"

namespace cnnbench {
namespace {

TEST(Csv, FieldsFollowRfc4180) {
  const auto rows = parse_csv("a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\n\n\"two\nlines\",z", "t.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].fields, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rows[1].fields, (std::vector<std::string>{"x,y", "say \"hi\""}));
  EXPECT_EQ(rows[2].fields, (std::vector<std::string>{"two\nlines", "z"}));
  EXPECT_EQ(rows[0].line, 1);
  EXPECT_EQ(rows[1].line, 2);
  EXPECT_EQ(rows[2].line, 4) << "a blank line is no row, but it is a line";
}

TEST(Csv, FieldsAreKeptExactly) {
  const auto rows = parse_csv(" a ,\tb,,\"\"\nlast,row", "t.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fields, (std::vector<std::string>{" a ", "\tb", "", ""})) << "spaces are data, not padding";
  EXPECT_EQ(rows[1].fields, (std::vector<std::string>{"last", "row"})) << "no line break after the last row";
  EXPECT_TRUE(parse_csv("", "t.csv").empty());
  EXPECT_TRUE(parse_csv("\n\r\n\n", "t.csv").empty());
}

TEST(Csv, MalformedFilesAreRefusedWithTheirLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a,b\nc,\"d\"e\n", "t.csv:2: a quote inside an unquoted field, or text after a closing quote"},
      {"a,b\n\nc,d\"e\n", "t.csv:3: a quote inside an unquoted field, or text after a closing quote"},
      {"a,b\nc,\"d\ne\n", "t.csv:2: a quoted field never ends"},
      {"\"a", "t.csv:1: a quoted field never ends"},
  };
  for (const auto& [text, error] : cases) {
    try {
      parse_csv(text, "t.csv");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const CsvError& e) {
      EXPECT_EQ(std::string(e.what()), error) << text;
    }
  }
}

TEST(Csv, WhatIsWrittenReadsBackAsItWas) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("x,y"), "\"x,y\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  std::mt19937 random(7);
  const std::string alphabet = "ab ,\"\n\r\t\xc3\xa9";
  std::vector<std::vector<std::string>> rows;
  std::string text;
  for (int r = 0; r < 200; ++r) {
    std::vector<std::string> row(1 + random() % 5);
    for (std::string& field : row) {
      field.resize(random() % 8);
      for (char& c : field) c = alphabet[random() % alphabet.size()];
    }
    if (row.size() == 1 && row[0].find_first_not_of("\r\n") == std::string::npos) row[0] = std::string(1, 'x');  // not a blank line
    rows.push_back(row);
    text += csv_line(row);
  }
  const auto read = parse_csv(text, "t.csv");
  ASSERT_EQ(read.size(), rows.size());
  for (size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(read[r].fields, rows[r]) << "row " << r;
}

}  // namespace
}  // namespace cnnbench
