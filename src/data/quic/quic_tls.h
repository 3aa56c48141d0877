// QuicTls: the TLS side of tlsfront's QUIC listener (RFC 9001), on GnuTLS,
// the TLS library Debian's ngtcp2 0.12 has a crypto backend for (OpenSSL
// 3.0 has no QUIC interface). One ServerCredentials per Generation holds
// the file certificates of [tls] / [[tls.certificate]] (chain and key as
// PEM files, the same ones the TCP listeners serve); GnuTLS picks one by
// the ClientHello's SNI and signature algorithms, so an ECDSA + RSA pair of
// one name stays a pair. A session is TLS 1.3 only (QUIC has no other),
// ALPN "h3" mandatory (a client offering no h3 gets no_application_protocol,
// RFC 9001 §8.1).
//
// Session tickets (RFC 8446 §4.6.1): GnuTLS encrypts them under keys it
// derives from one 64-byte master key, rotating the derived key every
// ticket lifetime and still decrypting the previous one. The master is
// HKDF-SHA256 of the ticket key that encrypts TCP tickets now
// ([tls.ticket_keys]: generated, files or Redis), so every worker, every
// generation and every node with the same key resumes the others' QUIC
// sessions. GnuTLS holds one master per session: a ticket made under the
// key before a rotation does not resume (a full handshake, then a new
// ticket).
//
// Early data (0-RTT, RFC 9001 §4.6): GnuTLS accepts it only through its
// anti-replay hook (AntiReplayWindows below), whose `claim` records the
// ClientHello's PSK binder. GnuTLS refuses early data on a ticket issued
// before its recording window began and restarts the window when it is
// older than its length. AntiReplayWindows therefore starts a window every
// kWindow / kWindows (rotate(), on a timer), keeps each until it is one step
// short of kWindow old, and gives a new session the oldest one: a ticket up
// to kWindow minus two steps old (7.5 min) always gets its early data
// considered, and no window a session uses reaches GnuTLS's restart.
// Everything accepted is recorded for ReplayRecorder::kQuicWindow.
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

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "util/result.h"

namespace tlsfront::tls {
class OcspRegistry;
struct ServerCertificate;
class TicketKeyStore;
struct TicketKey;
}  // namespace tlsfront::tls

namespace tlsfront::quic {

// `len` octets (at most 255 × 32) derived from one ticket key for one
// purpose: HKDF-SHA256 (RFC 5869) with the key's HMAC secret and AES key as
// input, its name (public, in every ticket) as salt and `label` as info.
// Errors: false when GnuTLS fails.
bool derive_from_ticket_key(const tls::TicketKey& key, std::string_view label, uint8_t* out, size_t len);

class ServerCredentials {
 public:
  // `certificates` (borrowed, read now: the TCP listeners' CertIndex's,
  // files and certificate store alike, each its built chain and key), the
  // file ones first so that the first file certificate stays the default
  // for a client whose SNI no certificate names (GnuTLS then takes the
  // first; over QUIC a name a file certificate and a store entry both
  // serve is served from the file, over TCP from the store); tickets from
  // `tickets` (borrowed, outlives the credentials; null: a random master
  // per credentials) unless tls.session_tickets is off, for
  // tls.session_cache.timeout (at most 7 days, RFC 8446 §4.6.1). OCSP
  // staples from the stapler `ocsp` (borrowed, outlives the credentials;
  // may be null) holds for each leaf, as over TCP: the current response
  // to a client that asks (status_request, RFC 8446 §4.4.2.1), the policy
  // when there is none (lenient: none sent; strict, must_staple: the
  // handshake fails). Errors: Errc::Config naming the certificate GnuTLS
  // refused and its reason.
  [[nodiscard]] static Result<std::shared_ptr<const ServerCredentials>> load(
      const config::Tls& tls, const std::vector<const tls::ServerCertificate*>& certificates,
      const tls::TicketKeyStore* tickets, const tls::OcspRegistry* ocsp);
  ~ServerCredentials();
  ServerCredentials(const ServerCredentials&) = delete;
  ServerCredentials& operator=(const ServerCredentials&) = delete;

  gnutls_certificate_credentials_t certificates() const { return cred_; }
  bool session_tickets() const { return session_tickets_; }
  unsigned ticket_lifetime_s() const { return ticket_lifetime_s_; }
  // The 64-byte ticket master for a session starting now (see the header).
  // Errors: false when no key can be had (tickets are then not issued).
  bool ticket_master(uint8_t out[64]) const;
  // The ticket keys tickets and address tokens are derived from; null when none.
  const tls::TicketKeyStore* ticket_keys() const { return tickets_; }

 private:
  ServerCredentials() = default;
  gnutls_certificate_credentials_t cred_ = nullptr;
  const tls::TicketKeyStore* tickets_ = nullptr;
  uint8_t fallback_master_[64] = {};
  bool session_tickets_ = true;
  unsigned ticket_lifetime_s_ = 86400;
};

// GnuTLS's anti-replay windows of one worker's QUIC endpoint (see the
// header for why several). `claim(binder)` is asked for every ClientHello
// whose early data GnuTLS would accept (a ticket of ours, fresh, issued
// inside the window): true accepts it, false refuses it (a replay; the
// handshake goes on without early data).
// Thread affinity: the worker's loop (GnuTLS writes the context it uses).
class AntiReplayWindows {
 public:
  static constexpr std::chrono::seconds kWindow{600};
  static constexpr size_t kWindows = 8;
  static constexpr std::chrono::seconds kStep{kWindow / kWindows};
  using Claim = std::function<bool(std::string_view binder)>;

  // Starts the first window. Errors: GnuTLS's allocation failing leaves no
  // window (for_session() is then null: no early data).
  explicit AntiReplayWindows(Claim claim);
  // Every kStep: a new window; those one step short of kWindow leave.
  void rotate();
  // The window for a session starting now (held by the session: its
  // ClientHello may be read after the list moved on); null when none.
  std::shared_ptr<gnutls_anti_replay_st> for_session() const;

 private:
  struct Window {
    std::chrono::steady_clock::time_point started;
    std::shared_ptr<gnutls_anti_replay_st> context;
  };
  static int add(void* self, time_t expires, const gnutls_datum_t* key, const gnutls_datum_t* data);
  std::shared_ptr<Claim> claim_;  // each context's pointer (held by its deleter)
  std::deque<Window> windows_;    // oldest first
};

// One connection's TLS session, configured for ngtcp2 (its handshake runs
// inside ngtcp2_conn_read_pkt; `conn_ref` tells ngtcp2's callbacks which
// connection the session is for).
class QuicTlsSession {
 public:
  // `anti_replay`: early data is accepted through it; null: never.
  // Errors: Errc::Io with GnuTLS's reason.
  [[nodiscard]] Status init(const ServerCredentials& credentials, ngtcp2_crypto_conn_ref* conn_ref,
                            std::shared_ptr<gnutls_anti_replay_st> anti_replay);
  ~QuicTlsSession();

  gnutls_session_t native() const { return session_; }
  // After the handshake: the SNI the client sent ("" when none), the cipher
  // suite's IANA name (a static string), whether it resumed a session.
  std::string server_name() const;
  std::string_view cipher() const;
  bool resumed() const;
  // The client's early data was accepted (after its ClientHello).
  bool early_data_accepted() const;
  // Whether the certificate this session was made with covers `host` (a
  // DNS name, or an IP literal, bracketed or not): RFC 9114 §3.3 lets a
  // client send any authority the certificate is valid for on this
  // connection. The last host that passed is remembered (one parse per
  // connection); a resumed session, which sent no certificate, covers the
  // name it was made for (its SNI). After the ClientHello only.
  bool certificate_covers(std::string_view host);

 private:
  gnutls_session_t session_ = nullptr;
  std::shared_ptr<gnutls_anti_replay_st> anti_replay_;
  std::string covered_host_;
};

}  // namespace tlsfront::quic
