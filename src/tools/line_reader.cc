#include "tools/line_reader.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tlsfront::tools {
namespace {
constexpr size_t kChunk = 256 * 1024;
}  // namespace

Result<LineReader> LineReader::open(const std::string& path) {
  gzFile f = path == "-" ? gzdopen(::dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return make_error(Errc::Io, "cannot open \"" + path + "\": " + (errno ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(f, kChunk);
  return LineReader(path, f);
}

LineReader::~LineReader() {
  if (file_ != nullptr) gzclose(file_);
}

LineReader::LineReader(LineReader&& o) noexcept
    : path_(std::move(o.path_)),
      file_(std::exchange(o.file_, nullptr)),
      buf_(std::move(o.buf_)),
      begin_(o.begin_),
      eof_(o.eof_),
      skipping_(o.skipping_),
      too_long_(o.too_long_) {}

Result<bool> LineReader::fill() {
  if (eof_) return false;
  // Keep the partial line, drop what was consumed.
  buf_.erase(0, begin_);
  begin_ = 0;
  const size_t old = buf_.size();
  buf_.resize(old + kChunk);
  const int n = gzread(file_, buf_.data() + old, static_cast<unsigned>(kChunk));
  if (n < 0) {
    int zerr = 0;
    const char* msg = gzerror(file_, &zerr);
    return make_error(Errc::Io, "reading \"" + path_ + "\": " + (zerr == Z_ERRNO ? std::strerror(errno) : msg));
  }
  buf_.resize(old + static_cast<size_t>(n));
  if (n == 0) {
    eof_ = true;
    // A truncated gzip member reads as the end; zlib reports it here.
    int zerr = 0;
    const char* msg = gzerror(file_, &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END) return make_error(Errc::Io, "reading \"" + path_ + "\": " + msg);
    return false;
  }
  return true;
}

Result<bool> LineReader::next(std::string_view& line) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const size_t avail = buf_.size() - begin_;
    if (const void* nl = std::memchr(start, '\n', avail)) {
      const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - start);
      begin_ += len + 1;
      if (skipping_) {  // the end of an over-long line
        skipping_ = false;
        continue;
      }
      line = std::string_view(start, len);
      return true;
    }
    if (avail > kMaxLine && !skipping_) {
      skipping_ = true;
      ++too_long_;
    }
    if (skipping_) begin_ = buf_.size();  // drop what we have of it
    auto more = fill();
    if (!more) return more.take_error();
    if (!*more) {
      if (buf_.size() == begin_ || skipping_) return false;
      line = std::string_view(buf_.data() + begin_, buf_.size() - begin_);
      begin_ = buf_.size();
      return true;
    }
  }
}

}  // namespace tlsfront::tools
