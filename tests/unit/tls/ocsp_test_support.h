// Shared by the OCSP unit tests: OCSP responses built with OpenSSL's API so
// every field (times, status, signer, CertID hash) is under the test's
// control; the test PKI's files come from support/test_pki.h.
#pragma once

#include <openssl/ocsp.h>
#include <openssl/pem.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "support/test_pki.h"  // kPki, load_cert, load_key
#include "util/openssl_ptr.h"

namespace tlsfront::tls::testing {

using Time = std::chrono::system_clock::time_point;

struct ResponseSpec {
  X509* leaf = nullptr;        // the CertID's certificate
  X509* issuer = nullptr;      // the CertID's issuer
  X509* signer = nullptr;      // signs the response
  EVP_PKEY* signer_key = nullptr;
  int status = V_OCSP_CERTSTATUS_GOOD;
  Time this_update{};
  std::optional<Time> next_update;
  std::optional<time_t> next_update_raw;  // overrides next_update (times a time_point cannot hold)
  const EVP_MD* id_md = nullptr;  // CertID hash; null = SHA-1
  bool include_signer = true;     // the signer certificate in the response
  int response_status = OCSP_RESPONSE_STATUS_SUCCESSFUL;
};

inline ASN1_GENERALIZEDTIME* gtime(Time t) {
  return ASN1_GENERALIZEDTIME_set(nullptr, std::chrono::system_clock::to_time_t(t));
}

// DER of an OCSPResponse per `s`; empty on failure.
inline std::vector<uint8_t> make_response(const ResponseSpec& s) {
  std::vector<uint8_t> out;
  OCSP_RESPONSE* resp = nullptr;
  if (s.response_status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    resp = OCSP_response_create(s.response_status, nullptr);
  } else {
    OcspBasicRespPtr bs(OCSP_BASICRESP_new());
    OCSP_CERTID* id = OCSP_cert_to_id(s.id_md ? s.id_md : EVP_sha1(), s.leaf, s.issuer);
    ASN1_GENERALIZEDTIME* tu = gtime(s.this_update);
    ASN1_GENERALIZEDTIME* nu = s.next_update_raw ? ASN1_GENERALIZEDTIME_set(nullptr, *s.next_update_raw)
                               : s.next_update   ? gtime(*s.next_update)
                                                 : nullptr;
    ASN1_GENERALIZEDTIME* rev = s.status == V_OCSP_CERTSTATUS_REVOKED ? gtime(s.this_update - std::chrono::hours(24)) : nullptr;
    bool ok = OCSP_basic_add1_status(bs.get(), id, s.status, s.status == V_OCSP_CERTSTATUS_REVOKED ? 1 : -1, rev,
                                     tu, nu) != nullptr;
    OCSP_CERTID_free(id);
    ASN1_GENERALIZEDTIME_free(tu);
    ASN1_GENERALIZEDTIME_free(nu);
    ASN1_GENERALIZEDTIME_free(rev);
    ok = ok && OCSP_basic_sign(bs.get(), s.signer, s.signer_key, EVP_sha256(), nullptr,
                               s.include_signer ? 0 : OCSP_NOCERTS) == 1;
    if (!ok) return out;
    resp = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, bs.get());
  }
  OcspResponsePtr r(resp);
  if (!r) return out;
  int n = i2d_OCSP_RESPONSE(r.get(), nullptr);
  if (n <= 0) return out;
  out.resize(static_cast<size_t>(n));
  unsigned char* p = out.data();
  i2d_OCSP_RESPONSE(r.get(), &p);
  return out;
}

}  // namespace tlsfront::tls::testing
