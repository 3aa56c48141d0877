#include "tls/ocsp_response.h"

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <memory>
#include <optional>

#include <fmt/core.h>

#include "tls/openssl_error.h"

namespace tlsfront::tls {
namespace {

using OcspRequestPtr = std::unique_ptr<OCSP_REQUEST, detail::OpenSslDeleter<OCSP_REQUEST, OCSP_REQUEST_free>>;
using OcspCertIdPtr = std::unique_ptr<OCSP_CERTID, detail::OpenSslDeleter<OCSP_CERTID, OCSP_CERTID_free>>;
using TlsFeaturePtr = std::unique_ptr<TLS_FEATURE, detail::OpenSslDeleter<TLS_FEATURE, TLS_FEATURE_free>>;

constexpr long kTlsFeatureStatusRequest = 5;  // RFC 7633 §6: TLS extension status_request
constexpr size_t kMaxGetBase64 = 255;         // RFC 5019 §5

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// Times past 2200 are treated as malformed: system_clock counts nanoseconds
// in 64 bits (about ±292 years), and no real response lives that long.
std::optional<OcspTime> to_time(const ASN1_GENERALIZEDTIME* t) {
  constexpr std::time_t kMaxTime = 7258118400;  // 2200-01-01T00:00:00Z
  std::tm tm{};
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return std::nullopt;
  const std::time_t v = timegm(&tm);
  if (v < 0 || v >= kMaxTime) return std::nullopt;
  return std::chrono::system_clock::from_time_t(v);
}

Error protocol(std::string detail) { return make_error(Errc::Protocol, std::move(detail)); }

}  // namespace

std::string ocsp_responder_url(X509* leaf) {
  STACK_OF(OPENSSL_STRING)* urls = X509_get1_ocsp(leaf);
  std::string out;
  for (int i = 0; urls && i < sk_OPENSSL_STRING_num(urls); ++i) {
    const char* u = sk_OPENSSL_STRING_value(urls, i);
    if (u && starts_with_nocase(u, "http://")) {
      out = u;
      break;
    }
  }
  X509_email_free(urls);
  return out;
}

bool has_must_staple(X509* leaf) {
  TlsFeaturePtr features(static_cast<TLS_FEATURE*>(X509_get_ext_d2i(leaf, NID_tlsfeature, nullptr, nullptr)));
  ERR_clear_error();
  if (!features) return false;
  for (int i = 0; i < sk_ASN1_INTEGER_num(features.get()); ++i) {
    if (ASN1_INTEGER_get(sk_ASN1_INTEGER_value(features.get(), i)) == kTlsFeatureStatusRequest) return true;
  }
  return false;
}

bool is_issuer(X509* candidate, X509* leaf) {
  const bool ok =
      X509_check_issued(candidate, leaf) == X509_V_OK && X509_verify(leaf, X509_get0_pubkey(candidate)) == 1;
  ERR_clear_error();
  return ok;
}

X509* find_issuer(X509* leaf, STACK_OF(X509) * candidates) {
  for (int i = 0; candidates && i < sk_X509_num(candidates); ++i) {
    X509* c = sk_X509_value(candidates, i);
    if (is_issuer(c, leaf)) return c;
  }
  return nullptr;
}

Result<std::vector<uint8_t>> make_ocsp_request(X509* leaf, X509* issuer) {
  ERR_clear_error();
  OcspRequestPtr req(OCSP_REQUEST_new());
  if (!req) return openssl_error(Errc::Tls, "OCSP_REQUEST_new");
  OcspCertIdPtr id(OCSP_cert_to_id(EVP_sha1(), leaf, issuer));
  if (!id) return openssl_error(Errc::Tls, "OCSP_cert_to_id");
  if (!OCSP_request_add0_id(req.get(), id.get())) return openssl_error(Errc::Tls, "OCSP_request_add0_id");
  id.release();  // owned by the request now
  const int n = i2d_OCSP_REQUEST(req.get(), nullptr);
  if (n <= 0) return openssl_error(Errc::Tls, "i2d_OCSP_REQUEST");
  std::vector<uint8_t> der(static_cast<size_t>(n));
  unsigned char* p = der.data();
  if (i2d_OCSP_REQUEST(req.get(), &p) != n) return openssl_error(Errc::Tls, "i2d_OCSP_REQUEST");
  return der;
}

OcspHttpRequest make_ocsp_http_request(const std::string& responder_url, const std::vector<uint8_t>& der) {
  std::string b64(4 * ((der.size() + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()), der.data(), static_cast<int>(der.size()));
  b64.resize(static_cast<size_t>(std::max(len, 0)));
  if (b64.size() >= kMaxGetBase64) return OcspHttpRequest{responder_url, true, der};
  std::string url = responder_url;
  if (url.empty() || url.back() != '/') url += '/';
  for (char c : b64) {  // RFC 3986 percent-encoding of the base64 alphabet's reserved characters
    switch (c) {
      case '+': url += "%2B"; break;
      case '/': url += "%2F"; break;
      case '=': url += "%3D"; break;
      default: url += c;
    }
  }
  return OcspHttpRequest{std::move(url), false, {}};
}

Result<OcspStaple> verify_ocsp_response(std::span<const uint8_t> der, X509* leaf, X509* issuer, OcspTime now) {
  ERR_clear_error();
  if (der.empty()) return protocol("empty OCSP response");
  const unsigned char* p = der.data();
  OcspResponsePtr resp(d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())));
  if (!resp) {
    drain_openssl_errors();
    return protocol(fmt::format("not a DER OCSPResponse ({} bytes)", der.size()));
  }
  if (p != der.data() + der.size()) return protocol("trailing bytes after the OCSPResponse");
  const int rs = OCSP_response_status(resp.get());
  if (rs != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    return protocol(fmt::format("responder answered \"{}\" ({})", OCSP_response_status_str(rs), rs));
  }
  OcspBasicRespPtr basic(OCSP_response_get1_basic(resp.get()));
  if (!basic) {
    drain_openssl_errors();
    return protocol("not a basic OCSP response");
  }

  // Signer: the issuer itself or a delegated responder it issued
  // (RFC 6960 §4.2.2.2). The issuer is the only trust anchor (partial chain).
  X509StorePtr store(X509_STORE_new());
  X509StackPtr certs(sk_X509_new_null());
  if (!store || !certs || X509_STORE_add_cert(store.get(), issuer) != 1 || !X509_add_cert(certs.get(), issuer, X509_ADD_FLAG_UP_REF)) {
    return openssl_error(Errc::Tls, "setting up OCSP verification");
  }
  X509_STORE_set_flags(store.get(), X509_V_FLAG_PARTIAL_CHAIN);
  X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store.get()), std::chrono::system_clock::to_time_t(now));
  if (OCSP_basic_verify(basic.get(), certs.get(), store.get(), OCSP_NOEXPLICIT) != 1) {
    return openssl_error(Errc::Tls, "OCSP response signature or signer rejected (not the issuer nor a delegated "
                                    "responder it issued)");
  }

  // The SingleResponse for our certificate, under the responder's hash algorithm.
  const OCSP_SINGLERESP* single = nullptr;
  for (int i = 0; i < OCSP_resp_count(basic.get()) && !single; ++i) {
    OCSP_SINGLERESP* s = OCSP_resp_get0(basic.get(), i);
    const OCSP_CERTID* cid = OCSP_SINGLERESP_get0_id(s);
    ASN1_OBJECT* md_oid = nullptr;
    if (!OCSP_id_get0_info(nullptr, &md_oid, nullptr, nullptr, const_cast<OCSP_CERTID*>(cid))) continue;
    const EVP_MD* md = EVP_get_digestbyobj(md_oid);
    if (!md) continue;
    OcspCertIdPtr ours(OCSP_cert_to_id(md, leaf, issuer));
    if (ours && OCSP_id_cmp(ours.get(), cid) == 0) single = s;
  }
  ERR_clear_error();
  if (!single) return protocol("no SingleResponse matches the certificate (CertID mismatch)");

  int reason = -1;
  ASN1_GENERALIZEDTIME *revoked = nullptr, *this_upd = nullptr, *next_upd = nullptr;
  const int status = OCSP_single_get0_status(const_cast<OCSP_SINGLERESP*>(single), &reason, &revoked, &this_upd, &next_upd);
  OcspStaple out;
  out.status = status == V_OCSP_CERTSTATUS_GOOD      ? OcspCertStatus::Good
               : status == V_OCSP_CERTSTATUS_REVOKED ? OcspCertStatus::Revoked
                                                     : OcspCertStatus::Unknown;
  auto this_update = to_time(this_upd);
  if (!this_update) return protocol("thisUpdate missing or malformed");
  if (!next_upd) return protocol("no nextUpdate (a response without one cannot be stapled safely)");
  auto next_update = to_time(next_upd);
  if (!next_update) return protocol("nextUpdate malformed");
  if (*this_update > now + kOcspClockSkew) {
    return protocol("thisUpdate " + ocsp_time_string(*this_update) + " is in the future");
  }
  if (*next_update <= *this_update) return protocol("nextUpdate is not after thisUpdate");
  if (*next_update <= now) {
    return make_error(Errc::Timeout, "expired: nextUpdate " + ocsp_time_string(*next_update));
  }
  out.this_update = *this_update;
  out.next_update = *next_update;
  out.produced_at = to_time(OCSP_resp_get0_produced_at(basic.get())).value_or(*this_update);
  if (out.status == OcspCertStatus::Revoked) {
    out.revoked_at = to_time(revoked).value_or(OcspTime{});
    out.revocation_reason = reason;
  }
  out.der.assign(der.begin(), der.end());
  return out;
}

const char* to_string(OcspCertStatus status) {
  switch (status) {
    case OcspCertStatus::Good: return "good";
    case OcspCertStatus::Revoked: return "revoked";
    case OcspCertStatus::Unknown: return "unknown";
  }
  return "unknown";
}

std::string ocsp_time_string(OcspTime t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tlsfront::tls
