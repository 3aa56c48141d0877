// QuicTls: the TLS side of tlsfront's QUIC listener (RFC 9001), on GnuTLS,
// the TLS library Debian's ngtcp2 0.12 has a crypto backend for (OpenSSL
// 3.0 has no QUIC interface). One ServerCredentials per Generation holds
// the file certificates of [tls] / [[tls.certificate]] (chain and key as
// PEM files, the same ones the TCP listeners serve); GnuTLS picks one by
// the ClientHello's SNI and signature algorithms, so an ECDSA + RSA pair of
// one name stays a pair. A session is TLS 1.3 only (QUIC has no other),
// ALPN "h3" mandatory (a client offering no h3 gets no_application_protocol,
// RFC 9001 §8.1), session tickets under a key the credentials hold.
//
// Everything GnuTLS- or ngtcp2-crypto-specific stays in this file pair, so a
// later move to an OpenSSL with QUIC support touches data/quic only.
// Thread affinity: ServerCredentials is built on the control thread and
// read-only afterwards (GnuTLS credentials may be shared by sessions of
// every thread); a QuicTlsSession belongs to its connection's worker.
#pragma once

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "util/result.h"

namespace tlsfront::quic {

class ServerCredentials {
 public:
  // The certificates of `certificates` (chain + key files). Errors:
  // Errc::Config naming the file GnuTLS refused and its reason.
  [[nodiscard]] static Result<std::shared_ptr<const ServerCredentials>> load(
      const std::vector<config::Certificate>& certificates);
  ~ServerCredentials();
  ServerCredentials(const ServerCredentials&) = delete;
  ServerCredentials& operator=(const ServerCredentials&) = delete;

  gnutls_certificate_credentials_t certificates() const { return cred_; }
  const gnutls_datum_t* ticket_key() const { return &ticket_key_; }

 private:
  ServerCredentials() = default;
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_datum_t ticket_key_{};
};

// One connection's TLS session, configured for ngtcp2 (its handshake runs
// inside ngtcp2_conn_read_pkt; `conn_ref` tells ngtcp2's callbacks which
// connection the session is for).
class QuicTlsSession {
 public:
  // Errors: Errc::Io with GnuTLS's reason.
  [[nodiscard]] Status init(const ServerCredentials& credentials, ngtcp2_crypto_conn_ref* conn_ref);
  ~QuicTlsSession();

  gnutls_session_t native() const { return session_; }
  // After the handshake: the SNI the client sent ("" when none), the cipher
  // suite's IANA name (a static string), whether it resumed a session.
  std::string server_name() const;
  std::string_view cipher() const;
  bool resumed() const;

 private:
  gnutls_session_t session_ = nullptr;
};

}  // namespace tlsfront::quic
