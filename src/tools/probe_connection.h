// One timed HTTPS exchange for `tlsfront probe`: resolve, TCP connect
// (TCP Fast Open offered with TCP_FASTOPEN_CONNECT where the kernel takes
// it), TLS handshake (OpenSSL client; a session may be offered for
// resumption, and a GET sent as TLS 1.3 early data when the session allows
// it, RFC 8446 §4.2.10), one HTTP/1.1 GET with `Connection: close`, and the
// response read to its end by llhttp (Content-Length, chunked, or close).
//
// Every phase is timed by its own pair of steady_clock readings (never one
// phase computed from others):
//   dns         getaddrinfo_a() until the answer (absent with --resolve or an
//               IP literal host: nothing was looked up)
//   connect     connect() until the socket is writable; with TFO and a cached
//               cookie the kernel defers the SYN to the first write, so this is
//               only the call and the TCP handshake falls into `tls`
//   tls         SSL_connect until the handshake is done (with early data: from
//               the first flight's end)
//   request     writing the request (with early data: the first flight,
//               ClientHello + request, SSL_write_early_data)
//   first_byte  the request written until the first response byte
//   total       the start of `dns` until the response ended
// Blocking sockets are not used: every wait is a poll() against the one
// deadline of the exchange (`timeout` from its start), so nothing hangs.
// Thread affinity: none (one owner; OpenSSL objects are not shared).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tools {

using ProbeClock = std::chrono::steady_clock;
using Micros = std::chrono::microseconds;

struct PhaseTimes {
  std::optional<Micros> dns, connect, tls, request, first_byte, total;
};

// Where an exchange stopped when it failed.
enum class ProbeStage { Dns, Connect, Tls, Http, None };
const char* to_string(ProbeStage stage);

struct ExchangeSpec {
  std::string host;           // for DNS, SNI (unless `sni` is false) and Host
  std::string authority;      // Host header value
  std::string path = "/";
  int port = 443;
  std::string address;        // non-empty: connect here, no DNS (an IP literal host, --resolve)
  bool sni = true;
  SSL_CTX* ctx = nullptr;     // borrowed: the client context (verify mode, CAs, ALPN, versions)
  SSL_SESSION* session = nullptr;  // borrowed; offered for resumption when set
  bool early_data = true;     // send the GET as 0-RTT when `session` allows early data
  bool tcp_fastopen = true;   // TCP_FASTOPEN_CONNECT
  std::chrono::milliseconds timeout{10'000};
};

struct ExchangeResult {
  ProbeStage failed_at = ProbeStage::None;  // None: the whole response arrived
  std::string error;                        // what failed (OpenSSL's reason, errno text, "timed out")
  bool timed_out = false;
  PhaseTimes times;
  std::string peer;             // "127.0.0.1:8443" once connected
  SslPtr ssl;                   // the connection's SSL after a completed handshake (facts are read from it)
  SslSessionPtr session;        // the last session the server gave (NewSessionTicket or the handshake's)
  bool tfo_requested = false;   // TCP_FASTOPEN_CONNECT was accepted by the kernel
  bool tfo_used = false;        // TCP_INFO: the SYN carried data the server acknowledged (TCPI_OPT_SYN_DATA)
  bool early_data_sent = false;
  bool early_data_accepted = false;
  int http_status = 0;          // 0: no complete response head
  std::string http_version;     // "HTTP/1.1"
  uint64_t body_bytes = 0;
};

// Runs one exchange; never throws, always returns within `spec.timeout`
// (plus the time a cancelled DNS lookup takes to notice: getaddrinfo_a's
// thread is abandoned, never waited for).
ExchangeResult run_exchange(const ExchangeSpec& spec);

// The client context every exchange of one probe shares: TLS 1.2-1.3, ALPN
// http/1.1 only, the OCSP status_request extension, peer verification done
// and recorded but never fatal (SSL_VERIFY_NONE: the verdict is read from
// SSL_get_verify_result, so an expired or untrusted chain is still
// examined), trust from `ca_file` (PEM) or the system store, client-side
// session caching so NewSessionTickets are kept. `max_version`: 0 or
// TLS1_2_VERSION; `no_ticket`: SSL_OP_NO_TICKET (TLS 1.2 session IDs only).
// Errc::Io when `ca_file` cannot be loaded.
struct ClientContextOptions {
  std::string ca_file;
  int max_version = 0;
  bool no_ticket = false;
};
[[nodiscard]] Result<SslCtxPtr> make_client_context(const ClientContextOptions& o);

}  // namespace tlsfront::tools
