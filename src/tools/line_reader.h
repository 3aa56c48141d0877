// LineReader: the lines of one access-log file, plain or gzip-compressed
// (zlib detects which), or of standard input ("-"), read in 256 KiB chunks.
// A line longer than kMaxLine is skipped whole and counted, so memory stays
// bounded whatever the file holds. The last line needs no trailing newline.
// Thread affinity: none (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

using gzFile = struct gzFile_s*;

namespace tlsfront::tools {

class LineReader {
 public:
  static constexpr size_t kMaxLine = 1 << 20;

  // Opens `path` ("-": standard input). Errc::Io naming the path and the error.
  [[nodiscard]] static Result<LineReader> open(const std::string& path);
  ~LineReader();
  LineReader(LineReader&& other) noexcept;
  LineReader& operator=(LineReader&&) = delete;
  LineReader(const LineReader&) = delete;

  // The next line without its '\n' (valid until the next call), or false at
  // the end. Errc::Io on a read or decompression error (the detail names it).
  [[nodiscard]] Result<bool> next(std::string_view& line);
  uint64_t too_long() const { return too_long_; }

 private:
  LineReader(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}
  // Reads more into buf_; false at the end of the file.
  Result<bool> fill();

  std::string path_;
  gzFile file_;
  std::string buf_;
  size_t begin_ = 0;  // start of the unread part of buf_
  bool eof_ = false;
  bool skipping_ = false;  // inside a line longer than kMaxLine
  uint64_t too_long_ = 0;
};

}  // namespace tlsfront::tools
