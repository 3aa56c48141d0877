// What a client certificate (mTLS) tells the request path: nginx's
// $ssl_client_* variables, computed once per connection from the SSL after
// its handshake (a resumed session carries its peer certificate and verify
// result, so a resumed connection reports the identity it was verified with).
//
//   $ssl_client_verify       "SUCCESS", "FAILED:<reason>" (OpenSSL's
//                            X509_verify_cert_error_string) or "NONE" (no
//                            certificate sent), as nginx
//   $ssl_client_s_dn         subject DN, RFC 2253 (nginx's format; bytes
//   $ssl_client_i_dn         outside printable ASCII escaped as \XX, so a
//                            value is always one header line)
//   $ssl_client_serial       serial number, uppercase hex (i2a_ASN1_INTEGER)
//   $ssl_client_fingerprint  SHA-256 of the DER, 64 lowercase hex digits
//                            (nginx's is SHA-1)
//   $ssl_client_cert         the PEM, URL-encoded (nginx's
//                            $ssl_client_escaped_cert): every byte but
//                            RFC 3986 unreserved ones as %XX
// Without a certificate every value but $ssl_client_verify is "".
// Thread affinity: any thread (pure functions of their arguments).
#pragma once

#include <memory>
#include <string>

typedef struct x509_st X509;
typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace tlsfront::tls {

// SHA-256 of `cert`'s DER encoding as 64 lowercase hex digits; "" when
// `cert` is null or cannot be encoded. Depends on libcrypto only (a
// limit_req key may use it).
std::string client_fingerprint(X509* cert);

struct ClientIdentity {
  std::string verify;  // "SUCCESS" | "FAILED:<reason>" | "NONE"
  std::string subject_dn, issuer_dn, serial, fingerprint, escaped_pem;
  bool verified() const { return verify == "SUCCESS"; }

  // The identity `ssl` (a server SSL whose handshake is done, or resumed
  // in early data) was given; null when it asked for no certificate
  // (verify_client off), so a connection without mTLS costs nothing.
  static std::shared_ptr<const ClientIdentity> of(SSL* ssl);
};

// `in` with every byte but ALPHA / DIGIT / "-" / "." / "_" / "~" as %XX
// (uppercase hex), appended to `out`.
void append_uri_component(std::string& out, std::string_view in);

}  // namespace tlsfront::tls
