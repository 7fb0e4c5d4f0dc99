// harness/data/tfrecord.h — TFRecord files: a sequence of records, each
//   uint64 length | uint32 masked CRC-32C of the length | length bytes | uint32 masked CRC-32C of them
// (little-endian). The reader reads in large sequential blocks and checks both CRCs of every
// record; any damage is a TfRecordError naming the file and the offset of the record.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cnnbench {

struct TfRecordError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The largest record cnnbench reads: far above any image (ImageNet's largest JPEG is 15 MB), and a
// damaged length field cannot ask for gigabytes.
inline constexpr uint64_t max_tfrecord_bytes = uint64_t{256} << 20;

class TfRecordReader {
 public:
  explicit TfRecordReader(const std::string& path, size_t block_bytes = size_t{4} << 20);
  ~TfRecordReader();
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  // The next record into `record`; false at the clean end of the file.
  bool next(std::string& record);
  const std::string& path() const { return path_; }
  uint64_t record_offset() const { return record_offset_; }  // of the record `next` read last

 private:
  size_t fill(size_t want);  // bytes available from pos_ after reading until `want` are, or EOF
  [[noreturn]] void fail(const std::string& why) const;

  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0, record_offset_ = 0, consumed_ = 0;  // consumed_: file offset of pos_
  std::vector<char> block_;
  size_t pos_ = 0, end_ = 0;
};

// Records in a file, from their headers alone (each length's CRC checked, the data skipped):
// what an epoch of the file holds, without reading the images.
int64_t count_tfrecords(const std::string& path);

// Writes records; with `atomic`, into PATH.tmp renamed to PATH by close() (a file that is either
// whole or absent), otherwise straight into PATH (an event file that a reader may watch grow).
class TfRecordWriter {
 public:
  TfRecordWriter(const std::string& path, bool atomic);
  ~TfRecordWriter();  // without close(): an atomic writer removes its .tmp
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  void write(std::string_view record);
  void flush();
  void close();
  uint64_t bytes_written() const { return bytes_; }

 private:
  std::string path_, writing_path_;
  std::FILE* file_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace cnnbench
