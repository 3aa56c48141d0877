// LocalTicketKeySource ([tls.ticket_keys] source = "auto"): ticket keys
// generated in-process from OpenSSL's private DRBG (RAND_priv_bytes) for a
// single node. A new key encrypts every `rotate_every`; each key stays in the
// ring for decryption for one rotation interval (while it encrypts) plus the
// ticket lifetime (tls.session_cache.timeout) plus one more rotation interval
// of slack for a late rotation timer. Keys are never written anywhere, so a
// restart invalidates every ticket (clients fall back to a full handshake).
// Pure: time comes in as arguments. Timeline with R = rotate_every, L = ticket
// lifetime, key K_n made at t_n = t_0 + n*R:
//   [t_n, t_n + R)            K_n encrypts (the newest active key)
//   [t_n, t_n + 2R + L)       K_n decrypts; a ticket made at t_n + R - ε is
//                             valid until t_n + R + L, plus R of slack
//   t_n + 2R + L              K_n dropped by the first rotate() after it
// so a ring holds about (2R + L) / R keys (26 with 1h / 1d).
// Thread affinity: any thread (stateless; the control loop in practice).
#pragma once

#include <chrono>

#include "config/config.h"
#include "tls/ticket_key_ring.h"
#include "util/result.h"

namespace tlsfront::tls {

class LocalTicketKeySource {
 public:
  // `rotate_every` and `ticket_lifetime` must be positive.
  LocalTicketKeySource(std::chrono::milliseconds rotate_every, std::chrono::milliseconds ticket_lifetime);
  // rotate_every = tls.ticket_keys.rotate_every, ticket_lifetime = tls.session_cache.timeout.
  explicit LocalTicketKeySource(const config::Tls& tls);

  // The ring to publish at `now`: the unexpired keys of `previous` (borrowed,
  // may be nullptr at start-up) plus one new random key active from `now`.
  // Errors: Errc::InvalidArgument for a non-positive interval, Errc::Tls when
  // the DRBG fails.
  [[nodiscard]] Result<TicketKeyRing> rotate(const TicketKeyRing* previous, TimePoint now) const;

  // When `ring` should next be rotated: newest activation + rotate_every
  // (TimePoint::min() for an empty ring, i.e. now).
  TimePoint next_rotation(const TicketKeyRing& ring) const;

  // Lifetime of a generated key: 2 * rotate_every + ticket_lifetime.
  std::chrono::milliseconds key_lifetime() const { return 2 * rotate_every_ + ticket_lifetime_; }
  std::chrono::milliseconds rotate_every() const { return rotate_every_; }

  // A single random AES-256/HMAC-SHA256 key valid over [activates_at, expires_at).
  // Errors: Errc::Tls when the DRBG fails.
  [[nodiscard]] static Result<TicketKey> generate_key(TimePoint activates_at, TimePoint expires_at);

 private:
  std::chrono::milliseconds rotate_every_;
  std::chrono::milliseconds ticket_lifetime_;
};

}  // namespace tlsfront::tls
