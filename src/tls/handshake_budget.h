// HandshakeBudget: [limits] max_full_handshakes_per_client, the full TLS
// handshakes one client address may cost this node per second, checked in
// the ClientHello callback (tls/cert_index.cc) before OpenSSL does any key
// exchange or signature: a ClientHello over the budget ends the handshake
// with a handshake_failure alert, and the connection is closed.
//
// The budget is a GCRA (util/gcra_table.h) with rate N/s and a burst of
// N - 1, so N at once and N per second after that, in one node-wide table
// keyed by the address's octets (every worker's connections of an address
// share it).
//
// Resumptions are not charged. Whether a ClientHello will resume is known
// only once OpenSSL has decrypted its ticket, after this callback, so the
// proxy is what it offers: a TLS 1.3 pre_shared_key extension, or a
// non-empty TLS 1.2 SessionTicket extension (a TLS 1.2 session ID is not
// taken: TLS 1.3 clients send a random one for middlebox compatibility,
// RFC 8446 §4.1.2). Such a ClientHello passes unless the address's budget
// is already spent; if it then ends as a full handshake (the ticket did not
// decrypt, or was made up) it is charged when the handshake completes
// (on_handshake_done), so made-up tickets buy at most the burst. While an
// address's budget is spent, its new connections are closed before their
// ClientHello is even read (Connection::attach_handshake_budget).
// Thread affinity: one SSL's budget on its connection's worker; the table
// is thread-safe.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <string>

#include "util/gcra_table.h"

namespace tlsfront::tls {

class HandshakeBudget {
 public:
  // `key`: the client address's octets; `per_second` > 0.
  HandshakeBudget(std::string key, uint64_t per_second);

  // Attaches to `ssl` (ex_data): the ClientHello callback consults it. The
  // budget must outlive the SSL.
  bool attach(SSL* ssl);
  static HandshakeBudget* of(SSL* ssl);

  // From the ClientHello callback: false when the ClientHello is refused.
  // Decided once per connection (a callback re-entered after a pause
  // returns the first answer).
  bool on_client_hello(SSL* ssl);
  // The handshake completed: a full one that offered a resumption is
  // charged now.
  void on_handshake_done(SSL* ssl);
  bool refused() const { return state_ == State::Refused; }
  // Whether a ClientHello now would be refused whatever it offers (the
  // budget is spent): the connection can be closed before it is read.
  bool exhausted() const { return table().would_reject(key_, gcra_now_ns(), params_); }

  // A new QUIC connection from the address `key` (its first Initial),
  // before any TLS work: charged as a full handshake whatever it offers
  // (GnuTLS decides a resumption inside ngtcp2's packet read, after this);
  // false when the budget is spent.
  static bool charge_quic_connection(std::string_view key, uint64_t per_second);
  // The node's table (every worker's).
  static GcraTable& table();
  static constexpr uint64_t kTableBytes = 16 << 20;  // ~100 000 addresses, LRU past it

 private:
  // Undecided -> Charged (a full handshake's ClientHello) | Offered (a
  // resumption offered: not charged yet) | Refused.
  enum class State : uint8_t { Undecided, Charged, Offered, Refused };

  std::string key_;
  GcraParams params_;
  State state_ = State::Undecided;
};

}  // namespace tlsfront::tls
