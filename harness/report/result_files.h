// harness/report/result_files.h — writing results without ever leaving a damaged file:
// whole files go to a temporary name in the same folder and are renamed into place; a CSV
// row is appended under an exclusive lock by rewriting the file the same way, so a crash
// leaves the old file or the new one, never a torn row. A CSV written by an earlier version,
// whose columns are the first of this version's, gains the new columns (empty in its old rows);
// a CSV whose header differs otherwise is refused rather than mixed.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cnnbench {

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
