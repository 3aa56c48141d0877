#include "control/acme/renewal_info.h"

#include <openssl/asn1.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <memory>

#include "control/acme/jws.h"
#include "util/openssl_ptr.h"

namespace tlsfront::acme {
namespace {

namespace dom = simdjson::dom;
using std::chrono::seconds;

SystemTime from_tm(const struct tm& t) { return std::chrono::system_clock::from_time_t(timegm(const_cast<tm*>(&t))); }

// `n` decimal digits at text[at]; -1 when not all digits.
int digits(std::string_view text, size_t at, size_t n) {
  if (at + n > text.size()) return -1;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

SystemTime civil(int y, int mo, int d, int h, int mi, int s) {
  const std::chrono::sys_days day = std::chrono::year{y} / mo / d;
  return SystemTime(day) + std::chrono::hours(h) + std::chrono::minutes(mi) + seconds(s);
}

// Years past kMaxYear are refused: absurd for a renewal, and past what the
// system clock's nanoseconds hold (2262).
constexpr int kMaxYear = 2200;

bool valid_date(int y, int mo, int d) {
  if (y < 1970 || y > kMaxYear || mo < 1 || mo > 12 || d < 1) return false;
  return std::chrono::year_month_day(std::chrono::year{y}, std::chrono::month(static_cast<unsigned>(mo)),
                                     std::chrono::day(static_cast<unsigned>(d)))
      .ok();
}

// A printable-ASCII http(s) URL of at most kMaxExplanationUrl octets (it is
// logged as is).
bool loggable_url(std::string_view u) {
  if (u.size() > kMaxExplanationUrl || !(u.starts_with("https://") || u.starts_with("http://"))) return false;
  return std::all_of(u.begin(), u.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

std::optional<SystemTime> parse_rfc3339(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), RFC 3339 §5.6.
  if (t.size() < 20 || t.size() > 64) return std::nullopt;
  const int y = digits(t, 0, 4), mo = digits(t, 5, 2), d = digits(t, 8, 2), h = digits(t, 11, 2),
            mi = digits(t, 14, 2), s = digits(t, 17, 2);
  if (t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':' || t[16] != ':') return std::nullopt;
  if (!valid_date(y, mo, d) || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) return std::nullopt;
  size_t at = 19;
  if (t[at] == '.') {
    const size_t from = ++at;
    while (at < t.size() && t[at] >= '0' && t[at] <= '9') ++at;
    if (at == from) return std::nullopt;
  }
  SystemTime out = civil(y, mo, d, h, mi, std::min(s, 59));
  if (at < t.size() && (t[at] == 'Z' || t[at] == 'z') && at + 1 == t.size()) return out;
  if (at + 6 != t.size() || (t[at] != '+' && t[at] != '-') || t[at + 3] != ':') return std::nullopt;
  const int oh = digits(t, at + 1, 2), om = digits(t, at + 4, 2);
  if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
  const auto offset = std::chrono::hours(oh) + std::chrono::minutes(om);
  return t[at] == '+' ? out - offset : out + offset;
}

Result<RenewalWindow> parse_renewal_info(std::string_view body) {
  if (body.size() > kMaxRenewalInfoBody) {
    return make_error(Errc::Protocol, "a renewalInfo answer over " + std::to_string(kMaxRenewalInfoBody) + " octets");
  }
  dom::parser parser;
  dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    return make_error(Errc::Protocol, "a renewalInfo answer that is not a JSON object");
  }
  dom::element window;
  if (doc["suggestedWindow"].get(window) != simdjson::SUCCESS || !window.is_object()) {
    return make_error(Errc::Protocol, "a renewalInfo answer without suggestedWindow");
  }
  std::string_view start_text, end_text;
  if (window["start"].get(start_text) != simdjson::SUCCESS || window["end"].get(end_text) != simdjson::SUCCESS) {
    return make_error(Errc::Protocol, "a suggestedWindow without start or end");
  }
  const auto start = parse_rfc3339(start_text), end = parse_rfc3339(end_text);
  if (!start || !end) return make_error(Errc::Protocol, "a suggestedWindow whose start or end is not an RFC 3339 time");
  if (*end <= *start) return make_error(Errc::Protocol, "a suggestedWindow whose end is not after its start");
  RenewalWindow w{*start, *end, {}};
  std::string_view url;
  if (doc["explanationURL"].get(url) == simdjson::SUCCESS && loggable_url(url)) w.explanation_url = std::string(url);
  return w;
}

std::optional<seconds> retry_after(std::string_view v, SystemTime now) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r' || v.back() == '\n' || v.back() == '\t')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  if (v.empty() || v.size() > 64) return std::nullopt;
  seconds wait{};
  if (std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    uint64_t n = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    wait = r.ec == std::errc() ? seconds(std::min<uint64_t>(n, uint64_t{1} << 40)) : kMaxRetry;
  } else {
    // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
    static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
    if (v.size() != 29 || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' || v[16] != ' ' ||
        v[19] != ':' || v[22] != ':' || v.substr(25) != " GMT") {
      return std::nullopt;
    }
    const size_t m = kMonths.find(v.substr(8, 3));
    const int d = digits(v, 5, 2), y = digits(v, 12, 4), h = digits(v, 17, 2), mi = digits(v, 20, 2),
              s = digits(v, 23, 2);
    if (m == std::string_view::npos || m % 3 != 0 || !valid_date(y, static_cast<int>(m / 3) + 1, d) || h < 0 ||
        h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) {
      return std::nullopt;
    }
    const SystemTime at = civil(y, static_cast<int>(m / 3) + 1, d, h, mi, std::min(s, 59));
    wait = at <= now ? seconds(0) : std::chrono::duration_cast<seconds>(std::min<SystemTime::duration>(at - now, kMaxRetry));
  }
  return std::clamp(wait, kMinRetry, kMaxRetry);
}

SystemTime choose_time(const RenewalWindow& w, std::mt19937_64& rng) {
  const int64_t span = std::chrono::duration_cast<seconds>(w.end - w.start).count();
  if (span <= 0) return w.start;
  return w.start + seconds(std::uniform_int_distribution<int64_t>(0, span)(rng));
}

void AriState::answered(const RenewalWindow& w, std::optional<seconds> retry, SystemTime now, std::mt19937_64& rng) {
  if (!window_ || *window_ != w) {
    window_ = w;
    chosen_ = choose_time(w, rng);
  } else {
    window_->explanation_url = w.explanation_url;
  }
  temporary_failures_ = 0;
  next_fetch_ = now + (retry ? *retry : kLongTermRetry);
}

void AriState::failed(bool temporary, SystemTime now) {
  if (temporary && temporary_failures_ < kTemporaryTries) {
    next_fetch_ = now + kMinRetry * (1 << temporary_failures_);
    ++temporary_failures_;
    return;
  }
  temporary_failures_ = 0;
  next_fetch_ = now + kLongTermRetry;
}

Result<std::string> cert_id(X509* cert) {
  // Decoded here rather than with X509_get0_authority_key_id(), which
  // also wants the rest of the certificate to be sound.
  std::unique_ptr<AUTHORITY_KEYID, decltype(&AUTHORITY_KEYID_free)> akid(
      static_cast<AUTHORITY_KEYID*>(X509_get_ext_d2i(cert, NID_authority_key_identifier, nullptr, nullptr)),
      AUTHORITY_KEYID_free);
  const ASN1_OCTET_STRING* aki = akid ? akid->keyid : nullptr;
  if (aki == nullptr || ASN1_STRING_length(aki) <= 0) {
    return make_error(Errc::InvalidArgument, "a certificate without an Authority Key Identifier keyIdentifier");
  }
  unsigned char* der = nullptr;
  const int der_len = i2d_ASN1_INTEGER(X509_get0_serialNumber(cert), &der);
  if (der_len <= 2) {
    OPENSSL_free(der);
    return make_error(Errc::InvalidArgument, "a certificate without a serial number");
  }
  // Skip the INTEGER's tag and length: the content octets remain.
  const unsigned char* p = der;
  long len = 0;
  int tag = 0, cls = 0;
  const int rc = ASN1_get_object(&p, &len, &tag, &cls, der_len);
  std::string serial;
  if ((rc & 0x80) == 0 && tag == V_ASN1_INTEGER && len > 0 && p + len == der + der_len) {
    serial.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  }
  OPENSSL_free(der);
  if (serial.empty()) return make_error(Errc::InvalidArgument, "a certificate whose serial number is not DER");
  const auto* k = ASN1_STRING_get0_data(aki);
  return base64url(std::string_view(reinterpret_cast<const char*>(k), static_cast<size_t>(ASN1_STRING_length(aki)))) +
         "." + base64url(serial);
}

Result<Leaf> read_leaf(std::string_view chain_pem) {
  BioPtr bio(BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size())));
  for (int i = 0; i < 16; ++i) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    if (X509_check_ca(cert.get()) != 0) continue;
    struct tm nb{}, na{};
    if (ASN1_TIME_to_tm(X509_get0_notBefore(cert.get()), &nb) != 1 ||
        ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &na) != 1) {
      return make_error(Errc::InvalidArgument, "a leaf certificate with an unreadable validity");
    }
    Leaf leaf{from_tm(nb), from_tm(na), {}, false};
    if (auto id = cert_id(cert.get())) leaf.cert_id = std::move(id).value();
    const EVP_PKEY* key = X509_get0_pubkey(cert.get());
    leaf.ecdsa = key != nullptr && EVP_PKEY_get_base_id(key) == EVP_PKEY_EC;
    return leaf;
  }
  return make_error(Errc::InvalidArgument, "no leaf certificate in the chain");
}

RenewalInfoClient::RenewalInfoClient(std::string directory_url, std::string ca_file, std::chrono::milliseconds timeout)
    : directory_url_(std::move(directory_url)), http_(std::move(ca_file), timeout) {}

Result<std::string> RenewalInfoClient::endpoint(SystemTime now) {
  if (have_directory_ && now - directory_read_ < kDirectoryTtl && now >= directory_read_) return endpoint_;
  auto r = http_.get(directory_url_);
  if (!r) return r.take_error();
  dom::parser parser;
  dom::element doc;
  if (r->status != 200 || parser.parse(r->body).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    return make_error(Errc::Protocol, directory_url_ + ": not an ACME directory (HTTP " + std::to_string(r->status) + ")");
  }
  std::string_view url;
  endpoint_ = doc["renewalInfo"].get(url) == simdjson::SUCCESS && url.starts_with("https://") ? std::string(url) : "";
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  have_directory_ = true;
  directory_read_ = now;
  return endpoint_;
}

Result<RenewalInfoClient::Answer> RenewalInfoClient::fetch(const std::string& id, SystemTime now) {
  temporary_ = true;
  auto base = endpoint(now);
  if (!base) return base.take_error();
  if (base->empty()) {
    temporary_ = false;
    return make_error(Errc::NotFound, directory_url_ + ": the CA offers no renewalInfo");
  }
  const std::string url = *base + "/" + id;
  auto r = http_.get(url);
  if (!r) {
    temporary_ = r.error().code == Errc::Io;
    return r.take_error();
  }
  if (r->status != 200) {
    temporary_ = r->status >= 500;
    return make_error(Errc::Upstream, url + ": HTTP " + std::to_string(r->status));
  }
  temporary_ = false;
  auto w = parse_renewal_info(r->body);
  if (!w) return make_error(Errc::Protocol, url + ": " + w.error().message());
  return Answer{std::move(w).value(), retry_after(r->retry_after, now)};
}

}  // namespace tlsfront::acme
