// tlsfront_wsload's client: N WebSocket tunnels (RFC 6455 over HTTP/1.1,
// optionally over TLS with ALPN http/1.1) from one epoll loop.
//
// Per tunnel, a state machine (legal transitions):
//   kConnecting -> kTls (with TLS) | kUpgrade
//   kTls -> kUpgrade                      (handshake done, request queued)
//   kUpgrade -> kAwaitEcho                (101 with the right Sec-WebSocket-Accept;
//                                          the first message queued)
//   kAwaitEcho -> kAwaitEcho              (echo checked, next message; echo mode)
//   kAwaitEcho -> kIdle                   (first echo checked; hold mode)
//   any -> kRetry                         (an error, echo mode: reconnect 10 ms later)
//   any -> kFailed                        (an error, hold mode: no second try)
//   kRetry -> kConnecting
// A message is one masked binary frame of message_bytes octets whose
// content differs per message; the echo must be one unmasked binary frame
// with the same octets. Errors (counted by reason): connect_failed,
// tls_failed, http_status_<code>, bad_accept, response_head_too_large,
// echo_mismatch, bad_frame, closed, timeout (no progress for timeout_ms in
// any state but kIdle).
//
// Echo mode (hold_s == 0) runs duration_s seconds, then prints
//   tunnels=N messages=M errors=E seconds=S rate=M/S
// Hold mode (hold_s > 0) opens the tunnels (open_rate per second, 0 = all
// at once), and once each is idle or failed prints `open=K errors=E`, holds
// them hold_s seconds, then prints `held=H` (those still open).
// Either way, when E > 0, a line `error_reason:<name>=<count> ...`.
// Returns the exit status: 0 when messages > 0 (echo) or K == N (hold), else 1.
// Thread affinity: the calling thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tlsfront::wsload {

struct LoadOptions {
  std::string ip;
  uint16_t port = 0;
  bool tls = false;
  std::string sni = "localhost";  // TLS SNI and the Host header
  std::string path = "/";
  int tunnels = 1;
  size_t message_bytes = 64;
  double duration_s = 5;
  double hold_s = 0;     // > 0: hold mode
  double open_rate = 0;  // hold mode: tunnels started per second; 0 = all at once
  int timeout_ms = 5000;
};

int run_load(const LoadOptions& o);

}  // namespace tlsfront::wsload
