// TlsContext: owns one server SSL_CTX built from the validated [tls] config:
// protocol range (TLS 1.2/1.3 only), cipher lists, groups, the certificates
// of one name set (at most one per key type: OpenSSL picks ECDSA or RSA by
// the client's signature algorithms and cipher suites), renegotiation and
// compression off, ALPN selection, session ID context.
// Built off-loop by CertIndex (cert_index.h) for a Generation; shared
// read-only by every worker for the generation's lifetime (SSL_CTX is
// internally locked for sessions).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "tls/server_certificate.h"
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
  // An SSL_CTX serving `certs` (loaded by ServerCertificate::load; at most
  // one per key type, else Errc::Config), attached to the process-wide
  // `session_cache` and `tickets` (borrowed; both must outlive the context).
  // With null pointers OpenSSL's own per-SSL_CTX cache and ticket keys are
  // used (unit tests).
  // Session ID context (RFC 8446 §4.6.1, RFC 5246 §7.4.1.2; RFC 6066 §3):
  // SHA-256 over the sorted leaf digests and the sorted names, so a session
  // resumes only under the certificates and names it was made for, and every
  // node with the same certificates derives the same context (shared ticket
  // keys and Redis sessions keep working across a cluster), and the client
  // certificate policy (tls/client_auth.h) when one is configured, so no
  // session outlives a change of client_ca or crl.
  // Certificates from the store (ServerCertificate::from_store) leave their
  // leaves out of it (names and policy only, either derivation), so sessions
  // resume across a swap of the entry's certificate.
  // Every entry of `certs` must have the same client certificate settings.
  // Errors: Errc::Tls / Errc::Config with the config position named.
  // Thread affinity: any thread (control thread in practice).
  [[nodiscard]] static Result<std::unique_ptr<TlsContext>> create(const config::Tls& tls,
                                                                  std::span<const ServerCertificate* const> certs,
                                                                  SessionCache* session_cache = nullptr,
                                                                  TicketKeyStore* tickets = nullptr);

  // Loads every entry of tls.certificates and serves them from this one
  // context (a single-certificate config; unit tests).
  [[nodiscard]] static Result<std::unique_ptr<TlsContext>> create(const config::Tls& tls,
                                                                  SessionCache* session_cache = nullptr,
                                                                  TicketKeyStore* tickets = nullptr);

  SSL_CTX* get() const { return ctx_.get(); }

  // Borrowed leaf of the first certificate (never null after create()).
  X509* leaf() const { return leaf_; }

  // The digest of its client certificate policy (client_auth.h); "" when it
  // asks for no certificate.
  const std::string& client_policy() const { return client_policy_; }

 private:
  explicit TlsContext(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  SslCtxPtr ctx_;
  X509* leaf_ = nullptr;
  std::string client_policy_;
};

}  // namespace tlsfront::tls
