// Blocking HTTP/1.1 request reader for the recording test backend.
//
// Reads one request at a time from a connected socket: the head (request line
// and header fields, strictly validated, at most kMaxHeadBytes) and then the
// body framed by Content-Length or chunked transfer coding. Every byte
// consumed for the current request is kept in `raw()` exactly as it arrived on
// the wire, so the backend can record what really reached it. Bytes past the
// end of one request stay buffered for the next one (pipelining).
//
// Trust: the input is whatever the proxy under test forwards; everything is
// bounds-checked and a violation yields ReadStatus::Bad, never a crash.
// Thread affinity: one reader per connection thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlsfront::backend {

inline constexpr std::size_t kMaxHeadBytes = 64 * 1024;
inline constexpr std::size_t kMaxChunkLineBytes = 4 * 1024;
inline constexpr std::size_t kMaxTrailerBytes = 64 * 1024;
inline constexpr std::uint64_t kMaxBodyBytes = 1ULL << 30;  // 1 GiB, bodies are kept in memory

struct Request {
  std::string method;
  std::string target;       // as sent, e.g. "/echo?x=1"
  std::string path;         // target up to '?', "*" for asterisk-form
  int version_minor = 1;    // HTTP/1.<version_minor>
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values trimmed
  std::string head;         // request line + header lines + final CRLF, exactly as received
  std::string body;         // decoded body (chunked coding removed)
  bool chunked = false;
  std::optional<std::uint64_t> content_length;
  bool keep_alive = true;
  bool expect_continue = false;

  // First value of header `name` (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

enum class ReadStatus {
  Ok,        // a complete request was read
  Eof,       // the peer closed cleanly between requests (nothing buffered)
  Partial,   // the peer closed or errored in the middle of a request
  Bad,       // malformed request; `error_status()` says 400, 413 or 431
  Timeout,   // idle timeout expired between requests
};

class HttpReader {
 public:
  // `fd` is borrowed. With `keep_raw_body` false, body bytes are not kept in
  // raw() (only the head is), so large uploads cost no memory when nothing
  // records them.
  HttpReader(int fd, bool keep_raw_body) : fd_(fd), keep_raw_body_(keep_raw_body) {}

  // Reads the head of the next request into `req`. Returns Ok, Eof, Partial,
  // Bad or Timeout. `idle_timeout_ms` (0 = none) bounds the wait for the first
  // byte of the request.
  ReadStatus read_head(Request& req, int idle_timeout_ms);

  // Reads the body announced by `req`'s framing; the decoded body goes to
  // `req.body` when `keep_body`, else it is discarded (raw() still keeps the
  // wire bytes). Returns Ok, Partial or Bad (400, 413).
  ReadStatus read_body(Request& req, bool keep_body);

  // Raw bytes consumed for the current request so far (head + body as on the wire).
  const std::string& raw() const { return raw_; }
  // Everything received for the current request, including bytes buffered but
  // not yet consumed: what a .partial record holds.
  std::string raw_with_unconsumed() const { return raw_ + in_.substr(pos_); }
  // Starts a new request: forgets the raw bytes of the previous one.
  void reset_raw() { raw_.clear(); }
  // Bytes already received beyond the current request.
  bool has_buffered() const { return pos_ < in_.size(); }

  int error_status() const { return error_status_; }
  const std::string& error_detail() const { return error_detail_; }

 private:
  // Receives more bytes; false on EOF or error.
  bool fill();
  // Reads one CRLF-terminated line (without the CRLF) of at most `max` bytes.
  // Returns Ok, Partial (EOF) or Bad (too long / bare LF / bare CR).
  ReadStatus read_line(std::string& line, std::size_t max, int too_long_status);
  ReadStatus read_exact(std::uint64_t n, std::string* out);
  ReadStatus bad(int status, std::string detail);
  ReadStatus too_long(int status);
  ReadStatus read_chunked(Request& req, bool keep_body);

  void keep(std::size_t from, std::size_t n) {
    if (keep_raw_body_ || !in_body_) raw_.append(in_, from, n);
  }

  int fd_;
  bool keep_raw_body_;
  bool in_body_ = false;
  std::string in_;
  std::size_t pos_ = 0;
  std::string raw_;
  int error_status_ = 400;
  std::string error_detail_;
};

bool iequals(std::string_view a, std::string_view b);

}  // namespace tlsfront::backend
