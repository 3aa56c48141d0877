// OCSP requests and responses for stapling (RFC 6960, RFC 6066 §8): the
// responder URL of a leaf, the request tlsfront sends for it, and the checks
// a response must pass before it may be stapled.
//
// Trust warning: a response comes from the network (or from a cache file or
// an operator's file) and is hostile until verify_ocsp_response() accepts it.
// Only the bytes it accepted are ever stapled.
// Thread affinity: every function here is pure and safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

using OcspTime = std::chrono::system_clock::time_point;

// thisUpdate may be at most this far ahead of our clock (responder clock skew).
inline constexpr std::chrono::seconds kOcspClockSkew{300};

// The first http:// OCSP responder URL of the leaf's Authority Information
// Access extension (RFC 5280 §4.2.2.1, X509_get1_ocsp), or "" when it has none
// (never an error: many CAs run no OCSP responder any more). https:// URLs
// are skipped.
std::string ocsp_responder_url(X509* leaf);

// True when `leaf` carries the TLS Feature extension (RFC 7633) with
// status_request (5): "OCSP must-staple".
bool has_must_staple(X509* leaf);

// True when `candidate` issued `leaf` (both borrowed; X509_check_issued:
// name, AKID/SKID, keyUsage; then the signature).
bool is_issuer(X509* candidate, X509* leaf);

// The first certificate in `candidates` (borrowed; may be null) that issued
// `leaf` (is_issuer). Borrowed; null when none did.
X509* find_issuer(X509* leaf, STACK_OF(X509) * candidates);

// DER of an OCSPRequest for `leaf` issued by `issuer` (both borrowed): one
// CertID, SHA-1 hashes (RFC 5019 §2.1.1), no nonce (responses stay cacheable),
// unsigned. Errors: Errc::Tls.
[[nodiscard]] Result<std::vector<uint8_t>> make_ocsp_request(X509* leaf, X509* issuer);

// The URL and method for sending `request_der` to `responder_url`
// (RFC 6960 A.1): GET "<url>/<url-encoded base64 of the DER>" when that
// base64 is under 255 bytes (RFC 5019 §5), else POST of the DER to the URL.
struct OcspHttpRequest {
  std::string url;
  bool post = false;
  std::vector<uint8_t> body;  // POST only: the DER request
};
OcspHttpRequest make_ocsp_http_request(const std::string& responder_url, const std::vector<uint8_t>& request_der);

enum class OcspCertStatus { Good, Revoked, Unknown };

// A response that passed verify_ocsp_response(). Immutable once built; the
// stapler publishes it to workers as shared_ptr<const OcspStaple>.
struct OcspStaple {
  std::vector<uint8_t> der;  // the whole OCSPResponse, exactly as received: what is stapled
  OcspCertStatus status = OcspCertStatus::Unknown;
  OcspTime this_update{};
  OcspTime next_update{};    // always present (a response without one is rejected)
  OcspTime produced_at{};
  OcspTime revoked_at{};     // status == Revoked only
  int revocation_reason = -1;  // CRLReason (RFC 5280 §5.3.1); -1 = none given
};

// Parses the DER OCSPResponse `der` and checks everything but the status,
// for `leaf` issued by `issuer` (borrowed), at time `now`:
//   - responseStatus successful, a BasicOCSPResponse, no trailing bytes
//     (RFC 6960 §4.2.1);
//   - signed by `issuer` itself, or by a delegated responder certificate
//     carried in the response, issued by `issuer` and holding
//     id-kp-OCSPSigning (RFC 6960 §4.2.2.2), valid at `now`
//     (OCSP_basic_verify with `issuer` as the only, partial-chain trust anchor;
//     OCSP_NOEXPLICIT so no other trust setting can make a signer acceptable);
//   - a SingleResponse whose CertID matches `leaf`/`issuer` with the hash
//     algorithm the responder chose (OCSP_id_cmp);
//   - thisUpdate <= now + kOcspClockSkew, nextUpdate present and > now
//     (RFC 6960 §4.2.2.1; an expired response is never stapled).
// The certificate status (good, revoked, unknown) is returned, not judged:
// the caller staples only Good.
// Errors: Errc::Protocol (malformed, not successful, no matching CertID, bad
// times), Errc::Timeout (a response that was valid, expired: nextUpdate <=
// now), Errc::Tls (signature or signer checks failed; OpenSSL's reason in the
// detail). Never throws; `der` may be any bytes.
[[nodiscard]] Result<OcspStaple> verify_ocsp_response(std::span<const uint8_t> der, X509* leaf, X509* issuer,
                                                       OcspTime now);

// "good", "revoked", "unknown".
const char* to_string(OcspCertStatus status);

// RFC 3339 UTC, "2026-11-30T03:00:00Z".
std::string ocsp_time_string(OcspTime t);

}  // namespace tlsfront::tls
