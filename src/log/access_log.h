// The access log: one JSON object per completed exchange, one per line
// (JSON Lines), with a fixed key order so the file also greps well. The
// encoder is a pair of append-only functions; AccessLog batches a worker's
// lines and hands each batch to the LogWriter thread.
//
// Trust: most fields (SNI, ALPN, method, path, user agent) are raw peer
// bytes. append_json_string() escapes them and replaces invalid UTF-8, so
// every line is valid JSON whatever the client sent.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <uv.h>

#include "log/log_batch.h"
#include "util/uv_handle.h"

namespace tlsfront::log {

class LogWriter;

// One exchange. The string_views are borrowed for the duration of
// append_json_line()/AccessLog::log() only.
struct AccessLogEntry {
  std::chrono::system_clock::time_point time;  // request start ("time": RFC 3339 UTC with ms)
  std::string_view remote_addr;
  uint16_t remote_port = 0;
  // The TCP peer's address when it is not remote_addr (a PROXY protocol
  // header or a trusted proxy's header named the client); "" -> no field.
  std::string_view peer_addr;
  std::string_view sni;       // "" -> null
  std::string_view alpn;      // "" -> null
  std::string_view scheme = "https";  // the listener's: "https", or "http" (tls = false)
  std::string_view protocol;  // "HTTP/1.1", "HTTP/2.0"
  std::string_view method, path;  // path = request-target as received
  int status = 0;                  // as sent; see RequestRecord::status for a response that never started
  bool response_complete = false;  // the whole response reached the client transport (false: cut short)
  uint64_t bytes_sent = 0, bytes_received = 0;  // HTTP message bytes (head+body) to/from the client
  double request_time_ms = 0;
  std::string_view ssl_protocol, ssl_cipher;  // "TLSv1.3", "TLS_AES_128_GCM_SHA256"; "" (http) -> null
  bool ssl_session_reused = false;
  bool ssl_early_data = false;  // the request arrived in TLS early data (0-RTT), nginx's $ssl_early_data
  std::string_view ssl_resumption = "none";  // "none" | "cache" (session ID / stateful) | "ticket"; "" -> null
  std::optional<double> tls_handshake_ms;  // first request of a connection only, else null
  // The client connection's smoothed round-trip time when its session began
  // (TCP: the kernel's; QUIC: ngtcp2's); with tls_handshake_ms, else null.
  std::optional<double> rtt_ms;
  bool migrated = false;  // a QUIC connection whose client address changed before this line
  // The client certificate (mTLS), when the connection's certificate name
  // asked for one: ssl_client_verify "SUCCESS" | "FAILED:<reason>" | "NONE";
  // "" -> none of these fields. The others: "" -> null.
  std::string_view ssl_client_verify, ssl_client_s_dn, ssl_client_i_dn, ssl_client_serial, ssl_client_fingerprint;
  uint64_t connection_id = 0, connection_requests = 0;
  uint32_t stream_id = 0;          // HTTP/2 stream identifier (RFC 9113 §5.1.1); 0 (HTTP/1.x) -> null
  std::string_view route;          // the route's name (its match when it has none); "" (none took it) -> null
  std::string_view upstream_addr;   // "" -> null
  std::string_view upstream_error;  // "refused", "refused, timeout_read"; "" -> null
  int upstream_status = 0;          // 0 -> null
  std::optional<double> upstream_connect_ms, upstream_response_ms;  // nullopt -> null
  std::optional<bool> upstream_connection_reused;                   // nullopt -> null
  std::string_view upstream_protocol;  // what the upstream group speaks: "http/1.1", "h2c"; "" (no exchange) -> null
  std::optional<int> grpc_status;      // a gRPC call's grpc-status; nullopt (not gRPC, or none) -> null
  std::string_view user_agent;                                      // "" -> null
  std::string_view request_id;  // $request_id (32 hex, or a trusted client's); "" -> null
  std::string_view content_encoding;  // the coding tlsfront compressed the body with ("gzip", "br"); "" -> null
  bool tunnel = false;  // a 101 opened an Upgrade tunnel; the line is its end (bytes include the tunnel's)
  // What limited the request: "access" (a route's access rules: 403) or a
  // [[limit_req]] / [[limit_conn]] zone's name (429, 503, or a delay);
  // "" -> no field.
  std::string_view limit;
  // A response from a file: "hit" (its file from the open-file cache) or
  // "miss"; "" for any other (the field is then left out).
  std::string_view cache;
};

// Appends one JSON object for `entry` plus '\n' to `out`. Keys appear in the
// struct's field order; durations are milliseconds with 3 decimals (a
// non-finite value is written as null). Any thread.
void append_json_line(std::string& out, const AccessLogEntry& entry);

// An upper bound of the bytes append_json_line() writes for `entry`: it
// sizes `out` by this once and writes without further checks.
size_t json_line_room(const AccessLogEntry& entry);

// Appends `s` as a JSON string literal, quotes included: escapes '"', '\\'
// and control bytes (\n \r \t \b \f, others as \u00XX), copies valid UTF-8
// unchanged, and replaces each byte that is not part of a well-formed UTF-8
// sequence (stray continuation, overlong, surrogate, above U+10FFFF,
// truncated) with \ufffd. Allocation-free apart from growing `out`. Any thread.
void append_json_string(std::string& out, std::string_view s);

// A worker's access-log batch: log() encodes into a buffer and hands it to
// the LogWriter once it passes kFlushBytes, or kFlushDelay after its first
// line, whichever comes first, so a busy worker wakes the writer a few times
// a second, not once per request, and a line logged on an otherwise idle
// worker still reaches the file within kFlushDelay (the timer is armed by the
// line itself, whatever loop phase logged it). Thread affinity: the thread
// running `loop` (the owning worker) only.
class AccessLog {
 public:
  static constexpr size_t kFlushBytes = 64 * 1024;  // as nginx's access_log buffer=64k
  static constexpr uint64_t kFlushDelayMs = 50;

  // `writer` is borrowed and must outlive this object; null disables logging.
  // `loop` runs the flush timer; with a null loop only kFlushBytes, flush()
  // and close() hand lines over (unit tests).
  explicit AccessLog(LogWriter* writer, uv_loop_t* loop = nullptr);
  // Flushes what is left (close() must have been called if `loop` was given
  // and is about to be closed).
  ~AccessLog();

  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  bool enabled() const { return writer_ != nullptr; }

  // Encodes `entry` into the batch (no-op when disabled).
  void log(const AccessLogEntry& entry);

  // Hands the batch to the writer if it is non-empty.
  void flush();

  // Flushes and closes the timer; later lines are handed over only by size or
  // flush(). Call before the loop is torn down.
  void close();

  size_t buffered_bytes_for_test() const { return buffer_.size(); }

 private:
  LogWriter* writer_;
  LogBatch buffer_;
  UvHandle<uv_timer_t> timer_;  // one-shot, unreferenced: never keeps the loop alive
};

}  // namespace tlsfront::log
