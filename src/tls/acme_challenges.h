// AcmeChallenges: a node's table of the ACME challenges it answers for the
// fleet (RFC 8555 §8.3 HTTP-01, RFC 8737 TLS-ALPN-01). The region's ACME
// manager publishes every pending challenge in Redis; each node's manager
// thread copies them here (control/acme_manager.h), so whichever node the
// CA's validation reaches answers — with no Redis call on a worker loop:
//
//   HTTP-01     GET /.well-known/acme-challenge/<token> on a cleartext
//               listener -> 200, the key authorization (data/http/admission.cc)
//   TLS-ALPN-01 a ClientHello whose ALPN list is exactly "acme-tls/1" for a
//               name with a challenge -> the handshake is made with that
//               name's self-signed acmeIdentifier certificate and ALPN
//               acme-tls/1 (tls/cert_index.cc), nothing else is served.
//
// Bounds: at most kMaxEntries of each kind (more are dropped, logged by the
// caller). Thread affinity: replace() on the control (ACME) thread; the
// lookups on any worker thread (a mutex, taken only on those two rare
// paths; active_alpn() is a relaxed atomic read for every TLS ClientHello).
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace tlsfront::tls {

inline constexpr std::string_view kAcmeTlsAlpn = "acme-tls/1";

class AcmeChallenges {
 public:
  static constexpr size_t kMaxEntries = 1000;

  struct AlpnAnswer {
    std::string key_authorization;
    std::string cert_pem, key_pem;  // tls_alpn01_certificate()'s
  };

  // The whole table: HTTP-01 token -> key authorization; TLS-ALPN-01 name ->
  // its answer. An ALPN entry whose key authorization is unchanged keeps its
  // SSL_CTX. Errors (a PEM that does not load): Errc::Tls; the entry is
  // left out, the rest taken.
  Status replace(std::map<std::string, std::string> http01, const std::map<std::string, AlpnAnswer>& alpn01);

  // The key authorization for `token`, if published.
  std::optional<std::string> http01(std::string_view token) const;
  // True while some TLS-ALPN-01 challenge is published.
  bool active_alpn() const { return alpn_count_.load(std::memory_order_relaxed) != 0; }
  // The context answering `name`'s TLS-ALPN-01 challenge (null: none); the
  // caller's SSL_set_SSL_CTX takes its own reference.
  std::shared_ptr<SSL_CTX> alpn01(std::string_view name) const;
  // The key authorization of `name`'s ALPN entry ("" = none): lets the
  // caller skip making a certificate it already published.
  std::string alpn_key_authorization(std::string_view name) const;

 private:
  struct Alpn {
    std::string key_authorization;
    std::shared_ptr<SSL_CTX> ctx;
  };
  mutable std::mutex mu_;
  std::map<std::string, std::string, std::less<>> http01_;
  std::map<std::string, Alpn, std::less<>> alpn01_;
  std::atomic<size_t> alpn_count_{0};
};

// True when the ClientHello of `ssl` offers exactly one ALPN protocol, and
// it is acme-tls/1 (RFC 8737 §3: the validation handshake offers no other).
bool offers_only_acme_tls(SSL* ssl);

}  // namespace tlsfront::tls
