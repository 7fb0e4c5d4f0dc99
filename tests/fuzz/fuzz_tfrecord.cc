// tests/fuzz/fuzz_tfrecord.cc — libFuzzer harness for TFRecord framing: the input is one shard
// file. The reader (in 64-byte blocks, so that records straddle block edges) gives whole records
// or one line naming the file and a record's byte offset, and agrees with count_tfrecords(), which
// reads the headers alone: a file the reader reads to its end has as many records as were counted,
// and a file the counter refuses the reader refuses too. Each record read goes through the Example
// parser.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz_files.h"
#include "harness/data/image_example.h"
#include "harness/data/tfrecord.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/train-00000-of-00001";
  fuzz::write_bytes(path, data, size);
  int64_t counted = -1;
  try {
    counted = count_tfrecords(path);
  } catch (const TfRecordError& e) {
    fuzz::expect_one_line(e.what(), path + ": record at byte ");
  }
  int64_t read = 0;
  bool refused = false;
  try {
    TfRecordReader reader(path, 64);
    std::string record;
    while (reader.next(record)) {
      fuzz::expect(record.size() <= max_tfrecord_bytes, "records within the size limit");
      ++read;
      try {
        parse_image_example(record);
      } catch (const std::runtime_error& e) {
        fuzz::expect_one_line(e.what());
      }
    }
  } catch (const TfRecordError& e) {
    fuzz::expect_one_line(e.what(), path + ": record at byte ");
    refused = true;
  }
  fuzz::expect(refused || counted == read, "count_tfrecords counts the records the reader reads");
  fuzz::expect(counted >= 0 || refused, "a file the counter refuses is refused by the reader");
  return 0;
}
