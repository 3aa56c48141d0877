// AcmeClient: one certificate order from an ACME CA (RFC 8555), start to
// finish, on the calling thread (blocking; the ACME thread):
//
//   directory (§7.1.1) -> nonce (§7.2) -> account (§7.3: created, or found
//   again for the same key) -> order for the names (§7.4) -> for each
//   authorization (§7.5) not yet valid: the preferred challenge type the CA
//   offers is published through the ChallengeResponder (its key
//   authorization, §8.1), answered (§7.5.1) and polled until valid or
//   invalid -> finalize with a CSR for a new certificate key (§7.4) -> the
//   order polled until valid -> the chain downloaded (§7.4.2, PEM).
//
// Order states as RFC 8555 §7.1.6 writes them:
//   pending -> ready (every authorization valid) | invalid
//   ready -> processing (finalize sent) -> valid (certificate URL) | invalid
// Every poll is bounded (Options::max_polls at Options::poll_interval, or
// the CA's Retry-After up to Options::max_retry_after); a badNonce answer
// (§6.5) is retried with the nonce it carried, at most kNonceRetries times.
// A CA's error is reported with its problem document (RFC 7807: type and
// detail; an authorization's failed challenge's error).
//
// Errors: Errc::Io (the CA unreachable, AcmeHttp), Errc::Protocol (an answer
// that is not what RFC 8555 says: missing fields, not JSON), Errc::Upstream
// (the CA refused: its problem document), Errc::Timeout (a poll limit),
// Errc::Tls (key or CSR generation).
// Thread affinity: one thread at a time; the responder is called on it.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "control/acme/acme_http.h"
#include "control/acme/jws.h"
#include "util/result.h"

namespace tlsfront::acme {

enum class ChallengeType { Http01, TlsAlpn01 };
constexpr const char* challenge_name(ChallengeType t) { return t == ChallengeType::Http01 ? "http-01" : "tls-alpn-01"; }

// Where challenge answers go: the store every node serves them from (HTTP-01:
// GET /.well-known/acme-challenge/<token> answers key_authorization; TLS-ALPN-01:
// the name's acme-tls/1 certificate, tls_alpn01_certificate()).
class ChallengeResponder {
 public:
  virtual ~ChallengeResponder() = default;
  // Before the CA is told to validate; an error skips the order.
  virtual Status publish(ChallengeType type, const std::string& name, const std::string& token,
                         const std::string& key_authorization) = 0;
  // After the authorization ended, valid or not.
  virtual void withdraw(ChallengeType type, const std::string& name, const std::string& token) = 0;
};

enum class KeyType { EcdsaP256, Rsa2048 };

struct IssuedCertificate {
  std::string chain_pem;  // leaf first, as the CA sent it
  std::string key_pem;    // the certificate's new private key (PKCS#8)
  std::string order_url;
  // The CA's refusal of the order's "replaces" (RFC 9773 §5) when the order
  // was made again without it; "" otherwise.
  std::string replaces_refused;
};

class AcmeClient {
 public:
  static constexpr int kNonceRetries = 3;

  struct Options {
    std::string directory_url;               // https://acme-v02.api.letsencrypt.org/directory
    std::string ca_file;                     // trust for the CA's HTTPS; "" = the system's
    std::vector<std::string> contact;        // "mailto:ops@example.com"
    // External Account Binding (RFC 8555 §7.3.4): the CA's key id and MAC
    // key (raw bytes); "" = none. Sent with the newAccount request, HS256.
    std::string eab_kid, eab_hmac_key;
    std::vector<ChallengeType> challenges{ChallengeType::Http01, ChallengeType::TlsAlpn01};  // preference
    std::chrono::milliseconds timeout{30'000};          // per HTTPS exchange
    std::chrono::milliseconds poll_interval{1'000};
    std::chrono::milliseconds max_retry_after{60'000};  // a larger Retry-After is cut to this
    int max_polls = 60;
    // Set by another thread to stop an order early (shutdown): the next
    // request or poll fails with Errc::Closed. Borrowed; null = never.
    const std::atomic<bool>* cancelled = nullptr;
  };

  AcmeClient(Options options, AccountKey account);

  // The account URL (its "kid"), created on first use.
  [[nodiscard]] Result<std::string> account();
  // A certificate for `names` (the first is the subject's CN; all are SANs).
  // `replaces`: the ARI identifier (control/acme/renewal_info.h) of the
  // certificate this one renews, sent as the newOrder's "replaces" only when
  // the CA's directory has "renewalInfo" (RFC 9773 §5); a CA refusing the
  // order with it gets the same order again without it (never a failure of
  // its own).
  [[nodiscard]] Result<IssuedCertificate> issue(const std::vector<std::string>& names, KeyType key_type,
                                                ChallengeResponder& responder, const std::string& replaces = "");
  // Whether the CA's directory advertises renewalInfo (RFC 9773 §3); reads
  // the directory when not yet read.
  [[nodiscard]] Result<bool> offers_renewal_info();

 private:
  struct Directory {
    std::string new_nonce, new_account, new_order, renewal_info;
  };
  Status load_directory();
  // A signed POST (payload "" = POST-as-GET) with the account's kid, or its
  // jwk when `with_jwk`; retried on badNonce. Problem documents -> Upstream.
  Result<HttpResponse> post(const std::string& url, const std::string& payload, bool with_jwk = false);
  Status authorize(const std::string& authz_url, ChallengeResponder& responder);
  // Polls `url` (POST-as-GET) until its "status" is not one of `pending`.
  Result<std::string> poll(const std::string& url, std::initializer_list<std::string_view> pending);

  Options options_;
  AccountKey key_;
  AcmeHttp http_;
  Directory dir_;
  std::string nonce_, kid_;
};

// The self-signed certificate a TLS-ALPN-01 challenge is answered with (RFC
// 8737 §3): subjectAltName `name` alone and the critical acmeIdentifier
// extension (1.3.6.1.5.5.7.1.31) holding SHA-256(key_authorization), for a
// new P-256 key. PEM certificate and PEM key.
[[nodiscard]] Result<std::pair<std::string, std::string>> tls_alpn01_certificate(const std::string& name,
                                                                                   const std::string& key_authorization);

}  // namespace tlsfront::acme
