// IpAddress and Cidr: an IPv4 or IPv6 address in binary form, and an address
// block ("10.0.0.0/8", "2001:db8::/32", or one address), for the checks of
// who a peer is: [[listen]] proxy_protocol_from and trusted_proxies
// (config/parse_listen.cc parses them, data/connection.cc and
// message/real_ip.cc match against them).
//
// Shapes: an IPv4 address is 4 octets, an IPv6 one 16; an IPv4-mapped IPv6
// address (::ffff:a.b.c.d, what a dual-stack socket reports for an IPv4
// peer) is stored as the IPv4 address, so "127.0.0.0/8" matches it. Text is
// what inet_pton takes: dotted quad (no leading zeros) or RFC 4291 §2.2
// (no zone ID, no brackets).
// Errors: parse functions return std::nullopt (addresses) or a reason (CIDRs);
// nothing allocates but to_string() and the reasons.
// Thread affinity: none (values and pure functions).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tlsfront {

struct IpAddress {
  enum class Family : uint8_t { V4, V6 };
  Family family = Family::V4;
  std::array<uint8_t, 16> octets{};  // V4: the first 4

  // An IP literal; an IPv4-mapped IPv6 literal becomes V4. No allocation.
  static std::optional<IpAddress> parse(std::string_view text);
  // From network-order octets (4: V4, 16: V6, mapped: V4); nullopt otherwise.
  static std::optional<IpAddress> from_octets(std::span<const uint8_t> octets);
  // Canonical text (inet_ntop) into `buf`, returning the view of it.
  std::string_view format(std::array<char, 46>& buf) const;
  std::string to_string() const;
  size_t size() const { return family == Family::V4 ? 4 : 16; }
  bool operator==(const IpAddress&) const = default;
};

struct Cidr {
  IpAddress network;  // host bits zero
  uint8_t prefix = 0;  // 0..32 (V4) or 0..128 (V6)

  // "a.b.c.d/n", "x::y/n" or one address (a /32 or /128). The host bits
  // must be zero ("10.0.0.1/8" is refused: it is usually a typo for a /32).
  // Returns the reason on error: "not an IP address", "prefix length must
  // be 0..32", "host bits set (the network is 10.0.0.0/8)".
  static std::optional<Cidr> parse(std::string_view text, std::string* why);
  bool contains(const IpAddress& a) const;
  std::string to_string() const;
  bool operator==(const Cidr&) const = default;
};

// True when one of `blocks` contains `a`.
bool contains_any(std::span<const Cidr> blocks, const IpAddress& a);

}  // namespace tlsfront
