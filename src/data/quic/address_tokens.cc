#include "data/quic/address_tokens.h"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "data/quic/quic_tls.h"
#include "tls/ticket_key_ring.h"

namespace tlsfront::quic {
namespace {

constexpr const char* kTokenLabel = "tlsfront quic address token";
constexpr const char* kResetLabel = "tlsfront quic stateless reset";

// ngtcp2's token times: nanoseconds of the wall clock, which the nodes of a
// cluster share (a monotonic clock would differ between them).
ngtcp2_tstamp wall_ns() {
  return static_cast<ngtcp2_tstamp>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

constexpr ngtcp2_duration ns(std::chrono::seconds s) {
  return static_cast<ngtcp2_duration>(std::chrono::nanoseconds(s).count());
}

}  // namespace

AddressTokens::AddressTokens() {
  fallback_.tokens.resize(1);
  gnutls_rnd(GNUTLS_RND_KEY, fallback_.tokens[0].data(), fallback_.tokens[0].size());
  gnutls_rnd(GNUTLS_RND_KEY, fallback_.reset.data(), fallback_.reset.size());
}

const AddressTokens::Secrets& AddressTokens::secrets(const tls::TicketKeyStore* keys) {
  std::shared_ptr<const tls::TicketKeyRing> ring = keys ? keys->ring() : nullptr;
  if (ring == nullptr || ring->empty()) return fallback_;
  if (ring == ring_) return cached_;
  Secrets fresh;
  const tls::TicketKey* sealing = ring->encryption_key(keys->now());
  if (sealing == nullptr) sealing = &ring->keys().front();
  std::vector<const tls::TicketKey*> order{sealing};
  for (const tls::TicketKey& k : ring->keys()) {
    if (&k != sealing) order.push_back(&k);
  }
  for (const tls::TicketKey* k : order) {
    Secret s;
    if (derive_from_ticket_key(*k, kTokenLabel, s.data(), s.size())) fresh.tokens.push_back(s);
  }
  if (fresh.tokens.empty() || !derive_from_ticket_key(*sealing, kResetLabel, fresh.reset.data(), fresh.reset.size())) {
    return fallback_;
  }
  ring_ = std::move(ring);
  cached_ = std::move(fresh);
  return cached_;
}

AddressTokens::Check AddressTokens::check(const tls::TicketKeyStore* keys, const ngtcp2_pkt_hd& hd,
                                          const sockaddr* from, socklen_t fromlen) {
  Check c;
  if (hd.token.len == 0) return c;
  const Secrets& s = secrets(keys);
  const ngtcp2_tstamp now = wall_ns();
  if (hd.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
    for (const Secret& secret : s.tokens) {
      if (ngtcp2_crypto_verify_retry_token(&c.odcid, hd.token.base, hd.token.len, secret.data(), secret.size(),
                                           hd.version, from, fromlen, &hd.dcid, ns(kRetryLifetime), now) == 0) {
        c.token = Token::Retry;
        return c;
      }
    }
    c.token = Token::Invalid;
    return c;
  }
  if (hd.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_REGULAR) {
    for (const Secret& secret : s.tokens) {
      if (ngtcp2_crypto_verify_regular_token(hd.token.base, hd.token.len, secret.data(), secret.size(), from, fromlen,
                                             ns(kRegularLifetime), now) == 0) {
        c.token = Token::Regular;
        return c;
      }
    }
  }
  return c;  // expired, another server's, or garbage: as if none (RFC 9000 §8.1.3)
}

ngtcp2_ssize AddressTokens::write_retry(const tls::TicketKeyStore* keys, uint8_t* out, size_t outlen,
                                        const ngtcp2_pkt_hd& hd, const ngtcp2_cid& scid, const sockaddr* from,
                                        socklen_t fromlen) {
  const Secret& secret = secrets(keys).tokens.front();
  uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
  const ngtcp2_ssize len = ngtcp2_crypto_generate_retry_token(token, secret.data(), secret.size(), hd.version, from,
                                                              fromlen, &scid, &hd.dcid, wall_ns());
  if (len < 0) return len;
  return ngtcp2_crypto_write_retry(out, outlen, hd.version, &hd.scid, &scid, &hd.dcid, token, static_cast<size_t>(len));
}

ngtcp2_ssize AddressTokens::new_token(const tls::TicketKeyStore* keys, uint8_t* out, const sockaddr* remote,
                                      socklen_t len) {
  const Secret& secret = secrets(keys).tokens.front();
  return ngtcp2_crypto_generate_regular_token(out, secret.data(), secret.size(), remote, len, wall_ns());
}

bool AddressTokens::reset_token(const tls::TicketKeyStore* keys, const ngtcp2_cid& cid, uint8_t* token) {
  const Secret& secret = secrets(keys).reset;
  return ngtcp2_crypto_generate_stateless_reset_token(token, secret.data(), secret.size(), &cid) == 0;
}

}  // namespace tlsfront::quic
