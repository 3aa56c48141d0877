// The end of one HTTP/1.1 response (RFC 9112 §6.3) as tlsfront_hsload
// needs it: the status code, and when the body is complete — after
// Content-Length octets, or at the end of the connection when the response
// has no Content-Length (the request says Connection: close). The body is
// counted, not kept.
//
// Shapes: the head (status line and fields, through the empty line) is
// limited to kMaxHead octets. Errors: kMalformed (no "HTTP/1.x NNN " status
// line, a bad or repeated Content-Length), kTooLarge (head over the limit).
// Thread affinity: the owning connection's thread.
#pragma once

#include <cstdint>
#include <string>

#include "hsload/bytes.h"

namespace tlsfront::hsload {

class HttpResponse {
 public:
  enum class Status { kNeedMore, kComplete, kMalformed, kTooLarge };
  static constexpr size_t kMaxHead = 16 * 1024;

  Status feed(ByteView data);
  // The connection ended (close_notify or EOF): complete when the head was
  // read and the body needs no more octets.
  Status end();
  int status_code() const { return code_; }

 private:
  Status parse_head();
  std::string head_;
  bool head_done_ = false;
  int code_ = 0;
  int64_t content_length_ = -1;  // -1: none, the body ends with the connection
  int64_t body_ = 0;
};

}  // namespace tlsfront::hsload
