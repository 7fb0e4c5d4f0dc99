// The GPU search's kept choices (kernels/search_choices.h, harness/run/algorithm_cache.h): the
// file's text reads back as written, entries are found only under the identity that made them,
// merging keeps another writer's entries, and a file that is not one is refused, never replaced.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"
#include "harness/run/algorithm_cache.h"
#include "kernels/search_choices.h"

namespace cnnbench {
namespace {

const std::string h200 = "NVIDIA H200 sm_90 cuDNN 91900 driver 13000";
const std::string h100 = "NVIDIA H100 80GB HBM3 sm_90 cuDNN 91900 driver 13000";

TEST(SearchChoices, TextReadsBackAsWrittenAndOnlyForItsIdentity) {
  SearchChoices c;
  c.put(h200, "conv f16:256x64x224x224:64 3x3", "1 1 0 1 1 1 0 0.0000 0.0000 0 0.0000 0.0000");
  c.put(h200, "input padding f16:256x3x224x224", "8 4.1000 2.2000");
  c.put(h100, "conv f16:256x64x224x224:64 3x3", "6 1 0 1 1 1 1 1.5000 2.0000 0 0.0000 0.0000");
  EXPECT_EQ(c.added(), 3u);
  EXPECT_EQ(c.size(), 3u);
  const SearchChoices back = SearchChoices::parse(c.text());
  EXPECT_EQ(back.text(), c.text());
  EXPECT_EQ(back.added(), 0u) << "read, not added";
  ASSERT_NE(back.find(h200, "input padding f16:256x3x224x224"), nullptr);
  EXPECT_EQ(*back.find(h200, "input padding f16:256x3x224x224"), "8 4.1000 2.2000");
  EXPECT_EQ(*back.find(h100, "conv f16:256x64x224x224:64 3x3"), "6 1 0 1 1 1 1 1.5000 2.0000 0 0.0000 0.0000");
  EXPECT_EQ(back.find(h100, "input padding f16:256x3x224x224"), nullptr) << "another GPU's choice is not this one's";
  EXPECT_EQ(back.find("NVIDIA H200 sm_90 cuDNN 91901 driver 13000", "input padding f16:256x3x224x224"), nullptr)
      << "nor another cuDNN's";
  EXPECT_THROW(c.put(h200, "a\tkey", "1"), std::invalid_argument);
  EXPECT_THROW(c.put(h200, "key", "1\n2"), std::invalid_argument);
}

TEST(SearchChoices, TextThatIsNotChoicesIsRefusedNamingTheLine) {
  const std::string header = "# cnnbench algorithm search choices, version 1\n";
  const auto why = [](const std::string& text) {
    try {
      SearchChoices::parse(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_EQ(why(header), "read");
  EXPECT_EQ(why(header + "gpu\tkey\t1 2\n"), "read");
  EXPECT_EQ(why(""), "it is empty");
  EXPECT_EQ(why("{\"schema\": \"cnnbench.result\"}\n").rfind("line 1 is not", 0), 0u);
  EXPECT_EQ(why(header + "gpu\tkey\t1 2\ngpu key 3\n"), "line 3 is not identity, key and value between two tabs");
  EXPECT_EQ(why(header + "gpu\tkey\t1\t2\n"), "line 2 is not identity, key and value between two tabs");
  EXPECT_EQ(why(header + "\tkey\t1\n"), "line 2 is not identity, key and value between two tabs");
  // as a hand edit may leave it: CR LF, a blank line, no last line break
  EXPECT_EQ(why("# cnnbench algorithm search choices, version 1\r\ngpu\tkey\t1\r\n\ngpu\tother\t2"), "read");
  EXPECT_EQ(*SearchChoices::parse(header + "\ngpu\tkey\t1 2\r\n").find("gpu", "key"), "1 2");
}

TEST(SearchChoices, TakingAnotherWritersEntriesKeepsOwnValues) {
  SearchChoices mine, theirs;
  mine.put(h200, "a", "1");
  theirs.put(h200, "a", "2");
  theirs.put(h200, "b", "3");
  theirs.put(h100, "a", "4");
  mine.take_missing(theirs);
  EXPECT_EQ(*mine.find(h200, "a"), "1");
  EXPECT_EQ(*mine.find(h200, "b"), "3");
  EXPECT_EQ(*mine.find(h100, "a"), "4");
  EXPECT_EQ(mine.size(), 3u);
}

// The file: none yet reads as no choices; saving merges what another rank saved meanwhile; a
// file that is not one (a result named by mistake) is refused on reading and on saving, and
// stays as it was.
TEST(AlgorithmCache, SavesMergedAndNeverReplacesAFileThatIsNotOne) {
  const std::string dir = fresh_dir("algorithm_cache");
  const std::string path = dir + "/choices.txt";
  EXPECT_EQ(read_algorithm_cache(path)->size(), 0u);
  SearchChoices rank0, rank1;
  rank0.put(h200, "conv a", "1");
  rank1.put(h200, "conv b", "2");
  EXPECT_EQ(save_algorithm_cache(path, rank0), "");
  EXPECT_EQ(save_algorithm_cache(path, rank1), "");
  const auto both = read_algorithm_cache(path);
  EXPECT_EQ(both->size(), 2u);
  EXPECT_EQ(*both->find(h200, "conv a"), "1");
  EXPECT_EQ(*both->find(h200, "conv b"), "2");

  const std::string result = dir + "/result.json";
  std::ofstream(result) << "{\"schema\": \"cnnbench.result/1\"}\n";
  try {
    read_algorithm_cache(result);
    ADD_FAILURE() << "a result read as choices";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--algorithm_cache: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is not a cnnbench algorithm cache (line 1 is not"), std::string::npos)
        << e.what();
  }
  const std::string why = save_algorithm_cache(result, rank0);
  EXPECT_NE(why.find("not replaced"), std::string::npos) << why;
  EXPECT_EQ(slurp_file(result), "{\"schema\": \"cnnbench.result/1\"}\n");
  // a folder not there yet is made; one under a file cannot be
  EXPECT_EQ(save_algorithm_cache(dir + "/new/folder/choices.txt", rank0), "");
  EXPECT_EQ(*read_algorithm_cache(dir + "/new/folder/choices.txt")->find(h200, "conv a"), "1");
  EXPECT_NE(save_algorithm_cache(result + "/choices.txt", rank0), "");
  EXPECT_THROW(read_algorithm_cache(dir), std::runtime_error) << "a folder";
  // a link's file is rewritten, the link kept
  std::filesystem::create_symlink(path, dir + "/link.txt");
  SearchChoices rank2;
  rank2.put(h100, "conv c", "3");
  EXPECT_EQ(save_algorithm_cache(dir + "/link.txt", rank2), "");
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.txt"));
  EXPECT_EQ(read_algorithm_cache(path)->size(), 3u);
}

}  // namespace
}  // namespace cnnbench
