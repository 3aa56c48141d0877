// UpstreamTls: the client side of TLS on one connection to an upstream
// server (an UpstreamConnection, an H2Session, or the UpstreamTunnel an
// Upgrade leaves behind): a TlsStream in connect state over the owner's
// socket. The owner reads ciphertext from its socket into feed(), takes
// plaintext from read(), and writes through send(); nothing here touches a
// socket or a timer (the owner's connect_timeout covers the handshake, as
// nginx's proxy_connect_timeout does).
//
// The handshake verifies the server as its UpstreamTlsContext says
// (certificate chain, name or IP address) and, for protocol = "h2", that
// the server selected ALPN "h2" (RFC 9113 §3.2). A failure is
// Errc::Upstream naming why ("certificate verify failed: ...").
// Thread affinity: owning worker only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "data/upstream/upstream_handler.h"
#include "metrics/counters.h"
#include "tls/tls_stream.h"
#include "tls/upstream_tls_context.h"
#include "util/result.h"
#include "util/stream_writer.h"

namespace tlsfront::upstream {

// What one pool's connections need to speak TLS to its server. Owned by the
// UpstreamPool (which outlives its connections); `ctx` is null for a
// cleartext upstream.
struct TlsTarget {
  std::shared_ptr<const tls::UpstreamTlsContext> ctx;
  config::Endpoint server;
  tls::SessionSlot session;                             // the last session the server gave this worker
  metrics::UpstreamServerCounters* counters = nullptr;  // handshakes counted here (null: none)
};

class UpstreamTls {
 public:
  // Starts the handshake towards `target` (ctx set): the ClientHello waits
  // in the output, for send(). Errors: Errc::Upstream.
  [[nodiscard]] static Result<std::unique_ptr<UpstreamTls>> start(TlsTarget& target);

  // Queues ciphertext read from the socket and, while handshaking, advances
  // the handshake. True once it is complete (now or before). Errors:
  // Errc::Upstream: the handshake failed (why in the message) or the server
  // did not select "h2".
  [[nodiscard]] Result<bool> feed(std::string_view ciphertext);
  bool handshake_done() const { return stream_.handshake_done(); }
  // Whether this connection was made with `ctx` (false for null): a reload
  // gives the pool a new context, and connections of the old one retire.
  bool made_by(const tls::UpstreamTlsContext* ctx) const {
    return ctx != nullptr && SSL_get_SSL_CTX(stream_.ssl()) == ctx->get();
  }
  // Whether the handshake resumed the slot's session.
  bool resumed() const { return SSL_session_reused(stream_.ssl()) == 1; }

  // Up to `len` plaintext octets decrypted from what was fed; 0 when more
  // ciphertext is needed (handshake messages such as session tickets are
  // consumed on the way). Errors: Errc::Closed on the server's
  // close_notify; Errc::Upstream on a TLS error; Errc::Protocol when the
  // server passed the bound on post-handshake messages (TlsStream's:
  // KeyUpdates, HelloRequests, session tickets without application data
  // between, or too fast), counted in the server's `floods` and logged:
  // flooded() is then true, the owner fails its exchange with
  // invalid_response and closes, and close_notify_now() writes the
  // alert TlsStream left.
  [[nodiscard]] Result<size_t> read(char* buf, size_t len);
  bool flooded() const { return stream_.post_handshake_flood(); }

  // Encrypts `plaintext` (left empty, its capacity kept) once the handshake
  // is done, and writes the records, with anything the TLS layer queued
  // (the handshake's flights, alerts), through `writer`. Returns 0 or a
  // UV_E* code (UV_EPROTO when encryption failed).
  int send(StreamWriter& writer, std::string& plaintext);
  // Writes what the TLS layer queued by itself (a handshake flight, an
  // answer to a post-handshake message). Returns 0 or a UV_E* code.
  int flush(StreamWriter& writer) { return stream_.pending_output() == 0 ? 0 : writer.send_from(stream_.output()); }
  // flush() after a read, counting what the read made the TLS layer answer
  // by itself (a no_renegotiation alert per TLS 1.2 HelloRequest, a
  // KeyUpdate's update) since `writer` last held under kWriteLowWatermark.
  // `flooded` is set when more than kWriteHighWatermark of such answers
  // wait unread by the server: one sending post-handshake messages without
  // reading ours, which the owner stops reading from or drops, rather than
  // queue its answers without bound. Returns 0 or a UV_E* code.
  int answer(StreamWriter& writer, bool& flooded) {
    if (writer.buffered_bytes() < kWriteLowWatermark) answered_ = 0;
    answered_ += stream_.pending_output();
    const int rc = flush(writer);
    flooded = answered_ > kWriteHighWatermark && writer.buffered_bytes() > kWriteHighWatermark;
    return rc;
  }
  // What an owner that drops a flooding server says (Errc::Protocol).
  static Error flood_error();

  // Queues a close_notify (RFC 8446 §6.1) for the next send() or flush():
  // the end of what this side sends. Idempotent.
  void close_notify() { stream_.shutdown(); }
  // For an owner about to close its socket: a close_notify written now if
  // nothing waits before it in `writer` and the socket takes it (the
  // owner's close cancels what it does not), so the server can tell our
  // end from a truncation, as nginx does when it closes an upstream
  // connection. After a failed handshake, a TLS error or a flood: the
  // fatal alert OpenSSL queued instead, so the server learns why (RFC 8446
  // §6.2) rather than seeing an unexpected EOF.
  void close_notify_now(StreamWriter& writer) {
    if (!writer.idle()) return;
    if (stream_.phase() == tls::TlsStream::Phase::Failed) {
      // The fatal alert OpenSSL queued instead (RFC 8446 §6.2): a failed
      // handshake's (bad_certificate, unknown_ca, certificate_expired, ...),
      // a TLS error's, a flood's.
      (void)flush(writer);
      return;
    }
    if (!stream_.handshake_done()) return;
    close_notify();
    (void)flush(writer);
  }
  // Input fed but not yet read; output queued but not yet written (octets).
  size_t pending_input() const { return stream_.pending_input(); }
  size_t pending_output() const { return stream_.pending_output(); }
  // Unhooks the session slot (a tunnel may outlive the pool that owns it).
  void forget_slot() { tls::UpstreamTlsContext::forget_slot(stream_.ssl()); }

 private:
  UpstreamTls(tls::TlsStream stream, bool http2, metrics::UpstreamServerCounters* counters)
      : stream_(std::move(stream)), http2_(http2), counters_(counters) {}
  // The handshake failed with `failed` (TlsStream's): why, in words.
  Error handshake_error(const Error& failed) const;

  tls::TlsStream stream_;
  bool http2_;
  metrics::UpstreamServerCounters* counters_;
  size_t answered_ = 0;  // octets answer() queued since the writer last drained
  std::string name_;     // what the certificate had to carry, for errors
};

// Writes `bytes` (left empty) through `writer`: encrypted by `tls` when it
// is set, as they are otherwise. Returns 0 or a UV_E* code.
inline int send_bytes(StreamWriter& writer, UpstreamTls* tls, std::string& bytes) {
  return tls ? tls->send(writer, bytes) : writer.send_from(bytes);
}

}  // namespace tlsfront::upstream
