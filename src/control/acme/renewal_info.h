// ACME Renewal Information (ARI, RFC 9773): when the CA suggests renewing a
// certificate.
//
// - The CA advertises it with "renewalInfo" in its directory (§3). A
//   certificate's identifier (§4.1) is base64url(keyIdentifier of its
//   Authority Key Identifier) "." base64url(the DER content octets of its
//   serial number: two's complement, a leading 0x00 when the high bit is
//   set), both without "=" padding: cert_id().
// - GET <renewalInfo>/<id> (unauthenticated, §4.1) answers a RenewalInfo
//   object (§4.2): {"suggestedWindow": {"start": RFC 3339, "end": RFC 3339},
//   "explanationURL"?: string} and a Retry-After (seconds or an HTTP-date)
//   saying when to ask again: parse_renewal_info(), retry_after().
// - The client renews at a uniformly random time inside the window
//   (choose_time(); a time in the past means now), asks again after
//   Retry-After clamped to [kMinRetry, kMaxRetry] (§4.3.2), and after an
//   error: a temporary one (transport, 5xx) after a doubling delay from
//   kMinRetry, at most kTemporaryTries times, then like a long-term one
//   (an invalid object, another HTTP status, no Retry-After) after
//   kLongTermRetry (§4.3.3). AriState keeps that for one certificate.
// - newOrder carries "replaces": <id> for the certificate being renewed
//   (§5), only when the CA advertises renewalInfo (AcmeClient::issue).
//
// tlsfront's rule (control/acme_manager.h): the configured rule
// (notAfter - renew_before, or 2/3 of the lifetime) stays the fallback and
// an upper bound: a certificate is due at the EARLIER of that point and the
// time chosen in the CA's window. Without an answer (no renewalInfo, an
// error, a malformed object) only the fallback counts; ARI never fails or
// delays a renewal.
//
// Errors: Errc::Protocol (a malformed object), Errc::InvalidArgument (a
// certificate without AKI keyIdentifier or serial), Errc::Io / Errc::Upstream
// (RenewalInfoClient: the CA unreachable / an HTTP status other than 200).
// Thread affinity: RenewalInfoClient and AriState, one thread at a time (the
// ACME thread); the functions, any.
#pragma once

#include <openssl/x509.h>

#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "control/acme/acme_http.h"
#include "util/result.h"

namespace tlsfront::acme {

using SystemTime = std::chrono::system_clock::time_point;

constexpr std::chrono::seconds kMinRetry{60};                    // Retry-After below: this
constexpr std::chrono::seconds kMaxRetry{24 * 3600};             // Retry-After above: this
constexpr std::chrono::seconds kLongTermRetry{6 * 3600};         // after a long-term error (§4.3.3)
constexpr int kTemporaryTries = 4;                               // 1, 2, 4, 8 minutes, then long-term
constexpr size_t kMaxRenewalInfoBody = 16 * 1024;                // a larger answer is malformed
constexpr size_t kMaxExplanationUrl = 512;                       // longer: dropped (the window stays)

// The first certificate of `chain_pem` that is not a CA (the leaf), read:
// its validity and its ARI identifier ("" when it has no AKI keyIdentifier).
struct Leaf {
  SystemTime not_before, not_after;
  std::string cert_id;
  bool ecdsa = false;  // its key is EC (else RSA or other)
};
[[nodiscard]] Result<Leaf> read_leaf(std::string_view chain_pem);

// The RFC 9773 §4.1 identifier of `cert`.
[[nodiscard]] Result<std::string> cert_id(X509* cert);

struct RenewalWindow {
  SystemTime start, end;        // start < end
  std::string explanation_url;  // "" = none (or not printable http(s), or too long)
  bool operator==(const RenewalWindow&) const = default;
};

// A RenewalInfo object. Refused (Errc::Protocol): more than
// kMaxRenewalInfoBody octets, not a JSON object, no suggestedWindow object,
// start or end missing or not RFC 3339 (years 1970-2200, a real date and
// time, "Z" or a numeric offset), end not after start.
[[nodiscard]] Result<RenewalWindow> parse_renewal_info(std::string_view body);

// An RFC 3339 date-time of a year 1970-2200 (fractions of a second
// ignored, a leap second read as :59); nullopt if not one.
[[nodiscard]] std::optional<SystemTime> parse_rfc3339(std::string_view text);

// When to ask again after an answer with this Retry-After (delta-seconds or
// an IMF-fixdate of a year up to 2200, RFC 9110 §10.2.3), clamped to
// [kMinRetry, kMaxRetry];
// nullopt when missing or invalid (a long-term error, §4.3.3).
[[nodiscard]] std::optional<std::chrono::seconds> retry_after(std::string_view header, SystemTime now);

// A uniformly random time in [w.start, w.end].
[[nodiscard]] SystemTime choose_time(const RenewalWindow& w, std::mt19937_64& rng);

// ARI for one certificate (its identifier): the window last answered, the
// time chosen in it (kept while the window stays the same), when to ask next.
class AriState {
 public:
  explicit AriState(std::string id) : id_(std::move(id)) {}
  const std::string& id() const { return id_; }
  // True when a request is due (none yet, or next_fetch() passed).
  bool fetch_due(SystemTime now) const { return now >= next_fetch_; }
  SystemTime next_fetch() const { return next_fetch_; }
  // An answer: the window (a new one gets a new chosen time) and Retry-After.
  void answered(const RenewalWindow& w, std::optional<std::chrono::seconds> retry, SystemTime now,
                std::mt19937_64& rng);
  // A failed request: `temporary` (transport, 5xx) or long-term. A window
  // answered before stays (the CA's last word).
  void failed(bool temporary, SystemTime now);
  // The time chosen in the last window; nullopt before any answer.
  std::optional<SystemTime> chosen() const { return chosen_; }
  const std::optional<RenewalWindow>& window() const { return window_; }
  // The explanation of an early renewal is logged once per certificate.
  bool explained = false;

 private:
  std::string id_;
  std::optional<RenewalWindow> window_;
  std::optional<SystemTime> chosen_;
  SystemTime next_fetch_{};
  int temporary_failures_ = 0;
};

// The renewalInfo resource of one CA: its directory read (again after
// kDirectoryTtl), GETs of <renewalInfo>/<id>.
class RenewalInfoClient {
 public:
  static constexpr std::chrono::hours kDirectoryTtl{24};

  RenewalInfoClient(std::string directory_url, std::string ca_file, std::chrono::milliseconds timeout);

  // The renewalInfo URL ("" = the CA offers none). Errors: the directory
  // unreachable or not one.
  [[nodiscard]] Result<std::string> endpoint(SystemTime now);
  struct Answer {
    RenewalWindow window;
    std::optional<std::chrono::seconds> retry;  // nullopt: missing or invalid
  };
  // The window of `id`. Errors: Errc::Io (temporary: unreachable, timeout),
  // Errc::Upstream (an HTTP status: temporary when 5xx, see temporary()),
  // Errc::Protocol (long-term: a malformed answer), Errc::NotFound (no renewalInfo).
  [[nodiscard]] Result<Answer> fetch(const std::string& id, SystemTime now);
  // Whether the last fetch() error was a temporary one (§4.3.3).
  bool temporary() const { return temporary_; }

 private:
  std::string directory_url_;
  AcmeHttp http_;
  std::string endpoint_;
  SystemTime directory_read_{};
  bool have_directory_ = false;
  bool temporary_ = false;
};

}  // namespace tlsfront::acme
