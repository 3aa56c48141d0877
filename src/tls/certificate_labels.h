// CertificateLabels: how /metrics names one served certificate, the same
// for every series about it (OCSP staples, expiry): its subject (RFC 2253),
// its key type ("ecdsa", "rsa", ...) and the first 8 hex digits of the
// SHA-256 of its DER (the subject alone repeats for an ECDSA + RSA pair).
// Thread affinity: none (values).
#pragma once

#include <openssl/x509.h>

#include <string>

namespace tlsfront::tls {

struct CertificateLabels {
  std::string subject;
  std::string key_type;
  std::string sha256;  // 8 hex digits

  static CertificateLabels of(X509* leaf);
};

// The SHA-256 of `x`'s DER, lowercase hex; "unknown" on failure.
std::string sha256_hex(X509* x);

}  // namespace tlsfront::tls
