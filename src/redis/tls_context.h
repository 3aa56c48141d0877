// redis::TlsContext: the client SSL_CTX of TLS to one Redis (config::RedisTls,
// the redis_tls key of every table with a Redis): TLS 1.2 or 1.3 (protocols),
// the server certificate verified against trusted_ca (else OpenSSL's default
// store) unless verify = false, the name checked (server_name, else the
// address's IP), a client certificate when configured (Redis'
// tls-auth-clients), renegotiation and compression off, no session reuse
// (one long-lived connection per loop).
// Built where the Redis user reads its password file (files are read here);
// shared read-only by the connections it makes (SSL_new on a shared SSL_CTX is safe).
// Thread affinity: any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::redis {

class TlsContext {
 public:
  // nullptr when !cfg.enabled. `setting` names the key in errors
  // ("tls.session_cache.redis_tls"). Errors: Errc::Config "<origin>:
  // <setting>.<key>: cannot load <path> (<OpenSSL's reasons>)" (trusted_ca,
  // certificate, key) or "<setting>.key: does not match the certificate <path>".
  [[nodiscard]] static Result<std::shared_ptr<const TlsContext>> create(const config::RedisTls& cfg,
                                                                        std::string_view setting);

  // The SSL of one connection to `server` (client mode; SNI unless the name
  // is an IP address). Errors: Errc::Tls.
  [[nodiscard]] Result<SslPtr> new_ssl(const config::Endpoint& server) const;

  // Why the handshake of `ssl` failed (`failed`: tls::TlsStream::handshake's
  // error), for the log: "certificate verify failed: <reason> (expected
  // <name>)" when the server's certificate was refused, else the stream's
  // "TLS handshake failed: <OpenSSL's reasons>".
  static std::string handshake_error(SSL* ssl, const Error& failed);

  const config::RedisTls& config() const { return cfg_; }

 private:
  TlsContext(SslCtxPtr ctx, config::RedisTls cfg) : ctx_(std::move(ctx)), cfg_(std::move(cfg)) {}
  SslCtxPtr ctx_;
  config::RedisTls cfg_;
};

// The TLS of a table's Redis: TlsContext::create(table.redis_tls, "<setting>.redis_tls").
template <typename T>
[[nodiscard]] Result<std::shared_ptr<const TlsContext>> tls_of(const T& table, std::string_view setting) {
  return TlsContext::create(table.redis_tls, std::string(setting) + ".redis_tls");
}

}  // namespace tlsfront::redis
