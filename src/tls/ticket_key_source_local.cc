#include "tls/ticket_key_source_local.h"

#include <openssl/rand.h>

#include <vector>

#include "tls/openssl_error.h"

namespace tlsfront::tls {

LocalTicketKeySource::LocalTicketKeySource(std::chrono::milliseconds rotate_every,
                                           std::chrono::milliseconds ticket_lifetime)
    : rotate_every_(rotate_every), ticket_lifetime_(ticket_lifetime) {}

LocalTicketKeySource::LocalTicketKeySource(const config::Tls& tls)
    : LocalTicketKeySource(tls.ticket_keys.rotate_every, tls.session_cache.timeout) {}

Result<TicketKey> LocalTicketKeySource::generate_key(TimePoint activates_at, TimePoint expires_at) {
  TicketKey key;
  key.cipher = TicketKey::Cipher::Aes256Cbc;
  key.activates_at = activates_at;
  key.expires_at = expires_at;
  // The name is public (sent in every ticket): the public DRBG is enough.
  if (RAND_bytes(key.name.data(), static_cast<int>(key.name.size())) != 1 ||
      RAND_priv_bytes(key.hmac_secret.data(), static_cast<int>(key.hmac_secret.size())) != 1 ||
      RAND_priv_bytes(key.aes_key.data(), static_cast<int>(key.aes_key.size())) != 1) {
    return openssl_error(Errc::Tls, "generating a session ticket key");
  }
  return key;
}

Result<TicketKeyRing> LocalTicketKeySource::rotate(const TicketKeyRing* previous, TimePoint now) const {
  if (rotate_every_.count() <= 0 || ticket_lifetime_.count() <= 0) {
    return make_error(Errc::InvalidArgument, "ticket key rotation interval and lifetime must be positive");
  }
  auto fresh = generate_key(now, now + key_lifetime());
  if (!fresh.ok()) return fresh.take_error();
  std::vector<TicketKey> keys;
  keys.push_back(std::move(fresh).value());
  if (previous) {
    for (const TicketKey& k : previous->keys()) {
      if (now < k.expires_at) keys.push_back(k);
    }
  }
  return TicketKeyRing(std::move(keys));
}

TimePoint LocalTicketKeySource::next_rotation(const TicketKeyRing& ring) const {
  if (ring.empty() || ring.keys().front().activates_at == TimePoint::min()) return TimePoint::min();
  return ring.keys().front().activates_at + rotate_every_;
}

}  // namespace tlsfront::tls
