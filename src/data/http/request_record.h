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

// The upstream side of a request, for the access log.
struct UpstreamStats {
  std::string addr;  // "127.0.0.1:9000", or "a, b" after a retry (as nginx)
  // What failed, one upstream::UpstreamFailure name per failed attempt, ", "
  // separated in the order of `addr` (an attempt follows only a failed one,
  // so the n-th error is the n-th server's; a last attempt that worked has
  // none): "refused", "refused, timeout_read". "no_live_upstreams" when no
  // server could be tried. Empty: nothing failed.
  std::string error;
  int status = 0;    // the upstream's final status; 0: none received
  std::optional<double> connect_ms;
  std::optional<double> response_ms;
  std::optional<bool> connection_reused;
};

struct RequestRecord {
  RequestHead head;
  std::chrono::system_clock::time_point time{};   // request start, wall clock (the log's `time`)
  std::chrono::steady_clock::time_point start{};  // request start, monotonic (request_time_ms)
  // The status the client was sent (its head reached the client
  // connection); when none was: 499 if the client went away first, else the
  // status tlsfront would have answered (502 for an upstream that failed
  // after its head was queued, 400 for a stream error).
  int status = 0;
  bool response_complete = false;  // the whole response was handed to the client connection
  uint64_t bytes_sent = 0;      // response head + body bytes as framed to the client
  uint64_t bytes_received = 0;  // request head + body bytes as framed by the client
  uint64_t body_bytes = 0;      // decoded request body bytes so far
  std::string user_agent;
  // Filled when the request's exchange is retired (ProxyExchange::retire);
  // null when none was started (a local answer).
  std::optional<UpstreamStats> upstream;

  // A new request: everything cleared (the header vector keeps
  // kHeadersReserved entries), both clocks read now.
  void begin();
  // Counts `n` more decoded body bytes; false once the body exceeds
  // `max_body` (limits.max_body_bytes; 0: no limit), for a 413.
  [[nodiscard]] bool add_body(size_t n, uint64_t max_body);
  // Frees what the record grew (between keepalive requests).
  void release();

  // Counts the request (metrics) and writes its access-log line when the log
  // is on; the exchange, if any, is retired first (its stats are in
  // `upstream`). `protocol`: "HTTP/1.0", "HTTP/1.1" or "HTTP/2.0".
  // `stream_id`: HTTP/2's, 0 for HTTP/1.x. `with_handshake_time`: the
  // connection's first logged request carries tls_handshake_ms.
  void log_completed(const SessionEnv& env, const ConnectionInfo& info, std::string_view protocol,
                     uint32_t stream_id, bool with_handshake_time) const;
};

}  // namespace tlsfront::http
