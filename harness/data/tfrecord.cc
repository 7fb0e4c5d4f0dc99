#include "harness/data/tfrecord.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "harness/data/crc32c.h"

namespace cnnbench {
namespace {

uint64_t load_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint32_t load_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
void store_le(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string at_offset(const std::string& path, uint64_t offset) {
  return path + ": record at byte " + std::to_string(offset) + ": ";
}

int open_for_reading(const std::string& path, uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TfRecordError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw TfRecordError(path + ": not a regular file");
  }
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// The header's length, checked against its CRC, the limit and what the file still holds.
uint64_t checked_length(const char* header, const std::string& path, uint64_t offset, uint64_t file_size) {
  const uint64_t length = load_u64(header);
  if (masked_crc32c(header, 8) != load_u32(header + 8))
    throw TfRecordError(at_offset(path, offset) + "the length's CRC does not match (damaged or not a TFRecord file)");
  if (length > max_tfrecord_bytes)
    throw TfRecordError(at_offset(path, offset) + "announces " + std::to_string(length) + " bytes, more than the " +
                        std::to_string(max_tfrecord_bytes >> 20) + " MiB cnnbench reads");
  if (file_size - offset < 16 + length)
    throw TfRecordError(at_offset(path, offset) + "truncated: announces " + std::to_string(length) +
                        " bytes, the file ends " + std::to_string(file_size - offset - 12) + " bytes after its header");
  return length;
}

}  // namespace

TfRecordReader::TfRecordReader(const std::string& path, size_t block_bytes) : path_(path), block_(block_bytes) {
  fd_ = open_for_reading(path, file_size_);
  posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

TfRecordReader::~TfRecordReader() {
  if (fd_ >= 0) ::close(fd_);
}

void TfRecordReader::fail(const std::string& why) const { throw TfRecordError(at_offset(path_, record_offset_) + why); }

size_t TfRecordReader::fill(size_t want) {
  if (end_ - pos_ >= want) return end_ - pos_;
  // keep the unread tail, then read large blocks after it
  std::memmove(block_.data(), block_.data() + pos_, end_ - pos_);
  end_ -= pos_;
  pos_ = 0;
  if (block_.size() < want) block_.resize(want);
  while (end_ < want) {
    const ssize_t got = ::read(fd_, block_.data() + end_, block_.size() - end_);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(std::string("read failed (") + std::strerror(errno) + ")");
    if (got == 0) break;
    end_ += static_cast<size_t>(got);
  }
  return end_;
}

bool TfRecordReader::next(std::string& record) {
  record_offset_ = consumed_;
  if (consumed_ == file_size_) return false;
  if (fill(12) < 12) fail("truncated: " + std::to_string(end_ - pos_) + " bytes where a 12-byte header starts");
  const uint64_t length = checked_length(block_.data() + pos_, path_, record_offset_, file_size_);
  pos_ += 12;
  const size_t body = static_cast<size_t>(length) + 4;
  if (fill(body) < body) fail("truncated while reading its data");
  const char* data = block_.data() + pos_;
  if (masked_crc32c(data, length) != load_u32(data + length)) fail("the data's CRC does not match (damaged data)");
  record.assign(data, length);
  pos_ += body;
  consumed_ += 12 + body;
  return true;
}

int64_t count_tfrecords(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_for_reading(path, size);
  posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // headers only: no read-ahead of the images
  int64_t count = 0;
  uint64_t offset = 0;
  try {
    while (offset < size) {
      char header[12];
      if (size - offset < 12 || pread(fd, header, 12, static_cast<off_t>(offset)) != 12)
        throw TfRecordError(at_offset(path, offset) + "truncated: less than a 12-byte header");
      offset += 16 + checked_length(header, path, offset, size);
      ++count;
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return count;
}

TfRecordWriter::TfRecordWriter(const std::string& path, bool atomic)
    : path_(path), writing_path_(atomic ? path + ".tmp" : path) {
  file_ = std::fopen(writing_path_.c_str(), atomic ? "wb" : "ab");
  if (!file_) throw TfRecordError(writing_path_ + ": cannot write (" + std::strerror(errno) + ")");
}

TfRecordWriter::~TfRecordWriter() {
  if (!file_) return;
  std::fclose(file_);
  if (writing_path_ != path_) std::remove(writing_path_.c_str());
}

void TfRecordWriter::write(std::string_view record) {
  char header[12], footer[4];
  store_le(header, record.size(), 8);
  store_le(header + 8, masked_crc32c(header, 8), 4);
  store_le(footer, masked_crc32c(record.data(), record.size()), 4);
  if (std::fwrite(header, 1, 12, file_) != 12 || std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fwrite(footer, 1, 4, file_) != 4)
    throw TfRecordError(writing_path_ + ": write failed (" + std::strerror(errno) + ")");
  bytes_ += 16 + record.size();
}

void TfRecordWriter::flush() {
  if (std::fflush(file_) != 0) throw TfRecordError(writing_path_ + ": write failed (" + std::strerror(errno) + ")");
}

void TfRecordWriter::close() {
  if (!file_) return;
  const bool flushed = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
  const int saved = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    if (writing_path_ != path_) std::remove(writing_path_.c_str());
    throw TfRecordError(writing_path_ + ": write failed (" + std::strerror(flushed ? errno : saved) + ")");
  }
  if (writing_path_ != path_) std::filesystem::rename(writing_path_, path_);
}

}  // namespace cnnbench
