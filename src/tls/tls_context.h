// TlsContext: owns one server SSL_CTX built from the validated [tls] config:
// protocol range (TLS 1.2/1.3 only), cipher lists, groups, the certificate
// chain built by CertChain (cert_chain.h) and the key, renegotiation and
// compression off, ALPN selection, session ID context.
// Built off-loop by Generation::create; shared read-only by every worker for the
// generation's lifetime (SSL_CTX is internally locked for sessions).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "tls/cert_chain.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

class SessionCache;
class TicketKeyStore;

// Sets the ALPN protocols ("h2", "http/1.1") `ssl` accepts, in server
// preference order (RFC 7301 §3.2); without a call, {"h2", "http/1.1"}.
// `protocols` is borrowed and must outlive `ssl` (it lives in the connection's
// Generation). False when OpenSSL cannot store it. Owning worker only.
bool set_alpn_protocols(SSL* ssl, const std::vector<std::string>* protocols);

class TlsContext {
 public:
  // Loads the key named in `tls`, builds the chain from `tls.certificate`
  // with CertChain (leaf + ordered intermediates; see cert_chain.h), checks
  // key and leaf match, and attaches the process-wide `session_cache` and
  // `tickets` (borrowed; both must outlive the context). With null pointers OpenSSL's own
  // per-SSL_CTX cache and ticket keys are used (unit tests).
  // Errors: Errc::Tls / Errc::Config with the file and config position named
  // (CertChain::build's errors included).
  // Thread affinity: any thread (control thread in practice).
  [[nodiscard]] static Result<std::unique_ptr<TlsContext>> create(const config::Tls& tls,
                                                                  SessionCache* session_cache = nullptr,
                                                                  TicketKeyStore* tickets = nullptr);

  SSL_CTX* get() const { return ctx_.get(); }

  // Borrowed leaf certificate (never null after create()).
  X509* leaf() const { return leaf_; }

  // What was sent, dropped and why, plus warnings (leaf near expiry, key file
  // readable by group/others), for the start-up log and `--test`.
  const ChainReport& chain_report() const { return chain_report_; }

 private:
  explicit TlsContext(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  SslCtxPtr ctx_;
  X509* leaf_ = nullptr;
  ChainReport chain_report_;
};

}  // namespace tlsfront::tls
