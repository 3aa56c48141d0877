// UpstreamFailure: why one attempt at an upstream server failed, as the
// access log's `upstream_error` names it (one per failed attempt).
// Thread affinity: none (values).
#pragma once

#include <string_view>

namespace tlsfront::upstream {

enum class UpstreamFailure {
  ConnectFailed,    // connect(2) failed other than refused (unreachable, no socket, bad address)
  Refused,          // ECONNREFUSED: nothing listens there
  TimeoutConnect,   // the upstream connect_timeout passed
  TimeoutSend,      // the upstream send_timeout passed while writing the request
  TimeoutRead,      // the upstream read_timeout passed waiting for the response
  Reset,            // a read or write failed (ECONNRESET, EPIPE, ...)
  Closed,           // EOF before the response was complete
  InvalidResponse,  // the response failed HTTP/1.1 parsing or our checks
  TlsHandshake,     // TLS to the server failed: its certificate, a protocol error, no ALPN "h2"
  // HTTP/2 (h2c): the upstream did not process the stream (REFUSED_STREAM,
  // or above its GOAWAY's last-stream-id, RFC 9113 §6.8 / §8.7): safe to
  // retry on another connection, whatever the method.
  Unprocessed,
  StreamReset,  // HTTP/2: the upstream reset the stream (RST_STREAM) after processing began
  // A complete response whose status is one of the group's
  // failure_statuses: counted against the server, never in the access log
  // (the response went to the client).
  FailureStatus,
};

constexpr std::string_view to_string(UpstreamFailure f) {
  switch (f) {
    case UpstreamFailure::ConnectFailed: return "connect_failed";
    case UpstreamFailure::Refused: return "refused";
    case UpstreamFailure::TimeoutConnect: return "timeout_connect";
    case UpstreamFailure::TimeoutSend: return "timeout_send";
    case UpstreamFailure::TimeoutRead: return "timeout_read";
    case UpstreamFailure::Reset: return "reset";
    case UpstreamFailure::Closed: return "closed";
    case UpstreamFailure::InvalidResponse: return "invalid_response";
    case UpstreamFailure::TlsHandshake: return "tls_handshake";
    case UpstreamFailure::Unprocessed: return "unprocessed";
    case UpstreamFailure::StreamReset: return "stream_reset";
    case UpstreamFailure::FailureStatus: return "failure_status";
  }
  return "unknown";
}

}  // namespace tlsfront::upstream
