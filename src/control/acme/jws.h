// The ACME account key and the requests it signs (RFC 8555 §6.2): an ECDSA
// P-256 key, its JWK (RFC 7517) and thumbprint (RFC 7638), and the JWS in
// flattened JSON serialization (RFC 7515 §7.2.2) with "alg": "ES256" (the
// signature as the 64 octets r || s, RFC 7518 §3.4, not DER), the
// replay nonce, the request URL and either the account's "kid" or, for
// newAccount only, its "jwk".
// Errors: Errc::Tls (OpenSSL failed; detail drains its queue),
// Errc::InvalidArgument (a PEM that is not a P-256 private key).
// Thread affinity: any thread; an AccountKey is immutable once made.
#pragma once

#include <string>
#include <string_view>

#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::acme {

// base64url without padding (RFC 7515 §2, RFC 4648 §5).
std::string base64url(std::string_view bytes);

class AccountKey {
 public:
  [[nodiscard]] static Result<AccountKey> generate();
  [[nodiscard]] static Result<AccountKey> from_pem(std::string_view pem);

  // PKCS#8 PEM of the private key (what the store keeps, sealed).
  [[nodiscard]] Result<std::string> pem() const;
  // {"crv":"P-256","kty":"EC","x":"…","y":"…"}: the members RFC 7638 §3.2
  // requires, in its lexicographic order, no whitespace.
  const std::string& jwk() const { return jwk_; }
  // base64url(SHA-256(jwk())): RFC 7638 §3; the suffix of every key
  // authorization (RFC 8555 §8.1).
  const std::string& thumbprint() const { return thumbprint_; }
  // ES256 over `signing_input` ("<protected>.<payload>"): r || s, 64 octets.
  [[nodiscard]] Result<std::string> sign(std::string_view signing_input) const;
  EVP_PKEY* pkey() const { return key_.get(); }

 private:
  explicit AccountKey(EvpPkeyPtr key);
  EvpPkeyPtr key_;
  std::string jwk_, thumbprint_;
};

// The request body for `url`: payload "" is a POST-as-GET (RFC 8555 §6.3),
// else a JSON text. `kid` "" signs with the "jwk" (newAccount, §7.3).
[[nodiscard]] Result<std::string> jws(const AccountKey& key, std::string_view kid, std::string_view nonce,
                                      std::string_view url, std::string_view payload);

// A JSON string literal of `s` (quotes included), for the few request bodies
// written here (RFC 8259 §7).
std::string json_string(std::string_view s);

}  // namespace tlsfront::acme
