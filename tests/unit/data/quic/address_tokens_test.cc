// AddressTokens: the Retry and NEW_TOKEN tokens of the QUIC listeners,
// sealed under secrets derived from the ticket keys. Two instances with
// stores that publish the same ring stand for two nodes sharing
// [tls.ticket_keys]. (The integration tests cover Retry and the NEW_TOKEN
// frame with a real client; Debian 12's gtlsclient cannot send a saved
// token back, so a returning client's token is checked here.)
#include "data/quic/address_tokens.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <chrono>
#include <memory>
#include <vector>

#include "tls/ticket_key_ring.h"
#include "tls/ticket_key_source_local.h"

namespace tlsfront::quic {
namespace {

using namespace std::chrono_literals;

sockaddr_in addr(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}
const sockaddr* sa(const sockaddr_in& a) { return reinterpret_cast<const sockaddr*>(&a); }

ngtcp2_cid cid(uint8_t fill, size_t len = 18) {
  ngtcp2_cid c;
  c.datalen = len;
  for (size_t i = 0; i < len; ++i) c.data[i] = static_cast<uint8_t>(fill + i);
  return c;
}

// A client Initial's header with `token`, to `dcid`.
ngtcp2_pkt_hd initial(const std::vector<uint8_t>& token, const ngtcp2_cid& dcid) {
  ngtcp2_pkt_hd hd{};
  hd.version = NGTCP2_PROTO_VER_V1;
  hd.type = NGTCP2_PKT_INITIAL;
  hd.dcid = dcid;
  hd.scid = cid(0x70, 8);
  hd.token.base = const_cast<uint8_t*>(token.data());
  hd.token.len = token.size();
  return hd;
}

std::shared_ptr<const tls::TicketKeyRing> ring_at(const tls::TicketKeyRing* previous, tls::TimePoint now) {
  auto r = tls::LocalTicketKeySource(1h, 24h).rotate(previous, now);
  EXPECT_TRUE(r.ok());
  return std::make_shared<const tls::TicketKeyRing>(std::move(r).value());
}

struct Node {
  tls::TicketKeyStore keys;
  AddressTokens tokens;
  explicit Node(std::shared_ptr<const tls::TicketKeyRing> ring) { keys.publish(std::move(ring)); }
  std::vector<uint8_t> new_token(const sockaddr_in& client) {
    std::vector<uint8_t> t(NGTCP2_CRYPTO_MAX_REGULAR_TOKENLEN);
    const ngtcp2_ssize n = tokens.new_token(&keys, t.data(), sa(client), sizeof client);
    EXPECT_GT(n, 0);
    t.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return t;
  }
  AddressTokens::Token check(const std::vector<uint8_t>& token, const sockaddr_in& client, ngtcp2_cid* odcid = nullptr,
                             const ngtcp2_cid& dcid = cid(0x10)) {
    const ngtcp2_pkt_hd hd = initial(token, dcid);
    const AddressTokens::Check c = tokens.check(&keys, hd, sa(client), sizeof client);
    if (odcid) *odcid = c.odcid;
    return c.token;
  }
};

TEST(AddressTokens, ANewTokenFromOneNodeValidatesOnAnotherFromAnyPortOfTheSameAddress) {
  auto ring = ring_at(nullptr, std::chrono::system_clock::now());
  Node a(ring), b(ring), stranger(ring_at(nullptr, std::chrono::system_clock::now()));
  const std::vector<uint8_t> token = a.new_token(addr("198.18.0.7", 40000));
  EXPECT_EQ(token.at(0), NGTCP2_CRYPTO_TOKEN_MAGIC_REGULAR);
  EXPECT_EQ(b.check(token, addr("198.18.0.7", 40000)), AddressTokens::Token::Regular);
  EXPECT_EQ(b.check(token, addr("198.18.0.7", 51234)), AddressTokens::Token::Regular) << "a new port (NAT) on return";
  EXPECT_EQ(b.check(token, addr("198.18.0.8", 40000)), AddressTokens::Token::None) << "another address";
  EXPECT_EQ(stranger.check(token, addr("198.18.0.7", 40000)), AddressTokens::Token::None) << "other ticket keys";
  std::vector<uint8_t> forged = token;
  forged[10] ^= 1;
  EXPECT_EQ(b.check(forged, addr("198.18.0.7", 40000)), AddressTokens::Token::None);
  EXPECT_EQ(b.check({}, addr("198.18.0.7", 40000)), AddressTokens::Token::None);
}

TEST(AddressTokens, ATokenSealedBeforeAKeyRotationStillValidates) {
  const auto now = std::chrono::system_clock::now();
  auto before = ring_at(nullptr, now - 90min);
  Node a(before);
  const std::vector<uint8_t> token = a.new_token(addr("198.18.0.7", 40000));
  auto after = ring_at(before.get(), now);  // a new sealing key; the old one still in the ring
  ASSERT_GE(after->size(), 2u);
  Node b(after);
  EXPECT_EQ(b.check(token, addr("198.18.0.7", 40000)), AddressTokens::Token::Regular);
  // And what b seals now, a node still on the old ring cannot read (until its ring moves on).
  EXPECT_EQ(a.check(b.new_token(addr("198.18.0.7", 1)), addr("198.18.0.7", 1)), AddressTokens::Token::None);
}

// The Retry token inside a Retry packet: RFC 9000 §17.2.5 (first octet,
// version, DCID, SCID, then the token up to the 16-octet integrity tag).
std::vector<uint8_t> retry_token(const uint8_t* p, size_t len) {
  size_t at = 5;
  at += 1 + p[at];  // DCID
  at += 1 + p[at];  // SCID
  return std::vector<uint8_t>(p + at, p + len - 16);
}

TEST(AddressTokens, ARetryTokenCarriesTheOriginalDcidAndBindsAddressAndPort) {
  auto ring = ring_at(nullptr, std::chrono::system_clock::now());
  Node a(ring), b(ring);
  const sockaddr_in client = addr("198.18.0.7", 40000);
  const ngtcp2_pkt_hd first = initial({}, cid(0x20));
  const ngtcp2_cid retry_scid = cid(0x40);
  uint8_t pkt[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  const ngtcp2_ssize n = a.tokens.write_retry(&a.keys, pkt, sizeof pkt, first, retry_scid, sa(client), sizeof client);
  ASSERT_GT(n, 0);
  EXPECT_EQ(pkt[0] & 0xf0, 0xf0) << "a long header of type Retry";
  const std::vector<uint8_t> token = retry_token(pkt, static_cast<size_t>(n));
  ASSERT_FALSE(token.empty());
  EXPECT_EQ(token[0], NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY);

  ngtcp2_cid odcid{};
  // The client's next Initial goes to the Retry's SCID, from the same address and port.
  EXPECT_EQ(b.check(token, client, &odcid, retry_scid), AddressTokens::Token::Retry);
  EXPECT_TRUE(ngtcp2_cid_eq(&odcid, &first.dcid));
  EXPECT_EQ(b.check(token, addr("198.18.0.7", 40001), nullptr, retry_scid), AddressTokens::Token::Invalid);
  EXPECT_EQ(b.check(token, client, nullptr, cid(0x41)), AddressTokens::Token::Invalid) << "another DCID";
}

TEST(AddressTokens, StatelessResetTokensAreTheSameOnEveryNodeSharingTheKeys) {
  auto ring = ring_at(nullptr, std::chrono::system_clock::now());
  Node a(ring), b(ring), stranger(ring_at(nullptr, std::chrono::system_clock::now()));
  uint8_t ta[NGTCP2_STATELESS_RESET_TOKENLEN], tb[NGTCP2_STATELESS_RESET_TOKENLEN], tc[NGTCP2_STATELESS_RESET_TOKENLEN];
  ASSERT_TRUE(a.tokens.reset_token(&a.keys, cid(0x33), ta));
  ASSERT_TRUE(b.tokens.reset_token(&b.keys, cid(0x33), tb));
  ASSERT_TRUE(stranger.tokens.reset_token(&stranger.keys, cid(0x33), tc));
  EXPECT_EQ(std::vector<uint8_t>(ta, ta + sizeof ta), std::vector<uint8_t>(tb, tb + sizeof tb));
  EXPECT_NE(std::vector<uint8_t>(ta, ta + sizeof ta), std::vector<uint8_t>(tc, tc + sizeof tc));
}

}  // namespace
}  // namespace tlsfront::quic
