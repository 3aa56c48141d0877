// RequestRecord: what the client side knows about one request, the same for
// HTTP/1.1 (Http1Session, one request at a time) and HTTP/2 (one per
// Http2Stream): the request head, when the request started, the bytes
// received and sent as the client framed them, the decoded body size against
// limits.max_body_bytes (the declared size is admission.h's), and the status given. log_completed() turns it, with
// the connection's facts and the exchange's upstream part, into the request's
// counters and its one access-log line (log/access_log.h lists the fields).
// Thread affinity: owning worker only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "data/http/exchange_sink.h"
#include "data/http/session_env.h"
#include "message/request.h"

namespace tlsfront::http {

class ProxyExchange;

struct RequestRecord {
  RequestHead head;
  std::chrono::system_clock::time_point time{};   // request start, wall clock (the log's `time`)
  std::chrono::steady_clock::time_point start{};  // request start, monotonic (request_time_ms)
  int status = 0;               // sent (or being sent) to the client; 499: the client went away first
  uint64_t bytes_sent = 0;      // response head + body bytes as framed to the client
  uint64_t bytes_received = 0;  // request head + body bytes as framed by the client
  uint64_t body_bytes = 0;      // decoded request body bytes so far
  std::string user_agent;

  // A new request: everything cleared (the header vector keeps
  // kHeadersReserved entries), both clocks read now.
  void begin();
  // Counts `n` more decoded body bytes; false once the body exceeds
  // `max_body` (limits.max_body_bytes; 0: no limit), for a 413.
  [[nodiscard]] bool add_body(size_t n, uint64_t max_body);
  // Frees what the record grew (between keepalive requests).
  void release();

  // Counts the request (metrics) and writes its access-log line when the log
  // is on. `protocol`: "HTTP/1.0", "HTTP/1.1" or "HTTP/2.0". `exchange`: the
  // upstream side, null when none was started. `stream_id`: HTTP/2's, 0 for HTTP/1.x.
  // `with_handshake_time`: the connection's first logged request carries
  // tls_handshake_ms.
  void log_completed(const SessionEnv& env, const ConnectionInfo& info, std::string_view protocol,
                     const ProxyExchange* exchange, uint32_t stream_id,
                     bool with_handshake_time) const;
};

}  // namespace tlsfront::http
