// harness/report/result_files.h — writing results without ever leaving a damaged file:
// whole files go to a temporary name in the same folder and are renamed into place; a CSV
// row is appended under an exclusive lock by rewriting the file the same way, so a crash
// leaves the old file or the new one, never a torn row. A CSV written by an earlier version,
// whose columns are the first of this version's, gains the new columns (empty in its old rows);
// a CSV whose header differs otherwise is refused rather than mixed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cnnbench {

// The largest result JSON a run writes and compare (and --baseline) reads: 3 GiB, more than a
// run of the most steps a run may have writes (result_reader.cc says why). A larger file is
// refused unread, and a run replaces an existing --result_json up to this size.
inline constexpr uint64_t max_result_json_bytes = uint64_t{3} << 30;
// The largest results.csv: 256 MiB, over 500,000 runs of about 0.5 KB a row. compare reads no
// more (parsed, a row takes tens of times its size), so a run refuses, before it starts, to
// append to a results.csv within 1 MiB of it.
inline constexpr uint64_t max_results_csv_bytes = uint64_t{256} << 20;

// Throws std::runtime_error naming the path on any failure.
void write_file_atomically(const std::string& path, const std::string& contents);
// Writes a new file named stem + suffix, or stem-2 + suffix, stem-3 ... if that is taken (never
// replacing one, even when another run takes the name at the same moment); returns its path.
std::string write_new_file(const std::string& stem, const std::string& suffix, const std::string& contents);
void append_csv_row(const std::string& path, const std::vector<std::string>& header,
                    const std::vector<std::string>& row);
// Runs `work` holding an exclusive lock (flock) on .NAME.lock beside `path`: read, merge and
// rewrite without losing another process's write in between.
void with_file_lock(const std::string& path, const std::function<void()>& work);
// Throws as append_csv_row would if `path` (when it exists) cannot take rows under `header`:
// for runs that check before hours of training, not after.
void check_csv_header(const std::string& path, const std::vector<std::string>& header);
// Creates a folder and its parents (like mkdir -p).
void make_folders(const std::string& path);

}  // namespace cnnbench
