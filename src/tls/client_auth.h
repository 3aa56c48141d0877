// Client certificate verification (mTLS) of one server SSL_CTX, from a
// config::ClientAuth (docs/configuration.md "Client certificates"):
//   verify_client = "required": SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
//     and OpenSSL's own verdict ends the handshake: no certificate gets a
//     TLS 1.3 certificate_required alert (RFC 8446 §4.4.2.4) or a TLS 1.2
//     handshake_failure (RFC 5246 §7.4.6), a certificate that does not
//     verify the alert for its error (unknown_ca, certificate_expired,
//     certificate_revoked, ...);
//   verify_client = "optional": SSL_VERIFY_PEER with a callback that lets
//     every chain through; the verdict is SSL_get_verify_result's
//     (tls/client_certificate.h: $ssl_client_verify);
//   "off": nothing is asked.
// The CertificateRequest names the client_ca subjects (RFC 8446 §4.2.4); the
// verify store holds the client_ca certificates as trust anchors and, with a
// crl, its CRLs with X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL (as
// nginx's ssl_crl: every certificate of the chain is checked, so the file
// needs a CRL from every CA of it); verify_depth is the store's depth.
//
// Sessions: OpenSSL keeps the peer certificate and verify result in the
// session (cache entry and ticket alike), so a resumed connection has the
// identity it was verified with. `digest` goes into the context's session ID
// context (tls_context.cc), so a session is never resumed once client_ca,
// crl, verify_client or verify_depth changed: OpenSSL refuses a session
// (cache or ticket) whose context differs and makes a full handshake.
//
// SNI: a new SSL takes its verify mode from the default context; the client
// hello callback calls adopt_verify_mode() after switching the SSL to its
// name's context (the verify store and CA names come with the context).
// Thread affinity: configure() on the control thread before the SSL_CTX is
// shared; adopt_verify_mode() on the SSL's worker.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

struct ClientAuthDigest {
  std::string policy;                     // SHA-256 over mode, depth, CA and CRL DER; "" when off
  std::vector<std::string> ca_name_sha1;  // SHA-1 of each CA subject (nginx's session ID context input)
  std::string crl_sha256;                 // SHA-256 over the CRLs' DER; "" without a crl
};

// Reads auth.ca and auth.crl (PEM; at least one certificate, resp. CRL) and
// configures `ctx` as above; nothing when auth.verify is Off.
// Errors: Errc::Config naming the key and file (unreadable, no certificate
// or CRL in it, not PEM), Errc::Tls when OpenSSL refuses the store.
[[nodiscard]] Result<ClientAuthDigest> configure_client_auth(SSL_CTX* ctx, const config::ClientAuth& auth);

// After SSL_set_SSL_CTX(ssl, ctx): `ssl` asks for a client certificate as
// `ctx` says.
void adopt_verify_mode(SSL* ssl, SSL_CTX* ctx);

}  // namespace tlsfront::tls
