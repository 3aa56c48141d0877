// CertChain: turns the configured certificate file (a PEM bundle holding the
// leaf, intermediates, roots and unrelated or cross-signed certificates in
// any order) into what the server sends: the leaf followed by the path of
// intermediates up to, not including, a trust anchor (RFC 8446 §4.4.2,
// RFC 5246 §7.4.2: "each following certificate SHOULD directly certify the
// one preceding it"; the self-signed root MAY be omitted, and we always omit
// it). Links are found by issuer/subject name and AKID/SKID
// (X509_check_issued, RFC 5280 §4.2.1.1/§4.2.1.2) and confirmed by signature.
//
// Path rules, in order, at each step from the leaf:
//   1. The step is anchored when its issuer is a self-signed certificate in the
//      file or in the trust store (`trusted_ca`, else the system store).
//   2. An intermediate from the file that issued the current certificate is
//      appended (also past the anchor: a cross-certificate the operator chose
//      to send is kept and reported as such).
//   3. Not yet anchored: an intermediate from `issuers_dir` is appended.
//   4. Otherwise the path ends; unanchored means "incomplete chain", a
//      configuration error naming the missing issuer's subject DN.
// Self-signed certificates are never sent. Certificates not on the path are
// dropped and reported with the reason. The built path is then verified with
// X509_verify_cert against the trust store (purpose sslserver), so a private
// root must be named in `trusted_ca`. Non-self-signed certificates in the trust
// store do not anchor a path.
//
// Trust: the certificate file, `trusted_ca` and `issuers_dir` are operator
// input; nothing here comes from a peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

// One certificate that is sent, as reported.
struct ChainCertInfo {
  std::string subject;    // RFC 2253 DN, "CN=localhost"
  std::string issuer;     // RFC 2253 DN
  std::string key_type;   // "ECDSA P-256", "RSA 2048", "Ed25519"
  std::string not_after;  // RFC 3339 UTC, "2028-03-03T01:48:00Z"
  size_t der_bytes = 0;   // DER encoding, as it goes on the wire
  std::string note;       // "" or e.g. "from issuers_dir \"/etc/x/int.pem\""
};

// One certificate of the file that is not sent, and why.
struct DroppedCert {
  std::string subject;
  int position = 0;       // 1-based position in the certificate file
  std::string reason;
};

// What CertChain::build decided, for the start-up log and `--test`.
struct ChainReport {
  std::string certificate;            // the certificate file
  std::vector<ChainCertInfo> sent;    // leaf first, then the path in order
  std::vector<DroppedCert> dropped;
  std::string anchor;                 // "\"CN=root\" (trusted_ca \"/x/root.pem\")"
  std::vector<std::string> warnings;  // near expiry, key file mode, ...
  size_t total_der_bytes = 0;         // sum of sent[i].der_bytes

  // Human-readable lines (no trailing newline), one fact each: the summary,
  // each certificate sent, the anchor, each dropped certificate. Warnings are
  // not included (callers log them at warn level).
  std::vector<std::string> lines() const;
};

class CertChain {
 public:
  // Reads `cert.cert` and builds the chain for the private key `key`
  // (borrowed; selects the leaf as the certificate whose public key it
  // matches, so the file may be in any order; null: the first certificate is
  // the leaf). `now` is the time validity is checked at (leaf notBefore /
  // notAfter, the 14-day expiry warning, X509_verify_cert).
  // Uses `tls.trusted_ca` (PEM file; "" = system default paths) and
  // `tls.issuers_dir` (directory of *.pem / *.crt intermediates; "" = none).
  // Errors, all Errc::Config prefixed with the config position and setting
  // name of the key concerned (cert.cert_setting, ...): unreadable or non-PEM files; `key` matches no certificate
  // ("does not match"); leaf expired (names notAfter) or not yet valid (names
  // notBefore); incomplete chain (names the missing issuer DN); path that
  // does not verify against the trust store (OpenSSL's reason and depth).
  // Thread affinity: any thread (reads files; blocking).
  [[nodiscard]] static Result<CertChain> build(const config::Certificate& cert, const config::Tls& tls, EVP_PKEY* key,
                                               std::chrono::system_clock::time_point now);

  // As build(), from the PEM text `pem` (a store entry's chain; `cert.cert`
  // only names it in messages).
  [[nodiscard]] static Result<CertChain> build_from_pem(const config::Certificate& cert, const config::Tls& tls,
                                                        std::string_view pem, EVP_PKEY* key,
                                                        std::chrono::system_clock::time_point now);

  // Borrowed; valid for this object's lifetime. SSL_CTX_use_certificate and
  // SSL_CTX_set1_chain take their own references.
  X509* leaf() const { return leaf_.get(); }
  // The intermediates in sending order (may be empty); borrowed.
  STACK_OF(X509) * intermediates() const { return intermediates_.get(); }
  // The self-signed root the path ends at (from the certificate file or the
  // trust store), never sent; borrowed. It is the issuer an OCSP response for
  // a leaf issued directly by a root is checked against (RFC 6960 §4.1.1
  // CertID: the issuer's name and key). Null when the leaf itself is
  // self-signed.
  X509* anchor() const { return anchor_.get(); }
  const ChainReport& report() const { return report_; }

 private:
  CertChain() = default;
  [[nodiscard]] static Result<CertChain> build(const config::Certificate& cert, const config::Tls& tls, EVP_PKEY* key,
                                               std::chrono::system_clock::time_point now,
                                               std::optional<std::string_view> pem);
  X509Ptr leaf_;
  X509StackPtr intermediates_;
  X509Ptr anchor_;
  ChainReport report_;
};

// Days before notAfter from which a leaf draws a warning.
inline constexpr std::chrono::hours kLeafExpiryWarning{14 * 24};

}  // namespace tlsfront::tls
