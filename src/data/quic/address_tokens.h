// AddressTokens: QUIC address validation (RFC 9000 §8.1) and stateless
// reset tokens (§10.3) for one worker's endpoint, under secrets every node
// of a cluster shares.
//
// - A Retry token (§8.1.2) binds the client's address, the Original
//   Destination Connection ID and the time; it is valid for kRetryLifetime.
// - A NEW_TOKEN token (§8.1.3), sent once a handshake completes, binds the
//   client's IP address (ngtcp2 seals the address, not the port: a
//   returning client behind NAT keeps its IP more often than its port)
//   and the time; valid for
//   kRegularLifetime. A client that brings one back skips the Retry.
// - Stateless reset tokens are derived from the connection ID, so a node
//   that lost a connection (a restart) can still end it for the client.
// Both are ngtcp2's token formats (AEAD-sealed, a magic first octet each);
// the secrets are derived (quic::derive_from_ticket_key) from the ticket
// keys of [tls.ticket_keys]: every key of the ring verifies, the current
// one seals, so a token issued by any node sharing the keys, before a
// rotation or after, is accepted. Without a ticket-key store (tests), one
// random secret per endpoint.
// Thread affinity: the endpoint's worker (the derived secrets are cached
// per ring).
#pragma once

#include <ngtcp2/ngtcp2.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace tlsfront::tls {
class TicketKeyStore;
class TicketKeyRing;
}  // namespace tlsfront::tls

namespace tlsfront::quic {

class AddressTokens {
 public:
  static constexpr std::chrono::seconds kRetryLifetime{10};
  static constexpr std::chrono::hours kRegularLifetime{1};

  AddressTokens();

  // What a client's first Initial (`hd`, from `from`) brought.
  enum class Token {
    None,     // no token, or one tlsfront does not know: not validated
    Retry,    // our Retry token, valid: validated; `odcid` set
    Regular,  // our NEW_TOKEN token, valid: validated
    Invalid,  // our Retry token, but expired, forged or for another address
  };
  struct Check {
    Token token = Token::None;
    ngtcp2_cid odcid{};
  };
  Check check(const tls::TicketKeyStore* keys, const ngtcp2_pkt_hd& hd, const sockaddr* from, socklen_t fromlen);

  // A Retry packet answering `hd` from `from`, naming `scid` as the
  // connection ID the client must use next. Length written to `out`
  // (NGTCP2_MAX_UDP_PAYLOAD_SIZE octets), or < 0.
  ngtcp2_ssize write_retry(const tls::TicketKeyStore* keys, uint8_t* out, size_t outlen, const ngtcp2_pkt_hd& hd,
                           const ngtcp2_cid& scid, const sockaddr* from, socklen_t fromlen);
  // A NEW_TOKEN token for `remote` into `out`
  // (NGTCP2_CRYPTO_MAX_REGULAR_TOKENLEN octets); its length, or < 0.
  ngtcp2_ssize new_token(const tls::TicketKeyStore* keys, uint8_t* out, const sockaddr* remote, socklen_t len);
  // The stateless reset token of `cid` (NGTCP2_STATELESS_RESET_TOKENLEN
  // octets into `token`). Errors: false.
  bool reset_token(const tls::TicketKeyStore* keys, const ngtcp2_cid& cid, uint8_t* token);

 private:
  using Secret = std::array<uint8_t, 32>;
  struct Secrets {
    std::vector<Secret> tokens;  // one per ring key, the sealing one first
    Secret reset{};
  };
  const Secrets& secrets(const tls::TicketKeyStore* keys);

  Secrets fallback_;
  std::shared_ptr<const tls::TicketKeyRing> ring_;  // what cached_ was derived from
  Secrets cached_;
};

}  // namespace tlsfront::quic
