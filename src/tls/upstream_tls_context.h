// UpstreamTlsContext: the client SSL_CTX of one [[upstream]] whose servers
// are spoken to over TLS (config::UpstreamTls; nginx's proxy_pass https://
// and proxy_ssl_*): the protocol range, the trust store and peer
// verification (on by default, unlike nginx), a client certificate when
// configured, ALPN ("h2" for protocol = "h2", else "http/1.1"; RFC 7301),
// renegotiation and compression off, and client-side session caching into
// a SessionSlot per connection target.
// Built off-loop by the control thread for a Generation (it reads files);
// shared read-only by every worker (SSL_new on a shared SSL_CTX is safe).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

// The session to resume with one server (RFC 8446 §2.2, RFC 5077): the last
// one the server gave this slot's owner (a worker's pool for that server).
// new_ssl() offers it; the session callback replaces it whenever the server
// issues a new one (a TLS 1.3 NewSessionTicket, a TLS 1.2 handshake).
// A slot belongs to one context at a time, the last whose new_ssl() used it:
// a session from another (the one a reload replaced, whose connection
// finished its handshake late) is neither kept nor offered, since resuming
// it would skip the certificate check the new context makes.
// Thread affinity: the owning worker only (a slot is never shared).
struct SessionSlot {
  SslSessionPtr session;
  uint64_t context = 0;  // the UpstreamTlsContext::id() the slot belongs to; 0: none yet
};

class UpstreamTlsContext {
 public:
  // An SSL_CTX for `upstream` (whose tls.enabled is true). Errors:
  // Errc::Config "<origin>: upstream[name].tls.<key>: ..." when a file
  // cannot be loaded (trusted_ca, certificate, key) or the key does not
  // match the certificate. Thread affinity: any thread.
  [[nodiscard]] static Result<std::shared_ptr<const UpstreamTlsContext>> create(const config::Upstream& upstream);

  // The SSL for one connection to `server` (client mode): SNI and the
  // verified name from server_name; without one, the certificate must
  // carry the server's IP address (RFC 6125 §1.7.2: IP SAN; "localhost"
  // was parsed to 127.0.0.1); with session_reuse, the slot's session
  // offered and new ones stored into `slot` (borrowed: it must outlive the
  // SSL or be unhooked with forget_slot first; null: none kept); a slot
  // that belonged to another context is emptied and now belongs to this one.
  // Errors: Errc::Tls.
  [[nodiscard]] Result<SslPtr> new_ssl(const config::Endpoint& server, SessionSlot* slot) const;
  // Stops `ssl` from storing sessions into its slot (the SSL is handed to a
  // tunnel that may outlive the slot's pool).
  static void forget_slot(SSL* ssl);

  // Whether ALPN asks for "h2" (protocol = "h2"): the server must select it.
  bool http2() const { return http2_; }
  SSL_CTX* get() const { return ctx_.get(); }
  const config::UpstreamTls& config() const { return cfg_; }
  // Unique in the process (never 0): which context a SessionSlot's session is from.
  uint64_t id() const { return id_; }

 private:
  UpstreamTlsContext(SslCtxPtr ctx, config::UpstreamTls cfg, bool http2, uint64_t id)
      : ctx_(std::move(ctx)), cfg_(std::move(cfg)), http2_(http2), id_(id) {}
  SslCtxPtr ctx_;
  config::UpstreamTls cfg_;
  bool http2_;
  uint64_t id_;
};

}  // namespace tlsfront::tls
