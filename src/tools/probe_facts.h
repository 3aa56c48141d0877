// The TLS facts `tlsfront probe` reads from one completed handshake: the
// negotiated parameters, the certificate chain exactly as the server sent it,
// the verification verdict (OpenSSL's chain check against the trust store;
// the host name is judged separately, RFC 6125 / RFC 9525 via
// X509_check_host), and the stapled OCSP response (RFC 6066 §8), verified as
// tlsfront verifies its own staples (tls/ocsp_response.h).
// Thread affinity: none (pure functions of a finished SSL and the time).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "util/openssl_ptr.h"

namespace tlsfront::tools {

using WallTime = std::chrono::system_clock::time_point;

struct SentCertificate {
  std::string subject;  // RFC 2253 ("CN=localhost")
  std::string issuer;
  size_t der_bytes = 0;
  bool self_signed = false;  // subject == issuer and its own key verifies it: a root
  WallTime not_after{};
};

struct StapleFacts {
  bool present = false;
  bool verified = false;     // passed tls::verify_ocsp_response against the leaf's issuer
  std::string status;        // "good", "revoked", "unknown" when verified
  std::string error;         // why it did not verify (present && !verified)
  size_t der_bytes = 0;
  WallTime this_update{}, next_update{}, produced_at{};
  std::chrono::seconds age{};   // now - thisUpdate
  std::chrono::seconds left{};  // nextUpdate - now
};

struct TlsFacts {
  std::string version;  // "TLSv1.3"
  std::string cipher;   // "TLS_AES_256_GCM_SHA384"
  std::string group;    // "X25519"; "" when none was negotiated (RSA key exchange)
  std::string alpn;     // "" when the server chose none
  bool resumed = false;
  std::vector<SentCertificate> chain;  // as sent, leaf first
  size_t chain_bytes = 0;
  bool root_sent = false;              // the last certificate sent is self-signed
  // The verified path's length (leaf to trust anchor) when verification
  // passed, else 0; longer than the sent chain + 1 (with no root sent)
  // means certificates came from the local trust store.
  size_t verified_path = 0;
  long verify_code = 0;                // X509_V_OK, X509_V_ERR_CERT_HAS_EXPIRED, ...
  std::string verify_error;            // X509_verify_cert_error_string; "" when ok
  bool leaf_covers_host = false;       // SNI match: the leaf's SAN (or CN without SAN) covers the host
  std::optional<int> leaf_days_left;   // whole days to notAfter (negative: expired)
  WallTime leaf_not_after{};
  StapleFacts staple;
  // TLS 1.3 tickets: the server's max_early_data_size (0: no 0-RTT offered).
  uint32_t max_early_data = 0;
};

// Facts of the finished handshake of `ssl` (borrowed) for `host` (a name or
// an IP literal) at `now`. `session`, when given, is the session the server
// issued (for max_early_data).
TlsFacts gather_facts(SSL* ssl, SSL_SESSION* session, const std::string& host, bool host_is_ip, WallTime now);

// RFC 3339 UTC, "2026-12-01T15:00:00Z".
std::string wall_time_string(WallTime t);

}  // namespace tlsfront::tools
