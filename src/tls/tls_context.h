// TlsContext: owns one server SSL_CTX built from the validated [tls] config:
// protocol range (TLS 1.2/1.3 only), cipher lists, groups, certificate chain and
// key, renegotiation and compression off, ALPN selection, session ID context.
// Built off-loop by Generation::create; shared read-only by every worker for the
// generation's lifetime (SSL_CTX is internally locked for sessions).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

class SessionCache;
class TicketKeyStore;

class TlsContext {
 public:
  // Loads the certificate chain and key named in `tls`, checks they match,
  // and attaches the process-wide `session_cache` and `tickets` (borrowed;
  // both must outlive the context). With null pointers OpenSSL's own
  // per-SSL_CTX cache and ticket keys are used (unit tests).
  // Errors: Errc::Tls / Errc::Config with the file and config position named.
  // Thread affinity: any thread (control thread in practice).
  [[nodiscard]] static Result<std::unique_ptr<TlsContext>> create(const config::Tls& tls,
                                                                  SessionCache* session_cache = nullptr,
                                                                  TicketKeyStore* tickets = nullptr);

  SSL_CTX* get() const { return ctx_.get(); }

  // Borrowed leaf certificate (never null after create()).
  X509* leaf() const { return leaf_; }

 private:
  explicit TlsContext(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  SslCtxPtr ctx_;
  X509* leaf_ = nullptr;
};

}  // namespace tlsfront::tls
