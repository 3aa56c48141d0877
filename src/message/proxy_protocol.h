// ProxyHeaderReader: the PROXY protocol header a load balancer sends before
// the client's first byte (HAProxy's "The PROXY protocol", versions 1 and 2,
// https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt), read on a
// [[listen]] with proxy_protocol = true by data/connection.cc before the TLS
// ClientHello (or the first HTTP byte on a cleartext listener).
//
// Input: the connection's first bytes, in pieces as they arrive (feed()).
// Bounds: a v1 line is at most kMaxV1 = 107 octets with its CRLF (spec
// §2.1); a v2 header is its 16-octet fixed part and at most kMaxV2Payload
// octets after it (the spec allows 65535; addresses and the TLVs load
// balancers send fit in far less). Nothing past the header is consumed: the
// caller hands the rest of the input to TLS (or HTTP).
//
// What is accepted (everything else is Failed, never guessed):
//   v1 (§2.1): "PROXY TCP4 <a.b.c.d> <a.b.c.d> <port> <port>\r\n", TCP6 with
//       IPv6 literals, or "PROXY UNKNOWN" and anything up to CRLF (the
//       address stays the TCP peer's). Single spaces, ports 0..65535 without
//       leading zeros, the family matching the addresses.
//   v2 (§2.2): the 12-octet signature, version 2, command LOCAL (0x0: a load
//       balancer's own connection, a health check; the address stays the
//       peer's and the address block is skipped) or PROXY (0x1); families
//       AF_UNSPEC, AF_INET (12 address octets), AF_INET6 (36), AF_UNIX (216);
//       a source address is taken only for AF_INET/AF_INET6 over STREAM.
//       TLVs (§2.2.7) after the address block, each bounds-checked against
//       the header's length: PP2_TYPE_ALPN (0x01), PP2_TYPE_AUTHORITY
//       (0x02) and PP2_TYPE_UNIQUE_ID (0x05, at most 128 octets) are kept
//       (ProxyTlvs: the $proxy_protocol_tlv_* header variables);
//       PP2_TYPE_CRC32C (0x03, 4 octets) is verified (§2.2.7: CRC32c,
//       Castagnoli, over the whole header with the checksum's octets as
//       zeros) and a mismatch is Malformed; every other type (NOOP, SSL,
//       NETNS, custom) is skipped.
// Errors: phase() Failed with failure() saying why (NotProxy: the first
// bytes are not a signature — a TLS ClientHello, an HTTP request; Malformed;
// TooLong) and reason() a static description for the log.
// Thread affinity: one thread (the connection's); no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/ip_address.h"

namespace tlsfront::http {

// The v2 TLVs kept (raw octets; "" when absent), nginx's
// $proxy_protocol_tlv_alpn, _authority and _unique_id.
struct ProxyTlvs {
  std::string alpn, authority, unique_id;
  bool empty() const { return alpn.empty() && authority.empty() && unique_id.empty(); }
};

struct ProxyHeader {
  uint8_t version = 0;  // 1 or 2
  bool local = false;   // v2 LOCAL: the load balancer's own connection
  // The client's address and port (the header's source) when it named one
  // (TCP4/TCP6, v2 PROXY over AF_INET/AF_INET6 STREAM); nullopt for UNKNOWN,
  // LOCAL, AF_UNSPEC, AF_UNIX and DGRAM: the TCP peer stays the client.
  std::optional<IpAddress> source;
  uint16_t source_port = 0;
  std::optional<IpAddress> destination;
  uint16_t destination_port = 0;
  ProxyTlvs tlvs;
};

class ProxyHeaderReader {
 public:
  static constexpr size_t kMaxV1 = 107;
  static constexpr size_t kV2Fixed = 16;
  static constexpr size_t kMaxV2Payload = 2048;
  static constexpr size_t kMaxUniqueId = 128;

  // Signature -> V1Line ("PROXY " seen) | V2Fixed (the 12-octet signature
  //              seen) | Failed (NotProxy)
  // V1Line    -> Done (CRLF, the line valid) | Failed
  // V2Fixed   -> V2Body (16 octets: version, command, family, length) |
  //              Failed (Malformed, TooLong)
  // V2Body    -> Done (length octets, valid) | Failed
  // Done, Failed: final; feed() consumes nothing more.
  enum class Phase : uint8_t { Signature, V1Line, V2Fixed, V2Body, Done, Failed };
  enum class Failure : uint8_t { None, NotProxy, Malformed, TooLong };

  // Takes the octets of `in` that belong to the header and returns how many
  // (the rest, if phase() is Done, is the client's: TLS or HTTP).
  size_t feed(std::string_view in);

  Phase phase() const { return phase_; }
  bool done() const { return phase_ == Phase::Done; }
  bool failed() const { return phase_ == Phase::Failed; }
  Failure failure() const { return failure_; }
  const char* reason() const { return reason_; }
  // Octets taken so far (the header's length once Done).
  size_t consumed() const { return buf_.size(); }
  // Valid once Done.
  const ProxyHeader& header() const { return header_; }

 private:
  void fail(Failure f, const char* why);
  void parse_v1();
  void parse_v2_fixed();
  void parse_v2_body();
  // Whether the CRC32C TLV's 4 octets at buf_[at] match the header.
  bool checksum_matches(size_t at) const;

  std::string buf_;  // the header's octets so far
  size_t need_ = 0;  // V2Fixed/V2Body: octets the phase ends at
  Phase phase_ = Phase::Signature;
  Failure failure_ = Failure::None;
  const char* reason_ = "";
  ProxyHeader header_;
};

constexpr bool legal(ProxyHeaderReader::Phase from, ProxyHeaderReader::Phase to) {
  using P = ProxyHeaderReader::Phase;
  switch (from) {
    case P::Signature: return to == P::V1Line || to == P::V2Fixed || to == P::Failed;
    case P::V1Line: return to == P::Done || to == P::Failed;
    case P::V2Fixed: return to == P::V2Body || to == P::Failed;
    case P::V2Body: return to == P::Done || to == P::Failed;
    case P::Done:
    case P::Failed: return false;
  }
  return false;
}
constexpr const char* name(ProxyHeaderReader::Phase p) {
  constexpr const char* names[] = {"Signature", "V1Line", "V2Fixed", "V2Body", "Done", "Failed"};
  return names[static_cast<int>(p)];
}

// CRC32c (Castagnoli, reflected polynomial 0x82F63B78, RFC 3720 §B.4) of
// `bytes`: the PROXY v2 checksum.
uint32_t crc32c(std::string_view bytes);

// "not_proxy" | "malformed" | "too_long" (None: "").
const char* failure_name(ProxyHeaderReader::Failure f);

}  // namespace tlsfront::http
