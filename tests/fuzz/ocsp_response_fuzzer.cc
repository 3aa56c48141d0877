// Fuzz target ocsp_response: the bytes are an OCSP response (DER) as it
// comes from a responder, a cache file or response_file, given to
// verify_ocsp_response() for a fixed leaf and its issuer (ocsp_pki/: an
// ECDSA root "Fuzz Root", a leaf with an OCSP URL and must-staple, and a
// delegated responder with id-kp-OCSPSigning) at a fixed time,
// 2027-01-01T00:00:00Z. The same bytes are also tried as a certificate
// (d2i_X509) for ocsp_responder_url(), has_must_staple() and find_issuer().
//
// Seeds (corpus/ocsp_response): responses from `openssl ocsp` for that leaf:
// good signed by the issuer (with and without certificates), by the
// delegated responder, revoked, unknown; valid until 2036. To make new ones,
// regenerate ocsp_pki/ and the seeds together (openssl req/x509 for the
// certificates; `openssl ocsp -issuer issuer.pem -cert leaf.pem -reqout`,
// then `openssl ocsp -index ... -rsigner ... -reqin ... -respout`).
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "tls/ocsp_response.h"

namespace {

X509* load(const char* name) {
  std::string path = std::string(TLSFRONT_FUZZ_DIR) + "/ocsp_pki/" + name;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    std::fprintf(stderr, "ocsp_response: cannot open %s\n", path.c_str());
    std::abort();
  }
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) std::abort();
  return cert;
}

struct Pki {
  X509* issuer = load("issuer.pem");
  X509* leaf = load("leaf.pem");
  STACK_OF(X509)* candidates = sk_X509_new_null();
  Pki() {
    sk_X509_push(candidates, load("responder.pem"));
    sk_X509_push(candidates, issuer);
    X509_up_ref(issuer);
  }
};

const Pki& pki() {
  static const Pki* p = new Pki();  // never destroyed
  return *p;
}

const tlsfront::tls::OcspTime kNow{std::chrono::seconds(1798761600)};  // 2027-01-01T00:00:00Z

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Pki& p = pki();
  auto staple = tlsfront::tls::verify_ocsp_response(std::span<const uint8_t>(data, size), p.leaf, p.issuer, kNow);
  if (staple.ok() && staple->der.size() != size) std::abort();  // what is stapled is what was verified

  const unsigned char* in = data;
  if (X509* cert = d2i_X509(nullptr, &in, static_cast<long>(size))) {
    (void)tlsfront::tls::ocsp_responder_url(cert);
    (void)tlsfront::tls::has_must_staple(cert);
    (void)tlsfront::tls::find_issuer(cert, p.candidates);
    X509_free(cert);
  }
  return 0;
}
