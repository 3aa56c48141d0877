// ServerCertificate: one configured certificate entry ([[certificate]] or the
// [tls] certificate/key shorthand) loaded and checked: its private key, the
// chain CertChain built for it, and the SNI names it serves.
//
// Names (RFC 6125): the entry's explicit `names`, each of which the leaf's
// subjectAltName must cover, or else the leaf's SAN dNSName entries. The
// subject CN is never used (RFC 6125 §6.4.4: only without any SAN, and every
// public CA has issued SANs for years). "*" matches exactly one whole
// left-most label (§6.4.3): "*.example.com" covers "a.example.com", not
// "example.com" nor "a.b.example.com"; partial wildcards ("w*.example.com")
// are ignored.
// Thread affinity: load() on any thread (reads files); immutable afterwards.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "tls/cert_chain.h"
#include "util/openssl_ptr.h"
#include "util/result.h"
#include "util/secret.h"

namespace tlsfront::tls {

// True when the name pattern `pattern` ("a.example.com" or "*.example.com",
// lowercase) matches `host` (lowercase, no trailing dot) per the rules above.
bool name_matches(std::string_view pattern, std::string_view host);

// "ECDSA" | "RSA" | "RSA-PSS" | "Ed25519" | "Ed448" (else OpenSSL's name, or
// "unknown" for null): the algorithm of `key` (borrowed).
std::string key_type_of(const EVP_PKEY* key);

// The lowercase SAN dNSName entries of `leaf`, in certificate order.
std::vector<std::string> san_dns_names(X509* leaf);

struct ServerCertificate {
  const config::Certificate* config = nullptr;  // borrowed from the Config
  EvpPkeyPtr key;
  CertChain chain;
  std::vector<std::string> names;  // served names, lowercase; empty: only ever the default
  bool names_from_san = false;
  std::string key_type;            // "ECDSA" | "RSA" | "RSA-PSS" | "Ed25519" | "Ed448": one per SSL_CTX
  // The chain's warnings (near expiry, ...), a key file readable by
  // group/others, a leaf without SAN DNS names.
  std::vector<std::string> warnings;
  // From the certificate store (tls/store_entry.h), not from files: its
  // session ID context leaves the leaf out (tls_context.h).
  bool from_store = false;

  // Reads and checks `cert` (key, chain via CertChain::build with `tls`'s
  // trust store, validity at `now`, name coverage).
  // Errors (Errc::Config, "<origin>: <setting>: ..."): unreadable or
  // encrypted key; everything CertChain::build reports; an explicit name the
  // leaf does not cover (names_setting; lists the leaf's SAN names).
  [[nodiscard]] static Result<ServerCertificate> load(const config::Certificate& cert, const config::Tls& tls,
                                                      std::chrono::system_clock::time_point now);

  // As load(), from a certificate store entry's PEM texts (`cert` is the
  // entry's synthetic configuration, tls/store_entry.h; errors name it).
  [[nodiscard]] static Result<ServerCertificate> from_pem(const config::Certificate& cert, const config::Tls& tls,
                                                          std::string_view chain_pem, const Secret& key_pem,
                                                          std::chrono::system_clock::time_point now);

 private:
  // The names and warnings of a loaded key and chain.
  [[nodiscard]] static Result<ServerCertificate> finish(const config::Certificate& cert, EvpPkeyPtr key,
                                                        CertChain chain);
};

}  // namespace tlsfront::tls
